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
    module = load_module(gen / "sm90" / "h_fn_128x128_wg1_grid_direct_clamp_bias.py")
    fn = module.SPEC["epilogue"]["fn"]
    acc = torch.randn(5, 7)
    bias = torch.randn(7)
    ref = gpu.fn_reference(module, fn, acc, {"alpha": 2.0, "bias": bias, "limit": 1.5})
    assert torch.equal(ref, (acc * 2.0 + bias[None, :]).clamp(-1.5, 1.5))

    rows = load_module(gen / "sm90" / "h_fn_e4m3_128x128_wg2_persistent_direct_scale_rows.py")
    a = torch.zeros(4, 32, dtype=torch.float8_e4m3fn)
    b = torch.zeros(8, 32, dtype=torch.float8_e4m3fn)
    c = torch.zeros(4, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"scale_a must be a contiguous float32 tensor of shape "
                       r"\(M,\) or \(M, 1\), got torch.float32 \(8,\)"):  # fmt: skip
        rows.launcher(a, b, c, scale_a=torch.ones(8), scale_b=torch.ones(8))()
    with pytest.raises(TypeError):
        rows.launcher(a, b, c)  # the scales are required keyword arguments
