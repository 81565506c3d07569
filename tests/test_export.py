"""AOT export on the CPU: NAME.o/NAME.h from the DSL, a shim that fills the header's structs.

The shim's struct filling is checked against the header with a parser of this file's own (not
codegen.export's), so a change in what the DSL declares shows up here. Compiling (and linking)
the shim runs only where a CUDA include folder with crt/ is found. The tests without the
`export` mark need no DSL: they check that every text export writes comes from
templates/export/, rendered with known values.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import jinja2
import pytest
from conftest import kernel_file

ROOT = Path(__file__).resolve().parents[1]
KERNELS = [
    "sm100_f16_128x256x64_s4_sw128_ws_direct_grid",
    "sm100_f16_128x256x16_s1_inter_kloop_direct_grid",
    "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_a2_biasrow_grid",
]
ARCH = {
    "sm100_f16_128x256x64_s4_sw128_ws_direct_grid": "sm_100a",
    "sm100_f16_128x256x16_s1_inter_kloop_direct_grid": "sm_100a",
}  # the rest: sm_90a
BIAS = {
    "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_a2_biasrow_grid": "row"
}  # kernels with a bias vector (after c)

SHIM_SIGNATURE = (
    "int {name}_gemm(\n    void *a, void *b, void *c, {bias}int m, int n, int k, int lda, int ldb, "
    "int ldc, void *stream)"
)


def _why_not() -> str | None:
    """Why export cannot run here, or None."""
    if importlib.util.find_spec("cutlass") is None:
        return "nvidia-cutlass-dsl is not installed"
    if shutil.which("gcc") is None:
        return "gcc not found (the DSL runtime archive must become a shared library)"
    from codegen import export

    try:
        export.runtime_shared_library()
    except export.ExportError as e:
        return f"export impossible here: {e}"
    missing = [k for k in KERNELS if not kernel_file(k).exists()]
    if missing:
        return f"generated kernels missing: {missing}"
    return None


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    from codegen.export import export_variants

    out = tmp_path_factory.mktemp("aot")
    dirs = export_variants([kernel_file(k) for k in KERNELS], out)
    assert dirs == [out / k for k in KERNELS]
    return out


def header_structs(text: str, name: str) -> dict[str, dict[str, tuple[str, int]]]:
    """{arg: {"dynamic_shapes": (ctype, n), "dynamic_strides": (ctype, n)}} from NAME.h."""
    out = {}
    for body, arg in re.findall(rf"typedef struct \{{([^{{}}]*)\}} {name}_Tensor_(\w+)_t;", text):
        assert re.search(r"void \*data;", body), f"{arg}: no data pointer"
        out[arg] = {
            f: (t, int(n)) for t, f, n in re.findall(r"(\w+) (dynamic_\w+)\[(\d+)\];", body)
        }
    return out


def wrapper_params(text: str, name: str) -> list[str]:
    m = re.search(rf"static inline int32_t (cute_dsl_{name}_wrapper)\(([^)]*)\)", text)
    assert m, "no wrapper in the header"
    return [p.strip().split()[-1].lstrip("*") for p in m.group(2).split(",")]


@pytest.mark.export
def test_files_exist(exported: Path):
    assert (exported / "libcuda_dialect_runtime_static.a").stat().st_size > 0
    assert (exported / "build.sh").exists()
    for name in KERNELS:
        d = exported / name
        obj = (d / f"{name}.o").read_bytes()
        assert obj[:4] == b"\x7fELF", "NAME.o is not an ELF object"
        header = (d / f"{name}.h").read_text()
        assert f"void {name}_Kernel_Module_Load({name}_Kernel_Module_t *module)" in header
        assert f"void {name}_Kernel_Module_Unload({name}_Kernel_Module_t *module)" in header
        assert f"cute_dsl_{name}_wrapper(" in header
        assert (d / f"{name}_shim.c").exists()
        meta = json.loads((d / f"{name}.json").read_text())
        assert meta["arch"] == ARCH.get(name, "sm_90a") and meta["entry"] == f"{name}_gemm"
        assert meta["bias"] == BIAS.get(name)


@pytest.mark.export
@pytest.mark.parametrize("name", KERNELS)
def test_shim_fills_what_the_header_declares(exported: Path, name: str):
    d = exported / name
    header = (d / f"{name}.h").read_text()
    shim = (d / f"{name}_shim.c").read_text()
    structs = header_structs(header, name)
    bias = BIAS.get(name)
    assert set(structs) == {"a", "b", "c"} | ({"bias"} if bias else set())
    assert SHIM_SIGNATURE.format(name=name, bias="void *bias, " if bias else "") in shim
    if bias:
        assert "(uintptr_t)bias % 16u" in shim
    assert f'#include "{name}.h"' in shim

    # every declared slot is filled exactly once, with the declared type, and nothing else
    expect_src = {
        "a": (["m", "k"], ["lda"]),
        "b": (["n", "k"], ["ldb"]),
        "c": (["m", "n"], ["ldc"]),
        "bias": (["m" if bias == "row" else "n"], []),
    }
    for arg, fields in structs.items():
        assert re.search(rf"{name}_Tensor_{arg}_t t_{arg};", shim)
        assert f"t_{arg}.data = {arg};" in shim
        for field_name, (ctype, n) in fields.items():
            filled = re.findall(rf"t_{arg}\.{field_name}\[(\d+)\] = \((\w+)\)(\w+);", shim)
            assert [int(i) for i, _, _ in filled] == list(range(n)), (arg, field_name, filled)
            assert {t for _, t, _ in filled} == {ctype}, (arg, field_name, filled)
            # fake A/B/C have every extent and the leading stride dynamic: check the sources too
            want = expect_src[arg][0 if field_name == "dynamic_shapes" else 1]
            if len(want) == n:
                assert [s for _, _, s in filled] == want
        undeclared = set(re.findall(rf"t_{arg}\.(dynamic_\w+)\[", shim)) - set(fields)
        assert not undeclared, f"shim fills fields {name}.h does not declare: {undeclared}"

    # the wrapper is called with the structs in the header's parameter order
    params = wrapper_params(header, name)
    assert params[0] == "module"
    call = re.search(rf"cute_dsl_{name}_wrapper\(&shim_module, (.*)\);$", shim, re.MULTILINE)
    assert call, "the shim does not call the wrapper"
    want = [f"&t_{p}" if p in structs else "(cudaStream_t)stream" for p in params[1:]]
    assert [s.strip() for s in call.group(1).split(",")] == want


def _cuda_include() -> Path:
    from codegen.export import find_cuda_include

    inc = find_cuda_include()
    if inc is None:
        pytest.skip("no CUDA include folder with cuda_runtime.h and crt/host_config.h")
    return inc


@pytest.mark.export
@pytest.mark.parametrize("name", KERNELS)
def test_shim_compiles(exported: Path, name: str, tmp_path: Path):
    inc = _cuda_include()
    d = exported / name
    proc = subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-Wall",
            "-c",
            f"-I{inc}",
            f"-I{d}",
            str(d / f"{name}_shim.c"),
            "-o",
            str(tmp_path / f"{name}_shim.o"),
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.export
def test_shared_library_links_and_loads(exported: Path):
    from codegen.export import build_shared_library, find_cuda_lib

    inc = _cuda_include()
    if find_cuda_lib(inc) is None:
        pytest.skip(f"no libcudart next to {inc}")
    libs = build_shared_library(exported, inc)
    assert sorted(p.name for p in libs) == sorted(f"lib{k}.so" for k in KERNELS)
    for name in KERNELS:
        lib = ctypes.CDLL(str(exported / name / f"lib{name}.so"))  # all symbols resolve
        fn = lib[f"{name}_gemm"]
        fn.restype = ctypes.c_int
        pointers = 4 if name in BIAS else 3
        fn.argtypes = [ctypes.c_void_p] * pointers + [ctypes.c_int] * 6 + [ctypes.c_void_p]
        # m = 0 launches nothing: either the module load fails (no GPU here: an error code) or
        # the shape check rejects it (cudaErrorInvalidValue); both are nonzero and harmless
        rc = fn(*[None] * pointers, 0, 0, 8, 8, 8, 0, None)
        assert rc != 0
        err_name = lib[f"{name}_error_name"]
        err_name.restype = ctypes.c_char_p
        assert err_name(rc).startswith(b"cudaError")
        # k = 0 is refused first, with the shim's own code, before the module is loaded
        assert fn(*[None] * pointers, 128, 128, 0, 0, 0, 128, None) == -1
        assert err_name(-1) == b"SHIM_ERROR_K_ZERO"


# ---- the emitted text comes from templates/export/ (no DSL needed) ----------------------------


def _stream_k_bias_header():
    """A header like the DSL's for a stream-K kernel with a bias per column (known values)."""
    from codegen.export import Header, TensorStruct

    dims = {"a": (2, 1), "b": (2, 1), "c": (2, 1), "bias": (1, 0), "workspace": (0, 0)}
    header = Header(
        prefix="k",
        error_macro="K_ERR",
        module_type="k_Module_t",
        module_load="k_Load",
        wrapper="k_wrapper",
        wrapper_return="int32_t",
        wrapper_args=[(f"k_Tensor_{t}_t *", t) for t in dims] + [("cudaStream_t", "stream")],
        structs={
            t: TensorStruct(t, f"k_Tensor_{t}_t", "int32_t", shapes, "int64_t", strides)
            for t, (shapes, strides) in dims.items()
        },
    )
    slots = {
        "a": {"shapes": ["m", "k"], "strides": ["lda"]},
        "b": {"shapes": ["n", "k"], "strides": ["ldb"]},
        "c": {"shapes": ["m", "n"], "strides": ["ldc"]},
        "bias": {"shapes": ["n"], "strides": []},
        "workspace": {"shapes": [], "strides": []},
    }
    return header, slots


