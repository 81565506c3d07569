"""Blackwell (sm_100a) rules: tcgen05 MMA shapes, TMEM, clusters, and what the templates implement.

Each legality condition lives in one function here; :func:`check` collects them. The planner
(:mod:`codegen.arch.sm100.values`), the docstrings (:mod:`codegen.arch.sm100.docs`) and the
expected counts (:mod:`codegen.arch.sm100.counts`) take every derived number (masks, arrive
counts, TMEM columns, epilogue chunks) from the helpers above the rules, so the docstrings, the
kernel and the build's expected counts agree. Split-K's and stream-K's shared pieces come from
:mod:`codegen.arch.shared`.
"""

from __future__ import annotations

from typing import Literal

from codegen import rules_common
from codegen.arch import shared
from codegen.rules_common import (
    DTYPE_BYTES,
    MBARRIER_BYTES,
    SWIZZLE_BYTES,
    Violation,
    align_up,
    auto_swizzle,
    is_power_of_two,
    k_row_bytes,
)
from codegen.spec import (
    DirectEpilogue,
    DynamicScheduler,
    PersistentScheduler,
    Spec,
    SplitKScheduler,
    StreamKScheduler,
    TmaStoreEpilogue,
)

TMEM_COLUMNS = 512
TMEM_LANES = 128  # one CTA's accumulator rows: the epilogue maps 4 warps x 32 lanes onto them
SM_COUNT = 148  # B200
EPILOGUE_WARPS = 4  # one per 32-lane quarter of TMEM
TMA_WARP = 0  # loads A and B (and, single-warp K loop, issues the MMAs too)
MMA_WARP = 1  # warp-specialized: issues the MMAs
EPI_WARP0 = MMA_WARP + 1  # persistent: the TMA and MMA warps come first, the epilogue warps after
EPI_WARPS_RANGE = f"{EPI_WARP0}-{EPI_WARP0 + EPILOGUE_WARPS - 1}"  # the epilogue warps, in prose
PERSISTENT_WARPS = EPI_WARP0 + EPILOGUE_WARPS  # a persistent CTA's warps
EPI_BARRIER_ID = 1  # persistent: the epilogue warps' named barrier (0 is __syncthreads)
EPI_TILE = (128, 64)  # TMA-store sub-tile: 128 rows x 64 columns (128-byte rows in f16/bf16)
EPI_COLS_NARROW = 16  # the sub-tile's columns where tile N is not a multiple of EPI_TILE[1]
EPI_BUFS = 2  # SMEM sub-tile buffers: the TMA store of one overlaps filling the next
MULTICAST_MIN_ROWS = 8  # a multicast slice of an operand tile holds whole 8-row swizzle atoms
CLUSTER_MAX = 16  # CTAs in a cluster (the cluster-size rule lives in rules_common)
SPLITK_MAX = 8  # split-K CTAs per cluster: a portable cluster
CLC_RESPONSE_BYTES = 16  # clusterlaunchcontrol.try_cancel writes an opaque 16-byte answer to SMEM
TMA_ROW_ALIGN_BYTES = 16  # TMA needs 16-byte global row strides
FP8_K_ROW_BYTES = 128  # e4m3 stages: 128-byte K rows (tile K = 128), one 128B swizzle atom
EPI_SWIZZLE_BYTES = 128  # widest swizzle atom, and the widest TMA-store box row it allows
PAIR_MASK = 0b11  # a CTA pair's commit and multicast mask: both CTAs (ranks 0 and 1)
M64_MIN_N = 16  # an M=64 tile's narrowest N: each thread's half row is at least 8 columns

ClusterKind = Literal["single", "multicast", "pair", "split"]


# ---- MMA shape and TMEM -------------------------------------------------------------------------


def tcgen05_f16_shape_ok(m: int, n: int, cta_group: int = 1) -> bool:
    """Legal tcgen05.mma kind::f16 shapes. One CTA: M 64 with N % 8, or M 128 with N % 16.
    A CTA pair (cta_group 2): M 128 or 256 with N a multiple of 16 in [16, 256]."""
    if cta_group == 2:
        return m in (128, 256) and n % 16 == 0 and 16 <= n <= 256
    if m == 64:
        return n % 8 == 0 and 8 <= n <= 256
    if m == 128:
        return n % 16 == 0 and 16 <= n <= 256
    return False


def mma_kind(spec: Spec) -> str:
    """The tcgen05.mma kind: f16 (f16/bf16 inputs, 16 deep) or f8f6f4 (e4m3, 32 deep). Both take
    the same M and N (:func:`tcgen05_f16_shape_ok`)."""
    return "f8f6f4" if spec.dtype == "e4m3" else "f16"


def acc_rows_per_warp(spec: Spec) -> int:
    """Accumulator rows each epilogue warp reads from its 32-lane TMEM quadrant: a 128-row
    accumulator puts row r in lane r (32 per warp); a 64-row one (cta_group 1, M=64) puts rows
    16q .. 16q + 15 in lanes 32q .. 32q + 15 of quadrant q, so only 16 lanes per warp hold rows."""
    return spec.tile.m // spec.cta_group // EPILOGUE_WARPS


def tmem_load_shape(spec: Spec) -> str:
    """The tcgen05.ld shape that reads a warp's accumulator rows with one whole row run per
    thread: 32x32b (lane i -> thread i) for 32 rows per warp; 16x32bx2 for 16 (threads 0-15 take
    lanes 0-15 and the left half of the columns, threads 16-31 the same lanes' right half)."""
    return "32x32b" if acc_rows_per_warp(spec) == 32 else "16x32bx2"


def epi_cols(spec: Spec) -> int:
    """Columns of one TMA-store sub-tile: 64, or 16 where tile N (a multiple of 16, e.g. 80, 112)
    is not a multiple of 64."""
    return EPI_TILE[1] if spec.tile.n % EPI_TILE[1] == 0 else EPI_COLS_NARROW


def epi_tile(spec: Spec) -> tuple[int, int]:
    """The TMA-store sub-tile: the CTA's accumulator rows (64 for an M=64 tile, else 128) x
    epi_cols columns."""
    rows = 64 if (spec.tile.m, spec.cta_group) == (64, 1) else EPI_TILE[0]
    return rows, epi_cols(spec)


