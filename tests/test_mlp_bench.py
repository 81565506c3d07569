"""`codegen bench --mlp` on the CPU: the models it takes (and the one-line refusals), which
gated-pair and residual kernels serve a block at each M (and the fallback when none does), the
torch block against the float32 reference it is checked with, and `--plan` end to end."""

from __future__ import annotations

import json
import types

import pytest
from conftest import ROOT, run_cli, shipped

from codegen import generalize, mlp


@pytest.fixture(scope="module")
def pkg():
    return types.SimpleNamespace(cutegemm=shipped(), runtime=shipped("_runtime"))


def test_blocks_of_the_model_list_and_refusals() -> None:
    models = generalize.load_split(ROOT / "specs/shapes/models.toml").models
    got, errors = mlp.blocks(models, [*mlp.DEFAULT_MODELS, "deepseek-v3", "nope"])
    assert [(b.model, b.hidden, b.f) for b in got] == [
        ("qwen2.5-7b", 3584, 18944), ("qwen3-14b", 5120, 17408), ("llama-3.1-8b", 4096, 14336),
    ]  # fmt: skip
    assert len(errors) == 2
    assert "mixture of experts" in errors[0] and "'nope': not in the model list" in errors[1]
    assert {"qwen2.5-7b", "qwen3-14b"} <= set(generalize.load_split(
        ROOT / "specs/shapes/models.toml").unseen)  # fmt: skip


def test_plan_picks_swap_at_decode_and_falls_back_clearly(pkg) -> None:
    b = mlp.Block("llama-3.1-8b", 4096, 14336)
    kernels = pkg.cutegemm.KERNELS
    p = mlp.plan(kernels, "sm_90a", "bf16", 1, b, "swiglu", pkg.runtime)
    assert p.gated == "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl"
    # decode: the residual kernel's 32 output tiles would leave 100 of 132 SMs idle (4.12 passes
    # over the down weight): gemm's split-K pick and a torch add instead, saying why
    assert p.residual is None and p.notes == [
        (
            "the residual kernel sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_residual_add"
            "_grid_pdl would stream the down weight 4.12 times at this M: down is cutegemm.gemm "
            "(split-K) + a torch add"
        )
    ]
    # Qwen2.5-7B's 2F = 37888 gate+up rows: 148 tiles of 256 are two waves on 132 SMs (1.78
    # passes), 296 swap tiles three (1.34): the swap tile, as measured (1.33x faster block)
    qwen = mlp.Block("qwen2.5-7b", 3584, 18944)
    p = mlp.plan(kernels, "sm_90a", "bf16", 1, qwen, "swiglu", pkg.runtime)
    assert p.gated == "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl"
    by_name = {k.name: k for k in kernels}
    wide = by_name["sm90_bf16_128x256x64_s4_sw128_ws_wg2_direct_fn_swiglu_persistent_rm_pdl"]
    assert pkg.runtime._weight_passes(wide, 1, 2 * qwen.f, mlp.SMS) == 1.78
    assert pkg.runtime._weight_passes(by_name[p.gated], 1, 2 * qwen.f, mlp.SMS) == 1.34
    # prefill: 128x128 and 128x256 both stream the weight once per 128 rows of x; the 256-wide
    # tile reads x half as often (224 against 112 passes over the 2F = 28672 gate+up rows)
    p = mlp.plan(kernels, "sm_90a", "bf16", 4096, b, "swiglu", pkg.runtime)
    assert (p.gated, p.residual) == (
        "sm90_bf16_128x256x64_s4_sw128_ws_wg2_direct_fn_swiglu_persistent_rm_pdl", "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_fn_residual_add_persistent_rm_pdl"
    )  # fmt: skip
    assert p.gated == wide.name
    assert pkg.runtime._activation_passes(wide, 2 * b.f) == 112
    # M = 128: the 16-wide swap tile would stream the gate+up weight 8 times; the 128-row tile
    # reads it once (on the H100 the block ran 0.24x torch with the swap tile)
    p = mlp.plan(kernels, "sm_90a", "bf16", 128, b, "swiglu", pkg.runtime)
    assert p.gated == "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_swiglu_persistent_rm_pdl"
    # M = 32: the 32-wide swap tile reads the weight once (the 16-wide one twice)
    got = mlp.plan(kernels, "sm_90a", "bf16", 32, b, "swiglu", pkg.runtime).gated
    assert got == "sm90_bf16_128x32x64_s11_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl"
    swap = by_name["sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl"]
    # 8 bands of 16 rows, 1792 tiles in 14 waves (0.97 of them full)
    assert pkg.runtime._weight_passes(swap, 128, 2 * b.f, mlp.SMS) == 8.25
    # 224 tiles are two waves on 132 SMs; the 256-wide tile's 112 one wave with 20 SMs idle:
    # the same 1.18 passes, and at decode x's passes do not count: the rule order (128x128)
    assert pkg.runtime._weight_passes(swap, 16, 2 * b.f, mlp.SMS) == 1.18
    assert pkg.runtime._weight_passes(by_name[p.gated], 128, 2 * b.f, mlp.SMS) == 1.18
    assert pkg.runtime._weight_passes(wide, 128, 2 * b.f, mlp.SMS) == 1.18
    assert pkg.runtime._activation_passes(by_name[p.gated], 2 * b.f) == 224
    # F not a multiple of 8: 2F not a multiple of the gated kernels' 16 (and hidden = 4100 odd
    # for the residual kernels' 8): both fall back, saying why
    p = mlp.plan(kernels, "sm_90a", "bf16", 32, mlp.Block("odd", 4100, 14340), "swiglu",
                 pkg.runtime)  # fmt: skip
    assert p.gated is None and p.residual is None
    assert "N=28680 is not a multiple of 16" in p.notes[0] and "activation torch's" in p.notes[0]
    assert "cutegemm.gemm + a torch add" in p.notes[1]
    p = mlp.plan(kernels, "sm_90a", "f16", 32, b, "swiglu", pkg.runtime)
    assert p.notes[0].startswith("no sm_90a f16 gated swiglu kernel")