EXPECTED_SHIM = """\
// @generated by codegen.export (format 1) from k.h — DO NOT EDIT.
// Flat C entry point for k.o: C[M, N] = A[M, K] @ B[N, K]^T with a bias per column (length N), \
row-major,
// leading dimensions in elements. The kernel module is loaded once, on the first call.
// Returns 0; SHIM_ERROR_K_ZERO (-1) for k = 0, refused before anything is loaded or launched,
// as cutegemm.gemm and the kernel file's launcher refuse it; cudaErrorInvalidValue for a shape,
// stride or pointer the kernel was not compiled for; or the CUDA error of the module load or
// launch. k_error_name / k_error_string name every one of them.
#include <pthread.h>
#include <stdint.h>
#include <cuda_runtime.h>

// k.h reports module-load errors through this macro; keep the first one instead of printing.
static cudaError_t shim_load_error = cudaSuccess;
#define K_ERR(err) \\
    do { \\
        cudaError_t e_ = (err); \\
        if (e_ != cudaSuccess && shim_load_error == cudaSuccess) shim_load_error = e_; \\
    } while (0)

// nothing here uses half types; skip cuda_fp16.h (it needs CCCL's <nv/target>)
#define __CUDA_FP16_H__
#include "k.h"

// k = 0: A (M, 0) and B (N, 0) have nothing to reduce; a negative code, never a cudaError_t
#define SHIM_ERROR_K_ZERO (-1)
#define SHIM_K_ZERO_TEXT \\
    "K = 0: a (M, 0) and b (N, 0) have nothing to reduce; k refuses it, as cutegemm.gemm does \
(nothing was launched)"

static k_Module_t shim_module;
static pthread_once_t shim_once = PTHREAD_ONCE_INIT;

// stream-K workspace (1024 bytes: partial tiles, then flags), zeroed
// once; every launch leaves the flags at 0 again, so calls must be stream-ordered.
static void *shim_workspace;

static void shim_load(void) {
    k_Load(&shim_module);
    if (shim_load_error == cudaSuccess)
        shim_load_error = cudaMalloc(&shim_workspace, 1024u);
    if (shim_load_error == cudaSuccess)
        shim_load_error = cudaMemset(shim_workspace, 0, 1024u);
}

__attribute__((visibility("default"))) int k_gemm(
    void *a, void *b, void *c, void *bias, int m, int n, int k, int lda, int ldb, int ldc, \
void *stream) {
    if (k == 0) return SHIM_ERROR_K_ZERO;
    pthread_once(&shim_once, shim_load);
    if (shim_load_error != cudaSuccess) return (int)shim_load_error;
    if ((uintptr_t)a % 16u
        || (uintptr_t)b % 16u
        || (uintptr_t)c % 16u
        || (uintptr_t)bias % 16u
        || m <= 0
        || n <= 0
        || k <= 0
        || lda < k
        || ldb < k
        || ldc < n
        || m % 128
        || k % 8)
        return (int)cudaErrorInvalidValue;
    k_Tensor_a_t t_a;
    t_a.data = a;
    t_a.dynamic_shapes[0] = (int32_t)m;
    t_a.dynamic_shapes[1] = (int32_t)k;
    t_a.dynamic_strides[0] = (int64_t)lda;
    k_Tensor_b_t t_b;
    t_b.data = b;
    t_b.dynamic_shapes[0] = (int32_t)n;
    t_b.dynamic_shapes[1] = (int32_t)k;
    t_b.dynamic_strides[0] = (int64_t)ldb;
    k_Tensor_c_t t_c;
    t_c.data = c;
    t_c.dynamic_shapes[0] = (int32_t)m;
    t_c.dynamic_shapes[1] = (int32_t)n;
    t_c.dynamic_strides[0] = (int64_t)ldc;
    k_Tensor_bias_t t_bias;
    t_bias.data = bias;
    t_bias.dynamic_shapes[0] = (int32_t)n;
    k_Tensor_workspace_t t_workspace;
    t_workspace.data = shim_workspace;
    return (int)k_wrapper(&shim_module, &t_a, &t_b, &t_c, &t_bias, &t_workspace, \
(cudaStream_t)stream);
}

__attribute__((visibility("default"))) const char *k_error_name(int code) {
    if (code == SHIM_ERROR_K_ZERO) return "SHIM_ERROR_K_ZERO";
    return cudaGetErrorName((cudaError_t)code);
}

__attribute__((visibility("default"))) const char *k_error_string(int code) {
    if (code == SHIM_ERROR_K_ZERO) return SHIM_K_ZERO_TEXT;
    return cudaGetErrorString((cudaError_t)code);
}
"""


