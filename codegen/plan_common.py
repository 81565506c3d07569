"""What every architecture's planner shares: the :class:`Plan` a template reads, dtype names, the
fusion and bias values, the docstring's Pipeline rings, the tile order and the GPU-sized grid.

Templates place these values; they never compute. This module imports no architecture: each
planner (``codegen/arch/<name>/values.py``) builds on it, and :mod:`codegen.plan` picks the
planner of a spec through :mod:`codegen.registry`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import textwrap
import types
import typing
from dataclasses import dataclass, fields

from codegen.spec import Spec

CUTLASS_DTYPE = {
    "f16": "cutlass.Float16",
    "bf16": "cutlass.BFloat16",
    "e4m3": "cutlass.Float8E4M3FN",
    "f32": "cutlass.Float32",
}
TORCH_DTYPE = {
    "f16": "torch.float16",
    "bf16": "torch.bfloat16",
    "e4m3": "torch.float8_e4m3fn",
    "f32": "torch.float32",
}


# gelu, tanh form: gelu(x) = x/2 (1 + tanh(GELU_C (x + GELU_CUBIC x^3)))
GELU_C = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
# bias: the dimension of C its values run along (its length): "row" one per row, "col" per column
BIAS_DIM = {"row": "M", "col": "N"}


@dataclass(frozen=True, kw_only=True)
class Values:
    """What every architecture's templates read as ``plan.NAME``: one frozen, typed field per value,
    built once by keyword (a value given twice is a TypeError, not a silent override). Each
    architecture's planner extends it with its own fields. A field left at None is a value the
    variant does not have: ``plan.NAME`` is then undefined to the templates (strict: reading it is
    an error), as a key missing from a dict was."""

    # the docstring
    tile_name: str  # the tile as the spec names it: MxNxK
    arch: str
    dtype_name: str  # the input dtype, as the spec names it
    swizzle: str
    pipeline_table: list[str]
    # dtypes
    io_dtype: str
    out_dtype: str
    torch_dtype: str
    torch_out_dtype: str
    out_dtype_name: str
    # the tile, the ring, the budget
    tiler: tuple[int, int, int]
    stages: int
    threads: int
    tx_bytes: int
    mma_k: int
    mmas_per_stage: int
    smem_bytes: int
    shape_multiples: dict[str, int]
    # fusion (plan_common.fusion_values)
    fusion_formula: str  # D = this; empty for a plain store
    alpha: float
    beta: float
    activation: str
    gelu_c: float
    gelu_cubic: float
    bias_dim: str | None = None
    bias_per: str | None = None
    bias_note: str | None = None
    # the bias (plan_common.bias_values)
    bias: bool
    bias_axis: str
    bias_index_note: str
    bias_coord: int
    bias_base: str
    bias_extent: str
    bias_user_extent: str
    bias_user_axis: str
    # tensors after C (plan_common.extra_tensors)
    host_tensors: list[str]
    kernel_tensors: list[tuple[str, str]]
    gemm_doc: str
    workspace_elems: int
    # the GPU-sized grid (plan_common.sm_sized_values)
    sm_sized: bool
    default_sm_count: int | None = None
    default_sm_note: str | None = None
    device_capability: tuple[int, int] | None = None
    workers_expr: str | None = None
    workers_doc: str | None = None

    def __getitem__(self, name: str) -> object:
        value = getattr(self, name, None) if name in self.__dataclass_fields__ else None
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and getattr(self, name, None) is not None

    def as_dict(self) -> dict[str, object]:
        """The values the variant has (no None), by name."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class Plan:
    """Values and partial names for one generated file."""

    template: str
    partials: dict[str, str]
    values: Values

    def __getattr__(self, name: str) -> object:  # lets templates write plan.tx_bytes
        value = getattr(self.values, name, None)
        if value is None and name not in group_fields(type(self.values)):
            raise AttributeError(name)
        return value  # a group the variant lacks is None: `{% if plan.GROUP %}`


@functools.cache
def group_fields(values_type: type) -> frozenset[str]:
    """The fields of `values_type` that are groups of values (frozen dataclasses), optional ones
    included: a template tests an optional group as `plan.GROUP` (None where the variant lacks
    the feature) and reads its values as `plan.GROUP.NAME`."""
    out = set()
    for name, hint in typing.get_type_hints(values_type).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        if any(dataclasses.is_dataclass(a) for a in args):
            out.add(name)
    return frozenset(out)


def plural(count: int, word: str) -> str:
    """ "1 slot", "2 slots": a count and its noun, in the docstrings' prose."""
    return f"{count} {word}{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class Ring:
    """One ring of a kernel docstring's Pipeline section."""

    name: str  # "A/B SMEM", "accumulator", ...
    flow: str  # producer -> consumer
    size: str  # its buffers ("4 stages x 49152 bytes"); "" when it has none of its own
    full: str  # the arrivals that complete a phase of its full barrier
    empty: str  # ... of its empty barrier; "" when it has none


RING_NAME = 13  # the ring's name column: "accumulator" and two spaces


