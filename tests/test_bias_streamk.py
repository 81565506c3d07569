"""The bias fusion: D = activation(alpha * A @ B^T + beta * C + bias), bias per row or column."""

from __future__ import annotations

import pytest

from codegen import rules
from codegen.arch.sm90.counts import epilogue_loads
from codegen.plan_common import bias
from codegen.spec import Spec

SM90 = {"arch": "sm_90a", "dtype": "bf16", "swizzle": "128B", "stages": 4}


def spec(**knobs) -> Spec:
    return Spec(**(SM90 | knobs))


def test_no_bias_keeps_old_spec_hashes() -> None:
    plain = spec(tile=[128, 128, 64], consumer_warpgroups=1)
    assert "bias" not in plain.model_dump()["epilogue"]
    assert "bias" not in plain.canonical_json()
    with_bias = spec(
        tile=[128, 128, 64], consumer_warpgroups=1, epilogue={"style": "direct", "bias": "col"}
    )
    assert with_bias.model_dump()["epilogue"]["bias"] == "col"
    assert with_bias.spec_hash() != plain.spec_hash()
    assert with_bias.epilogue.fused and not plain.epilogue.fused
    assert with_bias.canonical_name().endswith("_direct_biascol_grid")


def test_bias_must_be_row_col_or_none() -> None:
    with pytest.raises(ValueError, match="bias"):
        spec(tile=[128, 128, 64], epilogue={"style": "direct", "bias": "both"})


@pytest.mark.parametrize(
    ("user", "swap", "axis", "extent", "user_extent"),
    [
        ("row", False, "row", "M", "M"),
        ("col", False, "column", "N", "N"),
        # swap AB: the kernel computes C^T, so a bias per column of C is per row of C^T
        ("col", True, "row", "M", "N"),
        ("row", True, "column", "N", "M"),
    ],
)
def test_bias_axis_in_the_kernel(user, swap, axis, extent, user_extent) -> None:
    s = spec(
        tile=[64, 32, 64],
        consumer_warpgroups=1,
        swap_ab=swap,
        epilogue={"style": "direct", "bias": user},
    )
    v = bias(s)
    assert v is not None
    assert (v.axis, v.extent, v.user_extent) == (axis, extent, user_extent)
    assert v.coord == (0 if axis == "row" else 1)


@pytest.mark.parametrize(
    ("knobs", "loads"),
    [
        # a thread touches rows r and r + 8 of each of its 64-row wgmma atoms (2 atoms here)
        (
            {
                "tile": [128, 128, 64],
                "consumer_warpgroups": 1,
                "epilogue": {"style": "direct", "bias": "row"},
            },
            4,
        ),
        # and 2 adjacent columns of each 8-column group: TN / 4
        (
            {
                "tile": [128, 256, 64],
                "consumer_warpgroups": 2,
                "epilogue": {"style": "tma", "bias": "col"},
            },
            64,
        ),
        # beta: one load per 2-element store vector of the 64 accumulators, plus the bias
        (
            {
                "tile": [128, 128, 64],
                "consumer_warpgroups": 1,
                "epilogue": {"style": "direct", "bias": "row", "beta": 0.5},
            },
            64 + 4,
        ),
        ({"tile": [128, 128, 64], "consumer_warpgroups": 1}, 0),
    ],
)
def test_epilogue_loads(knobs, loads) -> None:
    assert epilogue_loads(spec(**knobs)) == loads


def test_sm90_accepts_bias_with_either_epilogue() -> None:
    for style in ("direct", "tma"):
        s = spec(
            tile=[128, 256, 64], consumer_warpgroups=2, epilogue={"style": style, "bias": "row"}
        )
        assert rules.check(s) == []


# ---- stream-K (its plan numbers; the kernels are cross-compiled with counts by test_build) ----


def test_stream_k_workspace_and_counts() -> None:
    from codegen.arch.sm90 import rules as rules_sm90
    from codegen.arch.sm90.counts import expected_counts as expected_counts_sm90

    s = spec(tile=[128, 128, 64], consumer_warpgroups=1, scheduler="stream_k", epilogue="tma")
    assert rules.check(s) == []
    assert rules_sm90.streamk_ctas(s) == 132
    # a 128 x 128 f32 slot per CTA, then one flag word per CTA
    assert rules_sm90.streamk_workspace_elems(s) == 132 * (128 * 128 + 1)
    counts = expected_counts_sm90(s)
    # 128 accumulators per thread: 32 16-byte vectors handed over (stores) and taken (loads)
    assert counts["ld.global"] == 32 and counts["st.global"] == 32 + 1
    assert counts["flag release.gpu"] == counts["flag acquire.gpu"] == 1
    assert s.canonical_name().endswith("_tma_streamk")


def test_stream_k_rejects_clusters_and_pingpong() -> None:
    s = spec(tile=[128, 128, 64], consumer_warpgroups=2, consumer_mode="pingpong", cluster=[2, 1])
    s = s.model_copy(update={"scheduler": Spec(tile=[64, 64, 64], scheduler="stream_k").scheduler})
    fields = {v.field for v in rules.check(s)}
    assert {"cluster", "consumer_mode"} <= fields


def test_sm100_stream_k_is_single_cta() -> None:
    # legal with 1-CTA MMAs (tests/test_sm100_streamk.py); a CTA pair is rejected
    s = Spec(arch="sm_100a", tile=[128, 128, 64], stages=2, swizzle="128B", scheduler="stream_k")
    assert rules.check(s) == []
    pair = s.model_copy(update={"tile": s.tile.model_copy(update={"m": 256}), "cta_group": 2})
    pair = pair.model_copy(update={"cluster": pair.cluster.model_copy(update={"m": 2})})
    assert any("stream_k" in v.message for v in rules.check(pair))


# ---- beta through the sm_90a TMA-store epilogue -------------------------------------------------


def test_tma_store_beta_loads_c_per_sub_tile() -> None:
    from codegen.arch.sm90 import rules as rules_sm90
    from codegen.arch.sm90.counts import expected_counts as expected_counts_sm90

    coop = spec(tile=[128, 256, 64], consumer_warpgroups=2, epilogue={"style": "tma", "beta": 1.0})
    pp = spec(
        tile=[128, 128, 64],
        consumer_warpgroups=2,
        consumer_mode="pingpong",
        scheduler="persistent",
        epilogue={"style": "tma", "beta": 0.5},
    )
    plain = spec(tile=[128, 256, 64], consumer_warpgroups=2, epilogue="tma")
    assert rules.check(coop) == [] and rules.check(pp) == []
    # one c_full barrier, or one per ping-pong warpgroup (each has its own sub-tile buffers)
    assert (rules_sm90.c_full_barriers(coop), rules_sm90.c_full_barriers(pp)) == (1, 2)
    assert rules_sm90.c_full_barriers(plain) == 0
    assert rules_sm90.barrier_bytes(coop, 4) == rules_sm90.barrier_bytes(plain, 4) + 8
    # 128 x 256 in 128 x 32 sub-tiles (a 64-row atom per warpgroup): 8 C loads, 8 stores, and
    # no global loads of C
    counts = expected_counts_sm90(coop)
    assert counts["cp.async.bulk.tensor"] == 2 + 8 and counts["TMA store"] == 8
    assert counts["ld.global"] == 0
    assert expected_counts_sm90(plain)["cp.async.bulk.tensor"] == 2


def test_tma_store_still_rejects_f32() -> None:
    s = spec(
        tile=[128, 128, 64], consumer_warpgroups=1, epilogue={"style": "tma", "out_dtype": "f32"}
    )
    assert [v.field for v in rules.check(s)] == ["epilogue"]
