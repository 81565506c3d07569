"""gemm() with FP8 scales or a 0-d tensor alpha, on the CPU: the runtime (templates/package/
_runtime.py, imported as a package of another name with a fake registry) checks the tensors'
metadata (fake CUDA tensors) and refuses what no epilogue-function kernel serves, naming what
would be legal; _choose_fn ranks function kernels where the dispatcher ranks their plain twin;
the op gemm_fn has a fake implementation; the rendered registry records each twin."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest
from conftest import GENERATED, source_registry

PKG = "scalgemm"
ROW = (("scale_a", "row"), ("scale_b", "col"))
TENSOR = (("scale_a", "device_scalar"), ("scale_b", "device_scalar"))


def _kernel(kernel_cls, name: str, **kw):
    base = {
        "name": name, "arch": "sm_90a", "dtype": "e4m3", "out_dtype": "bf16",
        "tile": (128, 128, 128), "cluster": (1, 1), "cta_group": 1, "scheduler": "persistent",
        "splits": 1, "swap_ab": False, "mainloop": "tma", "epilogue": "tma", "alpha": 1.0,
        "beta": 0.0, "activation": None, "bias": None, "shape_multiples": (1, 8, 16),
        "max_tiles": None, "c_tile": None, "workspace_elems": 0, "workspace_zeroed": False,
        "default_sm_count": 132, "module": f"{PKG}.sm90.{name}",
    }  # fmt: skip
    return kernel_cls(**{**base, **kw})


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("tvm_ffi")
    registry = source_registry(tmp_path_factory.mktemp(PKG), PKG)
    k = registry.Kernel
    registry.KERNELS = (
        _kernel(k, "p_wide", tile=(128, 256, 128)),
        _kernel(k, "p_narrow", tile=(64, 80, 128)),
        _kernel(k, "p_split", scheduler="split_k", splits=2, swap_ab=True),
        _kernel(
            k, "f_wide_rows", tile=(128, 256, 128), fn="scale_rowwise", fn_args=ROW, twin="p_wide"
        ),
        _kernel(
            k, "f_narrow_rows", tile=(64, 80, 128), fn="scale_rowwise", fn_args=ROW, twin="p_narrow"
        ),
        # no twin: the rule places it (swap AB first at small M)
        _kernel(
            k,
            "f_swap_rows",
            tile=(128, 16, 128),
            swap_ab=True,
            scheduler="grid",
            fn="scale_rowwise",
            fn_args=ROW,
        ),
        # no exact twin, a plain kernel that differs only in the store path: ranked as that one
        _kernel(
            k,
            "f_wide_tensor",
            tile=(128, 256, 128),
            epilogue="direct",
            fn="scale_per_tensor",
            fn_args=TENSOR,
        ),
        _kernel(
            k, "f_alpha", dtype="bf16", fn="device_alpha", fn_args=(("alpha", "device_scalar"),)
        ),
    )
    model = types.ModuleType(f"{PKG}._model")
    # the cost model ranks the kernels it has parameters for by name, last first
    model.rank = lambda ks, m, n, k, p: sorted(
        (x for x in ks if x.name in p["kernels"]), key=lambda x: x.name, reverse=True
    )
    model.measured_near = lambda m, fitted: fitted != "far"
    tune = types.ModuleType(f"{PKG}._tune")
    tune.cached_order = lambda *a: ()
    tune.autotune_enabled = lambda: False
    dispatch = types.ModuleType(f"{PKG}._dispatch")
    dispatch.TABLES, dispatch.MODELS = {}, {}
    fakes = {PKG: registry, f"{PKG}._dispatch": dispatch, f"{PKG}._model": model,
             f"{PKG}._tune": tune}  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "dont_write_bytecode", True)
        for name, mod in fakes.items():
            mp.setitem(sys.modules, name, mod)
        yield importlib.import_module(f"{PKG}._runtime")
        sys.modules.pop(f"{PKG}._runtime", None)


def test_function_kernels_rank_where_their_twin_ranks(rt, monkeypatch) -> None:
    choose = rt._choose_fn
    # nothing measured: the rule (small M: swap AB; large M: the widest persistent tile)
    assert choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 8, 256, 256).name == "f_swap_rows"
    assert choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 4096, 256, 256).name == (
        "f_wide_rows"
    )
    # the model ranks p_wide, p_split, p_narrow (names last first), before the rule: p_wide's
    # twin at any M
    models = {"g": ("sm_90a", "m.toml", {"kernels": {"p_wide": 0, "p_narrow": 0, "p_split": 0}})}
    monkeypatch.setattr(rt, "MODELS", models)
    for m in (8, 4096):
        assert choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", m, 256, 256).name == (
            "f_wide_rows"
        )
    # a twin measured far from M is not extrapolated: the nearer twin first
    far = {"g": ("sm_90a", "m.toml", {"kernels": {"p_wide": "far", "p_narrow": 0}})}
    monkeypatch.setattr(rt, "MODELS", far)
    assert choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 8, 256, 256).name == (
        "f_narrow_rows"
    )
    monkeypatch.setattr(rt, "MODELS", models)
    # per tensor: f_wide_tensor ranks as p_wide (direct store, p_wide's TMA store)
    assert choose("g", "sm_90a", "scale_per_tensor", "e4m3", "bf16", 8, 256, 256).name == (
        "f_wide_tensor"
    )
    # the user's measurements of the plain product first
    monkeypatch.setattr(rt._tuned(), "cached_order", lambda *a: ("p_narrow",))
    assert choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 8, 256, 256).name == (
        "f_narrow_rows"
    )
    got = choose("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 8, 256, 256, use_cache=False)
    assert got.name == "f_wide_rows"


def test_what_no_function_kernel_serves_is_refused_naming_what_is(rt) -> None:
    with pytest.raises(rt.GemmError, match=r"e4m3 -> f32 with row-wise scales \(scale_rowwise\)"
                       r"; served: per-tensor scales: e4m3 -> bf16; row-wise scales: e4m3 -> "
                       r"bf16; a device alpha: bf16 -> bf16, e4m3 -> bf16 \(a per-tensor"):  # fmt: skip
        rt._choose_fn("g", "sm_90a", "scale_rowwise", "e4m3", "f32", 64, 256, 256)
    with pytest.raises(
        rt.GemmError,
        match=r"takes M=64, N=12, K=256: f_swap_rows: N=12 is not a multiple of 8 \| f_narrow",
    ):
        rt._choose_fn("g", "sm_90a", "scale_rowwise", "e4m3", "bf16", 64, 12, 256)


def test_scale_tensors_are_checked_from_their_metadata(rt) -> None:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    call = rt._fn_call
    with FakeTensorMode():
        a = torch.empty(7, 64, dtype=torch.float8_e4m3fn, device="cuda")
        b = torch.empty(24, 64, dtype=torch.float8_e4m3fn, device="cuda")
        f32 = {"dtype": torch.float32, "device": "cuda"}
        s0, sm, sn = torch.empty((), **f32), torch.empty(7, 1, **f32), torch.empty(1, 24, **f32)
        fn, vals = call(a, b, 1.0, 0.0, None, None, s0, s0)
        assert fn == "scale_per_tensor" and [v.shape for v in vals] == [(1,), (1,)]
        fn, vals = call(a, b, 1.0, 0.0, None, None, sm, sn)
        assert fn == "scale_rowwise" and [v.shape for v in vals] == [(7,), (24,)]
        fn, vals = call(a, b, 1.0, 0.0, None, None, torch.empty(7, **f32), torch.empty(24, **f32))
        assert fn == "scale_rowwise"
        # a device alpha: e4m3 through a per-tensor kernel (scale_b 1), 16-bit its own function
        assert call(a, b, s0, 0.0, None, None, None, None)[0] == "scale_per_tensor"
        h = torch.empty(7, 64, dtype=torch.bfloat16, device="cuda")
        hb = torch.empty(24, 64, dtype=torch.bfloat16, device="cuda")
        assert call(h, hb, s0, 0.0, None, None, None, None)[0] == "device_alpha"
        bad = [
            ((a, b, 1.0, 0.0, None, None, sn, sm), r"got \(1, 24\) and \(7, 1\)"),
            ((a, b, 1.0, 0.0, None, None, s0, sn), r"both be 0-d float32 tensors \(per-tensor\)"),
            ((a, b, 1.0, 0.0, None, None, sm, None), r"scale_a and scale_b come together"),
            ((h, hb, 1.0, 0.0, None, None, s0, s0), r"apply to float8_e4m3fn a and b"),
            ((a, b, 2.0, 0.0, None, None, s0, s0), r"fold alpha into scale_a"),
            ((a, b, 1.0, s0, None, None, s0, s0), r"beta as a tensor: .*pass beta as a float"),
            ((a, b, 1.0, 0.0, None, "silu", s0, s0), r"no kernel fuses them together"),
            ((a, b, 1.0, 0.0, None, None, s0.half(), s0), r"contiguous float32 tensor on cuda"),
            ((a, b, 1.0, 0.0, None, None, torch.empty_strided((7, 1), (2, 1), **f32), sn),
             r"contiguous float32"),
            ((h, hb, torch.empty(3, **f32), 0.0, None, None, None, None), r"must be 0-d"),
        ]  # fmt: skip
        for args, match in bad:
            with pytest.raises(rt.GemmError, match=match):
                call(*args)
    with pytest.raises(rt.GemmError, match=r"one CUDA device"):
        call(torch.empty(7, 64), torch.empty(24, 64), torch.ones(()), 0.0, None, None, None, None)


def test_the_op_has_a_fake_implementation(rt) -> None:
    import torch

    a = torch.empty(7, 64, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(24, 64, dtype=torch.float8_e4m3fn, device="meta")
    s = torch.empty((), dtype=torch.float32, device="meta")
    op = getattr(torch.ops, PKG).gemm_fn
    out = op(a, b, "scale_per_tensor", [s, None], None)
    assert out.shape == (7, 24) and out.dtype == torch.bfloat16
    assert op(a, b, "scale_per_tensor", [s, s], torch.float16).dtype == torch.float16


def test_the_rendered_registry_records_each_twin() -> None:
    text = (GENERATED / "cutegemm" / "__init__.py").read_text(encoding="utf-8")
    spec = importlib.util.spec_from_file_location("twins_registry", GENERATED / "cutegemm" /
                                                  "__init__.py")  # fmt: skip
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    by_name = {k.name: k for k in mod.KERNELS}
    got = by_name[
        "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_fn_scale_rowwise_persistent_rm_g8_pdl"
    ]
    twin = by_name[got.twin]
    assert twin.name == "sm90_e4m3_128x224x128_s4_sw128_ws_wg2_tma_bf16_persistent_rm_g8_pdl"
    assert twin.fn is None and twin[1:20] == got[1:20]
    assert 'twin="' in text
    for kern in mod.KERNELS:
        assert kern.twin is None or (kern.fn is not None and by_name[kern.twin].fn is None)
