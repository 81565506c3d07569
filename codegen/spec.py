"""The spec model: one frozen Pydantic model per kernel variant.

A spec says *what* kernel to generate; :mod:`codegen.rules` says whether it is legal and
:mod:`codegen.plan` derives every number a template prints. Knobs shared by both architectures
(dtype, tile, stages, swizzle, cluster, epilogue, scheduler) are plain fields; a knob that only one
architecture has is still a field here, and the rules reject it on the other one. Each
architecture declares the fields it owns (``knobs`` in ``codegen/arch/<name>/__init__.py``): a
kernel file's SPEC prints the shared fields and its own architecture's only.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import struct
import sys
import unicodedata
from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

Arch = Literal["sm_100a", "sm_90a"]
DType = Literal[
    "f16", "bf16", "e4m3"
]  # e4m3: float8 (wgmma on sm_90a, tcgen05.mma kind::f8f6f4 on sm_100a), needs an out_dtype
# e4m3: only with epilogue.block_quant (D quantized per 1 x block of each row, with its scales)
OutDType = Literal["f16", "bf16", "f32", "e4m3"]
# block_quant: the columns of one row that share one f32 scale (1 x 128 blocks)
BLOCK_QUANT_SIZES = (128,)
E4M3_MAX = 448.0  # the largest finite float8_e4m3fn: a block's amax maps onto it
Swizzle = Literal["none", "32B", "64B", "128B", "auto"]
Activation = Literal["none", "relu", "gelu_tanh", "silu"]
Bias = Literal["none", "row", "col"]  # row: one value per row of C (length M); col: per column (N)
ConsumerMode = Literal["cooperative", "pingpong"]
# an operand's major mode: "k" = K contiguous (A (M, K), B (N, K) row-major); "mn" = M (A) or N
# (B) contiguous, e.g. b = w.t() of a (K, N) weight w, the layout of x @ W
Major = Literal["k", "mn"]

ARCHES: tuple[str, ...] = get_args(Arch)  # the names; codegen.registry maps each to its code


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)  # no coercion: "3" is not 3


class Tile(_Frozen):
    """The CTA output tile (m, n) and the K depth of one pipeline stage."""

    m: int = Field(gt=0)
    n: int = Field(gt=0)
    k: int = Field(gt=0)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: object) -> object:
        if isinstance(value, (list, tuple)):
            if len(value) != 3:
                raise ValueError(f"tile takes three numbers [M, N, K], got {list(value)}")
            return dict(zip("mnk", value, strict=True))
        return value

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


class Cluster(_Frozen):
    """Thread-block cluster shape in CTAs along M and N."""

    m: int = Field(default=1, gt=0)
    n: int = Field(default=1, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: object) -> object:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError(f"cluster takes two numbers [M, N], got {list(value)}")
            return dict(zip("mn", value, strict=True))
        return value

    @property
    def size(self) -> int:
        return self.m * self.n


# Modules a kernel file imports, or that sit beside it in the package: a kernel of that name
# would shadow them for whoever puts its folder on sys.path.
RESERVED_NAMES = frozenset(
    {"cutlass", "cuda", "torch", "math", "typing", "collections", "cutegemm", "tvm_ffi"}
)
MAX_NAME = 100  # characters: a module name, and a file name far inside any file system's limit
# Standard-library modules: a kernel file named after one (functools.py) shadows it for every
# kernel in its folder whose directory is on sys.path (a copied file, a script run beside it)
STDLIB_NAMES = frozenset(sys.stdlib_module_names)


def name_problem(name: str) -> str | None:
    """Why `name` (already an identifier) cannot name a kernel module, or None."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "is a Python keyword; pick another name"
    if name.startswith("_"):
        return "starts with an underscore (the package's own modules do: __init__, _runtime)"
    if unicodedata.normalize("NFKC", name) != name or not name.isascii():
        return "is not plain ASCII (Python would import it under another name); use a-z, 0-9, _"
    if name in RESERVED_NAMES:
        return f"is a module kernels import or sit beside ({', '.join(sorted(RESERVED_NAMES))})"
    if name in STDLIB_NAMES:
        return (
            "is a standard-library module: a kernel file of that name would shadow it for the "
            "kernels beside it; pick another name"
        )
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long; at most {MAX_NAME}"
    return None


