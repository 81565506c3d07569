"""Epilogue functions (codegen/epilogue_fn.py) on the CPU: the reference's checks, the spec's
round trip through a kernel's SPEC dict, the swap-AB axis mapping and the per-argument rule.
The spec-file errors as a user sees them are tests/snapshots/epilogue_fn.txt (test_errors.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen import epilogue_fn, plan_common
from codegen.arch import shared
from codegen.spec import Spec

ROOT = Path(__file__).resolve().parent.parent


def _resolve(tmp_path: Path, text: str, name: str = "f") -> epilogue_fn.Resolved:
    (tmp_path / "fns.py").write_text(text)
    return epilogue_fn.resolve(f"fns.py:{name}", tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("def f(acc: Acc:\n", "does not parse (line 1"),
        ("def f(acc: Acc, *rest: Scalar):\n    return acc\n", "plain parameters only"),
        ("def f(acc: Acc, s: Scalar = 1.0):\n    return acc\n", "plain parameters only"),
        ("def f(acc: Acc, stream: Scalar):\n    return acc\n", "parameter 'stream' would shadow"),
        ("def f(acc: Acc, s):\n    return acc\n", "parameter 's' has no annotation"),
        ("def f(acc: Acc, b: Acc):\n    return acc\n", "exactly one parameter annotated Acc"),
        ("def f(acc: Acc):\n    acc = acc * 2\n", "returns nothing"),
        ("import math\ndef f(acc: Acc):\n    return math.exp(acc)\n", "uses math"),
        ("@staticmethod\ndef f(acc: Acc):\n    return acc\n", "without decorators"),
    ],
)
def test_resolve_refuses(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(epilogue_fn.EpilogueFnError, match=message.replace("(", r"\(")):
        _resolve(tmp_path, text)


def test_resolve_reads_kinds_and_source(tmp_path: Path) -> None:
    got = _resolve(
        tmp_path,
        "import cutlass\n\n\ndef f(acc: Acc, v: m.RowVec, s: DeviceScalar):\n"
        "    y = acc * v\n    return cutlass.max(y, s)\n",
    )
    assert got.args == (("acc", "acc"), ("v", "row"), ("s", "device_scalar"))
    assert got.source.startswith("def f(acc: Acc, v: m.RowVec, s: DeviceScalar):\n")
    with pytest.raises(epilogue_fn.EpilogueFnError, match="absolute|relative"):
        epilogue_fn.resolve(f"{tmp_path}/fns.py:f", tmp_path)


def _spec(swap_ab: bool = False, **epi: object) -> Spec:
    got = epilogue_fn.resolve("specs/epilogues/library.py:scale_rowwise", ROOT)
    fn = {"ref": got.ref, "args": got.args, "digest": got.digest, "source": got.source}
    return Spec.model_validate(
        {
            "arch": "sm_90a",
            "dtype": "e4m3",
            "tile": [128, 16 if swap_ab else 128, 128],
            "consumer_warpgroups": 2,
            "swap_ab": swap_ab,
            "epilogue": {"style": "direct", "out_dtype": "bf16", "fn": fn, **epi},
        }
    )


def test_spec_round_trip_and_name() -> None:
    spec = _spec()
    knobs = spec.knobs()
    assert "source" not in knobs["epilogue"]["fn"]  # the source is carried, not a knob
    # what build and the package read back from a kernel's SPEC dict (lists for tuples)
    knobs["epilogue"]["fn"]["args"] = [list(a) for a in knobs["epilogue"]["fn"]["args"]]
    again = Spec.model_validate(knobs)
    assert again.epilogue.fn.args == spec.epilogue.fn.args
    assert again.spec_hash() == spec.spec_hash()
    assert spec.canonical_name().endswith("direct_bf16_fn_scale_rowwise_grid")
    # a spec without fn keeps its SPEC dict (and hash) as before: no "fn" key
    assert "fn" not in Spec.model_validate({"tile": [128, 128, 64]}).knobs()["epilogue"]


def test_swap_ab_indexes_the_kernels_other_axis() -> None:
    plain = {a.name: a.value for a in plan_common.epifn(_spec()).args}
    swapped = {a.name: a.value for a in plan_common.epifn(_spec(swap_ab=True)).args}
    assert plain == {"acc": "", "scale_a": "fn_scale_a[row]", "scale_b": "fn_scale_b[col]"}
    assert swapped == {"acc": "", "scale_a": "fn_scale_a[col]", "scale_b": "fn_scale_b[row]"}


def test_fn_replaces_the_menu() -> None:
    with pytest.raises(ValueError, match="fn replaces beta"):
        _spec(beta=1.0)


def test_a_kind_the_style_does_not_give_names_the_argument() -> None:
    only_scalars = {
        "direct": frozenset({"acc", "scalar"}),
        "tma": frozenset(epilogue_fn.KINDS.values()),
    }
    (v,) = shared.epilogue_fn_violations(_spec(), only_scalars)
    assert v.field == "epilogue.fn"
    assert "argument 'scale_a' (RowVec) is not given by the direct epilogue on sm_90a" in v.message
    assert "legal there: Acc, Scalar; RowVec needs style tma" in v.message


def test_gpu_reference_runs_the_copied_function_in_torch() -> None:
    """codegen test's reference for an epilogue-function kernel (on the CPU here): the function
    copied into the kernel file, run with torch tensors; and the launcher refuses bad arguments
    before anything is compiled or launched."""
    torch = pytest.importorskip("torch")
    from codegen import gpu
    from codegen.build import load_module

    gen = ROOT / "generated" / "cutegemm"
    module = load_module(
        gen / "sm90" / "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_fn_clamp_bias_grid.py"
    )
    fn = module.SPEC["epilogue"]["fn"]
    acc = torch.randn(5, 7)
    bias = torch.randn(7)
    ref = gpu.fn_reference(module, fn, acc, {"alpha": 2.0, "bias": bias, "limit": 1.5})
    assert torch.equal(ref, (acc * 2.0 + bias[None, :]).clamp(-1.5, 1.5))

    rows = load_module(
        gen
        / "sm90"
        / "sm90_e4m3_128x128x128_s7_sw128_ws_wg2_direct_bf16_fn_scale_rowwise_persistent_rm_pdl.py"
    )
    a = torch.zeros(4, 32, dtype=torch.float8_e4m3fn)
    b = torch.zeros(8, 32, dtype=torch.float8_e4m3fn)
    c = torch.zeros(4, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"scale_a must be a contiguous float32 tensor of shape "
                       r"\(M,\) or \(M, 1\), got torch.float32 \(8,\)"):  # fmt: skip
        rows.launcher(a, b, c, scale_a=torch.ones(8), scale_b=torch.ones(8))()
    with pytest.raises(TypeError):
        rows.launcher(a, b, c)  # the scales are required keyword arguments


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("def f(acc: Acc, g: Gate, u: Up):\n    return g\n", "exactly one Gate and one Up"),
        ("def f(g: Gate):\n    return g\n", "exactly one Gate and one Up"),
        ("def f(g: Gate, u: Up, v: ColVec):\n    return g\n", "takes no ColVec"),
    ],
)
def test_gated_refusals(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(epilogue_fn.EpilogueFnError, match=message):
        _resolve(tmp_path, text)


def test_tile_and_gated_kinds_reach_the_plan() -> None:
    """A Tile is a launcher tensor read per element at the fragment index; a gated pair's call
    takes the gate and up elements and the kernel's N counts both halves of B."""
    got = _resolve_lib("residual_add")
    assert got.args == (("acc", "acc"), ("residual", "tile"))
    spec = _fn_spec(got)
    plan = plan_common.epifn(spec)
    assert [a.name for a in plan.tensors] == ["residual"] and plan.tiles[0].value == "fn_residual_f"
    assert plan.tile_vec == 2 and plan_common.epifn(_fn_spec(got, swap_ab=True)).tile_vec == 1
    gated = _resolve_lib("swiglu")
    assert gated.args == (("gate", "gate"), ("up", "up")) and epilogue_fn.is_gated(gated.args)
    plan = plan_common.epifn(_fn_spec(gated))
    assert plan.gated and not plan.tensors and plan.call_note == "out = swiglu(gate[gate], up[up])"


