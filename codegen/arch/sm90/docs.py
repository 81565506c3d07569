"""The Pipeline table of a Hopper (sm_90a) kernel's docstring: its rings in aligned columns and
the budget line, each built from the numbers in :mod:`codegen.arch.sm90.rules` (a number in the
prose is printed from its value, never restated). The rest of the docstring's prose is written in
templates/sm90/_docs.py.j2.
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.rules import (
    EPI_STAGES,
    WARPGROUP_WARPS,
)
from codegen.plan_common import (
    DOC_WIDTH,
    Ring,
    plural,
    ring_lines,
    wrap_words,
)
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue


def max_clusters(spec: Spec) -> int:
    """Clusters the persistent grid runs on the flagship (what the docstring quotes)."""
    if shared.is_split_k_cluster(spec):
        return rules_sm90.splitk_max_clusters(spec)
    if not isinstance(spec.scheduler, PersistentScheduler):
        return 0
    return (spec.scheduler.sm_count or rules_sm90.SM_COUNT) // spec.cluster.size


def rings(spec: Spec) -> list[Ring]:
    """The Pipeline section: every ring, producer -> consumer, its buffers, and what its full and
    empty barriers count."""
    assert isinstance(spec.stages, int)
    wgs = rules_sm90.consumer_warpgroups(spec)
    tile_wgs = rules_sm90.tile_warpgroups(spec)
    readers = spec.cluster.m + spec.cluster.n - 1
    stage = rules_sm90.stage_bytes(spec)
    consumers = f"wgmma ({plural(wgs, 'consumer warpgroup')})"
    if rules_sm90.releases_per_warpgroup(spec):
        empty_who = f"{plural(readers, 'CTA')} x {plural(tile_wgs, 'consumer warpgroup')}"
    else:
        empty_who = f"{plural(readers, 'CTA')} x {WARPGROUP_WARPS * tile_wgs} consumer warps"
    if rules_sm90.is_pingpong(spec):
        consumers = f"wgmma ({wgs} ping-pong consumer warpgroups, alternate tiles)"
        empty_who += ": the warpgroup owning the tile"
    out = [
        Ring(
            "A/B SMEM",
            f"TMA (warp {rules_sm90.TMA_WARP}) -> {consumers}",
            f"{plural(spec.stages, 'stage')} x {stage} bytes",
            f"1 + {stage} tx bytes",
            f"{rules_sm90.empty_arrives(spec)} ({empty_who})",
        ),
    ]
    if isinstance(spec.epilogue, TmaStoreEpilogue):
        epi_sets = rules_sm90.epilogue_buffer_sets(spec)
        buffers = plural(EPI_STAGES, "buffer")
        if rules_sm90.is_pingpong(spec):
            buffers = f"{epi_sets} sets of {buffers}"
        out.append(
            Ring(
                "C sub-tiles",
                "consumers (stmatrix) -> TMA store",
                f"{buffers} x {rules_sm90.tma_store_smem_bytes(spec) // (epi_sets * EPI_STAGES)} "
                "bytes",
                "named barrier",
                "bulk wait_group",
            )
        )
    if shared.is_split_k_cluster(spec):
        splits = shared.splits(spec)
        peer_ctas = plural(splits - 1, "peer CTA")
        peer_ranks = f"ranks 1..{splits - 1}" if splits > 2 else "rank 1"
        warps = WARPGROUP_WARPS * wgs
        out += [
            Ring(
                "staged",
                f"{peer_ranks} consumers -> rank 0 consumers",
                f"1 buffer x {rules_sm90.splitk_staging_bytes(spec)} bytes",
                f"{rules_sm90.staged_arrives(spec)} ({peer_ctas} x {warps} consumer warps)",
                "",
            ),
            Ring(
                "consumed",
                "rank 0 consumers -> each peer's consumers",
                "",
                f"{rules_sm90.consumed_arrives(spec)} (rank 0's {warps} consumer warps)",
                "",
            ),
        ]
    return out


def budget_line(spec: Spec) -> str:
    """The SMEM budget and the accumulator registers."""
    assert isinstance(spec.stages, int)
    smem = rules_sm90.smem_bytes(spec, spec.stages)
    stage = rules_sm90.stage_bytes(spec)
    epi_bytes = rules_sm90.tma_store_smem_bytes(spec)
    staging = rules_sm90.splitk_staging_bytes(spec)
    kib = rules_common.kib
    return (
        f"SMEM {smem} B of {rules_common.smem_limit(spec)} ({spec.stages} x {kib(stage)} KiB ring"
        + (
            f" + {kib(epi_bytes)} KiB C sub-tiles"
            if isinstance(spec.epilogue, TmaStoreEpilogue)
            else ""
        )
        + (f" + {kib(staging)} KiB split-K staging" if shared.is_split_k_cluster(spec) else "")
        + " + barriers and alignment); accumulators in registers: "
        f"{rules_sm90.accumulator_regs(spec)} f32 per consumer thread"
    )


def pipeline_lines(spec: Spec) -> list[str]:
    """The docstring's Pipeline table and budget line (templates/sm90/_docs.py.j2 adds the notes
    of the variant's mechanisms)."""
    return ring_lines(rings(spec), DOC_WIDTH) + [""] + wrap_words(budget_line(spec), DOC_WIDTH)
