"""Hopper (sm_90a) rules: wgmma layouts, register budget, clusters, the TMA-store epilogue.

Each legality condition lives in one function here; :func:`check` collects them. The planner
(:mod:`codegen.arch.sm90.values`), the docstrings (:mod:`codegen.arch.sm90.docs`) and the
expected counts (:mod:`codegen.arch.sm90.counts`) take every derived number from the helpers above
the rules. Split-K's and stream-K's shared pieces come from :mod:`codegen.arch.shared`.
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.plan_common import plural
from codegen.rules_common import (
    DTYPE_BYTES,
    MBARRIER_BYTES,
    Violation,
    is_power_of_two,
    k_row_bytes,
)
from codegen.spec import (
    DirectEpilogue,
    PersistentScheduler,
    Spec,
    SplitKScheduler,
    TmaStoreEpilogue,
)

SM_COUNT = 132  # H100 / H200 SXM
WGMMA_M = 64  # rows of one wgmma atom; each consumer warpgroup owns a multiple of this
EPI_N = 32  # columns of one TMA-store epilogue sub-tile
EPI_N_NARROW = 16  # ... where tile N is not a multiple of EPI_N: one stmatrix.x4 per warp
EPI_STAGES = 4  # SMEM sub-tile buffers the TMA-store epilogue keeps in flight
PRODUCER_REGS = 40  # setmaxnreg for the TMA producer warpgroup
REGISTER_FILE = 65536  # 32-bit registers per SM
MAX_REGS_PER_THREAD = 255
REG_ALLOC_UNIT = 8  # a thread's registers are allocated in multiples of 8 (256 per warp)
ACC_REGS_LIMIT = 192  # f32 accumulator registers per consumer thread that leave room for the rest
# registers a consumer thread needs beside its accumulators (addresses, loop state, epilogue):
# the two-warpgroup budget of a CTA that has the whole SM (232) less ACC_REGS_LIMIT
ACC_REGS_HEADROOM = 40
# registers live beside one wgmma's accumulator fragment where ptxas assembles it (an m64n256
# e4m3 wgmma of a swap-AB decode kernel asks for 154 = 128 + 26), rounded up to the unit
WGMMA_LIVE_REGS = 32
# ctas_per_sm > 1: the SMEM carveout the launch asks for, in percent of the SM's unified L1 /
# shared memory that is shared memory: all it can be, so ctas_per_sm CTAs' shares fit at once
SMEM_CARVEOUT_MAX = 100
CLUSTER_MAX = 8  # CTAs in a portable cluster: the most CTAs split-K can split a tile's K among
# the templates' K rows are one swizzle atom wide: row bytes -> the swizzle of that width
K_ROW_SWIZZLE = {32: "32B", 64: "64B", 128: "128B"}
TMA_ROW_ALIGN_BYTES = 16  # TMA needs 16-byte global row strides
WARPGROUP_THREADS = 128
WARPGROUP_WARPS = 4
PRODUCER_WG, MMA_WG = 0, 1  # the producer warpgroup, then the first consumer warpgroup
TMA_WARP = 0  # the producer's warp that issues the TMA loads (and initializes the barriers)
EPILOGUE_WARP = MMA_WG * WARPGROUP_WARPS  # cooperative: the first consumer warp, the TMA stores
# multicast cluster: the warp of each consumer warpgroup whose lanes release a stage for it
RELEASE_WARP = 0
# Named barrier ids (0 is sync_threads). Cooperative: the consumers' epilogue barrier, and
# stream-K's fix-up barrier (the same threads, never at once). Ping-pong: consumer warpgroup w
# (0, 1) syncs its own epilogue on PP_EPI_BARRIER + w and waits for its mainloop turn on
# PP_TURN_BARRIER + w.
EPILOGUE_BARRIER_ID = 1
FIXUP_BARRIER_ID = 1
PP_EPI_BARRIER = 1
PP_TURN_BARRIER = 3


WGMMA_N_MAX = 256  # the widest wgmma: a tile N above it takes two atoms side by side along N
TILE_N_MAX = 2 * WGMMA_N_MAX


def wgmma_n_atoms(n: int) -> int:
    """wgmma atoms side by side along a tile's N: 1, or 2 (each N / 2 wide) above WGMMA_N_MAX."""
    return 1 if n <= WGMMA_N_MAX else 2


