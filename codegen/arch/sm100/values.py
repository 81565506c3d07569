"""Plan of a Blackwell (sm_100a) kernel: every value its templates print.

The partials are chosen here (:func:`partials`), one per family: ``cluster/`` (single,
multicast, pair, split), ``scheduler/`` (grid, persistent, dynamic), ``reduce/`` (cluster,
separate, stream_k; in the scheduler's place), ``mainloop/`` (kloop, ws, ws_persistent), ``mma/``
(f16, f8f6f4), ``operands/`` (plain, swap) and ``epilogue/`` (direct, tma, partial); README.md's
"Template families" says why the families are cut this way on both architectures. Every number
comes from :mod:`codegen.arch.sm100.rules`; the docstring's Pipeline table from
:mod:`codegen.arch.sm100.docs` (its prose is templates/sm100/_docs.py.j2's).

The values are one frozen :class:`Sm100Values` of frozen groups of required fields, each built
directly by one function: one per concern every kernel has (the warps, the tcgen05 MMA and its
TMEM, the ring, the cluster, the epilogue's TMEM drain) and one per feature a variant may lack (a
bias, a TMA-store epilogue, persistent warp roles, a static tile order, each scheduler's own
values, a CTA pair, a multicast cluster), None where the variant has no such feature.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from codegen import plan_common, rules_common
from codegen.arch import shared
from codegen.arch.sm100 import docs
from codegen.arch.sm100 import rules as rules_sm100
from codegen.arch.sm100.rules import (
    DSMEM_VECTOR_BYTES,
    EPI_BARRIER_ID,
    EPI_WARP0,
    PAIR_MASK,
    cluster_kind,
    epilogue_chunks,
    is_persistent,
    is_tma_store,
    streamk_handover_vectors,
    values_per_thread,
)
from codegen.plan_common import Docs, SmemRing, Tensors, TileOrder, Workers, binary
from codegen.spec import PersistentScheduler, Spec, SplitKScheduler

# the SMEM swizzle atom of a K-major tile by swizzle width, as tcgen05.SmemLayoutAtomKind names it
K_SWIZZLE_ATOM = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}
# the same swizzles with the contiguous axis along M (a swap_ab C^T sub-tile)
MN_SWIZZLE_ATOM = {"32B": "MN_SW32", "64B": "MN_SW64", "128B": "MN_SW128"}


@dataclass(frozen=True, kw_only=True)
class Sm100Docs(Docs):
    """What only the kernel's docstring prints (``plan.docs``), with the SMEM and TMEM budget."""

    budget_lines: list[str]


@dataclass(frozen=True, kw_only=True)
class Warps:
    """The CTA's warps and their roles (``plan.warps``)."""

    count: int  # the CTA's warps
    threads: int
    tma: int  # the warp that issues the TMA loads (and initializes the barriers)
    mma: int  # the warp that issues the MMAs (warp-specialized)
    specialized: bool  # TMA and MMA in warps of their own


@dataclass(frozen=True, kw_only=True)
class Tcgen05:
    """The tcgen05 MMA and its TMEM accumulator (``plan.mma``)."""

    inst: tuple[int, int, int]  # one instruction's M, N, K
    kind: str  # f16 or f8f6f4
    # the CTAs one MMA spans (its cta_group), as tcgen05.CtaGroup names them: ONE, or TWO for a
    # CTA pair
    cta_group: str
    tmem_cols: int
    tmem_lanes: int  # one CTA's accumulator rows


@dataclass(frozen=True, kw_only=True)
class Sm100Ring(SmemRing):
    """The A/B SMEM ring (``plan.ring``)."""

    stage_bytes: int  # A + B bytes of one stage in one CTA
    # the operands' SMEM swizzle atom (tcgen05.SmemLayoutAtomKind): K-major, the spec's swizzle
    swizzle_atom: str
    a_atom: str  # the kernel's A's: swizzle_atom when K-major, MN_SW128 when MN-major
    b_atom: str
    a_order: tuple[int, int, int]  # tile_to_mma_shape's order: (1, 2, 3) K-major, (2, 1, 3) MN
    b_order: tuple[int, int, int]


