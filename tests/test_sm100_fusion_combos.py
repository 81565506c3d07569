"""Fused sm_100a epilogues combined with e4m3, the dynamic scheduler, split-K, M=64 and swap_ab.

Four parts: the rules (every combination is legal; what stays rejected says what is legal); the
counts the planner derives (a thread's values: a whole row, or half of one with M=64; beta's C
loads like the stores, one element at a time down C^T's column with swap_ab; the bias axis of
the kernel's tile, which swap_ab swaps); the generated files (split-K fuses in rank 0 only,
after the reduction; swap_ab's bias view); and a cross-compile of
``specs/sm100/fusion_combos.toml`` whose PTX must show it (marked ``build``). Compile-only: no
Blackwell GPU has run these kernels.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SPECS, build_named, kernel_file
from test_sm100_fusion import PINNED_KEYS as FUSION_KEYS

from codegen import loader, plan, plan_common, rules
from codegen.arch.sm100 import counts as counts_sm100
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.spec import Spec

EVERYTHING = {"alpha": 2.0, "beta": 0.5, "bias": "col", "activation": "gelu_tanh"}
FP8 = {"dtype": "e4m3", "swizzle": "128B"}


def make(tile: tuple[int, int, int] = (128, 128, 64), **knobs: object) -> Spec:
    knobs.setdefault("swizzle", "128B")
    knobs.setdefault("stages", 2)
    return rules.resolve(Spec.model_validate({"tile": list(tile), **knobs}))


def violations(
    tile: tuple[int, int, int] = (128, 128, 64), **knobs: object
) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(make(tile, **knobs))]


@pytest.fixture(scope="module")
def combo_specs() -> dict[str, Spec]:
    loaded = loader.load([SPECS / "sm100" / "fusion_combos.toml"])
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loaded}


# ---- rules ---------------------------------------------------------------------------------------

FUSIONS = [
    {"alpha": 1.5},
    {"beta": 0.5},
    {"bias": "row"},
    {"bias": "col"},
    {"activation": "relu"},
    {"activation": "silu"},
    EVERYTHING,
]


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("out", ["bf16", "f16", "f32"])
def test_e4m3_takes_every_fusion(fusion: dict, out: str) -> None:
    for style in ("direct", "tma"):
        epi = {"style": style, "out_dtype": out, **fusion}
        assert violations((128, 256, 128), epilogue=epi, **FP8) == [], style
        persistent = {"scheduler": "persistent", "accumulators": 2}
        assert violations((128, 256, 128), epilogue=epi, **FP8, **persistent) == [], style


@pytest.mark.parametrize("fusion", FUSIONS)
def test_dynamic_and_split_k_take_every_fusion(fusion: dict) -> None:
    for style in ("direct", "tma"):
        epi = {"style": style, **fusion}
        assert violations((128, 256, 64), scheduler="dynamic", accumulators=2, epilogue=epi) == []
    for splits in (2, 4, 8):
        split = {"kind": "split_k", "splits": splits}
        epi = {"style": "direct", "out_dtype": "f32", **fusion}
        assert violations(scheduler=split, epilogue=epi) == [], splits
        assert violations((128, 32, 64), swap_ab=True, scheduler=split, epilogue=epi) == []


@pytest.mark.parametrize("fusion", FUSIONS)
def test_m64_and_swap_ab_take_every_fusion(fusion: dict) -> None:
    for style in ("direct", "tma"):
        epi = {"style": style, **fusion}
        assert violations((64, 128, 64), epilogue=epi) == [], style
        assert violations((64, 128, 64), scheduler="persistent", epilogue=epi) == [], style
    direct = {"style": "direct", **fusion}
    for tile in ((64, 16, 64), (64, 32, 64), (128, 16, 64)):
        assert violations(tile, swap_ab=True, epilogue=direct) == [], tile
        assert violations(tile, swap_ab=True, scheduler="persistent", epilogue=direct) == []
    # the decode case: e4m3, swap AB, a 64-row tile, f32 out
    epi = {"style": "direct", "out_dtype": "f32", **fusion}
    assert violations((64, 32, 128), swap_ab=True, epilogue=epi, **FP8) == []


def test_split_k_rejects_a_64_row_tile_fused_or_not() -> None:
    # split-K stages each thread's whole accumulator row; M=64 gives it half a row (and rank 0
    # would read no peer partial: the cross-compile showed no ld.shared::cluster at all)
    message = (
        "tile M=64 with scheduler split_k is not implemented for sm_100a yet (the DSMEM staging "
        "holds one whole accumulator row per epilogue thread; an M=64 tile gives each thread half "
        "a row); legal: tile M=128"
    )
    for epi in ("direct", {"style": "direct", **EVERYTHING}):
        assert violations((64, 64, 64), scheduler="split_k", epilogue=epi) == [("tile", message)]
    assert violations((128, 64, 64), scheduler="split_k") == []


def test_what_stays_rejected_is_not_about_the_fusion() -> None:
    # each remaining rejection of a fused combination is its knob's own rule, fused or not
    cases = [
        ({"scheduler": "split_k"}, "tma", "epilogue"),
        ({"tile": (64, 128, 128), **FP8}, "tma", "epilogue"),  # a 64-row f32 TMA sub-tile
    ]
    for knobs, style, field in cases:
        knobs = dict(knobs)
        tile = knobs.pop("tile", (128, 128, 64))
        out = {"out_dtype": "f32"} if knobs.get("dtype") else {}
        plain = violations(tile, epilogue={"style": style, **out}, **knobs)
        fused = violations(tile, epilogue={"style": style, **out, **EVERYTHING}, **knobs)
        assert [f for f, _ in plain] == [f for f, _ in fused] == [field], knobs
        assert plain == fused


def test_beta_by_tma_loads_the_64_row_sub_tile() -> None:
    m64 = make((64, 128, 64), epilogue={"style": "tma", "beta": 1.0})
    assert rules_sm100.epi_tile(m64) == (64, 64)
    assert rules_sm100.c_load_bytes(m64) == 64 * 64 * 2  # not the 128-row box
    m128 = make((128, 128, 64), epilogue={"style": "tma", "beta": 1.0})
    assert rules_sm100.c_load_bytes(m128) == 128 * 64 * 2
    assert "C_TX_BYTES = 8192" in _text(
        "sm100_f16_64x128x64_s8_sw128_ws_tma_a0p5_b2_biasrow_gelu_tanh_grid"
    )


# ---- counts --------------------------------------------------------------------------------------


def test_a_thread_fuses_half_a_row_with_m64() -> None:
    epi = {"style": "direct", "beta": 1.0, "bias": "col", "activation": "relu"}
    m64, m128 = make((64, 128, 64), epilogue=epi), make((128, 128, 64), epilogue=epi)
    assert rules_sm100.values_per_thread(m64) == 64 and rules_sm100.values_per_thread(m128) == 128
    # f16: 8 values per 16-byte vector, for C and the column bias alike
    assert counts_sm100.fusion_counts(m64) == {"ld.global": 8 + 8, "max.f32": 64, "ex2": 0}
    assert counts_sm100.fusion_counts(m128) == {"ld.global": 16 + 16, "max.f32": 128, "ex2": 0}


def test_swap_ab_reads_c_by_element_and_swaps_the_bias_axis() -> None:
    row = make(
        (128, 16, 64), swap_ab=True, epilogue={"style": "direct", "beta": 1.0, "bias": "row"}
    )
    col = make((128, 16, 64), swap_ab=True, epilogue={"style": "direct", "bias": "col"})
    # a bias per row of C runs along the kernel's columns (C^T): contiguous, 16-byte vectors
    assert plan_common.bias_axis(row) == "column"
    assert plan.plan(row).values.bias_view.stride == (0, 1)
    assert plan_common.bias_axis(col) == "row"
    assert plan.plan(col).values.bias_view.stride == (1, 0)
    # beta: 16 scalar loads down C^T's column (stride ldc), then 2 vectors of 8 row biases
    assert counts_sm100.fusion_counts(row)["ld.global"] == 16 + 2
    assert counts_sm100.fusion_counts(col)["ld.global"] == 1  # one column bias per kernel row


def test_split_k_fuses_once() -> None:
    spec = make(
        scheduler="split_k", epilogue={"style": "direct", "beta": 0.5, "activation": "silu"}
    )
    counts = plan.expected_counts(spec)
    # rank 0's store path only: one copy of the fusion, after both ranks' tcgen05.ld
    assert (counts["ld.global"], counts["ex2"], counts["tcgen05.ld"]) == (16, 128, 2 * 2)


# (ld.global, max.f32, ex2, TMA store, st.global, cp.async.bulk.tensor, mbarrier.try_wait,
#  ld.shared::cluster), derived by hand. A thread holds TN values (TN/2 with M=64); a 16-byte vector
# is 8 f16/bf16 or 4 f32; beta in the direct epilogue loads like it stores, the TMA-store epilogue
# TMA-loads C (one box per sub-tile, two for f32) and waits per sub-tile; a bias along the kernel's
# rows is one scalar, along its columns the thread's values in vectors; swap_ab swaps the axes.
# mbarrier.try_wait: empty, full, acc_full and the producer's tail over the ring (4), + 2
# persistent, + 4 (dynamic), + 3 (split-K), + c_full per sub-tile.
PINNED = {
    # 128 bf16 values: C 16 + column bias 16 vectors; relu per value
    "sm100_e4m3_128x128x128_s7_sw128_ws_direct_bf16_a2_b0p5_biascol_relu_grid": (
        32,
        128,
        0,
        0,
        16,
        2,
        4,
        0,
    ),
    # 4 f32 sub-tiles of 2 boxes, stored and (beta) loaded; persistent waits 6 + 4 c_full
    "sm100_e4m3_128x256x128_s3_sw128_ws_acc2_tma_f32_b1_biasrow_silu_persistent_rm": (
        1,
        0,
        256,
        8,
        0,
        2 + 8,
        6 + 4,
        0,
    ),
    # dynamic waits 4 + 2 + 1 + 3, + 4 c_full; 256 f16 column biases in 32 vectors
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_b0p5_biascol_gelu_tanh_dynamic": (
        32,
        0,
        256,
        4,
        0,
        2 + 4,
        10 + 4,
        0,
    ),
    # rank 0: C 16 + bias 16 vectors; it reads the peer's 128 f32 in 32 v4 runs
    "sm100_f16_128x128x64_s5_sw128_ws_direct_a1p5_b0p5_biascol_silu_splitk2": (
        32,
        0,
        128,
        0,
        16,
        2,
        9,
        32,
    ),
    # 64 f32 out: 16 vector stores; 3 peers x 64 f32 / 4
    "sm100_bf16_128x64x64_s8_sw128_ws_acc2_direct_f32_biasrow_relu_splitk4": (
        1,
        64,
        0,
        0,
        16,
        2,
        9,
        48,
    ),
    # M=64: 64 values per thread
    "sm100_bf16_64x128x64_s9_sw128_ws_direct_b1_biascol_relu_grid": (8 + 8, 64, 0, 0, 8, 2, 4, 0),
    "sm100_f16_64x128x64_s8_sw128_ws_tma_a0p5_b2_biasrow_gelu_tanh_grid": (
        1,
        0,
        64,
        2,
        0,
        2 + 2,
        4 + 2,
        0,
    ),
    "sm100_bf16_64x128x64_s8_sw128_ws_tma_biascol_silu_grid": (8, 0, 64, 2, 0, 2, 4, 0),
    # swap AB: C^T's 16 values of a kernel row one by one; the user's row bias in 2 vectors
    "sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_b0p5_biasrow_relu_grid": (
        16 + 2,
        16,
        0,
        0,
        16,
        2,
        4,
        0,
    ),
    # swap AB, M=64: 16 values; the user's column bias is one value per kernel row
    "sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_biascol_silu_persistent_rm": (
        1,
        0,
        16,
        0,
        16,
        2,
        6,
        0,
    ),
    # 16 values: 16 scalar C loads, the row bias in 4 f32 vectors, 16 scalar f32 stores
    "sm100_e4m3_64x32x128_s18_sw128_ws_swap_direct_f32_a2_b1_biasrow_grid": (
        16 + 4,
        0,
        0,
        0,
        16,
        2,
        4,
        0,
    ),
    # 32 values: 32 scalar C loads + 4 bias vectors; the peer's 32 f32 in 8 runs
    "sm100_f16_128x32x64_s10_sw128_ws_swap_direct_b0p5_biasrow_relu_splitk2": (
        32 + 4,
        32,
        0,
        0,
        32,
        2,
        9,
        8,
    ),
}
# the single fusions' counts, and the DSMEM loads of split-K's cluster reduce
PINNED_KEYS = (*FUSION_KEYS, "ld.shared::cluster")


def test_every_shipped_variant_is_pinned(combo_specs: dict[str, Spec]) -> None:
    assert set(combo_specs) == set(PINNED)
    for name, spec in combo_specs.items():
        assert rules.check(spec) == [], name
        assert spec.epilogue.fused, name


@pytest.mark.parametrize("name", sorted(PINNED))
def test_expected_counts_are_the_pinned_ones(name: str, combo_specs: dict[str, Spec]) -> None:
    counts = plan.expected_counts(combo_specs[name])
    assert tuple(counts.get(k, 0) for k in PINNED_KEYS) == PINNED[name]


# ---- generated files -----------------------------------------------------------------------------


def _text(name: str) -> str:
    return (kernel_file(name)).read_text(encoding="utf-8")


def _epilogue(name: str) -> str:
    """The epilogue warps' role helper."""
    return _text(name).split("\ndef epilogue(")[1].split("\n@cute.kernel")[0]


