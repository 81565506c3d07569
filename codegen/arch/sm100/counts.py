"""Expected PTX counts of a Blackwell (sm_100a) kernel, computed from its spec alone.

Each count is (instructions per issue site) x (issue sites in the template): the K and tile loops
are not unrolled, so the PTX holds one copy of each loop body; constexpr loops (the epilogue's
sub-tiles, barrier initialization) are unrolled. The build compares these with the PTX; the
patterns only sm_100a kernels have and the columns its report shows are here too.
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.arch.shared import STREAMK_WIDE_DIVS
from codegen.arch.sm100 import rules as rules_sm100
from codegen.arch.sm100.rules import (
    DSMEM_VECTOR_BYTES,
    VECTOR_STORE_BYTES,
    cluster_kind,
    direct_stores,
    epilogue_chunks,
    is_persistent,
    is_tma_store,
    streamk_handover_vectors,
    values_per_thread,
)
from codegen.epilogue_fn import is_gated
from codegen.plan_common import bias_axis
from codegen.spec import Spec

# PTX patterns only sm_100a kernels have (tcgen05, cluster launch control), counted in every build
PATTERNS: dict[str, str] = {
    "tcgen05.mma": r"tcgen05\.mma\.",
    "mma cta_group::1": r"tcgen05\.mma\.cta_group::1",
    "mma cta_group::2": r"tcgen05\.mma\.cta_group::2",
    "tcgen05.ld": r"tcgen05\.ld\.",
    "tcgen05.alloc": r"tcgen05\.alloc\.",
    "tcgen05.commit": r"tcgen05\.commit\.",
    "tcgen05.relinquish": r"tcgen05\.relinquish_alloc_permit\.",
    "tcgen05.commit multicast": r"tcgen05\.commit[^;]*\.multicast",
    # the dynamic scheduler's cluster launch control: requests, and reads of the answer
    "clc try_cancel": r"clusterlaunchcontrol\.try_cancel",
    "clc is_canceled": r"clusterlaunchcontrol\.query_cancel\.is_canceled",
    "clc first_ctaid": r"clusterlaunchcontrol\.query_cancel\.get_first_ctaid",
}

# the counts `codegen build` reports for sm_100a kernels, in order
REPORT_COLUMNS: tuple[str, ...] = (
    "mma cta_group::1",
    "mma cta_group::2",
    "cp.async.bulk.tensor",
    "TMA multicast",
    "barrier.cluster",
    "mbarrier.try_wait",
    "tcgen05.alloc",
    "tcgen05.ld",
    "tcgen05.commit",
    "TMA store",
    "st.global",
)


def try_waits(spec: Spec) -> int:
    """mbarrier.try_wait sites: empty (producer), full (MMA), acc_full (epilogue), the
    producer's tail over the ring (every kernel: tcgen05.commit arrives asynchronously); the
    pair's TMEM-dealloc handshake; persistent, the MMA's acc_empty wait and its tail over the
    slots; dynamic, the tile-request handshake."""
    kind = cluster_kind(spec)
    waits = 4
    waits += 1 if kind == "pair" else 0
    waits += 2 if is_persistent(spec) else 0
    # dynamic: the producer's clc_empty wait before each request, and clc_full in
    # wait_and_release_next_tile, inlined at its three call sites (producer, MMA, epilogue)
    waits += 1 + 3 if rules_sm100.is_dynamic(spec) else 0
    # split-K (acquire.cluster): a peer's consumed wait before restaging and before exit, rank 0's
    # staged wait
    waits += 3 if shared.is_split_k_cluster(spec) else 0
    return waits


def operand_loads(spec: Spec) -> tuple[int, int]:
    """TMA load instructions per stage of the kernel's A and B: a K-major operand's boxes span
    one swizzle atom of its K row each; an MN-major operand's one 128-byte atom of the rows a CTA
    holds (rules_sm100.MN_ATOM_BYTES) each."""
    k_major = rules_common.tma_boxes_per_operand(rules_common.k_row_bytes(spec), str(spec.swizzle))
    rows = rules_sm100.operand_rows_per_cta(spec)
    mn = rules_sm100.mn_major_operands(spec)
    out = [
        r * rules_common.DTYPE_BYTES[spec.dtype] // rules_sm100.MN_ATOM_BYTES if m else k_major
        for r, m in zip(rows, mn, strict=True)
    ]
    return out[0], out[1]


def expected_counts(spec: Spec) -> dict[str, int]:
    """PTX instruction counts the sm_100a templates must produce for this spec.

    Each count is (instructions per issue site) x (issue sites in the template): the K and tile
    loops are not unrolled, so the PTX holds one copy of each loop body; constexpr loops (the
    epilogue's sub-tiles, barrier initialization) are unrolled.
    """
    assert isinstance(spec.stages, int)
    kind = cluster_kind(spec)
    mmas = rules_common.mmas_per_stage(spec)
    loads = sum(operand_loads(spec))
    _, loads_per_tile = epilogue_chunks(spec)
    tma_boxes = loads_per_tile * rules_sm100.epi_tma_boxes(spec) if is_tma_store(spec) else 0
    c_loads = tma_boxes if rules_sm100.loads_c_by_tma(spec) else 0
    return (
        {
            "tcgen05.mma": mmas,
            "mma cta_group::1": mmas if spec.cta_group == 1 else 0,
            # a 2-CTA kernel issues only cta_group::2 MMAs
            "mma cta_group::2": mmas if spec.cta_group == 2 else 0,
            # + beta's C sub-tile loads (TMA-store epilogue), one per box
            "cp.async.bulk.tensor": loads + c_loads,
            # pdl: the producer's L2 prefetch of its first k-blocks, boxed like its loads
            "TMA prefetch": loads if spec.pdl else 0,
            "TMA multicast": loads if kind == "multicast" else 0,
            # one cluster barrier (arrive + wait) after the barriers are initialized
            "barrier.cluster": 0 if kind == "single" else 2,
            # + beta's wait for each C sub-tile (the sub-tile loop is unrolled)
            "mbarrier.try_wait": try_waits(spec) + (loads_per_tile if c_loads else 0),
            "mbarrier.init": rules_sm100.barrier_count(spec, spec.stages),
            "tcgen05.ld": loads_per_tile,
            "tcgen05.alloc": 1,
            "tcgen05.relinquish": 1,  # right after the allocation
            # one per stage released, one per accumulator filled
            "tcgen05.commit": 2,
            # multicast: the stage release goes to every sharer; pair: both commits name both CTAs
            "tcgen05.commit multicast": {"single": 0, "multicast": 1, "pair": 2, "split": 0}[kind],
            "TMA store": tma_boxes,
            # the TMA-store epilogue's, before each sub-tile's store (the loop is unrolled)
            "fence.proxy.async": loads_per_tile if is_tma_store(spec) else 0,
            # a gated pair: the up elements' stores alias their gate's (same value, same
            # address) and are merged, one store per pair
            "st.global": 0 if is_tma_store(spec) else direct_stores(spec) // gated_factor(spec),
            "div.s64": 0,  # stream-K's 64-bit partition math only (streamk_counts)
        }
        | fusion_counts(spec)
        | dynamic_counts(spec)
        | splitk_counts(spec)
        | streamk_counts(spec)
        | separate_counts(spec)
        | row_sumsq_counts(spec)
        | block_quant_counts(spec)
    )


def row_sumsq_counts(spec: Spec) -> dict[str, int]:
    """row_sumsq (the direct epilogue, grid / persistent / dynamic schedulers): besides C's
    stores, one st.global of the thread's row partial per tile; with swap AB (rows_per_tile's
    warp butterfly) one butterfly of ROW_SUMSQ_SHUFFLES per value the thread holds (a column of
    C^T each) and one predicated store of the warp's partial per value."""
    if not spec.epilogue.row_sumsq:
        return {}
    values = values_per_thread(spec)
    if spec.swap_ab:
        return {
            "shfl.sync.bfly": values * len(rules_sm100.ROW_SUMSQ_SHUFFLES),
            "st.global": direct_stores(spec) + values,
        }
    return {"shfl.sync.bfly": 0, "st.global": direct_stores(spec) + 1}