def _resolve_lib(name: str) -> epilogue_fn.Resolved:
    return epilogue_fn.resolve(f"specs/epilogues/library.py:{name}", ROOT)


def _fn_spec(got: epilogue_fn.Resolved, **knobs) -> Spec:
    fn = {"ref": got.ref, "args": got.args, "digest": got.digest, "source": got.source}
    return Spec.model_validate(
        {
            "name": "t",
            "arch": "sm_90a",
            "dtype": "bf16",
            "tile": [128, 128, 64],
            **knobs,
            "epilogue": {"style": "direct", "fn": fn},
        }
    )


def test_interleave_gate_up_matches_the_reference_split() -> None:
    """cutegemm.interleave_gate_up's weight, multiplied, splits back (codegen test's reference,
    gpu.split_gated) into x @ W_gate^T and x @ W_up^T; the gated reference runs the copied
    swiglu; a residual launcher refuses a tile of the wrong shape before any launch."""
    torch = pytest.importorskip("torch")
    import sys

    from codegen import gpu
    from codegen.build import load_module

    gen = ROOT / "generated"
    sys.path.insert(0, str(gen))
    try:
        from cutegemm import _runtime
    except ImportError as e:  # tvm_ffi or cutlass missing: the package's own tests say so
        pytest.skip(str(e))
    finally:
        sys.path.remove(str(gen))
    f, k = 24, 16
    w = torch.randn(2 * f, k)
    x = torch.randn(5, k)
    wi = _runtime.interleave_gate_up(w)
    gate, up = gpu.split_gated(x @ wi.T)
    assert torch.allclose(gate, x @ w[:f].T) and torch.allclose(up, x @ w[f:].T)
    with pytest.raises(_runtime.GemmError, match="F a multiple of 8"):
        _runtime.interleave_gate_up(torch.randn(20, k))
    kernels = gen / "cutegemm" / "sm90"
    module = load_module(
        kernels / "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_swiglu_persistent_rm_pdl.py"
    )
    ref = gpu.fn_reference(module, module.SPEC["epilogue"]["fn"], x @ wi.T, {})
    assert torch.allclose(ref, torch.nn.functional.silu(x @ w[:f].T) * (x @ w[f:].T), atol=1e-5)
    res = load_module(
        kernels / "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_fn_residual_add_persistent_rm_pdl.py"
    )
    a, b = torch.zeros(4, 32, dtype=torch.bfloat16), torch.zeros(8, 32, dtype=torch.bfloat16)
    c = torch.zeros(4, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"residual must be an \(4, 8\) torch.bfloat16 tensor"):
        res.launcher(a, b, c, residual=torch.zeros(4, 9, dtype=torch.bfloat16))()


def test_gated_kernels_compile_c_with_its_own_column_count() -> None:
    """A gated pair's C is (M, N / 2): the compiled function's fake C must not share B's row
    symbol, or the TVM-FFI entry refuses every real call (c.shape[1] != b.shape[0]); a plain
    kernel's C shares it."""
    pytest.importorskip("cutlass")
    from codegen.build import load_module

    gen = ROOT / "generated" / "cutegemm"
    gated = sorted(p for p in gen.glob("sm*/*_fn_*glu*.py"))
    assert len(gated) >= 6
    for path in [
        *gated,
        gen / "sm90" / "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm.py",
    ]:
        a, b, c = load_module(path).compile_args(tvm_ffi=True)[:3]
        assert c.shape[0] is a.shape[0], path.name
        assert (c.shape[1] is b.shape[0]) == ("glu" not in path.name), path.name
