"""Legality rules and budget arithmetic that hold on every architecture.

Every function here is pure and imports no architecture: what an architecture adds (the rows
of A and B a CTA holds, its barriers, its epilogue buffers, its own rules) comes in as arguments.
Each architecture's rules module (``codegen/arch/<name>/rules.py``) builds on these; the front
door :mod:`codegen.rules` picks the architecture of a spec through :mod:`codegen.registry`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from codegen.spec import Spec

KIB = 1024
SM_SMEM_BYTES = 228 * KIB  # shared memory of one SM on sm_90 and sm_100
CTA_RESERVED_SMEM = 1 * KIB  # what the system reserves of it for each resident CTA
# max dynamic shared memory per block on sm_90 and sm_100: the SM's, less one CTA's reservation
SMEM_LIMIT_BYTES = SM_SMEM_BYTES - CTA_RESERVED_SMEM
SMEM_ALIGN = 1024  # one full 128B-swizzle period (8 rows x 128 B); every operand ring starts here
MBARRIER_BYTES = 8
MMA_K_BYTES = 32  # one MMA instruction is 32 bytes of K: 16 deep for f16/bf16, 32 for e4m3
DTYPE_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "f32": 4}
E4M3_MAX = 448.0  # the largest finite float8_e4m3fn (block_quant maps a block's amax onto it)
SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
TMA_BOX_BYTES_UNSWIZZLED = 16  # the interleaved canonical layout is built of 16-byte-wide boxes
CLUSTER_SIZE_MAX = 16  # CTAs in a (non-portable) cluster, a power of two
TMA_ROW_ALIGN_BYTES = 16  # TMA needs 16-byte global strides: an operand's rows (or columns)

# smem_bytes(spec, stages) of one architecture
SmemBytes = Callable[[Spec, int], int]


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


def layout_multiples(spec: Spec, multiples: dict[str, int]) -> dict[str, int]:
    """The architecture's shape multiples with the operands' major modes: an MN-major A (B) is
    read by TMA along M (N), whose stride must be 16 bytes: M (N) a multiple of 16 bytes of the
    dtype as well."""
    align = TMA_ROW_ALIGN_BYTES // DTYPE_BYTES[spec.dtype]
    out = dict(multiples)
    for dim, major in (("M", spec.a_major), ("N", spec.b_major)):
        if major == "mn":
            out[dim] = math.lcm(out[dim], align)
    return out


# ---- shared memory ------------------------------------------------------------------------------


def smem_limit(spec: Spec) -> int:
    """Dynamic SMEM one CTA may take so that spec.ctas_per_sm of them are resident on an SM at
    once: an equal share of the SM's, less each CTA's reservation (227 KiB for one, 113 for two)."""
    return SM_SMEM_BYTES // spec.ctas_per_sm - CTA_RESERVED_SMEM


def smem_limit_note(spec: Spec) -> str:
    """The SMEM budget in words: "227 KiB", and where it is a share of the SM, which share."""
    limit = kib(smem_limit(spec))
    if spec.ctas_per_sm == 1:
        return f"{limit} KiB"
    return (
        f"{limit} KiB (ctas_per_sm={spec.ctas_per_sm}: 1/{spec.ctas_per_sm} of the SM's "
        f"{kib(SM_SMEM_BYTES)} KiB, less {kib(CTA_RESERVED_SMEM)} KiB reserved per CTA)"
    )


def stage_bytes(spec: Spec, rows: tuple[int, int]) -> int:
    """A + B bytes of one stage in one CTA's SMEM, which holds `rows` = (A rows, B rows) of the
    tile there. What a full barrier expects is the architecture's `full_tx_bytes`: this for one
    CTA, twice this for a CTA pair (whose leader's barrier counts both CTAs' loads)."""
    return (rows[0] + rows[1]) * k_row_bytes(spec)


def smem_bytes(
    spec: Spec, stages: int, rows: tuple[int, int], barrier_bytes: int, epilogue_bytes: int
) -> int:
    """Total dynamic SMEM per CTA: barriers, the A ring, the B ring and any epilogue buffers,
    each operand region 1024-byte aligned (one 128B-swizzle period). `rows` are the A and B rows
    a CTA holds per stage; the barrier and epilogue bytes are the architecture's."""
    a_rows, b_rows = rows
    total = align_up(barrier_bytes, SMEM_ALIGN)
    total = align_up(total + stages * a_rows * k_row_bytes(spec), SMEM_ALIGN)
    total += stages * b_rows * k_row_bytes(spec)
    if epilogue_bytes:
        total = align_up(total, SMEM_ALIGN) + epilogue_bytes
    return total


def max_stages(spec: Spec, smem: SmemBytes) -> int:
    """The most stages that fit in the SMEM budget (0 if not even one does)."""
    stages = 0
    while smem(spec, stages + 1) <= smem_limit(spec):
        stages += 1
    return stages


# ---- resolve "auto" and check -------------------------------------------------------------------


def resolve(spec: Spec, smem: SmemBytes) -> Spec:
    """Replace "auto" knobs with concrete values: the widest legal swizzle, the most stages."""
    update: dict[str, object] = {}
    if spec.swizzle == "auto":
        update["swizzle"] = auto_swizzle(k_row_bytes(spec))
    if spec.stages == "auto":
        update["stages"] = max(1, max_stages(spec, smem))
    return spec.model_copy(update=update) if update else spec


def operand_violations(spec: Spec) -> list[Violation]:
    """The rules on the K row every architecture shares: whole MMAs, an output dtype for float8,
    a swizzle that divides the row."""
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
    return out


def cluster_size_violations(spec: Spec) -> list[Violation]:
    """The cluster-size rule every architecture shares: a power of two, at most 16 CTAs."""
    size = spec.cluster.size
    if is_power_of_two(size) and size <= CLUSTER_SIZE_MAX:
        return []
    return [
        Violation(
            "cluster",
            f"cluster {spec.cluster.m}x{spec.cluster.n} has {size} CTAs; "
            f"it must be a power of two, at most {CLUSTER_SIZE_MAX}",
        )
    ]


def stages_violations(spec: Spec, smem: SmemBytes, stage: int) -> list[Violation]:
    """The ring must fit the SMEM budget; `stage` is the architecture's bytes per stage."""
    if not isinstance(spec.stages, int):
        return []
    need = smem(spec, spec.stages)
    if need <= smem_limit(spec):
        return []
    fit = max_stages(spec, smem)
    return [
        Violation(
            "stages",
            f"stages={spec.stages} needs {kib(need)} KiB of shared memory "
            f"({kib(stage)} KiB per stage); at most {fit} stage"
            f"{'s' if fit != 1 else ''} fit in {smem_limit_note(spec)}",
        )
    ]


def check(
    spec: Spec, arch_violations: list[Violation], smem: SmemBytes, stage: int
) -> list[Violation]:
    """Every rule the spec breaks, given the violations of its architecture's own rules (placed
    after the shared K-row rules, before the cluster and SMEM rules). Expects a resolved spec."""
    return (
        operand_violations(spec)
        + arch_violations
        + cluster_size_violations(spec)
        + stages_violations(spec, smem, stage)
    )
