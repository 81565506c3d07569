"""gemm(): the one entry point of cutegemm, for every kernel kind, and the torch op around it.

A call goes: checks (devices, dtypes, shapes, strides, alignment; all before any launch) -> the
kernel the dispatcher picks for (GPU, dtypes, epilogue, M, N, K), remembered per shape -> the
kernel compiled with the TVM-FFI calling convention, called on the torch tensors themselves on
torch's current stream. Compiled kernels are kept in memory per process and on disk across
processes (CUTEGEMM_CACHE_DIR, default ~/.cache/cutegemm; CUTEGEMM_CACHE_DIR=off disables it),
keyed by the kernel file's hash, the DSL and TVM-FFI versions and the GPU's arch (and, for a
persistent grid sized by the GPU, its SM count: precompile() sizes those for the arch's flagship).
Workspaces (split-K, stream-K) are allocated by this module once per device and stream.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import math
import os
import subprocess
import threading
import warnings
from pathlib import Path

import torch

from . import DSL_VERSION, KERNELS, Kernel, _model
from ._dispatch import MODELS, TABLES
from ._renames import current

# torch >= 2.9 hands tensors to TVM-FFI natively: its own torch extension (built on first import
# otherwise) is not needed. Imported here, once, so a kernel's first call only loads its library.
if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
    os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
import tvm_ffi

__all__ = ["ACTIVATIONS", "GemmError", "gemm", "gemm_block_quant", "gemm_sumsq", "kernel_for",
           "precompile", "tune"]  # fmt: skip

ACTIVATIONS = ("relu", "gelu_tanh", "silu")
_NAME = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "e4m3",
    torch.float32: "f32",
}
_TORCH = {v: k for k, v in _NAME.items()}
_ARCH = {(9, 0): "sm_90a", (10, 0): "sm_100a"}
_DEFAULT_OUT = {"f16": "f16", "bf16": "bf16", "e4m3": "bf16"}
# the largest M the dispatcher offers a light kernel (Kernel.mainloop == "light") for: its warps
# re-read the weights once per 8-32 tokens, and on an H100 it lost to the TMA kernels from M = 32
LIGHT_MAX_M = 32


class GemmError(ValueError):
    """Bad input, or a call no generated kernel serves; raised before anything is launched."""


RUNTIME = "runtime"  # a kernel's alpha or beta taken at launch, not compiled in
F32_MAX = 3.4028234663852886e38  # the largest finite float32: the epilogue computes in f32

# kernels by what they compute: (arch, dtype, out dtype, alpha, beta, activation, bias), those
# taking K-major a and b; _BY_LAYOUT: every kernel, by that class and (a_major, b_major)
_BY_CLASS: dict[tuple, list[Kernel]] = {}
_BY_LAYOUT: dict[tuple, list[Kernel]] = {}
for _k in KERNELS:
    if _k.fn is not None or _k.row_partials is not None or _k.block_quant is not None:
        # an epilogue-function, row_sumsq or block_quant kernel: called by name (gemm_fn), never
        # dispatched to
        continue
    _key = (_k.arch, _k.dtype, _k.out_dtype, _k.alpha, _k.beta, _k.activation, _k.bias)
    _BY_LAYOUT.setdefault((*_key, _k.a_major, _k.b_major), []).append(_k)
    if _k.a_major == _k.b_major == "k":
        _BY_CLASS.setdefault(_key, []).append(_k)
_MAJOR_NAME = {("a", "k"): "K-major", ("a", "mn"): "M-major", ("b", "k"): "K-major",
               ("b", "mn"): "N-major"}  # fmt: skip


# ---- which kernel ------------------------------------------------------------------------------


def _rule_order(kernels: list[Kernel], m: int) -> list[Kernel]:
    """The order where nothing was measured: small M (<= 128) prefers swap-AB kernels (M rides in
    the MMA's N) with the narrowest tile that covers M, then split-K and stream-K; larger M prefers
    plain unclustered persistent kernels with the largest tile. Ties keep the registry's (name)
    order."""

    def key(k: Kernel) -> tuple:
        if m <= 128:
            covers = k.tile[1] >= m if k.swap_ab else k.tile[0] >= m
            return (
                not k.swap_ab,
                not covers,
                k.scheduler not in ("split_k", "stream_k"),
                k.tile[1],
            )
        area = k.tile[0] * k.tile[1]
        return (
            k.swap_ab,
            k.scheduler in ("split_k", "stream_k"),
            k.cluster != (1, 1),  # multicast clusters measured slower on the H200
            k.scheduler != "persistent",
            -area,
        )

    return sorted(kernels, key=key)


def _table(gpu: str, arch: str, tables: dict):
    """This GPU's entry of `tables` (TABLES or MODELS), else one of a GPU of the same arch."""
    got = tables.get(gpu)
    if got is None or got[0] != arch:
        got = next((t for t in tables.values() if t[0] == arch), None)
    return got


def _measured_order(gpu: str, arch: str, dtype: str, out_dtype: str, m: int, n: int, k: int):
    """The tuning table's ranking for exactly this product (kernel names fastest first), or ()."""
    table = _table(gpu, arch, TABLES)
    for pick in table[2].get((dtype, out_dtype), ()) if table else ():
        if pick[:3] == (m, n, k):
            return pick[3]
    return ()


def _static_order(gpu: str, arch: str, cls: tuple, kernels: list[Kernel], m: int, n: int, k: int):
    """`kernels` in the order the package alone gives for (M, N, K), no user cache: the cost
    model's (`cutegemm._model`, fitted for this GPU or one of its arch) for the kernels it has
    parameters for; where it ranks none near this M (f16, an out dtype the sweeps never timed), a
    plain product measured in the tuning table takes the table's ranking; then the rule order
    for the rest. The model comes first because it was fitted on later measurements of more
    kernels (`codegen sweep`): the table's rankings name only the kernels of its own day, and
    on the tune part's products the model's picks ran faster than the table's."""
    plain = cls[2:] == (1.0, 0.0, None, None)
    by_name = {kern.name: kern for kern in kernels}
    model = _table(gpu, arch, MODELS)
    ordered = list(_model.rank(kernels, m, n, k, model[2])) if model is not None else []
    fits = model[2]["kernels"] if model is not None else {}
    if plain and not any(_model.measured_near(m, fits[kern.name]) for kern in ordered):
        names = _measured_order(gpu, arch, cls[0], cls[1], m, n, k)
        table = [by_name[x] for x in names if x in by_name]
        ordered = table + [kern for kern in ordered if kern not in table]
    return ordered + [kern for kern in _rule_order(kernels, m) if kern not in ordered]


def _tuned():
    """cutegemm._tune (the user's measurements), imported on first use: it imports this module."""
    from . import _tune

    return _tune


def tune(shapes, **kwargs) -> list[dict]:
    """Measure the fastest kernel for each (M, N, K) on this GPU and cache it for every later
    call and process: see `cutegemm._tune.tune` for the arguments."""
    return _tuned().tune(shapes, **kwargs)


def _refusal(kern: Kernel, m: int, n: int, k: int) -> str | None:
    """Why this kernel cannot take (M, N, K), or None."""
    bad = [
        f"{d}={v} is not a multiple of {s}"
        for d, v, s in zip("MNK", (m, n, k), kern.shape_multiples)
        if v % s
    ]
    if kern.mainloop == "light" and m > LIGHT_MAX_M:
        bad.append(f"M={m} > {LIGHT_MAX_M}: a light kernel is offered for decode M only")
    if kern.max_tiles is not None:
        tiles = -(-m // kern.c_tile[0]) * -(-n // kern.c_tile[1])
        if tiles > kern.max_tiles:
            bad.append(f"{tiles} output tiles > its workspace's {kern.max_tiles}")
    return "; ".join(bad) or None


def _num(value: float | str) -> str:
    """alpha or beta as a message shows it: the number, or "runtime"."""
    return value if value == RUNTIME else f"{value:g}"


def _runtime_classes(arch: str, cls: tuple) -> list[tuple]:
    """The classes (with arch) whose kernels compute `cls` with alpha and / or beta taken at
    launch, fewest runtime scalars first: (runtime, beta), (alpha, runtime), then both."""
    dtype, out_dtype, alpha, beta, activation, bias = cls
    pairs = [(RUNTIME, beta), (alpha, RUNTIME), (RUNTIME, RUNTIME)]
    return [(arch, dtype, out_dtype, a, b, activation, bias) for a, b in pairs]


def _layout_refusal(arch: str, cls: tuple, layout: tuple[str, str]) -> str:
    """Why no kernel of `cls` takes operands of `layout` (a_major, b_major), and the fix."""
    dtype = cls[0]
    given = ", ".join(
        f"{x} {_MAJOR_NAME[x, major]}" for x, major in zip("ab", layout) if major != "k"
    )
    offered = sorted({key[-2:] for key in _BY_LAYOUT if key[:-2] == (arch, *cls)})
    fix = " and ".join(f"{x}.contiguous()" for x, major in zip("ab", layout) if major != "k")
    why = (
        "sm_90a wgmma reads MN-major operands for 16-bit types only; "
        if arch == "sm_90a" and dtype == "e4m3"
        else ""
    )
    return (
        f"no {arch} {dtype} -> {cls[1]} kernel with alpha={_num(cls[2])}, beta={_num(cls[3])}, "
        f"activation={cls[4]}, bias={cls[5]} takes {given} (the transpose of a contiguous "
        f"tensor); {why}kernels of this class take (a, b): "
        + (", ".join(f"{_MAJOR_NAME['a', a]} {_MAJOR_NAME['b', b]}" for a, b in offered) or "none")
        + f"; pass K-major operands ({fix}: a copy), or generate a kernel with "
        f'a_major / b_major = "mn" (nothing was launched)'
    )


def _choose(
    gpu: str,
    arch: str,
    cls: tuple,
    m: int,
    n: int,
    k: int,
    use_cache: bool = True,
    layout: tuple[str, str] = ("k", "k"),
) -> Kernel:
    dtype, out_dtype, alpha, beta, activation, bias = cls
    plain = (alpha, beta, activation, bias) == (1.0, 0.0, None, None)
    if layout != ("k", "k"):
        kernels = _BY_LAYOUT.get((arch, *cls, *layout))
        if not kernels and not plain:
            kernels = [kern for key in _runtime_classes(arch, cls)
                       for kern in _BY_LAYOUT.get((*key, *layout), ())]  # fmt: skip
        if not kernels:
            raise GemmError(_layout_refusal(arch, cls, layout))
    else:
        kernels = _BY_CLASS.get((arch, *cls))
        if not kernels and not plain:
            # no kernel has these numbers compiled in: one that takes them at launch
            kernels = [kern for key in _runtime_classes(arch, cls)
                       for kern in _BY_CLASS.get(key, ())]  # fmt: skip
    if not kernels:
        offered = sorted(
            f"alpha={_num(c[3])} beta={_num(c[4])} activation={c[5]} bias={c[6]}"
            for c in _BY_CLASS
            if c[:3] == (arch, dtype, out_dtype)
        )
        raise GemmError(
            f"no {arch} kernel computes {dtype} -> {out_dtype} with alpha={alpha:g}, beta={beta:g}, "
            f"activation={activation}, bias={bias}, compiled in or at launch (runtime); "
            + (
                f"{dtype} -> {out_dtype} kernels offer: " + "; ".join(offered)
                if offered
                else "out dtypes offered for "
                + dtype
                + ": "
                + ", ".join(sorted({c[2] for c in _BY_CLASS if c[:2] == (arch, dtype)}) or ["none"])
            )
            + f" (see {__package__}.KERNELS)"
        )
    tuned = _tuned().cached_order(gpu, dtype, out_dtype, m, n, k) if plain and use_cache else ()
    by_name = {kern.name: kern for kern in kernels}
    ordered = [by_name[x] for x in tuned if x in by_name]
    ordered += [kern for kern in _static_order(gpu, arch, cls, kernels, m, n, k)
                if kern not in ordered]  # fmt: skip
    refusals = []
    for kern in ordered:
        why = _refusal(kern, m, n, k)
        if why is None:
            return kern
        refusals.append(f"{kern.name}: {why}")
    raise GemmError(
        f"no {arch} {dtype} -> {out_dtype} kernel takes M={m}, N={n}, K={k}: "
        + " | ".join(refusals)
    )


_DEVICES: dict[int, tuple[str, str]] = {}  # device index -> (GPU name, arch)


def _device(index: int) -> tuple[str, str]:
    got = _DEVICES.get(index)
    if got is None:
        cap = torch.cuda.get_device_capability(index)
        name = torch.cuda.get_device_name(index)
        arch = _ARCH.get(cap)
        if arch is None:
            raise GemmError(
                f"{name} (sm_{cap[0]}{cap[1]}) runs neither sm_90a nor sm_100a kernels; "
                f"{__package__} has kernels for those two only"
            )
        got = _DEVICES[index] = (name, arch)
    return got


def kernel_for(
    m: int,
    n: int,
    k: int,
    *,
    dtype: torch.dtype = torch.bfloat16,
    out_dtype: torch.dtype | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    activation: str | None = None,
    bias: str | None = None,
    device: torch.device | int | None = None,
    gpu: str | None = None,
    arch: str | None = None,
    a_major: str = "k",
    b_major: str = "k",
    scales: str | None = None,
) -> Kernel:
    """The kernel gemm() runs for this call on this GPU (bias: None, "row" or "col"), or
    GemmError naming why none can. gpu (e.g. "NVIDIA H200"): the pick for that GPU, asked
    without one (its tuning table and cost model; no user cache). A GPU with neither of its own
    takes those of a GPU of its arch, as gemm() does there: name the arch (e.g. "sm_90a").
    a_major, b_major: "k" (K-major, the default) or "mn" (a = x.t(), b = w.t() of contiguous
    x (K, M), w (K, N)), the layouts gemm() reads from the strides. scales="tensor" or "rowwise"
    (float8_e4m3fn): the kernel of gemm(..., scale_a=, scale_b=); alpha="device": of gemm(...,
    alpha=<0-d tensor>)."""
    fn = None
    if scales is not None or alpha == "device":
        forms = {"tensor": "scale_per_tensor", "rowwise": "scale_rowwise"}
        if scales is not None and (scales not in forms or alpha != 1.0):
            raise GemmError(f'scales must be "tensor" or "rowwise" (alpha 1), got {scales!r}')
        fn = forms[scales] if scales else _device_alpha_fn(dtype)
        alpha = 1.0
    cls = _class(dtype, out_dtype, alpha, beta, activation, bias)
    if fn is not None and (cls[3:] != (0.0, None, None) or (a_major, b_major) != ("k", "k")):
        raise GemmError("scales and a device alpha take beta 0, no activation or bias, K-major")
    layout = (a_major, b_major)
    if any(major not in ("k", "mn") for major in layout):
        raise GemmError(f'a_major and b_major must be "k" or "mn", got {a_major!r}, {b_major!r}')
    if gpu is not None:
        known = next((t[0] for name, t in (*TABLES.items(), *MODELS.items()) if name == gpu), None)
        arch = known or arch
        if arch is None:
            names = ", ".join(sorted({*TABLES, *MODELS}))
            raise GemmError(
                f"no tuning table or cost model for {gpu!r} (known: {names}); pass arch= (e.g. "
                "'sm_90a') to get the pick gemm() makes there from another GPU's of that arch"
            )
        if fn is not None:
            return _choose_fn(gpu, arch, fn, cls[0], cls[1], m, n, k, use_cache=False)
        return _choose(gpu, arch, cls, m, n, k, use_cache=False, layout=layout)
    index = torch.device("cuda", torch.cuda.current_device()) if device is None else device
    index = torch.device(index).index if not isinstance(index, int) else index
    gpu, arch = _device(index or 0)
    if fn is not None:
        return _choose_fn(gpu, arch, fn, cls[0], cls[1], m, n, k)
    return _choose(gpu, arch, cls, m, n, k, layout=layout)


def _class(dtype, out_dtype, alpha, beta, activation, bias) -> tuple:
    name = _NAME.get(dtype)
    if name is None or name == "f32":
        raise GemmError(f"a and b must be float16, bfloat16 or float8_e4m3fn, got {dtype}")
    out_name = _DEFAULT_OUT[name] if out_dtype is None else _NAME.get(out_dtype)
    if out_name is None or out_name == "e4m3":
        raise GemmError(f"out_dtype must be float16, bfloat16 or float32, got {out_dtype}")
    if activation is not None and activation not in ACTIVATIONS:
        raise GemmError(
            f"activation must be None or one of {', '.join(ACTIVATIONS)}, got {activation!r}"
        )
    if not (math.isfinite(alpha) and math.isfinite(beta)):
        raise GemmError(f"alpha and beta must be finite, got {alpha}, {beta}")
    if max(abs(alpha), abs(beta)) > F32_MAX:
        raise GemmError(
            f"alpha and beta must fit float32, which the epilogue computes in, got {alpha}, {beta}"
        )
    return (name, out_name, float(alpha), float(beta), activation, bias)


# ---- compiled kernels: in memory, then on disk -------------------------------------------------

_FNS: dict[tuple, object] = {}  # (kernel name, SM count it was compiled for, or None) -> function
_LOCK = threading.Lock()


def _cache_dir() -> Path | None:
    where = os.environ.get("CUTEGEMM_CACHE_DIR", "")
    if where.lower() == "off":
        return None
    return Path(where) if where else Path.home() / ".cache" / __package__


def _sm_count(kern: Kernel, device: int | None) -> int | None:
    """The SM count a compile of `kern` sizes its persistent grid by: None when its grid does not
    depend on it; the GPU's (device index), or the kernel's default (a cross-compile: None)."""
    if kern.default_sm_count is None:
        return None
    if device is None:
        return kern.default_sm_count
    return torch.cuda.get_device_properties(device).multi_processor_count


def _cache_key(kern: Kernel, arch: str, sm_count: int | None = None) -> str:
    """Kernel file bytes, DSL and TVM-FFI versions, target arch and, for a grid sized by the GPU,
    its SM count: what the object depends on."""
    source = importlib.util.find_spec(kern.module).origin
    h = hashlib.sha256(Path(source).read_bytes())
    h.update(f"{DSL_VERSION}|{tvm_ffi.__version__}|{arch}".encode())
    if sm_count is not None:
        h.update(f"|sm_count={sm_count}".encode())
    return h.hexdigest()[:20]


def _compiled(kern: Kernel, arch: str, device: int):
    """The kernel's TVM-FFI function for GPU `device`: from memory, from the disk cache, or
    compiled (and stored)."""
    key = (kern.name, _sm_count(kern, device))
    fn = _FNS.get(key)
    if fn is not None:
        return fn
    with _LOCK:
        fn = _FNS.get(key)
        if fn is None:
            fn = _FNS[key] = _load_or_compile(kern, arch, key[1])
    return fn


def cached_library(kern: Kernel, arch: str, sm_count: int | None = None) -> Path | None:
    """Where the disk cache keeps this kernel's shared library (None: caching is off)."""
    folder = _cache_dir()
    return folder / f"{kern.name}-{_cache_key(kern, arch, sm_count)}.so" if folder else None


def _load_or_compile(kern: Kernel, arch: str, sm_count: int | None = None):
    lib = cached_library(kern, arch, sm_count)
    if lib is not None and lib.exists():
        try:
            return tvm_ffi.load_module(str(lib))[kern.name]
        except Exception:  # noqa: BLE001 - a bad cache entry is recompiled, never fatal
            lib.unlink(missing_ok=True)
    module = importlib.import_module(kern.module)
    fn = module.compile_tvm_ffi() if sm_count is None else module.compile_tvm_ffi(sm_count=sm_count)
    if lib is not None:
        try:
            _store_library(fn, lib, kern)
        except (OSError, subprocess.SubprocessError) as e:
            warnings.warn(
                f"{__package__}: {kern.name} was compiled but not cached ({e}); the next process "
                "compiles it again (about 1 s). Set CUTEGEMM_CACHE_DIR=off to silence this.",
                stacklevel=3,
            )
    return fn


def _dsl_runtime_dir() -> Path:
    """The folder of the DSL's libcute_dsl_runtime.so (its CUDA forwarders, error reporters)."""
    import cutlass

    root = Path(cutlass.__file__).resolve().parents[2]
    for flavour in ("cu13", "cu12"):
        if (root / flavour / "lib" / "libcute_dsl_runtime.so").exists():
            return root / flavour / "lib"
    raise OSError(f"no libcute_dsl_runtime.so under {root}")


def _store_library(fn, lib: Path, kern: Kernel) -> None:
    """Export the compiled function's object and link it into a shared library that tvm_ffi
    loads without the DSL; written under a temporary name, then renamed (never half-written)."""
    import tempfile

    runtime = _dsl_runtime_dir()
    tvm_lib = Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent
    lib.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib.parent, prefix=f".{kern.name}.") as tmp:
        obj, part = Path(tmp) / f"{kern.name}.o", Path(tmp) / lib.name
        fn.export_to_c(
            object_file_path=str(obj), function_name=kern.name, export_only_tvm_ffi_symbols=True
        )
        cc = os.environ.get("CC", "cc")
        subprocess.run(
            [
                cc,
                "-shared",
                "-fPIC",
                "-o",
                str(part),
                str(obj),
                f"-L{runtime}",
                "-l:libcute_dsl_runtime.so",
                f"-Wl,-rpath,{runtime}",
                f"-L{tvm_lib}",
                "-ltvm_ffi",
                f"-Wl,-rpath,{tvm_lib}",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        os.chmod(part, 0o755)
        os.replace(part, lib)


def precompile(arch: str, names: list[str] | None = None) -> list[Path]:
    """Fill the disk cache for `arch` ("sm_90a" or "sm_100a") without a GPU: cross-compile each
    kernel (all of that arch, or `names`) and link its shared library. Returns the libraries."""
    names = None if names is None else [current(name) for name in names]
    out = []
    for kern in KERNELS:
        if kern.arch == arch and (names is None or kern.name in names):
            # a grid sized by the GPU's SMs is sized for the arch's flagship (its default)
            sm_count = _sm_count(kern, None)
            lib = cached_library(kern, arch, sm_count)
            if lib is None:
                raise GemmError("CUTEGEMM_CACHE_DIR=off: there is no cache to fill")
            if not lib.exists():
                os.environ["CUTE_DSL_ARCH"] = arch  # the DSL's trace-time arch queries follow it
                fn = importlib.import_module(kern.module).compile_tvm_ffi(arch)
                _store_library(fn, lib, kern)
            out.append(lib)
    return out


# ---- the call ----------------------------------------------------------------------------------

# ((a_major, b_major), device, a dtype, b dtype, out dtype, bias kind, alpha, beta, activation,
# M, N, K) -> launch plan
_PLANS: dict[tuple, tuple] = {}
_WORKSPACES: dict[tuple, torch.Tensor] = {}  # (kernel name, device, stream) -> f32 workspace


def _rows_ok(t: torch.Tensor) -> bool:
    """Last stride 1, 16-byte aligned rows and base (what TMA needs)."""
    s0, s1 = t.stride()
    return s1 == 1 and (s0 * t.itemsize) % 16 == 0 and s0 >= t.shape[1] and t.data_ptr() % 16 == 0


def _cols_ok(t: torch.Tensor) -> bool:
    """First stride 1, 16-byte aligned columns and base: the transpose of a tensor _rows_ok takes
    (an MN-major operand, e.g. w.t() of a contiguous (K, N) w)."""
    s0, s1 = t.stride()
    return s0 == 1 and (s1 * t.itemsize) % 16 == 0 and s1 >= t.shape[0] and t.data_ptr() % 16 == 0


def _major(t: torch.Tensor) -> str | None:
    """An operand's major mode as the kernels name it: "k" (rows of K, stride 1 along K), "mn"
    (stride 1 along M or N: the transpose of a contiguous tensor), or None (neither, as TMA
    needs it). K-major first: a tensor with one row or column may be both."""
    if _rows_ok(t):
        return "k"
    return "mn" if _cols_ok(t) else None


def _bias_kind(bias: torch.Tensor | None, m: int, n: int) -> str | None:
    if bias is None:
        return None
    if not isinstance(bias, torch.Tensor) or bias.dim() != 1 or bias.shape[0] not in (m, n):
        shape = tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__
        raise GemmError(
            f"bias must be a 1-D tensor of length N={n} (per column) or M={m} (per row), got {shape}"
        )
    return "col" if bias.shape[0] == n else "row"  # M == N: per column, like nn.Linear


def _plan(a, b, out, kind, alpha, beta, activation, out_dtype, layout) -> tuple:
    """Everything that depends only on the key: checks that need no data pointer, the kernel and
    its compiled function (`layout`: the operands' major modes, (a_major, b_major))."""
    m, k = a.shape
    n = b.shape[0]
    if a.dtype != b.dtype:
        raise GemmError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if out is not None and out_dtype is not None and out.dtype != out_dtype:
        raise GemmError(f"out is {out.dtype} but out_dtype={out_dtype}")
    cls = _class(a.dtype, out_dtype if out is None else out.dtype, alpha, beta, activation, kind)
    if k == 0:
        raise GemmError(f"K=0: a ({m}, 0) and b ({n}, 0) have nothing to reduce")
    gpu, arch = _device(a.device.index)
    if cls[2:] == (1.0, 0.0, None, None) and _autotune_now(gpu, cls, m, n, k):
        _tuned().autotune_one(a.device.index, gpu, a.dtype, _TORCH[cls[1]], m, n, k)
    kern = _choose(gpu, arch, cls, m, n, k, layout=layout)
    return (kern, _TORCH[cls[1]], _compiled(kern, arch, a.device.index))


def _autotune_now(gpu: str, cls: tuple, m: int, n: int, k: int) -> bool:
    """CUTEGEMM_AUTOTUNE=1, an eager call outside CUDA graph capture, a product not yet tuned."""
    tune_mod = _tuned()
    return (
        tune_mod.autotune_enabled()
        and not torch.cuda.is_current_stream_capturing()
        and not torch.compiler.is_compiling()
        and not tune_mod.cached_order(gpu, cls[0], cls[1], m, n, k)
    )


def _on_device(dev: torch.device) -> contextlib.AbstractContextManager:
    """The operands' GPU as the current device for a launch: a kernel launches on the current
    device (and on that device's current stream), which on a host of several GPUs need not be
    the one the tensors live on; nothing to do where it already is."""
    if dev.index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(dev)


def _workspace(kern: Kernel, device: torch.device) -> torch.Tensor:
    stream = torch.cuda.current_stream(device).cuda_stream
    key = (kern.name, device.index, stream)
    ws = _WORKSPACES.get(key)
    if ws is None:
        make = torch.zeros if kern.workspace_zeroed else torch.empty
        ws = _WORKSPACES[key] = make(kern.workspace_elems, dtype=torch.float32, device=device)
    return ws


def _eager(a, b, out, bias, alpha, beta, activation, out_dtype) -> torch.Tensor:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise GemmError(
            f"a and b must be torch tensors, got {type(a).__name__}, {type(b).__name__}"
        )
    dev = a.device
    if dev.type != "cuda" or b.device != dev:
        raise GemmError(
            f"a and b must be on one CUDA device, got {a.device} and {b.device} (nothing was launched)"
        )
    sa, sb = a.shape, b.shape
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[1]:
        raise GemmError(f"expected a (M, K) and b (N, K), got {tuple(sa)} and {tuple(sb)}")
    m, k = sa
    n = sb[0]
    kind = _bias_kind(bias, m, n)
    # the operands' major modes: K-major where both fit (one row), None where neither (refused
    # below)
    layout = (_major(a) or "k", _major(b) or "k")
    key = (
        layout,
        dev.index,
        a.dtype,
        b.dtype,
        out_dtype,
        None if out is None else out.dtype,
        kind,
        alpha,
        beta,
        activation,
        m,
        n,
        k,
    )
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(a, b, out, kind, alpha, beta, activation, out_dtype, layout)
    kern, odt, fn = plan
    # the values of the kernel's runtime scalars, passed after its tensors
    scalars = [v for v, compiled in ((alpha, kern.alpha), (beta, kern.beta)) if compiled == RUNTIME]
    if out is None:
        if beta != 0.0:
            raise GemmError(
                f"beta={beta:g} adds C: pass out=, the (M, N) tensor C is read from and D written to"
            )
        if m == 0 or n == 0:
            return torch.empty((m, n), dtype=odt, device=dev)
        out = torch.empty((m, n), dtype=odt, device=dev)
    elif out.shape != (m, n) or out.device != dev:
        raise GemmError(
            f"out must be a ({m}, {n}) tensor on {dev}, got {tuple(out.shape)} on {out.device}"
        )
    elif m == 0 or n == 0:
        return out
    if _major(a) != layout[0] or _major(b) != layout[1] or not _rows_ok(out):
        bad = [x for x, t in (("a", a), ("b", b)) if _major(t) is None]
        bad += [] if _rows_ok(out) else ["out"]
        raise GemmError(
            f"{', '.join(bad)}: each needs last stride 1, rows whose byte stride is a multiple of 16 "
            "and a 16-byte aligned base (TMA); .contiguous() gives that when K and N are multiples of 8"
            " (a and b may instead be the transpose of such a tensor, e.g. b = w.t(), where a "
            "kernel takes that layout)"
        )
    if bias is not None and (
        bias.device != dev or bias.dtype != odt or bias.stride(0) != 1 or bias.data_ptr() % 16
    ):
        raise GemmError(
            f"bias must be a contiguous {odt} tensor on {dev} with a 16-byte aligned base, "
            f"got {bias.dtype} on {bias.device}"
        )
    args = (a, b, out) if bias is None else (a, b, out, bias)
    with _on_device(dev):
        if kern.workspace_elems:
            fn(*args, _workspace(kern, dev), *scalars)
        else:
            fn(*args, *scalars)
    return out


# ---- epilogue-function kernels -----------------------------------------------------------------

# what an epilogue function's argument of each kind must be (Kernel.fn_args)
_FN_KIND_SHAPE = {"device_scalar": "() or (1,)", "row": "(M,) or (M, 1)", "col": "(N,) or (1, N)"}
GATED_BLOCK = 8  # a gated pair's weight: gate and up rows interleaved in blocks of 8


def interleave_gate_up(w: torch.Tensor, block: int = GATED_BLOCK) -> torch.Tensor:
    """A checkpoint's fused [gate; up] weight w (2F, K) (gate rows first, as nn.Linear keeps a
    merged gate_up_proj) reordered once for the gated-pair kernels (epilogue functions with Gate
    and Up, e.g. swiglu, geglu): rows g0..g7, u0..u7, g8..g15, u8..u15, ... (F a multiple of 8).
    Returns a new contiguous tensor; gemm_fn / gated_mm(x, interleave_gate_up(w)) then computes
    fn(x @ W_gate^T, x @ W_up^T), (M, F)."""
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or w.shape[0] % (2 * block):
        shape = tuple(w.shape) if isinstance(w, torch.Tensor) else type(w).__name__
        raise GemmError(
            f"interleave_gate_up takes a [gate; up] weight (2F, K) with F a multiple of {block}, "
            f"got {shape}"
        )
    f, k = w.shape[0] // 2, w.shape[1]
    gate, up = w[:f].reshape(f // block, block, k), w[f:].reshape(f // block, block, k)
    return torch.stack((gate, up), dim=1).reshape(2 * f, k).contiguous()


def _fn_operands(a, b) -> None:
    """a (M, K) and b (N, K) torch tensors on one CUDA device, from their metadata only (fake
    tensors too), for the epilogue-function calls; GemmError otherwise."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise GemmError("a and b must be torch tensors")
    if a.device.type != "cuda" or b.device != a.device:
        raise GemmError(f"a and b must be on one CUDA device, got {a.device} and {b.device}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise GemmError(f"expected a (M, K) and b (N, K), got {tuple(a.shape)}, {tuple(b.shape)}")


def _by_name(kern: Kernel) -> bool:
    """Whether gemm_fn calls `kern`: an epilogue function, row_sumsq or block_quant kernel."""
    return kern.fn is not None or kern.row_partials is not None or kern.block_quant is not None


def gemm_fn(name: str, a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
            row_partials: torch.Tensor | None = None, scales: torch.Tensor | None = None,
            **fn_args) -> torch.Tensor:  # fmt: skip
    """D = the epilogue function of kernel `name` (a Kernel with `fn`, cutegemm.KERNELS) applied
    to A @ B^T, its arguments by keyword as Kernel.fn_args names them: "scalar" a host float,
    "device_scalar" a 0-d float32 CUDA tensor (read at launch: a CUDA graph replays with its new
    value), "row" float32 (M,) or (M, 1), "col" float32 (N,) or (1, N). a (M, K), b (N, K)
    K-major, of the kernel's dtype; out (M, N) of its out dtype, or None to allocate it. "tile"
    an (M, N) tensor of the out dtype (e.g. a residual), last stride 1, 16-byte aligned rows. A
    gated pair's kernel (Kernel.fn_gated): b is interleave_gate_up's (N, K) and out (M, N / 2).
    A row_sumsq kernel (Kernel.row_partials; with or without a function) also writes
    row_partials, a contiguous float32 CUDA tensor (row_partial_count(name, N), M): the partial
    sums of squares of D's rows, every element overwritten (gemm_sumsq allocates and adds them).
    A block_quant kernel (Kernel.block_quant) writes D as float8_e4m3fn and scales, a float32
    CUDA tensor (M, scale_block_count(name, N)) with strides (1, M) (the transpose of a
    contiguous (blocks, M) tensor, as torch._scaled_mm's 1 x 128 blockwise scales): scales[i, j]
    times D[i, j * block:(j + 1) * block] is the value (gemm_block_quant allocates it).
    Eager only (not a torch op yet); every check raises GemmError before anything is launched.
    A kernel's name from before the rename (cutegemm._renames) still works, with a warning."""
    name = current(name)
    kern = next((k for k in KERNELS if k.name == name), None)
    if kern is None or not _by_name(kern):
        names = sorted(k.name for k in KERNELS if _by_name(k))
        raise GemmError(
            f"no epilogue-function, row_sumsq or block_quant kernel {name!r}; there are: "
            f"{', '.join(names)}"
        )
    want = {arg for arg, _ in kern.fn_args}
    if set(fn_args) != want:
        raise GemmError(
            f"{name}'s epilogue function {kern.fn} takes {', '.join(sorted(want))} by keyword, "
            f"got {', '.join(sorted(fn_args)) or 'none'}"
            if kern.fn is not None
            else f"{name} has no epilogue function: it takes no arguments besides a, b, out and "
            f"row_partials, got {', '.join(sorted(fn_args))}"
        )
    if (row_partials is None) != (kern.row_partials is None):
        raise GemmError(
            f"{name} writes row sums of squares: pass row_partials=, a float32 "
            "(row_partial_count(name, N), M) CUDA tensor (or call gemm_sumsq)"
            if row_partials is None
            else f"{name} has no row_sumsq: it writes no row_partials"
        )
    if (scales is None) != (kern.block_quant is None):
        raise GemmError(
            f"{name} quantizes D per block: pass scales=, a float32 (M, "
            "scale_block_count(name, N)) CUDA tensor with strides (1, M) (or call "
            "gemm_block_quant)"
            if scales is None
            else f"{name} has no block_quant: it writes no scales"
        )
    _fn_operands(a, b)
    dev = a.device
    (m, k), n = a.shape, b.shape[0]
    if a.dtype != _TORCH[kern.dtype] or b.dtype != _TORCH[kern.dtype]:
        raise GemmError(f"{name} takes {_TORCH[kern.dtype]} a and b, got {a.dtype}, {b.dtype}")
    gpu, arch = _device(dev.index)
    if kern.arch != arch:
        raise GemmError(f"{name} is an {kern.arch} kernel; this GPU ({gpu}) runs {arch}")
    if k == 0:
        raise GemmError(f"K=0: a ({m}, 0) and b ({n}, 0) have nothing to reduce")
    why = _refusal(kern, m, n, k)
    if why:
        raise GemmError(f"{name} cannot take M={m}, N={n}, K={k}: {why}")
    if _major(a) != "k" or _major(b) != "k":
        raise GemmError("a and b must be K-major (last stride 1, 16-byte aligned rows)")
    values = []
    for arg, kind in kern.fn_args:
        v = fn_args[arg]
        if kind == "scalar":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not abs(v) <= F32_MAX:
                raise GemmError(f"{arg} must be a finite float32 number, got {v!r}")
            values.append(float(v))
            continue
        if kind == "tile":
            odt = _TORCH[kern.out_dtype]
            if not isinstance(v, torch.Tensor) or tuple(v.shape) != (m, n) or v.dtype != odt \
                    or v.device != dev or not _rows_ok(v):  # fmt: skip
                got = f"{v.dtype} {tuple(v.shape)} on {v.device}" if isinstance(v, torch.Tensor) \
                    else type(v).__name__  # fmt: skip
                raise GemmError(
                    f"{arg} must be an ({m}, {n}) {odt} tensor on {dev} with last stride 1 and "
                    f"16-byte aligned rows, got {got}"
                )
            values.append(v)
            continue
        extent = {"device_scalar": 1, "row": m, "col": n}[kind]
        ok = isinstance(v, torch.Tensor) and v.dtype == torch.float32 and v.dim() <= 2
        if not ok or v.numel() != extent or not v.is_contiguous() or v.device != dev:
            got = f"{v.dtype} {tuple(v.shape)} on {v.device}" if isinstance(v, torch.Tensor) else (
                type(v).__name__)  # fmt: skip
            raise GemmError(
                f"{arg} must be a contiguous float32 tensor of shape {_FN_KIND_SHAPE[kind]} on "
                f"{dev}, got {got}"
            )
        values.append(v.reshape(-1))
    if row_partials is not None:
        parts = _row_partial_count(kern, n)
        ok = isinstance(row_partials, torch.Tensor) and row_partials.dtype == torch.float32
        if not ok or tuple(row_partials.shape) != (parts, m) or row_partials.device != dev \
                or not row_partials.is_contiguous():  # fmt: skip
            got = f"{row_partials.dtype} {tuple(row_partials.shape)} on {row_partials.device}" \
                if isinstance(row_partials, torch.Tensor) else type(row_partials).__name__  # fmt: skip
            raise GemmError(
                f"row_partials must be a contiguous float32 tensor of shape "
                f"(row_partial_count(name, N), M) = ({parts}, {m}) on {dev}, got {got}"
            )
    if scales is not None:
        _check_scales(scales, m, -(-n // kern.block_quant), dev)
    odt = _TORCH[kern.out_dtype]
    n_out = n // 2 if kern.fn_gated else n  # a gated pair: one column per gate and up pair
    if out is None:
        out = torch.empty((m, n_out), dtype=odt, device=dev)
    elif out.shape != (m, n_out) or out.device != dev or out.dtype != odt or not _rows_ok(out):
        raise GemmError(f"out must be a contiguous ({m}, {n_out}) {odt} tensor on {dev}")
    if m and n:
        extra = [] if row_partials is None else [row_partials]
        if scales is not None:
            extra.append(scales.t())  # the kernel writes the (blocks, M) storage
        with _on_device(dev):
            _launch_fn(kern, _compiled(kern, arch, dev.index), a, b, out, values + extra)
    elif row_partials is not None:
        row_partials.zero_()  # N = 0: every row's sum of squares is 0
    return out


def _check_scales(scales, m: int, blocks: int, dev: torch.device) -> None:
    """GemmError unless `scales` is a float32 (m, blocks) tensor on dev with strides (1, m)."""
    ok = isinstance(scales, torch.Tensor) and scales.dtype == torch.float32 and scales.dim() == 2
    if not ok or tuple(scales.shape) != (m, blocks) or scales.device != dev \
            or not scales.t().is_contiguous():  # fmt: skip
        got = f"{scales.dtype} {tuple(scales.shape)} strides {scales.stride()} on {scales.device}" \
            if isinstance(scales, torch.Tensor) else type(scales).__name__  # fmt: skip
        raise GemmError(
            f"scales must be a float32 tensor of shape (M, scale_block_count(name, N)) = ({m}, "
            f"{blocks}) with strides (1, M) on {dev} (e.g. torch.empty({blocks}, {m}).t()), got "
            f"{got}"
        )


def _row_partial_count(kern: Kernel, n: int) -> int:
    """P of a row_sumsq kernel for N = n (the kernel file's row_partial_count)."""
    tile, per_tile = kern.row_partials
    return -(-n // tile) * per_tile


def gemm_sumsq(name: str, a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
               row_partials: torch.Tensor | None = None,
               **fn_args) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(D, s) by row_sumsq kernel `name`: D as gemm_fn computes it, and s (M,) float32 the sum of
    the squares of each row of D, of the f32 values the kernel stores (after the epilogue
    function, before the conversion to D's dtype): e.g. the next RMSNorm's
    rsqrt(s / N + eps). The kernel writes row_partials (P, M) (allocated here unless given; see
    gemm_fn), each partial by one thread in a fixed order, and s = row_partials.sum(0), a
    fixed-order torch reduction: the same bits on every run. GemmError before any launch
    otherwise."""
    kern = next((k for k in KERNELS if k.name == name), None)
    if kern is None or kern.row_partials is None:
        names = sorted(k.name for k in KERNELS if k.row_partials is not None)
        raise GemmError(f"no row_sumsq kernel {name!r}; there are: {', '.join(names)}")
    _fn_operands(a, b)
    if row_partials is None:
        m, n = a.shape[0], b.shape[0]
        row_partials = torch.empty(
            (_row_partial_count(kern, n), m), dtype=torch.float32, device=a.device
        )
    out = gemm_fn(name, a, b, out=out, row_partials=row_partials, **fn_args)
    return out, row_partials.sum(0)


def gemm_block_quant(name: str, a: torch.Tensor, b: torch.Tensor, *,
                     out: torch.Tensor | None = None, scales: torch.Tensor | None = None,
                     **fn_args) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(D, scales) by block_quant kernel `name`: D (M, N) float8_e4m3fn and scales (M,
    ceil(N / block)) float32 with strides (1, M), one per row and block of Kernel.block_quant
    columns, D * scale the value gemm_fn's function (or the plain product) computes: amax of the
    block's f32 values / 448 (1 where the block is all zero). The layout torch._scaled_mm's
    1 x 128 blockwise scales take: the next FP8 GEMM reads D and scales as they are. out and
    scales are allocated here unless given (see gemm_fn); GemmError before any launch
    otherwise."""
    kern = next((k for k in KERNELS if k.name == current(name)), None)
    if kern is None or kern.block_quant is None:
        names = sorted(k.name for k in KERNELS if k.block_quant is not None)
        raise GemmError(f"no block_quant kernel {name!r}; there are: {', '.join(names)}")
    _fn_operands(a, b)
    if scales is None:
        m, n = a.shape[0], b.shape[0]
        scales = torch.empty((-(-n // kern.block_quant), m), dtype=torch.float32,
                             device=a.device).t()  # fmt: skip
    out = gemm_fn(name, a, b, out=out, scales=scales, **fn_args)
    return out, scales


def _launch_fn(kern: Kernel, compiled, a, b, out, values) -> None:
    """One launch of an epilogue-function kernel: a split-K or stream-K kernel takes its workspace
    before the function's arguments (a row_sumsq kernel's row_partials come last, in `values`)."""
    ws = [_workspace(kern, a.device)] if kern.workspace_elems else []
    compiled(a, b, out, *ws, *values)


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
              out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:  # fmt: skip
    """torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=...) for float8_e4m3fn a (M, K) and
    b (N, K): gemm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype) (0-d scales: a
    per-tensor kernel; scale_a (M, 1) / (M,) with scale_b (1, N) / (N,): a row-wise one; the
    dispatcher's pick among them). GemmError before any launch otherwise."""
    return gemm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)


# ---- gemm() with FP8 scales or a device alpha: epilogue-function kernels -------------------------

# what gemm()'s tensor arguments select: the library function (specs/epilogues/library.py) and its
# arguments after the accumulator, as the registry records them (Kernel.fn, Kernel.fn_args)
_FN_FORMS = {
    "scale_per_tensor": (("scale_a", "device_scalar"), ("scale_b", "device_scalar")),
    "scale_rowwise": (("scale_a", "row"), ("scale_b", "col")),
    "device_alpha": (("alpha", "device_scalar"),),
}
_FN_WORDS = {
    "scale_per_tensor": "per-tensor scales",
    "scale_rowwise": "row-wise scales",
    "device_alpha": "a device alpha",
}
# (arch, fn, dtype, out dtype) -> the library function's kernels (K-major a and b)
_BY_FN: dict[tuple, list[Kernel]] = {}
for _k in KERNELS:
    if (
        _k.fn in _FN_FORMS
        and _k.fn_args == _FN_FORMS[_k.fn]
        and _k.a_major == _k.b_major == "k"
        and _k.row_partials is None  # row_sumsq kernels take row_partials: gemm_fn only
        and _k.block_quant is None  # block_quant kernels take scales: gemm_fn only
    ):
        _BY_FN.setdefault((_k.arch, _k.fn, _k.dtype, _k.out_dtype), []).append(_k)
_ONES: dict[int, torch.Tensor] = {}  # device index -> a 0-d float32 1 (e4m3 device alpha)


def _fn_offered(arch: str) -> str:
    """What gemm()'s scales and device alpha are served with on `arch`, for a refusal."""
    parts = []
    for fn, words in _FN_WORDS.items():
        pairs = sorted(f"{d} -> {o}" for a, f, d, o in _BY_FN if a == arch and f == fn)
        if fn == "device_alpha":
            pairs += [f"e4m3 -> {o} (a per-tensor kernel)" for a, f, d, o in sorted(_BY_FN)
                      if a == arch and f == "scale_per_tensor"]  # fmt: skip
        parts.append(f"{words}: {', '.join(pairs) or 'none'}")
    return "; ".join(parts)


def _choose_fn(
    gpu: str, arch: str, fn: str, dtype: str, out_dtype: str, m: int, n: int, k: int,
    use_cache: bool = True,
) -> Kernel:  # fmt: skip
    """The kernel of library function `fn` for (M, N, K): first those whose plain twin
    (Kernel.twin: the same spec without the function; where none, a plain kernel that differs
    only in its store path, direct or TMA) the dispatcher ranks from measurements for
    the plain product of these dtypes (the user's, then the cost model's for kernels measured
    near this M, else the table's exact entry), in its order; then every other in the rule's
    order (a twin measured far from M is not extrapolated, as for plain calls); the first that
    takes the shape."""
    kernels = _BY_FN.get((arch, fn, dtype, out_dtype))
    if not kernels:
        raise GemmError(
            f"no {arch} kernel computes {dtype} -> {out_dtype} with {_FN_WORDS[fn]} "
            f"({fn}); served: {_fn_offered(arch)} (nothing was launched)"
        )
    cls = (dtype, out_dtype, 1.0, 0.0, None, None)
    plain = _BY_CLASS.get((arch, *cls), [])
    twins: dict[str, list[Kernel]] = {}
    for kern in sorted(kernels, key=lambda kern: kern.twin is None):  # exact twins first
        # no exact twin: the plain kernel that differs only in its store path (direct / TMA)
        shape = kern[4:11]  # tile, cluster, CTA group, scheduler, splits, swap AB, mainloop
        proxy = next((p.name for p in plain if p[4:11] == shape), None)
        twins.setdefault(kern.twin or proxy, []).append(kern)
    names = list(_tuned().cached_order(gpu, dtype, out_dtype, m, n, k) if use_cache else ())
    model = _table(gpu, arch, MODELS)
    if model is not None:
        fits = model[2]["kernels"]
        names += [kern.name for kern in _model.rank(plain, m, n, k, model[2])
                  if _model.measured_near(m, fits[kern.name])]  # fmt: skip
    if len(names) == 0:
        names += _measured_order(gpu, arch, dtype, out_dtype, m, n, k)
    ordered = [kern for name in dict.fromkeys(names) for kern in twins.get(name, ())]
    ordered += [kern for kern in _rule_order(kernels, m) if kern not in ordered]
    refusals = []
    for kern in ordered:
        why = _refusal(kern, m, n, k)
        if why is None:
            return kern
        refusals.append(f"{kern.name}: {why}")
    raise GemmError(
        f"no {arch} {dtype} -> {out_dtype} kernel with {_FN_WORDS[fn]} takes M={m}, N={n}, "
        f"K={k}: " + " | ".join(refusals)
    )


def _device_alpha_fn(dtype: torch.dtype) -> str:
    """The library function of gemm(..., alpha=<0-d tensor>): e4m3 runs the per-tensor scale
    kernel (scale_a = alpha, scale_b = 1), other dtypes device_alpha."""
    return "scale_per_tensor" if dtype == torch.float8_e4m3fn else "device_alpha"


def _is_scalar(t) -> bool:
    return isinstance(t, torch.Tensor) and t.dim() <= 1 and t.numel() == 1


def _fn_call(a, b, alpha, beta, bias, activation, scale_a, scale_b) -> tuple[str, list]:
    """gemm()'s arguments with a scale or a tensor alpha, checked from their metadata only (they
    may be fake tensors under torch.compile): the library function and its tensor arguments in
    its order; GemmError for what no function kernel serves, naming what would be."""
    tensors = [t for t in (a, b) if not isinstance(t, torch.Tensor)]
    if tensors:
        raise GemmError("a and b must be torch tensors")
    if isinstance(beta, torch.Tensor):
        raise GemmError(
            "beta as a tensor: no kernel reads C with a device beta yet (an epilogue function "
            "cannot read C); pass beta as a float (a runtime-beta kernel reads out at each "
            "launch) or add beta * C in torch (nothing was launched)"
        )
    if bias is not None or activation is not None or beta != 0.0:
        raise GemmError(
            "scale_a / scale_b or a tensor alpha with bias, activation or beta: no kernel fuses "
            "them together; served: D = (A @ B^T) * scale_a * scale_b (out_dtype), or "
            "D = alpha * (A @ B^T); add the rest in torch (nothing was launched)"
        )
    _fn_operands(a, b)
    dev = a.device
    m, n = a.shape[0], b.shape[0]

    def check(name: str, t, shapes: str) -> torch.Tensor:
        if not isinstance(t, torch.Tensor):
            raise GemmError(f"{name} must be a float32 tensor of shape {shapes}, got "
                            f"{type(t).__name__}")  # fmt: skip
        if t.dtype != torch.float32 or t.device != dev or not t.is_contiguous():
            raise GemmError(
                f"{name} must be a contiguous float32 tensor on {dev} of shape {shapes}, got "
                f"{t.dtype} {tuple(t.shape)} on {t.device} (nothing was launched)"
            )
        return t.reshape(-1)

    if scale_a is None and scale_b is None:
        if not isinstance(alpha, torch.Tensor) or not _is_scalar(alpha):
            shape = tuple(alpha.shape) if isinstance(alpha, torch.Tensor) else alpha
            raise GemmError(f"a tensor alpha must be 0-d (one value), got {shape}")
        fn = _device_alpha_fn(a.dtype)
        one = [None] if fn == "scale_per_tensor" else []  # None: a 1 for scale_b
        return fn, [check("alpha", alpha, "()"), *one]
    if scale_a is None or scale_b is None:
        raise GemmError("scale_a and scale_b come together (as torch._scaled_mm takes them)")
    if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
        raise GemmError(
            f"scale_a / scale_b apply to float8_e4m3fn a and b (as torch._scaled_mm's), got "
            f"{a.dtype}, {b.dtype}; for 16-bit inputs pass alpha (a float or a 0-d tensor)"
        )
    if isinstance(alpha, torch.Tensor) or alpha != 1.0:
        raise GemmError(
            "alpha with scale_a / scale_b: fold alpha into scale_a (one kernel multiplies by "
            "scale_a * scale_b)"
        )
    sa = tuple(scale_a.shape) if isinstance(scale_a, torch.Tensor) else None
    sb = tuple(scale_b.shape) if isinstance(scale_b, torch.Tensor) else None
    if _is_scalar(scale_a) and _is_scalar(scale_b) and scale_a.dim() == scale_b.dim() == 0:
        fn, shapes = "scale_per_tensor", ("()", "()")
    elif sa in ((m,), (m, 1)) and sb in ((n,), (1, n)):
        fn, shapes = "scale_rowwise", (f"({m}, 1) or ({m},)", f"(1, {n}) or ({n},)")
    else:
        raise GemmError(
            f"scale_a and scale_b: scales must both be 0-d float32 tensors (per-tensor) or "
            f"scale_a (M, 1) / (M,) and scale_b (1, N) / (N,) (row-wise; M={m}, N={n}), got {sa} "
            f"and {sb} (nothing was launched)"
        )
    return fn, [check("scale_a", scale_a, shapes[0]), check("scale_b", scale_b, shapes[1])]


def _one(dev: torch.device) -> torch.Tensor:
    """A 0-d float32 1 on `dev`, made once outside CUDA graph capture (e4m3 device alpha: the
    per-tensor kernel with scale_b = 1)."""
    one = _ONES.get(dev.index)
    if one is None:
        if torch.cuda.is_current_stream_capturing():
            raise GemmError(
                "an e4m3 gemm with a tensor alpha: call it once outside CUDA graph capture first"
            )
        one = _ONES[dev.index] = torch.ones((), dtype=torch.float32, device=dev)
    return one.reshape(-1)


def _eager_fn(a, b, out, fn: str, values: list, out_dtype) -> torch.Tensor:
    """D = fn(A @ B^T, *values) by the kernel _choose_fn picks (values: _fn_call's, checked)."""
    dev = a.device
    (m, k), n = a.shape, b.shape[0]
    if a.dtype != b.dtype:
        raise GemmError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if out is not None and out_dtype is not None and out.dtype != out_dtype:
        raise GemmError(f"out is {out.dtype} but out_dtype={out_dtype}")
    key = (dev.index, fn, a.dtype, out_dtype if out is None else out.dtype, m, n, k)
    plan = _PLANS.get(key)
    if plan is None:
        cls = _class(a.dtype, key[3], 1.0, 0.0, None, None)
        if k == 0:
            raise GemmError(f"K=0: a ({m}, 0) and b ({n}, 0) have nothing to reduce")
        gpu, arch = _device(dev.index)
        kern = _choose_fn(gpu, arch, fn, cls[0], cls[1], m, n, k)
        plan = _PLANS[key] = (kern, _TORCH[cls[1]], _compiled(kern, arch, dev.index))
    kern, odt, compiled = plan
    if _major(a) != "k" or _major(b) != "k":
        raise GemmError(
            "with scales or a tensor alpha, a and b must be K-major: last stride 1, rows whose "
            "byte stride is a multiple of 16 and a 16-byte aligned base (.contiguous() gives "
            "that when K is a multiple of 16); no MN-major function kernel is generated"
        )
    if out is None:
        out = torch.empty((m, n), dtype=odt, device=dev)
    elif out.shape != (m, n) or out.device != dev or not _rows_ok(out):
        raise GemmError(
            f"out must be a ({m}, {n}) tensor on {dev} with 16-byte aligned rows, got "
            f"{tuple(out.shape)} on {out.device}"
        )
    if m and n:
        with _on_device(dev):
            _launch_fn(kern, compiled, a, b, out, [_one(dev) if v is None else v for v in values])
    return out


@torch.library.custom_op(f"{__package__}::gemm_fn", mutates_args=())
def _gemm_fn_op(
    a: torch.Tensor,
    b: torch.Tensor,
    fn: str,
    args: list[torch.Tensor | None],
    out_dtype: torch.dtype | None,
) -> torch.Tensor:
    """D = fn(A @ B^T, *args) as a new tensor: gemm() with scales or a tensor alpha."""
    return _eager_fn(a, b, None, fn, args, out_dtype)


@_gemm_fn_op.register_fake
def _(a, b, fn, args, out_dtype):
    if out_dtype is None:
        out_dtype = _TORCH[_DEFAULT_OUT.get(_NAME.get(a.dtype), "bf16")]
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out_dtype)


def _gemm_with_fn(a, b, out, bias, alpha, beta, activation, out_dtype, scale_a, scale_b):
    """gemm() with scale_a / scale_b or a tensor alpha: checks, then the op (torch.compile) or
    the eager call."""
    fn, values = _fn_call(a, b, alpha, beta, bias, activation, scale_a, scale_b)
    if _needs_grad(a, b, alpha, scale_a, scale_b):
        raise GemmError(
            "scales or a tensor alpha with inputs that require grad: not differentiable yet; "
            "pass alpha as a float, or multiply by it in torch"
        )
    if torch.compiler.is_compiling():
        d = _gemm_fn_op(a, b, fn, values, out_dtype if out is None else out.dtype)
        if out is None:
            return d
        out.copy_(d)
        return out
    return _eager_fn(a, b, out, fn, values, out_dtype)


def _act_wide(kern: Kernel) -> tuple[int, int]:
    """`kern`'s tile along the activation's M and along the weight's N (swap AB exchanges them)."""
    return (kern.tile[1], kern.tile[0]) if kern.swap_ab else (kern.tile[0], kern.tile[1])


DECODE_M = 256  # up to this M a gated or residual kernel's time is its weight stream


def _weight_passes(kern: Kernel, m: int, n: int, sms: int) -> float:
    """About how many times `kern` streams the (N, K) weight at M, in full-GPU passes: once per
    activation tile along M (a swap-AB tile narrower than M re-reads every weight tile),
    stretched where its CTAs (tiles x K splits) leave SMs idle. Up to DECODE_M the weight stream
    is the time, and a last, partial wave streams its share on a few SMs: the stretch counts
    every wave the tiles start (148 tiles on 132 SMs are two waves, 1.78 passes; on the H100
    Qwen2.5-7B's MLP block at M = 1 ran 33% slower with that 128x256 gated tile than with the
    16-wide swap tile, 296 tiles in three waves, 1.34 passes). Above it only a GPU left partly
    idle counts (there the MMA sets the time and a tail wave costs its share). Orders the
    kernels called by name, which have no cost model: by the rule order alone a 16-wide swap
    tile ran a gated MLP block at 0.24x of torch at M = 128 (BENCHMARKS.md, the MLP block).
    Rounded to 2 decimals, so that equal stretches tie."""
    act, wide = _act_wide(kern)
    bands = math.ceil(m / act)
    tiles = bands * math.ceil(n / wide) * max(1, kern.splits)
    if m <= DECODE_M:
        fill = tiles / (math.ceil(tiles / sms) * sms)
    else:
        fill = min(1.0, tiles / sms)
    return round(bands / fill, 2)


def _activation_passes(kern: Kernel, n: int) -> int:
    """How many times `kern` streams the (M, K) activation: once per weight tile along N."""
    return math.ceil(n / _act_wide(kern)[1])


def _pass_order(kernels: list[Kernel], m: int, n: int, sms: int) -> list[Kernel]:
    """`kernels` by _weight_passes at (M, N), then above DECODE_M by _activation_passes (at
    prefill a 256-wide tile reads x half as often as a 128-wide one with the same weight passes;
    at decode x is a few rows that stay in L2: Llama-3.1-8B's block at M = 1 ran 20% slower with
    the 256-wide gated tile, the fewest passes over x, than with the 16-wide swap tile), ties in
    the rule order."""
    return sorted(
        _rule_order(kernels, m),
        key=lambda kern: (
            _weight_passes(kern, m, n, sms),
            _activation_passes(kern, n) if m > DECODE_M else 0,
        ),
    )


def gated_mm(x: torch.Tensor, w: torch.Tensor, fn: str = "swiglu", *,
             out: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """fn(x @ W_gate^T, x @ W_up^T) (M, F) for x (M, K) and w = interleave_gate_up(gate_up)
    (2F, K): of the gated-pair kernels with epilogue function `fn` ("swiglu", "geglu") of this
    GPU's arch and x's dtype that take the shape, the one that streams w the fewest times
    (_weight_passes: at decode M every wave its tiles start counts whole), then above DECODE_M x
    the fewest (_activation_passes), ties in the rule order (swap AB for small M where one
    exists). GemmError before any launch otherwise."""
    if not (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)):
        raise GemmError("x and w must be torch tensors")
    if x.dim() != 2 or w.dim() != 2 or x.device.type != "cuda":
        raise GemmError(f"expected CUDA x (M, K) and w (2F, K), got {tuple(x.shape)}, "
                        f"{tuple(w.shape)} on {x.device}")  # fmt: skip
    _, arch = _device(x.device.index)
    mine = [k for k in KERNELS if k.fn == fn and k.fn_gated and k.arch == arch
            and _TORCH[k.dtype] == x.dtype]  # fmt: skip
    if not mine:
        raise GemmError(f"no {arch} gated-pair kernel computes {fn} for {x.dtype}")
    m, n, k = x.shape[0], w.shape[0], x.shape[1]
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    fits = [kern for kern in _pass_order(mine, m, n, sms) if _refusal(kern, m, n, k) is None]
    if not fits:
        raise GemmError(
            f"no {fn} kernel takes M={m}, N={n}, K={k}: "
            + "; ".join(f"{kern.name}: {_refusal(kern, m, n, k)}" for kern in mine)
        )
    return gemm_fn(fits[0].name, x, w, out=out)


# ---- the torch op ------------------------------------------------------------------------------


@torch.library.custom_op(f"{__package__}::gemm", mutates_args=())
def _gemm_op(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor | None,
    bias: torch.Tensor | None,
    alpha: float,
    beta: float,
    activation: str | None,
    out_dtype: torch.dtype | None,
) -> torch.Tensor:
    """D = activation(alpha * a @ b.T + beta * c + bias) as a new tensor (c is only read)."""
    out = c.clone() if c is not None else None
    return _eager(a, b, out, bias, alpha, beta, activation, out_dtype)


@_gemm_op.register_fake
def _(a, b, c, bias, alpha, beta, activation, out_dtype):
    if out_dtype is None:
        out_dtype = (
            c.dtype if c is not None else _TORCH[_DEFAULT_OUT.get(_NAME.get(a.dtype), "bf16")]
        )
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out_dtype)


def _needs_grad(*tensors) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in tensors
    )


def _setup_context(ctx, inputs, output) -> None:
    a, b, c, bias, alpha, beta, _, _ = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta = alpha, beta
    ctx.bias_kind = None if bias is None else _bias_kind(bias, a.shape[0], b.shape[0])
    ctx.has_c = c is not None


def _natural_major(x: torch.Tensor) -> str:
    """x's major mode from its strides alone (the backward may run on fake tensors, which have
    no data pointer): "mn" where it is the transpose of a row-major tensor with 16-byte aligned
    rows, else "k"."""
    s0, s1 = x.stride()
    return "mn" if s0 == 1 and s1 >= x.shape[0] and (s1 * x.itemsize) % 16 == 0 else "k"


def _backward_operand(x: torch.Tensor, major: str) -> torch.Tensor:
    """x (rows, K) as a backward operand in major mode `major`, its reduction (last) dimension
    zero-padded to a multiple of 16 (what every kernel's K takes; zeros add nothing), e.g. M = 1
    for dB. K-major: contiguous (a copy unless it is already). MN-major: x is the transpose of a
    row-major tensor, used as it is (no copy) unless K needs padding, which pads that tensor's
    rows (still MN-major)."""
    pad = -x.shape[-1] % 16
    if major == "mn":
        return torch.nn.functional.pad(x.t(), (0, 0, 0, pad)).t() if pad else x
    return torch.nn.functional.pad(x, (0, pad)) if pad else x.contiguous()


def _backward_layout(a: torch.Tensor, b: torch.Tensor, dtype, device) -> tuple[str, str]:
    """The major modes the backward feeds a backward GEMM's operands in: their own where a kernel
    (plain, dtype -> dtype) takes that layout on this GPU, else K-major for one operand or both
    (transposed copies): MN-major kernels save the copies where they are generated."""
    natural = (_natural_major(a), _natural_major(b))
    _, arch = _device(device.index if device.index is not None else torch.cuda.current_device())
    name = _NAME[dtype]
    for layout in (natural, ("k", natural[1]), (natural[0], "k"), ("k", "k")):
        if layout == ("k", "k") or _BY_LAYOUT.get(
            (arch, name, name, 1.0, 0.0, None, None, *layout)
        ):
            return layout
    return ("k", "k")


def _backward(ctx, grad):
    """dA = alpha dD B, dB = alpha dD^T A, each the cutegemm op on the transposed views (dD, B^T
    for dA; dD^T, A^T for dB): MN-major operands where a kernel takes them, else K-major copies;
    dC = beta dD, dbias = the sum of dD over the other dim. The op, not _eager, so that
    torch.compile traces the backward too."""
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)
    da = db = None
    if ctx.needs_input_grad[0]:
        x, y = g, b.t()
        la, lb = _backward_layout(x, y, a.dtype, a.device)
        x, y = _backward_operand(x, la), _backward_operand(y, lb)
        da = _gemm_op(x, y, None, None, 1.0, 0.0, None, a.dtype)
        da = da * ctx.alpha if ctx.alpha != 1.0 else da
    if ctx.needs_input_grad[1]:
        x, y = g.t(), a.t()
        la, lb = _backward_layout(x, y, b.dtype, b.device)
        x, y = _backward_operand(x, la), _backward_operand(y, lb)
        db = _gemm_op(x, y, None, None, 1.0, 0.0, None, b.dtype)
        db = db * ctx.alpha if ctx.alpha != 1.0 else db
    dc = grad * ctx.beta if ctx.has_c and ctx.needs_input_grad[2] else None
    dbias = None
    if ctx.bias_kind is not None and ctx.needs_input_grad[3]:
        dbias = grad.sum(0 if ctx.bias_kind == "col" else 1)
    return da, db, dc, dbias, None, None, None, None


_gemm_op.register_autograd(_backward, setup_context=_setup_context)


def _refuse_grad(a, b, out, activation) -> None:
    """The cases whose gradient cutegemm does not compute: refused, never silently dropped."""
    if a.dtype == torch.float8_e4m3fn or b.dtype == torch.float8_e4m3fn:
        raise GemmError("float8_e4m3fn inputs that require grad: cutegemm has no FP8 backward")
    if activation is not None:
        raise GemmError(
            f"activation={activation!r} with inputs that require grad: the backward needs the "
            "pre-activation, which the fused kernel does not keep; apply the activation in torch"
        )
    if out is not None:
        raise GemmError(
            "out= with inputs that require grad: autograd needs a new output tensor (drop out=, "
            "or run under torch.no_grad())"
        )


def gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    alpha: float | torch.Tensor = 1.0,
    beta: float = 0.0,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
    scale_a: torch.Tensor | None = None,
    scale_b: torch.Tensor | None = None,
) -> torch.Tensor:
    """D = activation(alpha * a @ b.T + beta * out + bias), by the kernel tuned for GPU and shape.

    a (M, K) or (..., K) (leading dimensions flattened into M, as F.linear does; D then has them
    too) and b (N, K): CUDA tensors of one dtype (float16, bfloat16 or float8_e4m3fn), last
    stride 1, 16-byte aligned rows. out (M, N): written (and read when beta != 0); allocated when
    None. bias: length N (per column, like nn.Linear) or M (per row), in the output dtype.
    out_dtype: float16, bfloat16 or float32 (default: the input dtype; bfloat16 for float8).
    activation and bias must match a generated kernel (cutegemm.KERNELS); alpha and beta a kernel
    that compiles them in, else one that takes them at launch (alpha / beta = "runtime").
    a may instead be M-major (a = x.t() of a contiguous (K, M) x) and b N-major (b = w.t() of a
    contiguous (K, N) w, the weight of x @ w) where a generated kernel takes that layout
    (cutegemm.KERNELS' a_major, b_major); otherwise GemmError names the fix (never a silent copy).
    Differentiable for f16/bf16 without activation or out= (dA and dB by cutegemm kernels on the
    transposed views where a kernel takes that layout, else on transposed copies); the cases it
    cannot differentiate raise GemmError instead.
    FP8 scales, as torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=...) takes them:
    float8_e4m3fn a and b with scale_a and scale_b float32 CUDA tensors, both 0-d (per tensor)
    or scale_a (M, 1) / (M,) and scale_b (1, N) / (N,) (row-wise): D = (a @ b.T) * scale_a *
    scale_b, read at each launch (a captured CUDA graph replays with their new values).
    alpha may be a 0-d float32 CUDA tensor, read at each launch likewise (beta 0, no bias or
    activation). Such calls run epilogue-function kernels (Kernel.fn), each ranked where the
    dispatcher ranks its plain twin (Kernel.twin); they are not differentiable (GemmError).
    Raises GemmError, before any launch, for bad input or a call no kernel serves.
    Under torch.compile this is the op torch.ops.cutegemm.gemm (no graph break); with scales
    or a tensor alpha, torch.ops.cutegemm.gemm_fn.
    """
    if isinstance(a, torch.Tensor) and a.dim() > 2:
        lead = a.shape[:-1]
        if out is not None and out.shape[:-1] != lead:
            raise GemmError(
                f"out must have a's leading dimensions {tuple(lead)}, got {tuple(out.shape)}"
            )
        flat = None if out is None else out.view(-1, out.shape[-1])
        if isinstance(scale_a, torch.Tensor) and scale_a.dim() > 0:
            scale_a = scale_a.reshape(-1)  # row-wise over the leading dimensions: (M,)
        d = gemm(a.reshape(-1, a.shape[-1]), b, out=flat, bias=bias, alpha=alpha, beta=beta,
                 activation=activation, out_dtype=out_dtype, scale_a=scale_a,
                 scale_b=scale_b)  # fmt: skip
        return out if out is not None else d.view(*lead, d.shape[-1])
    if (
        scale_a is not None
        or scale_b is not None
        or isinstance(alpha, torch.Tensor)
        or isinstance(beta, torch.Tensor)
    ):
        return _gemm_with_fn(a, b, out, bias, alpha, beta, activation, out_dtype, scale_a, scale_b)
    grad = _needs_grad(a, b, bias)
    if grad:
        _refuse_grad(a, b, out, activation)
    if grad or torch.compiler.is_compiling():
        d = _gemm_op(
            a,
            b,
            out if beta != 0.0 else None,
            bias,
            alpha,
            beta,
            activation,
            out_dtype if out is None else out.dtype,
        )
        if out is None:
            return d
        out.copy_(d)
        return out
    return _eager(a, b, out, bias, alpha, beta, activation, out_dtype)
