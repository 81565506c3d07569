"""Plan of a Hopper (sm_90a) kernel: every value its templates print. Every number comes from
:mod:`codegen.arch.sm90.rules`; the docstring's Pipeline table from :mod:`codegen.arch.sm90.docs`
(its prose is templates/sm90/_docs.py.j2's).

The partials are chosen here (:func:`partials`), one per family: ``cluster/`` (single,
multicast), ``consumer/`` (cooperative, pingpong), ``scheduler/`` (grid, persistent, split_k,
split_k_separate, stream_k), ``reduce/`` (none, cluster, separate, stream_k) and ``epilogue/``
(direct, tma, partial); the mainloop is the skeleton's own. README.md's "Template families" says
why the families are cut this way on both architectures.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen import rules_common
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
from codegen.plan_common import (
    Plan,
    bias_values,
    dtype_values,
    extra_tensors,
    fusion_values,
    sm_sized_values,
    spec_values,
)
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue


@dataclass(frozen=True, kw_only=True)
class Sm90Values(shared.SeparateReduceValues):
    """Every value the sm_90a templates read as ``plan.NAME`` (tests/test_plan_fields.py checks
    that each name a template reads is a field here); None: the variant has no such value."""

    # the docstring's Pipeline notes
    acc_regs: int  # f32 accumulators per consumer thread
    smem_limit_note: str
    sk_workspace_bytes: int
    sk_slot_kib: str
    # the docstring's parameters
    scheduler_kind: (
        str  # the scheduler partial: grid, persistent, split_k, split_k_separate, stream_k
    )
    max_clusters: int  # clusters of the persistent grid on the flagship GPU (0: not persistent)
    tma_store: bool  # the TMA-store epilogue
    wgmma_m: int
    wgmma_n: int  # N of one wgmma atom
    wgmma_atoms: int  # wgmma instructions per warpgroup per k-block
    # the mainloop: warpgroups, registers, ring
    consumer_wg: int
    consumer_warps: int
    tile_warps: int
    mma_threads: int
    producer_regs: int
    consumer_regs: int
    # the register file, and the CTA's registers (its threads x its launch registers)
    register_file: int
    register_pool: int
    # the launch: CTAs of this kernel resident on one SM (ctas_per_sm), the registers per thread
    # each launches with, its SMEM budget and the SMEM carveout (percent) the launch asks for
    min_blocks_per_mp: int
    launch_regs: int
    smem_limit: int
    smem_carveout: int
    empty_arrives: int
    # a stage is released once per consumer warpgroup (multicast) or warp, by every CTA it fills
    releases_per_warpgroup: bool
    empty_readers: int
    a_ring_elems: int
    b_ring_elems: int
    swizzle_atom: str
    swap_ab: bool
    mma_n_atoms: int
    # the cluster
    clustered: bool
    cluster_launch: bool
    cluster: tuple[int, int]
    cluster_m: int
    cluster_n: int
    cluster_size: int
    cluster_tile: tuple[int, int]
    a_multicast: bool
    b_multicast: bool
    a_tma_op: str
    b_tma_op: str
    a_mcast_row0: int
    b_mcast_col0: int
    # multicast: the consumer warp of each warpgroup that releases a stage for the warpgroup
    release_warp: int
    # split-K's cluster-scoped handshake (the nvvm dialect's scope and order kinds)
    imports_nvvm: bool
    # the consumers' named barriers, ping-pong
    epi_barrier_args: str
    pp_epi_barrier: int
    pp_turn_barrier: int
    pingpong: bool
    wg_threads: int
    wg_warps: int
    turn_threads: int
    # the epilogue
    epi_m: int
    epi_n: int
    epi_stages: int
    epi_subtiles: tuple[int, int]
    c_ring_elems: int
    epi_buffer_sets: int
    store_vec: int
    store_bits: int
    tma_loads_c: bool
    c_full_barriers: int
    c_tx_bytes: int
    epilogue_rule: str
    # warp roles and named barriers
    producer_wg: int
    mma_wg: int
    mma_wg_next: int  # ping-pong's second consumer warpgroup
    tma_warp: int
    epilogue_warp: int
    epilogue_barrier_id: int
    fixup_barrier_id: int
    # the scheduler
    raster: str
    group: int
    raster_major: str
    raster_minor: str
    splits: int
    split_peers: int
    staged_arrives: int
    consumed_arrives: int
    staging_elems: int
    sk_ctas: int
    sk_tile_elems: int
    sk_workspace_elems: int
    # stream-K's bands: the tile axis of the activations (m; n with swap AB) and the other one
    sk_band: str
    sk_across: str
    # the tensors after C
    launch_tensors: list[str]
    # split-K separate
    partial_vec: int | None = None
    partial_bits: int | None = None
    partial_vec_note: str | None = None


def workers_values(spec: Spec) -> dict[str, object]:
    """The persistent grids sized by the GPU's SM count (static persistent, split-K's clusters,
    stream-K); the grid scheduler and split-K "separate" launch a CTA (cluster) per tile."""
    h200 = (rules_sm90.SM_COUNT, "an H100 / H200 SXM", (9, 0))
    if shared.is_stream_k(spec):
        return sm_sized_values(
            *h200, 1, "one CTA", worker_cap="SK_CTAS", worker_cap_note="the workspace's slots"
        )
    if shared.is_split_k_cluster(spec):
        n = shared.splits(spec)
        return sm_sized_values(
            *h200,
            n,
            f"one {n}-CTA cluster",
            worker_cap=spec.scheduler.max_clusters,
            worker_cap_note="the spec's max_clusters",
        )
    if isinstance(spec.scheduler, PersistentScheduler):
        size = spec.cluster.size
        return sm_sized_values(
            *h200,
            size,
            f"one {size}-CTA cluster" if size > 1 else "one CTA",
            sm_cap=spec.scheduler.sm_count,
        )
    return {"sm_sized": False}


def separate_values(spec: Spec) -> dict[str, object]:
    """What the separate-reduce partials print (sm90/scheduler/split_k_separate.py.j2 and
    sm90/epilogue/partial.py.j2): the workspace geometry and the reduce kernel's vectors
    (shared with sm_100a), and how this GEMM kernel stores its partial."""
    return shared.separate_workspace_values(spec, bias_values(spec)) | {
        "partial_vec": partial_vec(spec),
        "partial_bits": partial_vec(spec) * 8 * shared.ACC_BYTES,
        "partial_vec_note": (
            "swap AB: a thread's adjacent values are adjacent rows of the column-major slot"
            if spec.swap_ab
            else "a thread's wgmma values come in pairs of adjacent columns of the row-major slot"
        ),
        # the GEMM kernel takes only the workspace; bias and C's values are the reduce kernel's
        "launch_tensors": ["workspace"],
    }


def mainloop_values(spec: Spec) -> dict[str, object]:
    """The tile, the ring, the warpgroups and their registers, the SMEM budget."""
    assert isinstance(spec.stages, int)
    t = spec.tile
    wgs = rules_sm90.consumer_warpgroups(spec)
    return {
        "tiler": (t.m, t.n, t.k),
        "stages": spec.stages,
        "consumer_wg": wgs,
        "consumer_warps": rules_sm90.WARPGROUP_WARPS * wgs,
        "tile_warps": rules_sm90.WARPGROUP_WARPS * rules_sm90.tile_warpgroups(spec),
        "threads": rules_sm90.threads(spec),
        "mma_threads": WARPGROUP_THREADS * wgs,
        "producer_regs": rules_sm90.PRODUCER_REGS,
        "consumer_regs": rules_sm90.consumer_regs(spec),
        "register_file": rules_sm90.REGISTER_FILE,
        "register_pool": rules_sm90.register_pool(spec),
        "min_blocks_per_mp": rules_sm90.min_blocks_per_mp(spec),
        "launch_regs": rules_sm90.launch_regs(spec),
        "smem_limit": rules_common.smem_limit(spec),
        "smem_carveout": rules_sm90.SMEM_CARVEOUT_MAX,
        "tx_bytes": rules_sm90.full_tx_bytes(spec),
        "empty_arrives": rules_sm90.empty_arrives(spec),
        "releases_per_warpgroup": rules_sm90.releases_per_warpgroup(spec),
        "empty_readers": spec.cluster.m + spec.cluster.n - 1,
        "a_ring_elems": t.m * t.k * spec.stages,
        "b_ring_elems": t.n * t.k * spec.stages,
        "mmas_per_stage": rules_common.mmas_per_stage(spec),
        # K depth of one wgmma: 16 (f16/bf16) or 32 (e4m3)
        "mma_k": rules_common.mma_k(spec.dtype),
        # wgmma atoms side by side along the tile's N (2 above the widest wgmma, N = 256)
        "mma_n_atoms": rules_sm90.wgmma_n_atoms(t.n),
        "smem_bytes": rules_sm90.smem_bytes(spec, spec.stages),
        # the DSL picks the wgmma SMEM atom from the K row width; the swizzle rule makes it this
        "swizzle_atom": {"32B": "SW32", "64B": "SW64", "128B": "SW128"}[str(spec.swizzle)],
        "shape_multiples": rules_sm90.shape_multiples(spec),
        "swap_ab": spec.swap_ab,
    }


def cluster_values(spec: Spec) -> dict[str, object]:
    """The cluster shape and each operand's TMA multicast."""
    t = spec.tile
    cm, cn = spec.cluster.m, spec.cluster.n
    row0, col0 = multicast_masks(cm, cn)
    clustered = spec.cluster.size > 1
    return {
        "clustered": clustered,
        # launched with a hardware cluster (nvvm, barriers)
        "cluster_launch": clustered or shared.is_split_k_cluster(spec),
        "cluster": (cm, cn),
        "cluster_m": cm,
        "cluster_n": cn,
        "cluster_size": spec.cluster.size,
        "cluster_tile": (t.m * cm, t.n * cn),
        "a_multicast": cn > 1,
        "b_multicast": cm > 1,
        "a_tma_op": "CopyBulkTensorTileG2SMulticastOp" if cn > 1 else "CopyBulkTensorTileG2SOp",
        "b_tma_op": "CopyBulkTensorTileG2SMulticastOp" if cm > 1 else "CopyBulkTensorTileG2SOp",
        "a_mcast_row0": row0,
        "b_mcast_col0": col0,
        "release_warp": rules_sm90.RELEASE_WARP,
        "imports_nvvm": shared.is_split_k_cluster(spec),
    }