@dataclass(frozen=True, kw_only=True)
class Sm100Cluster:
    """The cluster (``plan.cluster``): how the CTAs cooperate and the shape they launch with."""

    kind: str  # single, multicast, pair or split (rules.cluster_kind)
    shape: tuple[int, int, int]  # one CTA, split-K's (splits, 1, 1), or the spec's
    spec_shape: tuple[int, int]  # the spec's cluster (M, N)
    # the direct epilogue's M and N multiples span a cluster of tiles
    covers_clusters: bool


@dataclass(frozen=True, kw_only=True)
class Epilogue:
    """How every epilogue drains the f32 accumulator from TMEM (``plan.epilogue``): in chunks of
    accumulator columns, one tcgen05.ld each, then converted and stored."""

    cols: int  # accumulator columns one tcgen05.ld moves
    chunks: int  # the loads per tile
    last_chunk: int
    ld_repetition: str  # the tcgen05.ld repetition of one chunk
    cols_note: str
    lanes: str
    plain: bool  # no fusion: convert and store, the lines the unfused kernels have always had
    store_dtype: str  # the constant naming C's dtype: IO_DTYPE or OUT_DTYPE
    style: str  # the spec's: direct or tma
    # the tcgen05.ld shape (and its copy op, tcgen05.Ld<shape>Op): 32x32b, or 16x32bx2 for 64 rows
    tmem_load_shape: str


@dataclass(frozen=True, kw_only=True)
class BiasView:
    """How the kernel sees the 1-D bias (templates/sm100/epilogue/_bias.py.j2, ``plan.bias_view``):
    as an (M, N) tensor with stride 0 along the dimension it does not run along, tiled like C."""

    stride: tuple[int, int]
    broadcast_dim: str  # the dimension of stride 0
    note: str
    predicated: bool  # the TMA-store epilogue takes partial tiles: its bias loads check M and N


@dataclass(frozen=True, kw_only=True)
class TmaStore:
    """The TMA-store epilogue's C sub-tiles (templates/sm100/epilogue/tma.py.j2, ``plan.epi_tma``):
    TMEM -> registers -> an SMEM buffer -> a TMA store, one sub-tile at a time."""

    tile: tuple[int, int]  # one C sub-tile (rows, columns)
    tile_str: str
    tile_cols: int
    tile_note: str
    subtiles: int  # sub-tiles per output tile
    bufs: int  # SMEM sub-tile buffers
    swizzle_atom: str  # the sub-tiles' SMEM swizzle atom (tcgen05.SmemLayoutAtomKind)
    swizzle_atom_note: str
    host_atom_note: str
    tile_order: tuple[int, int, int]
    repetition: str  # the tcgen05.ld repetition of one sub-tile row
    t2r_note: str
    c_tx_bytes: int  # one C sub-tile TMA-loaded for beta
    # a tile ends on the buffer the next one starts on: wait for its last store (odd_subtiles)
    drain_tile: bool


@dataclass(frozen=True, kw_only=True)
class PersistentRoles:
    """The warp roles of a CTA that loops over tiles (``plan.roles``; every scheduler but grid):
    the dedicated epilogue warps and the TMEM accumulator slots they hand back to the MMA warp."""

    epi_warp0: int  # the first epilogue warp
    epi_warps: int
    epi_warps_range: str  # in prose: "4-7"
    epi_threads: int
    epi_barrier_id: int  # the epilogue warps' named barrier
    acc_slots: int
    acc_empty_arrives: int
    acc_empty_note: str
    slot_cols: int  # TMEM columns of one accumulator slot: TN


@dataclass(frozen=True, kw_only=True)
class Sm100TileOrder(TileOrder):
    """The static order a CTA walks its tiles in (``plan.order``; templates/sm100/scheduler/
    _tile_loop.py.j2): static persistent, and split-K (along M, no swizzle)."""

    note: str
    group_note: str
    cluster_tiles: bool  # a multicast cluster walks cluster tiles, one tile per CTA
    tile_unit: str  # in prose: "tiles" or "cluster tiles"


