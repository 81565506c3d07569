"""Plan of a Hopper (sm_90a) kernel: every value its templates print. Every number comes from
:mod:`codegen.arch.sm90.rules`; the docstring's Pipeline table from :mod:`codegen.arch.sm90.docs`
(its prose is templates/sm90/_docs.py.j2's).

The partials are chosen here (:func:`partials`), one per family: ``cluster/`` (single,
multicast), ``consumer/`` (cooperative, pingpong), ``scheduler/`` (grid, persistent, split_k,
split_k_separate, stream_k, stream_k_dp: the data-parallel + stream-K hybrid), ``reduce/`` (none,
cluster, separate, stream_k) and ``epilogue/`` (direct, tma, partial); the mainloop is the
skeleton's own. README.md's "Template families" says why the families are cut this way on both
architectures.

The values are one frozen :class:`Sm90Values` of frozen groups of required fields, each built
directly by one function: one per concern every kernel has (the wgmma atoms, the warpgroups, the
launch, the ring, the cluster) and one per feature a variant may lack (a multicast cluster,
ping-pong consumers, each epilogue's own values, the persistent tile order, split-K over a
cluster, stream-K), None where the variant has no such feature.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen import plan_common, rules_common
from codegen.arch import shared
from codegen.arch.sm90 import docs
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.rules import (
    PP_EPI_BARRIER,
    PP_TURN_BARRIER,
    WARPGROUP_THREADS,
    multicast_masks,
    partial_vec,
)
from codegen.plan_common import SmemRing, Tensors, TileOrder, Workers
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue


@dataclass(frozen=True, kw_only=True)
class Wgmma:
    """The warpgroup MMA (``plan.wgmma``): its atom and how many a warpgroup issues."""

    m: int  # rows of one wgmma atom
    n: int  # N of one wgmma atom
    atoms: int  # wgmma instructions per warpgroup per k-block
    n_atoms: int  # atoms side by side along the tile's N (2 above the widest wgmma, N = 256)
    acc_regs: int  # f32 accumulators per consumer thread


@dataclass(frozen=True, kw_only=True)
class Warpgroups:
    """The warpgroups and their roles (``plan.wg``): the producer, the consumers, their warps."""

    threads: int  # threads of one warpgroup
    warps: int  # warps of one warpgroup
    producer: int  # the producer warpgroup
    tma_warp: int  # the producer's warp that issues the TMA loads
    mma: int  # the first consumer warpgroup
    mma_next: int  # ping-pong's second consumer warpgroup
    consumers: int  # consumer warpgroups
    consumer_warps: int
    tile_warps: int  # the warps of the warpgroups that share one tile
    mma_threads: int  # consumer threads


@dataclass(frozen=True, kw_only=True)
class Launch:
    """The launch (``plan.launch``): the CTA's threads, the CTAs of this kernel resident on one SM
    (ctas_per_sm), the registers each thread launches with and setmaxnreg moves, the SMEM budget
    and carveout."""

    threads: int  # the producer warpgroup and the consumer warpgroups
    min_blocks_per_mp: int
    regs: int  # registers per thread at launch
    register_file: int
    register_pool: int  # the CTA's registers: its threads x its launch registers
    producer_regs: int  # setmaxnreg of the producer ...
    consumer_regs: int  # ... and of the consumers
    smem_bytes: int  # the CTA's dynamic SMEM
    smem_limit: int
    smem_limit_note: str
    smem_carveout: int  # percent of the SM's unified L1 / shared memory


@dataclass(frozen=True, kw_only=True)
class Sm90Ring(SmemRing):
    """The A/B SMEM ring (``plan.ring``) and who releases a stage."""

    a_elems: int
    b_elems: int
    swizzle_atom: str  # the wgmma SMEM atom the swizzle rule makes the DSL pick
    a_atom: str  # the kernel's A's: swizzle_atom when K-major, MN_SW128 when MN-major
    b_atom: str
    empty_arrives: int
    empty_readers: int  # the CTAs that read a stage this CTA's producer fills
    # a stage is released once per consumer warpgroup (multicast) or warp, by every CTA it fills
    releases_per_warpgroup: bool


@dataclass(frozen=True, kw_only=True)
class Sm90Cluster:
    """The cluster (``plan.cluster``): the spec's shape and what one cluster covers."""

    m: int
    n: int
    tile: tuple[int, int]  # output rows and columns one cluster covers
    launch: bool  # launched with a hardware cluster (multicast, split-K's clusters)


