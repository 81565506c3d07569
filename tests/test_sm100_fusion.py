"""Fused epilogues on sm_100a: D = activation(alpha * A @ B^T + beta * C + bias), f16/bf16/f32 out.

Four parts: the rules (everything the two epilogues fuse is legal; what beta and an f32 output
cost in barriers, bytes and TMA boxes); the shared pieces (one fusion macro and one set of
constants for both architectures, the bias argument only where the spec has a bias); the
generated files (the entry points, and the persistent epilogue still handing its TMEM slot back
before it reads C or converts); and a cross-compile of ``specs/sm100/fusion.toml`` whose PTX must
show each fusion (marked ``build``, about a minute on two cores). No Blackwell GPU ran these.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from conftest import SPECS, build_named, kernel_file, kernel_glob

from codegen import build, loader, plan, plan_common, rules
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.rules_common import Violation
from codegen.spec import Spec

KIB = 1024


def make(tile: tuple[int, int, int] = (128, 256, 64), **knobs: object) -> Spec:
    knobs.setdefault("swizzle", "128B")
    return rules.resolve(Spec.model_validate({"tile": list(tile), **knobs}))


def violations(tile: tuple[int, int, int] = (128, 256, 64), **knobs: object) -> list[Violation]:
    knobs.setdefault("stages", 2)
    return rules.check(make(tile, **knobs))


EVERYTHING = {"alpha": 2.0, "beta": 0.5, "bias": "col", "activation": "gelu_tanh"}


@pytest.fixture(scope="module")
def fusion_specs() -> dict[str, Spec]:
    loaded = loader.load([SPECS / "sm100" / "fusion.toml"])
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loaded}


# ---- rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["direct", "tma"])
@pytest.mark.parametrize("out_dtype", [None, "f16", "bf16", "f32"])
@pytest.mark.parametrize(
    "fusion",
    [
        {"alpha": 1.5},
        {"beta": 0.5},
        {"bias": "row"},
        {"bias": "col"},
        {"activation": "relu"},
        {"activation": "gelu_tanh"},
        {"activation": "silu"},
        EVERYTHING,
    ],
)
def test_every_fusion_is_legal_in_both_epilogues(style: str, out_dtype: str | None, fusion: dict):
    epi = {"style": style, "out_dtype": out_dtype, **fusion}
    assert violations(epilogue=epi) == []
    # the persistent epilogue warps, one CTA or a pair, with two TMEM slots
    assert violations(accumulators=2, scheduler="persistent", epilogue=epi) == []
    pair = {"cta_group": 2, "cluster": [2, 1], "accumulators": 2, "scheduler": "persistent"}
    assert violations((256, 256, 64), epilogue=epi, **pair) == []


def test_no_fused_epilogue_violation_is_left() -> None:
    for style in ("direct", "tma"):
        spec = make(epilogue={"style": style, "out_dtype": "f32", **EVERYTHING}, stages=2)
        assert rules_sm100.epilogue_violations(spec) == []


def test_beta_by_tma_keeps_an_even_number_of_sub_tiles_per_persistent_tile() -> None:
    # (the fused epilogue's combinations with e4m3, swap_ab, M=64, split-K and the dynamic
    # scheduler are legal now: tests/test_sm100_fusion_combos.py)
    # beta's c_full phase is `sub-tile % 2` because a persistent TMA-store tile has an even number
    # of sub-tiles: the rule that guarantees it still holds with beta
    (v,) = violations((128, 64, 64), scheduler="persistent", epilogue={"style": "tma", "beta": 1.0})
    assert v.field == "scheduler" and v.message.endswith("legal: N a multiple of 128, or beta = 0")


def test_beta_with_tma_store_adds_one_barrier_and_no_buffer() -> None:
    plain = make(epilogue="tma")
    beta = make(epilogue={"style": "tma", "beta": 0.5})
    assert rules_sm100.barrier_count(beta, 4) == rules_sm100.barrier_count(plain, 4) + 1  # c_full
    # C is loaded into the sub-tile buffer it is stored from: the same SMEM, the same stages
    assert rules_sm100.epilogue_smem_bytes(beta) == rules_sm100.epilogue_smem_bytes(plain)
    assert rules.max_stages(beta) == rules.max_stages(plain) == 4
    # the direct epilogue reads C into registers: no barrier
    direct = make(epilogue={"style": "direct", "beta": 0.5})
    assert rules_sm100.barrier_count(direct, 4) == rules_sm100.barrier_count(make(), 4)
    assert not rules_sm100.loads_c_by_tma(direct) and rules_sm100.c_load_bytes(direct) == 0


def test_c_loads_and_tma_boxes_per_output_dtype() -> None:
    f16 = make(epilogue={"style": "tma", "beta": 1.0})
    f32 = make(epilogue={"style": "tma", "beta": 1.0, "out_dtype": "f32"})
    assert rules_sm100.c_load_bytes(f16) == 128 * 64 * 2 == 16 * KIB
    assert rules_sm100.c_load_bytes(f32) == 128 * 64 * 4 == 32 * KIB
    # a 128B-swizzled box row is at most 128 bytes: 64 f32 columns are two 128 x 32 boxes
    assert rules_sm100.epi_tma_boxes(f16) == 1 and rules_sm100.epi_tma_boxes(f32) == 2
    # the f32 sub-tiles count in the budget: 2 x 32 KiB leave room for 3 stages of 48 KiB
    assert rules_sm100.epilogue_smem_bytes(f32) == 2 * 32 * KIB
    assert rules.max_stages(f32) == 3


# ---- shared pieces -------------------------------------------------------------------------------


def test_both_arches_print_the_same_fusion_values() -> None:
    epi = {"style": "direct", "alpha": 1.5, "beta": 0.5, "activation": "gelu_tanh"}
    h = plan.plan(make(arch="sm_90a", epilogue=epi)).values
    b = plan.plan(make(epilogue=epi)).values
    assert h.fusion == b.fusion and h.bias == b.bias
    assert (b.fusion.gelu_c, b.fusion.gelu_cubic) == (plan_common.GELU_C, plan_common.GELU_CUBIC)


def test_bias_values_name_the_dimension_it_runs_along() -> None:
    row = plan.plan(make(epilogue={"style": "direct", "bias": "row"})).values
    col = plan.plan(make(epilogue={"style": "tma", "bias": "col"})).values
    assert (row.bias.user_extent, row.bias.user_axis, row.bias_view.stride) == ("M", "row", (1, 0))
    assert (col.bias.user_extent, col.bias.user_axis, col.bias_view.stride) == (
        "N",
        "column",
        (0, 1),
    )
    assert (row.tensors.host, row.tensors.doc) == (["bias"], ", bias (M,)")
    assert row.bias and not plan.plan(make()).values.tensors.host
    # only the TMA-store epilogue takes partial tiles, so only its bias loads are predicated
    assert not row.bias_view.predicated and col.bias_view.predicated
    persistent = plan.plan(
        make(scheduler="persistent", epilogue={"style": "direct", "bias": "row"})
    ).values
    # a persistent kernel tiles the bias over all tiles and slices it per tile
    assert persistent.roles is not None and row.roles is None
    assert plan.plan(make()).values.bias is None


def test_fusion_formula_in_the_docstring() -> None:
    spec = make(epilogue={"style": "tma", "alpha": 2.0, "beta": 1.0, "bias": "row"})
    assert plan_common.fusion_formula(spec) == "2 * A @ B^T + 1 * C + bias[row]"
    values = plan.plan(spec).values
    assert (values.dtypes.out_name, values.fusion.formula) == (
        "f16",
        "2 * A @ B^T + 1 * C + bias[row]",
    )
    # one formula for both architectures (sm_90a's docstrings say the same)
    h = make(arch="sm_90a", epilogue={"style": "direct", "bias": "col", "activation": "relu"})
    assert plan_common.fusion_formula(h) == "relu(A @ B^T + bias[column])"
    assert plan_common.fusion_formula(make()) == ""


# ---- expected counts: pinned per shipped variant ------------------------------------------------

# (ld.global, max.f32, ex2, TMA store, st.global, cp.async.bulk.tensor, mbarrier.try_wait), derived
# by hand: each thread owns one row of the CTA's 256 (128) columns; a 16-byte vector is 8 f16 or 4
# f32; a row bias is one scalar load; beta through TMA adds a load and a wait per sub-tile. A
# single CTA waits 4 times (empty, full, acc_full, the producer's tail over the ring).
PINNED = {
    "sm100_f16_128x256x64_s4_sw128_ws_direct_a1p5_b0p5_relu_grid": (
        256 * 2 // 16,
        256,
        0,
        0,
        32,
        2,
        4,
    ),
    "sm100_bf16_128x128x64_s7_sw128_ws_direct_f32_gelu_tanh_grid": (
        0,
        0,
        128,
        0,
        128 * 4 // 16,
        2,
        4,
    ),
    "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid": (0, 0, 256, 4, 0, 2, 4),
    "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid": (
        0,
        0,
        0,
        2 * 4,
        0,
        2,
        4,
    ),  # two 128x32 boxes per f32 sub-tile
    "sm100_f16_128x256x64_s4_sw128_ws_tma_a2_b1_relu_grid": (
        0,
        256,
        0,
        4,
        0,
        2 + 4,
        4 + 4,
    ),  # C comes by TMA, not ld.global
    "sm100_f16_128x256x64_s4_sw128_ws_direct_biasrow_grid": (1, 0, 0, 0, 32, 2, 4),
    "sm100_f16_128x256x64_s4_sw128_ws_direct_biascol_grid": (32, 0, 0, 0, 32, 2, 4),
    "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid": (1, 0, 0, 4, 0, 2, 4),
    "sm100_f16_128x256x64_s4_sw128_ws_tma_biascol_grid": (32, 0, 0, 4, 0, 2, 4),
    # a CTA pair, persistent: 7 waits (codegen/arch/sm100/counts.py try_waits) + 4 C sub-tile waits
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_b0p5_biascol_gelu_tanh_persistent_rm": (
        32,
        0,
        256,
        4,
        0,
        2 + 4,
        7 + 4,
    ),
    # one CTA, persistent: 6 waits; C (32 vectors) and one row-bias scalar by ld.global
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_direct_a0p5_b2_biasrow_silu_persistent_rm": (
        32 + 1,
        0,
        256,
        0,
        32,
        2,
        6,
    ),
}
PINNED_KEYS = (
    "ld.global",
    "max.f32",
    "ex2",
    "TMA store",
    "st.global",
    "cp.async.bulk.tensor",
    "mbarrier.try_wait",
)


def test_every_shipped_variant_is_pinned(fusion_specs: dict[str, Spec]) -> None:
    assert set(fusion_specs) == set(PINNED)
    for name, spec in fusion_specs.items():
        assert rules.check(spec) == [], name


@pytest.mark.parametrize("name", sorted(PINNED))
def test_expected_counts_are_the_pinned_ones(name: str, fusion_specs: dict[str, Spec]) -> None:
    counts = plan.expected_counts(fusion_specs[name])
    assert tuple(counts[k] for k in PINNED_KEYS) == PINNED[name]


def test_unfused_kernels_expect_no_fusion_instructions() -> None:
    for spec in (make(), make(epilogue="tma"), make(epilogue={"style": "tma", "out_dtype": "f32"})):
        counts = plan.expected_counts(spec)
        assert (counts["ld.global"], counts["max.f32"], counts["ex2"]) == (0, 0, 0)


# ---- generated files -----------------------------------------------------------------------------


def _text(name: str) -> str:
    return (kernel_file(name)).read_text(encoding="utf-8")


def test_only_bias_kernels_take_a_bias_argument() -> None:
    for path in kernel_glob("*.py"):
        text = path.read_text(encoding="utf-8")
        has_bias = '"bias": "row"' in text or '"bias": "col"' in text
        if has_bias:
            assert re.search(r"def launcher\(\s*a: \S+, b: \S+, c: \S+, bias: \S+\s*\)", text), (
                path.name
            )
            assert re.search(
                r"def run\(\s*a: \S+,\s*b: \S+,\s*c: [^=]+= None,\s*\*,\s*bias: ", text
            ), path.name
            signature = (
                r"def gemm\(\s*a: cute.Tensor,\s*b: cute.Tensor,\s*c: cute.Tensor,\s*bias: cute"
            )
            assert re.search(signature, text), path.name
        else:
            # alpha and beta taken at launch (epilogue "runtime") are keyword-only arguments
            runtime = '"alpha": "runtime"' in text or '"beta": "runtime"' in text
            tail = r",\s*\*,[^)]*" if runtime else ""
            if '"fn": {' in text or '"row_sumsq": True' in text or '"block_quant": ' in text:
                # an epilogue function's arguments (its own names), row_sumsq's row_partials and
                # block_quant's scales
                # are keyword-only too, if any
                tail = r"(?:,\s*\*,[^)]*)?"
            launcher = r"def launcher\(\s*a: \S+,\s*b: \S+,\s*c: \S+" + tail + r",?\s*\)"
            assert re.search(launcher, text), path.name
            run = r"def run\(\s*a: \S+,\s*b: \S+,\s*c: [^=]+= None" + tail + r",?\s*\)"
            assert re.search(run, text), path.name
            if '"fn": {' not in text:
                assert "bias" not in text.split("def compile_args")[1], path.name


def test_persistent_epilogue_releases_its_slot_before_it_reads_c_or_converts() -> None:
    for name in (
        "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_b0p5_biascol_gelu_tanh_persistent_rm",
        "sm100_f16_128x256x64_s4_sw128_ws_acc2_direct_a0p5_b2_biasrow_silu_persistent_rm",
    ):
        # the epilogue warps' role helper
        epilogue = _text(name).split("\ndef epilogue(")[1].split("\n@cute.kernel")[0]
        release = epilogue.index("cute.arch.mbarrier_arrive(acc_empty + slot")
        assert epilogue.index("cute.arch.fence_view_async_tmem_load()") < release
        assert epilogue.index("cute.copy(t2r, src") < release  # the chunk's TMEM load
        for later in (" d = r", "r_out.store(d.to(OUT_DTYPE))"):  # the f32 fragment, the store
            assert release < epilogue.index(later), (name, later)
    tma = _text(
        "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_b0p5_biascol_gelu_tanh_persistent_rm"
    )
    assert tma.index("mbarrier_arrive(acc_empty + slot") < tma.index("mbarrier_wait(c_full,")


def test_generated_files_hold_only_their_fusions() -> None:
    relu = _text("sm100_f16_128x256x64_s4_sw128_ws_direct_a1p5_b0p5_relu_grid")
    assert "ALPHA = 1.5" in relu and "BETA = 0.5" in relu and "cute.where(d > 0.0" in relu
    assert "GELU_C" not in relu and "bias" not in relu
    assert not re.search(r"\bc_full\b", relu)  # the direct epilogue reads C into registers
    tma_beta = _text("sm100_f16_128x256x64_s4_sw128_ws_tma_a2_b1_relu_grid")
    assert "c_full: cutlass.Int64" in tma_beta and "C_TX_BYTES = 16384" in tma_beta
    for name in (
        "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid",
        "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid",
        "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid",
    ):
        assert not re.search(r"\bc_full\b", _text(name)) and "tma_c_in" not in _text(name), name
    f32 = _text("sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid")
    assert "OUT_DTYPE = cutlass.Float32" in f32 and "order=(0, 1, 2)" in f32
    # out_dtype alone is a conversion, not a fusion: the unfused store line
    assert not re.search(r"^\s+d = ", f32, re.MULTILINE)
    assert "r_out.store(r2s_acc.load().to(OUT_DTYPE))" in f32


def test_bias_kernel_entry_points_check_the_bias() -> None:
    pytest.importorskip("cutlass")
    torch = pytest.importorskip("torch")
    module = build.load_module(kernel_file("sm100_f16_128x256x64_s4_sw128_ws_tma_biascol_grid"))
    a = torch.zeros(64, 128, dtype=torch.float16)
    b = torch.zeros(256, 128, dtype=torch.float16)
    c = torch.zeros(64, 256, dtype=torch.float16)
    with pytest.raises(TypeError, match=r"required keyword-only argument: 'bias'"):
        module.run(a, b, c)
    with pytest.raises(TypeError, match=r"adds a bias per column of C: pass bias=, a \(N,\)"):
        module.run(a, b, c, bias=None)
    with pytest.raises(ValueError, match=r"a 1-D torch.float16 tensor of length N=256"):
        module.launcher(a, b, c, torch.zeros(64, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"got torch.float32 \(256,\)"):
        module.launcher(a, b, c, torch.zeros(256, dtype=torch.float32))
    # CPU tensors never reach a launch (a launch on host memory loses the CUDA context)
    with pytest.raises(ValueError, match=r"every tensor must be on one CUDA device, got cpu, cpu"):
        module.launcher(a, b, c, torch.zeros(256, dtype=torch.float16))
    fake = module.compile_args()
    assert len(fake) == 5 and fake[3].element_type is module.OUT_DTYPE


# ---- cross-compiled: the PTX shows each fusion ---------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, BuildResult], Path]:
    out = tmp_path_factory.mktemp("build")
    return build_named(sorted(PINNED), out), out


def _ptx(built: tuple[dict[str, BuildResult], Path], name: str) -> str:
    return "\n".join(p.read_text() for p in sorted((built[1] / name).rglob("*.ptx")))


def _count(pattern: str, ptx: str) -> int:
    return len(re.findall(pattern, ptx))


def _f32_bits(value: float) -> str:
    """A float as PTX writes an f32 immediate."""
    return "0f" + struct.pack(">f", value).hex().upper()


@pytest.mark.build
@pytest.mark.parametrize("name", sorted(PINNED))
def test_fused_variants_compile_with_their_counts(name: str, built) -> None:
    r = built[0][name]
    assert r.passed, (name, r.error or r.mismatches)
    assert r.spill_bytes == 0 and r.registers is not None and r.registers <= 255
    assert tuple(r.counts[k] for k in PINNED_KEYS) == PINNED[name]


@pytest.mark.build
def test_activations_leave_their_instructions(built) -> None:
    gelu = _ptx(built, "sm100_bf16_128x128x64_s7_sw128_ws_direct_f32_gelu_tanh_grid")
    # the shared constants reach the PTX as immediates; silu has neither
    assert _f32_bits(plan_common.GELU_C) in gelu and _f32_bits(plan_common.GELU_CUBIC) in gelu
    silu = _ptx(built, "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid")
    assert _f32_bits(plan_common.GELU_C) not in silu and _count(r"\bex2\.approx", silu) == 256
    relu = _ptx(built, "sm100_f16_128x256x64_s4_sw128_ws_direct_a1p5_b0p5_relu_grid")
    assert _count(r"\bmax\.f32", relu) == 256 and _count(r"\bex2\.", relu) == 0
    # alpha and beta are multiplied in: their immediates are there
    assert _f32_bits(1.5) in relu and _f32_bits(0.5) in relu


@pytest.mark.build
def test_c_is_read_only_with_beta(built) -> None:
    # direct: C comes in 16-byte vectors, as many as the stores
    relu = _ptx(built, "sm100_f16_128x256x64_s4_sw128_ws_direct_a1p5_b0p5_relu_grid")
    assert _count(r"ld\.global\.v4", relu) == _count(r"st\.global\.v4", relu) == 32
    # TMA store: C comes by TMA into the sub-tile buffer, then from SMEM (16-byte vectors)
    tma = _ptx(built, "sm100_f16_128x256x64_s4_sw128_ws_tma_a2_b1_relu_grid")
    assert _count(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global", tma) == 2 + 4
    assert _count(r"ld\.shared\.v4", tma) == 32 and _count(r"ld\.global", tma) == 0
    # no beta: no C load of either kind
    for name in (
        "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid",
        "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid",
        "sm100_f16_128x256x64_s4_sw128_ws_direct_biascol_grid",
    ):
        ptx = _ptx(built, name)
        assert _count(r"ld\.shared\.v4", ptx) == 0, name
        assert _count(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global", ptx) == 2, name


@pytest.mark.build
def test_bias_is_loaded_only_with_bias(built) -> None:
    for name in (
        "sm100_f16_128x256x64_s4_sw128_ws_direct_biasrow_grid",
        "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid",
    ):
        ptx = _ptx(built, name)
        assert _count(r"ld\.global\.b16", ptx) == 1 and _count(r"ld\.global\.v4", ptx) == 0, name
    for name in (
        "sm100_f16_128x256x64_s4_sw128_ws_direct_biascol_grid",
        "sm100_f16_128x256x64_s4_sw128_ws_tma_biascol_grid",
    ):
        ptx = _ptx(built, name)  # the tile's 256 f16 column biases, 8 per vector
        assert _count(r"ld\.global\.v4", ptx) == 32 and _count(r"ld\.global\.b16", ptx) == 0, name
    tma_row = _ptx(built, "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid")
    # partial tiles: the row-bias load is branched around past M
    assert re.search(r"setp\.[a-z0-9.]+\s+(%p\d+)[^;]*;\s*(?:[^\n]*\n){0,3}\s*@\1 bra", tma_row)
    for name in (
        "sm100_bf16_128x256x64_s4_sw128_ws_tma_silu_grid",
        "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid",
        "sm100_bf16_128x128x64_s7_sw128_ws_direct_f32_gelu_tanh_grid",
    ):
        assert _count(r"ld\.global", _ptx(built, name)) == 0, name


@pytest.mark.build
def test_f32_output_is_stored_as_f32(built) -> None:
    f32 = _ptx(built, "sm100_f16_128x256x64_s3_sw128_ws_tma_f32_grid")
    f16 = _ptx(built, "sm100_f16_128x256x64_s4_sw128_ws_tma_biasrow_grid")
    # no conversion to 16 bits; twice the SMEM vectors (256 f32 of a row, 4 per vector)
    assert _count(r"cvt\.rn\.(b?f16)x2\.f32", f32) == 0 < _count(r"cvt\.rn\.f16x2\.f32", f16)
    assert _count(r"st\.shared\.v4", f32) == 64 and _count(r"st\.shared\.v4", f16) == 32
    # two TMA boxes per sub-tile, none of them a st.global
    assert _count(r"cp\.async\.bulk\.tensor\.2d\.global\.shared", f32) == 8
    assert _count(r"\bst\.global", f32) == 0
    gelu = _ptx(built, "sm100_bf16_128x128x64_s7_sw128_ws_direct_f32_gelu_tanh_grid")
    # 128 f32 of a row in 16-byte stores (2 x b64 each)
    assert _count(r"cvt\.rn\.(b?f16)x2\.f32", gelu) == 0
    assert _count(r"st\.global\.v2\.b64", gelu) == _count(r"st\.global", gelu) == 32