def tmem_columns(tile_n: int, slots: int = 1) -> int:
    """tcgen05.alloc takes a power of two >= 32 columns; one f32 column per output column."""
    need = tile_n * slots
    cols = 32
    while cols < need:
        cols *= 2
    return cols


def spec_tmem_columns(spec: Spec) -> int:
    """TMEM columns one CTA allocates: N f32 columns per accumulator slot (a CTA pair allocates
    the same columns in both CTAs, each holding its 128 rows)."""
    return tmem_columns(spec.tile.n, spec.accumulators)


# ---- how the CTAs of a cluster cooperate --------------------------------------------------------


def cluster_kind(spec: Spec) -> ClusterKind:
    """How the CTAs of a cluster cooperate. "pair": the two CTAs of a cta_group::2 MMA;
    "multicast": 1-CTA MMAs whose cluster shares operand tiles by TMA multicast; "single": a CTA
    on its own; "split": the (splits, 1, 1) cluster of split-K, whose CTAs share an output tile and
    split its K range."""
    if shared.is_split_k_cluster(spec):
        return "split"
    if spec.cta_group == 2:
        return "pair"
    return "multicast" if spec.cluster.size > 1 else "single"


def is_persistent(spec: Spec) -> bool:
    """A CTA loops over tiles (static persistent, dynamic, split-K's clusters, stream-K's units):
    dedicated epilogue warps, TMEM accumulator slots handed between the MMA warp and the epilogue.
    """
    return isinstance(
        spec.scheduler,
        (PersistentScheduler, DynamicScheduler, SplitKScheduler, StreamKScheduler),
    )


def splitk_staging_bytes(spec: Spec) -> int:
    """The f32 partial tile a split-K peer stages in its SMEM for rank 0 (TM x TN)."""
    return spec.tile.m * spec.tile.n * shared.ACC_BYTES if shared.is_split_k_cluster(spec) else 0


def staged_arrives(spec: Spec) -> int:
    """Arrivals completing rank 0's `staged` barrier once per tile: one elected lane of every
    epilogue warp of every peer, after its warp staged its partial."""
    return (shared.splits(spec) - 1) * EPILOGUE_WARPS


def consumed_arrives(spec: Spec) -> int:
    """Arrivals completing a peer's `consumed` barrier once per tile: one elected lane of every
    epilogue warp of rank 0, after its warp read that peer's staging through DSMEM."""
    return EPILOGUE_WARPS


def streamk_ctas(spec: Spec) -> int:
    """Persistent CTAs stream-K launches at most (its workspace's slots), one per SM of the GPU
    (fewer when there are fewer SMs or MAC iterations): the spec's sm_count, else the B200's."""
    return shared.streamk_ctas(spec, SM_COUNT)


def streamk_workspace_elems(spec: Spec) -> int:
    """The global workspace (f32 words): a partial-tile slot per CTA, then a flag word per CTA.
    Each CTA hands over at most one partial tile (its first unit, when an earlier CTA ran the
    tile's first k-tile and finishes it)."""
    return shared.streamk_workspace_elems(spec, SM_COUNT)


def is_dynamic(spec: Spec) -> bool:
    """The next tile comes from the hardware (cluster launch control), not from a static order."""
    return isinstance(spec.scheduler, DynamicScheduler)


def clc_readers(spec: Spec) -> int:
    """Warps that read each cluster-launch-control answer and arrive (one elected lane each) on
    clc_empty before it may be overwritten: the producer, the MMA warp, every epilogue warp."""
    return 2 + EPILOGUE_WARPS if is_dynamic(spec) else 0


def multicast_ctas(spec: Spec) -> tuple[int, int]:
    """CTAs each A tile and each B tile is multicast to (1: loaded by its CTA alone).

    Multicast happens along a cluster dimension > 1: the CTAs of one cluster row (same M
    coordinate, cluster.n of them) need the same A tile, those of one column (cluster.m) the same
    B tile. Each loads a 1/cluster.n slice of A and a 1/cluster.m slice of B and multicasts it.
    """
    if cluster_kind(spec) != "multicast":
        return 1, 1
    return spec.cluster.n, spec.cluster.m


def multicast_masks(spec: Spec) -> tuple[int, int]:
    """Cluster-rank masks of the CTAs that share A (and B) with the CTA at (0, 0), where the rank
    of CTA (cm, cn) is cm + cluster.m * cn. CTA (cm, cn) shifts the A mask by cm and the B mask
    by cluster.m * cn."""
    cm, cn = spec.cluster.m, spec.cluster.n
    return sum(1 << (cm * j) for j in range(cn)), (1 << cm) - 1


def empty_arrives(spec: Spec) -> int:
    """Arrivals that free one ring slot: a tcgen05.commit from every CTA whose MMAs read what this
    CTA's producer wrote (itself, its A sharers and its B sharers); 1 for a single CTA and for a
    pair, whose leader commits once to both CTAs."""
    a, b = multicast_ctas(spec)
    return a + b - 1


def full_tx_bytes(spec: Spec) -> int:
    """Bytes the full barrier the MMA waits on expects per stage: everything landing in one CTA
    (its own slices plus its peers' multicast ones), or, for a pair, both CTAs' stages: the
    follower's cta_group::2 loads complete_tx on the leader's barrier."""
    return stage_bytes(spec) * spec.cta_group


def acc_empty_arrives(spec: Spec) -> int:
    """Arrivals that free an accumulator slot (persistent): one elected thread per epilogue warp
    of every CTA holding part of the accumulator, all on the barrier the MMA issuer waits on."""
    return EPILOGUE_WARPS * spec.cta_group


def max_workers(spec: Spec) -> int:
    """Persistent grid size in workers (CTAs, CTA pairs or multicast clusters) on the flagship
    (B200), what a cross-compile assumes: one per SM, or per cluster of SMs (a pair is a 2-CTA
    cluster). The generated max_workers(sm_count) computes it for the GPU at hand."""
    if isinstance(spec.scheduler, SplitKScheduler):
        return spec.scheduler.max_clusters or SM_COUNT // spec.scheduler.splits
    sm_count = getattr(spec.scheduler, "sm_count", None) or SM_COUNT
    return sm_count // spec.cluster.size