@dataclass(frozen=True, kw_only=True)
class Sm90Multicast:
    """A CM x CN cluster that multicasts A along N and B along M (``plan.mcast``;
    templates/sm90/cluster/multicast.py.j2)."""

    size: int
    a_multicast: bool
    b_multicast: bool
    a_row0: int  # ranks of cluster row 0
    b_col0: int  # ranks of cluster column 0
    release_warp: int  # the consumer warp of each warpgroup that releases a stage


@dataclass(frozen=True, kw_only=True)
class PingPong:
    """Ping-pong consumers' named barriers (``plan.pingpong``)."""

    epi_barrier: int  # warpgroup w's epilogue: epi_barrier + w
    turn_barrier: int  # warpgroup w's mainloop turn: turn_barrier + w
    turn_threads: int  # both consumer warpgroups


@dataclass(frozen=True, kw_only=True)
class Sm90TmaStore:
    """The TMA-store epilogue's C sub-tiles (``plan.epi_tma``;
    templates/sm90/epilogue/tma.py.j2)."""

    m: int
    n: int
    buffers: int  # sub-tile buffers in flight (per warpgroup with ping-pong)
    buffer_sets: int
    subtiles: tuple[int, int]  # sub-tiles per output tile
    c_ring_elems: int
    loads_c: bool  # beta: each C sub-tile TMA-loaded into its buffer
    c_full_barriers: int
    c_tx_bytes: int
    warp: int  # the warp that issues the TMA stores (cooperative)
    barrier_id: int  # the consumers' named barrier around each sub-tile (cooperative)


@dataclass(frozen=True, kw_only=True)
class DirectStore:
    """The direct epilogue's stores (``plan.direct``; templates/sm90/epilogue/direct.py.j2)."""

    vec: int  # elements per store
    bits: int


@dataclass(frozen=True, kw_only=True)
class PartialStore:
    """Split-K "separate": how this kernel stores its f32 partial (``plan.partial``;
    templates/sm90/epilogue/partial.py.j2)."""

    vec: int  # f32 per workspace store
    bits: int
    vec_note: str


@dataclass(frozen=True, kw_only=True)
class Sm90SplitK:
    """Split-K reduced over a cluster through DSMEM (``plan.splitk``)."""

    peers: int  # ranks 1..
    staged_arrives: int
    consumed_arrives: int
    staging_elems: int


@dataclass(frozen=True, kw_only=True)
class Sm90StreamK(shared.StreamK):
    """Stream-K's workspace (``plan.sk``), its bands and its fix-up barrier."""

    # the tile axis a band is one tile of (the activations': m, n with swap AB; the weights'
    # with bands = "weights") and the axis its tiles are walked along
    band: str
    across: str
    fixup_barrier_id: int


@dataclass(frozen=True, kw_only=True)
class Sm90Values(shared.SeparateReduceValues):
    """Every value the sm_90a templates read as ``plan.NAME`` or, in a group, ``plan.GROUP.NAME``
    (tests/test_plan_fields.py checks that each name a template reads is a field); an optional
    group is None where the variant has no such feature."""

    epilogue_rule: str  # the kernel's section comment over the epilogue
    wgmma: Wgmma
    wg: Warpgroups
    launch: Launch
    ring: Sm90Ring
    cluster: Sm90Cluster
    mcast: Sm90Multicast | None = None  # a multicast cluster's
    pingpong: PingPong | None = None  # ping-pong consumers'
    epi_tma: Sm90TmaStore | None = None  # the TMA-store epilogue's
    direct: DirectStore | None = None  # the direct epilogue's
    partial: PartialStore | None = None  # split-K "separate"'s
    order: TileOrder | None = None  # the persistent scheduler's
    splitk: Sm90SplitK | None = None  # split-K's over a cluster
    sk: Sm90StreamK | None = None  # stream-K's


def workers(spec: Spec) -> Workers | None:
    """The persistent grids sized by the GPU's SM count (static persistent, split-K's clusters,
    stream-K); the grid scheduler and split-K "separate" launch a CTA (cluster) per tile."""
    size = spec.cluster.size
    return shared.grid_workers(
        spec,
        (rules_sm90.SM_COUNT, "an H100 / H200 SXM", (9, 0)),
        docs.max_clusters(spec),
        f"one {size}-CTA cluster" if size > 1 else "one CTA",
    )


def wgmma(spec: Spec) -> Wgmma:
    """The wgmma atoms: 64 x N / n_atoms x K, per warpgroup per k-block."""
    n_atoms = rules_sm90.wgmma_n_atoms(spec.tile.n)
    return Wgmma(
        m=rules_sm90.WGMMA_M,
        n=spec.tile.n // n_atoms,
        atoms=spec.tile.m // (rules_sm90.WGMMA_M * rules_sm90.tile_warpgroups(spec)) * n_atoms,
        n_atoms=n_atoms,
        acc_regs=rules_sm90.accumulator_regs(spec),
    )