def _rank0(name: str) -> str:
    """Split-K's rank-0 branch of the epilogue."""
    return _epilogue(name).split("wait_cluster_acquire(staged, tile_count % 2)")[1]


@pytest.mark.parametrize(
    "name",
    [
        "sm100_f16_128x128x64_s5_sw128_ws_direct_a1p5_b0p5_biascol_silu_splitk2",
        "sm100_f16_128x32x64_s10_sw128_ws_swap_direct_b0p5_biasrow_relu_splitk2",
    ],
)
def test_split_k_fuses_in_rank_0_after_the_reduction(name: str) -> None:
    text = _text(name)
    peers = _epilogue(name).split("wait_cluster_acquire(staged, tile_count % 2)")[0]
    assert " d = r_acc.load()" not in peers and not re.search(
        r"autovec_copy\(\s*dst", peers
    )  # the peers stage
    rank0 = _rank0(name)
    reduced = rank0.index("r_vec.store(r_vec.load() + peer_vals.load())")
    # C and the column bias are read after the peer's partial is added, then fused and stored
    c_load = re.search(r"cute\.autovec_copy\(\s*dst\[None, None, i\], r_c\s*\)", rank0).start()
    bias_load = rank0.index("cute.autovec_copy(bias_src[None, None, i], r_bias)")
    fused = rank0.index("d = d + r_c.load().to(ACC_DTYPE) * BETA")
    store = rank0.index("r_out.store(d.to(OUT_DTYPE))")
    assert reduced < c_load < bias_load < fused < store < rank0.index("autovec_copy(r_out, dst")
    assert text.count("d = d + r_c.load()") == 1  # one copy of the fusion