RUNTIME = "runtime"  # alpha or beta as a kernel argument, not a compiled-in number
F32_MAX = 3.4028234663852886e38  # the largest finite float32
F32_MIN_NORMAL = 1.1754943508222875e-38  # 2**-126: smaller magnitudes are denormal in float32


def _only_a_plain_product(field: str, does: str, info: ValidationInfo) -> None:
    """Refuse `field` (an extra output computed from what the kernel stores) beside a menu
    epilogue or a gated pair: it takes a plain product or an epilogue function of Acc."""
    menu = [
        name
        for name, neutral in (
            ("alpha", 1.0),
            ("beta", 0.0),
            ("activation", "none"),
            ("bias", "none"),
        )
        if name in info.data and info.data[name] != neutral
    ]
    if menu:
        raise ValueError(
            f"{field} with {', '.join(menu)} is not implemented: it {does} an epilogue "
            f"function's values; legal: write {'them' if len(menu) > 1 else 'it'} into a "
            f"function (fn) and keep {field}"
        )
    fn = info.data.get("fn")
    if fn is not None and any(kind == "gate" for _, kind in fn.args):
        raise ValueError(
            f"{field} with the gated pair {fn.name} (Gate, Up) is not implemented; legal: "
            f"{field} with a plain product or a function of Acc"
        )


def _fits_f32(value: float) -> bool:
    """Whether `value` rounds to a finite float32."""
    try:
        struct.pack("<f", value)
    except OverflowError:
        return False
    return True


class EpilogueFn(_Frozen):
    """An epilogue function (codegen/epilogue_fn.py): the spec writes ``fn = "FILE:FUNCTION"`` and
    the loader resolves it into this: the reference, every parameter's (name, kind) and the
    digest of the function's source (so the spec hash changes with it). The source itself is
    carried for the renderer but is no knob (the kernel file prints it where it is called)."""

    ref: str  # "FILE:FUNCTION", the path relative to the project root
    args: tuple[tuple[str, str], ...]  # (name, kind) of every parameter, in order
    digest: str
    source: str = Field(default="", exclude=True)

    @field_validator("args", mode="before")
    @classmethod
    def _tuples(cls, value: object) -> object:
        # a SPEC dict read back from a kernel file holds lists
        if isinstance(value, list):
            return tuple(tuple(v) if isinstance(v, list) else v for v in value)
        return value

    @property
    def name(self) -> str:
        return self.ref.rsplit(":", 1)[1]

    def kinds(self) -> set[str]:
        return {kind for _, kind in self.args}