@dataclass(frozen=True, kw_only=True)
class Clc:
    """The dynamic scheduler's cluster launch control (``plan.clc``): the hardware's answer and
    the warps that read it."""

    response_bytes: int  # try_cancel's answer: the tx bytes clc_full expects per request
    readers: int  # clc_empty arrives per answer
    readers_note: str


@dataclass(frozen=True, kw_only=True)
class SplitKCluster:
    """Split-K reduced over a cluster through DSMEM (``plan.splitk``): the staged / consumed
    handshake between the peers and rank 0."""

    staged_arrives: int
    staged_note: str
    consumed_arrives: int
    consumed_note: str
    stage_vec: int  # f32 per 16-byte staging run


@dataclass(frozen=True, kw_only=True)
class Sm100StreamK(shared.StreamK):
    """Stream-K's workspace (``plan.sk``) and how one epilogue chunk maps onto a slot."""

    values: int  # f32 one epilogue thread holds of a tile
    chunk_vecs: int  # 16-byte vectors of one thread per epilogue chunk
    chunk_vecs_note: str


@dataclass(frozen=True, kw_only=True)
class CtaPair:
    """A CTA pair running one 2-CTA MMA (``plan.pair``; templates/sm100/cluster/pair.py.j2)."""

    mask: str  # both CTAs, as a binary literal
    cta_rows: int  # the rows of the tile each CTA loads: TM / 2
    b_rows: int  # the rows of B each CTA loads: TN / 2
    cols: int  # the accumulator's columns: TN


@dataclass(frozen=True, kw_only=True)
class Multicast:
    """A cluster that multicasts A along its rows and B along its columns (``plan.mcast``;
    templates/sm100/cluster/multicast.py.j2)."""

    cluster_m: int
    cluster_n: int
    a_mask: str  # the CTAs an A tile lands in, as a binary literal
    b_mask: str
    empty_arrives: int  # commits that free a ring slot
    empty_arrives_note: str
    a_ctas: int  # the CTAs one A tile is multicast to
    b_ctas: int


@dataclass(frozen=True, kw_only=True)
class Sm100Values(shared.SeparateReduceValues):
    """Every value the sm_100a templates read as ``plan.NAME`` or, in a group, ``plan.GROUP.NAME``
    (tests/test_plan_fields.py checks that each name a template reads is a field); a group is
    None where the variant has no such feature (tests/test_plan_groups.py)."""

    docs: Sm100Docs
    warps: Warps
    mma: Tcgen05
    ring: Sm100Ring
    cluster: Sm100Cluster
    epilogue: Epilogue
    bias_view: BiasView | None = None  # with a bias
    epi_tma: TmaStore | None = None  # the TMA-store epilogue's
    roles: PersistentRoles | None = None  # a CTA that loops over tiles
    order: Sm100TileOrder | None = None  # a static tile order
    clc: Clc | None = None  # the dynamic scheduler's
    splitk: SplitKCluster | None = None  # split-K's over a cluster
    sk: Sm100StreamK | None = None  # stream-K's
    pair: CtaPair | None = None  # a CTA pair's
    mcast: Multicast | None = None  # a multicast cluster's


def scheduler_kind(spec: Spec) -> str:
    """The scheduler as the docstring tells it: split-K by its reduce, else the spec's kind."""
    if shared.is_split_k_cluster(spec):
        return "split_k"
    if shared.is_split_k_separate(spec):
        return "split_k_separate"
    return spec.scheduler.kind


def covers_clusters(spec: Spec) -> bool:
    """The direct epilogue's shape multiples span a cluster of tiles, not one tile."""
    multiples = rules_sm100.shape_multiples(spec)
    return multiples["M"] * multiples["N"] > spec.tile.m * spec.tile.n


