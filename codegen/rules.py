"""Legality rules and budget arithmetic: the single place each rule lives.

Every function here is pure. The spec validator (:func:`check`), the "auto" resolver
(:func:`resolve`), the planner and the docs call these; nothing else re-derives their numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.spec import Spec

KIB = 1024
SMEM_LIMIT_BYTES = 227 * KIB  # max dynamic shared memory per block on sm_90 and sm_100
SMEM_ALIGN = 1024  # one full 128B-swizzle period (8 rows x 128 B); every operand ring starts here
MBARRIER_BYTES = 8
MMA_K_BYTES = 32  # one MMA instruction is 32 bytes of K: 16 deep for f16/bf16, 32 for e4m3
DTYPE_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "f32": 4}
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


def mma_k(dtype: str) -> int:
    """K depth of one MMA instruction: 32 bytes of K (16 for f16/bf16, 32 for e4m3)."""
    return MMA_K_BYTES // DTYPE_BYTES[dtype]


def mmas_per_stage(spec: Spec) -> int:
    """MMA instructions per stage: each takes 32 bytes of K (see :func:`mma_k`)."""
    return k_row_bytes(spec) // MMA_K_BYTES


def arch_rules(spec: Spec):
    """The module holding the rules of the spec's architecture."""
    from codegen import rules_sm90, rules_sm100

    return rules_sm100 if spec.arch == "sm_100a" else rules_sm90


# ---- shared memory ------------------------------------------------------------------------------


def stage_bytes(spec: Spec) -> int:
    """A + B bytes one CTA receives per stage; also the TMA bytes its full barrier expects."""
    a_rows, b_rows = arch_rules(spec).operand_rows_per_cta(spec)
    return (a_rows + b_rows) * k_row_bytes(spec)


def tx_bytes(spec: Spec) -> int:
    return stage_bytes(spec)


def smem_bytes(spec: Spec, stages: int) -> int:
    """Total dynamic SMEM per CTA: barriers, the A ring, the B ring and any epilogue buffers,
    each operand region 1024-byte aligned (one 128B-swizzle period)."""
    arch = arch_rules(spec)
    a_rows, b_rows = arch.operand_rows_per_cta(spec)
    total = align_up(arch.barrier_bytes(spec, stages), SMEM_ALIGN)
    total = align_up(total + stages * a_rows * k_row_bytes(spec), SMEM_ALIGN)
    total += stages * b_rows * k_row_bytes(spec)
    epi = arch.epilogue_smem_bytes(spec)
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
        depth = mma_k(spec.dtype)
        out.append(
            Violation(
                "tile", f"tile K={t.k} must be a multiple of {depth} (one MMA is {depth} deep)"
            )
        )
    if spec.dtype == "e4m3" and spec.epilogue.out_dtype is None:
        out.append(
            Violation(
                "epilogue",
                "dtype=e4m3 needs epilogue.out_dtype (the kernel does not write float8): "
                "legal: bf16, f16, f32",
            )
        )
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

    out += arch_rules(spec).check(spec)

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


def splitk_cluster_violation(spec: Spec, splits: int) -> Violation:
    """The cluster rule both arches share: split-K over a cluster takes the cluster itself."""
    return Violation(
        "cluster",
        f"cluster {spec.cluster.m}x{spec.cluster.n} with scheduler split_k: split-K uses the "
        f"cluster itself ({splits} CTAs along x, one per K share) and has no TMA multicast; "
        "legal: [1, 1]",
    )
