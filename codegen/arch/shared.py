"""Split-K and stream-K as both architectures implement them: the schedulers' predicates, the
separate-reduce workspace and its reduce kernel, the stream-K workspace, and the rules they share.

The architecture packages import this module; it imports none of them (an architecture's own
numbers, such as its flagship's SM count, come in as arguments).
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen import plan_common
from codegen.plan_common import Tensors, Values, Workers, bias, bias_axis, workers
from codegen.rules_common import DTYPE_BYTES, Violation, kib
from codegen.spec import PersistentScheduler, Spec, SplitKScheduler, StreamKScheduler

ACC_BYTES = 4  # one f32 accumulator value (split-K and stream-K hand partial tiles over in f32)
# stream-K's partition math is 64-bit (templates/common/stream_k.py.j2 and the stream-K partials
# of each arch): one div.s64 each for it_begin, it_end, first_tile, last_tile and the finisher's
# last_cta
STREAMK_WIDE_DIVS = 5

# ---- split K ------------------------------------------------------------------------------------


def is_split_k_cluster(spec: Spec) -> bool:
    """Split-K reduced in-kernel over a (splits, 1, 1) cluster (reduce = "cluster", DSMEM):
    staging and handshake barriers. False for reduce = "separate" (is_split_k_separate)."""
    return isinstance(spec.scheduler, SplitKScheduler) and spec.scheduler.reduce == "cluster"


def is_split_k_separate(spec: Spec) -> bool:
    """Split-K reduced by a second kernel from a global workspace (reduce = "separate")."""
    return isinstance(spec.scheduler, SplitKScheduler) and spec.scheduler.reduce == "separate"


def reduce_kind(spec: Spec) -> str:
    """How the CTAs that share one output tile's K range combine their partials, the partial of
    the reduce/ template family on both architectures: "none" (every CTA runs a whole tile's K),
    "cluster" (split-K over a cluster, DSMEM), "separate" (split-K, a second kernel sums a global
    workspace) or "stream_k" (stream-K's fix-up through a global workspace)."""
    if is_stream_k(spec):
        return "stream_k"
    if isinstance(spec.scheduler, SplitKScheduler):
        return spec.scheduler.reduce
    return "none"


def splits(spec: Spec) -> int:
    """CTAs that share one output tile and split its K range (1 without split-K)."""
    return spec.scheduler.splits if isinstance(spec.scheduler, SplitKScheduler) else 1


def splitk_cluster_violation(spec: Spec, n: int) -> Violation:
    """The cluster rule both arches share: split-K over a cluster takes the cluster itself."""
    return Violation(
        "cluster",
        f"cluster {spec.cluster.m}x{spec.cluster.n} with scheduler split_k: split-K uses the "
        f"cluster itself ({n} CTAs along x, one per K share) and has no TMA multicast; "
        "legal: [1, 1]",
    )


# ---- split K, separate reduce -------------------------------------------------------------------

SEPARATE_MAX_SPLITS = 16  # the reduce kernel unrolls its sum over the splits
SEPARATE_DEFAULT_ELEMS = 1 << 23  # default workspace capacity: 2^23 output elements per split
REDUCE_THREADS = 128  # threads of one reduce CTA (one CTA per output tile)
REDUCE_VEC = 4  # f32 values one reduce thread loads at once: 16 bytes
INDEX_LIMIT = 1 << 31  # workspace offsets are 32-bit


def splitk_max_tiles(spec: Spec) -> int:
    """Output tiles the separate-reduce workspace holds: the spec's max_tiles, or as many as
    SEPARATE_DEFAULT_ELEMS output elements need (2^23 / (TM x TN))."""
    if not is_split_k_separate(spec):
        return 0
    return spec.scheduler.max_tiles or SEPARATE_DEFAULT_ELEMS // (spec.tile.m * spec.tile.n)


def separate_tile_elems(spec: Spec) -> int:
    """f32 values of one workspace slot: a whole TM x TN partial tile."""
    return spec.tile.m * spec.tile.n if is_split_k_separate(spec) else 0


def separate_workspace_elems(spec: Spec) -> int:
    """The global workspace (f32 words): splits x max_tiles slots, slot [split][tile]."""
    return splits(spec) * splitk_max_tiles(spec) * separate_tile_elems(spec)


def reduce_vecs_per_thread(spec: Spec) -> int:
    """16-byte vectors of one tile each reduce thread sums: TM x TN / (REDUCE_VEC x threads).
    Exact for every wgmma tile: TM is a multiple of 64 and TN of 8, so TM x TN of 512."""
    return separate_tile_elems(spec) // (REDUCE_VEC * REDUCE_THREADS)


def splitk_separate_violations(spec: Spec) -> list[Violation]:
    """The separate reduce: splits in [2, SEPARATE_MAX_SPLITS] (its sum is unrolled), no
    max_clusters (it launches a grid), a workspace with 32-bit offsets; max_tiles only sizes this
    workspace, so the cluster reduce takes none."""
    if not isinstance(spec.scheduler, SplitKScheduler):
        return []
    if not is_split_k_separate(spec):
        if spec.scheduler.max_tiles is None:
            return []
        return [
            Violation(
                "scheduler",
                f"split_k max_tiles={spec.scheduler.max_tiles} sizes the workspace of reduce = "
                '"separate"; the cluster reduction has none: remove max_tiles or set reduce = '
                '"separate"',
            )
        ]
    out: list[Violation] = []
    n = spec.scheduler.splits
    if spec.scheduler.max_clusters is not None:
        out.append(
            Violation(
                "scheduler",
                f"split_k max_clusters={spec.scheduler.max_clusters} caps the persistent clusters "
                'of reduce = "cluster"; reduce = "separate" launches one CTA per tile and split: '
                "remove max_clusters",
            )
        )
    if n > SEPARATE_MAX_SPLITS:
        out.append(
            Violation(
                "scheduler",
                f'split_k splits={n} with reduce = "separate": the reduce kernel unrolls its sum '
                f"over the splits; legal: 2 to {SEPARATE_MAX_SPLITS}",
            )
        )
    if separate_workspace_elems(spec) >= INDEX_LIMIT:
        out.append(
            Violation(
                "scheduler",
                f"split_k max_tiles={splitk_max_tiles(spec)}: the workspace of {n} splits x "
                f"max_tiles x {separate_tile_elems(spec)} f32 must stay under 2^31 words "
                "(32-bit offsets); legal: max_tiles 1 to "
                f"{(INDEX_LIMIT - 1) // (n * separate_tile_elems(spec))}",
            )
        )
    return out


def splitk_max_tiles_line(spec: Spec) -> str:
    """The workspace's slot count, spelled out for the docstring."""
    return f"{splits(spec)} splits x MAX_TILES = {splitk_max_tiles(spec)}"


def reduce_kernel_counts(spec: Spec) -> dict[str, int]:
    """PTX counts of the separate reduce kernel (its vector loop is not unrolled): one 16-byte
    load per split, C with beta, the bias (one vector along the vector's axis, else one value);
    gelu (tanh) and silu one ex2 per value of its vector, relu one max.f32. An epilogue
    function: one load per device scalar (before the loop), and per vector one load of a vector
    argument across the vector's axis, REDUCE_VEC (one per element) of one along it."""
    loads = splits(spec) + int(spec.epilogue.beta != 0.0)
    loads += int(spec.epilogue.bias != "none")
    # the reduce kernel's vectors run along the rows of the kernel's C (C^T, column-major, with
    # swap AB) or along its columns
    along = "row" if spec.swap_ab else "col"
    for _, kind in spec.epilogue.fn.args if spec.epilogue.fn else ():
        if kind == "device_scalar":
            loads += 1
        elif kind in ("row", "col"):
            axis = {"row": "col", "col": "row"}[kind] if spec.swap_ab else kind
            loads += REDUCE_VEC if axis == along else 1
    return {
        "ld.global": loads,
        "ex2": REDUCE_VEC * int(spec.epilogue.activation in ("gelu_tanh", "silu")),
        "max.f32": REDUCE_VEC * int(spec.epilogue.activation == "relu"),
    }


@dataclass(frozen=True, kw_only=True)
class SeparateReduce:
    """What the separate reduce's partials of both architectures print (``plan.separate``; the
    scheduler, the partial epilogue and common/split_k_reduce.py.j2): the workspace geometry and
    the reduce kernel's vectors. The workspace's size is ``plan.tensors.workspace_elems``."""

    max_tiles: int
    max_tiles_note: str
    slot_kib: str  # one workspace slot, in KiB
    workspace_mib: str  # the workspace, in MiB
    slot_shape: tuple[int, int, int, int]  # (TM, TN, MAX_TILES, SPLITS)
    slot_stride: tuple[int, int, int, int]
    slot_note: str
    vec_slot_shape: tuple[int, int, int, int]  # (REDUCE_VEC, vectors, MAX_TILES, SPLITS)
    vec_slot_stride: tuple[int, int, int, int]
    c_tile: tuple[int, int]  # rows and columns of the user's C one tile covers
    reduce_threads: int
    reduce_vec: int
    vecs_per_thread: int
    vecs_along: int
    vec_tiler: tuple[int, int]
    vec_axis: str
    c_vec_bits: int
    bias_along_vec: bool


@dataclass(frozen=True, kw_only=True)
class SeparateReduceValues(Values):
    """The values of both architectures' plans, plus the separate reduce's (None without reduce =
    "separate")."""

    separate: SeparateReduce | None = None


def separate_reduce(spec: Spec) -> SeparateReduce | None:
    """The separate reduce's workspace geometry and the reduce kernel's vectors (None without
    reduce = "separate")."""
    if not is_split_k_separate(spec):
        return None
    t = spec.tile
    n = splits(spec)
    max_tiles = splitk_max_tiles(spec)
    tile_elems = separate_tile_elems(spec)
    vec = REDUCE_VEC
    out = spec.epilogue.out_dtype or spec.dtype
    # the slot is (TM, TN) in the kernel's orientation, strided like C: row-major, or
    # column-major for C^T (swap AB); the reduce kernel's vectors run along the contiguous mode
    slot_mn = (1, t.m) if spec.swap_ab else (t.n, 1)
    vec_axis = "row" if spec.swap_ab else "column"
    return SeparateReduce(
        max_tiles=max_tiles,
        max_tiles_note=(
            "the spec's max_tiles"
            if spec.scheduler.max_tiles
            else f"2^23 output elements / (TM x TN): {SEPARATE_DEFAULT_ELEMS} per split"
        ),
        slot_kib=kib(tile_elems * ACC_BYTES),
        workspace_mib=f"{separate_workspace_elems(spec) * ACC_BYTES / 2**20:g}",
        slot_shape=(t.m, t.n, max_tiles, n),
        slot_stride=(*slot_mn, tile_elems, max_tiles * tile_elems),
        slot_note="column-major, like C^T" if spec.swap_ab else "row-major, like C",
        vec_slot_shape=(vec, tile_elems // vec, max_tiles, n),
        vec_slot_stride=(1, vec, tile_elems, max_tiles * tile_elems),
        c_tile=(t.n, t.m) if spec.swap_ab else (t.m, t.n),
        reduce_threads=REDUCE_THREADS,
        reduce_vec=vec,
        vecs_per_thread=reduce_vecs_per_thread(spec),
        vecs_along=(t.m if spec.swap_ab else t.n) // vec,
        vec_tiler=(vec, 1) if spec.swap_ab else (1, vec),
        vec_axis=vec_axis,
        c_vec_bits=vec * 8 * DTYPE_BYTES[out],
        bias_along_vec=spec.epilogue.bias != "none" and bias_axis(spec) == vec_axis,
    )


def separate_tensors(spec: Spec) -> Tensors:
    """Split-K "separate": the GEMM kernel takes only the workspace (bias and C's values are the
    reduce kernel's); `gemm` takes the bias too, and passes it to the reduce kernel."""
    b = bias(spec)
    return Tensors(
        host=(["bias"] if b else []) + ["workspace"],
        kernel=[("mWork", "(WORKSPACE_ELEMS,) f32: SPLITS x MAX_TILES partial-tile slots")],
        launch=["workspace"],
        doc=(", bias " + f"({b.user_extent},)" if b else "")
        + ", workspace (WORKSPACE_ELEMS,) f32 (any contents: every slot read is written first)",
        workspace_elems=separate_workspace_elems(spec),
    )


def runtime_scalar_violations(spec: Spec) -> list[Violation]:
    """alpha / beta = "runtime" (kernel arguments) reach the one epilogue that runs in the GEMM
    kernel: not split-K (a reduce applies the fusion) nor stream-K (a tile's fix-up does)."""
    scalars = spec.epilogue.scalars
    if not scalars:
        return []
    names = " and ".join(f'{name} = "runtime"' for name in scalars)
    legal = "legal with it: a scheduler other than split_k and stream_k"
    if splits(spec) > 1:
        kind = f"split_k (splits={splits(spec)})"
    elif is_stream_k(spec):
        kind = "stream_k"
    else:
        return []
    return [
        Violation(
            "epilogue",
            f"{names} is not implemented with scheduler {kind} yet; {legal}, or a "
            "compiled-in number",
        )
    ]


# where an epilogue function runs after each reduce kind, in a refusal's words
REDUCE_FN_SITE = {
    "cluster": "after split-K's cluster reduction",
    "separate": "by split-K's separate reduce kernel",
    "stream_k": "after stream-K's fix-up",
}


def epilogue_fn_violations(
    spec: Spec,
    supported: dict[str, frozenset[str]],
    reductions: dict[str, frozenset[str]] | None = None,
) -> list[Violation]:
    """An epilogue function (epilogue.fn) runs once per element after the whole K reduction: in
    the one epilogue of the GEMM kernel, or, with split-K or stream-K, where the reduction ends
    (the CTA that adds the peers' partials, or the reduce kernel). `supported`: per epilogue
    style the architecture implements it in, the argument kinds it gives
    (codegen/epilogue_fn.py); `reductions`: per reduce kind (reduce_kind) it implements a
    function after, the argument kinds it gives there (none: whole-K tiles only)."""
    from codegen.epilogue_fn import KIND_NAMES

    fn = spec.epilogue.fn
    if fn is None:
        return []
    what = f"fn {fn.name}"
    reduce = reduce_kind(spec)
    if reduce != "none":
        kind = f"split_k (splits={splits(spec)})" if splits(spec) > 1 else "stream_k"
        if reduce == "separate":
            kind = f"split_k (splits={splits(spec)}, reduce separate)"
        legal_after = (reductions or {}).get(reduce)
        if legal_after is None:
            others = ", ".join(sorted(k.replace("_", "-") for k in reductions or {}))
            return [
                Violation(
                    "epilogue.fn",
                    f"{what} is not implemented with scheduler {kind}: the function must run "
                    "once per element after the K reduction, which happens outside the "
                    "epilogue's registers there; legal with fn: scheduler grid or persistent"
                    + (f", or a {others} reduction" if others else ""),
                )
            ]
        for name, arg_kind in fn.args:
            if arg_kind not in legal_after:
                return [
                    Violation(
                        "epilogue.fn",
                        f"{what}: argument {name!r} ({KIND_NAMES[arg_kind]}) is not given "
                        f"{REDUCE_FN_SITE[reduce]} on {spec.arch}; legal there: "
                        f"{', '.join(KIND_NAMES[k] for k in sorted(legal_after))}",
                    )
                ]
    style = spec.epilogue.style
    kinds = supported.get(style)
    if kinds is None:
        legal = " or ".join(f'"{s}"' for s in supported)
        return [
            Violation(
                "epilogue.fn",
                f"{what}: epilogue functions are not implemented in the {style} epilogue on "
                f"{spec.arch}; legal with fn: style {legal}",
            )
        ]
    for name, kind in fn.args:
        if kind not in kinds:
            others = [s for s, k in supported.items() if kind in k]
            return [
                Violation(
                    "epilogue.fn",
                    f"{what}: argument {name!r} ({KIND_NAMES[kind]}) is not given by the {style} "
                    f"epilogue on {spec.arch}; legal there: "
                    f"{', '.join(KIND_NAMES[k] for k in sorted(kinds))}"
                    + (f"; {KIND_NAMES[kind]} needs style {' or '.join(others)}" if others else ""),
                )
            ]
    return []


def row_sumsq_violations(
    spec: Spec, styles: tuple[str, ...], schedulers: tuple[str, ...]
) -> list[Violation]:
    """row_sumsq (the per-row sums of squares of the stored values, written as partial sums by
    the epilogue's threads): implemented where one epilogue holds each whole tile's final f32
    values, in the epilogue `styles` and with the `schedulers` the architecture lists; not after
    split-K's or stream-K's reduction (there the partials would be written by the CTA that
    finishes each tile, inside the reduction's own scope)."""
    if not spec.epilogue.row_sumsq:
        return []
    reduce = reduce_kind(spec)
    if reduce != "none":
        kind = f"split_k (splits={splits(spec)})" if splits(spec) > 1 else "stream_k"
        return [
            Violation(
                "epilogue.row_sumsq",
                f"row_sumsq is not implemented with scheduler {kind}: the row partials are "
                "written by the epilogue that holds a whole tile's values; legal with "
                f"row_sumsq: scheduler {' or '.join(schedulers)}",
            )
        ]
    if spec.epilogue.style not in styles:
        legal = " or ".join(f'"{s}"' for s in styles)
        return [
            Violation(
                "epilogue.row_sumsq",
                f"row_sumsq is not implemented in the {spec.epilogue.style} epilogue on "
                f"{spec.arch}; legal with row_sumsq: style {legal}",
            )
        ]
    return []


def block_quant_violations(
    spec: Spec, styles: tuple[str, ...], schedulers: tuple[str, ...]
) -> list[Violation]:
    """block_quant (D in float8 with one f32 scale per 1 x block of each row, written by the
    epilogue): implemented where one epilogue holds each whole tile's final f32 values (not
    after split-K's or stream-K's reduction), in the epilogue `styles` and with the `schedulers`
    the architecture lists, without swap AB (a row of C would be a column of C^T, spread over
    warps), and with tile N a multiple of the block, so that one CTA holds every block of its
    rows whole."""
    block = spec.epilogue.block_quant
    if block is None:
        return []
    field = "epilogue.block_quant"
    reduce = reduce_kind(spec)
    if reduce != "none":
        kind = f"split_k (splits={splits(spec)})" if splits(spec) > 1 else "stream_k"
        return [
            Violation(
                field,
                f"block_quant is not implemented with scheduler {kind}: the scales are taken "
                "by the epilogue that holds a whole tile's values; legal with block_quant: "
                f"scheduler {' or '.join(schedulers)}",
            )
        ]
    if spec.epilogue.style not in styles:
        legal = " or ".join(f'"{s}"' for s in styles)
        return [
            Violation(
                field,
                f"block_quant is not implemented in the {spec.epilogue.style} epilogue on "
                f"{spec.arch}; legal with block_quant: style {legal}",
            )
        ]
    if spec.swap_ab:
        return [
            Violation(
                field,
                "block_quant is not implemented with swap_ab (a row of C is a column of C^T, "
                "spread over warps); legal with block_quant: swap_ab = false",
            )
        ]
    if spec.tile.n % block:
        return [
            Violation(
                field,
                f"block_quant = {block} needs whole {block}-column blocks in a tile; tile "
                f"N={spec.tile.n} is not a multiple of {block}; legal: tile N a multiple of "
                f"{block}",
            )
        ]
    return []


# ---- stream-K -----------------------------------------------------------------------------------


def is_stream_k(spec: Spec) -> bool:
    return isinstance(spec.scheduler, StreamKScheduler)


def streamk_weight_bands(spec: Spec) -> bool:
    """Stream-K bands along the weights (``bands = "weights"``): a band is the tiles that share
    one weight tile, and the host launches equal groups of CTAs."""
    return isinstance(spec.scheduler, StreamKScheduler) and spec.scheduler.bands == "weights"


def streamk_data_parallel(spec: Spec) -> bool:
    """The data-parallel + stream-K hybrid (``data_parallel = true``): whole tiles in data-parallel
    waves first (the persistent order), stream-K over the last full wave and the partial one
    (codegen.plan_common.stream_k_hybrid_share)."""
    return isinstance(spec.scheduler, StreamKScheduler) and spec.scheduler.data_parallel


def streamk_ctas(spec: Spec, flagship_sms: int) -> int:
    """Persistent CTAs stream-K launches at most (its workspace's slots), one per SM of the GPU
    (fewer when there are fewer SMs or MAC iterations): the spec's sm_count, else the
    architecture's flagship's `flagship_sms`."""
    if not isinstance(spec.scheduler, StreamKScheduler):
        return 0
    return spec.scheduler.sm_count or flagship_sms


# a workspace access of stream-K's hand-over and fix-up: one 16-byte st.global.v4 / ld.global.v4
# of f32, consecutive threads at consecutive 16 bytes (coalesced)
STREAMK_VECTOR_BYTES = 16
STREAMK_VEC = STREAMK_VECTOR_BYTES // ACC_BYTES  # f32 per workspace vector


def streamk_tile_elems(spec: Spec) -> int:
    """f32 values of one CTA's workspace slot: a whole TM x TN partial tile."""
    return spec.tile.m * spec.tile.n if is_stream_k(spec) else 0


def streamk_workspace_elems(spec: Spec, flagship_sms: int) -> int:
    """The global workspace (f32 words): a partial-tile slot per CTA, then a flag word per CTA.
    Each CTA hands over at most one partial tile."""
    if not is_stream_k(spec):
        return 0
    return streamk_ctas(spec, flagship_sms) * (streamk_tile_elems(spec) + 1)


@dataclass(frozen=True, kw_only=True)
class StreamK:
    """Stream-K's workspace (``plan.sk``): a partial-tile slot per CTA, then the flags; each
    architecture's planner extends it. Its size is ``plan.tensors.workspace_elems``."""

    ctas: int  # persistent CTAs at most: the workspace's slots
    tile_elems: int  # f32 of one slot
    vec: int  # f32 per 16-byte workspace vector (STREAMK_VEC)
    workspace_bytes: int
    slot_kib: str  # one slot, in KiB
    # bands along the weights: a band is the tiles that share one weight tile, and the host
    # launches a multiple of the group count (equal groups)
    weight_bands: bool
    # the data-parallel + stream-K hybrid: whole tiles in waves first, in the persistent order;
    # stream-K over the rest, one group of every CTA
    data_parallel: bool


def stream_k_values(spec: Spec, flagship_sms: int) -> dict[str, object]:
    """The fields of :class:`StreamK`, for an architecture's planner to extend."""
    tile_elems = streamk_tile_elems(spec)
    return {
        "ctas": streamk_ctas(spec, flagship_sms),
        "tile_elems": tile_elems,
        "vec": STREAMK_VEC,
        "workspace_bytes": streamk_workspace_elems(spec, flagship_sms) * ACC_BYTES,
        "slot_kib": kib(tile_elems * ACC_BYTES),
        "weight_bands": streamk_weight_bands(spec),
        "data_parallel": streamk_data_parallel(spec),
    }


def grid_workers(
    spec: Spec, gpu: tuple[int, str, tuple[int, int]], flagship: int, cluster_worker: str
) -> Workers | None:
    """The persistent grids sized by the GPU's SM count, on either arch: stream-K (a CTA per SM,
    at most the workspace's slots), split-K over a cluster (a cluster per `splits` SMs, at most
    max_clusters) and the static persistent scheduler (`cluster_worker`: one CTA, pair or
    cluster); None for a grid launched per tile. `gpu`: the arch's flagship (SM count, name,
    compute capability); `flagship`: its workers, as the kernel's docstring quotes them."""
    if is_stream_k(spec):
        return workers(
            *gpu,
            1,
            "one CTA",
            flagship=flagship,
            worker_cap="SK_CTAS",
            worker_cap_note="the workspace's slots",
        )
    if is_split_k_cluster(spec):
        n = splits(spec)
        return workers(
            *gpu,
            n,
            f"one {n}-CTA cluster",
            flagship=flagship,
            worker_cap=spec.scheduler.max_clusters,
            worker_cap_note="the spec's max_clusters",
        )
    if isinstance(spec.scheduler, PersistentScheduler):
        return workers(
            *gpu,
            spec.cluster.size,
            cluster_worker,
            flagship=flagship,
            sm_cap=spec.scheduler.sm_count,
        )
    return None


def common_values(spec: Spec, shape_multiples: dict[str, int]) -> dict[str, object]:
    """The plan groups both arches take from the spec alone, by keyword (the Values fields of
    codegen.plan_common and the separate reduce's); each arch adds its docs, its own planners'
    groups (tensors, workers, row_sumsq, block_quant, ...) and its hardware's."""
    return {
        "dtypes": plan_common.dtypes(spec),
        "tile": plan_common.tile(spec, shape_multiples),
        "swap_ab": spec.swap_ab,
        "splits": splits(spec),
        "fusion": plan_common.fusion(spec),
        "bias": plan_common.bias(spec),
        "epifn": plan_common.epifn(spec),
        "layouts": plan_common.layouts(spec),
        "separate": separate_reduce(spec),
    }