def test_shim_template_with_known_values():
    from codegen.export import render_shim

    header, slots = _stream_k_bias_header()
    # n's multiple of 1 is no check; the header declares no half type
    checks = {"m": 128, "n": 1, "k": 8}
    assert render_shim("k", header, slots, checks, "col", 1024, None) == EXPECTED_SHIM
    header.uses_half = True
    with_half = render_shim("k", header, slots, checks, "col", 1024, None)
    assert "__CUDA_FP16_H__" not in with_half and '#include "k.h"' in with_half


def test_build_script_and_signature_templates():
    from codegen.export import RUNTIME_ARCHIVE, entry_signature, render_build_script

    script = render_build_script()
    assert script.startswith("#!/bin/sh\n# @generated by codegen.export")
    assert f'"$d/${{n}}_shim.c" "$d/$n.o" "$here/{RUNTIME_ARCHIVE}" \\\n' in script
    assert script.endswith("done\n") and "{{" not in script and "{#" not in script
    params = "int m, int n, int k, int lda, int ldb, int ldc, void *stream)"
    assert entry_signature("k", None) == f"int k_gemm(void *a, void *b, void *c, {params}"
    with_bias = f"int k_gemm(void *a, void *b, void *c, void *bias, {params}"
    assert entry_signature("k", "row") == with_bias


