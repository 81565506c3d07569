"""Export generated kernels ahead of time (AOT) as C objects, on a CPU-only machine.

For each generated file this compiles `gemm` for its architecture against fake tensors with
dynamic M, N, K, calls the DSL's `export_to_c`, and writes into ``OUT/NAME/``:

    NAME.o        host launch code + embedded cubin (from the DSL)
    NAME.h        the DSL's header: tensor structs, module load/unload, the wrapper
    NAME_shim.c   a flat C entry point, generated from NAME.h (see `render_shim`):
                  int NAME_gemm(void *a, void *b, void *c, int m, int n, int k,
                                int lda, int ldb, int ldc, void *stream);
                  (a kernel with a bias takes `void *bias` right after c; a stream-K
                  kernel's workspace is allocated by the shim on its first call)
    NAME.json     what the loader (`codegen.aot`) checks before a call: dtypes, shape multiples

and into ``OUT/`` a copy of the DSL's ``libcuda_dialect_runtime_static.a`` and ``build.sh``, which
links ``OUT/NAME/libNAME.so`` on a machine that has gcc and a CUDA toolkit but no DSL.

Every piece of C and shell written here comes from ``templates/export/`` (``shim.c.j2``,
``entry.c.j2``, ``build.sh.j2``), rendered with codegen.render's Jinja environment; this module
reads the header and the kernel, checks them and computes the templates' values.

Exporting without a GPU needs one trick: the DSL's JIT resolves the object's ``_cuda*`` symbols
while it writes the object, so ``libcudart.so.13`` (from the ``nvidia-cuda-runtime`` wheel) and a
shared library made from the DSL's own runtime archive are loaded process-wide first
(`prepare_cpu_runtime`). That shared library is cached under ``build/aot-runtime/``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from codegen.build import fake_args, load_module, read_spec
from codegen.render import environment

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_CACHE = ROOT / "build" / "aot-runtime"
RUNTIME_ARCHIVE = "libcuda_dialect_runtime_static.a"
CUDART = "libcudart.so.13"
EXPORT_FORMAT = "1"

# What each tensor argument's modes are made of, in the flat entry point's parameters:
# A (M, K), B (N, K), C (M, N), row-major: mode 0 has stride ld*, mode 1 has stride 1.
TENSOR_ROLES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "a": (("m", "k"), ("lda", "1")),
    "b": (("n", "k"), ("ldb", "1")),
    "c": (("m", "n"), ("ldc", "1")),
}
# The bias vector (a spec with epilogue.bias): one value per row (length M) or column (N) of C.
BIAS_ROLES: dict[str, tuple[tuple[str], tuple[str]]] = {
    "row": (("m",), ("1",)),
    "col": (("n",), ("1",)),
}


def module_bias(module) -> str | None:
    """ "row" or "col" when the generated kernel adds a bias vector, else None."""
    bias = module.SPEC["epilogue"].get("bias", "none")
    return None if bias == "none" else bias


def module_workspace_bytes(module) -> int:
    """Bytes of the stream-K workspace the kernel takes after C (and bias), else 0."""
    return 4 * int(getattr(module, "WORKSPACE_ELEMS", 0))


def module_tile_capacity(module) -> tuple[int, int, int] | None:
    """(rows, columns of C per output tile, MAX_TILES) of a split-K separate-reduce kernel, whose
    fixed workspace holds at most MAX_TILES tiles; None for other kernels."""
    if not getattr(module, "MAX_TILES", 0):
        return None
    rows, cols = module.C_TILE
    return int(rows), int(cols), int(module.MAX_TILES)


def tensor_roles(
    bias: str | None, workspace: bool = False
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    roles = TENSOR_ROLES | ({"bias": BIAS_ROLES[bias]} if bias else {})
    # the workspace has a static shape: nothing dynamic to fill, only its data pointer
    return roles | ({"workspace": ((), ())} if workspace else {})


class ExportError(Exception):
    pass


# ---- locating the pieces ---------------------------------------------------------------------


def _nvidia_roots() -> list[Path]:
    try:
        import nvidia  # namespace package of the CUDA wheels
    except ImportError:
        return []
    return [Path(p) for p in nvidia.__path__]


def find_cudart() -> Path | None:
    """``libcudart.so.13`` from the ``nvidia-cuda-runtime`` wheel (either wheel layout)."""
    for root in _nvidia_roots():
        for sub in ("cu13/lib", "cuda_runtime/lib"):
            lib = root / sub / CUDART
            if lib.exists():
                return lib
    return None


def runtime_archive() -> Path:
    """The DSL's ``libcuda_dialect_runtime_static.a`` for CUDA 13."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia_cutlass_dsl")
    if spec is None or not spec.submodule_search_locations:
        raise ExportError("nvidia-cutlass-dsl is not installed")
    for loc in spec.submodule_search_locations:
        lib = Path(loc) / "cu13" / "lib" / RUNTIME_ARCHIVE
        if lib.exists():
            return lib
    raise ExportError(
        f"no cu13/lib/{RUNTIME_ARCHIVE} in nvidia_cutlass_dsl (install the [cu13] extra)"
    )