def ring_lines(rings: list[Ring], width: int) -> list[str]:
    """The Pipeline section, `width` columns wide: per ring its name, producer -> consumer and its
    buffers, then what its full and empty barriers count. Clauses that do not fit on one line
    stand on a line each, under the first; a clause too long for a line continues two columns
    further in."""
    lines = []
    for ring in rings:
        clauses = [
            [ring.flow, *([ring.size] if ring.size else [])],
            [
                f"full arrives: {ring.full}",
                *([f"empty arrives: {ring.empty}"] if ring.empty else []),
            ],
        ]
        texts = []
        for group in clauses:
            joined = "; ".join(group)
            texts += [joined] if len(joined) <= width - RING_NAME else group
        for i, text in enumerate(texts):
            first, *rest = wrap_words(text, width - RING_NAME)
            lines.append((ring.name if i == 0 else "").ljust(RING_NAME) + first)
            more = wrap_words(" ".join(rest), width - RING_NAME - 2)
            lines += [" " * (RING_NAME + 2) + line for line in more]
    return lines


def binary(mask: int, bits: int) -> str:
    """A mask as a Python binary literal of `bits` digits (0b0101)."""
    return f"0b{mask:0{bits}b}"


def tile_order(
    index: int, counts: tuple[int, int], raster: str = "m", group: int = 1
) -> tuple[int, int]:
    """Coordinates (m, n) of tile `index` in the persistent tile order of a counts[0] x counts[1]
    grid of (cluster) tiles: consecutive indices walk the `raster` dimension; with group > 1 they
    walk `group` tiles along it, then step along the other dimension, band by band (the last band
    is narrower when group does not divide the count). The Python reference of what both
    architectures' persistent schedulers compute in the kernel (templates/common/tile_order.py.j2).
    """
    major, minor = (0, 1) if raster == "m" else (1, 0)
    if group == 1:
        fast, slow = index % counts[major], index // counts[major]
    else:
        group_tiles = group * counts[minor]
        first = (index // group_tiles) * group
        width = min(counts[major] - first, group)
        fast, slow = first + (index % group_tiles) % width, (index % group_tiles) // width
    return (fast, slow) if raster == "m" else (slow, fast)


def stream_k_share(
    bidx: int, ctas: int, bands: int, band_tiles: int, k_tiles: int
) -> tuple[int, int, int, int, int, int]:
    """Stream-K CTA `bidx` of `ctas` over `bands` bands of `band_tiles` tiles (a band: the tiles
    that read the same weight tiles) of k_tiles k-tiles each: (its group's first CTA, the group's
    CTAs, its first MAC iteration, its iterations, this CTA's [it_begin, it_end)). The CTAs split
    into min(bands, ctas) groups, each on consecutive bands, each group's iterations into equal
    contiguous shares. The Python reference of what both architectures' stream-K kernels compute
    (templates/common/stream_k.py.j2)."""
    groups = min(bands, ctas)
    group = ((bidx + 1) * groups - 1) // ctas
    cta0 = group * ctas // groups
    group_ctas = (group + 1) * ctas // groups - cta0
    tile0 = group * bands // groups * band_tiles
    iter0 = tile0 * k_tiles
    iters = ((group + 1) * bands // groups * band_tiles - tile0) * k_tiles
    rank = bidx - cta0
    return (
        cta0,
        group_ctas,
        iter0,
        iters,
        iter0 + rank * iters // group_ctas,
        iter0 + (rank + 1) * iters // group_ctas,
    )


def stream_k_last_cta(tile: int, cta0: int, ctas: int, iter0: int, iters: int, k_tiles: int) -> int:
    """The CTA of a stream-K group (stream_k_share's first four values) that runs the last k-tile
    of tile `tile`: the finisher waits for CTAs up to it."""
    return cta0 + (((tile + 1) * k_tiles - iter0) * ctas - 1) // iters


def fusion_formula(spec: Spec) -> str:
    """The fused epilogue's right-hand side (D = it), or nothing when it is a plain store."""
    epi = spec.epilogue
    if not epi.fused:
        return ""
    expr = "A @ B^T" if epi.alpha == 1.0 else f"{epi.alpha:g} * A @ B^T"
    if epi.beta != 0.0:
        expr += f" + {epi.beta:g} * C"
    if epi.bias != "none":
        expr += f" + bias[{'row' if epi.bias == 'row' else 'column'}]"
    if epi.activation != "none":
        expr = f"{epi.activation}({expr})"
    return expr


def fusion_values(spec: Spec) -> dict[str, object]:
    """What the fusion macros print (templates/common/fusion.py.j2, for both arches; sm_90a adds
    the bias in the wgmma registers, templates/sm90/epilogue/_bias.py.j2). Whether there is a
    bias, and along which axis of the kernel's tile, comes from bias_values."""
    epi = spec.epilogue
    values: dict[str, object] = {
        "fusion_formula": fusion_formula(spec),
        "alpha": epi.alpha,
        "beta": epi.beta,
        "activation": epi.activation,
        "gelu_c": GELU_C,
        "gelu_cubic": GELU_CUBIC,
    }
    if epi.bias != "none":
        dim = BIAS_DIM[epi.bias]
        values |= {
            "bias_dim": dim,  # the bias has one value per row (M) or column (N) of C
            "bias_per": "row" if dim == "M" else "column",
            "bias_note": (
                "+ bias[row]: one value per row of C"
                if dim == "M"
                else "+ bias[col]: one value per column of C"
            ),
        }
    return values


def bias_values(spec: Spec) -> dict[str, object]:
    """Where the bias vector indexes the kernel's tile. The kernel computes C, or C^T with swap
    AB: a bias per row of the user's C is then per column of the kernel's."""
    user = spec.epilogue.bias
    kernel = {"row": "col", "col": "row"}[user] if spec.swap_ab and user != "none" else user
    row = kernel == "row"
    return {
        "bias": user != "none",
        "bias_axis": "row" if row else "column",
        "bias_index_note": ("row" if row else "column") + (" of C^T" if spec.swap_ab else ""),
        "bias_coord": 0 if row else 1,
        "bias_base": "tile_m * TILER[0]" if row else "tile_n * TILER[1]",
        "bias_extent": "M" if row else "N",
        "bias_user_extent": "M" if user == "row" else "N",
        "bias_user_axis": "row" if user == "row" else "column",
    }


def extra_tensors(spec: Spec, workspace_elems: int) -> dict[str, object]:
    """Tensors `gemm` takes after C, in order: the bias vector, and the stream-K workspace (which
    `launcher` allocates and the AOT shim owns, so a caller never passes it)."""
    bias = bias_values(spec)
    host, kernel, doc = [], [], ""
    if bias["bias"]:
        host.append("bias")
        where = f"{bias['bias_axis']} of C" + ("^T" if spec.swap_ab else "")
        out = spec.epilogue.out_dtype or spec.dtype
        kernel.append(("mBias", f"({bias['bias_extent']},) {out}: one value per {where}"))
        doc += f", bias ({bias['bias_user_extent']},)"
    if workspace_elems:
        host.append("workspace")
        kernel.append(("mWork", "(WORKSPACE_ELEMS,) f32: partial-tile slots, then flags"))
        doc += ", workspace (WORKSPACE_ELEMS,) f32 zeros"
    return {
        "host_tensors": host,
        "kernel_tensors": kernel,
        "gemm_doc": doc,
        "workspace_elems": workspace_elems,
    }


def sm_sized_values(
    default_sm_count: int,
    gpu: str,
    capability: tuple[int, int],
    per_worker: int,
    worker: str,
    *,
    sm_cap: int | None = None,
    worker_cap: int | str | None = None,
    worker_cap_note: str = "",
) -> dict[str, object]:
    """What a kernel whose persistent grid is sized by the GPU prints (templates/common/
    workers.py.j2): `gemm` takes the GPU's SM count as a compile-time argument (`sm_count`, by
    default DEFAULT_SM_COUNT, the arch's flagship's: what a cross-compile assumes), and the
    generated max_workers(sm_count) turns it into the most workers the grid launches: one per
    `per_worker` SMs, of at most `sm_cap` SMs (the spec's sm_count), at most `worker_cap` of
    them (split-K's max_clusters, stream-K's workspace slots)."""
    sms = f"min(sm_count, {sm_cap})" if sm_cap else "sm_count"
    expr = sms if per_worker == 1 else f"{sms} // {per_worker}"
    per = "SM" if per_worker == 1 else f"{per_worker} SMs"
    doc = (
        f"Workers the persistent grid launches at most on a GPU of sm_count SMs: {worker} per {per}"
    )
    if sm_cap:
        doc += f" of at most {sm_cap} (the spec's sm_count)"
    if worker_cap is not None:
        expr = f"min({expr}, {worker_cap})"
        doc += f", at most {worker_cap} ({worker_cap_note})"
    return {
        "sm_sized": True,
        "default_sm_count": default_sm_count,
        "default_sm_note": f"SMs of {gpu}: gemm's sm_count in a cross-compile; launches pass the GPU's",
        "device_capability": capability,
        "workers_expr": expr,
        # the generated function's docstring, wrapped at its indentation
        "workers_doc": "\n    ".join(textwrap.wrap(doc + ".", 92)),
    }


DOC_WIDTH = 96  # a docstring line inside a function: its 4 columns of indent left of 100


def wrap_words(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken between words only."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def spec_values(spec: Spec) -> dict[str, object]:
    """The spec's own names the docstring prints: its arch, dtype, tile and swizzle."""
    return {
        "arch": spec.arch,
        "dtype_name": spec.dtype,
        "tile_name": str(spec.tile),
        "swizzle": str(spec.swizzle),
    }


def dtype_values(spec: Spec) -> dict[str, object]:
    """The input and output dtypes, as the DSL and torch name them."""
    out = spec.epilogue.out_dtype or spec.dtype
    return {
        "io_dtype": CUTLASS_DTYPE[spec.dtype],
        "out_dtype": CUTLASS_DTYPE[out],
        "torch_dtype": TORCH_DTYPE[spec.dtype],
        "torch_out_dtype": TORCH_DTYPE[out],
        "out_dtype_name": out,
    }
