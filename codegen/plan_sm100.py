"""Plan of a Blackwell (sm_100a) kernel: every number its templates print.

The partials are chosen here, one per knob value: ``cluster/`` (single, multicast, pair),
``scheduler/`` (grid, persistent), ``epilogue/`` (direct, tma) and the mainloop (kloop, ws,
ws_persistent). Every number comes from :mod:`codegen.rules` and :mod:`codegen.rules_sm100`.
"""

from __future__ import annotations

from codegen import plan_sm90, rules, rules_sm90, rules_sm100
from codegen.plan import (
    CUTLASS_DTYPE,
    STREAMK_WIDE_DIVS,
    TORCH_DTYPE,
    Plan,
    bias_values,
    extra_tensors,
    fusion_note,
    fusion_values,
    sm_sized_values,
    table,
)
from codegen.rules_sm100 import cluster_kind, is_persistent
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue

SMEM_ATOM = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}
TMEM_LD_OP = {"32x32b": "Ld32x32bOp", "16x32bx2": "Ld16x32bx2Op"}  # by tmem_load_shape
EPI_MAX_COLS = 64  # widest tcgen05.ld repetition the direct epilogue uses per chunk
VECTOR_STORE_BYTES = 16  # the direct epilogue's st.global.v4: 16 bytes of a thread's row each
EPI_WARP0 = 2  # persistent: warps 0 (TMA) and 1 (MMA) come first, the epilogue warps after
EPI_BARRIER_ID = 1  # persistent: the epilogue warps' named barrier (0 is __syncthreads)
DSMEM_VECTOR_BYTES = 16  # split-K staging runs: st.shared.v4 / ld.shared::cluster.v4 of f32
DOC_WIDTH = 96  # wrap the docstring's budget line here


def is_tma_store(spec: Spec) -> bool:
    return isinstance(spec.epilogue, TmaStoreEpilogue)


def epilogue_chunks(spec: Spec) -> tuple[int, int]:
    """(columns per tcgen05.ld, loads per tile) of the epilogue: 64-column TMA-store sub-tiles,
    or direct-store chunks of at most EPI_MAX_COLS columns."""
    if is_tma_store(spec):
        return rules_sm100.EPI_TILE[1], rules_sm100.epi_subtiles(spec)
    cols = min(EPI_MAX_COLS, spec.tile.n)
    return cols, spec.tile.n // cols


def values_per_thread(spec: Spec) -> int:
    """Accumulator values one epilogue thread holds per output tile: a whole row (32x32b loads)
    or half a row (16x32bx2 loads of an M=64 accumulator)."""
    halves = 1 if rules_sm100.tmem_load_shape(spec) == "32x32b" else 2
    return spec.tile.n // halves


def direct_stores(spec: Spec) -> int:
    """st.global instructions of the direct epilogue (its chunk loop is unrolled): a thread's row
    run is contiguous in C, so 16-byte vectors; with swap_ab the run is a column of C (stride
    ldc), so one store per element."""
    values = values_per_thread(spec)
    if spec.swap_ab:
        return values
    return values * rules.DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype] // VECTOR_STORE_BYTES


def try_waits(spec: Spec) -> int:
    """mbarrier.try_wait sites: empty (producer), full (MMA), acc_full (epilogue), the
    producer's tail over the ring (every kernel: tcgen05.commit arrives asynchronously); the
    pair's TMEM-dealloc handshake; persistent, the MMA's acc_empty wait and its tail over the
    slots; dynamic, the tile-request handshake."""
    kind = cluster_kind(spec)
    waits = 4
    waits += 1 if kind == "pair" else 0
    waits += 2 if is_persistent(spec) else 0
    # dynamic: the producer's clc_empty wait before each request, and clc_full in next_tile,
    # inlined at its three call sites (producer, MMA, epilogue)
    waits += 1 + 3 if rules_sm100.is_dynamic(spec) else 0
    # split-K (acquire.cluster): a peer's consumed wait before restaging and before exit, rank 0's
    # staged wait
    waits += 3 if rules_sm100.is_split_k(spec) else 0
    return waits


def expected_counts_sm100(spec: Spec) -> dict[str, int]:
    """PTX instruction counts the sm_100a templates must produce for this spec.

    Each count is (instructions per issue site) x (issue sites in the template): the K and tile
    loops are not unrolled, so the PTX holds one copy of each loop body; constexpr loops (the
    epilogue's sub-tiles, barrier initialization) are unrolled.
    """
    assert isinstance(spec.stages, int)
    per_operand = rules.tma_boxes_per_operand(rules.k_row_bytes(spec), str(spec.swizzle))
    kind = cluster_kind(spec)
    mmas = rules.mmas_per_stage(spec)
    loads = 2 * per_operand
    _, loads_per_tile = epilogue_chunks(spec)
    tma_boxes = loads_per_tile * rules_sm100.epi_tma_boxes(spec) if is_tma_store(spec) else 0
    c_loads = tma_boxes if rules_sm100.loads_c_by_tma(spec) else 0
    return (
        {
            "tcgen05.mma": mmas,
            "mma cta_group::1": mmas if spec.cta_group == 1 else 0,
            # a 2-CTA kernel issues only cta_group::2 MMAs
            "mma cta_group::2": mmas if spec.cta_group == 2 else 0,
            # + beta's C sub-tile loads (TMA-store epilogue), one per box
            "cp.async.bulk.tensor": loads + c_loads,
            "TMA multicast": loads if kind == "multicast" else 0,
            # one cluster barrier (arrive + wait) after the barriers are initialized
            "barrier.cluster": 0 if kind == "single" else 2,
            # + beta's wait for each C sub-tile (the sub-tile loop is unrolled)
            "mbarrier.try_wait": try_waits(spec) + (loads_per_tile if c_loads else 0),
            "mbarrier.init": rules_sm100.barrier_count(spec, spec.stages),
            "tcgen05.ld": loads_per_tile,
            "tcgen05.alloc": 1,
            "tcgen05.relinquish": 1,  # right after the allocation
            # one per stage released, one per accumulator filled
            "tcgen05.commit": 2,
            # multicast: the stage release goes to every sharer; pair: both commits name both CTAs
            "tcgen05.commit multicast": {"single": 0, "multicast": 1, "pair": 2, "split": 0}[kind],
            "TMA store": tma_boxes,
            # the TMA-store epilogue's, before each sub-tile's store (the loop is unrolled)
            "fence.proxy.async": loads_per_tile if is_tma_store(spec) else 0,
            "st.global": 0 if is_tma_store(spec) else direct_stores(spec),
            "div.s64": 0,  # stream-K's 64-bit partition math only (streamk_counts)
        }
        | fusion_counts(spec)
        | dynamic_counts(spec)
        | splitk_counts(spec)
        | streamk_counts(spec)
        | separate_counts(spec)
    )