def warpgroups(spec: Spec) -> Warpgroups:
    """The producer warpgroup and the consumer warpgroups."""
    wgs = rules_sm90.consumer_warpgroups(spec)
    return Warpgroups(
        threads=WARPGROUP_THREADS,
        warps=rules_sm90.WARPGROUP_WARPS,
        producer=rules_sm90.PRODUCER_WG,
        tma_warp=rules_sm90.TMA_WARP,
        mma=rules_sm90.MMA_WG,
        mma_next=rules_sm90.MMA_WG + 1,
        consumers=wgs,
        consumer_warps=rules_sm90.WARPGROUP_WARPS * wgs,
        tile_warps=rules_sm90.WARPGROUP_WARPS * rules_sm90.tile_warpgroups(spec),
        mma_threads=WARPGROUP_THREADS * wgs,
    )


def launch(spec: Spec) -> Launch:
    """The threads, registers and SMEM of one CTA, and what the launch asks for."""
    assert isinstance(spec.stages, int)
    return Launch(
        threads=rules_sm90.threads(spec),
        min_blocks_per_mp=rules_sm90.min_blocks_per_mp(spec),
        regs=rules_sm90.launch_regs(spec),
        register_file=rules_sm90.REGISTER_FILE,
        register_pool=rules_sm90.register_pool(spec),
        producer_regs=rules_sm90.PRODUCER_REGS,
        consumer_regs=rules_sm90.consumer_regs(spec),
        smem_bytes=rules_sm90.smem_bytes(spec, spec.stages),
        smem_limit=rules_common.smem_limit(spec),
        smem_limit_note=rules_common.smem_limit_note(spec),
        smem_carveout=rules_sm90.SMEM_CARVEOUT_MAX,
    )


def ring(spec: Spec) -> Sm90Ring:
    """The A/B ring's SMEM and the arrivals that release a stage."""
    assert isinstance(spec.stages, int)
    t = spec.tile
    # the DSL picks the wgmma SMEM atom from the K row width; the swizzle rule makes it this
    k_atom = {"32B": "SW32", "64B": "SW64", "128B": "SW128"}[str(spec.swizzle)]
    # ... and an MN-major operand's from its M (N) extent, a multiple of 128 B (rules_sm90)
    mn_atom = "MN_SW128 (M- or N-major)"
    a_mn, b_mn = rules_sm90.mn_major_operands(spec)
    return Sm90Ring(
        stages=spec.stages,
        tx_bytes=rules_sm90.full_tx_bytes(spec),
        a_elems=t.m * t.k * spec.stages,
        b_elems=t.n * t.k * spec.stages,
        swizzle_atom=k_atom,
        a_atom=mn_atom if a_mn else k_atom,
        b_atom=mn_atom if b_mn else k_atom,
        empty_arrives=rules_sm90.empty_arrives(spec),
        empty_readers=spec.cluster.m + spec.cluster.n - 1,
        releases_per_warpgroup=rules_sm90.releases_per_warpgroup(spec),
    )


def cluster(spec: Spec) -> Sm90Cluster:
    """The spec's cluster shape (1x1 without one) and the output one cluster covers."""
    t = spec.tile
    cm, cn = spec.cluster.m, spec.cluster.n
    return Sm90Cluster(
        m=cm,
        n=cn,
        tile=(t.m * cm, t.n * cn),
        launch=spec.cluster.size > 1 or shared.is_split_k_cluster(spec),
    )


def multicast(spec: Spec) -> Sm90Multicast | None:
    """What the multicast cluster partial prints: each operand's multicast and rank masks."""
    cm, cn = spec.cluster.m, spec.cluster.n
    if spec.cluster.size == 1:
        return None
    row0, col0 = multicast_masks(cm, cn)
    return Sm90Multicast(
        size=spec.cluster.size,
        a_multicast=cn > 1,
        b_multicast=cm > 1,
        a_row0=row0,
        b_col0=col0,
        release_warp=rules_sm90.RELEASE_WARP,
    )


def pingpong(spec: Spec) -> PingPong | None:
    """Ping-pong's turnstile and the warpgroups' own epilogue barriers."""
    if not rules_sm90.is_pingpong(spec):
        return None
    return PingPong(
        epi_barrier=PP_EPI_BARRIER,
        turn_barrier=PP_TURN_BARRIER,
        turn_threads=2 * WARPGROUP_THREADS,
    )


