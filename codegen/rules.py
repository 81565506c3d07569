"""Legality rules and budget arithmetic: the single place each rule lives.

Every function here is pure. The spec validator (:func:`check`), the "auto" resolver
(:func:`resolve`), the planner and the docs call these; nothing else re-derives their numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue

KIB = 1024
SMEM_LIMIT_BYTES = 227 * KIB  # max dynamic shared memory per block on sm_90 and sm_100
SMEM_ALIGN = 1024  # one full 128B-swizzle period (8 rows x 128 B); every operand ring starts here
MBARRIER_BYTES = 8
TMEM_COLUMNS = 512
MMA_K_BYTES = 32  # one f16/bf16 MMA instruction is 16 deep: 32 bytes of K
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
TMA_BOX_BYTES_UNSWIZZLED = 16  # the interleaved canonical layout is built of 16-byte-wide boxes


@dataclass(frozen=True)
class Violation:
    """One broken rule: the field it is about and a sentence saying what is wrong and legal."""

    field: str
    message: str


def kib(nbytes: int) -> str:
    """Bytes as KiB, without a fraction when it is whole."""
    return f"{nbytes // KIB}" if nbytes % KIB == 0 else f"{nbytes / KIB:.1f}"


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


# ---- swizzle ------------------------------------------------------------------------------------


def k_row_bytes(spec: Spec) -> int:
    """Bytes of one K row of a stage: tile_k elements of the input dtype."""
    return spec.tile.k * DTYPE_BYTES[spec.dtype]


def swizzle_fits(row_bytes: int, swizzle: str) -> bool:
    """A K-major swizzle atom is `width` bytes of K: the row must hold a whole number of atoms."""
    width = SWIZZLE_BYTES[swizzle]
    return width == 0 or row_bytes % width == 0


def auto_swizzle(row_bytes: int) -> str:
    """The widest swizzle the row takes: wider atoms mean fewer, larger TMA boxes."""
    for swizzle in ("128B", "64B", "32B"):
        if swizzle_fits(row_bytes, swizzle):
            return swizzle
    return "none"


def tma_boxes_per_operand(row_bytes: int, swizzle: str) -> int:
    """TMA copies per operand per stage: one per swizzle atom across K (16 B when unswizzled)."""
    return row_bytes // (SWIZZLE_BYTES[swizzle] or TMA_BOX_BYTES_UNSWIZZLED)


# ---- MMA shapes ---------------------------------------------------------------------------------


def tcgen05_f16_shape_ok(m: int, n: int) -> bool:
    """Legal tcgen05.mma kind::f16 shapes for one CTA: M 64 with N % 8, or M 128 with N % 16."""
    if m == 64:
        return n % 8 == 0 and 8 <= n <= 256
    if m == 128:
        return n % 16 == 0 and 16 <= n <= 256
    return False


def wgmma_shape_ok(m: int, n: int, warpgroups: int) -> bool:
    """Hopper: each consumer warpgroup owns M/warpgroups rows in 64-row wgmma atoms; N % 8."""
    rows = m // warpgroups
    return m % warpgroups == 0 and rows % 64 == 0 and rows <= 256 and n % 8 == 0 and 8 <= n <= 256


def mmas_per_stage(spec: Spec) -> int:
    return k_row_bytes(spec) // MMA_K_BYTES


# ---- TMEM ---------------------------------------------------------------------------------------


def tmem_columns(tile_n: int, slots: int = 1) -> int:
    """tcgen05.alloc takes a power of two >= 32 columns; one f32 column per output column."""
    need = tile_n * slots
    cols = 32
    while cols < need:
        cols *= 2
    return cols


# ---- shared memory ------------------------------------------------------------------------------


def stage_bytes(spec: Spec) -> int:
    """A + B bytes of one stage; also the TMA transaction bytes the full barrier expects."""
    return (spec.tile.m + spec.tile.n) * k_row_bytes(spec)


def tx_bytes(spec: Spec) -> int:
    return stage_bytes(spec)


def barrier_bytes(spec: Spec, stages: int) -> int:
    """full[s] + empty[s] mbarriers, plus (sm_100a) acc_full and the TMEM address slot."""
    nbytes = 2 * stages * MBARRIER_BYTES
    if spec.arch == "sm_100a":
        nbytes += MBARRIER_BYTES + 4
    return nbytes


def epilogue_smem_bytes(spec: Spec) -> int:
    """SMEM the epilogue stages the output tile through (TMA-store epilogues only)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return 0
    out = spec.epilogue.out_dtype or spec.dtype
    return spec.tile.m * spec.tile.n * DTYPE_BYTES[out]