def cluster(spec: Spec) -> Sm100Cluster:
    """The cluster: one CTA, split-K's (splits, 1, 1), or the spec's (a CTA pair, multicast)."""
    kind = cluster_kind(spec)
    if kind == "single":
        shape = (1, 1, 1)
    elif kind == "split":
        shape = (shared.splits(spec), 1, 1)
    else:
        shape = (spec.cluster.m, spec.cluster.n, 1)
    return Sm100Cluster(
        kind=kind,
        shape=shape,
        spec_shape=(spec.cluster.m, spec.cluster.n),
        covers_clusters=covers_clusters(spec),
    )


def warps(spec: Spec) -> Warps:
    """The CTA's warps: TMA, MMA (warp-specialized) and the epilogue's."""
    return Warps(
        count=rules_sm100.PERSISTENT_WARPS if is_persistent(spec) else rules_sm100.EPILOGUE_WARPS,
        threads=(EPI_WARP0 + rules_sm100.EPILOGUE_WARPS if is_persistent(spec) else 4) * 32,
        tma=rules_sm100.TMA_WARP,
        mma=rules_sm100.MMA_WARP,
        specialized=spec.warp_specialized,
    )


def tcgen05(spec: Spec) -> Tcgen05:
    """The MMA instruction (a CTA pair's with cta_group 2) and its TMEM accumulator."""
    return Tcgen05(
        inst=(spec.tile.m, spec.tile.n, rules_common.mma_k(spec.dtype)),
        kind=rules_sm100.mma_kind(spec),
        cta_group="TWO" if spec.cta_group == 2 else "ONE",
        tmem_cols=rules_sm100.spec_tmem_columns(spec),
        tmem_lanes=rules_sm100.TMEM_LANES,
    )


def ring(spec: Spec) -> Sm100Ring:
    """One stage of the A/B ring and its SMEM layout atom."""
    assert isinstance(spec.stages, int)
    k_atom = K_SWIZZLE_ATOM[str(spec.swizzle)]
    a_mn, b_mn = rules_sm100.mn_major_operands(spec)
    # an MN-major operand's atom runs along M (N), 128 bytes wide (rules_sm100.layout_violations),
    # and the tile is built along M (N) first
    mn_atom, mn_order, k_order = MN_SWIZZLE_ATOM["128B"], (2, 1, 3), (1, 2, 3)
    return Sm100Ring(
        stages=spec.stages,
        tx_bytes=rules_sm100.full_tx_bytes(spec),
        stage_bytes=rules_sm100.stage_bytes(spec),
        swizzle_atom=k_atom,
        a_atom=mn_atom if a_mn else k_atom,
        b_atom=mn_atom if b_mn else k_atom,
        a_order=mn_order if a_mn else k_order,
        b_order=mn_order if b_mn else k_order,
    )