def test_split_k_without_fusion_keeps_its_store_line() -> None:
    assert "r_out.store(r_acc.load().to(IO_DTYPE))" in _text(
        "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2"
    )
    assert "r_out.store(r_acc.load().to(IO_DTYPE))" not in _text(
        "sm100_bf16_128x64x64_s8_sw128_ws_acc2_direct_f32_biasrow_relu_splitk4"
    )


def test_swap_ab_views_the_bias_along_the_kernel_axis() -> None:
    row = _text("sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_b0p5_biasrow_relu_grid")
    # the user's row bias (length M) runs along the kernel's N (C^T's columns)
    assert "make_layout(c.shape, stride=(0, 1))" in row and "r_bias.fill" not in row
    assert row.index("    c = cute.make_tensor(\n") < row.index(
        "bias_mn = cute.make_tensor"
    )  # C^T first
    col = _text("sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_biascol_silu_persistent_rm")
    assert "make_layout(c.shape, stride=(1, 0))" in col and "r_bias.fill(bias_src[0])" in col


# ---- cross-compiled ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, BuildResult], Path]:
    out = tmp_path_factory.mktemp("build")
    return build_named(sorted(PINNED), out), out


def _ptx(built: tuple[dict[str, BuildResult], Path], name: str) -> str:
    return "\n".join(p.read_text() for p in sorted((built[1] / name).rglob("*.ptx")))