def wgmma_shape_ok(m: int, n: int, warpgroups: int) -> bool:
    """Each consumer warpgroup owns M / warpgroups rows in 64-row wgmma atoms; N a multiple of 8
    in [8, 256], or above 256 two atoms of N / 2 (a multiple of 16) side by side, up to 512."""
    rows = m // warpgroups
    rows_ok = m % warpgroups == 0 and rows % WGMMA_M == 0 and rows <= 256
    if n <= WGMMA_N_MAX:
        return rows_ok and n % 8 == 0 and 8 <= n
    return rows_ok and n % 32 == 0 and n <= TILE_N_MAX


def consumer_warpgroups(spec: Spec) -> int:
    return spec.consumer_warpgroups or 1


def is_pingpong(spec: Spec) -> bool:
    return spec.consumer_mode == "pingpong"


def tile_warpgroups(spec: Spec) -> int:
    """Consumer warpgroups that share one tile's rows: all of them when cooperative, one when
    ping-pong (each warpgroup computes whole tiles)."""
    return 1 if is_pingpong(spec) else consumer_warpgroups(spec)


def threads(spec: Spec) -> int:
    """One producer warpgroup plus the consumer warpgroups."""
    return 128 * (1 + consumer_warpgroups(spec))


def launch_regs(spec: Spec) -> int:
    """Registers per thread the CTA launches with (the cubin's count): its 1/ctas_per_sm share of
    the register file over its threads, rounded down to the allocation unit, at most 255. The
    launch's min_blocks_per_mp (= ctas_per_sm) makes ptxas keep to it."""
    per_thread = REGISTER_FILE // (spec.ctas_per_sm * threads(spec))
    return min(MAX_REGS_PER_THREAD, per_thread - per_thread % REG_ALLOC_UNIT)


def register_pool(spec: Spec) -> int:
    """The CTA's registers: every thread's launch registers. setmaxnreg moves registers between
    the CTA's warps through this pool (the producer's decrease frees what the consumers' increase
    takes), never beyond it: with ctas_per_sm = 2 it is at most half the register file."""
    return threads(spec) * launch_regs(spec)


def consumer_regs(spec: Spec) -> int:
    """setmaxnreg for consumers: the CTA's pool less the producer's, shared out, rounded down to
    the allocation unit, at most 248 (255 rounded down)."""
    wgs = consumer_warpgroups(spec)
    per_thread = (register_pool(spec) - WARPGROUP_THREADS * PRODUCER_REGS) // (
        WARPGROUP_THREADS * wgs
    )
    return min(
        MAX_REGS_PER_THREAD - MAX_REGS_PER_THREAD % REG_ALLOC_UNIT,
        per_thread - per_thread % REG_ALLOC_UNIT,
    )


def acc_regs_limit(spec: Spec) -> int:
    """f32 accumulator registers a consumer thread may hold: ACC_REGS_LIMIT, and room for
    ACC_REGS_HEADROOM more within its setmaxnreg budget (what binds with ctas_per_sm = 2)."""
    return min(ACC_REGS_LIMIT, consumer_regs(spec) - ACC_REGS_HEADROOM)


def is_sm_sized(spec: Spec) -> bool:
    """The grid is sized by the GPU's SMs, one CTA (or cluster slot) per SM: the persistent
    scheduler, split-K over clusters, stream-K (ctas_per_sm does not change that)."""
    return (
        isinstance(spec.scheduler, PersistentScheduler)
        or shared.is_split_k_cluster(spec)
        or shared.is_stream_k(spec)
    )


def min_blocks_per_mp(spec: Spec) -> int:
    """The launch's min_blocks_per_mp: the CTAs that must fit on one SM at once."""
    return spec.ctas_per_sm


def accumulator_regs(spec: Spec) -> int:
    """f32 accumulator registers each consumer thread holds: its rows x N / 128 threads."""
    return spec.tile.m // tile_warpgroups(spec) * spec.tile.n // 128


def releases_per_warpgroup(spec: Spec) -> bool:
    """A multicast cluster releases a stage once per consumer warpgroup and filling CTA (lane r
    of the warpgroup's RELEASE_WARP arrives on CTA rank r once the warpgroup's wgmma group that
    read the stage has retired); a single CTA once per consumer warp (elect_one), locally."""
    return spec.cluster.size > 1


