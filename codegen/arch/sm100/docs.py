"""The docstring prose of a Blackwell (sm_100a) kernel: its title, parameter list, pipeline table
and budget line, and the comments on its constants, each built from the numbers in
:mod:`codegen.arch.sm100.rules` (a number in the prose is printed from its value, never restated).
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.arch.sm100 import rules as rules_sm100
from codegen.arch.sm100.rules import (
    EPI_WARPS_RANGE,
    EPILOGUE_WARPS,
    PAIR_MASK,
    cluster_kind,
    is_persistent,
    is_tma_store,
)
from codegen.plan_common import (
    DOC_WIDTH,
    Ring,
    binary,
    plural,
    ring_lines,
    timeline_rows,
    wrap_words,
)
from codegen.spec import Spec


def _wrap(text: str, width: int = DOC_WIDTH) -> list[str]:
    """Split the budget line at "; " when it is wider than the docstring (and a part still wider
    between words)."""
    if len(text) <= width or "; " not in text:
        return wrap_words(text, width)
    head, tail = text.split("; ", 1)
    return [*wrap_words(head + ";", width), *wrap_words(tail, width)]


def pipeline_lines(spec: Spec) -> list[str]:
    """The docstring's Pipeline table: every ring, producer -> consumer, its buffers and what its
    full and empty barriers count (templates/sm100/_docs.py.j2 adds the notes of the variant's
    mechanisms, then :func:`budget_lines`)."""
    assert isinstance(spec.stages, int)
    kind, persistent = cluster_kind(spec), is_persistent(spec)
    stages, stage = spec.stages, rules_sm100.stage_bytes(spec)
    tx = rules_sm100.full_tx_bytes(spec)
    epi_bytes = rules_sm100.epilogue_smem_bytes(spec)
    ws = spec.warp_specialized
    tma, mma_warp = rules_sm100.TMA_WARP, rules_sm100.MMA_WARP
    consumer = f"MMA (warp {mma_warp})" if ws else f"MMA (warp {tma})"
    epi_warps = (
        f"epilogue (warps {EPI_WARPS_RANGE})"
        if persistent
        else f"epilogue ({EPILOGUE_WARPS} warps)"
    )
    rings: list[Ring] = []
    if kind == "pair":
        rings.append(
            Ring(
                "A/B SMEM",
                f"TMA (warp {tma}, both CTAs) -> MMA (warp {mma_warp}, leader)",
                f"{plural(stages, 'stage')} x {stage} bytes per CTA",
                f"1 + {tx} tx bytes (leader's)",
                f"1 (leader's tcgen05.commit, mask {binary(PAIR_MASK, 2)})",
            )
        )
    else:
        empty = (
            f"{rules_sm100.empty_arrives(spec)} (tcgen05.commit of each CTA sharing the slot)"
            if kind == "multicast"
            else "1 (tcgen05.commit)"
        )
        rings.append(
            Ring(
                "A/B SMEM",
                f"TMA (warp {tma}) -> {consumer}",
                f"{plural(stages, 'stage')} x {stage} bytes",
                f"1 + {tx} tx bytes",
                empty,
            )
        )
    mma = f"MMA (warp {mma_warp}, leader)" if kind == "pair" else consumer
    both = ", both CTAs" if kind == "pair" else ""
    commit = (
        f"1 per CTA (leader's tcgen05.commit, mask {binary(PAIR_MASK, 2)})"
        if kind == "pair"
        else "1 (tcgen05.commit)"
    )
    acc_flow = f"{mma} -> {epi_warps.removesuffix(')')}{both})"
    if persistent:
        per_cta = " x 2 CTAs" if kind == "pair" else ""
        rings.append(
            Ring(
                "accumulator",
                acc_flow,
                f"{plural(spec.accumulators, 'slot')} x {spec.tile.n} TMEM columns",
                commit,
                f"{rules_sm100.acc_empty_arrives(spec)} (one per epilogue warp{per_cta})",
            )
        )
    else:
        rings.append(Ring("accumulator", acc_flow, "1 slot", commit, ""))
    if shared.is_split_k_cluster(spec):
        n = shared.splits(spec)
        peers = f"ranks 1..{n - 1}" if n > 2 else "rank 1"
        staged_from = f"{plural(n - 1, 'peer CTA')} x {EPILOGUE_WARPS} epilogue warps"
        rings += [
            Ring(
                "staged",
                f"{peers} epilogue -> rank 0 epilogue",
                f"1 buffer x {rules_sm100.splitk_staging_bytes(spec)} bytes",
                f"{rules_sm100.staged_arrives(spec)} ({staged_from})",
                "",
            ),
            Ring(
                "consumed",
                "rank 0 epilogue -> each peer's epilogue",
                "",
                f"{rules_sm100.consumed_arrives(spec)} (rank 0's {EPILOGUE_WARPS} epilogue warps)",
                "",
            ),
        ]
    if rules_sm100.is_dynamic(spec):
        readers = rules_sm100.clc_readers(spec)
        rings.append(
            Ring(
                "tile answer",
                f"try_cancel (warp {rules_sm100.TMA_WARP}) -> every warp",
                f"1 slot x {rules_sm100.CLC_RESPONSE_BYTES} bytes",
                f"1 + {rules_sm100.CLC_RESPONSE_BYTES} tx bytes",
                f"{readers} (one per reading warp)",
            )
        )
    if is_tma_store(spec):
        bufs = rules_sm100.EPI_BUFS
        rings.append(
            Ring(
                "C sub-tiles",
                f"{epi_warps} -> TMA store",
                f"{plural(bufs, 'buffer')} x {epi_bytes // bufs} bytes",
                "bulk async-group",
                "wait_group.read",
            )
        )
    if rules_sm100.loads_c_by_tma(spec):
        c_bytes = rules_sm100.c_load_bytes(spec)
        rings.append(
            Ring(
                "C in (beta)",
                f"TMA -> {epi_warps}",
                f"one load of {c_bytes} bytes per sub-tile, into its buffer",
                f"1 + {c_bytes} tx bytes (c_full)",
                "",
            )
        )
    return ring_lines(rings, DOC_WIDTH)


def budget_lines(spec: Spec) -> list[str]:
    """The SMEM and TMEM budget line, after the Pipeline section's notes."""
    assert isinstance(spec.stages, int)
    kind = cluster_kind(spec)
    stages, stage = spec.stages, rules_sm100.stage_bytes(spec)
    smem = rules_sm100.smem_bytes(spec, stages)
    epi_bytes = rules_sm100.epilogue_smem_bytes(spec)
    tmem = rules_sm100.spec_tmem_columns(spec)
    ring = f"{stages} x {rules_common.kib(stage)} KiB ring"
    parts = [ring]
    if epi_bytes and shared.is_split_k_cluster(spec):
        parts.append(f"{rules_common.kib(epi_bytes)} KiB split-K staging")
    elif epi_bytes:
        bufs = rules_sm100.EPI_BUFS
        parts.append(f"{bufs} x {rules_common.kib(epi_bytes // bufs)} KiB C sub-tiles")
    rest = smem - stages * stage - epi_bytes
    parts.append(f"{rules_common.kib(rest)} KiB barriers and alignment")
    per_cta = " per CTA" if kind == "pair" else ""
    budget = (
        f"SMEM{per_cta} {smem} B of {rules_common.SMEM_LIMIT_BYTES} ({' + '.join(parts)}); "
        f"TMEM {tmem} of {rules_sm100.TMEM_COLUMNS} columns{per_cta}"
    )
    return _wrap(budget)