def test_every_emitted_text_is_a_template(monkeypatch):
    """With stand-in templates, export's output is exactly theirs: it adds no text of its own."""
    from codegen import export

    stubs = {
        "export/shim.c.j2": "SHIM {{ name }} {{ call | join(',') }}",
        "export/build.sh.j2": "BUILD {{ archive }}",
        "export/entry.c.j2": "{% macro signature(name, pointers) %}SIG {{ name }} "
        "{{ pointers | join(',') }}{% endmacro %}",
    }
    env = jinja2.Environment(loader=jinja2.DictLoader(stubs), undefined=jinja2.StrictUndefined)
    monkeypatch.setattr(export, "_environment", lambda: env)
    header, slots = _stream_k_bias_header()
    shim = export.render_shim("k", header, slots, {}, "col", 1024, None)
    # the wrapper's arguments: the tensors, then None for the stream
    assert shim == "SHIM k a,b,c,bias,workspace,None"
    assert export.render_build_script() == f"BUILD {export.RUNTIME_ARCHIVE}"
    assert export.entry_signature("k", "row") == "SIG k a,b,c,bias"


# what only emitted C or shell contains; none of it may be in a string of codegen/export.py
EMITTED_MARKERS = (
    "#include",
    "#define",
    "#!/bin/sh",
    "__attribute__",
    "pthread_",
    "cudaError",
    "uintptr_t",
    "shim_module",
    "void *a",
    "return (int)",
    "set -eu",
    "${",
    "{\n",
    ";\n",
)