def smem_bytes(spec: Spec, stages: int) -> int:
    """Total dynamic SMEM: barriers, then the A ring and the B ring, each 1024-byte aligned."""
    ring_a = stages * spec.tile.m * k_row_bytes(spec)
    ring_b = stages * spec.tile.n * k_row_bytes(spec)
    total = align_up(barrier_bytes(spec, stages), SMEM_ALIGN)
    total = align_up(total + ring_a, SMEM_ALIGN) + ring_b
    epi = epilogue_smem_bytes(spec)
    if epi:
        total = align_up(total, SMEM_ALIGN) + epi
    return total


def max_stages(spec: Spec) -> int:
    """The most stages that fit in the SMEM budget (0 if not even one does)."""
    stages = 0
    while smem_bytes(spec, stages + 1) <= SMEM_LIMIT_BYTES:
        stages += 1
    return stages


# ---- resolve "auto" and check -------------------------------------------------------------------


def resolve(spec: Spec) -> Spec:
    """Replace "auto" knobs with concrete values: the widest legal swizzle, the most stages."""
    update: dict[str, object] = {}
    if spec.swizzle == "auto":
        update["swizzle"] = auto_swizzle(k_row_bytes(spec))
    if spec.stages == "auto":
        update["stages"] = max(1, max_stages(spec))
    return spec.model_copy(update=update) if update else spec


def check(spec: Spec) -> list[Violation]:
    """Every rule the spec breaks. Expects a resolved spec (no "auto" left)."""
    out: list[Violation] = []
    t = spec.tile
    row = k_row_bytes(spec)

    if row % MMA_K_BYTES:
        out.append(Violation("tile", f"tile K={t.k} must be a multiple of 16 (one MMA is 16 deep)"))
    if not swizzle_fits(row, spec.swizzle):
        width = SWIZZLE_BYTES[spec.swizzle]
        legal = [s for s in ("none", "32B", "64B", "128B") if swizzle_fits(row, s)]
        out.append(
            Violation(
                "swizzle",
                f"swizzle={spec.swizzle} needs tile K x {DTYPE_BYTES[spec.dtype]} B to be a "
                f"multiple of {width} B, but tile K={t.k} gives {row} B rows; legal: "
                + ", ".join(legal),
            )
        )

    if spec.arch == "sm_100a":
        out += _check_sm100(spec)
    else:
        out += _check_sm90(spec)

    if not is_power_of_two(spec.cluster.size) or spec.cluster.size > 16:
        out.append(
            Violation(
                "cluster",
                f"cluster {spec.cluster.m}x{spec.cluster.n} has {spec.cluster.size} CTAs; "
                "it must be a power of two, at most 16",
            )
        )

    if isinstance(spec.stages, int):
        need = smem_bytes(spec, spec.stages)
        if need > SMEM_LIMIT_BYTES:
            fit = max_stages(spec)
            out.append(
                Violation(
                    "stages",
                    f"stages={spec.stages} needs {kib(need)} KiB of shared memory "
                    f"({kib(stage_bytes(spec))} KiB per stage); at most {fit} stage"
                    f"{'s' if fit != 1 else ''} fit in {kib(SMEM_LIMIT_BYTES)} KiB",
                )
            )
    return out


def _check_sm100(spec: Spec) -> list[Violation]:
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
    cols = tmem_columns(t.n)
    if cols > TMEM_COLUMNS:
        out.append(Violation("tile", f"tile N={t.n} needs {cols} TMEM columns; at most 512"))
    if spec.consumer_warpgroups is not None:
        out.append(
            Violation(
                "consumer_warpgroups",
                "consumer_warpgroups is a Hopper (sm_90a) knob; on sm_100a one thread issues "
                "the MMA: remove it",
            )
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
                "epilogue",
                "epilogue style 'tma' is not implemented for sm_100a yet; legal: direct",
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
                "scheduler",
                "scheduler 'persistent' is not implemented for sm_100a yet; legal: grid",
            )
        )
    return out


def _check_sm90(spec: Spec) -> list[Violation]:
    out: list[Violation] = []
    t = spec.tile
    wgs = spec.consumer_warpgroups or 1
    if not wgmma_shape_ok(t.m, t.n, wgs):
        out.append(
            Violation(
                "tile",
                f"tile {t.m}x{t.n} with {wgs} consumer warpgroup{'s' if wgs > 1 else ''} is not "
                "a wgmma layout; legal: M/warpgroups a multiple of 64 up to 256, N a multiple "
                "of 8 in [8, 256]",
            )
        )
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "sm_90a kernels are always warp-specialized (a TMA producer warpgroup and "
                "wgmma consumer warpgroups); legal: true",
            )
        )
    return out