def find_cuda_include() -> Path | None:
    """A CUDA include folder complete enough for ``cuda_runtime.h`` (it needs crt/host_config.h).

    Looks at $CUDA_HOME, /usr/local/cuda, then the CUDA wheels (nvidia-cuda-runtime's headers plus
    nvidia-cuda-crt's crt/ folder, when both are installed).
    """
    candidates = [
        Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ
    ]
    candidates.append(Path("/usr/local/cuda/include"))
    candidates += [root / "cu13" / "include" for root in _nvidia_roots()]
    for inc in candidates:
        if (inc / "cuda_runtime.h").exists() and (inc / "crt" / "host_config.h").exists():
            return inc
    return None


def find_cuda_lib(cuda_include: Path) -> Path | None:
    """The folder holding libcudart next to an include folder (toolkit lib64 or a wheel's lib)."""
    for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
        d = cuda_include.parent / sub
        if (d / "libcudart.so").exists() or (d / CUDART).exists():
            return d
    return None


# ---- the CPU-side trick ----------------------------------------------------------------------


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def runtime_shared_library(cache_dir: Path = RUNTIME_CACHE) -> Path:
    """A shared library made from the DSL's runtime archive, linked to the wheel's libcudart
    (cached)."""
    archive = runtime_archive()
    cudart = find_cudart()
    if cudart is None:
        raise ExportError(
            f'no {CUDART}: install it with `.venv/bin/pip install "nvidia-cuda-runtime==13.0.*"`'
        )
    if shutil.which("gcc") is None:
        raise ExportError("gcc not found (needed to turn the DSL's runtime archive into a .so)")
    key = hashlib.sha256(f"{_file_digest(archive)}\0{cudart}".encode()).hexdigest()[:12]
    out = cache_dir / f"libcdrt-{key}.so"
    if out.exists():
        return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [
        "gcc",
        "-shared",
        "-fPIC",
        "-o",
        str(tmp),
        "-Wl,--whole-archive",
        str(archive),
        "-Wl,--no-whole-archive",
        f"-L{cudart.parent}",
        f"-l:{CUDART}",
        f"-Wl,-rpath,{cudart.parent}",
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExportError(f"building {out.name} failed:\n{proc.stderr.strip()}")
    os.replace(tmp, out)  # atomic: concurrent workers may race to build it
    return out


_PREPARED = False


def prepare_cpu_runtime() -> None:
    """Load libcudart and the runtime shared library process-wide, before any compile."""
    global _PREPARED
    if _PREPARED:
        return
    cudart = find_cudart()
    lib = runtime_shared_library()
    ctypes.CDLL(str(cudart), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    _PREPARED = True


# ---- the header ------------------------------------------------------------------------------


@dataclass
class TensorStruct:
    arg: str  # the argument's name, e.g. "a"
    type_name: str  # e.g. NAME_Tensor_a_t
    shape_type: str | None = None  # C type of dynamic_shapes[], None when absent
    n_shapes: int = 0
    stride_type: str | None = None
    n_strides: int = 0


@dataclass
class Header:
    prefix: str
    error_macro: str  # e.g. CUTE_DSL_CUDA_ERROR_CHECK: the header reports load errors through it
    module_type: str
    module_load: str
    wrapper: str
    wrapper_return: str
    wrapper_args: list[tuple[str, str]]  # (C type, name) after the module pointer
    structs: dict[str, TensorStruct] = field(default_factory=dict)
    uses_half: bool = False  # whether anything declared needs cuda_fp16.h's types


_STRUCT = re.compile(r"typedef\s+struct\s*\{(?P<body>[^{}]*)\}\s*(?P<name>\w+)\s*;")
_ARRAY = re.compile(
    r"(?P<type>\w+)\s+(?P<field>dynamic_shapes|dynamic_strides)\s*\[(?P<n>\d+)\]\s*;"
)


def parse_header(text: str, prefix: str) -> Header:
    """Read the tensor structs, module loader and wrapper a DSL header declares."""

    def one(pattern: str, what: str) -> re.Match:
        m = re.search(pattern, text)
        if m is None:
            raise ExportError(f"{prefix}.h: cannot find {what}")
        return m

    macro = one(r"#ifndef\s+(\w+_CUDA_ERROR_CHECK)\b", "the CUDA error-check macro").group(1)
    load = one(
        rf"static\s+inline\s+void\s+({re.escape(prefix)}_Kernel_Module_Load)\s*\(\s*(\w+)\s*\*",
        "the module load function",
    )
    wrap = one(
        rf"static\s+inline\s+(\w+)\s+(\w*{re.escape(prefix)}_wrapper)\s*\(([^)]*)\)",
        "the wrapper function",
    )
    params = [p.strip() for p in wrap.group(3).split(",")]
    parsed = []
    for p in params:
        m = re.fullmatch(r"(\w+)\s*(\*?)\s*(\w+)", p)
        if m is None:
            raise ExportError(f"{prefix}.h: cannot read wrapper parameter {p!r}")
        parsed.append((m.group(1) + (" *" if m.group(2) else ""), m.group(3)))
    if not parsed or parsed[0][0] != f"{load.group(2)} *":
        raise ExportError(
            f"{prefix}.h: the wrapper's first parameter is not the module: {params[0]!r}"
        )
    header = Header(
        prefix=prefix,
        error_macro=macro,
        module_type=load.group(2),
        module_load=load.group(1),
        wrapper=wrap.group(2),
        wrapper_return=wrap.group(1),
        wrapper_args=parsed[1:],
        uses_half=re.search(r"\b(__half2?|half2?|__nv_bfloat162?)\b", text) is not None,
    )
    tensor_type = re.compile(rf"{re.escape(prefix)}_Tensor_(\w+)_t")
    for m in _STRUCT.finditer(text):
        tm = tensor_type.fullmatch(m.group("name"))
        if tm is None:
            continue
        s = TensorStruct(arg=tm.group(1), type_name=m.group("name"))
        if not re.search(r"void\s*\*\s*data\s*;", m.group("body")):
            raise ExportError(f"{prefix}.h: {s.type_name} has no `void *data`")
        for f in _ARRAY.finditer(m.group("body")):
            if f.group("field") == "dynamic_shapes":
                s.shape_type, s.n_shapes = f.group("type"), int(f.group("n"))
            else:
                s.stride_type, s.n_strides = f.group("type"), int(f.group("n"))
        header.structs[s.arg] = s
    return header


# ---- the emitted text: every piece of C and shell comes from templates/export/ ---------------


@functools.cache
def _environment():
    """The kernels' Jinja environment (codegen.render), one per process."""
    return environment()


def _template(name: str):
    return _environment().get_template(f"export/{name}")


def entry_pointers(bias: str | None) -> tuple[str, ...]:
    """The flat entry point's pointer parameters: a, b, c, then bias when the kernel has one."""
    return ("a", "b", "c", "bias") if bias else ("a", "b", "c")


def entry_signature(name: str, bias: str | None) -> str:
    """``int NAME_gemm(void *a, ..., void *stream)``: the prototype NAME.json records."""
    return str(_template("entry.c.j2").module.signature(name, entry_pointers(bias)))


def render_build_script() -> str:
    """``build.sh``: links every exported kernel's libNAME.so without the DSL."""
    return _template("build.sh.j2").render(archive=RUNTIME_ARCHIVE)


# ---- the shim --------------------------------------------------------------------------------


def dynamic_slots(
    fakes: dict[str, object], bias: str | None = None, workspace: bool = False
) -> dict[str, dict[str, list[str]]]:
    """For each tensor argument, the shim parameter that fills each dynamic shape/stride slot.

    The DSL packs a tensor's dynamic extents and strides in mode order; which modes are dynamic
    comes from the fake tensor the kernel was compiled against.
    """
    slots = {}
    roles = tensor_roles(bias, workspace)
    for arg, fake in fakes.items():
        shapes, strides = roles[arg]
        slots[arg] = {
            "shapes": [shapes[i] for i, d in enumerate(fake.dynamic_shapes_mask) if d],
            "strides": [strides[i] for i, d in enumerate(fake.dynamic_strides_mask) if d],
        }
    return slots


def render_shim(
    name: str,
    header: Header,
    slots: dict[str, dict[str, list[str]]],
    checks: dict[str, int],
    bias: str | None = None,
    workspace_bytes: int = 0,
    capacity: tuple[int, int, int] | None = None,
) -> str:
    """C source of ``NAME_gemm``: fill the header's structs and call its wrapper.

    ``checks`` maps a shim parameter (m, n, k, lda, ...) to the multiple the kernel was compiled
    to assume; a call that breaks one returns cudaErrorInvalidValue instead of launching.
    ``capacity`` (rows, columns, max tiles): a call with more output tiles than the workspace
    holds is refused the same way.
    """
    structs: list[dict] = []
    call: list[str | None] = []  # a tensor's argument, None for the stream
    for ctype, arg in header.wrapper_args:
        if ctype == "cudaStream_t":
            call.append(None)
            continue
        s = header.structs.get(arg)
        if s is None or ctype != f"{s.type_name} *" or arg not in slots:
            raise ExportError(f"{name}.h: wrapper parameter `{ctype}{arg}` is not a known tensor")
        want = slots[arg]
        if len(want["shapes"]) != s.n_shapes or len(want["strides"]) != s.n_strides:
            raise ExportError(
                f"{name}.h: {s.type_name} holds {s.n_shapes} shapes and {s.n_strides} strides, "
                f"the kernel was compiled with dynamic {want}"
            )
        structs.append(
            {
                "arg": arg,
                "type_name": s.type_name,
                "shapes": want["shapes"],
                "shape_type": s.shape_type,
                "strides": want["strides"],
                "stride_type": s.stride_type,
            }
        )
        call.append(arg)
    missing = set(tensor_roles(bias, workspace_bytes > 0)) - {a for _, a in header.wrapper_args}
    if missing:
        raise ExportError(f"{name}.h: the wrapper takes no {sorted(missing)}")
    return _template("shim.c.j2").render(
        name=name,
        format=EXPORT_FORMAT,
        bias=bias,
        bias_length=BIAS_ROLES[bias][0][0].upper() if bias else None,
        pointers=entry_pointers(bias),
        error_macro=header.error_macro,
        module_type=header.module_type,
        module_load=header.module_load,
        wrapper=header.wrapper,
        uses_half=header.uses_half,
        checks=checks,
        capacity=capacity,
        workspace_bytes=workspace_bytes,
        structs=structs,
        call=call,
    )


# ---- exporting (runs in a worker process per architecture) -----------------------------------


def _c_ident(name: str) -> str:
    ident = re.sub(r"\W", "_", name)
    return ident if not ident[0].isdigit() else f"k_{ident}"


def _init_worker(arch: str) -> None:
    os.environ["CUTE_DSL_ARCH"] = arch
    prepare_cpu_runtime()


def _dtype_name(dtype) -> str:
    return getattr(dtype, "__name__", str(dtype))


def export_file(path: str, out_dir: str, arch: str) -> dict:
    """Worker: compile one generated file for `arch`, export it and write its shim."""
    import cuda.bindings.driver as cuda
    from cutlass import cute

    from codegen.build import dsl_version

    prepare_cpu_runtime()
    start = time.perf_counter()
    src = Path(path)
    name = _c_ident(src.stem)
    module = load_module(src)
    gemm = module.gemm

    # export_to_c needs the stream's type, which the generated `gemm` leaves unannotated. The
    # annotations are set as objects: this file's `from __future__ import annotations` would make
    # them strings, evaluated later where `cute` is not a global.
    bias = module_bias(module)
    workspace_bytes = module_workspace_bytes(module)
    if bias and workspace_bytes:

        def gemm_entry(a, b, c, bias, workspace, stream):
            gemm(a, b, c, bias, workspace, stream)

    elif bias:

        def gemm_entry(a, b, c, bias, stream):
            gemm(a, b, c, bias, stream)

    elif workspace_bytes:

        def gemm_entry(a, b, c, workspace, stream):
            gemm(a, b, c, workspace, stream)

    else:

        def gemm_entry(a, b, c, stream):
            gemm(a, b, c, stream)

    tensors = ("a", "b", "c") + ("bias",) * bool(bias) + ("workspace",) * bool(workspace_bytes)
    gemm_entry.__annotations__ = {t: cute.Tensor for t in tensors} | {"stream": cuda.CUstream}
    gemm_entry = cute.jit(gemm_entry)

    args = fake_args(module)
    compiled = cute.compile(gemm_entry, *args, options=f"--gpu-arch {arch}")
    compiled_s = time.perf_counter() - start

    dest = Path(out_dir) / name
    dest.mkdir(parents=True, exist_ok=True)
    for stale in (f"{name}.o", f"{name}.h", f"{name}_shim.c", f"{name}.json", f"lib{name}.so"):
        (dest / stale).unlink(missing_ok=True)  # a failed export must not leave old files behind
    compiled.export_to_c(file_path=str(dest), file_name=name, function_prefix=name)
    export_s = time.perf_counter() - start - compiled_s
    header = parse_header((dest / f"{name}.h").read_text(), name)

    fakes = dict(zip(tensors, args[: len(tensors)]))
    slots = dynamic_slots(fakes, bias, workspace_bytes > 0)
    # what the kernel was compiled to assume: the symbols' divisibility, and the spec's multiples
    sym = {
        "m": args[0].shape[0],
        "k": args[0].shape[1],
        "n": args[1].shape[0],
        "lda": args[0].stride[0],
        "ldb": args[1].stride[0],
        "ldc": args[2].stride[0],
    }
    checks = {v: int(getattr(s, "divisibility", 1) or 1) for v, s in sym.items()}
    for dim, mult in getattr(module, "SHAPE_MULTIPLES", {}).items():
        v = dim.lower()
        checks[v] = max(checks.get(v, 1), int(mult))
    capacity = module_tile_capacity(module)
    shim = render_shim(name, header, slots, checks, bias, workspace_bytes, capacity)
    (dest / f"{name}_shim.c").write_text(shim)

    out_dtype = getattr(module, "OUT_DTYPE", module.IO_DTYPE)
    meta = {
        "format": EXPORT_FORMAT,
        "name": name,
        "source": src.name,
        "source_sha256": hashlib.sha256(src.read_bytes()).hexdigest(),
        "arch": arch,
        "dsl_version": dsl_version(),
        "io_dtype": _dtype_name(module.IO_DTYPE),
        "out_dtype": _dtype_name(out_dtype),
        "multiples": checks,  # m, n, k, lda, ldb, ldc (elements)
        "align_bytes": 16,
        "entry": f"{name}_gemm",
        "bias": bias,  # None, "row" (length M) or "col" (length N): then `void *bias` follows c
        "workspace_bytes": workspace_bytes,  # stream-K, split-K separate: the shim's, not passed
        # split-K separate: (rows, columns of C per tile, most tiles a call may have)
        "tile_capacity": list(capacity) if capacity else None,
        "signature": entry_signature(name, bias),
        "header": {
            "wrapper": header.wrapper,
            "structs": {
                s.arg: {
                    "type": s.type_name,
                    "shapes": [s.shape_type, s.n_shapes],
                    "strides": [s.stride_type, s.n_strides],
                }
                for s in header.structs.values()
            },
        },
        "slots": slots,
        "seconds": {"compile": round(compiled_s, 2), "export_to_c": round(export_s, 2)},
    }
    (dest / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return {"name": name, "dir": str(dest), **meta["seconds"]}


def _write_common(out_dir: Path) -> None:
    archive = runtime_archive()
    dst = out_dir / RUNTIME_ARCHIVE
    if not dst.exists() or _file_digest(dst) != _file_digest(archive):
        shutil.copyfile(archive, dst)
    script = out_dir / "build.sh"
    script.write_text(render_build_script())
    script.chmod(0o755)


@contextlib.contextmanager
def _environ(key: str, value: str):
    """Set an environment variable while workers are spawned: they see it from their first import
    (the initializer runs only after the caller's __main__ is re-imported, which may import the
    DSL)."""
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def export_variants(
    files: list[Path], out_dir: Path, arch: str | None = None, *, jobs: int = 1
) -> list[Path]:
    """Export each generated file to ``out_dir/NAME/`` (NAME.o, NAME.h, NAME_shim.c, NAME.json).

    Each file compiles for its SPEC arch, or for `arch` when given, in a fresh worker process per
    architecture (the DSL reads the target once per process). Returns the NAME/ folders in the
    order of `files`; raises ExportError naming every file that failed (the others are written).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runtime_shared_library()  # fail early, and build the cached .so once for all workers
    _write_common(out_dir)

    by_arch: dict[str, list[Path]] = {}
    for path in files:
        spec = read_spec(Path(path))
        if spec.epilogue.scalars:
            raise ExportError(
                f'{Path(path).name}: alpha / beta = "runtime" is not exported to C yet (the '
                "entry takes tensors and a stream only); export a kernel with them compiled in"
            )
        if spec.epilogue.fn is not None:
            raise ExportError(
                f"{Path(path).name}: an epilogue function ({spec.epilogue.fn.name}) is not "
                "exported to C yet (the entry takes a, b, c, the bias and a stream only)"
            )
        if spec.epilogue.row_sumsq:
            raise ExportError(
                f"{Path(path).name}: row_sumsq (row partials besides C) is not exported to C "
                "yet (the entry takes a, b, c, the bias and a stream only)"
            )
        if spec.epilogue.block_quant is not None:
            raise ExportError(
                f"{Path(path).name}: block_quant (block scales besides C) is not exported to C "
                "yet (the entry takes a, b, c, the bias and a stream only)"
            )
        by_arch.setdefault(arch or spec.arch, []).append(Path(path))
    done: dict[Path, Path] = {}
    failures: list[str] = []
    ctx = multiprocessing.get_context("spawn")
    for target, paths in sorted(by_arch.items()):
        with (
            _environ("CUTE_DSL_ARCH", target),
            ProcessPoolExecutor(
                max_workers=max(1, min(jobs, len(paths))),
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(target,),
            ) as pool,
        ):
            futures = {p: pool.submit(export_file, str(p), str(out_dir), target) for p in paths}
            for p, fut in futures.items():
                try:
                    done[p] = Path(fut.result()["dir"])
                except Exception as e:  # noqa: BLE001 - reported together below
                    msg = str(e).strip().splitlines()
                    failures.append(
                        f"{p.name} ({target}): {type(e).__name__}: {' '.join(msg)[:400]}"
                    )
    if failures:
        raise ExportError("export failed for:\n" + "\n".join(failures))
    return [done[Path(p)] for p in files]


def build_shared_library(
    out_dir: Path, cuda_include: Path, name: str | None = None, cuda_lib: Path | None = None
) -> list[Path]:
    """Link ``libNAME.so`` for `name` (default: every exported kernel in `out_dir`); return them.

    The same link as build.sh: shim + NAME.o + the DSL runtime archive + libcudart.
    """
    out_dir = Path(out_dir)
    cuda_include = Path(cuda_include)
    cuda_lib = Path(cuda_lib) if cuda_lib else find_cuda_lib(cuda_include)
    if cuda_lib is None:
        raise ExportError(f"no libcudart next to {cuda_include}; pass cuda_lib")
    cudart = "-lcudart" if (cuda_lib / "libcudart.so").exists() else f"-l:{CUDART}"
    names = (
        [name]
        if name
        else sorted(d.name for d in out_dir.iterdir() if (d / f"{d.name}_shim.c").exists())
    )
    cccl = [f"-I{cuda_include / 'cccl'}"] if (cuda_include / "cccl").is_dir() else []
    libs = []
    for n in names:
        d = out_dir / n
        lib = d / f"lib{n}.so"
        cmd = [
            "gcc",
            "-O2",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            f"-I{cuda_include}",
            *cccl,
            f"-I{d}",
            str(d / f"{n}_shim.c"),
            str(d / f"{n}.o"),
            str(out_dir / RUNTIME_ARCHIVE),
            f"-L{cuda_lib}",
            f"-Wl,-rpath,{cuda_lib}",
            cudart,
            "-lpthread",
            "-o",
            str(lib),
        ]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ExportError(f"linking {lib.name} failed:\n{' '.join(cmd)}\n{proc.stderr.strip()}")
        libs.append(lib)
    return libs
