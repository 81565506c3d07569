"""The Pipeline table of a Blackwell (sm_100a) kernel's docstring: its rings in aligned columns
and the SMEM and TMEM budget line, each built from the numbers in :mod:`codegen.arch.sm100.rules`
(a number in the prose is printed from its value, never restated). The rest of the docstring's
prose is written in templates/sm100/_docs.py.j2.
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