# ---- shared memory ------------------------------------------------------------------------------


def operand_rows_per_cta(spec: Spec) -> tuple[int, int]:
    """Rows of A and B one CTA holds per stage (a CTA pair splits both in half)."""
    return spec.tile.m // spec.cta_group, spec.tile.n // spec.cta_group


def stage_bytes(spec: Spec) -> int:
    """A + B bytes of one stage in one CTA's SMEM: the whole tile's A and B rows with one CTA per
    MMA (multicast: its own slices plus those its peers send it), half of each in each CTA of a
    pair (cta_group = 2), so a pair's stage is twice this. full_tx_bytes is what the full barrier
    the MMA waits on expects."""
    return rules_common.stage_bytes(spec, operand_rows_per_cta(spec))


def smem_bytes(spec: Spec, stages: int) -> int:
    """Dynamic SMEM per CTA: the Barriers struct, the A and B rings, the epilogue's buffers."""
    return rules_common.smem_bytes(
        spec,
        stages,
        operand_rows_per_cta(spec),
        barrier_bytes(spec, stages),
        epilogue_smem_bytes(spec),
    )


def loads_c_by_tma(spec: Spec) -> bool:
    """beta != 0 reads C; the TMA-store epilogue TMA-loads each C sub-tile into the SMEM buffer it
    then stores from (the direct epilogue reads C from global memory into registers)."""
    return isinstance(spec.epilogue, TmaStoreEpilogue) and spec.epilogue.beta != 0.0


def c_load_bytes(spec: Spec) -> int:
    """Bytes one C sub-tile TMA load delivers (the c_full barrier's tx count), 0 without one: the
    whole sub-tile (128 or, for an M=64 tile, 64 rows x 64 columns), zero-filled past M and N."""
    if not loads_c_by_tma(spec):
        return 0
    rows, cols = epi_tile(spec)
    return rows * cols * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]


def barrier_count(spec: Spec, stages: int) -> int:
    """mbarriers in the kernel's Barriers struct: full and empty per stage; acc_full (grid) or
    acc_full and acc_empty per accumulator slot (persistent); a pair's TMEM-dealloc handshake;
    c_full when the TMA-store epilogue loads C (beta)."""
    acc = 2 * spec.accumulators if is_persistent(spec) else 1
    clc = 2 if is_dynamic(spec) else 0  # clc_full, clc_empty: the hardware's answer handshake
    # staged, consumed: the DSMEM reduction's handshake
    split = 2 if shared.is_split_k_cluster(spec) else 0
    pair = 1 if spec.cta_group == 2 else 0
    return 2 * stages + acc + clc + split + pair + (1 if loads_c_by_tma(spec) else 0)


def barrier_bytes(spec: Spec, stages: int) -> int:
    """The Barriers struct: its mbarriers and the 4-byte TMEM address slot; the dynamic
    scheduler's 16-byte answer sits after the barriers, 16-byte aligned."""
    count = barrier_count(spec, stages) * MBARRIER_BYTES
    if is_dynamic(spec):
        count = align_up(count, CLC_RESPONSE_BYTES) + CLC_RESPONSE_BYTES
    return count + 4


def epi_subtiles(spec: Spec) -> int:
    """TMA-store sub-tiles per output tile: one per epi_cols columns."""
    return spec.tile.n // epi_cols(spec)


def odd_subtiles(spec: Spec) -> bool:
    """A tile of a looping scheduler ends on the sub-tile buffer the next tile starts on (an odd
    number of TMA-store sub-tiles for EPI_BUFS = 2 alternating buffers): the epilogue then waits
    for its last store to read SMEM before the next tile."""
    return is_tma_store(spec) and is_persistent(spec) and epi_subtiles(spec) % EPI_BUFS != 0


def epi_row_bytes(spec: Spec) -> int:
    """Bytes of one TMA-store sub-tile row in the output dtype (for 64 columns: 128 for f16/bf16,
    256 for f32)."""
    return epi_cols(spec) * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]


def epi_major_bytes(spec: Spec) -> int:
    """Bytes of a TMA-store sub-tile along its contiguous axis: a row (128 for f16/bf16, 256 for
    f32), or with swap_ab (C^T is column-major: the sub-tile is M-major) a column of its rows."""
    if spec.swap_ab:
        return epi_tile(spec)[0] * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]
    return epi_row_bytes(spec)


def epi_tma_boxes(spec: Spec) -> int:
    """TMA boxes per C sub-tile, each way (store, and load for beta): a swizzled box spans at
    most one swizzle atom along its contiguous axis, so an f32 sub-tile (256-byte rows) is two
    128 x 32 boxes, and a swap_ab bf16 one (256-byte columns of 128 rows) two 64 x 64 boxes."""
    major = epi_major_bytes(spec)
    return major // SWIZZLE_BYTES[auto_swizzle(major)]


def epilogue_smem_bytes(spec: Spec) -> int:
    """SMEM after the operand rings: the TMA-store epilogue's sub-tiles, or split-K's f32 staging
    (none for plain direct stores)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return splitk_staging_bytes(spec)
    out = spec.epilogue.out_dtype or spec.dtype
    rows, cols = epi_tile(spec)
    return EPI_BUFS * rows * cols * DTYPE_BYTES[out]


def shape_multiples(spec: Spec) -> dict[str, int]:
    """What M, N and K must be multiples of. TMA needs 16-byte row strides (K: 8 f16/bf16 or 16
    e4m3 elements, and N for a TMA store); TMA loads zero-fill and TMA stores clip partial tiles.
    The direct epilogue stores whole tiles unpredicated, and a multicast cluster (grid or
    persistent) covers whole cluster tiles: M and N must then cover whole clusters of tiles (a
    pair's tile is already the pair's). With swap_ab the kernel's rows are C's columns: the
    tile's M covers N and its N covers M."""
    k = TMA_ROW_ALIGN_BYTES // DTYPE_BYTES[spec.dtype]
    if isinstance(spec.epilogue, TmaStoreEpilogue):
        return {"M": 1, "N": 8, "K": k}
    clusters_m = spec.cluster.m // spec.cta_group
    clusters_n = spec.cluster.n
    rows, cols = spec.tile.m * clusters_m, spec.tile.n * clusters_n
    if spec.swap_ab:
        rows, cols = cols, rows
    return {"M": rows, "N": cols, "K": k}