@pytest.mark.parametrize("fp8", [False, True])
def test_torch_block_matches_its_reference(fp8: bool) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    b = mlp.Block("t", 256, 384)
    w = mlp._Weights(b, fp8, "cpu")
    x = torch.randn(32, 256).to(torch.bfloat16)
    f = mlp.torch_block("silu", True, fp8)
    args = (w.gu_q, w.gu_s, w.down_q, w.down_s) if fp8 else (w.gu, w.down)
    try:
        y = f(x, *args)
    except (RuntimeError, NotImplementedError) as e:  # _scaled_mm on this CPU build
        pytest.skip(f"torch cannot run it here: {e}")
    dtype = "e4m3" if fp8 else "bf16"
    assert mlp._rel(y, mlp.reference(x, w, "silu", True, fp8)) < mlp.TOL[dtype] / 2
    y[0, 0] = float("nan")  # an output a replay did not write fails
    assert mlp._rel(y, mlp.reference(x, w, "silu", True, fp8)) == float("inf")


def test_plan_command(tmp_path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "plan.json"
    proc = run_cli("bench", "--mlp", "--plan", "NVIDIA H200", "--model", "llama-3.1-8b",
                   "--mlp-m", "1,4096", "--fp8", "--json", out, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [(r["dtype"], r["m"]) for r in rows] == [
        ("bf16", 1), ("e4m3", 1), ("bf16", 4096), ("e4m3", 4096)]  # fmt: skip
    assert rows[0]["up"] == "sm90_bf16_128x16x64_s12_sw128_ws_wg2_swap_direct_fn_swiglu_grid_pdl"
    assert "(fused residual)" in rows[2]["down"] and "scale_rowwise" in rows[1]["up"]
    bad = run_cli("bench", "--mlp", "--model", "mixtral-8x7b", "--act", "relu", cwd=ROOT)
    assert bad.returncode != 0
    assert "mixture of experts" in bad.stdout + bad.stderr
    assert "--act 'relu'" in bad.stdout + bad.stderr


def test_sm100_gated_rules_and_counts() -> None:
    """The sm_100a gated pairs (specs/sm100/gated.toml) are legal as shipped; what their direct
    epilogue does not implement is one violation naming the knob; the counts expect one store per
    pair's vector and the function's exp / tanh as ex2 per pair."""
    from codegen import loader
    from codegen.arch.sm100 import counts
    from codegen.arch.sm100 import rules as rules_sm100
    from codegen.spec import PersistentScheduler

    loaded = {s.name: s.spec for s in loader.load([ROOT / "specs/sm100/gated.toml"])}
    spec = loaded["sm100_bf16_128x256x64_s4_sw128_ws_acc2_direct_fn_swiglu_persistent_rm_g8"]
    assert rules_sm100.gated_violations(spec) == []
    assert isinstance(spec.scheduler, PersistentScheduler)
    swap = rules_sm100.gated_violations(spec.model_copy(update={"swap_ab": True}))
    assert [v.field for v in swap] == ["swap_ab"]
    grid = rules_sm100.gated_violations(spec.model_copy(update={"scheduler": None}))
    assert [v.field for v in grid] == ["scheduler"]
    got = counts.expected_counts(spec)
    assert got["st.global"] == 16  # 128 pairs of a 256-column row, 8 bf16 per store
    assert got["ex2"] == 128  # one exp per pair