def _count(pattern: str, ptx: str) -> int:
    return len(re.findall(pattern, ptx))


@pytest.mark.build
@pytest.mark.parametrize("name", sorted(PINNED))
def test_combos_compile_with_their_counts(name: str, built) -> None:
    r = built[0][name]
    assert r.passed, (name, r.error or r.mismatches)
    assert r.spill_bytes == 0 and r.registers is not None and r.registers <= 255
    assert tuple(r.counts.get(k, 0) for k in PINNED_KEYS) == PINNED[name]


@pytest.mark.build
def test_e4m3_fuses_on_the_f8f6f4_accumulator(built) -> None:
    for name in (
        "sm100_e4m3_128x128x128_s7_sw128_ws_direct_bf16_a2_b0p5_biascol_relu_grid",
        "sm100_e4m3_128x256x128_s3_sw128_ws_acc2_tma_f32_b1_biasrow_silu_persistent_rm",
    ):
        ptx = _ptx(built, name)
        assert _count(r"tcgen05\.mma\.cta_group::1\.kind::f8f6f4", ptx) == 4, name
    bf16 = _ptx(built, "sm100_e4m3_128x128x128_s7_sw128_ws_direct_bf16_a2_b0p5_biascol_relu_grid")
    assert _count(r"ld\.global\.v4", bf16) == 32 and _count(r"cvt\.rn\.bf16x2\.f32", bf16) > 0


