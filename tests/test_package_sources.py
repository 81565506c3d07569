"""The package's plain modules (templates/package/*.py) where they live, on the CPU: render
copies each as it is; the runtime, imported as a submodule of a package of another name (its
siblings faked: the registry from its template, the tables, the cost model, the user cache),
takes every name from the package it is imported into, orders kernels by the user's
measurements, the model, the table and the rule, refuses what no kernel takes, asks the GPU only
through torch.cuda (faked here) and compiles, caches and memoizes through the kernel module's
compile_tvm_ffi (faked); the build backend empties build/lib/ beside itself first."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import pytest
from conftest import GENERATED, TEMPLATES, source_registry

from codegen import package, render

SOURCES = [(src, out) for src, out in package.PACKAGE_SOURCES if not src.endswith(".j2")]
PKG = "srcgemm"  # the package the runtime is imported into here: not cutegemm
PLAIN = ("bf16", "bf16", 1.0, 0.0, None, None)


def test_render_copies_each_plain_module_as_it_is() -> None:
    assert {src for src, _ in SOURCES} >= {"_runtime.py", "_build_backend.py"}
    for src, out in SOURCES:
        text = (TEMPLATES / "package" / src).read_text(encoding="utf-8")
        assert (GENERATED / out).read_text(encoding="utf-8") == package.GENERATED_HEADER + text
        # in the formatter's form already, so the copy is what render would have written
        assert render.format_source(text, src) == text, f"{src}: run ruff format on it"
        assert f"from {package.PKG}" not in text and f"import {package.PKG}" not in text, (
            f"{src}: imports its own package by name; use relative imports and __package__"
        )


def test_the_cache_digest_covers_the_plain_modules(tmp_path: Path, monkeypatch) -> None:
    from codegen import cache

    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "_runtime.py").write_text("A = 1\n")
    monkeypatch.setattr(cache, "_DIGEST", None)
    before = cache.inputs_digest(tmp_path)
    (tmp_path / "package" / "_runtime.py").write_text("A = 2\n")
    monkeypatch.setattr(cache, "_DIGEST", None)
    assert cache.inputs_digest(tmp_path) != before


def _kernel(kernel_cls, name: str, **kw):
    base = {
        "name": name,
        "arch": "sm_90a",
        "dtype": "bf16",
        "out_dtype": "bf16",
        "tile": (128, 128, 64),
        "cluster": (1, 1),
        "cta_group": 1,
        "scheduler": "grid",
        "splits": 1,
        "swap_ab": False,
        "mainloop": "tma",
        "epilogue": "direct",
        "alpha": 1.0,
        "beta": 0.0,
        "activation": None,
        "bias": None,
        "shape_multiples": (1, 8, 8),
        "max_tiles": None,
        "c_tile": None,
        "workspace_elems": 0,
        "workspace_zeroed": False,
        "default_sm_count": None,
        "module": f"{PKG}.sm90.{name}",
    }
    return kernel_cls(**{**base, **kw})


def _submodule(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(f"{PKG}.{name}")
    mod.__dict__.update(attrs)
    return mod


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    """templates/package/_runtime.py imported as srcgemm._runtime, from where it lives."""
    pytest.importorskip("torch")
    pytest.importorskip("tvm_ffi")
    registry = source_registry(tmp_path_factory.mktemp(PKG), PKG)
    k = registry.Kernel
    registry.KERNELS = (
        _kernel(k, "a_swap", swap_ab=True, tile=(128, 64, 64)),
        _kernel(k, "b_wide", tile=(128, 256, 64), scheduler="persistent", default_sm_count=132),
        _kernel(
            k,
            "c_split",
            scheduler="split_k",
            splits=4,
            max_tiles=64,
            c_tile=(128, 128),
            workspace_elems=4 * 128 * 128,
        ),
        _kernel(k, "d_silu", activation="silu", bias="col"),
    )
    tune = _submodule("_tune", cached_order=lambda *a: (), autotune_enabled=lambda: False)
    fakes = {
        PKG: registry,
        f"{PKG}._dispatch": _submodule("_dispatch", TABLES={}, MODELS={}),
        # the cost model: the kernels it has parameters for, by name, last first
        f"{PKG}._model": _submodule(
            "_model",
            rank=lambda ks, m, n, k, p: sorted(
                (x for x in ks if x.name in p["kernels"]), key=lambda x: x.name, reverse=True
            ),
            # a kernel fitted as "far" was measured nowhere near M
            measured_near=lambda m, fitted: fitted != "far",
        ),
        f"{PKG}._tune": tune,
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "dont_write_bytecode", True)  # no __pycache__ in templates/
        for name, mod in fakes.items():
            mp.setitem(sys.modules, name, mod)
        runtime = importlib.import_module(f"{PKG}._runtime")
        assert runtime.__file__ == str(TEMPLATES / "package" / "_runtime.py")
        yield runtime
        sys.modules.pop(f"{PKG}._runtime", None)


def test_every_name_follows_the_package_it_is_imported_into(rt, monkeypatch) -> None:
    import torch

    assert rt.DSL_VERSION == "9.9.9" and rt.KERNELS[0].name == "a_swap"
    monkeypatch.delenv("CUTEGEMM_CACHE_DIR", raising=False)
    assert rt._cache_dir() == Path.home() / ".cache" / PKG
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", "OFF")
    assert rt._cache_dir() is None
    a = torch.empty(7, 64, dtype=torch.bfloat16, device="meta")
    b = torch.empty(24, 64, dtype=torch.bfloat16, device="meta")
    out = getattr(torch.ops, PKG).gemm(a, b, None, None, 1.0, 0.0, None, torch.float32)
    assert out.shape == (7, 24) and out.dtype == torch.float32
    with pytest.raises(rt.GemmError, match=rf"alpha=3.*\(see {PKG}\.KERNELS\)"):
        rt._choose("NVIDIA H200", "sm_90a", ("bf16", "bf16", 3.0, 0.0, None, None), 8, 64, 64)


def test_the_order_is_user_cache_model_table_then_rule(rt, monkeypatch) -> None:
    choose = rt._choose
    # the rule: small M takes swap-AB, large M the widest persistent tile
    assert choose("g", "sm_90a", PLAIN, 16, 256, 256).name == "a_swap"
    assert choose("g", "sm_90a", PLAIN, 4096, 256, 256).name == "b_wide"
    # the model, for the kernels it has parameters for, before the rule
    models = {"g": ("sm_90a", "m.toml", {"kernels": {"a_swap": 0, "c_split": 0}})}
    monkeypatch.setattr(rt, "MODELS", models)
    assert choose("g", "sm_90a", PLAIN, 4096, 256, 256).name == "c_split"
    # and before the table's exact entry, which serves where the model ranks no kernel near M;
    # another GPU of the arch shares the table
    tables = {"g": ("sm_90a", "t.toml", {("bf16", "bf16"): ((4096, 256, 256, ("b_wide",), 1.0),)})}
    monkeypatch.setattr(rt, "TABLES", tables)
    assert choose("h", "sm_90a", PLAIN, 4096, 256, 256).name == "c_split"
    far = {"g": ("sm_90a", "m.toml", {"kernels": {"a_swap": "far", "c_split": "far"}})}
    monkeypatch.setattr(rt, "MODELS", far)
    assert choose("h", "sm_90a", PLAIN, 4096, 256, 256).name == "b_wide"
    assert choose("g", "sm_90a", PLAIN, 4096, 256, 512).name == "c_split"
    # the user's measurements first, for a plain call only
    monkeypatch.setattr(rt._tuned(), "cached_order", lambda *a: ("a_swap",))
    assert choose("g", "sm_90a", PLAIN, 4096, 256, 256).name == "a_swap"
    assert choose("g", "sm_90a", PLAIN, 4096, 256, 256, use_cache=False).name == "b_wide"
    fused = ("bf16", "bf16", 1.0, 0.0, "silu", "col")
    assert choose("g", "sm_90a", fused, 4096, 256, 256).name == "d_silu"


def test_a_shape_no_kernel_takes_names_each_refusal(rt) -> None:
    with pytest.raises(rt.GemmError, match=r"takes M=16, N=12.*N=12 is not a multiple of 8"):
        rt._choose("g", "sm_90a", PLAIN, 16, 12, 256)
    kern = next(k for k in rt.KERNELS if k.name == "c_split")
    assert rt._refusal(kern, 256, 256, 64) is None
    assert rt._refusal(kern, 4097, 256, 64) == "66 output tiles > its workspace's 64"
    with pytest.raises(rt.GemmError, match=r"out dtypes offered for f16: none"):
        rt._choose("g", "sm_90a", ("f16", "f16", 1.0, 0.0, None, None), 8, 64, 64)


def test_a_light_kernel_is_offered_for_decode_m_only(rt) -> None:
    """The dispatcher never runs a light kernel (codegen/light.py) above LIGHT_MAX_M tokens."""
    light = rt.KERNELS[0]._replace(name="l", mainloop="light", swap_ab=True)
    assert rt._refusal(light, rt.LIGHT_MAX_M, 256, 64) is None
    why = rt._refusal(light, rt.LIGHT_MAX_M + 1, 256, 64)
    assert (
        why
        == f"M={rt.LIGHT_MAX_M + 1} > {rt.LIGHT_MAX_M}: a light kernel is offered for decode M only"
    )


def test_the_gpu_is_asked_through_torch_cuda_once(rt, monkeypatch) -> None:
    import torch

    asked = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: asked.append(i) or "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (9, 0))
    monkeypatch.setattr(rt, "_DEVICES", {})
    assert rt.kernel_for(16, 256, 256).name == "a_swap"
    assert rt.kernel_for(4096, 256, 256, device=0).name == "b_wide" and asked == [0]
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (8, 0))
    with pytest.raises(rt.GemmError, match=rf"sm_80\) runs neither.*; {PKG} has kernels"):
        rt.kernel_for(16, 256, 256, device=1)
    with pytest.raises(rt.GemmError, match=r"no tuning table or cost model for 'x'"):
        rt.kernel_for(16, 256, 256, gpu="x")
    monkeypatch.setattr(rt, "MODELS", {"NVIDIA B200": ("sm_90a", "m", {"kernels": {}})})
    assert rt.kernel_for(16, 256, 256, gpu="NVIDIA B200").name == "a_swap"
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda i: types.SimpleNamespace(multi_processor_count=7),
    )
    wide, grid = (next(k for k in rt.KERNELS if k.name == n) for n in ("b_wide", "a_swap"))
    assert (rt._sm_count(wide, None), rt._sm_count(wide, 0), rt._sm_count(grid, 0)) == (
        132,
        7,
        None,
    )


@pytest.fixture
def kernel_module(rt, tmp_path: Path, monkeypatch):
    """A fake kernel file for a_swap: compile_tvm_ffi records its calls."""
    path = tmp_path / "a_swap.py"
    path.write_text("# the kernel's bytes: its cache key\n")
    mod = types.ModuleType(f"{PKG}.sm90.a_swap")
    mod.__spec__ = importlib.util.spec_from_file_location(mod.__name__, path)
    mod.calls = []
    mod.compile_tvm_ffi = lambda *a, **kw: mod.calls.append((a, kw)) or f"fn{len(mod.calls)}"
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(rt, "_FNS", {})
    return mod


def test_a_compiled_kernel_is_memoized_and_cached(rt, kernel_module, tmp_path, monkeypatch) -> None:
    kern = next(k for k in rt.KERNELS if k.name == "a_swap")
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", "off")
    assert rt._compiled(kern, "sm_90a", 0) == rt._compiled(kern, "sm_90a", 0) == "fn1"
    assert kernel_module.calls == [((), {})]
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", str(tmp_path / "cache"))
    lib = rt.cached_library(kern, "sm_90a")
    assert lib.parent == tmp_path / "cache" and lib.name.startswith("a_swap-")
    assert lib != rt.cached_library(kern, "sm_100a") != rt.cached_library(kern, "sm_90a", 132)

    def fail(fn, where, k):
        raise OSError("no cc")

    monkeypatch.setattr(rt, "_store_library", fail)
    with pytest.warns(UserWarning, match=rf"{PKG}: a_swap was compiled but not cached \(no cc\)"):
        assert rt._load_or_compile(kern, "sm_90a") == "fn2"
    # a cache entry that does not load is removed and compiled again
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(b"not a library")
    monkeypatch.setattr(rt, "_store_library", lambda fn, where, k: None)
    assert rt._load_or_compile(kern, "sm_90a") == "fn3" and not lib.exists()


def test_precompile_fills_the_cache_for_one_arch(rt, kernel_module, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", "off")
    with pytest.raises(rt.GemmError, match=r"no cache to fill"):
        rt.precompile("sm_90a", ["a_swap"])
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUTE_DSL_ARCH", "unset")
    monkeypatch.setattr(rt, "_store_library", lambda fn, lib, k: lib.write_text(fn))
    assert rt.precompile("sm_100a", ["a_swap"]) == []
    libs = rt.precompile("sm_90a", ["a_swap"])
    assert [p.read_text() for p in libs] == ["fn1"] and kernel_module.calls == [(("sm_90a",), {})]
    assert rt.precompile("sm_90a", ["a_swap"]) == libs and len(kernel_module.calls) == 1


def test_a_workspace_is_one_per_kernel_device_and_stream(rt, monkeypatch) -> None:
    import torch

    stream = types.SimpleNamespace(cuda_stream=5)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: stream)
    monkeypatch.setattr(rt, "_WORKSPACES", {})
    kern = next(k for k in rt.KERNELS if k.name == "c_split")
    ws = rt._workspace(kern, torch.device("cpu"))
    assert ws.dtype == torch.float32 and ws.numel() == kern.workspace_elems
    assert rt._workspace(kern, torch.device("cpu")) is ws
    stream.cuda_stream = 6
    assert rt._workspace(kern, torch.device("cpu")) is not ws
    zeroed = kern._replace(name="z", workspace_zeroed=True, workspace_elems=3)
    assert rt._workspace(zeroed, torch.device("cpu")).tolist() == [0.0, 0.0, 0.0]


def test_bad_input_is_refused_before_the_gpu_is_asked(rt) -> None:
    import torch

    a = torch.randn(64, 256, dtype=torch.bfloat16)
    with pytest.raises(rt.GemmError, match=r"a and b must be torch tensors"):
        rt.gemm(a, [1])
    with pytest.raises(rt.GemmError, match=r"one CUDA device, got cpu and cpu"):
        rt.gemm(a, a)
    with pytest.raises(rt.GemmError, match=r"out_dtype must be float16, bfloat16 or float32"):
        rt._class(torch.bfloat16, torch.float8_e4m3fn, 1.0, 0.0, None, None)
    assert rt._bias_kind(torch.zeros(64), 64, 64) == "col"
    assert rt._bias_kind(torch.zeros(64), 64, 128) == "row"


def test_the_build_backend_empties_build_lib_beside_itself(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("setuptools")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    where = TEMPLATES / "package" / "_build_backend.py"
    spec = importlib.util.spec_from_file_location("_build_backend_under_test", where)
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    assert callable(backend.build_sdist) and callable(backend.get_requires_for_build_wheel)
    stale = tmp_path / "build" / "lib" / "cutegemm" / "renamed.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("")
    built = []
    monkeypatch.setattr(backend, "__file__", str(tmp_path / "_build_backend.py"))
    monkeypatch.setattr(backend._setuptools, "build_wheel", lambda *a: built.append(a) or "x.whl")
    assert backend.build_wheel("dist") == "x.whl"
    assert built == [("dist", None, None)] and not (tmp_path / "build" / "lib").exists()


def test_a_gradient_it_cannot_compute_is_refused_never_dropped(rt) -> None:
    """Inputs that require grad: FP8, a fused activation or out= raise GemmError (before any
    device check, so on the CPU here) instead of returning a tensor without a grad_fn."""
    import torch

    a = torch.randn(4, 16, requires_grad=True)
    b = torch.randn(8, 16)
    a8 = a.detach().to(torch.float8_e4m3fn)
    b8 = b.to(torch.float8_e4m3fn).requires_grad_(True)
    cases = [
        ((a8, b8), {}, "no FP8 backward"),
        ((a, b), {"activation": "relu"}, "pre-activation"),
        ((a, b), {"out": torch.empty(4, 8)}, "autograd needs a new output"),
    ]
    for args, kw, why in cases:
        with pytest.raises(rt.GemmError, match=why):
            rt.gemm(*args, **kw)
    with torch.no_grad(), pytest.raises(rt.GemmError, match="one CUDA device"):
        rt.gemm(a, b, activation="relu")  # no grad wanted: only the usual checks


def test_leading_dimensions_of_a_are_flattened_like_f_linear(rt) -> None:
    import torch

    a, b = torch.randn(2, 3, 16), torch.randn(8, 16)
    with pytest.raises(rt.GemmError, match="leading dimensions \\(2, 3\\)"):
        rt.gemm(a, b, out=torch.empty(6, 8))
    with pytest.raises(rt.GemmError, match="one CUDA device"):  # flattened, then checked as 2-D
        rt.gemm(a, b)
