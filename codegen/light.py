"""The light decode kernel (``mainloop = "light"``), the same design on both architectures: its
rules, its plan (templates/light/) and its expected PTX counts.

A decode GEMM (M = 1-16 tokens) is a stream of the weights B through the SMs: its time is bytes
over bandwidth plus a fixed cost. The TMA kernels pay that fixed cost in barrier setup, a
producer warp, a shared-memory ring and, for split K, a cluster reduction. The light kernel has
none of them: every warp loads both operands straight into registers with 16-byte loads and
multiplies them with warp-level ``mma.sync`` (m16n8k16 for 16-bit inputs, m16n8k32 for e4m3),
swap AB (16 rows of B per MMA, 8 tokens), and the ``warps`` warps of a CTA take interleaved
k-steps and add their f32 partials through shared memory after one CTA barrier.

Lane q of a warp loads VEC contiguous elements of a row (16 bytes) at k = step * 4 * VEC +
q * VEC: exactly the values its A and B fragments of two MMAs hold once K is renumbered inside
the step (both operands the same way; a sum over K does not depend on the order). The tile is
(16 * row groups) rows of B x (8 * token groups) tokens x one step of K; stages is how many
k-steps a warp loads before it multiplies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.plan_common import (
    Docs,
    Plan,
    Tile,
    Values,
    dtypes,
    extra_tensors,
    fusion,
    layouts,
)
from codegen.rules_common import DTYPE_BYTES, Violation
from codegen.spec import DirectEpilogue, GridScheduler, Spec

VEC_BYTES = 16  # one load per lane and row: ld.global.v4.b32
REG_BYTES = 4  # mma.sync fragments pack operands in 32-bit registers
MMA_ROWS = 16  # rows of B one mma.sync covers (its M)
MMA_TOKENS = 8  # tokens (rows of A) one mma.sync covers (its N)
STEP_MMAS = 2  # mma.sync per row group and token group in one k-step (4 lanes x VEC = 2 MMAs deep)
ROWS = (16, 32, 64)  # tile M: row groups 1, 2, 4
TOKENS = (8, 16, 32)  # tile N: token groups 1, 2, 4
WARPS = (1, 2, 4, 8, 16, 32)
MAX_STAGES = 8
REGISTER_FILE = 65536  # 32-bit registers of one SM
MAX_THREAD_REGS = 255
BASE_REGS = 40  # what a thread holds besides operands and accumulators: indices, pointers
STATIC_SMEM = 48 * 1024  # shared memory a launch gets without opting in


def is_light(spec: Spec) -> bool:
    return spec.mainloop == "light"


def vec(spec: Spec) -> int:
    """Elements of one 16-byte load."""
    return VEC_BYTES // DTYPE_BYTES[spec.dtype]


def pair(spec: Spec) -> int:
    """Elements of one 32-bit fragment register."""
    return REG_BYTES // DTYPE_BYTES[spec.dtype]


def step_k(spec: Spec) -> int:
    """K one warp consumes per k-step: 4 lanes x VEC (two MMAs deep)."""
    return 4 * vec(spec)


def mma_k(spec: Spec) -> int:
    return step_k(spec) // STEP_MMAS


def row_groups(spec: Spec) -> int:
    return spec.tile.m // MMA_ROWS


def token_groups(spec: Spec) -> int:
    return spec.tile.n // MMA_TOKENS


def warps(spec: Spec) -> int:
    assert spec.warps is not None
    return spec.warps


def step_mmas(spec: Spec) -> int:
    """mma.sync one warp issues per k-step: two deep, per row group and token group."""
    return STEP_MMAS * row_groups(spec) * token_groups(spec)


def registers(spec: Spec) -> int:
    """32-bit registers a thread needs, about: the loaded k-steps (one 16-byte vector per row of B
    and per token it reads), the f32 accumulators and BASE_REGS."""
    vectors = 2 * row_groups(spec) + token_groups(spec)
    assert isinstance(spec.stages, int)
    loaded = vectors * (VEC_BYTES // REG_BYTES) * spec.stages
    return loaded + 4 * row_groups(spec) * token_groups(spec) + BASE_REGS


def partial_elems(spec: Spec) -> int:
    """f32 partials one warp hands over: 4 per lane per (row group, token group)."""
    return 4 * 32 * row_groups(spec) * token_groups(spec)


def smem_bytes(spec: Spec, stages: int) -> int:
    """The partials of every warp (stages do not use shared memory)."""
    return partial_elems(spec) * warps(spec) * DTYPE_BYTES["f32"] if spec.warps else 0


def resolve(spec: Spec) -> Spec:
    """A light kernel stages nothing in shared memory (swizzle none) and unrolls 2 k-steps
    unless told."""
    update: dict[str, object] = {}
    if spec.swizzle == "auto":
        update["swizzle"] = "none"
    if spec.stages == "auto":
        update["stages"] = 2
    return spec.model_copy(update=update) if update else spec


def tma_violations(spec: Spec) -> list[Violation]:
    """The light knobs on a TMA kernel."""
    if spec.warps is not None:
        return [Violation("warps", 'warps is a knob of mainloop = "light" only; leave it out')]
    return []


def check(spec: Spec) -> list[Violation]:
    """The rules of a light kernel (the shared K-row, cluster and stage rules are checked
    besides)."""
    out: list[Violation] = []
    legal_warps = ", ".join(map(str, WARPS))
    if spec.warps is None or spec.warps not in WARPS:
        got = "none" if spec.warps is None else spec.warps
        out.append(
            Violation(
                "warps",
                f'mainloop = "light" needs warps (per CTA, each taking every warps-th k-step), '
                f"got {got}; legal: {legal_warps}",
            )
        )
    if not spec.swap_ab:
        out.append(
            Violation(
                "swap_ab",
                'mainloop = "light" computes C^T = B @ A^T (16 rows of B per mma.sync, 8 tokens): '
                "set swap_ab = true",
            )
        )
    t = spec.tile
    if t.m not in ROWS:
        out.append(
            Violation(
                "tile",
                f'tile M={t.m}: mainloop = "light" takes {", ".join(map(str, ROWS))} '
                f"(rows of B per CTA, {MMA_ROWS} per mma.sync)",
            )
        )
    if t.n not in TOKENS:
        out.append(
            Violation(
                "tile",
                f'tile N={t.n}: mainloop = "light" takes {", ".join(map(str, TOKENS))} '
                f"(tokens per CTA, {MMA_TOKENS} per mma.sync)",
            )
        )
    if t.k != step_k(spec):
        out.append(
            Violation(
                "tile",
                f'tile K={t.k}: mainloop = "light" takes {step_k(spec)} for {spec.dtype} '
                f"(a k-step: 4 lanes x one 16-byte load, two mma.sync deep)",
            )
        )
    if isinstance(spec.stages, int) and spec.stages > MAX_STAGES:
        out.append(
            Violation(
                "stages",
                f'stages={spec.stages}: mainloop = "light" loads at most {MAX_STAGES} k-steps '
                "into registers before it multiplies them",
            )
        )
    if spec.swizzle != "none":
        out.append(
            Violation(
                "swizzle",
                f'swizzle={spec.swizzle}: mainloop = "light" stages nothing in shared memory; '
                "legal: none",
            )
        )
    if not isinstance(spec.scheduler, GridScheduler):
        out.append(
            Violation(
                "scheduler",
                f'scheduler={spec.scheduler.kind}: mainloop = "light" takes grid (a CTA owns '
                "its tile's whole K; its warps split it)",
            )
        )
    if spec.cluster.size > 1:
        out.append(
            Violation(
                "cluster",
                f'cluster {spec.cluster.m}x{spec.cluster.n}: mainloop = "light" takes 1x1',
            )
        )
    epi = spec.epilogue
    if epi.fn is not None:
        out.append(
            Violation(
                "epilogue.fn",
                f'fn {epi.fn.name}: mainloop = "light" runs no epilogue function (its warps '
                "add partials through SMEM and store the plain product); legal with fn: mainloop "
                '"tma"',
            )
        )
    elif epi.row_sumsq:
        out.append(
            Violation(
                "epilogue.row_sumsq",
                'row_sumsq: mainloop = "light" stores the plain product only (its warps add '
                'partials through SMEM); legal with row_sumsq: mainloop "tma"',
            )
        )
    elif epi.block_quant is not None:
        out.append(
            Violation(
                "epilogue.block_quant",
                'block_quant: mainloop = "light" stores the plain product only (its warps add '
                'partials through SMEM); legal with block_quant: mainloop "tma"',
            )
        )
    elif not isinstance(epi, DirectEpilogue) or epi.fused:
        out.append(
            Violation(
                "epilogue",
                'mainloop = "light" stores the plain product (style direct, alpha = 1, '
                "beta = 0, no bias or activation; any out_dtype)",
            )
        )
    for knob, operand, major in (
        ("a_major", "a (M, K)", spec.a_major),
        ("b_major", "b (N, K)", spec.b_major),
    ):
        if major != "k":
            out.append(
                Violation(
                    knob,
                    f'{knob}={major}: mainloop = "light" loads each row of {operand} in 16-byte '
                    'vectors along K, so it takes K-major operands only; legal: "k" (pass the '
                    "operand K-major, or use a TMA kernel)",
                )
            )
    for knob, value, default in (
        ("consumer_warpgroups", spec.consumer_warpgroups, None),
        ("consumer_mode", spec.consumer_mode, "cooperative"),
        ("cta_group", spec.cta_group, 1),
        ("accumulators", spec.accumulators, 1),
        ("ctas_per_sm", spec.ctas_per_sm, 1),
        ("warp_specialized", spec.warp_specialized, True),
    ):
        if value != default:
            out.append(
                Violation(knob, f'{knob}={value}: not a knob of mainloop = "light"; leave it out')
            )
    if out:
        return out
    threads = 32 * warps(spec)
    budget = min(MAX_THREAD_REGS, REGISTER_FILE // threads)
    if registers(spec) > budget:
        out.append(
            Violation(
                "stages",
                f"stages={spec.stages} with tile {t.m}x{t.n} needs about {registers(spec)} "
                f"registers per thread; {spec.warps} warps leave {budget}: fewer stages, "
                "warps or rows",
            )
        )
    need = smem_bytes(spec, 0)
    if need > STATIC_SMEM:
        out.append(
            Violation(
                "warps",
                f"warps={spec.warps} with tile {t.m}x{t.n} hands over {need} bytes of partials; "
                f"at most {STATIC_SMEM} fit: fewer warps or a smaller tile",
            )
        )
    return out


@dataclass(frozen=True, kw_only=True)
class Light:
    """What only a light kernel has (``plan.light``)."""

    stages: int  # k-steps a warp loads before it multiplies them
    warps: int
    threads: int
    row_groups: int  # 16-row groups of B per CTA
    token_groups: int  # 8-token groups of A per CTA
    vec: int  # elements per 16-byte load
    pair: int  # elements per 32-bit fragment register
    step_mmas: int  # mma.sync per warp per k-step
    round_mmas: int  # mma.sync per warp per round of `stages` k-steps
    partial_elems: int  # f32 partials per warp
    smem_bytes: int  # every warp's partials
    registers: int  # the rules' estimate per thread
    mma_name: str  # the mma.sync shape, as the docstring names it
    mma_op: str  # the DSL's warp MMA op


@dataclass(frozen=True, kw_only=True)
class LightValues(Values):
    """What templates/light/ prints: the values every kernel has and the light group."""

    light: Light
    separate: None = None  # no split-K reduce kernel (templates/common/runner.py.j2 asks)


def values(spec: Spec) -> LightValues:
    assert isinstance(spec.stages, int)
    shape = f"m16n8k{mma_k(spec)}"
    t = spec.tile
    return LightValues(
        docs=Docs(
            arch=spec.arch,
            swizzle=str(spec.swizzle),
            scheduler_kind="grid",
            pipeline_table=[],
            timeline_legend="each warp's loop in program order; g = lane // 4, q = lane % 4",
        ),
        dtypes=dtypes(spec),
        tile=Tile(
            name=str(t),
            shape=(t.m, t.n, t.k),
            mma_k=mma_k(spec),
            k_blocks=STEP_MMAS,
            shape_multiples={"M": 1, "N": 8, "K": vec(spec)},
        ),
        swap_ab=True,
        splits=1,
        fusion=fusion(spec),
        bias=None,
        tensors=extra_tensors(spec, 0),
        layouts=layouts(spec),
        light=Light(
            stages=spec.stages,
            warps=warps(spec),
            threads=32 * warps(spec),
            row_groups=row_groups(spec),
            token_groups=token_groups(spec),
            vec=vec(spec),
            pair=pair(spec),
            step_mmas=step_mmas(spec),
            round_mmas=step_mmas(spec) * spec.stages,
            partial_elems=partial_elems(spec),
            smem_bytes=smem_bytes(spec, spec.stages),
            registers=registers(spec),
            mma_name=f"mma.sync {shape}",
            mma_op="warp.MmaFP8Op" if spec.dtype == "e4m3" else "warp.MmaF16BF16Op",
        ),
    )


def plan(spec: Spec) -> Plan:
    return Plan(template="light/gemm.py.j2", partials={}, values=values(spec))


def expected_counts(spec: Spec) -> dict[str, int]:
    """PTX counts of a light kernel: the k-step loop body (stages k-steps, unrolled) once; no TMA,
    no mbarrier, no cluster; one store of C."""
    assert isinstance(spec.stages, int)
    vectors = 2 * row_groups(spec) + token_groups(spec)
    return {
        "mma.sync": step_mmas(spec) * spec.stages,
        "ld.global.v4": spec.stages * vectors,
        "ld.global": spec.stages * vectors,
        "st.global": 1,
        "cp.async.bulk.tensor": 0,
        "mbarrier.init": 0,
        "mbarrier.try_wait": 0,
        "barrier.cluster": 0,
        "wgmma.mma_async": 0,
        "tcgen05.mma": 0,
        "div.s64": 0,
        # programmatic dependent launch: one L2 prefetch per k-step and row of B a lane loads
        # first (lanes q = 0 only), one wait for the previous kernel
        "prefetch.global.L2": spec.stages * 2 * row_groups(spec) if spec.pdl else 0,
        "griddepcontrol.wait": 1 if spec.pdl else 0,
    }
