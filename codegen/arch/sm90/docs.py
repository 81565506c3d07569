"""The docstring prose of a Hopper (sm_90a) kernel: its title, parameter list, pipeline table and
budget line, and the comments on its constants, each built from the numbers in
:mod:`codegen.arch.sm90.rules` (a number in the prose is printed from its value, never restated).
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
    TIMELINE_HEAD,
    Ring,
    plural,
    ring_lines,
    timeline_rows,
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


def timeline(spec: Spec) -> list[str]:
    """The docstring's timeline: each role's loop in program order, with the barriers it waits on
    and arrives on under the names the kernel uses."""
    mmas = rules_common.mmas_per_stage(spec)
    wgs = rules_sm90.consumer_warpgroups(spec)
    pingpong = rules_sm90.is_pingpong(spec)
    clustered = spec.cluster.size > 1
    split_k, stream_k = shared.is_split_k_cluster(spec), shared.is_stream_k(spec)
    separate = shared.is_split_k_separate(spec)
    tma_store = isinstance(spec.epilogue, TmaStoreEpilogue)
    if stream_k:
        loop, ks = "per unit (tile, [k_begin, k_end))", "per k-tile of the unit"
    elif split_k:
        loop, ks = "per cluster tile", "per k-tile of this rank's share"
    elif separate:
        loop, ks = "its (tile, K share)", "per k-tile of the share"
    elif isinstance(spec.scheduler, PersistentScheduler):
        loop, ks = "per tile", "per k-tile"
    else:
        loop, ks = "its tile", "per k-tile"
    cast = [name for name, on in (("A", spec.cluster.n > 1), ("B", spec.cluster.m > 1)) if on]
    load = "TMA A, B into s" + (f" ({', '.join(cast)} multicast)" if cast else "")
    tma_steps = f"{loop}: {ks}: wait empty[s] -> arm full[s] (TX_BYTES) -> {load}"
    if clustered:
        tma_steps += "; tail: wait empty[s] on the last STAGES slots (peers' releases)"
    release = "arrive empty[s]" + (
        " once per warpgroup on every CTA that filled it" if clustered else ""
    )
    per_k = (
        f"wait full[s] -> {mmas} wgmma -> commit_group -> wait_group(1) -> release the previous "
        f"stage ({release})"
    )
    if pingpong:
        role = (
            f"consumer warpgroups (MMA_WG = {rules_sm90.MMA_WG}, {rules_sm90.MMA_WG + 1}; a tile "
            "each, alternating)"
        )
        mainloop = (
            f"{loop}: bar.sync TURN_BARRIER_ID + consumer (not the first tile) -> {ks}: {per_k}; "
            "bar.arrive TURN_BARRIER_ID + 1 - consumer (a next tile) -> wait_group(0) -> release the last stage -> "
            "skip the other warpgroup's k_tiles ring positions"
        )
    else:
        role = f"consumer warpgroup{'s' if wgs > 1 else ''} (MMA_WG = {rules_sm90.MMA_WG}"
        role += f", {wgs} WGs)" if wgs > 1 else ")"
        mainloop = f"{loop}: {ks}: {per_k}; then wait_group(0) -> release the last stage"
    if split_k:
        mainloop += (
            "; ranks 1..: wait consumed (the previous tile) -> write staging -> arrive staged "
            "on rank 0; rank 0: wait staged -> add the peers' staging (DSMEM) -> arrive consumed "
            "on every peer"
        )
    if stream_k:
        mainloop += (
            "; not the tile's first k-tile: partial to the workspace -> bar.sync "
            "FIXUP_BARRIER_ID -> release flags[bidx]; else with later CTAs: acquire each "
            "flags[peer] -> bar.sync FIXUP_BARRIER_ID -> add its partial"
        )
    if separate:
        epi = (
            "f32 partial to the workspace; then the reduce kernel (REDUCE_THREADS = "
            f"{shared.REDUCE_THREADS}) sums the splits and stores C"
        )
    elif tma_store:
        store_warp = (
            "each warpgroup's first warp"
            if pingpong
            else f"EPILOGUE_WARP = {rules_sm90.EPILOGUE_WARP}"
        )
        beta = (
            "TMA-load C into the buffer -> wait c_full -> " if rules_sm90.tma_loads_c(spec) else ""
        )
        epi = (
            f"per sub-tile: {beta}registers -> SMEM buffer -> bar.sync EPILOGUE_BARRIER_ID"
            f"{' + consumer' if pingpong else ''} -> TMA store by {store_warp}"
        )
    else:
        epi = "registers -> direct store of C"
    who = " (rank 0)" if split_k else " (the tile's first k-tile)" if stream_k else ""
    rows = [
        (
            f"producer warpgroup (PRODUCER_WG = {rules_sm90.PRODUCER_WG}), its warp TMA_WARP = {rules_sm90.TMA_WARP}",
            tma_steps,
        ),
        (role, mainloop + f"; epilogue{who}: {epi}"),
    ]
    return [TIMELINE_HEAD] + timeline_rows(rows)