def empty_arrives(spec: Spec) -> int:
    """Arrivals that free one stage, from every CTA this CTA's producer writes into (its cluster
    row for A, its cluster column for B: cm + cn - 1 CTAs) and every consumer warpgroup there that
    reads the stage (all of them when cooperative, the one owning the tile when ping-pong): one
    per warpgroup in a multicast cluster, one per consumer warp otherwise."""
    readers = spec.cluster.m + spec.cluster.n - 1
    per_warpgroup = 1 if releases_per_warpgroup(spec) else WARPGROUP_WARPS
    return readers * per_warpgroup * tile_warpgroups(spec)


def operand_rows_per_cta(spec: Spec) -> tuple[int, int]:
    """A CTA receives the whole A and B tile each stage (its own slice plus peers' multicast)."""
    return spec.tile.m, spec.tile.n


def multicast_masks(cm: int, cn: int) -> tuple[int, int]:
    """Rank masks (rank = x + y * cm) of cluster row 0 and cluster column 0.

    A CTA at (x, y) sends its A slice to its row (row-0 mask << x) and its B slice to its column
    (column-0 mask << y * cm).
    """
    row0 = sum(1 << (j * cm) for j in range(cn))
    col0 = (1 << cm) - 1
    return row0, col0


def partial_vec(spec: Spec) -> int:
    """f32 values of one partial-tile store to the workspace slot, which is laid out like C: a
    thread's adjacent wgmma values are adjacent columns, contiguous in a row-major slot (2), but
    adjacent rows of C^T with swap AB, whose slot is column-major (1)."""
    return 1 if spec.swap_ab else 2


