"""Two CTAs per SM (sm_90a ctas_per_sm = 2): the halved register and SMEM budgets, the launch's
min_blocks_per_mp, the rules that reject what does not fit, and the generated text."""

from __future__ import annotations

import pytest

from codegen import render, rules, rules_common
from codegen.arch.sm90 import rules as rules_sm90
from codegen.loader import LoadedSpec
from codegen.plan import expected_counts, plan
from codegen.rules_common import CTA_RESERVED_SMEM, SM_SMEM_BYTES
from codegen.spec import Spec

DECODE: dict[str, object] = {
    "arch": "sm_90a",
    "dtype": "e4m3",
    "consumer_warpgroups": 1,
    "swap_ab": True,
    "epilogue": {"style": "direct", "out_dtype": "bf16"},
    "pdl": True,
}


def spec(tile: tuple[int, int, int] = (64, 16, 128), **knobs: object) -> Spec:
    return rules.resolve(Spec.model_validate(DECODE | {"tile": list(tile)} | knobs))


def fields(s: Spec) -> list[str]:
    return [v.field for v in rules.check(s)]


HALF_SMEM = SM_SMEM_BYTES // 2 - CTA_RESERVED_SMEM  # 113 KiB


@pytest.mark.parametrize(
    "scheduler", [{"kind": "split_k", "splits": 2}, "stream_k", "persistent", "grid"]
)
def test_decode_tile_with_two_ctas_per_sm(scheduler: object) -> None:
    s = spec(ctas_per_sm=2, scheduler=scheduler)
    assert rules.check(s) == []
    values = plan(s).values
    assert values.launch.min_blocks_per_mp == 2
    # the CTA's registers: half the file at most, and the consumers' setmaxnreg within it
    assert rules_sm90.launch_regs(s) == 128  # 256 threads x 128 = 32768
    assert rules_sm90.register_pool(s) <= rules_sm90.REGISTER_FILE // 2
    pool = rules_sm90.register_pool(s)
    launch = values.launch
    assert 128 * launch.producer_regs + 128 * launch.consumer_regs <= pool
    assert launch.consumer_regs == 216 and launch.consumer_regs % 8 == 0
    # SMEM: "auto" stages fill half the SM's (less the per-CTA reservation), no more
    assert rules_common.smem_limit(s) == HALF_SMEM == 113 * 1024
    assert values.launch.smem_bytes <= HALF_SMEM < rules.smem_bytes(s, s.stages + 1)


def test_one_cta_per_sm_is_unchanged() -> None:
    s = spec(scheduler="stream_k")
    values = plan(s).values
    assert values.launch.min_blocks_per_mp == 1 and values.launch.consumer_regs == 248
    assert rules_common.smem_limit(s) == rules_common.SMEM_LIMIT_BYTES == 227 * 1024
    assert s.stages > spec(scheduler="stream_k", ctas_per_sm=2).stages


def test_two_warpgroup_tile_does_not_fit_two_ctas_per_sm() -> None:
    knobs = {"swap_ab": False, "consumer_warpgroups": 2, "scheduler": "persistent"}
    assert rules.check(spec((128, 256, 128), **knobs)) == []
    s = spec((128, 256, 128), ctas_per_sm=2, **knobs)
    (v,) = [v for v in rules.check(s) if v.field == "ctas_per_sm"]
    assert "ctas_per_sm=2" in v.message and "128 per thread" in v.message
    assert "legal: ctas_per_sm = 1" in v.message


def test_wide_wgmma_does_not_fit_the_launch_registers() -> None:
    # one m64n256 wgmma writes 128 accumulators per thread: all 128 registers a thread launches
    # with (ptxas asks for 154); m64n192 (96) assembles
    assert rules.check(spec((64, 192, 128), ctas_per_sm=2, scheduler="stream_k")) == []
    (v,) = rules.check(spec((64, 256, 128), ctas_per_sm=2, scheduler="stream_k"))
    assert v.field == "ctas_per_sm" and "m64n256 wgmma" in v.message
    assert "legal: ctas_per_sm = 1, or tile N <= 192" in v.message
    assert rules.check(spec((64, 256, 128), scheduler="stream_k")) == []


def test_smem_budget_is_half_the_sm() -> None:
    s = spec((64, 128, 128), ctas_per_sm=2, scheduler="stream_k", stages=5)
    (v,) = rules.check(s)
    assert v.field == "stages"
    assert "at most 4 stages fit in 113 KiB (ctas_per_sm=2: 1/2 of the SM's 228 KiB" in v.message


def test_grids_stay_one_cta_per_sm() -> None:
    for scheduler in ({"kind": "split_k", "splits": 2}, "stream_k", "persistent"):
        one, two = spec(scheduler=scheduler), spec(scheduler=scheduler, ctas_per_sm=2)
        v1, v2 = plan(one).values, plan(two).values
        assert v1.sk == v2.sk and (v1.sk is not None) == (scheduler == "stream_k")
        assert v1.workers == v2.workers is not None and v1.tensors == v2.tensors
        assert rules_sm90.streamk_ctas(one) == rules_sm90.streamk_ctas(two)


def test_counts_do_not_change() -> None:
    one, two = spec(scheduler="stream_k"), spec(scheduler="stream_k", ctas_per_sm=2)
    two_same_stages = two.model_copy(update={"stages": one.stages})
    assert expected_counts(one) == expected_counts(two_same_stages)


def test_sm100_rejects_two_ctas_per_sm() -> None:
    s = rules.resolve(Spec(arch="sm_100a", tile=[128, 128, 64], ctas_per_sm=2))
    (v,) = [v for v in rules.check(s) if v.field == "ctas_per_sm"]
    assert "sm_90a" in v.message and "legal on sm_100a: 1" in v.message


def test_knob_is_named_and_left_out_of_default_spec_dicts() -> None:
    one, two = spec(scheduler="stream_k"), spec(scheduler="stream_k", ctas_per_sm=2)
    assert "ctas_per_sm" not in one.model_dump()
    assert two.model_dump()["ctas_per_sm"] == 2
    same_stages = spec(scheduler="stream_k", stages=one.stages, ctas_per_sm=2)
    assert same_stages.canonical_name() == one.canonical_name() + "_occ2"
    assert one.spec_hash() != same_stages.spec_hash()


def test_generated_text() -> None:
    s = spec(ctas_per_sm=2, scheduler={"kind": "split_k", "splits": 2})
    text = render.render_one(LoadedSpec(spec=s, path="x.toml", variant="occ")).text
    assert "CTAS_PER_SM = 2\n" in text and "SMEM_CARVEOUT = 100\n" in text
    assert "min_blocks_per_mp=CTAS_PER_SM," in text
    assert "preferred_smem_carveout=SMEM_CARVEOUT," in text
    assert "128 x 40 + 128 x 216 <= 32768 = 256 threads x 128 at launch" in text
    assert f"B of {HALF_SMEM} (" in text
    one = spec(scheduler={"kind": "split_k", "splits": 2})
    text1 = render.render_one(LoadedSpec(spec=one, path="x.toml", variant="occ")).text
    assert "min_blocks_per_mp=1," in text1 and "CTAS_PER_SM" not in text1
