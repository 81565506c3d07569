"""Plan of a Hopper (sm_90a) kernel: every value its templates print. Every number comes from
:mod:`codegen.arch.sm90.rules`; the docstring prose from :mod:`codegen.arch.sm90.docs`.
"""

from __future__ import annotations

from codegen import rules_common
from codegen.arch import shared
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.counts import expected_counts
from codegen.arch.sm90.rules import multicast_masks, partial_vec
from codegen.plan_common import (
    CUTLASS_DTYPE,
    TORCH_DTYPE,
    Plan,
    bias_values,
    extra_tensors,
    fusion_note,
    fusion_values,
    sm_sized_values,
    table,
)
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue

# Named barrier ids (0 is sync_threads). Cooperative: the consumers' epilogue barrier is id 1
# (written in the template). Ping-pong: consumer warpgroup w (0, 1) syncs its own epilogue on
# PP_EPI_BARRIER + w and waits for its mainloop turn on PP_TURN_BARRIER + w.
PP_EPI_BARRIER = 1


PP_TURN_BARRIER = 3


WARPGROUP_THREADS = 128


def workers_values(spec: Spec) -> dict[str, object]:
    """The persistent grids sized by the GPU's SM count (static persistent, split-K's clusters,
    stream-K); the grid scheduler and split-K "separate" launch a CTA (cluster) per tile."""
    h200 = (rules_sm90.SM_COUNT, "an H100 / H200 SXM", (9, 0))
    if rules_sm90.is_stream_k(spec):
        return sm_sized_values(
            *h200, 1, "one CTA", worker_cap="SK_CTAS", worker_cap_note="the workspace's slots"
        )
    if rules_sm90.is_split_k(spec):
        n = rules_sm90.splits(spec)
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
        "epilogue_heading": "f32 accumulators -> this K share's workspace slot",
        # the GEMM kernel takes only the workspace; bias and C's values are the reduce kernel's
        "launch_tensors": ["workspace"],
    }