def tma_store(spec: Spec) -> Sm90TmaStore | None:
    """The TMA-store epilogue's sub-tiles and buffers, and C loaded by TMA (beta)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return None
    t = spec.tile
    out = spec.epilogue.out_dtype or spec.dtype
    epi_m, epi_n = rules_sm90.epi_m(spec), rules_sm90.epi_n(spec)
    epi_sets = rules_sm90.epilogue_buffer_sets(spec)
    return Sm90TmaStore(
        m=epi_m,
        n=epi_n,
        buffers=rules_sm90.EPI_STAGES,
        buffer_sets=epi_sets,
        subtiles=(t.m // epi_m, t.n // epi_n),
        c_ring_elems=epi_m * epi_n * rules_sm90.EPI_STAGES * epi_sets,
        loads_c=rules_sm90.tma_loads_c(spec),
        c_full_barriers=rules_sm90.c_full_barriers(spec),
        c_tx_bytes=epi_m * epi_n * rules_common.DTYPE_BYTES[out],
        warp=rules_sm90.EPILOGUE_WARP,
        barrier_id=rules_sm90.EPILOGUE_BARRIER_ID,
    )


def direct_store(spec: Spec) -> DirectStore | None:
    """The direct epilogue's vector stores: wgmma gives a thread pairs of adjacent columns of C,
    or with swap AB adjacent rows (one element per store)."""
    if shared.is_split_k_separate(spec) or isinstance(spec.epilogue, TmaStoreEpilogue):
        return None
    out = spec.epilogue.out_dtype or spec.dtype
    vec = 1 if spec.swap_ab else 2
    return DirectStore(vec=vec, bits=vec * 8 * rules_common.DTYPE_BYTES[out])


def partial_store(spec: Spec) -> PartialStore | None:
    """Split-K "separate": how this GEMM kernel stores its partial to the workspace."""
    if not shared.is_split_k_separate(spec):
        return None
    return PartialStore(
        vec=partial_vec(spec),
        bits=partial_vec(spec) * 8 * shared.ACC_BYTES,
        vec_note=(
            "swap AB: a thread's adjacent values are adjacent rows of the column-major slot"
            if spec.swap_ab
            else "a thread's wgmma values come in pairs of adjacent columns of the row-major slot"
        ),
    )


def tile_order(spec: Spec) -> TileOrder | None:
    """The persistent scheduler's raster and swizzle group; the data-parallel + stream-K hybrid
    walks the persistent scheduler's default order (along M, no swizzle)."""
    if shared.streamk_data_parallel(spec):
        return TileOrder(fast="m", slow="n", group=1)
    if not isinstance(spec.scheduler, PersistentScheduler):
        return None
    raster = spec.scheduler.raster
    return TileOrder(fast=raster, slow="n" if raster == "m" else "m", group=spec.scheduler.group)


def split_k(spec: Spec) -> Sm90SplitK | None:
    """Split-K over a cluster: the staged / consumed handshake and the staging buffer."""
    if not shared.is_split_k_cluster(spec):
        return None
    return Sm90SplitK(
        peers=shared.splits(spec) - 1,
        staged_arrives=rules_sm90.staged_arrives(spec),
        consumed_arrives=rules_sm90.consumed_arrives(spec),
        staging_elems=rules_sm90.splitk_staging_elems(spec),
    )


def stream_k(spec: Spec) -> Sm90StreamK | None:
    """Stream-K's workspace (a partial-tile slot per CTA, then the flags) and its bands."""
    if not shared.is_stream_k(spec):
        return None
    # the tile axis of the activations is m (n with swap AB): bands along it share an activation
    # tile; bands along the weights take the other axis
    activations = "n" if spec.swap_ab else "m"
    band = (
        ("m" if activations == "n" else "n") if shared.streamk_weight_bands(spec) else activations
    )
    return Sm90StreamK(
        **shared.stream_k_values(spec, rules_sm90.SM_COUNT),
        band=band,
        across="n" if band == "m" else "m",
        fixup_barrier_id=rules_sm90.FIXUP_BARRIER_ID,
    )


def row_sumsq(spec: Spec) -> plan_common.RowSumsq | None:
    """row_sumsq on the wgmma registers (rules_sm90.row_partials_per_tile): a quad's four lanes
    hold a row (lanes 1 and 2 apart); with swap AB the lanes of equal lane % 4 of a warp hold a
    column of C^T, the user's row (lanes 4, 8 and 16 apart)."""
    per_tile = rules_sm90.row_partials_per_tile(spec)
    if spec.swap_ab:
        return plan_common.row_sumsq(
            spec,
            per_tile,
            list(rules_sm90.ROW_SUMSQ_SHUFFLES[True]),
            "lanes 0-3 of each warp (each for its own columns of C^T)",
            f"one per consumer warp, {per_tile} per tile along N (the kernel's M, TILER[0] rows "
            "of C^T)",
        )
    return plan_common.row_sumsq(
        spec,
        per_tile,
        list(rules_sm90.ROW_SUMSQ_SHUFFLES[False]),
        "the first lane of the quad of lanes that holds the row (lane % 4 == 0)",
        "one per tile along N, of TILER[1] columns",
    )


