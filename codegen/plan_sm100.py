"""Plan of a Blackwell (sm_100a) kernel: every number its templates print."""

from __future__ import annotations

from codegen import rules, rules_sm100
from codegen.plan import CUTLASS_DTYPE, TORCH_DTYPE, Plan, table
from codegen.spec import Spec

SMEM_ATOM = {"none": "K_INTER", "32B": "K_SW32", "64B": "K_SW64", "128B": "K_SW128"}
EPI_MAX_COLS = 64  # widest tcgen05.ld repetition the direct epilogue uses per chunk


def expected_counts_sm100(spec: Spec) -> dict[str, int]:
    """PTX instruction counts the sm_100a templates must produce for this spec.

    Each count is (instructions per issue site) x (issue sites in the template): the K loop is not
    unrolled, so the PTX holds one copy of each loop body.
    """
    per_operand = rules.tma_boxes_per_operand(rules.k_row_bytes(spec), str(spec.swizzle))
    chunks = spec.tile.n // min(EPI_MAX_COLS, spec.tile.n)
    return {
        "tcgen05.mma": rules.mmas_per_stage(spec),
        "cp.async.bulk.tensor": 2 * per_operand,
        # empty wait (producer), full wait (MMA), acc_full wait (epilogue)
        "mbarrier.try_wait": 3,
        "tcgen05.ld": chunks,
        "tcgen05.alloc": 1,
        # one per stage released, one for the accumulator
        "tcgen05.commit": 2,
    }


def plan_sm100(spec: Spec) -> Plan:
    assert isinstance(spec.stages, int)
    t = spec.tile
    stages = spec.stages
    stage = rules.stage_bytes(spec)
    smem = rules.smem_bytes(spec, stages)
    tmem = rules_sm100.tmem_columns(t.n)
    epi_cols = min(EPI_MAX_COLS, t.n)
    out = spec.epilogue.out_dtype or spec.dtype
    ws = spec.warp_specialized
    producer = "TMA (warp 0)"
    consumer = "MMA (warp 1)" if ws else "MMA (warp 0)"
    pipeline = table(
        [
            (
                "ring",
                "producer -> consumer",
                "stages",
                "bytes/stage",
                "full arrives",
                "empty arrives",
            ),
            (
                "A/B SMEM",
                f"{producer} -> {consumer}",
                str(stages),
                str(stage),
                f"1 + {stage} tx bytes",
                "1 (tcgen05.commit)",
            ),
            (
                "accumulator",
                f"{consumer} -> epilogue (4 warps)",
                "1",
                "-",
                "1 (tcgen05.commit)",
                "-",
            ),
        ]
    ) + [
        "",
        (
            f"SMEM {smem} B of {rules.SMEM_LIMIT_BYTES} ({stages} x {rules.kib(stage)} KiB ring + "
            f"{rules.kib(smem - stages * stage)} KiB barriers and alignment); "
            f"TMEM {tmem} of {rules_sm100.TMEM_COLUMNS} columns"
        ),
    ]
    mode = "warp-specialized" if ws else "single-warp K-loop"
    values: dict[str, object] = {
        "title": f"Blackwell (sm_100a) {spec.dtype} GEMM, {t} tile, {stages}-stage ring, {mode}.",
        "dtype_note": f"{spec.dtype} in, f32 accumulate, {out} out",
        "parameters": [
            ("arch", spec.arch),
            ("dtype", spec.dtype),
            ("tile (M, N, K)", f"({t.m}, {t.n}, {t.k})"),
            ("MMA instruction", f"tcgen05.mma.cta_group::1.kind::f16 {t.m}x{t.n}x16"),
            ("stages", str(stages)),
            ("swizzle", str(spec.swizzle)),
            ("mainloop", mode),
            ("epilogue", f"{spec.epilogue.style} store"),
            ("scheduler", spec.scheduler.kind),
        ],
        "pipeline_table": pipeline,
        "shape_note": (
            f"M must be a multiple of {t.m} and N of {t.n} (the direct epilogue stores whole tiles "
            "without predication; run() rejects other shapes); K any multiple of 8 (TMA needs "
            "16-byte strides; the K tail is zero-filled by TMA)."
        ),
        "io_dtype": CUTLASS_DTYPE[spec.dtype],
        "out_dtype": CUTLASS_DTYPE[out],
        "torch_dtype": TORCH_DTYPE[spec.dtype],
        "torch_out_dtype": TORCH_DTYPE[out],
        "out_dtype_name": out,
        "mma_inst": (t.m, t.n, 16),
        "tiler": (t.m, t.n, t.k),
        "stages": stages,
        "threads": 128,
        "threads_note": (
            "4 warps: 0 = TMA producer, 1 = MMA issuer, all = epilogue"
            if ws
            else "4 warps: 0 = TMA loads and MMAs, all = epilogue"
        ),
        "tmem_cols": tmem,
        "tx_bytes": rules.tx_bytes(spec),
        "epi_cols": epi_cols,
        "epi_chunks": t.n // epi_cols,
        "ld_repetition": f"x{epi_cols}",
        "smem_atom": SMEM_ATOM[str(spec.swizzle)],
        "mmas_per_stage": rules.mmas_per_stage(spec),
        "scheduler": spec.scheduler.kind,
        "shape_multiples": {"M": t.m, "N": t.n, "K": 8},
        "smem_bytes": smem,
    }
    return Plan(
        template="sm100/gemm.py.j2",
        partials={
            "mainloop_partial": f"sm100/mainloop/{'ws' if ws else 'kloop'}.py.j2",
            "epilogue_partial": f"sm100/epilogue/{spec.epilogue.style}.py.j2",
            "scheduler_partial": f"sm100/scheduler/{spec.scheduler.kind}.py.j2",
        },
        values=values,
        expected_counts=expected_counts_sm100(spec),
    )
