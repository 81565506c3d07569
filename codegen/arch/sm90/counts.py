"""Expected PTX counts of a Hopper (sm_90a) kernel, computed from its spec alone (one copy of each
loop body: the K and tile loops are not unrolled). The build compares these with the PTX; the
patterns only sm_90a kernels have and the columns its report shows are here too.
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.arch.shared import STREAMK_WIDE_DIVS
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.rules import partial_vec
from codegen.plan_common import bias_axis
from codegen.spec import Spec, TmaStoreEpilogue

# PTX patterns only sm_90a kernels have, counted in every build
PATTERNS: dict[str, str] = {
    "wgmma.mma_async": r"wgmma\.mma_async\.",
    "setmaxnreg": r"setmaxnreg\.",
}

# the counts `codegen build` reports for sm_90a kernels, in order
REPORT_COLUMNS: tuple[str, ...] = (
    "wgmma.mma_async",
    "cp.async.bulk.tensor",
    "TMA multicast",
    "TMA store",
    "mbarrier.try_wait",
    "setmaxnreg",
    "barrier.cluster",
    "mapa",
    "ld.shared::cluster",
    "st.global",
)

DSMEM_VECTOR_BYTES = 16  # ld.shared::cluster.v4.b32: a thread's staged f32 run is 16-byte aligned
TMA_BOX_ROWS = 256  # a TMA box spans at most 256 elements in each dimension


def epilogue_loads(spec: Spec) -> int:
    """Global loads of the epilogue (unrolled over a thread's accumulator): with beta in the
    direct epilogue, one per store vector of C (the TMA-store epilogue TMA-loads C instead); with
    a bias, one per distinct row (2 per 64-row wgmma atom: rows r and r + 8) or column (TN / 4: 2
    adjacent columns per 8-column group) of a thread's fragment."""
    loads = 0
    if spec.epilogue.beta != 0.0 and not rules_sm90.tma_loads_c(spec):
        loads += rules_sm90.accumulator_regs(spec) // (1 if spec.swap_ab else 2)
    kernel_axis = bias_axis(spec)
    atoms_m = spec.tile.m // (64 * rules_sm90.tile_warpgroups(spec))
    per_axis = {"row": 2 * atoms_m, "col": spec.tile.n // 4}
    if spec.epilogue.bias != "none":
        loads += per_axis["row" if kernel_axis == "row" else "col"]
    if spec.epilogue.fn is not None:
        # an epilogue function: one load per device scalar (once per tile), and per vector the
        # loads of a bias along the same axis of the kernel's tile (the per-element loads of one
        # row or column are one load after CSE); swap AB exchanges the user's rows and columns
        for _, kind in spec.epilogue.fn.args:
            if kind == "device_scalar":
                loads += 1
            elif kind in ("row", "col"):
                axis = {"row": "col", "col": "row"}[kind] if spec.swap_ab else kind
                loads += per_axis[axis]
            elif kind == "tile":
                # a tile argument: read like beta's C, one load per store vector
                loads += rules_sm90.accumulator_regs(spec) // (1 if spec.swap_ab else 2)
    return loads


def tma_store_boxes(spec: Spec) -> int:
    """TMA stores (and, for beta, C loads) per epilogue sub-tile: a swizzled box spans at most
    one swizzle atom along the sub-tile's contiguous axis, epi_n columns of a row, or with swap AB
    (an M-major sub-tile) EPI_M rows of a column."""
    out = spec.epilogue.out_dtype or spec.dtype
    elems = rules_sm90.epi_m(spec) if spec.swap_ab else rules_sm90.epi_n(spec)
    major = elems * rules_common.DTYPE_BYTES[out]
    return major // rules_common.SWIZZLE_BYTES[rules_common.auto_swizzle(major)]


def operand_boxes(spec: Spec, rows: int, mn_major: bool) -> int:
    """TMA loads of one operand's tile (or multicast slice) of `rows` rows per stage. K-major: one
    box, two where the rows exceed what a box holds (TMA_BOX_ROWS). MN-major: a swizzled box
    spans at most one swizzle atom (MN_ATOM_BYTES) along its contiguous M or N, so one box per
    atom of the rows (multicast: of the whole tile, each CTA issuing a K slice of every atom's box,
    where a K-major operand's slice is a band of its rows)."""
    if mn_major:
        return -(-rows * rules_common.DTYPE_BYTES[spec.dtype] // rules_sm90.MN_ATOM_BYTES)
    return -(-rows // TMA_BOX_ROWS)


def tma_load_boxes(spec: Spec) -> int:
    """TMA load instructions per stage: operand_boxes of A's and of B's tile (or multicast
    slice), each as the kernel takes it (swap AB exchanges the operands' major modes)."""
    return sum(operand_sites(spec))


def operand_sites(spec: Spec) -> tuple[int, int]:
    """TMA load instructions per stage of A and of B (see operand_boxes): a K-major operand's
    multicast slice is tile rows / the CTAs it is multicast to, an MN-major one's the whole tile."""
    cm, cn = spec.cluster.m, spec.cluster.n
    a_mn, b_mn = rules_sm90.mn_major_operands(spec)
    a_rows = spec.tile.m // cn if cn > 1 and not a_mn else spec.tile.m
    b_rows = spec.tile.n // cm if cm > 1 and not b_mn else spec.tile.n
    return operand_boxes(spec, a_rows, a_mn), operand_boxes(spec, b_rows, b_mn)


def multicast_sites(spec: Spec) -> int:
    """TMA multicast load instructions per stage: A's when multicast along N (cluster N > 1), B's
    along M; a K-major operand's slice is one box, an MN-major one's every atom's."""
    a_sites, b_sites = operand_sites(spec)
    a_mn, b_mn = rules_sm90.mn_major_operands(spec)
    a = (a_sites if a_mn else 1) if spec.cluster.n > 1 else 0
    b = (b_sites if b_mn else 1) if spec.cluster.m > 1 else 0
    return a + b


def expected_counts(spec: Spec) -> dict[str, int]:
    """PTX instruction counts the sm_90a templates must produce (one copy of each loop body)."""
    wgs = rules_sm90.tile_warpgroups(spec)
    tma = isinstance(spec.epilogue, TmaStoreEpilogue)
    subtiles = (spec.tile.m // rules_sm90.epi_m(spec)) * (spec.tile.n // rules_sm90.epi_n(spec))
    counts = {
        # one wgmma per k-block (32 bytes of K: 16-deep f16/bf16, 32-deep e4m3) per 64-row atom
        # the warpgroup owns and per atom along N, in the unrolled stage
        "wgmma.mma_async": rules_common.mmas_per_stage(spec)
        * spec.tile.m
        // (64 * wgs)
        * rules_sm90.wgmma_n_atoms(spec.tile.n),
        # one load issue site per operand (its own slice when multicast); beta through the TMA
        # store: one C load per sub-tile (the sub-tile loop is unrolled)
        "cp.async.bulk.tensor": tma_load_boxes(spec)
        + (subtiles * tma_store_boxes(spec) if rules_sm90.tma_loads_c(spec) else 0),
        # pdl: the producer's L2 prefetch of its first k-blocks, one site per operand box
        "TMA prefetch": tma_load_boxes(spec) if spec.pdl else 0,
        # one site per multicast operand; an MN-major operand's: one per box (operand_sites)
        "TMA multicast": multicast_sites(spec),
        "setmaxnreg": 2,
        "barrier.cluster": 2 if spec.cluster.size > 1 else 0,
        "TMA store": subtiles * tma_store_boxes(spec) if tma else 0,
    }
    counts["ld.global"] = epilogue_loads(spec)
    streamk = shared.is_stream_k(spec)
    # stream-K: one 16-byte load (finisher) and store (hand-over) per STREAMK_VEC f32
    # accumulators, one flag release and acquire, and one plain store clearing the flag
    handover = rules_sm90.accumulator_regs(spec) // shared.STREAMK_VEC if streamk else 0
    counts["ld.global"] += handover
    counts["flag release.gpu"] = counts["flag acquire.gpu"] = int(streamk)
    counts["div.s64"] = STREAMK_WIDE_DIVS if streamk else 0  # the 64-bit partition math
    if tma:
        counts["st.global"] = handover + int(streamk)
    if spec.cluster.size > 1:
        counts |= {
            # a multicast stage release maps the peer's empty barrier at its two sites (in the
            # k-loop and after it), and arrives with CTA scope: never a cluster-scoped release
            "mapa": 2,
            "mbarrier release.cluster": 0,
        }
    if spec.epilogue.row_sumsq:
        counts |= row_sumsq_counts(spec)
    if spec.epilogue.block_quant is not None:
        counts |= block_quant_counts(spec)
    if shared.is_split_k_separate(spec):
        counts |= separate_counts(spec)
    if shared.is_split_k_cluster(spec):
        peers = shared.splits(spec) - 1
        counts |= {
            # fence.mbarrier_init + the start-up cluster barrier (arrive.relaxed, wait) only: the
            # per-tile handshake is two mbarriers, never a cluster-wide barrier
            "barrier.cluster": 2,
            # rank 0 maps each peer's staging slot and consumed barrier; a peer maps rank 0's staged
            "mapa": 2 * peers + 1,
            # rank 0 reads each peer's partial as 16-byte vectors: accumulator_regs f32 per thread
            "ld.shared::cluster": peers
            * rules_sm90.accumulator_regs(spec)
            * shared.ACC_BYTES
            // DSMEM_VECTOR_BYTES,
            # rank 0 waits on staged; a peer waits on consumed before restaging and before exit
            "mbarrier acquire.cluster": 3,
            # a peer arrives on rank 0's staged; rank 0 arrives on every peer's consumed
            "mbarrier release.cluster": 1 + peers,
        }
    return counts


def row_sumsq_counts(spec: Spec) -> dict[str, int]:
    """row_sumsq (grid and persistent schedulers only): per row slot of a thread
    (rules_sm90.row_sumsq_slots) one butterfly shuffle per lane offset and one st.global of its
    partial, besides C's stores (the direct epilogue: one per store vector)."""
    slots = rules_sm90.row_sumsq_slots(spec)
    c_stores = 0
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        c_stores = rules_sm90.accumulator_regs(spec) // (1 if spec.swap_ab else 2)
    return {
        "shfl.sync.bfly": slots * len(rules_sm90.ROW_SUMSQ_SHUFFLES[spec.swap_ab]),
        "st.global": c_stores + slots,
    }


def block_quant_counts(spec: Spec) -> dict[str, int]:
    """block_quant (the direct epilogue, grid and persistent schedulers, no swap AB): per row slot
    of a thread (rules_sm90.row_sumsq_slots) and block of the tile, one butterfly shuffle per lane
    offset of the quad's max, two IEEE divisions (the scale and its inverse) and one st.global of
    the scale, besides C's stores (one per pair of columns); one float8 conversion per pair."""
    rows = rules_sm90.row_sumsq_slots(spec)
    blocks = spec.tile.n // spec.epilogue.block_quant
    pairs = rules_sm90.accumulator_regs(spec) // 2
    return {
        "shfl.sync.bfly": rows * blocks * len(rules_sm90.ROW_SUMSQ_SHUFFLES[False]),
        "st.global": pairs + rows * blocks,
        "cvt e4m3x2": pairs,
        "div.rn.f32": 2 * rows * blocks,
    }


def separate_counts(spec: Spec) -> dict[str, int]:
    """PTX counts of reduce = "separate": the GEMM kernel has no cluster and no epilogue loads;
    it stores its partial (accumulator_regs / partial_vec stores); the reduce kernel
    (shared.reduce_kernel_counts) loads the splits, C and the bias and stores one C vector."""
    reduce = shared.reduce_kernel_counts(spec)
    return {
        "barrier.cluster": 0,
        "ld.global": reduce["ld.global"],
        "st.global": rules_sm90.accumulator_regs(spec) // partial_vec(spec) + 1,
        "mapa": 0,
        "ld.shared::cluster": 0,
        "mbarrier acquire.cluster": 0,
        "mbarrier release.cluster": 0,
        "ex2": reduce["ex2"],
        "max.f32": reduce["max.f32"],
    }