class _EpilogueBase(_Frozen):
    """Fusions every epilogue style shares: D = activation(alpha * A @ B^T + beta * C)."""

    out_dtype: OutDType | None = None  # None = the input dtype
    # a number is compiled in; "runtime": a cutlass.Float32 argument of gemm and the kernel
    alpha: float | Literal["runtime"] = 1.0
    # non-zero or "runtime": C is read (in place) before it is overwritten
    beta: float | Literal["runtime"] = 0.0
    activation: Activation = "none"
    # D = activation(alpha * A @ B^T + beta * C + bias): a 1-D tensor in the output dtype, an
    # extra argument of gemm / launcher / run right after C
    bias: Bias = "none"
    # an epilogue function called per accumulator element in f32 (codegen/epilogue_fn.py); it
    # replaces alpha, beta, activation and bias, which it can express itself
    fn: EpilogueFn | None = None
    # besides D, the per-row sums of squares of the f32 values the epilogue stores (after the
    # function, before the conversion to out_dtype), as a float32 (P, M) tensor of partial sums
    # that the caller adds up (row_partials.sum(0)); each partial written by one thread in a
    # fixed order, so the result is the same bit for bit on every run (for the next RMSNorm)
    row_sumsq: bool = False
    # output quantization to float8_e4m3fn with one f32 scale per 1 x block_quant columns of each
    # row (None: off): per row and block, amax = max |v| over the f32 values stored (after the
    # function; columns past N left out), scale = amax / 448 (1 where amax = 0), D = e4m3(v * (448
    # / amax)) with saturation, and scales (M, ceil(N / block)) f32, M-major (stride (1, M)): the
    # 1 x 128 layout torch._scaled_mm's blockwise scaling reads; needs out_dtype = "e4m3"
    block_quant: int | None = None

    @field_validator("row_sumsq")
    @classmethod
    def _sumsq_of_what_is_stored(cls, value: bool, info: ValidationInfo) -> bool:
        if value:
            _only_a_plain_product("row_sumsq", "sums the squares of a plain product or of", info)
        return value

    @field_validator("block_quant")
    @classmethod
    def _quantize_what_is_stored(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return value
        if value not in BLOCK_QUANT_SIZES:
            raise ValueError(
                f"block_quant={value} is not implemented: one f32 scale per 1 x 128 block of "
                "each row; legal: block_quant = 128"
            )
        if info.data.get("out_dtype") != "e4m3":
            raise ValueError(
                f'block_quant writes D as float8: it needs out_dtype = "e4m3", got '
                f"{info.data.get('out_dtype') or 'the input dtype'}"
            )
        _only_a_plain_product("block_quant", "quantizes a plain product or", info)
        if info.data.get("row_sumsq"):
            raise ValueError(
                "block_quant with row_sumsq is not implemented (two extra outputs); legal: one "
                "of them"
            )
        return value

    @model_validator(mode="after")
    def _e4m3_out_quantized(self) -> _EpilogueBase:
        if self.out_dtype == "e4m3" and self.block_quant is None:
            raise ValueError(
                'out_dtype = "e4m3" needs block_quant = 128 (the kernel writes float8 only with '
                "its per-block scales); legal out_dtype without it: bf16, f16, f32"
            )
        return self

    @model_validator(mode="after")
    def _fn_alone(self) -> _EpilogueBase:
        if self.fn is None:
            return self
        menu = [
            name
            for name, value, neutral in (
                ("alpha", self.alpha, 1.0),
                ("beta", self.beta, 0.0),
                ("activation", self.activation, "none"),
                ("bias", self.bias, "none"),
            )
            if value != neutral
        ]
        if menu:
            raise ValueError(
                f"fn replaces {', '.join(menu)}: write {'them' if len(menu) > 1 else 'it'} into "
                f"the function {self.fn.name} (its arguments can be scalars and vectors) and "
                "leave them out of the epilogue table"
            )
        return self

    @field_validator("alpha", "beta")
    @classmethod
    def _finite(cls, value: float | str) -> float | str:
        if value == RUNTIME:
            return value
        if not math.isfinite(value):
            raise ValueError(f"alpha and beta must be finite numbers, got {value}")
        if not _fits_f32(value):
            raise ValueError(
                f"{value!r} overflows float32, which the epilogue computes in (at most {F32_MAX:.8g})"
            )
        if value != 0 and abs(value) < F32_MIN_NORMAL:
            raise ValueError(
                f"{value!r} is below float32's smallest normal number ({F32_MIN_NORMAL:.8g}): the "
                "epilogue would multiply by 0 (or a denormal it flushes to 0); write 0"
            )
        return value

    @property
    def scalars(self) -> list[str]:
        """The scalars gemm and the kernel take at run time, in order ("alpha", "beta")."""
        return [name for name in ("alpha", "beta") if getattr(self, name) == RUNTIME]

    @property
    def fused(self) -> bool:
        return (
            self.alpha != 1.0
            or self.beta != 0.0
            or self.activation != "none"
            or self.bias != "none"
            or self.fn is not None
        )

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # bias came after kernels shipped: left out at its default so their spec hashes stay
        data = handler(self)
        if data.get("bias") == "none":
            del data["bias"]
        if data.get("fn") is None:
            data.pop("fn", None)
        if data.get("row_sumsq") is False:
            del data["row_sumsq"]
        if data.get("block_quant") is None:
            data.pop("block_quant", None)
        return data


class DirectEpilogue(_EpilogueBase):
    """Accumulator -> registers -> global memory, each thread storing its own fragment."""

    style: Literal["direct"] = "direct"


class TmaStoreEpilogue(_EpilogueBase):
    """Accumulator -> registers -> swizzled SMEM -> one TMA store per sub-tile."""

    style: Literal["tma"] = "tma"


Epilogue = Annotated[DirectEpilogue | TmaStoreEpilogue, Field(discriminator="style")]


class GridScheduler(_Frozen):
    """One CTA (or cluster) per output tile, launched as a grid."""

    kind: Literal["grid"] = "grid"


class PersistentScheduler(_Frozen):
    """One CTA (or cluster) per SM looping over output tiles in a static order."""

    kind: Literal["persistent"] = "persistent"
    raster: Literal["m", "n"] = "m"  # consecutive tiles of a CTA walk down M (or along N)
    # at most this many SMs; None: all of the GPU's (cross-compiled: the flagship's, 132 / 148)
    sm_count: int | None = Field(default=None, gt=0)
    group: int = Field(default=1, gt=0)  # tile swizzle: walk `group` tiles across the raster


class SplitKScheduler(_Frozen):
    """Split K over the CTAs of a (splits, 1, 1) cluster: each CTA accumulates its share of the
    k-tiles of the cluster's output tile, rank 0 adds the peers' partials (read through DSMEM, in
    rank order) and stores the tile. Clusters walk the output tiles persistently along M."""

    kind: Literal["split_k"] = "split_k"
    splits: int = Field(default=2, ge=2)  # CTAs per cluster, each taking 1/splits of K
    max_clusters: int | None = Field(default=None, gt=0)  # None: the GPU's SM count // splits
    # "cluster": the in-kernel DSMEM reduction above. "separate": no cluster; (tiles x splits)
    # CTAs each store an f32 partial to a global workspace slot [split][tile], and a second
    # kernel sums the partials in split order, applies the epilogue and stores C (both arches)
    reduce: Literal["cluster", "separate"] = "cluster"
    # reduce="separate": the workspace holds the partials of at most max_tiles output tiles;
    # None: as many tiles as 2^23 output elements need (codegen.arch.shared.splitk_max_tiles)
    max_tiles: int | None = Field(default=None, gt=0)

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # reduce and max_tiles came after kernels shipped: left out at their defaults, so those
        # kernels' SPEC dicts and spec hashes stay as they were
        data = handler(self)
        if data.get("reduce") == "cluster":
            del data["reduce"]
        if data.get("max_tiles") is None:
            data.pop("max_tiles", None)
        return data


class StreamKScheduler(_Frozen):
    """Stream-K: persistent CTAs (one per SM) split the MAC-loop iterations of every output tile
    (each tile's k-tiles, tile after tile) into equal shares. A tile whose k-tiles span several
    CTAs is finished by the CTA that runs its first k-tile: it adds the other CTAs' f32 partials,
    handed over through a global workspace in CTA order (deterministic), and stores the tile."""

    kind: Literal["stream_k"] = "stream_k"
    # workspace slots, so at most this many SMs; None: the flagship's (132 / 148); a GPU with
    # fewer SMs runs one CTA per SM
    sm_count: int | None = Field(default=None, gt=0)
    # what a band (the tiles one group of CTAs walks) shares. "activations": one activation tile
    # (a row of tiles; a column with swap AB), walked along the weights. "weights": one weight
    # tile (a column of tiles; a row with swap AB), walked along the activations, and a multiple
    # of the group count is launched so every group has as many CTAs (equal groups keep pace).
    # Measured on the H100 (BENCHMARKS.md 2026-12-07): at prefill the activation bands' unequal
    # groups drift apart and re-read the weight tiles from DRAM
    bands: Literal["activations", "weights"] = "activations"
    # the data-parallel + stream-K hybrid (name suffix _dp): with P CTAs and T tiles, every CTA
    # first runs whole tiles b, b + P, ... of the first W = T // P - 1 full waves (all T // P
    # waves when P divides T; none when T < P) in the persistent scheduler's order (raster along
    # M, no swizzle: its L2 reuse), stored by its own epilogue with no workspace; the remaining
    # tiles (the last full wave and the partial one, P + 1 to 2P - 1 of them) are split stream-K
    # into equal contiguous shares of their MAC iterations over all P CTAs, fixed up as above.
    # Measured on the H100 (BENCHMARKS.md 2026-12-07): at prefill the stream-K tile order, not its
    # fix-up, cost 0.53-0.79x of the persistent twin. The stream-K part is one group of every CTA
    # over the tiles in that persistent order, so `bands` does not apply: with at most 2P tiles
    # left, every CTA's share is one to two tiles, and a band would split them into groups
    # running apart; bands = "weights" is refused with it
    data_parallel: bool = False

    @field_validator("data_parallel")
    @classmethod
    def _hybrid_has_no_bands(cls, value: bool, info: ValidationInfo) -> bool:
        bands = info.data.get("bands", "activations")
        if value and bands != "activations":
            raise ValueError(
                f'true with bands = "{bands}" is not implemented (the hybrid\'s stream-K tiles '
                "are one group in the persistent order); legal: leave bands out, or "
                "data_parallel = false"
            )
        return value

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # bands and data_parallel came after kernels shipped: left out at their defaults, so
        # those kernels' SPEC dicts and spec hashes stay as they were
        data = handler(self)
        if data.get("bands") == "activations":
            del data["bands"]
        if data.get("data_parallel") is False:
            del data["data_parallel"]
        return data


class DynamicScheduler(_Frozen):
    """Dynamic persistent (sm_100a cluster launch control): the grid is the whole tile grid; a CTA
    computes its own tile, then keeps cancelling CTAs that have not started yet
    (clusterlaunchcontrol.try_cancel) and computes their tiles, until a request fails."""

    kind: Literal["dynamic"] = "dynamic"


Scheduler = Annotated[
    GridScheduler | PersistentScheduler | SplitKScheduler | StreamKScheduler | DynamicScheduler,
    Field(discriminator="kind"),
]


def _tagged(value: object, tag: str) -> object:
    """Accept the short form ``epilogue = "direct"`` for ``epilogue = {style = "direct"}``."""
    return {tag: value} if isinstance(value, str) else value


class Spec(_Frozen):
    """One kernel variant. ``stages`` and ``swizzle`` may be "auto" until resolved."""

    name: str | None = None
    arch: Arch = "sm_100a"
    dtype: DType = "f16"
    tile: Tile
    stages: int | Literal["auto"] = "auto"
    swizzle: Swizzle = "auto"
    warp_specialized: bool = True
    cluster: Cluster = Cluster()
    consumer_warpgroups: Literal[1, 2] | None = None  # sm_90a only
    # sm_90a only: "cooperative" = the consumer warpgroups split each tile's rows; "pingpong" =
    # each takes whole tiles, alternating, so one's epilogue overlaps the other's mainloop
    consumer_mode: ConsumerMode = "cooperative"
    cta_group: Literal[1, 2] = 1  # sm_100a only: 2 = one 256-row UMMA per CTA pair
    accumulators: Literal[1, 2] = 1  # sm_100a only: TMEM accumulator slots (2 needs persistent)
    swap_ab: bool = False  # compute C^T = B @ A^T: small M rides in the MMA's N (decode shapes)
    epilogue: Epilogue = DirectEpilogue()
    scheduler: Scheduler = GridScheduler()
    # programmatic dependent launch: the kernel is launched with programmatic stream
    # serialization, so its prologue (barrier init, descriptor prefetch, TMEM allocation) runs
    # under the previous kernel's tail; it waits for that kernel (griddepcontrol.wait) before
    # its first global load or store and at once lets the next kernel launch (launch_dependents);
    # before its wait the TMA warp prefetches its first k-blocks to L2 (a cache hint). Name
    # suffix _pdl
    pdl: bool = False
    # sm_90a only: CTAs of this kernel that fit on one SM at once. 2 halves each CTA's share of
    # the register file (consumer setmaxnreg, launch bounds) and of shared memory (the stage
    # budget), so a CTA of the next kernel of a PDL chain can be resident beside a running one
    # and run its prologue and L2 prefetch under that CTA's tail; the persistent grids stay one
    # CTA (cluster) per SM. For small decode tiles. Name suffix _occ2
    ctas_per_sm: Literal[1, 2] = 1
    # how the operands reach the MMA. "tma": TMA into a shared-memory ring guarded by mbarriers,
    # the arch's own MMA (wgmma, tcgen05). "light": for decode (small M): no TMA, no mbarrier, no
    # shared-memory ring; every warp loads both operands from global memory into registers with
    # 16-byte loads and runs warp-level mma.sync, `warps` warps of a CTA split K and add their
    # partials through shared memory (templates/light/gemm.py.j2)
    mainloop: Literal["tma", "light"] = "tma"
    warps: int | None = Field(default=None, gt=0)  # light only: warps per CTA, splitting K
    # the operands' major modes as the user passes them (gemm's a (M, K) and b (N, K)): "k" =
    # K-major (last stride 1), "mn" = M- (N-) major, the transpose of a contiguous (K, M) ((K, N))
    # tensor. Swap AB exchanges the operands, so the kernel's A takes b_major and its B a_major
    a_major: Major = "k"
    b_major: Major = "k"

    @model_serializer(mode="wrap")
    def _omit_late_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # consumer_mode, pdl, ctas_per_sm, mainloop, warps, a_major and b_major came after
        # kernels shipped: left out at their defaults, so those kernels' SPEC dicts and spec
        # hashes stay as they were (validation restores the default)
        data = handler(self)
        if data.get("consumer_mode") == "cooperative":
            del data["consumer_mode"]
        if data.get("pdl") is False:
            del data["pdl"]
        if data.get("ctas_per_sm") == 1:
            del data["ctas_per_sm"]
        if data.get("mainloop") == "tma":
            del data["mainloop"]
        if data.get("warps") is None:
            data.pop("warps", None)
        for operand in ("a_major", "b_major"):
            if data.get(operand) == "k":
                del data[operand]
        return data

    @field_validator("epilogue", mode="before")
    @classmethod
    def _epilogue_short(cls, value: object) -> object:
        return _tagged(value, "style")

    @field_validator("scheduler", mode="before")
    @classmethod
    def _scheduler_short(cls, value: object) -> object:
        return _tagged(value, "kind")

    @field_validator("name")
    @classmethod
    def _name_is_identifier(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.isidentifier():
            raise ValueError(f"name {value!r} is not a valid Python identifier")
        why = name_problem(value)
        if why:
            raise ValueError(f"name {value!r} {why}")
        return value

    @field_validator("stages")
    @classmethod
    def _stages_positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError(f'stages must be at least 1 or "auto", got {value}')
        return value

    @property
    def arch_short(self) -> str:
        return self.arch.removesuffix("a").replace("_", "")

    def canonical_name(self) -> str:
        """The kernel's derived name: every knob in one fixed order, a knob at its default left
        out (README, "Kernel names"), so two specs that differ derive different names. Not in
        it: an epilogue function's file and source (its function name is), and a light kernel's
        swizzle and warp specialization (fixed by the light rules)."""
        swz = {"none": "inter", "32B": "sw32", "64B": "sw64", "128B": "sw128"}.get(
            self.swizzle, self.swizzle
        )
        parts = [self.arch_short, self.dtype, str(self.tile), f"s{self.stages}"]
        if self.mainloop == "light":
            parts.append(f"light_w{self.warps}")
        else:
            parts += [swz, "ws" if self.warp_specialized else "kloop"]
        if self.consumer_warpgroups is not None:
            parts.append(f"wg{self.consumer_warpgroups}")
        if self.consumer_mode == "pingpong":
            parts.append("pp")
        if self.cta_group > 1:
            parts.append(f"cta{self.cta_group}")
        if self.accumulators > 1:
            parts.append(f"acc{self.accumulators}")
        if self.swap_ab:
            parts.append("swap")
        for operand, major in (("a", self.a_major), ("b", self.b_major)):
            if major != "k":
                parts.append(f"{operand}{major}")
        if self.cluster.size > 1:
            parts.append(f"c{self.cluster.m}x{self.cluster.n}")
        epi = self.epilogue.style
        if self.epilogue.out_dtype is not None:
            epi += f"_{self.epilogue.out_dtype}"
        for tag, value, neutral in (
            ("a", self.epilogue.alpha, 1.0),
            ("b", self.epilogue.beta, 0.0),
        ):
            if value == RUNTIME:
                epi += f"_{tag}rt"
            elif value != neutral:
                epi += f"_{tag}{value:g}".replace(".", "p").replace("-", "m").replace("+", "")
        if self.epilogue.bias != "none":
            epi += f"_bias{self.epilogue.bias}"
        if self.epilogue.activation != "none":
            epi += f"_{self.epilogue.activation}"
        if self.epilogue.fn is not None:
            epi += f"_fn_{self.epilogue.fn.name}"
        if self.epilogue.row_sumsq:
            epi += "_sumsq"
        if self.epilogue.block_quant is not None:
            epi += f"_bq{self.epilogue.block_quant}"
        parts.append(epi)
        sched = self.scheduler.kind
        if isinstance(self.scheduler, PersistentScheduler):
            sched += f"_r{self.scheduler.raster}"
            if self.scheduler.group > 1:
                sched += f"_g{self.scheduler.group}"
            if self.scheduler.sm_count is not None:
                sched += f"_sm{self.scheduler.sm_count}"
        if isinstance(self.scheduler, StreamKScheduler):
            sched = "streamk"
            if self.scheduler.sm_count is not None:
                sched += f"_sm{self.scheduler.sm_count}"
            if self.scheduler.bands == "weights":
                sched += "_wb"
            if self.scheduler.data_parallel:
                sched += "_dp"
        if isinstance(self.scheduler, SplitKScheduler):
            sched = f"splitk{self.scheduler.splits}"
            if self.scheduler.max_clusters is not None:
                sched += f"_mc{self.scheduler.max_clusters}"
            if self.scheduler.reduce == "separate":
                sched += "_sep"
            if self.scheduler.max_tiles is not None:
                sched += f"_mt{self.scheduler.max_tiles}"
        parts.append(sched)
        if self.pdl:
            parts.append("pdl")
        if self.ctas_per_sm > 1:
            parts.append(f"occ{self.ctas_per_sm}")
        return "_".join(parts)

    def knobs(self) -> dict[str, object]:
        """Every knob except the name, as plain data: the one serialization of a spec. The spec
        hash (canonical_json), the kernel's SPEC literal (registry.spec_knobs) and `codegen list`
        (cli._knobs) derive from it; package.read_entry and build read SPEC back."""
        return self.model_dump(exclude={"name"})

    def canonical_json(self) -> str:
        """Every knob except the name, in a stable order: what the spec hash covers."""
        return json.dumps(self.knobs(), sort_keys=True, separators=(",", ":"))

    def spec_hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:12]