# ---- the epilogue's geometry ---------------------------------------------------------------------

EPI_MAX_COLS = 64  # widest tcgen05.ld repetition the direct epilogue uses per chunk


VECTOR_STORE_BYTES = 16  # the direct epilogue's st.global.v4: 16 bytes of a thread's row each


DSMEM_VECTOR_BYTES = 16  # split-K staging runs: st.shared.v4 / ld.shared::cluster.v4 of f32


def is_tma_store(spec: Spec) -> bool:
    return isinstance(spec.epilogue, TmaStoreEpilogue)


def epilogue_chunks(spec: Spec) -> tuple[int, int]:
    """(columns per tcgen05.ld, loads per tile) of the epilogue: 64-column TMA-store sub-tiles,
    or direct-store chunks of at most EPI_MAX_COLS columns."""
    if is_tma_store(spec):
        return epi_cols(spec), epi_subtiles(spec)
    cols = direct_chunk_cols(spec.tile.n)
    return cols, spec.tile.n // cols


def values_per_thread(spec: Spec) -> int:
    """Accumulator values one epilogue thread holds per output tile: a whole row (32x32b loads)
    or half a row (16x32bx2 loads of an M=64 accumulator)."""
    halves = 1 if tmem_load_shape(spec) == "32x32b" else 2
    return spec.tile.n // halves


def direct_stores(spec: Spec) -> int:
    """st.global instructions of the direct epilogue (its chunk loop is unrolled): a thread's row
    run is contiguous in C, so 16-byte vectors; with swap_ab the run is a column of C (stride
    ldc), so one store per element."""
    values = values_per_thread(spec)
    if spec.swap_ab:
        return values
    return values * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype] // VECTOR_STORE_BYTES


def streamk_handover_vectors(spec: Spec) -> int:
    """16-byte vectors one epilogue thread moves through the stream-K workspace per partial tile:
    its accumulator values of the tile (a row, or half a row for M=64), STREAMK_VEC f32 each."""
    values = values_per_thread(spec)
    assert values % shared.STREAMK_VEC == 0, "a thread's row run splits into whole 16-byte vectors"
    return values // shared.STREAMK_VEC


# ---- rules: each returns the violations of one condition ----------------------------------------


def shape_violations(spec: Spec) -> list[Violation]:
    """The tile must be a tcgen05 shape (kind::f16 and kind::f8f6f4 take the same M and N). A CTA
    pair's tile must give each CTA 128 rows, the 128 TMEM lanes its epilogue maps."""
    t, pair, kind = spec.tile, spec.cta_group == 2, mma_kind(spec)
    if not tcgen05_f16_shape_ok(t.m, t.n, spec.cta_group):
        if pair:
            legal = "M=128 or 256 with N a multiple of 16 in [16, 256]"
            return [
                Violation(
                    "tile",
                    f"tile {t.m}x{t.n} is not a tcgen05 kind::{kind} shape for a CTA pair "
                    f"(cta_group=2); legal: {legal}",
                )
            ]
        return [
            Violation(
                "tile",
                f"tile {t.m}x{t.n} is not a tcgen05 kind::{kind} shape for one CTA; legal: "
                "M=64 with N a multiple of 8 in [8, 256], or M=128 with N a multiple of 16 "
                "in [16, 256]",
            )
        ]
    if pair and t.m != TMEM_LANES * spec.cta_group:
        return [
            Violation(
                "tile",
                f"tile M={t.m} with cta_group=2 is not implemented for sm_100a yet (each CTA "
                f"of the pair maps 4 warps to 128 TMEM lanes); legal: {2 * TMEM_LANES}, the "
                "pair's tile",
            )
        ]
    return []


def m64_violations(spec: Spec) -> list[Violation]:
    """An M=64 accumulator gives each epilogue thread half a row (tcgen05.ld 16x32bx2): N/2
    columns, at least 8 (one 16-byte store of f16/bf16), so N >= 16."""
    t = spec.tile
    if t.m != 64 or spec.cta_group != 1 or not tcgen05_f16_shape_ok(t.m, t.n):
        return []
    if t.n >= M64_MIN_N:
        return []
    return [
        Violation(
            "tile",
            f"tile 64x{t.n}: an M=64 accumulator splits each row between two epilogue threads "
            f"(tcgen05.ld 16x32bx2), {t.n // 2} columns each, less than one 16-byte store; "
            f"legal: N a multiple of 8 in [{M64_MIN_N}, 256]",
        )
    ]


def fp8_violations(spec: Spec) -> list[Violation]:
    """e4m3 stages are 128-byte K rows (tile K = 128) with the 128B swizzle: four 32-deep
    kind::f8f6f4 MMAs per stage, one swizzle atom per row."""
    if spec.dtype != "e4m3":
        return []
    row = k_row_bytes(spec)
    if row == FP8_K_ROW_BYTES and spec.swizzle == "128B":
        return []
    return [
        Violation(
            "tile",
            f"dtype=e4m3 takes {FP8_K_ROW_BYTES}-byte K rows with the 128B swizzle on sm_100a; "
            f"got tile K={spec.tile.k} ({row} B rows) with swizzle={spec.swizzle}; legal: tile "
            f"K={FP8_K_ROW_BYTES // DTYPE_BYTES['e4m3']}, swizzle 128B",
        )
    ]


def tmem_violations(spec: Spec) -> list[Violation]:
    """Every accumulator slot needs N f32 columns; TMEM has 512 (2 slots: N <= 256)."""
    cols = spec_tmem_columns(spec)
    if cols <= TMEM_COLUMNS:
        return []
    return [
        Violation(
            "tile",
            f"tile N={spec.tile.n} x {spec.accumulators} accumulator slots needs {cols} TMEM "
            f"columns; at most {TMEM_COLUMNS}",
        )
    ]