def block_quant_counts(spec: Spec) -> dict[str, int]:
    """block_quant (the direct epilogue, grid / persistent / dynamic schedulers, no swap AB):
    one thread holds each whole row (32x32b loads), so no shuffles: one max.f32 per value of
    the thread's row (the block's amax); per block of the tile two IEEE divisions (the scale and
    its inverse) and one st.global of the scale, besides C's stores (16-byte vectors of float8,
    the fake N a multiple of 16); one float8 conversion per pair of the thread's values."""
    block = spec.epilogue.block_quant
    if block is None:
        return {}
    blocks = spec.tile.n // block
    values = values_per_thread(spec)
    return {
        "shfl.sync.bfly": 0,
        "max.f32": values,
        "st.global": direct_stores(spec) + blocks,
        "cvt e4m3x2": values // 2,
        "div.rn.f32": 2 * blocks,
    }


def streamk_counts(spec: Spec) -> dict[str, int]:
    """Stream-K's hand-over through the global workspace: both epilogue branches load every chunk
    from TMEM (the hand-over and the finisher's drain); the hand-over stores each 16-byte vector
    once, the finisher's peer loop loads each once (one dynamic loop per unrolled chunk); one
    flag release, one acquire (the spin) and one plain store clearing the flag; the 64-bit
    partition math's divisions."""
    if not shared.is_stream_k(spec):
        return {}
    _, chunks = epilogue_chunks(spec)
    vectors = streamk_handover_vectors(spec)
    stores = 0 if is_tma_store(spec) else direct_stores(spec)
    return {
        "tcgen05.ld": 2 * chunks,
        "st.global": stores + vectors + 1,
        "ld.global": vectors,
        "flag release.gpu": 1,
        "flag acquire.gpu": 1,
        "div.s64": STREAMK_WIDE_DIVS,
    }