def pingpong_values(spec: Spec) -> dict[str, object]:
    """The consumer warpgroups' named barriers: the epilogue's and ping-pong's turnstile."""
    pingpong = rules_sm90.is_pingpong(spec)
    return {
        "epi_barrier_args": (
            "barrier_id=epi_bar, number_of_threads=WG_THREADS"
            if pingpong
            else "barrier_id=1, number_of_threads=MMA_THREADS"
        ),
        "pp_epi_barrier": PP_EPI_BARRIER,
        "pp_turn_barrier": PP_TURN_BARRIER,
        "pingpong": pingpong,
        "wg_threads": WARPGROUP_THREADS,
        "wg_warps": rules_sm90.WARPGROUP_WARPS,
        "turn_threads": 2 * WARPGROUP_THREADS,
    }


def epilogue_values(spec: Spec) -> dict[str, object]:
    """The epilogue's sub-tiles and buffers, its stores, and C loaded by TMA (beta)."""
    t = spec.tile
    out = spec.epilogue.out_dtype or spec.dtype
    epi_m, epi_n = rules_sm90.epi_m(spec), rules_sm90.epi_n(spec)
    epi_sets = rules_sm90.epilogue_buffer_sets(spec)
    store_vec = 1 if spec.swap_ab else 2
    return {
        "epi_m": epi_m,
        "epi_n": epi_n,
        "epi_stages": rules_sm90.EPI_STAGES,
        "epi_subtiles": (t.m // epi_m, t.n // epi_n),
        "c_ring_elems": epi_m * epi_n * rules_sm90.EPI_STAGES * epi_sets,
        "epi_buffer_sets": epi_sets,
        "store_vec": store_vec,
        "store_bits": store_vec * 8 * rules_common.DTYPE_BYTES[out],
        "tma_loads_c": rules_sm90.tma_loads_c(spec),
        "c_full_barriers": rules_sm90.c_full_barriers(spec),
        "c_tx_bytes": epi_m * epi_n * rules_common.DTYPE_BYTES[out],
        "epilogue_rule": epilogue_rule(spec),
    }


def scheduler_values(spec: Spec) -> dict[str, object]:
    """The tile order of the persistent schedulers, split-K's handshake, stream-K's workspace."""
    persistent = isinstance(spec.scheduler, PersistentScheduler)
    raster = spec.scheduler.raster if persistent else "m"
    return {
        "raster": raster,
        "group": spec.scheduler.group if persistent else 1,
        "raster_major": raster,
        "raster_minor": ("n" if raster == "m" else "m") if persistent else "n",
        "splits": shared.splits(spec),
        "split_peers": shared.splits(spec) - 1,
        "staged_arrives": rules_sm90.staged_arrives(spec),
        "consumed_arrives": rules_sm90.consumed_arrives(spec),
        "staging_elems": rules_sm90.splitk_staging_elems(spec),
        "sk_ctas": rules_sm90.streamk_ctas(spec),
        "sk_tile_elems": shared.streamk_tile_elems(spec),
        "sk_workspace_elems": rules_sm90.streamk_workspace_elems(spec),
        "sk_band": "n" if spec.swap_ab else "m",
        "sk_across": "m" if spec.swap_ab else "n",
    }


def tensor_values(spec: Spec) -> dict[str, object]:
    """The tensors `gemm` takes after C: the bias and stream-K's workspace; split-K "separate"
    takes only its workspace (the reduce kernel takes the bias)."""
    if shared.is_split_k_separate(spec):
        sep = separate_values(spec)
        extra = extra_tensors(spec, shared.separate_workspace_elems(spec))
        return extra | {k: sep.pop(k) for k in ("kernel_tensors", "gemm_doc", "launch_tensors")}
    extra = extra_tensors(spec, rules_sm90.streamk_workspace_elems(spec))
    # what gemm_kernel takes after C
    return extra | {"launch_tensors": extra["host_tensors"]}


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


def role_values(spec: Spec) -> dict[str, object]:
    """The warp roles and named barrier ids the kernel names."""
    return {
        "producer_wg": rules_sm90.PRODUCER_WG,
        "mma_wg": rules_sm90.MMA_WG,
        "mma_wg_next": rules_sm90.MMA_WG + 1,
        "tma_warp": rules_sm90.TMA_WARP,
        "epilogue_warp": rules_sm90.EPILOGUE_WARP,
        "epilogue_barrier_id": rules_sm90.EPILOGUE_BARRIER_ID,
        "fixup_barrier_id": rules_sm90.FIXUP_BARRIER_ID,
    }


def separate_reduce_values(spec: Spec) -> dict[str, object]:
    """Split-K "separate": the workspace and reduce kernel (its tensors are tensor_values')."""
    if not shared.is_split_k_separate(spec):
        return {}
    sep = separate_values(spec)
    for key in ("kernel_tensors", "gemm_doc", "launch_tensors"):
        del sep[key]
    return sep


def scheduler_kind(spec: Spec) -> str:
    """The scheduler partial's name: split-K reduce = "separate" has its own."""
    return "split_k_separate" if shared.is_split_k_separate(spec) else spec.scheduler.kind


def doc_values(spec: Spec) -> dict[str, object]:
    """The facts the docstring's parameters and Pipeline notes print (sm90/_docs.py.j2)."""
    n_atoms = rules_sm90.wgmma_n_atoms(spec.tile.n)
    return {
        "scheduler_kind": scheduler_kind(spec),
        "max_clusters": docs.max_clusters(spec),
        "tma_store": isinstance(spec.epilogue, TmaStoreEpilogue),
        "acc_regs": rules_sm90.accumulator_regs(spec),
        "smem_limit_note": rules_common.smem_limit_note(spec),
        "sk_workspace_bytes": rules_sm90.streamk_workspace_elems(spec) * shared.ACC_BYTES,
        "sk_slot_kib": rules_common.kib(shared.streamk_tile_elems(spec) * shared.ACC_BYTES),
        "wgmma_m": rules_sm90.WGMMA_M,
        "wgmma_n": spec.tile.n // n_atoms,
        "wgmma_atoms": (
            spec.tile.m // (rules_sm90.WGMMA_M * rules_sm90.tile_warpgroups(spec)) * n_atoms
        ),
    }


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
        "scheduler_partial": f"sm90/scheduler/{scheduler_kind(spec)}.py.j2",
        "reduce_partial": f"sm90/reduce/{shared.reduce_kind(spec)}.py.j2",
        "epilogue_partial": (
            "sm90/epilogue/partial.py.j2"
            if separate
            else f"sm90/epilogue/{spec.epilogue.style}.py.j2"
        ),
    }


def values(spec: Spec) -> Sm90Values:
    """Every value the sm_90a templates print, each from one concern, built once by keyword (a
    value set twice is a TypeError)."""
    return Sm90Values(
        pipeline_table=docs.pipeline_lines(spec),
        **doc_values(spec),
        **dtype_values(spec),
        **spec_values(spec),
        **mainloop_values(spec),
        **role_values(spec),
        **cluster_values(spec),
        **pingpong_values(spec),
        **epilogue_values(spec),
        **scheduler_values(spec),
        **fusion_values(spec),
        **bias_values(spec),
        **tensor_values(spec),
        **separate_reduce_values(spec),
        **workers_values(spec),
    )


def plan(spec: Spec) -> Plan:
    assert isinstance(spec.stages, int)
    return Plan(
        template="sm90/gemm.py.j2",
        partials=partials(spec),
        values=values(spec),
    )
