"""sm_90a swap AB with the TMA-store epilogue: C^T leaves through M-major SMEM sub-tiles (stmatrix
with transpose) and TMA stores, two 128-byte boxes per 64-row column of a 128-row sub-tile."""

from __future__ import annotations

import pytest
from conftest import kernel_file

from codegen import rules
from codegen.arch.sm90.counts import expected_counts, tma_store_boxes
from codegen.spec import Spec

SHIPPED = "sm90_bf16_128x160x64_s5_sw128_ws_wg2_swap_tma_persistent_rm"


def spec(**knobs: object) -> Spec:
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "swizzle": "128B",
        "tile": [128, 160, 64],
        "consumer_warpgroups": 2,
        "swap_ab": True,
        "epilogue": "tma",
        "scheduler": {"kind": "persistent"},
    }
    return rules.resolve(Spec.model_validate(base | knobs))


def test_swap_ab_with_the_tma_store_is_legal() -> None:
    assert not rules.check(spec())
    assert not rules.check(spec(epilogue={"style": "tma", "beta": 1.0, "bias": "row"}))


def test_the_tile_n_must_still_hold_whole_sub_tiles() -> None:
    (v,) = rules.check(spec(tile=[128, 200, 64]))
    assert v.field == "epilogue" and "multiple of 16" in v.message


@pytest.mark.parametrize(
    ("knobs", "boxes"),
    [
        ({}, 2),  # 128 rows x 2 bytes: two 128-byte boxes
        ({"tile": [64, 64, 64], "consumer_warpgroups": 1}, 1),  # 64 rows: one box
        ({"swap_ab": False}, 1),  # row-major sub-tiles: 32 columns x 2 bytes
    ],
)
def test_tma_stores_per_sub_tile(knobs: dict, boxes: int) -> None:
    s = spec(**knobs)
    assert tma_store_boxes(s) == boxes
    subtiles = (s.tile.m // (64 * (2 if s.tile.m == 128 else 1))) * (s.tile.n // 32)
    assert expected_counts(s)["TMA store"] == subtiles * boxes


def test_beta_loads_c_in_the_same_boxes() -> None:
    s = spec(epilogue={"style": "tma", "beta": 1.0})
    # A and B, then one C load per box of each of the 5 sub-tiles
    assert expected_counts(s)["cp.async.bulk.tensor"] == 2 + 5 * 2


def test_the_shipped_file_stores_c_transposed() -> None:
    src = kernel_file(SHIPPED).read_text(encoding="utf-8")
    assert "StMatrix8x8x16bOp(True, 4)" in src
    assert "OUT_DTYPE, LayoutEnum.COL_MAJOR, (EPI_M, EPI_N)" in src
    assert "StMatrix8x8x16bOp(False, 4)" not in src