def splitk_counts(spec: Spec) -> dict[str, int]:
    """Split-K's DSMEM reduction: both ranks' epilogue branches load the accumulator from TMEM;
    rank 0 maps each peer's staging chunk and consumed barrier, a peer rank 0's staged barrier;
    rank 0 reads each peer's partial in 16-byte vectors; the cluster-scoped handshake."""
    if not shared.is_split_k_cluster(spec):
        return {}
    peers = shared.splits(spec) - 1
    _, chunks = epilogue_chunks(spec)
    return {
        "tcgen05.ld": 2 * chunks,
        "mapa": peers * chunks + peers + 1,
        "ld.shared::cluster": peers * spec.tile.n * shared.ACC_BYTES // DSMEM_VECTOR_BYTES,
        "mbarrier acquire.cluster": 3,
        "mbarrier release.cluster": 1 + peers,
    }


def separate_counts(spec: Spec) -> dict[str, int]:
    """reduce = "separate": the GEMM kernel's epilogue warps store their f32 accumulator row to
    the workspace slot in 16-byte vectors (TN / 4 per thread) and load nothing; the reduce kernel
    (shared.reduce_kernel_counts: its vector loop is not unrolled) loads one 16-byte vector per
    split, C with beta, the bias, stores one C vector and fuses REDUCE_VEC values."""
    if not shared.is_split_k_separate(spec):
        return {}
    reduce = shared.reduce_kernel_counts(spec)
    vectors = values_per_thread(spec) * shared.ACC_BYTES // VECTOR_STORE_BYTES
    return {
        "ld.global": reduce["ld.global"],
        "st.global": vectors + 1,
        "ex2": reduce["ex2"],
        "max.f32": reduce["max.f32"],
    }


def gated_factor(spec: Spec) -> int:
    """2 for a gated pair (Gate and Up: one output per two accumulator values), else 1."""
    return 2 if spec.epilogue.fn is not None and is_gated(spec.epilogue.fn.args) else 1


def fusion_counts(spec: Spec) -> dict[str, int]:
    """PTX evidence of the fused epilogue (all 0 for a plain store). Each thread owns one row of
    the CTA's TN columns, or half of it (values_per_thread: an M=64 tile), and fuses each value
    once (split-K: in rank 0 only, after the reduction). Global loads: beta's C run in the direct
    epilogue, loaded like it is stored (direct_stores: 16-byte vectors, or one element at a time
    down C^T's column with swap_ab; the TMA-store epilogue TMA-loads C instead); a bias along the
    kernel's rows (bias_axis: a column bias of C with swap_ab): one scalar; along its columns:
    the thread's values in 16-byte vectors (the bias is contiguous). Per element: relu is one
    max.f32; silu (exp) and gelu (tanh, through exp) one ex2 each."""
    epi = spec.epilogue
    values = values_per_thread(spec)
    out_bytes = rules_common.DTYPE_BYTES[epi.out_dtype or spec.dtype]
    vectors = values * out_bytes // VECTOR_STORE_BYTES
    loads = direct_stores(spec) if epi.beta != 0.0 and not is_tma_store(spec) else 0
    if epi.bias != "none":
        loads += 1 if bias_axis(spec) == "row" else vectors
    if epi.fn is not None:
        # an epilogue function, per element of each chunk: a device scalar is one load per tile;
        # a vector along the kernel's rows one per chunk (the thread's row), along its columns
        # one scalar load per value (swap AB exchanges the user's rows and columns)
        for _, kind in epi.fn.args:
            if kind == "device_scalar":
                loads += 1
            elif kind in ("row", "col"):
                axis = {"row": "col", "col": "row"}[kind] if spec.swap_ab else kind
                loads += epilogue_chunks(spec)[1] if axis == "row" else values
            elif kind == "tile":
                # a tile argument: read like beta's C, as C is stored
                loads += direct_stores(spec)
    ex2 = values if epi.activation in ("silu", "gelu_tanh") else 0
    if epi.fn is not None:
        # the function's own exp and tanh (one ex2 each), per call: one call per value, or per
        # gate and up pair
        calls = values // 2 if is_gated(epi.fn.args) else values
        ex2 += calls * sum(epi.fn.source.count(f"cute.math.{f}(") for f in ("exp", "tanh"))
    return {
        "ld.global": loads,
        "max.f32": values if epi.activation == "relu" else 0,
        "ex2": ex2,
    }


def dynamic_counts(spec: Spec) -> dict[str, int]:
    """The dynamic scheduler's cluster launch control: one try_cancel site (the producer's
    request), and one query of the answer and one proxy fence per wait_and_release_next_tile call
    site (producer, MMA, epilogue)."""
    if not rules_sm100.is_dynamic(spec):
        return {}
    # the producer and the epilogue read the cancelled CTA's x and y; the MMA warp reads neither;
    # each reading site fences its read of the answer before releasing it to the next try_cancel
    tma_fences = epilogue_chunks(spec)[1] if is_tma_store(spec) else 0
    return {
        "clc try_cancel": 1,
        "clc is_canceled": 3,
        "clc first_ctaid": 4,
        "fence.proxy.async": tma_fences + 3,
    }