def streamk_handover_vectors(spec: Spec) -> int:
    """16-byte vectors one epilogue thread moves through the stream-K workspace per partial tile:
    its accumulator values of the tile (a row, or half a row for M=64), 4 f32 each."""
    values = values_per_thread(spec)
    assert values % 4 == 0, "a thread's row run splits into whole 16-byte vectors"
    return values // 4


def streamk_counts(spec: Spec) -> dict[str, int]:
    """Stream-K's hand-over through the global workspace: both epilogue branches load every chunk
    from TMEM (the hand-over and the finisher's drain); the hand-over stores each 16-byte vector
    once, the finisher's peer loop loads each once (one dynamic loop per unrolled chunk); one
    flag release, one acquire (the spin) and one plain store clearing the flag; the 64-bit
    partition math's divisions."""
    if not rules_sm100.is_stream_k(spec):
        return {}
    _, chunks = epilogue_chunks(spec)
    vectors = streamk_handover_vectors(spec)
    stores = 0 if is_tma_store(spec) else direct_stores(spec)
    return {
        "tcgen05.ld": 2 * chunks,
        "st.global": stores + vectors + 1,
        "ld.global": vectors,
        "flag release.gpu": 1,
        "flag acquire.gpu": 1,
        "div.s64": STREAMK_WIDE_DIVS,
    }


def splitk_counts(spec: Spec) -> dict[str, int]:
    """Split-K's DSMEM reduction: both ranks' epilogue branches load the accumulator from TMEM;
    rank 0 maps each peer's staging chunk and consumed barrier, a peer rank 0's staged barrier;
    rank 0 reads each peer's partial in 16-byte vectors; the cluster-scoped handshake."""
    if not rules_sm100.is_split_k(spec):
        return {}
    peers = rules_sm100.splits(spec) - 1
    _, chunks = epilogue_chunks(spec)
    return {
        "tcgen05.ld": 2 * chunks,
        "mapa": peers * chunks + peers + 1,
        "ld.shared::cluster": peers * spec.tile.n * rules_sm100.ACC_BYTES // DSMEM_VECTOR_BYTES,
        "mbarrier acquire.cluster": 3,
        "mbarrier release.cluster": 1 + peers,
    }


def separate_counts(spec: Spec) -> dict[str, int]:
    """reduce = "separate": the GEMM kernel's epilogue warps store their f32 accumulator row to
    the workspace slot in 16-byte vectors (TN / 4 per thread) and load nothing; the reduce kernel
    (plan_sm90.separate_counts: its vector loop is not unrolled) loads one 16-byte vector per
    split, C with beta, the bias, stores one C vector and fuses REDUCE_VEC values."""
    if not rules_sm100.is_split_k_separate(spec):
        return {}
    reduce = plan_sm90.separate_counts(spec)
    vectors = values_per_thread(spec) * rules_sm100.ACC_BYTES // VECTOR_STORE_BYTES
    return {
        "ld.global": reduce["ld.global"],
        "st.global": vectors + 1,
        "ex2": reduce["ex2"],
        "max.f32": reduce["max.f32"],
    }


def fusion_counts(spec: Spec) -> dict[str, int]:
    """PTX evidence of the fused epilogue (all 0 for a plain store). Each thread owns one row of
    the CTA's TN columns, or half of it (values_per_thread: an M=64 tile), and fuses each value
    once (split-K: in rank 0 only, after the reduction). Global loads: beta's C run in the direct
    epilogue, loaded like it is stored (direct_stores: 16-byte vectors, or one element at a time
    down C^T's column with swap_ab; the TMA-store epilogue TMA-loads C instead); a bias along the
    kernel's rows (bias_values: a column bias of C with swap_ab): one scalar; along its columns:
    the thread's values in 16-byte vectors (the bias is contiguous). Per element: relu is one
    max.f32; silu (exp) and gelu (tanh, through exp) one ex2 each."""
    epi = spec.epilogue
    values = values_per_thread(spec)
    out_bytes = rules.DTYPE_BYTES[epi.out_dtype or spec.dtype]
    vectors = values * out_bytes // VECTOR_STORE_BYTES
    loads = direct_stores(spec) if epi.beta != 0.0 and not is_tma_store(spec) else 0
    if epi.bias != "none":
        loads += 1 if bias_values(spec)["bias_axis"] == "row" else vectors
    return {
        "ld.global": loads,
        "max.f32": values if epi.activation == "relu" else 0,
        "ex2": values if epi.activation in ("silu", "gelu_tanh") else 0,
    }


def dynamic_counts(spec: Spec) -> dict[str, int]:
    """The dynamic scheduler's cluster launch control: one try_cancel site (the producer's
    request), and one query of the answer and one proxy fence per next_tile call site
    (producer, MMA, epilogue)."""
    if not rules_sm100.is_dynamic(spec):
        return {}
    # the producer and the epilogue read the cancelled CTA's x and y; the MMA warp reads neither;
    # each reading site fences its read of the answer before releasing it to the next try_cancel
    tma_fences = epilogue_chunks(spec)[1] if is_tma_store(spec) else 0
    return {
        "clc try_cancel": 1,
        "clc is_canceled": 3,
        "clc first_ctaid": 4,
        "fence.proxy.async": tma_fences + 3,
    }


def _binary(mask: int, bits: int) -> str:
    return f"0b{mask:0{bits}b}"


def _wrap(text: str, width: int = 100) -> list[str]:
    """Split the budget line at "; " when it is wider than the docstring."""
    if len(text) <= width or "; " not in text:
        return [text]
    head, tail = text.split("; ", 1)
    return [head + ";", tail]


