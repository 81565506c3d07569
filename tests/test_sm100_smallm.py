"""sm_100a decode-oriented knobs: 64-row MMAs (cta_group 1), narrow N tiles, swap AB, e4m3.

Three parts: the rules each knob brings (one violation per broken condition); the numbers the
planner derives for them; and a cross-compile of ``specs/sm100/smallm.toml`` whose PTX must show
the MMA kind and shape (the instruction descriptor), the TMEM load shape, the allocation and the
stores each variant calls for. Compile-only: no Blackwell GPU has run these kernels.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SPECS, build_named, kernel_file

from codegen import loader, plan, rules
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.spec import Spec


def make(tile: tuple[int, int, int] = (64, 64, 64), **knobs: object) -> Spec:
    knobs.setdefault("swizzle", "128B")
    knobs.setdefault("stages", 2)
    return rules.resolve(Spec.model_validate({"tile": list(tile), **knobs}))


def violations(tile: tuple[int, int, int] = (64, 64, 64), **knobs: object) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(make(tile, **knobs))]


FP8 = {"dtype": "e4m3", "epilogue": {"style": "direct", "out_dtype": "bf16"}}


# ---- rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [16, 24, 32, 64, 128, 192, 256])
def test_m64_takes_n_multiples_of_8_from_16(n: int) -> None:
    got = violations((64, n, 64))
    if n == 24:  # a legal MMA, but not a power-of-two chunk for the direct epilogue's loads
        assert [f for f, _ in got] == ["tile"] and "does not split into such chunks" in got[0][1]
    else:
        assert got == []


def test_m64_rejects_illegal_n() -> None:
    ((field, message),) = violations((64, 12, 64))
    assert field == "tile"
    assert message.startswith("tile 64x12 is not a tcgen05 kind::f16 shape for one CTA; legal: ")
    assert "M=64 with N a multiple of 8 in [8, 256]" in message
    ((field, message),) = violations((64, 264, 64))
    assert field == "tile" and "not a tcgen05 kind::f16 shape" in message


def test_m64_rejects_n_8_for_the_epilogue() -> None:
    # a legal MMA, but each epilogue thread would hold 4 columns: less than one 16-byte store
    assert rules_sm100.tcgen05_f16_shape_ok(64, 8)
    ((field, message),) = violations((64, 8, 64))
    assert field == "tile"
    assert message == (
        "tile 64x8: an M=64 accumulator splits each row between two epilogue threads "
        "(tcgen05.ld 16x32bx2), 4 columns each, less than one 16-byte store; legal: N a multiple "
        "of 8 in [16, 256]"
    )


def test_m64_is_one_cta_only() -> None:
    ((field, message),) = violations((64, 64, 64), cta_group=2, cluster=[2, 1])
    assert field == "tile" and "not a tcgen05 kind::f16 shape for a CTA pair" in message


@pytest.mark.parametrize("n", [16, 32])
def test_m128_takes_narrow_n(n: int) -> None:
    assert violations((128, n, 64)) == []
    assert rules_sm100.spec_tmem_columns(make((128, n, 64))) == 32  # the smallest allocation


def test_m128_needs_n_multiples_of_16() -> None:
    ((field, message),) = violations((128, 24, 64))
    assert field == "tile" and message.startswith("tile 128x24 is not a tcgen05 kind::f16 shape")
    # a legal MMA the direct epilogue cannot chunk (no power-of-two chunk of 16-64 columns)
    ((field, message),) = violations((64, 24, 64))
    assert field == "tile" and "does not split into such chunks" in message


def test_swap_ab_is_legal_with_the_direct_epilogue() -> None:
    assert violations((64, 16, 64), swap_ab=True) == []
    assert violations((128, 16, 64), swap_ab=True, scheduler="persistent") == []


def test_swap_ab_takes_the_tma_store_through_m_major_sub_tiles() -> None:
    assert violations((64, 64, 64), swap_ab=True, epilogue="tma") == []
    s = make((128, 128, 64), swap_ab=True, epilogue="tma", scheduler="persistent")
    # C^T is column-major: a 128-row bf16 sub-tile column is 256 bytes, two 128B-swizzled boxes
    assert rules_sm100.epi_major_bytes(s) == 256 and rules_sm100.epi_tma_boxes(s) == 2
    v = plan.plan(s)
    assert v.epi_tma.swizzle_atom == "MN_SW128" and v.epi_tma.tile_order == (1, 0, 2)
    # a 64-row tile: one 128-byte column, one box; f32 out: four
    assert rules_sm100.epi_tma_boxes(make((64, 64, 64), swap_ab=True, epilogue="tma")) == 1
    f32 = {"style": "tma", "out_dtype": "f32"}
    wide = make((128, 128, 64), swap_ab=True, epilogue=f32, scheduler="persistent")
    assert rules_sm100.epi_tma_boxes(wide) == 4
    assert plan.expected_counts(wide)["TMA store"] == 2 * 4  # 2 sub-tiles of 64 columns


def test_the_swap_ab_tma_store_writes_one_element_per_smem_store() -> None:
    name = "sm100_bf16_128x128x64_s6_sw128_ws_swap_tma_persistent_rm"
    src = kernel_file(name).read_text(encoding="utf-8")
    assert "num_bits_per_copy=OUT_DTYPE.width" in src
    assert "SmemLayoutAtomKind.MN_SW128" in src


def test_fp8_is_legal_at_tile_k_128_with_sw128() -> None:
    for out in ("bf16", "f16", "f32"):
        epi = {"style": "direct", "out_dtype": out}
        assert violations((128, 128, 128), dtype="e4m3", epilogue=epi) == []
    tma = {"style": "tma", "out_dtype": "bf16"}
    assert violations((128, 256, 128), dtype="e4m3", epilogue=tma) == []


def test_f32_tma_store_needs_a_128_row_sub_tile() -> None:
    # 64 f32 columns are a 256-byte row: a 128-row sub-tile is stored as two 128x32 boxes (one per
    # swizzle atom); the 64-row sub-tile of an M=64 tile is not laid out that way yet
    tma = {"style": "tma", "out_dtype": "f32"}
    assert violations((128, 128, 128), dtype="e4m3", epilogue=tma) == []
    ((field, message),) = violations((64, 128, 128), dtype="e4m3", epilogue=tma)
    assert field == "epilogue"
    assert message == (
        "out_dtype=f32 with the TMA-store epilogue is not implemented for sm_100a yet (a "
        "64-column sub-tile row is 256 bytes, wider than one 128-byte swizzle atom); legal: "
        "epilogue 'direct', a 16-bit out_dtype (bf16, f16), or a 128-row tile"
    )
    assert violations((64, 128, 128), dtype="e4m3", epilogue=tma | {"out_dtype": "f16"}) == []


def test_fp8_needs_an_out_dtype() -> None:
    assert violations((128, 128, 128), dtype="e4m3", epilogue="direct") == [
        (
            "epilogue",
            (
                "dtype=e4m3 needs epilogue.out_dtype (the kernel does not write float8): legal: "
                "bf16, f16, f32"
            ),
        )
    ]


@pytest.mark.parametrize(("k", "swizzle"), [(64, "64B"), (256, "128B"), (128, "64B")])
def test_fp8_needs_128_byte_k_rows_with_sw128(k: int, swizzle: str) -> None:
    got = violations((128, 128, k), swizzle=swizzle, **FP8)
    assert [f for f, _ in got] == ["tile"]
    assert got[0][1] == (
        f"dtype=e4m3 takes 128-byte K rows with the 128B swizzle on sm_100a; got tile K={k} "
        f"({k} B rows) with swizzle={swizzle}; legal: tile K=128, swizzle 128B"
    )


def test_fp8_names_its_mma_kind_in_shape_errors() -> None:
    ((field, message),) = violations((128, 24, 128), **FP8)
    assert field == "tile"
    assert message.startswith("tile 128x24 is not a tcgen05 kind::f8f6f4 shape for one CTA")


def test_16_bit_inputs_may_store_another_dtype() -> None:
    # the fused epilogues brought out_dtype to 16-bit inputs: f32, or the other 16-bit type
    for out in ("f32", "bf16"):
        assert violations((128, 64, 64), epilogue={"style": "direct", "out_dtype": out}) == []
    # an M=64 tile's direct epilogue converts whatever it stores
    assert violations((64, 64, 64), epilogue={"style": "direct", "out_dtype": "f32"}) == []
    values = plan.plan(make((64, 64, 64), epilogue={"style": "direct", "out_dtype": "f32"})).values
    assert values.epilogue.store_dtype == "OUT_DTYPE"


# ---- planned numbers -----------------------------------------------------------------------------


def test_shape_multiples() -> None:
    # direct stores are unpredicated: whole tiles; swap AB puts tile M along N
    assert rules_sm100.shape_multiples(make((64, 16, 64))) == {"M": 64, "N": 16, "K": 8}
    assert rules_sm100.shape_multiples(make((64, 16, 64), swap_ab=True)) == {
        "M": 16,
        "N": 64,
        "K": 8,
    }
    # e4m3: 16 one-byte elements make TMA's 16-byte row stride
    assert rules_sm100.shape_multiples(make((128, 256, 128), **FP8))["K"] == 16
    tma = {"style": "tma", "out_dtype": "bf16"}
    assert rules_sm100.shape_multiples(make((128, 256, 128), dtype="e4m3", epilogue=tma)) == {
        "M": 1,
        "N": 8,
        "K": 16,
    }


def test_m64_epilogue_reads_16_lanes_per_warp() -> None:
    assert rules_sm100.acc_rows_per_warp(make((64, 64, 64))) == 16
    assert rules_sm100.acc_rows_per_warp(make((128, 64, 64))) == 32
    assert rules_sm100.acc_rows_per_warp(make((256, 64, 64), cta_group=2, cluster=[2, 1])) == 32
    assert rules_sm100.tmem_load_shape(make((64, 64, 64))) == "16x32bx2"
    assert rules_sm100.epi_tile(make((64, 128, 64), epilogue="tma")) == (64, 64)
    assert rules_sm100.epi_tile(make((128, 128, 64), epilogue="tma")) == (128, 64)
    # two 64x64 bf16 sub-tile buffers
    assert rules_sm100.epilogue_smem_bytes(make((64, 128, 64), epilogue="tma")) == 2 * 64 * 64 * 2
    v = plan.plan(make((64, 64, 64))).values
    assert v.epilogue.tmem_load_shape == "16x32bx2" and v.epilogue.ld_repetition == "x32"


def test_plan_numbers_of_fp8_and_swap() -> None:
    fp8 = make((128, 256, 128), **FP8)
    p, counts = plan.plan(fp8), plan.expected_counts(fp8)
    assert p.values.mma.inst == (128, 256, 32) and p.values.tile.mma_k == 32
    assert p.partials["mma_partial"] == "sm100/mma/f8f6f4.py.j2"
    assert p.values.epilogue.store_dtype == "OUT_DTYPE"
    assert counts["tcgen05.mma"] == 4  # 128 bytes of K / 32 per MMA
    assert counts["st.global"] == 256 * 2 // 16  # a bf16 row in 16-byte vectors
    s = plan.plan(make((64, 32, 64), swap_ab=True))
    assert s.partials["operands_partial"] == "sm100/operands/swap.py.j2"
    assert s.partials["mma_partial"] == "sm100/mma/f16.py.j2"
    assert s.values.epilogue.store_dtype == "IO_DTYPE"
    # swap: a thread's 16 values (half of 32 columns) are a column of C, one store each
    assert rules_sm100.direct_stores(make((64, 32, 64), swap_ab=True)) == 16


# ---- the shipped variants ------------------------------------------------------------------------

SMALLM = SPECS / "sm100" / "smallm.toml"

# name: (MMA kind, M, N, tcgen05.ld shape, TMEM columns, st.global kind and count, TMA stores)
EXPECTED = {
    "sm100_bf16_64x16x64_s22_sw128_ws_swap_direct_grid": (
        "f16",
        64,
        16,
        "16x32bx2",
        32,
        ("st.global.b16", 8),
        0,
    ),
    "sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_persistent_rm": (
        "f16",
        64,
        32,
        "16x32bx2",
        32,
        ("st.global.b16", 16),
        0,
    ),
    "sm100_bf16_64x64x64_s14_sw128_ws_swap_direct_grid": (
        "f16",
        64,
        64,
        "16x32bx2",
        64,
        ("st.global.b16", 32),
        0,
    ),
    "sm100_bf16_128x16x64_s12_sw128_ws_swap_direct_grid": (
        "f16",
        128,
        16,
        "32x32b",
        32,
        ("st.global.b16", 16),
        0,
    ),
    "sm100_bf16_128x32x64_s11_sw128_ws_direct_grid": (
        "f16",
        128,
        32,
        "32x32b",
        32,
        ("st.global.v4.b32", 4),
        0,
    ),
    "sm100_bf16_64x64x64_s14_sw128_ws_direct_grid": (
        "f16",
        64,
        64,
        "16x32bx2",
        64,
        ("st.global.v4.b32", 4),
        0,
    ),
    "sm100_bf16_64x128x64_s8_sw128_ws_tma_grid": ("f16", 64, 128, "16x32bx2", 128, None, 2),
    "sm100_e4m3_128x256x128_s4_sw128_ws_acc2_tma_bf16_persistent_rm": (
        "f8f6f4",
        128,
        256,
        "32x32b",
        512,
        None,
        4,
    ),
    "sm100_e4m3_64x32x128_s18_sw128_ws_swap_direct_f32_grid": (
        "f8f6f4",
        64,
        32,
        "16x32bx2",
        32,
        ("st.global.b32", 16),
        0,
    ),
}
# the instruction descriptor's A/B format field: kind::f16 bf16 = 1; kind::f8f6f4 e4m3 = 0
AB_FORMAT = {"bf16": 1, "f16": 0, "e4m3": 0}


def instruction_descriptor(m: int, n: int, ab_format: int) -> int:
    """tcgen05.mma's 32-bit instruction descriptor with f32 accumulate, K-major A and B and no
    negation: D format (bits 4-5) = 1, A and B formats (bits 7-9, 10-12), N >> 3 (bits 17-22),
    M >> 4 (bits 24-28)."""
    return 1 << 4 | ab_format << 7 | ab_format << 10 | (n >> 3) << 17 | (m >> 4) << 24


def test_instruction_descriptor_matches_a_known_kernel() -> None:
    # decoded by hand from the PTX of sm100_f16_128x256x64_s4_sw128_ws_direct_grid (f16,
    # 128x256): 0x8400010
    assert instruction_descriptor(128, 256, AB_FORMAT["f16"]) == 0x8400010


@pytest.fixture(scope="module")
def shipped() -> dict[str, Spec]:
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loader.load([SMALLM])}


def test_the_shipped_variants_are_legal_and_listed(shipped: dict[str, Spec]) -> None:
    assert set(shipped) == set(EXPECTED)
    for name, spec in shipped.items():
        assert rules.check(spec) == [], name
        kind, m, n, *_ = EXPECTED[name]
        assert (rules_sm100.mma_kind(spec), spec.tile.m, spec.tile.n) == (kind, m, n)


def test_generated_files_hold_only_what_their_variant_needs(shipped: dict[str, Spec]) -> None:
    for name, spec in shipped.items():
        text = (kernel_file(name)).read_text(encoding="utf-8")
        fp8 = spec.dtype == "e4m3"
        assert ("MmaF8F6F4Op" in text, "MmaF16BF16Op" in text) == (fp8, not fp8), name
        assert ("a, b = b, a" in text) == spec.swap_ab, name
        assert ("swap AB" in text) == spec.swap_ab, name
        assert ("Ld16x32bx2Op" in text, "Ld32x32bOp" in text) == (
            spec.tile.m == 64,
            spec.tile.m != 64,
        ), name


# ---- cross-compiled ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, BuildResult], Path]:
    out = tmp_path_factory.mktemp("build")
    return build_named(list(EXPECTED), out), out


def ptx(out: Path, name: str) -> str:
    return "\n".join(p.read_text() for p in sorted((out / name).rglob("*.ptx")))


@pytest.mark.build
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_smallm_variant_compiles_with_its_instructions(
    name: str, built: tuple[dict[str, BuildResult], Path], shipped: dict[str, Spec]
) -> None:
    results, out = built
    r = results[name]
    assert r.passed, (r.error, r.mismatches)
    assert r.spill_bytes == 0
    kind, m, n, ld_shape, cols, stores, tma_stores = EXPECTED[name]
    text = ptx(out, name)
    # four MMAs per 128-byte K row (16-deep f16 x 4 of 64, or 32-deep f8f6f4 x 4 of 128), all of
    # the variant's kind, none of the other
    mmas = re.findall(r"tcgen05\.mma\.cta_group::1\.kind::(\w+)", text)
    assert mmas == [kind] * 4
    # the shape rides in the instruction descriptor, an immediate of the PTX
    desc = instruction_descriptor(m, n, AB_FORMAT[shipped[name].dtype])
    assert re.search(rf"\b{desc}\b", text), f"no instruction descriptor {desc:#x} for {m}x{n}"
    loads = re.findall(r"tcgen05\.ld\.sync\.aligned\.(\w+)\.", text)
    assert loads and set(loads) == {ld_shape}
    assert r.alloc_cols == [cols]
    assert r.counts["cp.async.bulk.tensor"] == 2  # one SW128 box per operand per stage
    assert r.counts["TMA store"] == tma_stores
    if stores is None:
        assert r.counts["st.global"] == 0
    else:
        op, count = stores
        assert re.findall(r"\bst\.global[\w.]*", text) == [op] * count