def block_quant(spec: Spec) -> plan_common.BlockQuant | None:
    """block_quant on the wgmma registers: a quad's four lanes hold a row's columns of every
    block (rules_sm90.block_quant_violations: no swap AB), their max a butterfly over lanes 1
    and 2 apart, like row_sumsq's sum."""
    return plan_common.block_quant(
        spec,
        list(rules_sm90.ROW_SUMSQ_SHUFFLES[False]),
        "the first lane of the quad of lanes that holds the row (lane % 4 == 0)",
    )


def tensors(spec: Spec) -> Tensors:
    """The tensors `gemm` takes after C: the bias and stream-K's workspace, passed on to
    gemm_kernel; split-K "separate" passes only its workspace (the reduce kernel takes the
    bias)."""
    if shared.is_split_k_separate(spec):
        return shared.separate_tensors(spec)
    return plan_common.extra_tensors(spec, rules_sm90.streamk_workspace_elems(spec))


def epilogue_rule(spec: Spec) -> str:
    """The kernel's section comment over the epilogue, dashed out to column 100."""
    out = spec.epilogue.out_dtype or spec.dtype
    what = (
        "f32 accumulators -> this K share's workspace slot"
        if shared.is_split_k_separate(spec)
        else f"f32 accumulators -> {out} -> C"
    )
    heading = f"# ---- 4. epilogue: {what} "
    return heading + "-" * (88 - len(heading))


def scheduler_kind(spec: Spec) -> str:
    """The scheduler partial's name: split-K reduce = "separate" has its own."""
    return "split_k_separate" if shared.is_split_k_separate(spec) else spec.scheduler.kind


def scheduler_partial(spec: Spec) -> str:
    """The scheduler partial: its kind's, and the data-parallel + stream-K hybrid's own (a unit
    loop over whole tiles, then the stream-K share); the hybrid keeps stream-K's reduction."""
    kind = scheduler_kind(spec)
    return f"sm90/scheduler/{kind}{'_dp' if shared.streamk_data_parallel(spec) else ''}.py.j2"


def partials(spec: Spec) -> dict[str, str]:
    """One partial per family (templates/sm90/<family>/), chosen here and nowhere else: the
    skeleton imports each by its ``<family>_partial`` name. Split-K reduce = "separate" has its
    own scheduler and epilogue (f32 partials to the workspace)."""
    separate = shared.is_split_k_separate(spec)
    return {
        "cluster_partial": (
            f"sm90/cluster/{'multicast' if spec.cluster.size > 1 else 'single'}.py.j2"
        ),
        "consumer_partial": (
            f"sm90/consumer/{'pingpong' if rules_sm90.is_pingpong(spec) else 'cooperative'}.py.j2"
        ),
        "scheduler_partial": scheduler_partial(spec),
        "reduce_partial": f"sm90/reduce/{shared.reduce_kind(spec)}.py.j2",
        "epilogue_partial": (
            "sm90/epilogue/partial.py.j2"
            if separate
            else f"sm90/epilogue/{spec.epilogue.style}.py.j2"
        ),
    }


def values(spec: Spec) -> Sm90Values:
    """Every value the sm_90a templates print, each group from one concern, built once by keyword
    (a value set twice is a TypeError)."""
    return Sm90Values(
        docs=plan_common.docs(spec, scheduler_kind(spec), docs.pipeline_lines(spec)),
        **shared.common_values(spec, rules_sm90.shape_multiples(spec)),
        row_sumsq=row_sumsq(spec),
        block_quant=block_quant(spec),
        tensors=tensors(spec),
        workers=workers(spec),
        epilogue_rule=epilogue_rule(spec),
        wgmma=wgmma(spec),
        wg=warpgroups(spec),
        launch=launch(spec),
        ring=ring(spec),
        cluster=cluster(spec),
        mcast=multicast(spec),
        pingpong=pingpong(spec),
        epi_tma=tma_store(spec),
        direct=direct_store(spec),
        partial=partial_store(spec),
        order=tile_order(spec),
        splitk=split_k(spec),
        sk=stream_k(spec),
    )