def test_export_py_holds_no_emitted_text():
    tree = ast.parse((ROOT / "codegen" / "export.py").read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = [
        (node.lineno, marker)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
        for marker in EMITTED_MARKERS
        if marker in node.value
    ]
    assert not found, f"codegen/export.py writes C or shell text itself: {found}"


def test_export_templates_ship_in_the_wheel():
    """pyproject's package data for codegen.templates covers every file of templates/export/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folder = ROOT / config["package-dir"]["codegen.templates"]
    patterns = config["package-data"]["codegen.templates"]
    files = sorted(p.relative_to(folder).as_posix() for p in (folder / "export").rglob("*"))
    assert {"export/shim.c.j2", "export/entry.c.j2", "export/build.sh.j2"} <= set(files)
    shipped = {p.relative_to(folder).as_posix() for pat in patterns for p in folder.glob(pat)}
    missing = [f for f in files if f not in shipped]
    assert not missing, f"not in the wheel's package data: {missing}"


# a stand-in for the CUDA runtime and the DSL's k.h: enough for the shim to compile and run on
# the CPU; k_Load records that the module was loaded, k_wrapper that a launch was asked for
STUB_CUDA_RUNTIME = """\
typedef int cudaError_t;
typedef void *cudaStream_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
static inline const char *cudaGetErrorName(cudaError_t e) {
    return e == 0 ? "cudaSuccess" : "cudaErrorInvalidValue";
}
static inline const char *cudaGetErrorString(cudaError_t e) { return e == 0 ? "no error" : "invalid"; }
static inline cudaError_t cudaMalloc(void **p, unsigned long n) { static char buf[4096]; *p = buf; return 0; }
static inline cudaError_t cudaMemset(void *p, int v, unsigned long n) { return 0; }
"""

STUB_HEADER = """\
#include <stdint.h>
extern int loads, launches;
typedef struct { int unused; } k_Module_t;
static inline void k_Load(k_Module_t *m) { loads++; }
#define TENSOR(t, ns, nt) typedef struct { void *data; int32_t dynamic_shapes[ns]; \\
    int64_t dynamic_strides[nt]; } k_Tensor_##t##_t;
TENSOR(a, 2, 1)
TENSOR(b, 2, 1)
TENSOR(c, 2, 1)
typedef struct { void *data; int32_t dynamic_shapes[1]; } k_Tensor_bias_t;
typedef struct { void *data; } k_Tensor_workspace_t;
static inline int32_t k_wrapper(k_Module_t *m, k_Tensor_a_t *a, k_Tensor_b_t *b, k_Tensor_c_t *c,
    k_Tensor_bias_t *bias, k_Tensor_workspace_t *w, cudaStream_t s) { launches++; return 0; }
"""

STUB_MAIN = """\
#include <stdio.h>
#include <string.h>
int loads, launches;
int k_gemm(void *a, void *b, void *c, void *bias, int m, int n, int k, int lda, int ldb, int ldc,
           void *stream);
const char *k_error_name(int code);
const char *k_error_string(int code);
static _Alignas(16) char buf[4][16];
int main(void) {
    int zero = k_gemm(buf[0], buf[1], buf[2], buf[3], 128, 64, 0, 0, 0, 64, 0);
    printf("%d %d %d %s|%s\\n", zero, loads, launches, k_error_name(zero), k_error_string(zero));
    int ok = k_gemm(buf[0], buf[1], buf[2], buf[3], 128, 64, 64, 64, 64, 64, 0);
    printf("%d %d %d %s\\n", ok, loads, launches, k_error_name(ok));
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found")
def test_compiled_shim_refuses_k_zero_first(tmp_path: Path):
    """The shim, compiled against stand-in headers and run on the CPU: k = 0 returns its own
    code with a message naming K = 0, before the module is loaded or anything is launched (the
    Python entry points raise ValueError for it); a good call loads once and launches."""
    from codegen.export import render_shim

    header, slots = _stream_k_bias_header()
    shim = render_shim("k", header, slots, {"m": 128, "n": 1, "k": 8}, "col", 1024, None)
    (tmp_path / "cuda_runtime.h").write_text(STUB_CUDA_RUNTIME)
    (tmp_path / "k.h").write_text(STUB_HEADER)
    (tmp_path / "k_shim.c").write_text(shim)
    (tmp_path / "main.c").write_text(STUB_MAIN)
    exe = tmp_path / "shim_test"
    proc = subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Werror", f"-I{tmp_path}", "-o", str(exe)]
        + [str(tmp_path / "k_shim.c"), str(tmp_path / "main.c"), "-lpthread"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    refused, good = out.splitlines()
    code, loads, launches, rest = refused.split(" ", 3)
    assert (code, loads, launches) == ("-1", "0", "0"), refused
    name, text = rest.split("|")
    assert name == "SHIM_ERROR_K_ZERO"
    assert text.startswith("K = 0: a (M, 0) and b (N, 0) have nothing to reduce") and "k " in text
    assert good == "0 1 1 cudaSuccess", good