def cta_pair_violations(spec: Spec) -> list[Violation]:
    """cta_group=2 runs one MMA on two CTAs adjacent along M: cluster M must be even. The
    templates implement exactly the pair, [2, 1], with the warp-specialized mainloop."""
    if spec.cta_group != 2:
        return []
    out: list[Violation] = []
    m, n = spec.cluster.m, spec.cluster.n
    if m % 2:
        out.append(
            Violation(
                "cluster",
                f"cluster {m}x{n}: cta_group=2 runs each MMA on a CTA pair adjacent along M, so "
                "cluster M must be a multiple of 2; legal: [2, 1]",
            )
        )
    elif (m, n) != (2, 1):
        out.append(
            Violation(
                "cluster",
                f"cluster {m}x{n} with cta_group=2 (TMA multicast between CTA pairs) is not "
                "implemented for sm_100a yet; legal: [2, 1]",
            )
        )
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "cta_group=2 is implemented for the warp-specialized mainloop only (both CTAs "
                "load, the leader's MMA warp multiplies); legal: true",
            )
        )
    return out


def _largest_split(rows: int) -> int:
    """The most CTAs (a power of two, at most a cluster) a tile of `rows` splits among in whole
    8-row slices."""
    ctas = 1
    while ctas < CLUSTER_MAX and rows % (2 * ctas * MULTICAST_MIN_ROWS) == 0:
        ctas *= 2
    return ctas


def multicast_violations(spec: Spec) -> list[Violation]:
    """TMA multicast (cta_group 1 in a cluster > 1x1) splits a tile among the CTAs of a cluster
    dimension > 1; each slice must hold whole 8-row swizzle atoms. The templates implement it
    with the warp-specialized mainloop (grid or persistent)."""
    if cluster_kind(spec) != "multicast":
        return []
    out: list[Violation] = []
    a_ctas, b_ctas = multicast_ctas(spec)
    for operand, rows, ctas, dim in (
        ("A", spec.tile.m, a_ctas, "N"),
        ("B", spec.tile.n, b_ctas, "M"),
    ):
        # a cluster size that is not a power of two is reported by rules.check
        if ctas > 1 and is_power_of_two(ctas) and rows % (ctas * MULTICAST_MIN_ROWS):
            out.append(
                Violation(
                    "cluster",
                    f"cluster {spec.cluster.m}x{spec.cluster.n} multicasts each {operand} tile "
                    f"({rows} rows) to the {ctas} CTAs along the cluster's {dim}, in slices of "
                    f"{rows // ctas} rows, but a slice must be a multiple of "
                    f"{MULTICAST_MIN_ROWS} rows; legal: cluster {dim} at most {_largest_split(rows)}",
                )
            )
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "a cluster with TMA multicast is implemented for the warp-specialized mainloop "
                "only; legal: true (or cluster [1, 1])",
            )
        )
    return out


def direct_chunk_cols(n: int) -> int:
    """Columns per direct-epilogue chunk: the largest power of two up to EPI_MAX_COLS that
    divides N (64 for N = 128, 192, 256; 16 for N = 112 or 208, so 7 or 13 chunks)."""
    cols = EPI_MAX_COLS
    while n % cols:
        cols //= 2
    return cols


def direct_epilogue_covers(n: int) -> bool:
    """Whether N columns split into whole power-of-two chunks of at least min(16, N) columns,
    each one tcgen05.ld repetition."""
    return direct_chunk_cols(n) >= min(16, n)


def epilogue_violations(spec: Spec) -> list[Violation]:
    """The direct epilogue reads TMEM in power-of-two chunks; the TMA-store epilogue stores 128x64
    sub-tiles. Both fuse alpha, beta, a row or column bias and relu / gelu_tanh / silu, and write
    f16, bf16 or f32 (templates/common/fusion.py.j2)."""
    out: list[Violation] = []
    n = spec.tile.n
    direct = not isinstance(spec.epilogue, TmaStoreEpilogue)
    # (an illegal MMA shape is reported once, by the tile rule)
    if direct and tcgen05_f16_shape_ok(spec.tile.m, n) and not direct_epilogue_covers(n):
        out.append(
            Violation(
                "tile",
                f"the direct epilogue reads TMEM in power-of-two chunks of 16-64 columns, one "
                f"tcgen05.ld each; tile N={n} does not split into such chunks; legal: N a "
                "power of two up to 64, or a multiple of 16",
            )
        )
    if isinstance(spec.epilogue, TmaStoreEpilogue) and spec.tile.n % EPI_COLS_NARROW:
        out.append(
            Violation(
                "epilogue",
                f"the TMA-store epilogue stores {EPI_TILE[1]}- or {EPI_COLS_NARROW}-column "
                f"sub-tiles; tile N={spec.tile.n} is not a multiple of {EPI_COLS_NARROW}; legal: "
                f"N a multiple of {EPI_COLS_NARROW}, or epilogue 'direct'",
            )
        )
    return out


def tma_store_row_violations(spec: Spec) -> list[Violation]:
    """A 128-row TMA-store sub-tile wider than one 128B swizzle atom (64 f32 columns, 256 bytes)
    is stored as one 128-row box per atom (epi_tma_boxes); the 64-row sub-tile of an M=64 tile
    is not laid out that way yet, so its row must fit one atom, one TMA box wide."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue) or epi_tile(spec)[0] == EPI_TILE[0]:
        return []
    out = spec.epilogue.out_dtype or spec.dtype
    row = epi_cols(spec) * DTYPE_BYTES[out]
    if row <= EPI_SWIZZLE_BYTES:
        return []
    return [
        Violation(
            "epilogue",
            f"out_dtype={out} with the TMA-store epilogue is not implemented for sm_100a yet (a "
            f"{epi_cols(spec)}-column sub-tile row is {row} bytes, wider than one "
            f"{EPI_SWIZZLE_BYTES}-byte swizzle atom); legal: epilogue 'direct', a 16-bit "
            "out_dtype (bf16, f16), or a 128-row tile",
        )
    ]


def scheduler_violations(spec: Spec) -> list[Violation]:
    """The persistent and dynamic schedulers need dedicated epilogue warps (warp specialization),
    and with beta through the TMA store an even number of sub-tiles per tile (odd_subtiles); the
    persistent grid needs at least one worker's worth of SMs."""
    if not is_persistent(spec):
        return []
    out: list[Violation] = []
    kind = spec.scheduler.kind
    if not spec.warp_specialized:
        out.append(
            Violation(
                "scheduler",
                f"scheduler '{kind}' needs warp_specialized = true (dedicated epilogue warps "
                "drain one tile while the MMA warp runs the next); legal: grid",
            )
        )
    if odd_subtiles(spec) and loads_c_by_tma(spec):
        out.append(
            Violation(
                "scheduler",
                f"scheduler '{kind}' with beta through the TMA-store epilogue needs an even number "
                f"of sub-tiles per tile (the C loads' barrier phase then repeats per tile); tile "
                f"N={spec.tile.n} gives {epi_subtiles(spec)}; legal: N a multiple of "
                f"{EPI_BUFS * EPI_TILE[1]}, or beta = 0",
            )
        )
    if isinstance(spec.scheduler, PersistentScheduler) and max_workers(spec) < 1:
        size = spec.cluster.size
        unit = "CTA pair" if cluster_kind(spec) == "pair" else "cluster"
        out.append(
            Violation(
                "scheduler",
                f"scheduler sm_count={spec.scheduler.sm_count} is fewer than the {size} SMs one "
                f"{unit} occupies; legal: at least {size}",
            )
        )
    return out


