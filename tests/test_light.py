"""The light decode kernel's rules, plan and counts (codegen/light.py), on the CPU; the GPU test
(`codegen test --only '*light*'`) checks what the kernels compute."""

from __future__ import annotations

from codegen import light, plan, rules
from codegen.spec import Spec


def _spec(**kw: object) -> Spec:
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "mainloop": "light",
        "tile": [16, 8, 32],
        "warps": 16,
        "swap_ab": True,
    }
    return Spec.model_validate(base | kw)


def test_auto_knobs_resolve_to_no_swizzle_and_two_k_steps() -> None:
    spec = rules.resolve(_spec())
    assert (spec.swizzle, spec.stages) == ("none", 2)
    assert rules.check(spec) == []


def test_the_plan_sizes_follow_the_tile_and_the_warps() -> None:
    for arch in ("sm_90a", "sm_100a"):
        spec = rules.resolve(_spec(arch=arch, tile=[32, 16, 32], warps=8, stages=3))
        p = plan.plan(spec)
        assert p.template == "light/gemm.py.j2"
        got = p.values.light
        assert (got.row_groups, got.token_groups, got.threads) == (2, 2, 256)
        assert got.partial_elems == 32 * 16 and got.smem_bytes == 8 * 32 * 16 * 4
        assert p.values.tile.shape_multiples == {"M": 1, "N": 8, "K": 8}


def test_counts_are_two_mmas_and_one_load_per_row_and_token_per_k_step() -> None:
    spec = rules.resolve(_spec(tile=[32, 16, 32], warps=8, stages=3))
    counts = plan.expected_counts(spec)
    # 3 k-steps x 2 row groups x 2 token groups x 2 MMAs; 3 x (2 x 2 rows + 2 tokens) loads
    assert counts["mma.sync"] == 24
    assert counts["ld.global.v4"] == counts["ld.global"] == 18
    assert counts["mbarrier.init"] == counts["cp.async.bulk.tensor"] == 0


def test_e4m3_takes_a_64_deep_k_step_of_16_byte_loads() -> None:
    spec = rules.resolve(
        _spec(dtype="e4m3", tile=[16, 8, 64], epilogue={"style": "direct", "out_dtype": "bf16"})
    )
    assert rules.check(spec) == []
    assert (light.vec(spec), light.pair(spec), light.mma_k(spec)) == (16, 4, 32)
    wrong = rules.resolve(_spec(dtype="e4m3", tile=[16, 8, 32]))
    assert any("tile K=32" in v.message and "takes 64" in v.message for v in rules.check(wrong))


def test_warps_belongs_to_the_light_mainloop_only() -> None:
    knobs = {"arch": "sm_90a", "tile": [128, 128, 64], "stages": 4, "consumer_warpgroups": 1}
    tma = Spec.model_validate(knobs | {"warps": 8})
    assert [v.field for v in rules.check(rules.resolve(tma))] == ["warps"]