def pipeline_lines(spec: Spec) -> list[str]:
    """The docstring's pipeline table: every ring, producer -> consumer, stages, bytes per stage,
    full and empty arrive counts; then the SMEM and TMEM budget."""
    assert isinstance(spec.stages, int)
    kind, persistent = cluster_kind(spec), is_persistent(spec)
    stages, stage = spec.stages, rules.stage_bytes(spec)
    tx = rules_sm100.full_tx_bytes(spec)
    smem = rules.smem_bytes(spec, stages)
    epi_bytes = rules_sm100.epilogue_smem_bytes(spec)
    tmem = rules_sm100.spec_tmem_columns(spec)
    ws = spec.warp_specialized
    consumer = "MMA (warp 1)" if ws else "MMA (warp 0)"
    epi_warps = "epilogue (warps 2-5)" if persistent else "epilogue (4 warps)"
    header = ("ring", "producer -> consumer", "stages", "bytes/stage", "full arrives")
    rows: list[tuple[str, ...]] = [(*header, "empty arrives")]
    if kind == "pair":
        rows.append(
            (
                "A/B SMEM",
                "TMA (warp 0, both CTAs) -> MMA (warp 1, leader)",
                str(stages),
                f"{stage} per CTA",
                f"1 + {tx} tx bytes (leader's)",
                f"1 (leader's tcgen05.commit, mask {_binary(3, 2)})",
            )
        )
    else:
        empty = (
            f"{rules_sm100.empty_arrives(spec)} (tcgen05.commit of each CTA sharing the slot)"
            if kind == "multicast"
            else "1 (tcgen05.commit)"
        )
        rows.append(
            (
                "A/B SMEM",
                f"TMA (warp 0) -> {consumer}",
                str(stages),
                str(stage),
                f"1 + {tx} tx bytes",
                empty,
            )
        )
    mma = "MMA (warp 1, leader)" if kind == "pair" else consumer
    both = ", both CTAs" if kind == "pair" else ""
    commit = "1 per CTA (leader's tcgen05.commit, mask 0b11)" if kind == "pair" else None
    if persistent:
        per_cta = " x 2 CTAs" if kind == "pair" else ""
        rows.append(
            (
                "accumulator",
                f"{mma} -> {epi_warps.removesuffix(')')}{both})",
                f"{spec.accumulators} slot{'s' if spec.accumulators > 1 else ''}",
                f"{spec.tile.n} TMEM cols",
                commit or "1 (tcgen05.commit)",
                f"{rules_sm100.acc_empty_arrives(spec)} (one per epilogue warp{per_cta})",
            )
        )
    else:
        rows.append(
            (
                "accumulator",
                f"{mma} -> {epi_warps.removesuffix(')')}{both})",
                "1",
                "-",
                commit or "1 (tcgen05.commit)",
                "-",
            )
        )
    if rules_sm100.is_split_k(spec):
        n = rules_sm100.splits(spec)
        peers = f"ranks 1..{n - 1}" if n > 2 else "rank 1"
        rows += [
            (
                "staged",
                f"{peers} epilogue -> rank 0 epilogue",
                "1",
                str(rules_sm100.splitk_staging_bytes(spec)),
                f"{rules_sm100.staged_arrives(spec)} ({n - 1} peer(s) x 4 epilogue warps)",
                "-",
            ),
            (
                "consumed",
                "rank 0 epilogue -> each peer's epilogue",
                "1",
                "-",
                f"{rules_sm100.consumed_arrives(spec)} (rank 0's 4 epilogue warps)",
                "-",
            ),
        ]
    if rules_sm100.is_dynamic(spec):
        readers = rules_sm100.clc_readers(spec)
        rows.append(
            (
                "tile answer",
                "try_cancel (warp 0) -> every warp",
                "1",
                str(rules_sm100.CLC_RESPONSE_BYTES),
                f"1 + {rules_sm100.CLC_RESPONSE_BYTES} tx bytes",
                f"{readers} (one per reading warp)",
            )
        )
    if is_tma_store(spec):
        rows.append(
            (
                "C sub-tiles",
                f"{epi_warps} -> TMA store",
                str(rules_sm100.EPI_BUFS),
                str(epi_bytes // rules_sm100.EPI_BUFS),
                "bulk async-group",
                "wait_group.read",
            )
        )
    if rules_sm100.loads_c_by_tma(spec):
        c_bytes = rules_sm100.c_load_bytes(spec)
        rows.append(
            (
                "C in (beta)",
                f"TMA -> {epi_warps}",
                "1 per sub-tile",
                str(c_bytes),
                f"1 + {c_bytes} tx bytes (c_full)",
                "- (into the sub-tile's buffer)",
            )
        )
    notes: list[str] = []
    if kind == "pair":
        notes.append(
            f"Only the leader's full barriers are used: its producer arms them with both CTAs' "
            f"bytes (2 x {stage}), and the follower's cta_group::2 loads complete_tx on them."
        )
    if kind == "split":
        notes.append(
            "Split K: cluster rank r accumulates k-tiles [r * k_tiles // SPLITS, (r + 1) * k_tiles "
            "// SPLITS) of the cluster's tile in its TMEM (an empty share contributes zeros). Ranks "
            "1.. copy their f32 partial TMEM -> registers -> their own `staging` SMEM and arrive "
            "(release, cluster scope) on rank 0's `staged` barrier; rank 0 waits on it (acquire), "
            "adds each peer's staging read through DSMEM (ld.shared::cluster) in rank order 1, 2, "
            "... to its own partial, stores C and arrives on every peer's `consumed` barrier, which "
            "a peer waits on before it restages and before it exits. Fixed summation order: "
            "deterministic."
        )
    if rules_sm100.is_split_k_separate(spec):
        ws_mib = rules_sm90.separate_workspace_elems(spec) * rules_sm100.ACC_BYTES / 2**20
        notes.append(
            "Split K, separate reduce: the GEMM kernel runs one CTA per (tile, K share), no "
            "cluster: CTA b accumulates k-tiles [s * k_tiles // SPLITS, (s + 1) * k_tiles // "
            "SPLITS) of tile b // SPLITS, s = b % SPLITS, in TMEM (an empty share stores zeros); "
            "its epilogue warps copy the f32 partial TMEM -> registers -> workspace slot [s][tile], "
            "laid out like C, in 16-byte vectors along each thread's row. The reduce kernel, "
            "launched right after on the same stream (so it sees every partial), runs one CTA per "
            "tile: each thread sums its 16-byte vectors over the splits in split order "
            "(deterministic), applies the fusions and stores C predicated on M and N. Workspace: "
            f"{ws_mib:g} MiB of global memory ({plan_sm90.splitk_max_tiles_line(spec)} slots)."
        )
    if rules_sm100.is_stream_k(spec):
        ws_bytes = rules_sm100.streamk_workspace_elems(spec) * rules_sm100.ACC_BYTES
        slot_kib = rules.kib(rules_sm100.streamk_tile_elems(spec) * rules_sm100.ACC_BYTES)
        notes.append(
            "Stream-K: CTA b runs MAC iterations [b * T // CTAS, (b + 1) * T // CTAS) of the T = "
            "tiles x k_tiles, tile after tile (tiles along M); each unit (tile, [k_begin, k_end)) "
            "fills one TMEM slot, its first k-tile overwriting it. A CTA that does not run a "
            "tile's first k-tile (only its first unit can be such) copies its f32 partial TMEM -> "
            "registers -> its workspace slot, 16-byte vectors per epilogue thread, hands the TMEM "
            "slot back, and after a named barrier thread 0 stores its flag (st.release.gpu). The "
            "finisher (its last unit) has thread 0 wait on each such CTA's flag (ld.acquire.gpu), "
            "lowest CTA first, and clear it for the next launch; after a named barrier every "
            "epilogue thread adds those partials (fixed order: deterministic) to each chunk it "
            f"loads from TMEM, then stores C. Workspace: {ws_bytes} B of global memory "
            f"({rules_sm100.streamk_ctas(spec)} x {slot_kib} KiB slots + flags)."
        )
    if kind == "multicast":
        a_ctas, b_ctas = rules_sm100.multicast_ctas(spec)
        notes.append(
            f"Each CTA loads 1/{a_ctas} of the A tile (multicast to its cluster row) and 1/{b_ctas} "
            "of the B tile (to its column); its full barrier expects the whole stage."
        )
    ring = f"{stages} x {rules.kib(stage)} KiB ring"
    parts = [ring]
    if epi_bytes and rules_sm100.is_split_k(spec):
        parts.append(f"{rules.kib(epi_bytes)} KiB split-K staging")
    elif epi_bytes:
        bufs = rules_sm100.EPI_BUFS
        parts.append(f"{bufs} x {rules.kib(epi_bytes // bufs)} KiB C sub-tiles")
    rest = smem - stages * stage - epi_bytes
    parts.append(f"{rules.kib(rest)} KiB barriers and alignment")
    per_cta = " per CTA" if kind == "pair" else ""
    budget = (
        f"SMEM{per_cta} {smem} B of {rules.SMEM_LIMIT_BYTES} ({' + '.join(parts)}); "
        f"TMEM {tmem} of {rules_sm100.TMEM_COLUMNS} columns{per_cta}"
    )
    wrapped = [line for note in notes for line in _wrap_words(note)]
    return table(rows) + [""] + wrapped + _wrap(budget)


def _wrap_words(text: str, width: int = DOC_WIDTH) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def parameters(spec: Spec) -> list[tuple[str, str]]:
    """The docstring's parameter list."""
    assert isinstance(spec.stages, int)
    t, kind = spec.tile, cluster_kind(spec)
    kind_, mma_k = rules_sm100.mma_kind(spec), rules.mma_k(spec.dtype)
    mode = "warp-specialized" if spec.warp_specialized else "single-warp K-loop"
    rows = [("arch", spec.arch), ("dtype", spec.dtype)]
    if kind == "pair":
        half = t.m // 2
        tile = (
            f"({t.m}, {t.n}, {t.k}) per CTA pair; each CTA holds {half} rows of A, "
            f"{t.n // 2} rows of B and {half}x{t.n} of the accumulator"
        )
        rows.append(("tile (M, N, K)", tile))
        rows.append(
            (
                "MMA instruction",
                (
                    f"tcgen05.mma.cta_group::2.kind::{kind_} {t.m}x{t.n}x{mma_k} (issued by the "
                    "leader CTA)"
                ),
            )
        )
        rows.append(("cluster", "2 x 1: one CTA pair along M (rank 0 = leader, 1 = follower)"))
    else:
        rows.append(("tile (M, N, K)", f"({t.m}, {t.n}, {t.k})"))
        rows.append(
            ("MMA instruction", f"tcgen05.mma.cta_group::1.kind::{kind_} {t.m}x{t.n}x{mma_k}")
        )
    if kind == "multicast":
        m, n = spec.cluster.m, spec.cluster.n
        cluster = (
            f"{m} x {n} with TMA multicast: the {n} CTAs of a cluster row share an A tile, "
            f"the {m} of a column a B tile"
        )
        rows.append(("cluster", cluster))
    rows += [("stages", str(spec.stages)), ("swizzle", str(spec.swizzle)), ("mainloop", mode)]
    rows += swap_ab_parameters(spec)
    if is_tma_store(spec):
        em, en = rules_sm100.epi_tile(spec)
        epilogue = (
            f"tma store: TMEM -> registers -> swizzled SMEM {em}x{en} sub-tiles "
            f"({rules_sm100.EPI_BUFS} buffers) -> TMA store"
        )
        rows.append(("epilogue", epilogue))
    elif rules_sm100.is_split_k_separate(spec):
        rows.append(
            ("epilogue", "f32 partials to a workspace; the reduce kernel sums them and stores C")
        )
    else:
        rows.append(("epilogue", f"{spec.epilogue.style} store" + m64_epilogue_note(spec)))
    if spec.epilogue.fused:
        rows.append(("fusion", fusion_text(spec)))
    if rules_sm100.is_split_k(spec):
        n = rules_sm100.splits(spec)
        rows.append(
            (
                "cluster",
                f"{n} x 1 for split-K: {n} CTAs share one output tile and split its K range",
            )
        )
        scheduler = (
            f"persistent split-K over {n} CTAs: max_workers(sm_count) clusters (the GPU's SMs "
            f"size the grid: {rules_sm100.max_workers(spec)} on a B200) walking tiles along M, "
            "rank 0 reducing the peers' partials through DSMEM "
            f"and storing; {spec.accumulators} TMEM accumulator slot(s)"
        )
        rows.append(("scheduler", scheduler))
    elif rules_sm100.is_split_k_separate(spec):
        n = rules_sm100.splits(spec)
        scheduler = (
            f"split-K over {n} CTAs with a separate reduce kernel: one CTA per (tile, K share), "
            f"no cluster; workspace of {plan_sm90.splitk_max_tiles_line(spec)} tile slots"
        )
        rows.append(("scheduler", scheduler))
    elif rules_sm100.is_stream_k(spec):
        scheduler = (
            "stream-K: one CTA per SM of the GPU, at most "
            f"{rules_sm100.streamk_ctas(spec)} (the workspace's slots), run equal "
            "shares of all tiles' k-tiles (tiles along M); the CTA that runs a tile's first "
            "k-tile finishes it; "
            f"{spec.accumulators} TMEM accumulator slot(s), one per unit"
        )
        rows.append(("scheduler", scheduler))
    elif rules_sm100.is_dynamic(spec):
        scheduler = (
            "dynamic (cluster launch control): the grid is the whole tile grid; each CTA computes "
            "its own tile, then cancels CTAs that have not started (clusterlaunchcontrol."
            f"try_cancel) and computes theirs; {spec.accumulators} TMEM accumulator slot(s)"
        )
        rows.append(("scheduler", scheduler))
    elif is_persistent(spec):
        unit = {"pair": "CTA pairs", "multicast": "clusters"}.get(kind, "CTAs")
        tiles = "cluster tiles" if kind == "multicast" else "tiles"
        swizzle = f", tile swizzle group {spec.scheduler.group}" if spec.scheduler.group > 1 else ""
        scheduler = (
            f"persistent, static: max_workers(sm_count) {unit} (the GPU's SMs size the grid: "
            f"{rules_sm100.max_workers(spec)} on a B200), worker w "
            f"taking {tiles} w, w + workers, ... rastered along {spec.scheduler.raster.upper()}"
            f"{swizzle}; {spec.accumulators} TMEM accumulator slot(s)"
        )
        rows.append(("scheduler", scheduler))
    else:
        rows.append(("scheduler", spec.scheduler.kind))
    return rows


def swap_ab_parameters(spec: Spec) -> list[tuple[str, str]]:
    """The docstring's swap AB line (none without swap_ab)."""
    if not spec.swap_ab:
        return []
    return [
        (
            "swap AB",
            "yes: the kernel computes C^T = B @ A^T (tile M runs along N, tile N along M)",
        )
    ]


def m64_epilogue_note(spec: Spec) -> str:
    """How the epilogue reads a 64-row accumulator (nothing for 128 rows)."""
    if rules_sm100.tmem_load_shape(spec) == "32x32b":
        return ""
    return " (M=64: tcgen05.ld 16x32bx2, two threads per row, N/2 columns each)"


def fusion_text(spec: Spec) -> str:
    """The docstring's fusion parameter: the formula, then where C and the bias come from."""
    epi = spec.epilogue
    parts = [fusion_note(spec).removeprefix("; ")]
    if epi.beta != 0.0:
        parts.append(
            "C read in place: each C sub-tile TMA-loaded into the SMEM buffer it is stored from"
            if is_tma_store(spec)
            else "C read in place: each thread loads its chunk of C before storing over it"
        )
    if epi.bias != "none":
        per = "row" if epi.bias == "row" else "column"
        parts.append(f"bias: one {epi.out_dtype or spec.dtype} value per {per} of C")
    return "; ".join(parts)


def title(spec: Spec) -> str:
    assert isinstance(spec.stages, int)
    t, kind = spec.tile, cluster_kind(spec)
    mode = "warp-specialized" if spec.warp_specialized else "single-warp K-loop"
    parts = [f"Blackwell (sm_100a) {spec.dtype} GEMM"]
    if kind == "pair":
        parts.append(f"2-CTA {t} tile ({t.m // 2}x{t.n} per CTA)")
    else:
        parts.append(f"{t} tile")
    parts.append(f"{spec.stages}-stage ring")
    if kind == "multicast":
        parts.append(f"{spec.cluster.m}x{spec.cluster.n} cluster with TMA multicast")
    if is_persistent(spec):
        slots = spec.accumulators
        how = "persistent"
        if rules_sm100.is_dynamic(spec):
            how = "dynamic persistent (cluster launch control)"
        if rules_sm100.is_split_k(spec):
            how = f"split-K over {rules_sm100.splits(spec)}-CTA clusters, persistent"
        if rules_sm100.is_stream_k(spec):
            how = "stream-K, persistent"
        if rules_sm100.is_split_k_separate(spec):
            how = (
                f"split-K over {rules_sm100.splits(spec)} CTAs per tile and a separate reduce "
                "kernel, one tile per CTA"
            )
        parts.append(f"{how} with {slots} TMEM accumulator slot{'s' if slots > 1 else ''}")
    if spec.swap_ab:
        parts.append("swap AB (C^T = B @ A^T)")
    return ", ".join(parts + [mode]) + "."


def shape_note(spec: Spec) -> str:
    multiples = rules_sm100.shape_multiples(spec)
    k = multiples["K"]
    if is_tma_store(spec):
        nk = "N and K multiples of 8" if k == 8 else f"N a multiple of 8, K of {k}"
        return (
            f"M any; {nk} (TMA needs 16-byte row strides). Partial tiles are "
            "safe: TMA loads zero-fill rows and columns past M, N and K, and the TMA store clips "
            "them."
        )
    whole = "the direct epilogue stores whole tiles without predication"
    if multiples["M"] * multiples["N"] > spec.tile.m * spec.tile.n:
        whole += f", and the grid covers whole {spec.cluster.m}x{spec.cluster.n} clusters of tiles"
    if spec.swap_ab:
        whole += f"; swap AB: the {spec.tile.m}-row tile runs along N, its N along M"
    return (
        f"M must be a multiple of {multiples['M']} and N of {multiples['N']} ({whole}; run() "
        f"rejects other shapes); K any multiple of {k} (TMA needs 16-byte strides; the K tail is "
        "zero-filled by TMA)."
    )


def cluster_values(spec: Spec) -> dict[str, object]:
    """What the cluster partial prints: the cluster shape, multicast masks, arrive counts."""
    kind = cluster_kind(spec)
    if kind == "single":
        return {}
    if kind == "split":
        return {"cluster_shape": (rules_sm100.splits(spec), 1, 1)}
    shape = (spec.cluster.m, spec.cluster.n, 1)
    if kind == "pair":
        return {"cluster_shape": shape, "pair_mask": _binary(3, 2), "cta_rows": spec.tile.m // 2}
    a_mask, b_mask = rules_sm100.multicast_masks(spec)
    a_ctas, b_ctas = rules_sm100.multicast_ctas(spec)
    return {
        "cluster_shape": shape,
        "cluster_m": spec.cluster.m,
        "a_mcast_mask": _binary(a_mask, spec.cluster.size),
        "b_mcast_mask": _binary(b_mask, spec.cluster.size),
        "empty_arrives": rules_sm100.empty_arrives(spec),
        "empty_arrives_note": (
            f"commits that free a slot: this CTA's and its sharers' ({a_ctas} + {b_ctas} - 1)"
        ),
    }


def tile_loop_values(spec: Spec) -> dict[str, object]:
    """What the persistent and dynamic scheduler partials both print: the epilogue warps and the
    TMEM accumulator slots they hand back to the MMA warp."""
    pair = cluster_kind(spec) == "pair"
    warps = rules_sm100.EPILOGUE_WARPS
    return {
        "epi_warp0": EPI_WARP0,
        "epilogue_warps": warps,
        "epi_warps_range": f"{EPI_WARP0}-{EPI_WARP0 + warps - 1}",
        "epi_threads": 32 * warps,
        "epi_barrier_id": EPI_BARRIER_ID,
        "acc_slots": spec.accumulators,
        "acc_empty_arrives": rules_sm100.acc_empty_arrives(spec),
        "acc_empty_note": (
            f"one per epilogue warp of both CTAs ({warps} x 2), on the leader's barrier"
            if pair
            else f"one per epilogue warp ({warps})"
        ),
        "tile_n": spec.tile.n,
    }


def dynamic_values(spec: Spec) -> dict[str, object]:
    """What the dynamic (cluster launch control) scheduler partial prints."""
    readers = rules_sm100.clc_readers(spec)
    return tile_loop_values(spec) | {
        "clc_response_bytes": rules_sm100.CLC_RESPONSE_BYTES,
        "clc_readers": readers,
        "clc_readers_note": f"clc_empty arrives per answer: producer, MMA, {readers - 2} epilogue warps",
    }


def splitk_values(spec: Spec) -> dict[str, object]:
    """What the split-K scheduler partial prints: the persistent tile loop of its clusters (along
    M, no swizzle) and the staged / consumed handshake of the DSMEM reduction."""
    splits = rules_sm100.splits(spec)
    warps = rules_sm100.EPILOGUE_WARPS
    return tile_loop_values(spec) | {
        "raster_fast": "m",
        "raster_slow": "n",
        "raster_note": "raster along M: the tiles running at once share B tiles",
        "group": 1,
        "cluster_tiles": False,
        "coord_prefix": "t",
        "count_prefix": "tiles",
        "splits": splits,
        "staged_arrives": rules_sm100.staged_arrives(spec),
        "staged_note": f"rank 0's staged barrier: every epilogue warp ({warps}) of every peer ({splits - 1})",
        "consumed_arrives": rules_sm100.consumed_arrives(spec),
        "consumed_note": f"a peer's consumed barrier: every epilogue warp ({warps}) of rank 0",
        "stage_vec": DSMEM_VECTOR_BYTES // rules_sm100.ACC_BYTES,
    }


def separate_values(spec: Spec) -> dict[str, object]:
    """What the separate-reduce partials print (sm100/scheduler/split_k_separate.py.j2,
    sm100/epilogue/partial.py.j2 and the shared common/split_k_reduce.py.j2): one tile per CTA
    on the persistent warp roles, and sm_90a's workspace geometry and reduce-kernel vectors."""
    shared = plan_sm90.separate_values(spec)
    for key in ("launch_tensors", "epilogue_heading", "partial_vec", "partial_bits"):
        shared.pop(key)
    shared.pop("partial_vec_note")
    return (
        tile_loop_values(spec)
        | shared
        | {
            "raster_fast": "m",
            "raster_slow": "n",
            "raster_note": "tiles along M",
            "group": 1,
            "cluster_tiles": False,
            "coord_prefix": "t",
            "count_prefix": "tiles",
            "splits": rules_sm100.splits(spec),
            "swap_ab": spec.swap_ab,
            "sched_tensors": shared["kernel_tensors"],
            "sched_args": ["workspace"],
            "host_tensors": (["bias"] if spec.epilogue.bias != "none" else []) + ["workspace"],
            "workspace_elems": rules_sm90.separate_workspace_elems(spec),
        }
    )


def streamk_values(spec: Spec) -> dict[str, object]:
    """What the stream-K scheduler partial prints: the persistent warp roles and accumulator
    slots, the workspace (a partial-tile slot per CTA, then the flags) and how one epilogue chunk
    maps onto it."""
    _, chunks = epilogue_chunks(spec)
    vectors = streamk_handover_vectors(spec)
    return tile_loop_values(spec) | {
        "sk_ctas": rules_sm100.streamk_ctas(spec),
        "sk_tile_elems": rules_sm100.streamk_tile_elems(spec),
        "sk_workspace_elems": rules_sm100.streamk_workspace_elems(spec),
        "sk_values": values_per_thread(spec),
        "sk_chunk_vecs": vectors // chunks,
        "sk_chunk_vecs_note": (
            f"16-byte vectors of one thread's {values_per_thread(spec) // chunks} f32 per epilogue "
            f"chunk ({chunks} chunk{'s' if chunks > 1 else ''} per tile)"
        ),
        # the epilogue's TMEM source and last chunk, as its own drain names them
        "sk_src_chunk": (
            "src[(None, None, None, 0, i)]" if is_tma_store(spec) else "src[None, None, i]"
        ),
        "sk_last_chunk": "EPI_SUBTILES - 1" if is_tma_store(spec) else chunks - 1,
    }


def scheduler_values(spec: Spec) -> dict[str, object]:
    """What the persistent (or dynamic) scheduler partial prints."""
    if not is_persistent(spec):
        return {}
    if rules_sm100.is_dynamic(spec):
        return dynamic_values(spec)
    if rules_sm100.is_stream_k(spec):
        return streamk_values(spec)
    if rules_sm100.is_split_k(spec):
        return splitk_values(spec)
    if rules_sm100.is_split_k_separate(spec):
        return separate_values(spec)
    clustered = cluster_kind(spec) == "multicast"  # it walks cluster tiles, one tile per CTA
    fast = spec.scheduler.raster
    slow = "n" if fast == "m" else "m"
    shared = "B" if fast == "m" else "A"
    group = spec.scheduler.group
    unit = "cluster tiles" if clustered else "tiles"
    raster_note = f"raster along {fast.upper()}: the {unit} running at once share {shared} tiles"
    if group > 1:
        raster_note = (
            f"tile swizzle: bands of GROUP {unit} along {fast.upper()}, walked along {slow.upper()}"
        )
    return tile_loop_values(spec) | {
        "raster_fast": fast,
        "raster_slow": slow,
        "raster_note": raster_note,
        "group": group,
        "group_note": (
            f"tile swizzle: walk GROUP {unit} along {fast.upper()}, then step along "
            f"{slow.upper()}: the {unit} running at once share A and B tiles in L2"
        ),
        "cluster_tiles": clustered,
        "coord_prefix": "ct" if clustered else "t",  # ctm, ctn: a cluster tile's coordinates
        "count_prefix": "clusters" if clustered else "tiles",
        "tile_unit": unit,
    }


def workers_values(spec: Spec) -> dict[str, object]:
    """The persistent grids sized by the GPU's SM count (static persistent, split-K's clusters,
    stream-K); the dynamic scheduler launches the whole tile grid, split-K "separate" a CTA per
    tile and K share, and the grid scheduler a CTA per tile."""
    b200 = (rules_sm100.SM_COUNT, "a B200", (10, 0))
    if rules_sm100.is_stream_k(spec):
        return sm_sized_values(
            *b200, 1, "one CTA", worker_cap="SK_CTAS", worker_cap_note="the workspace's slots"
        )
    if rules_sm100.is_split_k(spec):
        n = rules_sm100.splits(spec)
        return sm_sized_values(
            *b200,
            n,
            f"one {n}-CTA cluster",
            worker_cap=spec.scheduler.max_clusters,
            worker_cap_note="the spec's max_clusters",
        )
    if isinstance(spec.scheduler, PersistentScheduler):
        size = spec.cluster.size
        worker = {"pair": "one CTA pair", "multicast": f"one {size}-CTA cluster"}
        return sm_sized_values(
            *b200, size, worker.get(cluster_kind(spec), "one CTA"), sm_cap=spec.scheduler.sm_count
        )
    return {"sm_sized": False}


def bias_view_values(spec: Spec) -> dict[str, object]:
    """What the bias views print (templates/sm100/epilogue/bias.py.j2): the host sees the 1-D
    bias as an (M, N) tensor with stride 0 along the dimension it does not run along, and the
    kernel tiles it like C: one tile (grid) or all tiles, sliced per tile (persistent)."""
    if spec.epilogue.bias == "none":
        return {}
    row = bias_values(spec)["bias_axis"] == "row"  # the kernel's axis (swap_ab swaps the user's)
    persistent = is_persistent(spec)
    return {
        "bias_stride": (1, 0) if row else (0, 1),
        "bias_broadcast_dim": "N" if row else "M",
        "bias_view_note": (
            "the bias seen as an (M, N) tensor (stride 0 along N): it tiles and partitions like C"
            if row
            else "the bias seen as an (M, N) tensor (stride 0 along M): it tiles and partitions "
            "like C"
        ),
        "epi_tile_coord": "(None, None, None)" if persistent else "coord",
        "epi_tile_shape": "(TM, TN, tiles_m, tiles_n)" if persistent else "(TM, TN)",
        "epi_part_shape": (
            "(MMA, MMA_M, MMA_N, tiles_m, tiles_n)" if persistent else "(MMA, MMA_M, MMA_N)"
        ),
        "epi_tile_slice": "[(None, None, None, tm, tn)]" if persistent else "",
        # the TMA-store epilogue takes partial tiles: its bias loads check M and N
        "epi_bias_predicated": is_tma_store(spec),
    }


def epilogue_values(spec: Spec) -> dict[str, object]:
    """What the epilogue partial prints."""
    cols, loads = epilogue_chunks(spec)
    out = spec.epilogue.out_dtype or spec.dtype
    ld_shape = rules_sm100.tmem_load_shape(spec)
    halves = 1 if ld_shape == "32x32b" else 2  # 16x32bx2: two threads per row
    values: dict[str, object] = {
        "epi_cols": cols,
        "epi_chunks": loads,
        "epi_last_chunk": loads - 1,
        "ld_repetition": f"x{cols // halves}",
        "tmem_ld_op": TMEM_LD_OP[ld_shape],
        "epi_cols_note": (
            "accumulator columns one tcgen05.ld moves per thread"
            if halves == 1
            else "accumulator columns one tcgen05.ld moves per row pair (half per thread)"
        ),
        "epi_lanes": (
            "32 lanes per warp" if halves == 1 else "16 lanes per warp, half a row per thread"
        ),
        # no fusion: convert and store, the lines the unfused kernels have always had
        "epi_plain": not spec.epilogue.fused,
        **store_dtype_values(spec),
        **bias_view_values(spec),
    }
    if is_tma_store(spec):
        em, en = rules_sm100.epi_tile(spec)
        row_bytes = en * rules.DTYPE_BYTES[out]
        atoms = rules_sm100.epi_tma_boxes(spec)  # a box row is one swizzle atom
        values.update(
            {
                "epi_tile": (em, en),
                "epi_tile_str": f"{em}x{en}",
                "epi_tile_cols": en,
                "epi_tile_note": (
                    f"{em} rows x {en} columns = {row_bytes}-byte rows, "
                    f"{rules.kib(em * row_bytes)} KiB of {out}"
                ),
                "epi_subtiles": loads,
                "epi_bufs": rules_sm100.EPI_BUFS,
                "epi_row_bytes": row_bytes,
                "epi_smem_atom": SMEM_ATOM[rules.auto_swizzle(row_bytes)],
                "epi_smem_atom_note": (
                    f"a {row_bytes}-byte sub-tile row: one swizzle atom"
                    if atoms == 1
                    else f"{row_bytes}-byte rows: {atoms} atoms, {atoms} TMA boxes of {em}x{en // atoms}"
                ),
                "epi_host_atom_note": (
                    "one swizzle atom per row" if atoms == 1 else f"{atoms} swizzle atoms per row"
                ),
                # one swizzle atom per row: its 8-row atoms stack along M either way; several:
                # stack them along M first, so each atom column is one 128-row TMA box
                "epi_tile_order": (1, 0, 2) if atoms == 1 else (0, 1, 2),
                "epi_repetition": f"x{en // halves}",
                "t2r_note": (
                    "warp w reads TMEM lanes 32 (w % 4) ... + 31: each thread owns one row of a "
                    "sub-tile"
                    if halves == 1
                    else "M=64: warp w reads TMEM lanes 32 (w % 4) ... + 15 (rows 16 (w % 4) ... "
                    "+ 15); threads t and t + 16 own the left and right half of one row"
                ),
                "c_tx_bytes": rules_sm100.c_load_bytes(spec),
            }
        )
    return values


def store_dtype_values(spec: Spec) -> dict[str, object]:
    """The dtype the direct epilogue converts the f32 accumulator to: the input dtype's constant
    (IO_DTYPE) when C has it in a plain store, else OUT_DTYPE (e4m3 in, bf16/f16/f32 out, and
    every fused epilogue)."""
    out = spec.epilogue.out_dtype or spec.dtype
    plain = out == spec.dtype and not spec.epilogue.fused
    return {"epi_store_dtype": "IO_DTYPE" if plain else "OUT_DTYPE"}


def notes(spec: Spec) -> dict[str, str]:
    """The comments on the kernel's constants."""
    kind, persistent = cluster_kind(spec), is_persistent(spec)
    pair = kind == "pair"
    kind_ = rules_sm100.mma_kind(spec)
    if rules_sm100.is_dynamic(spec):
        threads = "6 warps: 0 = TMA producer and tile requests, 1 = MMA issuer, 2-5 = epilogue"
    elif persistent:
        threads = (
            "6 warps: 0 = TMA producer, 1 = MMA issuer"
            + (" (leader CTA)" if pair else "")
            + ", 2-5 = epilogue"
        )
    elif spec.warp_specialized:
        threads = (
            "4 warps: 0 = TMA producer, 1 = MMA issuer"
            + (" (leader CTA)" if pair else "")
            + ", all = epilogue"
        )
    else:
        threads = "4 warps: 0 = TMA loads and MMAs, all = epilogue"
    if persistent:
        tmem = (
            f"{spec.accumulators} f32 accumulator slot(s) x {spec.tile.n} columns"
            + (" (this CTA's 128 rows)" if pair else "")
            + ", power of two"
        )
    elif pair:
        tmem = "f32 accumulator: this CTA's 128 rows, one column per output column, power of two"
    else:
        tmem = "f32 accumulator: one TMEM column per output column, power of two"
    if pair:
        tx = (
            f"A + B bytes of BOTH CTAs (2 x {rules.stage_bytes(spec)}): all land on the leader's "
            "full barrier"
        )
    elif kind == "multicast":
        tx = "A + B bytes landing in EACH CTA per stage: own slices + peers' multicast"
    else:
        tx = "A + B bytes one stage's TMA copies deliver to its full barrier"
    return {
        "mma_inst_note": (
            f"one tcgen05.mma.cta_group::2 kind::{kind_} instruction: the CTA pair's tile"
            if pair
            else f"one tcgen05.mma.cta_group::1 kind::{kind_} instruction"
        ),
        "tiler_note": (
            "one CTA pair's output tile and the K depth of a stage"
            if pair
            else "one CTA's output tile and the K depth of a stage"
        ),
        "threads_note": threads,
        "tmem_note": tmem,
        "tx_note": tx,
    }


def partials(spec: Spec) -> dict[str, str]:
    """One partial per knob value; split-K reduce = "separate" has its own scheduler and epilogue
    (f32 partials to the workspace)."""
    separate = rules_sm100.is_split_k_separate(spec)
    if not spec.warp_specialized:
        mainloop = "kloop"
    else:
        mainloop = "ws_persistent" if is_persistent(spec) else "ws"
    return {
        "mma_partial": f"sm100/mma/{rules_sm100.mma_kind(spec)}.py.j2",
        "operands_partial": f"sm100/operands/{'swap' if spec.swap_ab else 'plain'}.py.j2",
        "mainloop_partial": f"sm100/mainloop/{mainloop}.py.j2",
        "cluster_partial": f"sm100/cluster/{cluster_kind(spec)}.py.j2",
        "epilogue_partial": f"sm100/epilogue/{'partial' if separate else spec.epilogue.style}.py.j2",
        "scheduler_partial": f"sm100/scheduler/{spec.scheduler.kind}{'_separate' if separate else ''}.py.j2",
    }


def workspace_values(spec: Spec) -> dict[str, object]:
    """The tensors after C: the bias (printed by the epilogue partial) and stream-K's workspace,
    which the kernel takes last (`sched_tensors`) and the host passes last (`sched_args`)."""
    extra = extra_tensors(spec, rules_sm100.streamk_workspace_elems(spec))
    work = [t for t in extra["kernel_tensors"] if t[0] == "mWork"]
    return extra | {"sched_tensors": work, "sched_args": ["workspace"] if work else []}


def plan_sm100(spec: Spec) -> Plan:
    assert isinstance(spec.stages, int)
    t = spec.tile
    out = spec.epilogue.out_dtype or spec.dtype
    values: dict[str, object] = {
        "title": title(spec),
        "dtype_note": f"{spec.dtype} in, f32 accumulate, {out} out{fusion_note(spec)}",
        "parameters": parameters(spec),
        "pipeline_table": pipeline_lines(spec),
        "shape_note": shape_note(spec),
        "io_dtype": CUTLASS_DTYPE[spec.dtype],
        "out_dtype": CUTLASS_DTYPE[out],
        "torch_dtype": TORCH_DTYPE[spec.dtype],
        "torch_out_dtype": TORCH_DTYPE[out],
        "out_dtype_name": out,
        "mma_inst": (t.m, t.n, rules.mma_k(spec.dtype)),
        "mma_k": rules.mma_k(spec.dtype),
        "tiler": (t.m, t.n, t.k),
        "stages": spec.stages,
        "threads": (2 + rules_sm100.EPILOGUE_WARPS if is_persistent(spec) else 4) * 32,
        "tmem_cols": rules_sm100.spec_tmem_columns(spec),
        "tx_bytes": rules_sm100.full_tx_bytes(spec),
        "cta_group_enum": "TWO" if spec.cta_group == 2 else "ONE",
        "smem_atom": SMEM_ATOM[str(spec.swizzle)],
        "mmas_per_stage": rules.mmas_per_stage(spec),
        "scheduler": spec.scheduler.kind,
        "shape_multiples": rules_sm100.shape_multiples(spec),
        "smem_bytes": rules.smem_bytes(spec, spec.stages),
        **notes(spec),
        **fusion_values(spec),
        **epilogue_values(spec),
        **cluster_values(spec),
        **scheduler_values(spec),
        **bias_values(spec),
        **workspace_values(spec),
        **workers_values(spec),
        # split-K separate: its workspace and tensors (scheduler_values) replace stream-K's
        **(separate_values(spec) if rules_sm100.is_split_k_separate(spec) else {}),
        # the docstring's entry points name the bias argument
    }
    return Plan(
        template="sm100/gemm.py.j2",
        partials=partials(spec),
        values=values,
        expected_counts=expected_counts_sm100(spec),
    )