def plan(spec: Spec) -> Plan:
    assert isinstance(spec.stages, int)
    t = spec.tile
    stages = spec.stages
    wgs = rules_sm90.consumer_warpgroups(spec)
    pingpong = rules_sm90.is_pingpong(spec)
    tile_wgs = rules_sm90.tile_warpgroups(spec)  # warpgroups whose wgmma covers one tile
    epi_sets = rules_sm90.epilogue_buffer_sets(spec)
    cm, cn = spec.cluster.m, spec.cluster.n
    clustered = spec.cluster.size > 1
    tma_epi = isinstance(spec.epilogue, TmaStoreEpilogue)
    persistent = isinstance(spec.scheduler, PersistentScheduler)
    split = rules_sm90.is_split_k(spec)  # reduced over the cluster through DSMEM
    separate = rules_sm90.is_split_k_separate(spec)  # reduced by a second kernel
    splits = rules_sm90.splits(spec)
    streamk = rules_sm90.is_stream_k(spec)
    sk_ctas = rules_sm90.streamk_ctas(spec)
    out = spec.epilogue.out_dtype or spec.dtype
    mma_k = rules_common.mma_k(spec.dtype)  # K depth of one wgmma: 16 (f16/bf16) or 32 (e4m3)
    multiples = rules_sm90.shape_multiples(spec)
    multiples_note = (
        f"any M; N and K multiples of {multiples['N']}"
        if multiples["N"] == multiples["K"]
        else f"any M; N a multiple of {multiples['N']}, K of {multiples['K']}"
    )
    stage = rules_sm90.stage_bytes(spec)
    smem = rules_sm90.smem_bytes(spec, stages)
    epi_bytes = rules_sm90.tma_store_smem_bytes(spec)
    staging_bytes = rules_sm90.splitk_staging_bytes(spec)
    staged = rules_sm90.staged_arrives(spec)
    consumed = rules_sm90.consumed_arrives(spec)
    empty = rules_sm90.empty_arrives(spec)
    readers = cm + cn - 1
    row0, col0 = multicast_masks(cm, cn)
    sm_count = (spec.scheduler.sm_count or rules_sm90.SM_COUNT) if persistent else 0
    max_clusters = sm_count // spec.cluster.size if persistent else 0
    if split:
        max_clusters = rules_sm90.splitk_max_clusters(spec)
    raster_note = ""
    if persistent or split:
        raster = spec.scheduler.raster if persistent else "m"
        raster_note = f"along {raster.upper()}, striding by the number of clusters"
    mcast_note = ""
    if clustered:
        parts = [f"A multicast to {cn} CTAs"] * (cn > 1) + [f"B multicast to {cm} CTAs"] * (cm > 1)
        mcast_note = " (" + ", ".join(parts) + ")"
    consumers = f"wgmma ({wgs} consumer warpgroup{'s' if wgs > 1 else ''})"
    empty_who = f"{readers} CTA{'s' if readers > 1 else ''} x {4 * tile_wgs} consumer warps"
    if pingpong:
        consumers = f"wgmma ({wgs} ping-pong consumer warpgroups, alternate tiles)"
        empty_who += ": the warpgroup owning the tile"
    rows = [
        ("ring", "producer -> consumer", "stages", "bytes/stage", "full arrives", "empty arrives"),
        (
            "A/B SMEM",
            f"TMA (warp 0) -> {consumers}",
            str(stages),
            str(stage),
            f"1 + {stage} tx bytes",
            f"{empty} ({empty_who})",
        ),
    ]
    if tma_epi:
        rows.append(
            (
                "C sub-tiles",
                "consumers (stmatrix) -> TMA store",
                f"{epi_sets} x {rules_sm90.EPI_STAGES}" if pingpong else str(rules_sm90.EPI_STAGES),
                str(epi_bytes // (epi_sets * rules_sm90.EPI_STAGES)),
                "named barrier",
                "bulk wait_group",
            )
        )
    if split:
        peer_ctas = f"{splits - 1} peer CTA{'s' if splits > 2 else ''}"
        peer_ranks = f"ranks 1..{splits - 1}" if splits > 2 else "rank 1"
        rows += [
            (
                "staged",
                f"{peer_ranks} consumers -> rank 0 consumers",
                "1",
                str(staging_bytes),
                f"{staged} ({peer_ctas} x {4 * wgs} consumer warps)",
                "-",
            ),
            (
                "consumed",
                "rank 0 consumers -> each peer's consumers",
                "1",
                "-",
                f"{consumed} (rank 0's {4 * wgs} consumer warps)",
                "-",
            ),
        ]
    pipeline = table(rows) + [
        "",
        (
            f"SMEM {smem} B of {rules_common.SMEM_LIMIT_BYTES} ({stages} x {rules_common.kib(stage)} KiB ring"
            + (f" + {rules_common.kib(epi_bytes)} KiB C sub-tiles" if tma_epi else "")
            + (f" + {rules_common.kib(staging_bytes)} KiB split-K staging" if split else "")
            + " + barriers and alignment); accumulators in registers: "
            f"{rules_sm90.accumulator_regs(spec)} f32 per consumer thread"
        ),
    ]
    if pingpong:
        acc_regs = rules_sm90.accumulator_regs(spec)
        turn, epi_bar, wg_t = PP_TURN_BARRIER, PP_EPI_BARRIER, WARPGROUP_THREADS
        epi_own = " and stores through its own set of C sub-tiles." if tma_epi else "."
        pipeline += [
            "",
            "Ping-pong: consumer warpgroup w (0, 1) computes the CTA's tiles w, w + 2, w + 4, ..",
            f"(each a whole tile, {acc_regs} f32 accumulators per thread). The producer fills the",
            "ring in tile order, so after each of its tiles a warpgroup skips the other's k_tiles",
            f"ring positions (ring_advance). Turnstile: named barrier {turn} + w ({2 * wg_t} threads)",
            "is warpgroup w's turn: it waits there (bar.sync) before each mainloop but the CTA's",
            "first, and after its mainloop arrives (bar.arrive) on the other's when the CTA has a",
            "next tile; so mainloops alternate and each epilogue overlaps the other warpgroup's",
            f"mainloop. Each warpgroup syncs its epilogue on named barrier {epi_bar} + w ({wg_t}",
            f"threads){epi_own}",
        ]
    if split:
        pipeline += [
            "",
            "Split K: CTA rank r of a cluster accumulates k-tiles [r * k_tiles // SPLITS,",
            "(r + 1) * k_tiles // SPLITS) of the cluster's output tile (an empty range contributes",
            "zeros). Ranks 1.. write their f32 fragments to their own `staging` SMEM and arrive",
            "(release, cluster scope) on rank 0's `staged` barrier; rank 0 waits on it (acquire,",
            "cluster scope), reads each peer's staging through DSMEM (ld.shared::cluster) in rank",
            "order 1, 2, .., adds into its registers, arrives on every peer's `consumed` barrier and",
            "stores C. A peer waits on its `consumed` barrier before it overwrites its staging for",
            "the next tile, and before it exits. Fixed summation order: deterministic.",
        ]
    if separate:
        sep_slot_kib = rules_common.kib(rules_sm90.separate_tile_elems(spec) * rules_sm90.ACC_BYTES)
        ws_mib = rules_sm90.separate_workspace_elems(spec) * rules_sm90.ACC_BYTES / 2**20
        pipeline += [
            "",
            "Split K, separate reduce: the GEMM kernel runs one CTA per (tile, K share), no cluster:",
            "CTA b accumulates k-tiles [s * k_tiles // SPLITS, (s + 1) * k_tiles // SPLITS) of tile",
            "b // SPLITS, s = b % SPLITS (an empty range stores zeros), and stores its f32 partial",
            "to workspace slot [s][tile], laid out like C. The reduce kernel, launched right after",
            "on the same stream (so it sees every partial), runs one CTA per tile: each thread sums",
            "16-byte vectors of the SPLITS slots in split order 0, 1, .. (deterministic), applies",
            "the epilogue and stores C, predicated on M and N.",
            f"Workspace: {shared.splitk_max_tiles_line(spec)} x {sep_slot_kib} KiB slots =",
            f"{ws_mib:g} MiB, fixed at generation time (AOT shim: allocated once). A call with more",
            "than MAX_TILES output tiles is rejected by launcher() and by the AOT shim",
            "(cudaErrorInvalidValue), and a direct `gemm` call computes only the first MAX_TILES",
            "tiles: a fixed capacity keeps the workspace a static argument, allocated once.",
        ]
    if streamk:
        ws_bytes = rules_sm90.streamk_workspace_elems(spec) * rules_sm90.ACC_BYTES
        pipeline += [
            "",
            "Stream-K: CTA b runs MAC iterations [b * T // CTAS, (b + 1) * T // CTAS) of the",
            "T = tiles x k_tiles, tile after tile (tiles along M). A CTA that does not run a",
            "tile's first k-tile (only its first unit can be such) stores its f32 partial in its",
            "workspace slot, as 16-byte vectors per consumer thread, then thread 0 stores its flag",
            "(st.release.gpu) after a named barrier. The finisher (its last unit) has thread 0 wait",
            "on each such CTA's flag (ld.acquire.gpu), lowest CTA first; after a named barrier every",
            "consumer adds that partial (fixed order: deterministic) and thread 0 clears the flag for the",
            f"next launch. Workspace: {ws_bytes} B of global memory ({sk_ctas} x {rules_common.kib(rules_sm90.streamk_tile_elems(spec) * rules_sm90.ACC_BYTES)} KiB slots + flags).",
        ]
    sched_note = "grid (one cluster per cluster tile)"
    if persistent:
        sched_note = (
            f"persistent, raster along {spec.scheduler.raster.upper()}, max_workers(sm_count) "
            f"clusters (the GPU's SMs size the grid: {max_clusters} on an H200)"
        )
        if spec.scheduler.group > 1:
            sched_note += f", tile swizzle group {spec.scheduler.group}"
    if split:
        sched_note = (
            f"persistent split-K over {splits} CTAs, raster along M, max_workers(sm_count) "
            f"clusters ({max_clusters} on an H200)"
        )
    if streamk:
        sched_note = (
            f"stream-K: one CTA per SM of the GPU, at most {sk_ctas}, run equal shares of all tiles' "
            "k-tiles; the CTA that runs a tile's first k-tile finishes it"
        )
    if separate:
        sched_note = (
            f"split-K over {splits} CTAs per tile (grid of tiles x {splits}, no cluster), "
            "reduced by a second kernel"
        )
    cluster_note = f"{cm}x{cn}" + mcast_note
    if split:
        cluster_note = (
            f"{splits}x1 for split-K ({splits} CTAs share one output tile and split its K range)"
        )
    epilogue_note = "TMA store through SMEM sub-tiles" if tma_epi else "direct store"
    if separate:
        epilogue_note = "f32 partials to a workspace; the reduce kernel sums them and stores C"
    if split:
        epilogue_note += " by cluster rank 0 after a DSMEM reduction"
    values: dict[str, object] = {
        "title": (
            f"Hopper (sm_90a) {spec.dtype} GEMM, {t} tile, {stages}-stage ring, {wgs} consumer "
            f"warpgroup{'s' if wgs > 1 else ''}"
            + (" (ping-pong)" if pingpong else "")
            + (f", cluster {cm}x{cn} with TMA multicast" if clustered else "")
            + (", swap AB (C^T = B @ A^T)" if spec.swap_ab else "")
            + (f", split-K over {splits}-CTA clusters" if split else "")
            + (", stream-K" if streamk else "")
            + (f", split-K over {splits} CTAs with a separate reduce kernel" if separate else "")
            + "."
        ),
        "dtype_note": f"{spec.dtype} in, f32 accumulate, {out} out" + fusion_note(spec),
        "parameters": [
            ("arch", spec.arch),
            ("dtype", spec.dtype),
            ("tile (M, N, K)", f"({t.m}, {t.n}, {t.k})"),
            (
                "MMA",
                (
                    f"wgmma.mma_async m64n{t.n}k{mma_k}, {t.m // (64 * tile_wgs)} per warpgroup "
                    "per k-block"
                ),
            ),
            *([("consumer mode", "ping-pong: 2 warpgroups, whole tiles each")] if pingpong else []),
            ("stages", str(stages)),
            ("swizzle", str(spec.swizzle)),
            ("cluster", cluster_note),
            ("swap AB", "yes: the kernel computes C^T = B @ A^T" if spec.swap_ab else "no"),
            ("epilogue", epilogue_note),
            ("scheduler", sched_note),
        ],
        "pipeline_table": pipeline,
        "shape_note": (
            multiples_note + " (TMA needs 16-byte row strides). Tails are exact: TMA "
            "zero-fills loads past M, N and K, and "
            + (
                "the TMA store clips at the edges of C."
                if tma_epi
                else "the direct epilogue predicates every store on M and N."
            )
        ),
        "io_dtype": CUTLASS_DTYPE[spec.dtype],
        "out_dtype": CUTLASS_DTYPE[out],
        "torch_dtype": TORCH_DTYPE[spec.dtype],
        "torch_out_dtype": TORCH_DTYPE[out],
        "out_dtype_name": out,
        "tiler": (t.m, t.n, t.k),
        "stages": stages,
        "consumer_wg": wgs,
        "threads": rules_sm90.threads(spec),
        "mma_threads": 128 * wgs,
        "producer_regs": rules_sm90.PRODUCER_REGS,
        "consumer_regs": rules_sm90.consumer_regs(spec),
        "regs_note": (
            f"128 x {rules_sm90.PRODUCER_REGS} + {128 * wgs} x {rules_sm90.consumer_regs(spec)} "
            f"<= {rules_sm90.REGISTER_FILE}"
        ),
        "tx_bytes": rules_sm90.stage_bytes(spec),
        "empty_arrives": empty,
        "empty_note": (
            f"every consumer warp ({4 * wgs}) of every CTA this producer fills ({readers})"
            if not pingpong
            else f"the {4 * tile_wgs} warps of the one warpgroup that consumes the stage"
        ),
        "clustered": clustered,
        "cluster_launch": clustered or split,  # launched with a hardware cluster (nvvm, barriers)
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
        "a_ring_elems": t.m * t.k * stages,
        "b_ring_elems": t.n * t.k * stages,
        "mmas_per_stage": rules_common.mmas_per_stage(spec),
        "mma_k": mma_k,
        "epi_m": rules_sm90.epi_m(spec),
        "epi_n": rules_sm90.EPI_N,
        "epi_stages": rules_sm90.EPI_STAGES,
        "epi_subtiles": (t.m // rules_sm90.epi_m(spec), t.n // rules_sm90.EPI_N),
        "c_ring_elems": rules_sm90.epi_m(spec)
        * rules_sm90.EPI_N
        * rules_sm90.EPI_STAGES
        * epi_sets,
        "epi_buffers": rules_sm90.EPI_STAGES * epi_sets,
        "epi_buffers_name": "EPI_BUFFERS" if pingpong else "EPI_STAGES",
        "epi_barrier_args": (
            "barrier_id=epi_bar, number_of_threads=WG_THREADS"
            if pingpong
            else "barrier_id=1, number_of_threads=MMA_THREADS"
        ),
        "pp_epi_barrier": PP_EPI_BARRIER,
        "pp_turn_barrier": PP_TURN_BARRIER,
        "pingpong": pingpong,
        "wg_threads": WARPGROUP_THREADS,
        "turn_threads": 2 * WARPGROUP_THREADS,
        "raster": spec.scheduler.raster if persistent else "m",
        "raster_note": raster_note,
        "splits": splits,
        "staged_arrives": staged,
        "staged_note": (
            f"rank 0's staged barrier: every consumer warp ({4 * wgs}) of every peer ({splits - 1})"
        ),
        "consumed_arrives": consumed,
        "consumed_note": f"a peer's consumed barrier: every consumer warp ({4 * wgs}) of rank 0",
        "staging_elems": rules_sm90.splitk_staging_elems(spec),
        "shape_multiples": multiples,
        "swap_ab": spec.swap_ab,
        **fusion_values(spec),
        "store_vec": 1 if spec.swap_ab else 2,
        "store_bits": (1 if spec.swap_ab else 2) * 8 * rules_common.DTYPE_BYTES[out],
        "store_vec_note": (
            "swap AB: a thread's adjacent values are adjacent rows of C, one element per store"
            if spec.swap_ab
            else "wgmma gives each thread pairs of adjacent columns: one 2-element store each"
        ),
        "group": spec.scheduler.group if persistent else 1,
        "raster_major": spec.scheduler.raster if persistent else "m",
        "raster_minor": ("n" if spec.scheduler.raster == "m" else "m") if persistent else "n",
        "smem_bytes": smem,
        "tma_loads_c": rules_sm90.tma_loads_c(spec),
        "c_full_barriers": rules_sm90.c_full_barriers(spec),
        "c_tx_bytes": rules_sm90.epi_m(spec) * rules_sm90.EPI_N * rules_common.DTYPE_BYTES[out],
        # the DSL picks the wgmma SMEM atom from the K row width; the swizzle rule makes it this
        "swizzle_atom": {"32B": "SW32", "64B": "SW64", "128B": "SW128"}[str(spec.swizzle)],
        **bias_values(spec),
        **extra_tensors(
            spec,
            rules_sm90.streamk_workspace_elems(spec) + rules_sm90.separate_workspace_elems(spec),
        ),
        # the sm_90a docstrings keep the plain entry-point line, bias or not (their generated
        # files are pinned); `gemm`'s own docstring names the bias
        "sk_ctas": rules_sm90.streamk_ctas(spec),
        "sk_tile_elems": rules_sm90.streamk_tile_elems(spec),
        "sk_workspace_elems": rules_sm90.streamk_workspace_elems(spec),
        "epilogue_heading": f"f32 accumulators -> {out} -> C",
        **workers_values(spec),
    }
    values["launch_tensors"] = values["host_tensors"]  # what gemm_kernel takes after C
    if separate:
        values |= separate_values(spec)
    return Plan(
        template="sm90/gemm.py.j2",
        partials={
            "epilogue_partial": (
                "sm90/epilogue/partial.py.j2"
                if separate
                else f"sm90/epilogue/{spec.epilogue.style}.py.j2"
            ),
            "scheduler_partial": (
                "sm90/scheduler/split_k_separate.py.j2"
                if separate
                else f"sm90/scheduler/{spec.scheduler.kind}.py.j2"
            ),
        },
        values=values,
        expected_counts=expected_counts(spec),
    )