@pytest.mark.build
def test_m64_fuses_half_rows(built) -> None:
    ptx = _ptx(built, "sm100_bf16_64x128x64_s9_sw128_ws_direct_b1_biascol_relu_grid")
    assert _count(r"tcgen05\.ld\.sync\.aligned\.16x32bx2", ptx) == 2
    # 64 bf16 values of C and of the bias per thread: 8 + 8 vectors, as many C loads as stores
    assert _count(r"ld\.global\.v4", ptx) == 16 and _count(r"st\.global\.v4", ptx) == 8
    tma = _ptx(built, "sm100_f16_64x128x64_s8_sw128_ws_tma_a0p5_b2_biasrow_gelu_tanh_grid")
    assert _count(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global", tma) == 2 + 2
    assert _count(r"ld\.global\.b16", tma) == 1  # the row's bias


@pytest.mark.build
def test_swap_ab_loads_c_one_element_at_a_time(built) -> None:
    ptx = _ptx(built, "sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_b0p5_biasrow_relu_grid")
    # 16 scalar C loads down C^T's column, 2 vectors of row biases, 16 scalar stores
    assert _count(r"ld\.global\.b16", ptx) == 16 and _count(r"ld\.global\.v4", ptx) == 2
    assert _count(r"st\.global\.b16", ptx) == 16
    f32 = _ptx(built, "sm100_e4m3_64x32x128_s18_sw128_ws_swap_direct_f32_a2_b1_biasrow_grid")
    # 16 scalar f32 C loads; the 16 f32 row biases in 16-byte loads (2 x b64)
    assert _count(r"ld\.global\.b32", f32) == 16 and _count(r"ld\.global\.v2\.b64", f32) == 4


@pytest.mark.build
def test_split_k_reads_c_and_bias_after_the_peer_partials(built) -> None:
    for name in (
        "sm100_f16_128x128x64_s5_sw128_ws_direct_a1p5_b0p5_biascol_silu_splitk2",
        "sm100_f16_128x32x64_s10_sw128_ws_swap_direct_b0p5_biasrow_relu_splitk2",
    ):
        ptx = _ptx(built, name)
        # (the chunk loop is unrolled: chunk 0's C and bias loads follow its DSMEM reads)
        first_global = re.search(r"\bld\.global\.", ptx)
        first_dsmem = re.search(r"\bld\.shared::cluster\.", ptx)
        assert first_global and first_dsmem and first_dsmem.start() < first_global.start(), name
