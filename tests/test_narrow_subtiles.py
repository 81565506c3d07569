"""Tile N in steps of 16 with the TMA-store epilogue (specs/sm90/waves.toml and
specs/sm100/waves.toml): where tile N is not a multiple of the usual sub-tile width (32 columns on
sm_90a, 64 on sm_100a), the epilogue stores 16-column sub-tiles; on sm_100a an odd number of them
per tile ends the tile on the SMEM buffer the next tile starts on, so the epilogue waits for its
last store there."""

from __future__ import annotations

import pytest
from conftest import kernel_file

from codegen import rules
from codegen.arch.sm90 import counts as counts_sm90
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm100 import counts as counts_sm100
from codegen.arch.sm100 import rules as rules_sm100
from codegen.spec import Spec

SM90_80 = "sm90_bf16_128x80x64_s8_sw128_ws_wg2_tma_persistent_rm"
SM100_80 = "sm100_bf16_128x80x64_s8_sw128_ws_tma_persistent_rm"
SM100_128 = "sm100_bf16_128x128x64_s6_sw128_ws_swap_tma_persistent_rm"


def sm90(n: int, **knobs: object) -> Spec:
    base = {"arch": "sm_90a", "dtype": "bf16", "swizzle": "128B", "tile": [128, n, 64],
            "consumer_warpgroups": 2, "epilogue": "tma", "scheduler": {"kind": "persistent"}}  # fmt: skip
    return rules.resolve(Spec.model_validate(base | knobs))


def sm100(n: int, **knobs: object) -> Spec:
    base = {"arch": "sm_100a", "dtype": "bf16", "swizzle": "128B", "tile": [128, n, 64],
            "epilogue": "tma", "scheduler": {"kind": "persistent"}}  # fmt: skip
    return rules.resolve(Spec.model_validate(base | knobs))


@pytest.mark.parametrize(("n", "cols"), [(64, 32), (96, 32), (80, 16), (112, 16), (144, 16)])
def test_sm90_sub_tile_width(n: int, cols: int) -> None:
    s = sm90(n)
    assert not rules.check(s)
    assert rules_sm90.epi_n(s) == cols
    # one TMA box per 64-row sub-tile: 16 or 32 bf16 columns are one swizzle atom wide
    assert counts_sm90.expected_counts(s)["TMA store"] == n // cols


@pytest.mark.parametrize(("n", "cols"), [(128, 64), (192, 64), (80, 16), (112, 16)])
def test_sm100_sub_tile_width(n: int, cols: int) -> None:
    s = sm100(n)
    assert not rules.check(s)
    assert rules_sm100.epi_tile(s) == (128, cols)
    assert rules_sm100.odd_subtiles(s) == (n // cols % 2 == 1)
    assert counts_sm100.expected_counts(s)["TMA store"] == n // cols


def test_tile_n_off_the_16_column_grid_is_refused() -> None:
    # (an M=64 tcgen05 MMA takes N in steps of 8, so only the epilogue refuses 120 there)
    for s in (sm90(120), sm100(120, tile=[64, 120, 64])):
        (v,) = rules.check(s)
        assert v.field == "epilogue" and "N=120 is not a multiple of 16" in v.message


def test_sm100_beta_needs_an_even_number_of_sub_tiles() -> None:
    # beta's C-load barrier (c_full) flips once per sub-tile: its parity repeats per tile only
    # for an even count
    (v,) = rules.check(sm100(80, epilogue={"style": "tma", "beta": 1.0}))
    assert v.field == "scheduler" and "or beta = 0" in v.message
    assert not rules.check(sm100(160, epilogue={"style": "tma", "beta": 1.0}))


def test_the_odd_tile_waits_for_its_last_store() -> None:
    odd = kernel_file(SM100_80).read_text(encoding="utf-8")
    even = kernel_file(SM100_128).read_text(encoding="utf-8")
    wait = "cute.arch.cp_async_bulk_wait_group(0, read=True)"
    # once after the sub-tile loop of each tile, once before the CTA exits
    assert odd.count(wait) == 2 and even.count(wait) == 1
    assert "EPI_TILE = (128, 16)" in odd and "EPI_SUBTILES = 5" in odd


def test_sm90_kernel_file_stores_16_column_sub_tiles() -> None:
    text = kernel_file(SM90_80).read_text(encoding="utf-8")
    assert "EPI_M, EPI_N = 128, 16" in text
