"""The kernels package (generated/cutegemm) as another project uses it, on the CPU: it imports
without the DSL or torch, installs on its own, its registry matches the kernel files, the
dispatcher picks by the tuning table and the rule, bad input is a GemmError before any launch,
the disk cache's shared library loads in a new process without the DSL, and codegen itself works
from a non-editable install."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GENERATED, PACKAGE, ROOT, SPECS, kernel_glob, shipped

from codegen import package

PY = sys.executable


def _run(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-c", code],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_importing_the_package_imports_neither_the_dsl_nor_torch(tmp_path: Path) -> None:
    code = (
        "import sys, json; import cutegemm; "
        "print(json.dumps([len(cutegemm.KERNELS), cutegemm.DSL_VERSION, "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'cutlass', 'tvm_ffi'))]))"
    )
    proc = _run(code, tmp_path, PYTHONPATH=str(GENERATED))
    assert proc.returncode == 0, proc.stderr
    count, dsl, heavy = json.loads(proc.stdout)
    assert count == len(kernel_glob()) and heavy == []
    assert dsl == package.dsl_version() == "4.8.1"


def test_the_registry_is_every_kernel_file_with_its_own_constants() -> None:
    sys.path.insert(0, str(GENERATED))
    try:
        import cutegemm
    finally:
        sys.path.remove(str(GENERATED))
    files = {p.stem: p for p in kernel_glob()}
    assert sorted(k.name for k in cutegemm.KERNELS) == sorted(files)
    for k in cutegemm.KERNELS:
        path = files[k.name]
        assert path.relative_to(GENERATED).as_posix() == k.module.replace(".", "/") + ".py"
        assert package.ARCH_DIR[k.arch] == path.parent.name
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        consts = {
            t.id: ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name) and t.id in ("SPEC", "SHAPE_MULTIPLES", "DSL_VERSION")
        }
        assert consts["DSL_VERSION"] == cutegemm.DSL_VERSION
        assert k.shape_multiples == tuple(consts["SHAPE_MULTIPLES"][d] for d in "MNK")
        spec = consts["SPEC"]
        assert (k.arch, k.dtype, k.swap_ab) == (spec["arch"], spec["dtype"], spec["swap_ab"])
        assert k.tile == (spec["tile"]["m"], spec["tile"]["n"], spec["tile"]["k"])
        assert k.alpha == spec["epilogue"]["alpha"] and k.beta == spec["epilogue"]["beta"]
        all_names = next(
            ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"
        )
        assert {"gemm", "launcher", "run", "compile_tvm_ffi", "DSL_VERSION"} <= set(all_names)


def test_the_package_pins_what_it_was_checked_against() -> None:
    text = (GENERATED / "pyproject.toml").read_text(encoding="utf-8")
    assert '"nvidia-cutlass-dsl[cu13]==4.8.1"' in text
    assert f'"{package.TVM_FFI_PIN}"' in text and f'"{package.TORCH_PIN}"' in text
    assert "codegen" not in text.split("dependencies")[1].split("]")[0]


def test_the_package_installs_on_its_own(tmp_path: Path) -> None:
    """A wheel of generated/ alone, installed without deps into a folder: imports from anywhere,
    holds every kernel file, and no codegen module."""
    wheel_dir, site = tmp_path / "wheel", tmp_path / "site"
    build = subprocess.run(
        [PY, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheel_dir,
         str(GENERATED)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheel_dir.glob("cutegemm-*.whl")
    inst = subprocess.run(
        [PY, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert inst.returncode == 0, inst.stderr[-2000:]
    installed = sorted(p.name for p in (site / "cutegemm").rglob("*.py"))
    # __init__, _dispatch, _model, _renames, _runtime, _tune, nn, 2 arch inits
    assert len(installed) == len(kernel_glob()) + 9
    assert not (site / "codegen").exists()
    proc = _run(
        "import cutegemm, cutegemm.sm90, cutegemm.sm100; print(cutegemm.__file__)",
        tmp_path,
        PYTHONPATH=str(site),
    )
    assert proc.returncode == 0 and str(site) in proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def runtime():
    return shipped("_runtime")


PLAIN = ("bf16", "bf16", 1.0, 0.0, None, None)


def test_the_dispatcher_follows_the_tuning_table_where_the_model_ranks_nothing(runtime) -> None:
    tables = [t for t in runtime.TABLES.values() if t[0] == "sm_90a"]
    if not tables:
        pytest.skip("no sm_90a tuning table rendered")
    arch, source, picks = tables[0]
    f16 = ("f16", "f16", *PLAIN[2:])
    for m, n, k, ranked, _ in picks[("f16", "f16")]:  # no sweep timed f16: no model parameters
        kern = runtime._choose("NVIDIA H200", arch, f16, m, n, k)
        assert kern.name == ranked[0], (m, n, k, source)
    # a GPU without a table of its own uses one of its arch
    m, n, k, ranked, _ = picks[("f16", "f16")][0]
    assert runtime._choose("NVIDIA H100 80GB HBM3", arch, f16, m, n, k).name == ranked[0]
    # bf16: the cost model ranks first, fitted on later sweeps of more kernels
    model = runtime._table("NVIDIA H200", arch, runtime.MODELS)[2]
    for m, n, k, _, _ in picks[("bf16", "bf16")]:
        kern = runtime._choose("NVIDIA H200", arch, PLAIN, m, n, k)
        assert kern.name in model["kernels"], (m, n, k)


def test_the_rule_where_nothing_was_measured(runtime) -> None:
    small = runtime._choose("NVIDIA B200", "sm_100a", PLAIN, 16, 8192, 8192)
    large = runtime._choose("NVIDIA B200", "sm_100a", PLAIN, 8192, 8192, 8192)
    assert small.swap_ab and small.arch == "sm_100a"
    assert not large.swap_ab and large.cluster == (1, 1)
    fused = ("bf16", "bf16", 1.0, 0.0, "silu", "col")
    assert runtime._choose("NVIDIA H200", "sm_90a", fused, 16, 4096, 4096).swap_ab
    assert not runtime._choose("NVIDIA H200", "sm_90a", fused, 4096, 4096, 4096).swap_ab


def test_a_call_no_kernel_serves_names_why(runtime) -> None:
    with pytest.raises(
        runtime.GemmError, match=r"no sm_90a kernel computes bf16 -> bf16 with alpha=3"
    ):
        runtime._choose(
            "NVIDIA H200", "sm_90a", ("bf16", "bf16", 3.0, 0.0, "relu", None), 8, 64, 64
        )
    with pytest.raises(
        runtime.GemmError, match=r"f16 -> f32 kernels offer: alpha=1 beta=0 activation=None"
    ):
        runtime._choose("NVIDIA H200", "sm_90a", ("f16", "f32", 1.0, 0.0, "relu", None), 8, 64, 64)
    with pytest.raises(
        runtime.GemmError, match=r"takes M=16, N=8190.*N=8190 is not a multiple of 8"
    ):
        runtime._choose("NVIDIA H200", "sm_90a", ("f16", "f16", 1.0, 0.0, None, None), 16, 8190, 64)


def test_numbers_no_kernel_compiles_in_go_to_a_runtime_scalar_kernel(runtime) -> None:
    rt = runtime.RUNTIME
    for arch, gpu in (("sm_90a", "NVIDIA H200"), ("sm_100a", "NVIDIA B200")):
        for dtype, out in (("bf16", "bf16"), ("f16", "f16"), ("e4m3", "bf16")):
            for alpha, beta in ((2.0, 0.0), (0.5, 1.0), (1.0, 1.0), (1.5, -0.25)):
                cls = (dtype, out, alpha, beta, None, None)
                if (arch, *cls) in runtime._BY_CLASS:
                    continue  # compiled in: today's kernels
                kern = runtime._choose(gpu, arch, cls, 4096, 4096, 4096)
                assert (kern.arch, kern.dtype, kern.out_dtype) == (arch, dtype, out)
                assert kern.alpha in (alpha, rt) and kern.beta in (beta, rt), kern.name
                assert rt in (kern.alpha, kern.beta), kern.name
                # beta = 0: a kernel with beta = 0 compiled in (C never read) where one exists
                if beta == 0.0 and (arch, dtype, out, rt, 0.0, None, None) in runtime._BY_CLASS:
                    assert kern.beta == 0.0, kern.name
    # alpha = 1, beta = 0 keeps the compiled-in kernels
    for arch, gpu in (("sm_90a", "NVIDIA H200"), ("sm_100a", "NVIDIA B200")):
        kern = runtime._choose(gpu, arch, PLAIN, 4096, 4096, 4096)
        assert (kern.alpha, kern.beta) == (1.0, 0.0)
    # the runtime kernels fuse no bias or activation: such a call is still refused, naming it
    with pytest.raises(runtime.GemmError, match=r"compiled in or at launch \(runtime\)"):
        runtime._choose(
            "NVIDIA H200", "sm_90a", ("bf16", "bf16", 2.0, 1.0, "silu", "col"), 64, 64, 64
        )


def test_the_values_of_runtime_scalars_are_checked_before_any_launch(runtime) -> None:
    with pytest.raises(runtime.GemmError, match="must fit float32"):
        runtime._class(runtime.torch.bfloat16, None, 1e39, 0.0, None, None)
    with pytest.raises(runtime.GemmError, match="must be finite"):
        runtime._class(runtime.torch.bfloat16, None, 1.0, float("nan"), None, None)


def test_bad_input_is_a_gemm_error_before_any_launch(runtime) -> None:
    import torch

    a = torch.randn(64, 256, dtype=torch.bfloat16)
    b = torch.randn(128, 256, dtype=torch.bfloat16)
    with pytest.raises(runtime.GemmError, match=r"one CUDA device, got cpu and cpu"):
        runtime.gemm(a, b)
    with pytest.raises(runtime.GemmError, match=r"a and b must be torch tensors"):
        runtime.gemm([1], b)
    with pytest.raises(runtime.GemmError, match=r"bias must be a 1-D tensor of length N=128"):
        runtime._bias_kind(torch.zeros(7), 64, 128)
    with pytest.raises(runtime.GemmError, match=r"activation must be None or one of"):
        runtime._class(torch.bfloat16, None, 1.0, 0.0, "tanh", None)
    with pytest.raises(runtime.GemmError, match=r"alpha and beta must be finite"):
        runtime._class(torch.bfloat16, None, float("nan"), 0.0, None, None)


def test_the_torch_op_is_registered_with_a_fake(runtime) -> None:
    import torch

    op = torch.ops.cutegemm.gemm
    a = torch.empty(7, 64, dtype=torch.bfloat16, device="meta")
    b = torch.empty(24, 64, dtype=torch.bfloat16, device="meta")
    out = op(a, b, None, None, 1.0, 0.0, None, None)
    assert out.shape == (7, 24) and out.dtype == torch.bfloat16
    out = op(a, b, None, None, 1.0, 0.0, None, torch.float32)
    assert out.dtype == torch.float32


@pytest.mark.build
def test_a_cached_kernel_loads_in_a_new_process_without_the_dsl(tmp_path: Path, runtime) -> None:
    """precompile() on the CPU fills the cache; a new process loads the shared library through
    tvm_ffi without importing the DSL (calling it needs a GPU)."""
    pytest.importorskip("tvm_ffi")
    cache = tmp_path / "cache"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from cutegemm import _runtime as r; "
        "print([str(p) for p in r.precompile('sm_90a', ['sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid'])])"
    )
    proc = subprocess.run(
        [PY, "-c", code, str(GENERATED)], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "CUTEGEMM_CACHE_DIR": str(cache)}, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (lib,) = cache.glob("sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid-*.so")
    load = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); import torch; "
        "from cutegemm import KERNELS, _runtime as r; "
        "k = next(k for k in KERNELS if k.name == 'sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid'); "
        "t = time.perf_counter(); fn = r._load_or_compile(k, 'sm_90a'); "
        "print(type(fn).__name__, 'cutlass' in sys.modules, (time.perf_counter() - t) * 1e3)"
    )
    proc = subprocess.run(
        [PY, "-c", load, str(GENERATED)], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "CUTEGEMM_CACHE_DIR": str(cache)}, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    kind, dsl_imported, _ms = proc.stdout.split()
    assert kind == "Function" and dsl_imported == "False"
    assert lib.stat().st_mode & 0o777 == 0o755


def test_codegen_renders_from_a_non_editable_install(tmp_path: Path) -> None:
    """`pip install .` (not -e) ships the templates; render works from another folder."""
    wheel_dir, site = tmp_path / "wheel", tmp_path / "site"
    build = subprocess.run(
        [PY, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheel_dir,
         str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheel_dir.glob("cute_codegen-*.whl")
    subprocess.run(
        [PY, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    (elsewhere / "one.toml").write_text(
        (SPECS / "sm90" / "library.toml").read_text(encoding="utf-8")
    )
    proc = subprocess.run(
        [PY, "-m", "codegen", "render", "one.toml", "-o", "out"],
        cwd=elsewhere, env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (site / "codegen" / "templates" / "common" / "header.py.j2").is_file()
    rendered = sorted((elsewhere / "out" / "cutegemm" / "sm90").glob("sm90_*.py"))
    assert len(rendered) == 9, rendered  # library.toml's kernels
    for p in rendered:
        shipped = PACKAGE / "sm90" / p.name
        assert p.read_text().split("\n", 2)[2] == shipped.read_text().split("\n", 2)[2]


STREAMK_OVERFLOW = [  # (kernel, M, N, K): what ran wrong on the H200 with 32-bit partition math
    ("sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_streamk", 16384, 16384, 16384),  # hung
    (
        "sm90_bf16_128x128x64_s6_sw128_ws_wg1_tma_streamk",
        32768,
        32768,
        32768,
    ),  # illegal memory access
]


@pytest.mark.parametrize(("name", "m", "n", "k"), STREAMK_OVERFLOW)
def test_stream_k_takes_problems_past_2_31_iterations_x_ctas(runtime, name, m, n, k) -> None:
    """The partition math is 64-bit now (tests/test_streamk_math.py): nothing refuses these."""
    kern = next(x for x in runtime.KERNELS if x.name == name)
    assert runtime._refusal(kern, m, n, k) is None


@pytest.mark.parametrize(("name", "m", "n", "k"), STREAMK_OVERFLOW)
def test_stream_k_launcher_takes_them_too(name, m, n, k) -> None:
    pytest.importorskip("cutlass")
    import torch

    from codegen import build

    module = build.load_module(PACKAGE / "sm90" / f"{name}.py")
    one = torch.zeros(1, dtype=torch.bfloat16)
    a, b, c = one.expand(m, k), one.expand(n, k), one.expand(m, n)  # no memory behind them
    # CPU tensors: refused for that alone, never for the problem size
    with pytest.raises(ValueError, match=r"cannot run this call") as err:
        module.launcher(a, b, c)
    assert "CUDA device" in str(err.value) and "stream-K" not in str(err.value)