def shape_multiples(spec: Spec) -> dict[str, int]:
    """What M, N and K must be multiples of: TMA needs 16-byte row strides, so K is a multiple of
    16 bytes of the input dtype (8 f16/bf16, 16 e4m3) and N of 8 (16 bytes of a 16-bit C). TMA
    loads zero-fill and the epilogues clip or predicate, so M is free."""
    # a gated pair (epilogue.fn with Gate and Up): N counts gate and up rows of B in blocks of 8
    # each, and C's N / 2 columns stay 16-byte aligned rows
    gated = spec.epilogue.fn is not None and any(k == "gate" for _, k in spec.epilogue.fn.args)
    # a float8 C (block_quant): 16 one-byte columns make its rows 16-byte aligned
    byte_out = DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype] == 1
    n = 16 if gated or byte_out else 8
    return {"M": 1, "N": n, "K": TMA_ROW_ALIGN_BYTES // DTYPE_BYTES[spec.dtype]}


def tma_loads_c(spec: Spec) -> bool:
    """The TMA-store epilogue with beta != 0 TMA-loads each C sub-tile into the SMEM buffer it
    then stores D from."""
    return isinstance(spec.epilogue, TmaStoreEpilogue) and spec.epilogue.beta != 0.0


def c_full_barriers(spec: Spec) -> int:
    """c_full barriers (one per epilogue buffer set: per ping-pong warpgroup) when C is loaded."""
    return epilogue_buffer_sets(spec) if tma_loads_c(spec) else 0


def barrier_bytes(spec: Spec, stages: int) -> int:
    """full and empty per stage, split-K's staged and consumed handshake barriers, and the
    TMA-store epilogue's c_full barriers when it loads C (beta)."""
    split = 2 if shared.is_split_k_cluster(spec) else 0
    return (2 * stages + split + c_full_barriers(spec)) * MBARRIER_BYTES


def stage_bytes(spec: Spec) -> int:
    """A + B bytes of one stage in one CTA's SMEM: the whole tile's A and B rows (multicast: its
    own slices plus those its peers send it). sm_90a has no CTA pairs."""
    return rules_common.stage_bytes(spec, operand_rows_per_cta(spec))


def full_tx_bytes(spec: Spec) -> int:
    """Bytes the full barrier the consumers wait on expects per stage: everything that lands in
    the CTA, its whole stage (stage_bytes)."""
    return stage_bytes(spec)


def smem_bytes(spec: Spec, stages: int) -> int:
    """Dynamic SMEM per CTA: barriers, the A and B rings, the epilogue's buffers."""
    return rules_common.smem_bytes(
        spec,
        stages,
        operand_rows_per_cta(spec),
        barrier_bytes(spec, stages),
        epilogue_smem_bytes(spec),
    )


def epi_m(spec: Spec) -> int:
    """Rows of one epilogue sub-tile: one 64-row wgmma atom per warpgroup sharing the tile."""
    return WGMMA_M * tile_warpgroups(spec)


def epi_n(spec: Spec) -> int:
    """Columns of one epilogue sub-tile: EPI_N, or EPI_N_NARROW where a wgmma atom's N (tile N, or
    half of it above 256; a multiple of 16 that is not one of 32, e.g. 80, 112, 144) leaves no
    whole 32-column sub-tile at its end (a sub-tile never straddles two atoms)."""
    atom_n = spec.tile.n // wgmma_n_atoms(spec.tile.n)
    return EPI_N if atom_n % EPI_N == 0 else EPI_N_NARROW


def epilogue_buffer_sets(spec: Spec) -> int:
    """Sets of EPI_STAGES sub-tile buffers: ping-pong warpgroups may store at the same time, so
    each has its own set; cooperative warpgroups store each sub-tile together."""
    return consumer_warpgroups(spec) if is_pingpong(spec) else 1


def tma_store_smem_bytes(spec: Spec) -> int:
    """The TMA-store epilogue's SMEM sub-tile buffers (none for direct stores)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return 0
    out = spec.epilogue.out_dtype or spec.dtype
    return epilogue_buffer_sets(spec) * EPI_STAGES * epi_m(spec) * epi_n(spec) * DTYPE_BYTES[out]


def epilogue_smem_bytes(spec: Spec) -> int:
    """SMEM after the operand rings: what the epilogue reads its tile from (the TMA-store
    sub-tiles, or the split-K staging buffer rank 0 reduces before it stores)."""
    return tma_store_smem_bytes(spec) + splitk_staging_bytes(spec)


# ---- split K ------------------------------------------------------------------------------------


def splitk_staging_elems(spec: Spec) -> int:
    """f32 values a peer stages for rank 0: its whole TM x TN partial tile (MMA_THREADS threads x
    accumulator_regs values each)."""
    return spec.tile.m * spec.tile.n if shared.is_split_k_cluster(spec) else 0


def splitk_staging_bytes(spec: Spec) -> int:
    return splitk_staging_elems(spec) * shared.ACC_BYTES


def staged_arrives(spec: Spec) -> int:
    """Arrivals that complete rank 0's `staged` barrier once per tile: one elected lane of every
    consumer warp of every peer (splits - 1 CTAs), after its warp stored its partial."""
    return (shared.splits(spec) - 1) * 4 * consumer_warpgroups(spec)


def consumed_arrives(spec: Spec) -> int:
    """Arrivals that complete a peer's `consumed` barrier once per tile: one elected lane of every
    consumer warp of rank 0, after its warp read that peer's staging through DSMEM."""
    return 4 * consumer_warpgroups(spec)


def splitk_max_clusters(spec: Spec) -> int:
    """Clusters the split-K grid launches at most on the flagship (what a cross-compile assumes):
    the spec's cap, or one wave (SMs // splits). The generated max_workers(sm_count) computes it
    for the GPU at hand."""
    if not isinstance(spec.scheduler, SplitKScheduler):
        return 0
    return spec.scheduler.max_clusters or SM_COUNT // spec.scheduler.splits


# ---- split K, separate reduce --------------------------------------------------------------------


def streamk_ctas(spec: Spec) -> int:
    """Persistent CTAs stream-K launches at most: the spec's sm_count, else the H100's."""
    return shared.streamk_ctas(spec, SM_COUNT)


def streamk_workspace_elems(spec: Spec) -> int:
    """The stream-K workspace (f32 words): a partial-tile slot and a flag per CTA."""
    return shared.streamk_workspace_elems(spec, SM_COUNT)


def streamk_violations(spec: Spec) -> list[Violation]:
    """Stream-K as implemented: one CTA per SM, no cluster, cooperative consumer warpgroups."""
    if not shared.is_stream_k(spec):
        return []
    out: list[Violation] = []
    if spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} with scheduler stream_k is not "
                "implemented (each CTA runs its own share of the MAC iterations); legal: [1, 1]",
            )
        )
    if is_pingpong(spec):
        out.append(
            Violation(
                "consumer_mode",
                "consumer_mode=pingpong with scheduler stream_k is not implemented; legal: "
                "cooperative",
            )
        )
    return out


