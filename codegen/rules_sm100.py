"""Blackwell (sm_100a) rules: tcgen05 MMA shapes, TMEM, and what the templates implement."""

from __future__ import annotations

from codegen.rules import DTYPE_BYTES, MBARRIER_BYTES, Violation
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue

TMEM_COLUMNS = 512
SM_COUNT = 148  # B200


def tcgen05_f16_shape_ok(m: int, n: int) -> bool:
    """Legal tcgen05.mma kind::f16 shapes for one CTA: M 64 with N % 8, or M 128 with N % 16."""
    if m == 64:
        return n % 8 == 0 and 8 <= n <= 256
    if m == 128:
        return n % 16 == 0 and 16 <= n <= 256
    return False


def tmem_columns(tile_n: int, slots: int = 1) -> int:
    """tcgen05.alloc takes a power of two >= 32 columns; one f32 column per output column."""
    need = tile_n * slots
    cols = 32
    while cols < need:
        cols *= 2
    return cols


def operand_rows_per_cta(spec: Spec) -> tuple[int, int]:
    """Rows of A and B one CTA loads per stage (a CTA pair splits both in half)."""
    return spec.tile.m // spec.cta_group, spec.tile.n // spec.cta_group


def barrier_bytes(spec: Spec, stages: int) -> int:
    """full[s] + empty[s], acc_full/acc_empty per accumulator slot, and the TMEM address slot."""
    return (2 * stages + 2 * spec.accumulators) * MBARRIER_BYTES + 4


def epilogue_smem_bytes(spec: Spec) -> int:
    """SMEM the TMA-store epilogue stages sub-tiles through (none for direct stores)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return 0
    out = spec.epilogue.out_dtype or spec.dtype
    return 2 * 128 * 64 * DTYPE_BYTES[out]  # two 128x64 sub-tile buffers


def check(spec: Spec) -> list[Violation]:
    out: list[Violation] = []
    t = spec.tile
    if not tcgen05_f16_shape_ok(t.m, t.n):
        out.append(
            Violation(
                "tile",
                f"tile {t.m}x{t.n} is not a tcgen05 kind::f16 shape for one CTA; legal: "
                "M=64 with N a multiple of 8 in [8, 256], or M=128 with N a multiple of 16 "
                "in [16, 256]",
            )
        )
    elif t.m != 128:
        out.append(
            Violation(
                "tile",
                f"tile M={t.m} is not implemented for sm_100a yet (the epilogue maps 4 warps to "
                "128 TMEM lanes); legal: 128",
            )
        )
    cols = tmem_columns(t.n, spec.accumulators)
    if cols > TMEM_COLUMNS:
        out.append(
            Violation(
                "tile",
                f"tile N={t.n} x {spec.accumulators} accumulator slot(s) needs {cols} TMEM "
                f"columns; at most {TMEM_COLUMNS}",
            )
        )
    if spec.consumer_warpgroups is not None:
        out.append(
            Violation(
                "consumer_warpgroups",
                "consumer_warpgroups is a Hopper (sm_90a) knob; on sm_100a one thread issues "
                "the MMA: remove it",
            )
        )
    for knob, value, legal in (
        ("cta_group", spec.cta_group, 1),
        ("accumulators", spec.accumulators, 1),
        ("swap_ab", spec.swap_ab, False),
    ):
        if value != legal:
            out.append(
                Violation(knob, f"{knob}={value} is not implemented for sm_100a yet; legal: {legal}")
            )
    if spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} is not implemented for sm_100a yet; "
                "legal: [1, 1]",
            )
        )
    if isinstance(spec.epilogue, TmaStoreEpilogue):
        out.append(
            Violation(
                "epilogue", "epilogue style 'tma' is not implemented for sm_100a yet; legal: direct"
            )
        )
    if spec.epilogue.out_dtype not in (None, spec.dtype):
        out.append(
            Violation(
                "epilogue",
                f"out_dtype={spec.epilogue.out_dtype} is not implemented for sm_100a yet; "
                f"legal: {spec.dtype} (the input dtype)",
            )
        )
    if isinstance(spec.scheduler, PersistentScheduler):
        out.append(
            Violation(
                "scheduler", "scheduler 'persistent' is not implemented for sm_100a yet; legal: grid"
            )
        )
    return out
