"""AOT export on the CPU: NAME.o/NAME.h from the DSL, a shim that fills the header's structs.

The shim's struct filling is checked against the header with a parser of this file's own (not
codegen.export's), so a change in what the DSL declares shows up here. Compiling (and linking)
the shim runs only where a CUDA include folder with crt/ is found.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import kernel_file

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["seed_s4_k64_sw128", "ladder_1_kloop", "h_bias_128x128_wg1_direct_row_a2"]
ARCH = {"seed_s4_k64_sw128": "sm_100a", "ladder_1_kloop": "sm_100a"}  # the rest: sm_90a
BIAS = {"h_bias_128x128_wg1_direct_row_a2": "row"}  # kernels with a bias vector (after c)

pytestmark = pytest.mark.export

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
        rc = fn(*[None] * pointers, 0, 0, 0, 0, 0, 0, None)
        assert rc != 0
        err_name = lib[f"{name}_error_name"]
        err_name.restype = ctypes.c_char_p
        assert err_name(rc).startswith(b"cudaError")