def dynamic_violations(spec: Spec) -> list[Violation]:
    """The dynamic scheduler is implemented for one CTA: a cluster would need the answer multicast
    to every CTA (try_cancel.multicast) and every CTA's readers released on rank 0's barrier."""
    if not is_dynamic(spec) or spec.cluster.size == 1:
        return []
    return [
        Violation(
            "cluster",
            f"cluster {spec.cluster.m}x{spec.cluster.n} with scheduler 'dynamic' is not "
            "implemented for sm_100a yet (the cancelled cluster's tile would have to reach every "
            "CTA); legal: cluster [1, 1] with cta_group = 1",
        )
    ]


def splitk_violations(spec: Spec) -> list[Violation]:
    """Split K runs on a (splits, 1, 1) cluster of 1-CTA MMAs: splits a power of two that fits a
    portable cluster, no spec cluster or CTA pair beside it, and (as implemented) the direct
    epilogue, which rank 0 runs after the DSMEM reduction."""
    if not shared.is_split_k_cluster(spec):
        return []
    out: list[Violation] = []
    n = spec.scheduler.splits
    if not is_power_of_two(n) or not 2 <= n <= SPLITK_MAX:
        out.append(
            Violation(
                "scheduler",
                f"split_k splits={n}: the K range is split over the CTAs of one cluster, so "
                f"splits must be a power of two in [2, {SPLITK_MAX}]; legal: 2, 4, 8",
            )
        )
    if spec.cta_group != 1:
        out.append(
            Violation(
                "cta_group",
                f"cta_group={spec.cta_group} with scheduler split_k is not implemented for "
                "sm_100a (split-K's cluster is the K split; each CTA runs 1-CTA MMAs); legal: 1",
            )
        )
    elif spec.cluster.size > 1:
        out.append(shared.splitk_cluster_violation(spec, n))
    if not isinstance(spec.epilogue, DirectEpilogue):
        out.append(
            Violation(
                "epilogue",
                f"epilogue {spec.epilogue.style!r} with scheduler split_k is not implemented for "
                "sm_100a yet (rank 0 stores the reduced tile with the direct epilogue); legal: "
                "direct",
            )
        )
    return out


def streamk_violations(spec: Spec) -> list[Violation]:
    """Stream-K as implemented on sm_100a: single CTAs (cta_group 1, cluster [1, 1]) running
    their share of the MAC iterations with 1-CTA MMAs, each finisher fixing its tile up through
    the global workspace; plain stores (the fused epilogues are not wired to the fix-up yet) in
    C's own orientation (no swap_ab)."""
    if not shared.is_stream_k(spec):
        return []
    out: list[Violation] = []
    if spec.cta_group != 1:
        out.append(
            Violation(
                "cta_group",
                f"cta_group={spec.cta_group} with scheduler stream_k is not implemented for "
                "sm_100a (each CTA runs its own share of the MAC iterations with 1-CTA MMAs); "
                "legal: 1",
            )
        )
    elif spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} with scheduler stream_k is not "
                "implemented for sm_100a (each CTA runs its own share of the MAC iterations, so "
                "cluster peers would load different tiles); legal: [1, 1]",
            )
        )
    if spec.epilogue.fused:
        out.append(
            Violation(
                "epilogue",
                "a fused epilogue (alpha, beta, bias, activation) with scheduler stream_k is not "
                "implemented for sm_100a yet; legal: a plain store (alpha = 1, beta = 0, bias = "
                "'none', activation = 'none')",
            )
        )
    if spec.swap_ab:
        out.append(
            Violation(
                "swap_ab",
                "swap_ab with scheduler stream_k is not implemented for sm_100a yet; legal: false",
            )
        )
    return out


def splitk_reduce_violations(spec: Spec) -> list[Violation]:
    """reduce = "separate" on sm_100a: the workspace and reduce-kernel limits of sm_90a, plus what
    its GEMM kernel implements: one CTA per (tile, K share) with 1-CTA MMAs (cta_group 1, no
    cluster), the direct epilogue's TMEM -> registers copy, and M=128 tiles (a thread's row)."""
    if not shared.is_split_k_separate(spec):
        if shared.is_split_k_cluster(spec) and spec.scheduler.max_tiles is not None:
            return [
                Violation(
                    "scheduler",
                    f"split_k max_tiles={spec.scheduler.max_tiles} sizes the workspace of "
                    'reduce = "separate"; the cluster reduction has none: remove max_tiles',
                )
            ]
        return []
    out = shared.splitk_separate_violations(spec)
    if spec.cta_group != 1 or spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f"cta_group={spec.cta_group}, cluster {spec.cluster.m}x{spec.cluster.n} with "
                'split_k reduce = "separate" is not implemented for sm_100a (one CTA per tile '
                "and K share, 1-CTA MMAs); legal: cta_group = 1, cluster [1, 1]",
            )
        )
    if not isinstance(spec.epilogue, DirectEpilogue):
        out.append(
            Violation(
                "epilogue",
                f'epilogue {spec.epilogue.style!r} with split_k reduce = "separate" is not '
                "implemented for sm_100a (the GEMM kernel stores f32 partials, the reduce kernel "
                "stores C); legal: direct",
            )
        )
    if spec.swap_ab:
        out.append(
            Violation(
                "swap_ab",
                'swap_ab with split_k reduce = "separate" is not implemented for sm_100a yet (the '
                "slot of C^T is column-major: a thread's accumulator row would be strided); "
                "legal: false",
            )
        )
    if spec.tile.m != 128:
        out.append(
            Violation(
                "tile",
                f'tile M={spec.tile.m} with split_k reduce = "separate" is not implemented for '
                "sm_100a yet (each epilogue thread stores one whole accumulator row to the "
                "workspace slot); legal: tile M=128",
            )
        )
    return out