def splitk_violations(spec: Spec) -> list[Violation]:
    """Split K runs on a (splits, 1, 1) cluster: splits a power of two that fits a portable
    cluster, no spec cluster beside it, and (as implemented) the direct epilogue."""
    if not isinstance(spec.scheduler, SplitKScheduler):
        return []
    out: list[Violation] = []
    n = spec.scheduler.splits
    if shared.is_split_k_cluster(spec) and (not is_power_of_two(n) or not 2 <= n <= CLUSTER_MAX):
        out.append(
            Violation(
                "scheduler",
                f"split_k splits={n}: the K range is split over the CTAs of one cluster, so "
                f"splits must be a power of two in [2, {CLUSTER_MAX}]; legal: 2, 4, 8",
            )
        )
    if spec.cluster.size > 1 and shared.is_split_k_separate(spec):
        out.append(
            Violation(
                "cluster",
                f'cluster {spec.cluster.m}x{spec.cluster.n} with split_k reduce = "separate" '
                "is not implemented (one CTA per tile and K share, no TMA multicast); legal: "
                "[1, 1]",
            )
        )
    elif spec.cluster.size > 1:
        out.append(shared.splitk_cluster_violation(spec, n))
    if not isinstance(spec.epilogue, DirectEpilogue) and shared.is_split_k_separate(spec):
        out.append(
            Violation(
                "epilogue",
                f'epilogue {spec.epilogue.style!r} with split_k reduce = "separate" is not '
                "implemented (the reduce kernel stores C with direct, predicated stores); legal: "
                "direct",
            )
        )
    elif not isinstance(spec.epilogue, DirectEpilogue):
        out.append(
            Violation(
                "epilogue",
                f"epilogue {spec.epilogue.style!r} with scheduler split_k is not implemented for "
                "sm_90a yet (rank 0 stores the reduced tile with the direct epilogue); legal: "
                "direct",
            )
        )
    return out


def pingpong_violations(spec: Spec) -> list[Violation]:
    """Ping-pong: two warpgroups alternate over the tiles of a persistent CTA, each holding a
    whole tile's accumulator; as implemented, without a cluster."""
    if not is_pingpong(spec):
        return []
    out: list[Violation] = []
    if spec.consumer_warpgroups != 2:
        out.append(
            Violation(
                "consumer_warpgroups",
                f"consumer_mode=pingpong alternates two consumer warpgroups over the tiles; got "
                f"consumer_warpgroups={spec.consumer_warpgroups}; legal: 2",
            )
        )
    if not isinstance(spec.scheduler, PersistentScheduler):
        out.append(
            Violation(
                "scheduler",
                f"consumer_mode=pingpong needs a tile sequence per CTA to alternate over; got "
                f"scheduler {spec.scheduler.kind}; legal: persistent",
            )
        )
    if spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} with consumer_mode=pingpong is not "
                "implemented yet (no TMA multicast); legal: [1, 1]",
            )
        )
    return out


def fusion_violations(spec: Spec) -> list[Violation]:
    """What the sm_90a epilogues fuse: alpha, beta (C read in place: the TMA-store epilogue
    TMA-loads each C sub-tile), bias and activation in both styles; f32 output only in the direct
    epilogue (the TMA store path stages 16-bit sub-tiles through stmatrix)."""
    out: list[Violation] = []
    epi = spec.epilogue
    if isinstance(epi, TmaStoreEpilogue) and epi.out_dtype == "f32":
        out.append(
            Violation(
                "epilogue",
                "out_dtype=f32 needs the direct epilogue on sm_90a (the TMA-store epilogue "
                "stages 16-bit sub-tiles); legal with tma: f16, bf16",
            )
        )
    return out