def _epilogue_store(spec: Spec, store_warp: str) -> str:
    """The epilogue's steps per tile after its accumulator wait; `store_warp` issues TMA stores."""
    if not is_tma_store(spec):
        return f"per chunk: tcgen05.ld -> {spec.epilogue.style} store of C"
    beta = "TMA-load C into the buffer -> " if rules_sm100.loads_c_by_tma(spec) else ""
    wait = "wait c_full -> " if beta else ""
    odd = "; then wait for the last store's read" if rules_sm100.odd_subtiles(spec) else ""
    return f"per sub-tile: {beta}tcgen05.ld -> {wait}SMEM buffer -> TMA store by {store_warp}{odd}"


def timeline(spec: Spec) -> list[str]:
    """The docstring's timeline: each warp role's loop in program order, with the barriers it
    waits on and arrives on under the names the kernel uses."""
    kind, persistent = cluster_kind(spec), is_persistent(spec)
    mmas = rules_common.mmas_per_stage(spec)
    # how the producer arms and fills a slot, and how the MMA warp commits it back
    if kind == "pair":
        arm = (
            "leader only: arm full[s] (TX_BYTES, both CTAs' bytes) -> each CTA: TMA its A, B "
            "halves, completing on the leader's full[s]"
        )
        commit = "commit empty[s] of both CTAs (PAIR_MASK)"
        acc_commit = "commit acc_full[slot] of both CTAs (PAIR_MASK)"
    elif kind == "multicast":
        arm = "arm full[s] (TX_BYTES) -> TMA A slice (mask_a), B slice (mask_b), multicast"
        commit = "commit empty[s] of every sharer (mask_a | mask_b)"
        acc_commit = "commit acc_full[slot]"
    else:
        arm = "arm full[s] (TX_BYTES) -> TMA A, B into s"
        commit = "commit empty[s]"
        acc_commit = "commit acc_full[slot]"
    per_k = f"wait full[s] -> {mmas} tcgen05.mma -> {commit}"
    if not spec.warp_specialized:
        steps = (
            f"per step k < k_tiles + STAGES - 1: if k < k_tiles, wait empty[s] -> {arm}; "
            f"then, STAGES - 1 k-tiles behind, {per_k}; after the loop commit acc_full"
        )
        return timeline_rows(
            [
                (f"TMA warp (TMA_WARP = {rules_sm100.TMA_WARP})", steps),
                (
                    f"all {EPILOGUE_WARPS} warps",
                    "wait acc_full (once, phase 0) -> " + _epilogue_store(spec, "TMA_WARP"),
                ),
            ]
        )
    tail = "; tail: wait empty[s] on the last STAGES slots (the last commits)"
    if not persistent:
        store = _epilogue_store(spec, "TMA_WARP")
        mma_role = f"MMA warp (MMA_WARP = {rules_sm100.MMA_WARP}" + (
            ", leader)" if kind == "pair" else ")"
        )
        return timeline_rows(
            [
                (
                    f"TMA warp (TMA_WARP = {rules_sm100.TMA_WARP})",
                    f"per k-tile: wait empty[s] -> {arm}{tail}",
                ),
                (mma_role, f"per k-tile: {per_k}; then {acc_commit.replace('[slot]', '')}"),
                (
                    f"all {EPILOGUE_WARPS} warps, after their role",
                    f"wait acc_full (once, phase 0) -> {store}",
                ),
            ]
        )
    # persistent: the loop each role runs
    dynamic = rules_sm100.is_dynamic(spec)
    if shared.is_split_k_cluster(spec):
        loop, ks = "per cluster tile", "per k-tile of this rank's share"
    elif shared.is_split_k_separate(spec):
        loop, ks = "its one (tile, K share)", "per k-tile of the share"
    elif shared.is_stream_k(spec):
        loop, ks = "per unit (tile, [k_begin, k_end))", "per k-tile of the unit"
    else:
        loop, ks = "per tile", "per k-tile"
    answer = "wait clc_full -> read the answer -> arrive clc_empty"
    ask = "wait clc_empty -> arm clc_full -> try_cancel; " if dynamic else ""
    tma_steps = f"{loop}: {ask}{ks}: wait empty[s] -> {arm}"
    if dynamic:
        tma_steps += f"; then {answer} (the next tile)"
    mma_steps = (
        f"{loop}: " + (f"{answer}; " if dynamic else "") + f"wait acc_empty[slot]; {ks}: "
        f"{per_k}; then {acc_commit}; tail: wait acc_empty on every slot"
    )
    release = "arrive acc_empty[slot]" + (" (the leader's)" if kind == "pair" else "")
    store = _epilogue_store(spec, "EPILOGUE_WARP")
    after_last = f"{release} after the last tcgen05.ld"
    if shared.is_split_k_cluster(spec):
        epi_steps = (
            f"{loop}: wait acc_full[slot]; ranks 1..: wait consumed (the previous tile) -> "
            "tcgen05.ld -> staging -> arrive staged on rank 0; rank 0: wait staged -> tcgen05.ld, "
            "add the peers' staging (DSMEM) -> store C -> arrive consumed on every peer; both "
            f"{after_last}; tail: ranks 1.. wait consumed"
        )
    elif shared.is_split_k_separate(spec):
        epi_steps = (
            f"{loop}: wait acc_full[slot] -> per chunk: tcgen05.ld -> f32 partial to the "
            f"workspace ({after_last}); then the reduce kernel (REDUCE_THREADS = "
            f"{shared.REDUCE_THREADS}) sums the splits and stores C"
        )
    elif shared.is_stream_k(spec):
        epi_steps = (
            f"{loop}: wait acc_full[slot]; not the tile's first k-tile: tcgen05.ld -> partial to "
            f"the workspace ({release}) -> bar.sync EPILOGUE_BARRIER_ID -> release flags[bidx]; "
            "else: acquire each later CTA's flags[peer] -> bar.sync EPILOGUE_BARRIER_ID -> "
            f"{store}, adding the partials ({after_last})"
        )
    else:
        epi_steps = (
            f"{loop}: "
            + (f"{answer}; " if dynamic else "")
            + f"wait acc_full[slot] -> {store} ({after_last})"
        )
    mma_role = f"MMA warp (MMA_WARP = {rules_sm100.MMA_WARP}" + (
        ", leader)" if kind == "pair" else ")"
    )
    tma_role = f"TMA warp (TMA_WARP = {rules_sm100.TMA_WARP})"
    return timeline_rows(
        [
            (tma_role, tma_steps + tail),
            (mma_role, mma_steps),
            (f"epilogue warps (EPILOGUE_WARP = {rules_sm100.EPI_WARP0})", epi_steps),
        ]
    )