def splitk_tile_violations(spec: Spec) -> list[Violation]:
    """Split-K stages each epilogue thread's whole accumulator row (TN f32 values, in 16-byte runs)
    for rank 0: an M=64 tile gives a thread half a row (tcgen05.ld 16x32bx2), which the staging
    does not lay out (with it, rank 0 would read no peer partial at all)."""
    if not shared.is_split_k_cluster(spec) or (spec.tile.m, spec.cta_group) != (64, 1):
        return []
    return [
        Violation(
            "tile",
            f"tile M={spec.tile.m} with scheduler split_k is not implemented for sm_100a yet (the "
            "DSMEM staging holds one whole accumulator row per epilogue thread; an M=64 tile "
            "gives each thread half a row); legal: tile M=128",
        )
    ]


def accumulator_violations(spec: Spec) -> list[Violation]:
    """Two TMEM accumulator slots overlap one tile's epilogue with the next tile's MMAs: only a
    persistent CTA has a next tile."""
    if spec.accumulators == 1 or is_persistent(spec):
        return []
    return [
        Violation(
            "accumulators",
            f"accumulators={spec.accumulators} double-buffers the TMEM accumulator across the "
            'tiles of a persistent CTA: it needs scheduler = "persistent"; legal: 1 with the '
            "grid scheduler",
        )
    ]


# an MN-major operand's SMEM atom: 128 bytes of M (N) x 8 rows of K (MN_SW128); a CTA's rows of
# that operand must hold whole atoms
MN_ATOM_BYTES = 128


def mn_major_operands(spec: Spec) -> tuple[bool, bool]:
    """Whether the kernel's A and B are MN-major: the user's (a_major, b_major), exchanged by swap
    AB (the kernel's A is the user's B)."""
    a, b = spec.a_major == "mn", spec.b_major == "mn"
    return (b, a) if spec.swap_ab else (a, b)


def layout_violations(spec: Spec) -> list[Violation]:
    """The operands' major modes. tcgen05.mma reads K- or MN-major SMEM operands for every dtype
    these kernels take (kind::f16 and kind::f8f6f4 with 8-bit e4m3; only sub-byte types would need
    K-major). An MN-major operand is staged in 128-byte swizzle atoms along its M (N): the rows
    of it one CTA holds (tile M, or N for B; half of each in a CTA pair) must hold whole atoms.
    As implemented, without TMA multicast (a multicast slice of an MN-major tile is not built)."""
    a_mn, b_mn = mn_major_operands(spec)
    if not (a_mn or b_mn):
        return []
    out: list[Violation] = []
    knob_a, knob_b = ("b_major", "a_major") if spec.swap_ab else ("a_major", "b_major")
    atom = MN_ATOM_BYTES // DTYPE_BYTES[spec.dtype]
    a_rows, b_rows = operand_rows_per_cta(spec)
    for mn, knob, rows, side in ((a_mn, knob_a, a_rows, "A"), (b_mn, knob_b, b_rows, "B")):
        if mn and rows % atom:
            swapped = f" (swap AB: the kernel's {side})" if spec.swap_ab else ""
            out.append(
                Violation(
                    knob,
                    f"{knob}=mn{swapped}: an MN-major operand is staged in {MN_ATOM_BYTES}-byte "
                    f"swizzle atoms along its M or N, so the {rows} rows of {side} a CTA holds "
                    f'must be a multiple of {atom}; legal: such a tile, or {knob}="k"',
                )
            )
    if cluster_kind(spec) == "multicast":
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} (TMA multicast) with an MN-major "
                "operand is not implemented on sm_100a; legal: cluster [1, 1], a CTA pair "
                '(cta_group = 2, cluster [2, 1]), or K-major operands (a_major = b_major = "k")',
            )
        )
    return out


# the argument kinds of an epilogue function (codegen/epilogue_fn.py) each epilogue style gives
_ALL_KINDS = frozenset({"acc", "scalar", "device_scalar", "row", "col", "tile"})
EPILOGUE_FN_KINDS: dict[str, frozenset[str]] = {"direct": _ALL_KINDS | {"gate", "up"}}


def gated_violations(spec: Spec) -> list[Violation]:
    """A gated pair (Gate, Up; codegen/epilogue_fn.py) in the direct epilogue: each thread loads
    whole runs of its row from TMEM (32x32b: a 128-row accumulator per CTA), so a gate column's
    up partner sits 8 values on in the same chunk when every chunk holds whole blocks of 8 gate
    and 8 up columns. C (M, N / 2) is seen through an (M, N) view whose up columns alias their
    gate's (templates/common/epifn.py.j2), built by the host for the persistent schedulers' tile
    count. Not implemented: swap AB (the pairs would be rows, one per thread), 64-row
    accumulators (16x32bx2: half a row per thread), other schedulers."""
    fn = spec.epilogue.fn
    if fn is None or not any(kind == "gate" for _, kind in fn.args):
        return []
    what = f"fn {fn.name} is a gated pair (Gate, Up)"
    if spec.swap_ab:
        return [Violation("swap_ab", f"{what}: not implemented with swap AB on sm_100a (the "
                          "pairs would be the kernel's rows, in different threads); legal: "
                          "swap_ab = false")]  # fmt: skip
    if tmem_load_shape(spec) != "32x32b":
        return [Violation("tile", f"{what}: needs a thread's whole row per TMEM load (a 128-row "
                          f"accumulator per CTA); tile M={spec.tile.m} with cta_group "
                          f"{spec.cta_group} gives half rows; legal: 128 rows per CTA")]  # fmt: skip
    if spec.cluster.size > 1:
        return [Violation("cluster", f"{what}: implemented without clusters on sm_100a (the "
                          "cluster tile count reads C's flat shape); legal: cluster [1, 1]")]  # fmt: skip
    if type(spec.scheduler) is not PersistentScheduler:
        return [Violation("scheduler", f"{what}: implemented with the static persistent "
                          "scheduler only on sm_100a; legal: scheduler persistent")]  # fmt: skip
    cols, _ = epilogue_chunks(spec) if direct_epilogue_covers(spec.tile.n) else (0, 0)
    if cols % 16:
        return [Violation("tile", f"{what}: each TMEM chunk must hold whole blocks of 8 gate and "
                          f"8 up columns; tile N={spec.tile.n} loads {cols}-column chunks; legal: "
                          "tile N a multiple of 16")]  # fmt: skip
    return []