def swizzle_violations(spec: Spec) -> list[Violation]:
    """A stage's K row is one swizzle atom: 32, 64 or 128 bytes with the swizzle of that width
    (the DSL's wgmma SMEM layout picks the atom from the row width, so the spec must agree)."""
    row = k_row_bytes(spec)
    if K_ROW_SWIZZLE.get(row) == spec.swizzle:
        return []
    ks = {
        dt: ", ".join(str(b // DTYPE_BYTES[dt]) for b in K_ROW_SWIZZLE) for dt in ("bf16", "e4m3")
    }
    return [
        Violation(
            "swizzle",
            f"the sm_90a templates take K rows of one swizzle atom: 32 B with swizzle 32B, 64 B "
            f"with 64B, 128 B with 128B (tile K = {ks['bf16']} for f16/bf16, {ks['e4m3']} for "
            f"e4m3); got tile K={spec.tile.k} ({row} B rows) with swizzle={spec.swizzle}",
        )
    ]


# an MN-major operand's SMEM atom: 128 B of M (N) x 8 of K, the widest (MN_SW128); the DSL picks
# it from the operand's M (N) extent, which must then hold whole atoms
MN_ATOM_BYTES = 128


def mn_major_operands(spec: Spec) -> tuple[bool, bool]:
    """Whether the kernel's A and B are MN-major: the user's (a_major, b_major), exchanged by swap
    AB (the kernel's A is the user's B)."""
    a, b = spec.a_major == "mn", spec.b_major == "mn"
    return (b, a) if spec.swap_ab else (a, b)


def layout_violations(spec: Spec) -> list[Violation]:
    """The operands' major modes. wgmma reads an MN-major operand from SMEM only for 16-bit types
    (f16, bf16: its transpose bit); 8-bit operands must be K-major. An MN-major operand's SMEM
    atom is MN_SW128 (128 bytes of M or N), so its extent in the kernel (tile M for the kernel's
    A, each wgmma atom's N for its B; swap AB exchanges them) must hold whole atoms."""
    out: list[Violation] = []
    if spec.dtype == "e4m3":
        for knob, major, what in (
            ("a_major", spec.a_major, "a (M, K) row-major, e.g. a.contiguous()"),
            ("b_major", spec.b_major, "b (N, K) row-major, e.g. w.t().contiguous() for a (K, N) w"),
        ):
            if major == "mn":
                out.append(
                    Violation(
                        knob,
                        f"{knob}=mn with dtype=e4m3: sm_90a wgmma reads MN-major operands from "
                        'shared memory only for 16-bit types (f16, bf16); legal: "k" (pass '
                        f"K-major operands: {what})",
                    )
                )
        return out
    atom = MN_ATOM_BYTES // DTYPE_BYTES[spec.dtype]
    kernel_a, kernel_b = mn_major_operands(spec)
    # swap AB: the kernel's A is the user's B (b_major) and its B the user's A (a_major)
    knob_a, knob_b = ("b_major", "a_major") if spec.swap_ab else ("a_major", "b_major")
    swapped = " (swap AB: that operand is the kernel's " if spec.swap_ab else None
    for mn, knob, extent, what, side in (
        (kernel_a, knob_a, spec.tile.m, "tile M", "A"),
        (kernel_b, knob_b, spec.tile.n // wgmma_n_atoms(spec.tile.n), "each wgmma atom's N", "B"),
    ):
        if mn and extent % atom:
            out.append(
                Violation(
                    knob,
                    f"{knob}=mn{swapped + side + ')' if swapped else ''}: an MN-major operand is "
                    f"staged in {MN_ATOM_BYTES}-byte swizzle atoms along its M or N, so {what} "
                    f"must be a multiple of {atom}, got {extent}; legal: such a tile, or "
                    f'{knob}="k"',
                )
            )
    return out


# the argument kinds of an epilogue function (codegen/epilogue_fn.py) each epilogue style gives
_ALL_KINDS = frozenset({"acc", "scalar", "device_scalar", "row", "col", "tile"})
EPILOGUE_FN_KINDS: dict[str, frozenset[str]] = {
    "direct": _ALL_KINDS | {"gate", "up"},
    "tma": _ALL_KINDS,
}
# ... and after each K reduction it implements one after: split-K over a cluster (rank 0, after
# adding the peers' partials) and stream-K (the finisher, after the fix-up) run it in the same
# epilogue, on the reduced registers; the separate reduce kernel per element of its vectors
EPILOGUE_FN_AFTER_REDUCE: dict[str, frozenset[str]] = {
    "cluster": _ALL_KINDS | {"gate", "up"},
    "stream_k": _ALL_KINDS | {"gate", "up"},
    "separate": frozenset({"acc", "scalar", "device_scalar", "row", "col"}),
}


# row_sumsq's butterfly: the lane offsets that add one row's values, without swap AB over the quad
# of lanes that holds it, with swap AB (a column of C^T) over the lanes of equal lane % 4
ROW_SUMSQ_SHUFFLES = {False: (1, 2), True: (4, 8, 16)}


def row_partials_per_tile(spec: Spec) -> int:
    """row_sumsq: the partials one output tile writes per row of the user's C. Without swap AB a
    row of a 64-row wgmma atom lies in the four lanes of one quad of one warp: they add their
    columns (a butterfly over lanes 1 and 2 apart) and one lane writes the tile's partial. With
    swap AB the user's row is the kernel's column, spread over the lanes of equal lane % 4 of
    every warp along the kernel's M: each warp adds its lanes' values (lanes 4, 8 and 16 apart)
    and writes its own partial, one per warp that shares the tile, no SMEM."""
    return WARPGROUP_WARPS * tile_warpgroups(spec) if spec.swap_ab else 1


def row_sumsq_slots(spec: Spec) -> int:
    """row_sumsq: the rows of the user's C one consumer thread holds values of in a tile, each a
    partial it adds up and sends through the butterfly: rows r and r + 8 of each 64-row wgmma
    atom it repeats along M; with swap AB the columns of C^T, two of each 8-column group."""
    if spec.swap_ab:
        return spec.tile.n // 4
    return 2 * spec.tile.m // (WGMMA_M * tile_warpgroups(spec))


def row_partial_count(spec: Spec, n: int) -> int:
    """row_sumsq's P for the user's N: the tiles along N (with swap AB along the kernel's M, the
    user's N) times row_partials_per_tile."""
    tile = spec.tile.m if spec.swap_ab else spec.tile.n
    return -(-n // tile) * row_partials_per_tile(spec)


def gated_violations(spec: Spec) -> list[Violation]:
    """A gated pair (Gate, Up; codegen/epilogue_fn.py) finds a gate column's up partner 8
    columns on in the thread's wgmma fragment: every wgmma atom along N must hold whole blocks
    of 8 gate and 8 up columns (with swap AB the pairs are rows: a 64-row atom always does)."""
    fn = spec.epilogue.fn
    if fn is None or not any(kind == "gate" for _, kind in fn.args) or spec.swap_ab:
        return []
    atom_n = spec.tile.n // wgmma_n_atoms(spec.tile.n)
    if atom_n % 16:
        return [
            Violation(
                "tile",
                f"fn {fn.name} is a gated pair (Gate, Up): each wgmma atom along N must hold whole "
                f"blocks of 8 gate and 8 up columns, a multiple of 16 wide; tile N = "
                f"{spec.tile.n} makes {atom_n}-wide atoms; legal: tile N a multiple of 16",
            )
        ]
    return []


def check(spec: Spec) -> list[Violation]:
    out: list[Violation] = []
    t = spec.tile
    wgs = tile_warpgroups(spec)
    if not wgmma_shape_ok(t.m, t.n, wgs):
        out.append(
            Violation(
                "tile",
                f"tile {t.m}x{t.n} with {wgs} consumer warpgroup{'s' if wgs > 1 else ''} is not "
                "a wgmma layout; legal: M / warpgroups a multiple of 64 up to 256, N a multiple "
                "of 8 in [8, 256] or of 32 in (256, 512] (two wgmma atoms along N)",
            )
        )
    elif accumulator_regs(spec) > ACC_REGS_LIMIT and is_pingpong(spec):
        out.append(
            Violation(
                "tile",
                f"tile {t.m}x{t.n} with consumer_mode=pingpong: each warpgroup holds a whole "
                f"tile, {accumulator_regs(spec)} f32 accumulator registers per thread, and would "
                f"spill; at most {ACC_REGS_LIMIT}: tile M x N <= {ACC_REGS_LIMIT * 128} (e.g. "
                "64x256, 128x128) or the cooperative mode",
            )
        )
    elif accumulator_regs(spec) > ACC_REGS_LIMIT:
        out.append(
            Violation(
                "tile",
                f"tile {t.m}x{t.n} with {plural(wgs, 'consumer warpgroup')} holds "
                f"{accumulator_regs(spec)} f32 accumulator registers per thread and would spill; "
                f"at most {ACC_REGS_LIMIT}: use 2 consumer warpgroups or a smaller tile",
            )
        )
    else:
        out += occupancy_violations(spec)
    if isinstance(spec.epilogue, TmaStoreEpilogue) and t.n % EPI_N_NARROW:
        out.append(
            Violation(
                "epilogue",
                f"the TMA-store epilogue stores {EPI_N}- or {EPI_N_NARROW}-column sub-tiles; "
                f"tile N={t.n} is not a multiple of {EPI_N_NARROW}",
            )
        )
    out.extend(fusion_violations(spec))
    out.extend(shared.runtime_scalar_violations(spec))
    out.extend(shared.epilogue_fn_violations(spec, EPILOGUE_FN_KINDS, EPILOGUE_FN_AFTER_REDUCE))
    out.extend(gated_violations(spec))
    out.extend(shared.row_sumsq_violations(spec, ("direct", "tma"), ("grid", "persistent")))
    out.extend(shared.block_quant_violations(spec, ("direct",), ("grid", "persistent")))
    out.extend(swizzle_violations(spec))
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "sm_90a kernels are always warp-specialized (a TMA producer warpgroup and "
                "wgmma consumer warpgroups); legal: true",
            )
        )
    if spec.cta_group != 1:
        out.append(
            Violation("cta_group", "cta_group=2 (a CTA-pair MMA) needs sm_100a; Hopper has none")
        )
    if spec.accumulators != 1:
        out.append(
            Violation(
                "accumulators",
                "accumulators=2 (TMEM accumulator slots) needs sm_100a; Hopper accumulates in "
                "registers",
            )
        )
    for dim, size in (("M", spec.cluster.m), ("N", spec.cluster.n)):
        if size > 1 and not is_power_of_two(size):
            out.append(Violation("cluster", f"cluster {dim}={size} must be a power of two"))
    out += splitk_violations(spec)
    out += shared.splitk_separate_violations(spec)
    out += streamk_violations(spec)
    out += pingpong_violations(spec)
    out += dynamic_scheduler_violations(spec)
    out += layout_violations(spec)
    return out


def wgmma_acc_regs(spec: Spec) -> int:
    """f32 accumulator registers per thread that one m64nN wgmma writes: 64 x N / 128."""
    return WGMMA_M * spec.tile.n // WARPGROUP_THREADS


def occupancy_violations(spec: Spec) -> list[Violation]:
    """ctas_per_sm = 2 halves the CTA's registers. The accumulators must fit the consumers'
    setmaxnreg share with room to spare, and one wgmma's accumulator fragment (plus what is live
    beside it) the registers a thread launches with: the consumers' code after setmaxnreg does
    use registers past the launch count (a 64x128 swap-AB kernel up to R211), but ptxas refuses
    a wgmma whose operands do not fit it (C7602, "insufficient registers")."""
    if spec.ctas_per_sm == 1:
        return []
    t = spec.tile
    head = (
        f"ctas_per_sm={spec.ctas_per_sm} leaves a CTA {register_pool(spec)} registers "
        f"({threads(spec)} threads x {launch_regs(spec)} at launch)"
    )
    if accumulator_regs(spec) > acc_regs_limit(spec):
        elems = acc_regs_limit(spec) * WARPGROUP_THREADS
        return [
            Violation(
                "ctas_per_sm",
                f"{head}: the consumers get {consumer_regs(spec)} per thread, room for at most "
                f"{acc_regs_limit(spec)} f32 accumulators beside the rest, but tile "
                f"{t.m}x{t.n} with {_warpgroups(tile_warpgroups(spec))} holds "
                f"{accumulator_regs(spec)} per thread and would spill; legal: ctas_per_sm = 1, "
                f"or at most {elems} tile elements per consumer warpgroup (e.g. swap AB 64x16 "
                "to 64x128, one warpgroup)",
            )
        ]
    if wgmma_acc_regs(spec) + WGMMA_LIVE_REGS > launch_regs(spec):
        max_n = (launch_regs(spec) - WGMMA_LIVE_REGS) * WARPGROUP_THREADS // WGMMA_M
        return [
            Violation(
                "ctas_per_sm",
                f"{head}: ptxas assembles each wgmma within the launch count, and one "
                f"m{WGMMA_M}n{t.n} wgmma writes {wgmma_acc_regs(spec)} f32 accumulators per "
                f"thread, more than {launch_regs(spec)} less {WGMMA_LIVE_REGS} for what is "
                f"live beside them; legal: ctas_per_sm = 1, or tile N <= {max_n - max_n % 8}",
            )
        ]
    return []


def _warpgroups(count: int) -> str:
    return f"{count} consumer warpgroup{'s' if count > 1 else ''}"


def dynamic_scheduler_violations(spec: Spec) -> list[Violation]:
    """The dynamic scheduler asks the hardware for tiles (clusterlaunchcontrol.try_cancel), which
    Hopper does not have."""
    if spec.scheduler.kind != "dynamic":
        return []
    return [
        Violation(
            "scheduler",
            "scheduler 'dynamic' needs sm_100a (cluster launch control); legal on sm_90a: grid, "
            "persistent, split_k",
        )
    ]