def cta_pair(spec: Spec) -> CtaPair | None:
    """What the CTA-pair cluster partial prints."""
    if cluster_kind(spec) != "pair":
        return None
    t = spec.tile
    return CtaPair(mask=binary(PAIR_MASK, 2), cta_rows=t.m // 2, b_rows=t.n // 2, cols=t.n)


def multicast(spec: Spec) -> Multicast | None:
    """What the multicast cluster partial prints: the multicast masks and the arrive count that
    frees a ring slot."""
    if cluster_kind(spec) != "multicast":
        return None
    a_mask, b_mask = rules_sm100.multicast_masks(spec)
    a_ctas, b_ctas = rules_sm100.multicast_ctas(spec)
    return Multicast(
        cluster_m=spec.cluster.m,
        cluster_n=spec.cluster.n,
        a_mask=binary(a_mask, spec.cluster.size),
        b_mask=binary(b_mask, spec.cluster.size),
        empty_arrives=rules_sm100.empty_arrives(spec),
        empty_arrives_note=(
            f"commits that free a slot: this CTA's and its sharers' ({a_ctas} + {b_ctas} - 1)"
        ),
        a_ctas=a_ctas,
        b_ctas=b_ctas,
    )


def persistent_roles(spec: Spec) -> PersistentRoles | None:
    """What every persistent scheduler or reduce partial prints (persistent, dynamic, split-K,
    stream-K): the epilogue warps and the TMEM accumulator slots they hand back to the MMA warp."""
    if not is_persistent(spec):
        return None
    warps = rules_sm100.EPILOGUE_WARPS
    return PersistentRoles(
        epi_warp0=EPI_WARP0,
        epi_warps=warps,
        epi_warps_range=rules_sm100.EPI_WARPS_RANGE,
        epi_threads=32 * warps,
        epi_barrier_id=EPI_BARRIER_ID,
        acc_slots=spec.accumulators,
        acc_empty_arrives=rules_sm100.acc_empty_arrives(spec),
        acc_empty_note=(
            f"one per epilogue warp of both CTAs ({warps} x 2), on the leader's barrier"
            if cluster_kind(spec) == "pair"
            else f"one per epilogue warp ({warps})"
        ),
        slot_cols=spec.tile.n,
    )


def clc(spec: Spec) -> Clc | None:
    """What the dynamic (cluster launch control) scheduler partial prints."""
    if not rules_sm100.is_dynamic(spec):
        return None
    readers = rules_sm100.clc_readers(spec)
    return Clc(
        response_bytes=rules_sm100.CLC_RESPONSE_BYTES,
        readers=readers,
        readers_note=f"clc_empty arrives per answer: producer, MMA, {readers - 2} epilogue warps",
    )


def splitk_cluster(spec: Spec) -> SplitKCluster | None:
    """What the split-K reduce partial (sm100/reduce/cluster.py.j2) prints: the staged / consumed
    handshake of the DSMEM reduction (its tile loop is plan.order's)."""
    if not shared.is_split_k_cluster(spec):
        return None
    warps = rules_sm100.EPILOGUE_WARPS
    peers = shared.splits(spec) - 1
    return SplitKCluster(
        staged_arrives=rules_sm100.staged_arrives(spec),
        staged_note=f"rank 0's staged barrier: every epilogue warp ({warps}) of every peer ({peers})",
        consumed_arrives=rules_sm100.consumed_arrives(spec),
        consumed_note=f"a peer's consumed barrier: every epilogue warp ({warps}) of rank 0",
        stage_vec=DSMEM_VECTOR_BYTES // shared.ACC_BYTES,
    )


def stream_k(spec: Spec) -> Sm100StreamK | None:
    """What the stream-K reduce partial (sm100/reduce/stream_k.py.j2) prints: the workspace (a
    partial-tile slot per CTA, then the flags) and how one epilogue chunk maps onto it."""
    if not shared.is_stream_k(spec):
        return None
    _, chunks = epilogue_chunks(spec)
    vectors = streamk_handover_vectors(spec)
    return Sm100StreamK(
        **shared.stream_k_values(spec, rules_sm100.SM_COUNT),
        values=values_per_thread(spec),
        chunk_vecs=vectors // chunks,
        chunk_vecs_note=(
            f"16-byte vectors of one thread's {values_per_thread(spec) // chunks} f32 per epilogue "
            f"chunk ({chunks} chunk{'s' if chunks > 1 else ''} per tile)"
        ),
    )


def tile_order(spec: Spec) -> Sm100TileOrder | None:
    """The static tile order: the spec's raster and swizzle group (static persistent; a multicast
    cluster walks cluster tiles), or along M without swizzle (split-K, both reduces, and the
    data-parallel + stream-K hybrid: the persistent scheduler's default order)."""
    if isinstance(spec.scheduler, PersistentScheduler):
        fast, group = spec.scheduler.raster, spec.scheduler.group
    elif isinstance(spec.scheduler, SplitKScheduler) or shared.streamk_data_parallel(spec):
        fast, group = "m", 1
    else:
        return None
    clustered = cluster_kind(spec) == "multicast"  # it walks cluster tiles, one tile per CTA
    slow = "n" if fast == "m" else "m"
    shared_operand = "B" if fast == "m" else "A"
    unit = "cluster tiles" if clustered else "tiles"
    note = f"raster along {fast.upper()}: the {unit} running at once share {shared_operand} tiles"
    if group > 1:
        note = (
            f"tile swizzle: bands of GROUP {unit} along {fast.upper()}, walked along {slow.upper()}"
        )
    elif shared.is_split_k_separate(spec):
        note = "tiles along M"
    return Sm100TileOrder(
        fast=fast,
        slow=slow,
        note=note,
        group=group,
        group_note=(
            f"tile swizzle: walk GROUP {unit} along {fast.upper()}, then step along "
            f"{slow.upper()}: the {unit} running at once share A and B tiles in L2"
        ),
        cluster_tiles=clustered,
        tile_unit=unit,
    )


def workers(spec: Spec) -> Workers | None:
    """The persistent grids sized by the GPU's SM count (static persistent, split-K's clusters,
    stream-K); the dynamic scheduler launches the whole tile grid, split-K "separate" a CTA per
    tile and K share, and the grid scheduler a CTA per tile."""
    size = spec.cluster.size
    worker = {"pair": "one CTA pair", "multicast": f"one {size}-CTA cluster"}
    return shared.grid_workers(
        spec,
        (rules_sm100.SM_COUNT, "a B200", (10, 0)),
        rules_sm100.max_workers(spec),
        worker.get(cluster_kind(spec), "one CTA"),
    )


def bias_view(spec: Spec) -> BiasView | None:
    """What the bias views print (templates/sm100/epilogue/_bias.py.j2): the host sees the 1-D
    bias as an (M, N) tensor with stride 0 along the dimension it does not run along, and the
    kernel tiles it like C: one tile (grid) or all tiles, sliced per tile (persistent)."""
    if spec.epilogue.bias == "none":
        return None
    row = plan_common.bias_axis(spec) == "row"  # the kernel's axis (swap_ab swaps the user's)
    dim = "N" if row else "M"
    return BiasView(
        stride=(1, 0) if row else (0, 1),
        broadcast_dim=dim,
        note=f"the bias seen as an (M, N) tensor (stride 0 along {dim}): it tiles and partitions "
        "like C",
        predicated=is_tma_store(spec),
    )


def epilogue(spec: Spec) -> Epilogue:
    """What every epilogue partial (and the split-K and stream-K drains) prints: the chunks of
    the TMEM drain and the dtype C is stored in."""
    cols, loads = epilogue_chunks(spec)
    load_shape = rules_sm100.tmem_load_shape(spec)
    halves = 1 if load_shape == "32x32b" else 2  # 16x32bx2: two threads per row
    return Epilogue(
        cols=cols,
        chunks=loads,
        last_chunk=loads - 1,
        ld_repetition=f"x{cols // halves}",
        cols_note=(
            "accumulator columns one tcgen05.ld moves per thread"
            if halves == 1
            else "accumulator columns one tcgen05.ld moves per row pair (half per thread)"
        ),
        lanes="32 lanes per warp" if halves == 1 else "16 lanes per warp, half a row per thread",
        plain=not spec.epilogue.fused,
        store_dtype=store_dtype(spec),
        style=spec.epilogue.style,
        tmem_load_shape=load_shape,
    )


def tma_store(spec: Spec) -> TmaStore | None:
    """What the TMA-store epilogue partial prints: its C sub-tile, SMEM buffers and their swizzle
    atoms, and the tcgen05.ld of one sub-tile."""
    if not is_tma_store(spec):
        return None
    _, loads = epilogue_chunks(spec)
    halves = 1 if rules_sm100.tmem_load_shape(spec) == "32x32b" else 2  # 16x32bx2: 2 per row
    em, en = rules_sm100.epi_tile(spec)
    return TmaStore(
        tile=(em, en),
        tile_str=f"{em}x{en}",
        tile_cols=en,
        subtiles=loads,
        bufs=rules_sm100.EPI_BUFS,
        **sub_tile_layout(spec, em, en),
        repetition=f"x{en // halves}",
        t2r_note=(
            "warp w reads TMEM lanes 32 (w % 4) ... + 31: each thread owns one row of a sub-tile"
            if halves == 1
            else "M=64: warp w reads TMEM lanes 32 (w % 4) ... + 15 (rows 16 (w % 4) ... "
            "+ 15); threads t and t + 16 own the left and right half of one row"
        ),
        c_tx_bytes=rules_sm100.c_load_bytes(spec),
        drain_tile=rules_sm100.odd_subtiles(spec),
    )


def sub_tile_layout(spec: Spec, em: int, en: int) -> dict[str, object]:
    """How a C sub-tile lies in SMEM: row-major, or with swap_ab M-major (C^T is a column-major
    view of C, so the sub-tile's columns are contiguous); its swizzle atoms, one TMA box each."""
    out = spec.epilogue.out_dtype or spec.dtype
    kib = rules_common.kib(em * en * rules_common.DTYPE_BYTES[out])
    major = rules_sm100.epi_major_bytes(spec)
    atoms = rules_sm100.epi_tma_boxes(spec)  # a box spans one swizzle atom along `major`
    if spec.swap_ab:
        return {
            "tile_note": f"{em}x{en}, M-major: {major}-byte columns, {kib} KiB of {out}",
            "swizzle_atom": MN_SWIZZLE_ATOM[rules_common.auto_swizzle(major)],
            "swizzle_atom_note": (
                f"M-major: a {major}-byte column is one atom"
                if atoms == 1
                else f"M-major: {atoms} atoms, {atoms} boxes of {em // atoms}x{en}"
            ),
            "host_atom_note": (
                "M-major, one swizzle atom per column"
                if atoms == 1
                else f"M-major, {atoms} swizzle atoms per column"
            ),
            # the atoms stack along N first: each 64-element-deep column block of the sub-tile
            # is contiguous and one TMA box
            "tile_order": (1, 0, 2),
        }
    return {
        "tile_note": f"{em} rows x {en} columns = {major}-byte rows, {kib} KiB of {out}",
        "swizzle_atom": K_SWIZZLE_ATOM[rules_common.auto_swizzle(major)],
        "swizzle_atom_note": (
            f"a {major}-byte sub-tile row: one swizzle atom"
            if atoms == 1
            else f"{major}-byte rows: {atoms} atoms, {atoms} TMA boxes of {em}x{en // atoms}"
        ),
        "host_atom_note": (
            "one swizzle atom per row" if atoms == 1 else f"{atoms} swizzle atoms per row"
        ),
        # one swizzle atom per row: its 8-row atoms stack along M either way; several:
        # stack them along M first, so each atom column is one 128-row TMA box
        "tile_order": (1, 0, 2) if atoms == 1 else (0, 1, 2),
    }


def store_dtype(spec: Spec) -> str:
    """The dtype the direct epilogue converts the f32 accumulator to: the input dtype's constant
    (IO_DTYPE) when C has it in a plain store, else OUT_DTYPE (e4m3 in, bf16/f16/f32 out, and
    every fused epilogue)."""
    out = spec.epilogue.out_dtype or spec.dtype
    plain = out == spec.dtype and not spec.epilogue.fused
    return "IO_DTYPE" if plain else "OUT_DTYPE"


def partials(spec: Spec) -> dict[str, str]:
    """One partial per family (templates/sm100/<family>/), chosen here and nowhere else: the
    skeleton imports each by its ``<family>_partial`` name. A kernel whose CTAs share a tile's K
    range takes its reduce/ partial (cluster, separate, stream_k: each is the persistent
    scheduler plus the reduction, so it keeps the scheduler contract) in the scheduler's place;
    split-K reduce = "separate" has its own epilogue (f32 partials to the workspace)."""
    reduce = shared.reduce_kind(spec)
    if not spec.warp_specialized:
        mainloop = "kloop"
    else:
        mainloop = "ws_persistent" if is_persistent(spec) else "ws"
    return {
        "mma_partial": f"sm100/mma/{rules_sm100.mma_kind(spec)}.py.j2",
        "operands_partial": f"sm100/operands/{'swap' if spec.swap_ab else 'plain'}.py.j2",
        "mainloop_partial": f"sm100/mainloop/{mainloop}.py.j2",
        "cluster_partial": f"sm100/cluster/{cluster_kind(spec)}.py.j2",
        "epilogue_partial": (
            f"sm100/epilogue/{'partial' if reduce == 'separate' else spec.epilogue.style}.py.j2"
        ),
        "scheduler_partial": (
            f"sm100/scheduler/{spec.scheduler.kind}.py.j2"
            if reduce == "none"
            else f"sm100/reduce/{reduce}.py.j2"
        ),
    }


def row_sumsq(spec: Spec) -> plan_common.RowSumsq | None:
    """row_sumsq in the direct epilogue (rules_sm100.row_partials_per_tile): a thread holds one
    accumulator row after its TMEM loads; with swap AB a warp's 32 lanes hold one column of C^T
    (lanes 16, 8, 4, 2 and 1 apart)."""
    per_tile = rules_sm100.row_partials_per_tile(spec)
    if spec.swap_ab:
        rows = rules_sm100.ROW_SUMSQ_WARP_ROWS
        return plan_common.row_sumsq(
            spec,
            per_tile,
            list(rules_sm100.ROW_SUMSQ_SHUFFLES),
            "lane 0 of each epilogue warp, after the butterfly (every lane then holds the sum)",
            f"one per epilogue warp's {rows} rows of C^T, {per_tile} per tile along N (the "
            "kernel's M, TILER[0] rows of C^T)",
            warp_rows=rows,
        )
    return plan_common.row_sumsq(
        spec,
        per_tile,
        [],
        "the thread that holds the row (its TMEM lane)",
        "one per tile along N, of TILER[1] columns",
    )


def block_quant(spec: Spec) -> plan_common.BlockQuant | None:
    """block_quant in the direct epilogue (rules_sm100.block_quant_violations): a thread holds
    one whole accumulator row after its 32x32b TMEM loads, so a block's amax needs no shuffles;
    the thread that holds the row writes its scales."""
    return plan_common.block_quant(spec, [], "the thread that holds the row (its TMEM lane)")


def tensors(spec: Spec) -> Tensors:
    """The tensors after C: the bias (printed by the epilogue partial, so gemm_kernel takes it
    among C's values) and a workspace, which gemm_kernel takes last; split-K "separate": the
    GEMM kernel takes only its workspace, the host passes the bias too."""
    if shared.is_split_k_separate(spec):
        return shared.separate_tensors(spec)
    extra = plan_common.extra_tensors(spec, rules_sm100.streamk_workspace_elems(spec))
    work = [t for t in extra.kernel if t[0] == "mWork"]  # stream-K's
    return dataclasses.replace(extra, kernel=work, launch=["workspace"] if work else [])


def values(spec: Spec) -> Sm100Values:
    """Every value the sm_100a templates print, each group from one concern, built once by keyword
    (a value set twice is a TypeError)."""
    return Sm100Values(
        docs=Sm100Docs(
            **vars(plan_common.docs(spec, scheduler_kind(spec), docs.pipeline_lines(spec))),
            budget_lines=docs.budget_lines(spec),
        ),
        **shared.common_values(spec, rules_sm100.shape_multiples(spec)),
        row_sumsq=row_sumsq(spec),
        block_quant=block_quant(spec),
        tensors=tensors(spec),
        workers=workers(spec),
        warps=warps(spec),
        mma=tcgen05(spec),
        ring=ring(spec),
        cluster=cluster(spec),
        epilogue=epilogue(spec),
        bias_view=bias_view(spec),
        epi_tma=tma_store(spec),
        roles=persistent_roles(spec),
        order=tile_order(spec),
        clc=clc(spec),
        splitk=splitk_cluster(spec),
        sk=stream_k(spec),
        pair=cta_pair(spec),
        mcast=multicast(spec),
    )