def row_sumsq_violations(spec: Spec) -> list[Violation]:
    """row_sumsq in the direct epilogue: after its TMEM load each thread holds one accumulator row
    (32x32b: 128 accumulator rows per CTA), so a row's sum is one thread's (a column's, with swap
    AB, one warp's butterfly); 64-row accumulators (16x32bx2) split a row over two threads."""
    out = shared.row_sumsq_violations(spec, ("direct",), ("grid", "persistent", "dynamic"))
    if spec.epilogue.row_sumsq and not out and tmem_load_shape(spec) != "32x32b":
        out.append(
            Violation(
                "epilogue.row_sumsq",
                f"row_sumsq needs a whole accumulator row per thread (a 128-row accumulator per "
                f"CTA); tile M={spec.tile.m} with cta_group {spec.cta_group} gives half rows "
                "(16x32bx2); legal: 128 rows per CTA",
            )
        )
    return out


def block_quant_violations(spec: Spec) -> list[Violation]:
    """block_quant in the direct epilogue: after its 32x32b TMEM loads each thread holds one
    whole accumulator row (128 accumulator rows per CTA), so a block's amax is one thread's own
    max (no shuffles); the thread keeps a block's chunks in registers until its amax is known,
    then scales, converts and stores them. 64-row accumulators (16x32bx2) split a row over two
    threads; the TMA-store epilogue stores sub-tiles through SMEM."""
    out = shared.block_quant_violations(spec, ("direct",), ("grid", "persistent", "dynamic"))
    if spec.epilogue.block_quant is not None and not out and tmem_load_shape(spec) != "32x32b":
        out.append(
            Violation(
                "epilogue.block_quant",
                f"block_quant needs a whole accumulator row per thread (a 128-row accumulator "
                f"per CTA); tile M={spec.tile.m} with cta_group {spec.cta_group} gives half rows "
                "(16x32bx2); legal: 128 rows per CTA",
            )
        )
    return out


# row_sumsq with swap AB: the kernel rows (the user's columns) one epilogue warp holds, its TMEM
# lane quarter; the warp adds a column's values over its lanes and writes one partial
ROW_SUMSQ_WARP_ROWS = TMEM_LANES // EPILOGUE_WARPS
# ... through a butterfly over the warp's 32 lanes: these lane offsets
ROW_SUMSQ_SHUFFLES = (16, 8, 4, 2, 1)


def row_partials_per_tile(spec: Spec) -> int:
    """row_sumsq: the partials one output tile writes per row of the user's C. Without swap AB
    each epilogue thread holds one accumulator row (32x32b) and adds its own values over every
    chunk: one partial per tile. With swap AB the user's row is the kernel's column, one value
    per thread of every epilogue warp: each warp adds its 32 lanes' values (a butterfly) and
    writes its own partial, one per ROW_SUMSQ_WARP_ROWS rows of the tile."""
    return spec.tile.m // ROW_SUMSQ_WARP_ROWS if spec.swap_ab else 1


def row_partial_count(spec: Spec, n: int) -> int:
    """row_sumsq's P for the user's N: the tiles along N (with swap AB along the kernel's M, the
    user's N) times row_partials_per_tile."""
    tile = spec.tile.m if spec.swap_ab else spec.tile.n
    return -(-n // tile) * row_partials_per_tile(spec)


# the kinds an epilogue function gets after the K reduction it implements one after, in the
# same direct epilogue per TMEM chunk: split-K over a cluster (rank 0, after adding the peers'
# staged partials); not stream-K (no fused epilogue there yet) nor the separate reduce kernel
EPILOGUE_FN_AFTER_REDUCE: dict[str, frozenset[str]] = {"cluster": _ALL_KINDS}


def check(spec: Spec) -> list[Violation]:
    """Every sm_100a rule the spec breaks, in the order of the spec's fields."""
    out = shape_violations(spec) + m64_violations(spec) + tmem_violations(spec)
    out += fp8_violations(spec)
    if spec.consumer_warpgroups is not None:
        out.append(
            Violation(
                "consumer_warpgroups",
                "consumer_warpgroups is a Hopper (sm_90a) knob; on sm_100a one thread issues "
                "the MMA: remove it",
            )
        )
    out += cta_pair_violations(spec)
    out += accumulator_violations(spec)
    out += multicast_violations(spec)
    out += epilogue_violations(spec)
    out += shared.runtime_scalar_violations(spec)
    out += shared.epilogue_fn_violations(spec, EPILOGUE_FN_KINDS, EPILOGUE_FN_AFTER_REDUCE)
    out += gated_violations(spec)
    out += row_sumsq_violations(spec)
    out += block_quant_violations(spec)
    out += tma_store_row_violations(spec)
    out += scheduler_violations(spec)
    out += dynamic_violations(spec)
    out += splitk_violations(spec)
    out += splitk_tile_violations(spec)
    out += streamk_violations(spec)
    out += splitk_reduce_violations(spec)
    out += layout_violations(spec)
    if spec.consumer_mode != "cooperative":
        out.append(Violation("consumer_mode", "consumer_mode=pingpong is a Hopper (sm_90a) knob"))
    if spec.ctas_per_sm != 1:
        out.append(
            Violation(
                "ctas_per_sm",
                f"ctas_per_sm={spec.ctas_per_sm} (two CTAs of the kernel resident on one SM) is "
                "implemented for sm_90a only; legal on sm_100a: 1",
            )
        )
    return out
