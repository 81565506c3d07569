"""Call an exported kernel (``libNAME.so`` from codegen.export + build.sh) from torch.

Needs only the standard library and torch: no DSL, no other codegen module. This file can be
copied on its own to a machine that has the built libraries::

    from aot import AotKernel
    gemm = AotKernel("out/NAME/libNAME.so", "NAME")  # NAME: the kernel's, as codegen list says
    gemm(a, b, c)  # c = a @ b.T on the current stream; a (M, K), b (N, K), c (M, N)
    # a kernel whose spec adds a bias takes it after c: gemm(a, b, c, bias)

When ``NAME.json`` (written by the export) lies next to the library, the call checks dtypes and
the shape multiples the kernel was compiled for before launching; the library checks the
multiples again and returns cudaErrorInvalidValue rather than launching on a shape it cannot do.
K = 0 is refused like the Python entry points refuse it: a ValueError here, and the library's
own code for it (SHIM_ERROR_K_ZERO, -1, named by NAME_error_name / NAME_error_string) when it
is called directly.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

_TORCH_DTYPES = {  # CuTe DSL numeric type name -> torch dtype attribute
    "Float16": "float16",
    "BFloat16": "bfloat16",
    "Float32": "float32",
    "Float8E4M3FN": "float8_e4m3fn",
    "Float8E5M2": "float8_e5m2",
    "Int8": "int8",
    "Uint8": "uint8",
    "Int32": "int32",
}

_driver: ctypes.CDLL | None = None


def _load_driver() -> None:
    """The CUDA driver, process-wide, before any exported library (its runtime resolves it)."""
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)


class AotError(RuntimeError):
    pass


class AotKernel:
    """One exported GEMM: ``NAME_gemm(a, b, c, [bias,] m, n, k, lda, ldb, ldc, stream)`` via
    ctypes; the bias pointer is there when NAME.json says "bias" is "row" or "col"."""

    def __init__(self, lib_path: str | Path, name: str):
        self.name = name
        self.lib_path = Path(lib_path)
        _load_driver()
        self._lib = ctypes.CDLL(str(self.lib_path))
        try:
            fn = getattr(self._lib, f"{name}_gemm")
        except AttributeError:
            raise AotError(f"{self.lib_path} exports no {name}_gemm") from None
        meta_path = self.lib_path.with_name(f"{name}.json")
        self.meta: dict = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        self.bias: str | None = self.meta.get("bias")  # None, "row" (length M) or "col" (N)
        pointers = 4 if self.bias else 3
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * pointers + [ctypes.c_int] * 6 + [ctypes.c_void_p]
        self._fn = fn
        self._err_name = self._optional(f"{name}_error_name")
        self._err_string = self._optional(f"{name}_error_string")

    def _optional(self, symbol: str):
        f = getattr(self._lib, symbol, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            f.argtypes = [ctypes.c_int]
        return f

    def error_text(self, code: int) -> str:
        if self._err_name is None:
            return f"CUDA error {code}"
        name = (self._err_name(code) or b"?").decode()
        text = (self._err_string(code) or b"").decode() if self._err_string else ""
        kind = "error" if code < 0 else "CUDA error"  # negative: the shim's own (K = 0)
        return f"{kind} {code} ({name}: {text})" if text else f"{kind} {code} ({name})"

    def check(self, a, b, c, bias=None) -> list[str]:
        """Why this call cannot run (empty when it can); also what the library would reject."""
        import torch

        problems = []
        if not (a.is_cuda and b.is_cuda and c.is_cuda):
            return ["a, b and c must be CUDA tensors"]
        if not (a.device == b.device == c.device):
            problems.append(f"tensors on different devices: {a.device}, {b.device}, {c.device}")
        if a.dim() != 2 or b.dim() != 2 or c.dim() != 2:
            return [f"expected 2-D a, b, c, got {a.dim()}, {b.dim()}, {c.dim()} dimensions"]
        (m, k), n = a.shape, b.shape[0]
        if b.shape[1] != k or tuple(c.shape) != (m, n):
            got = f"{tuple(a.shape)}, {tuple(b.shape)}, {tuple(c.shape)}"
            return [f"expected a (M, K), b (N, K), c (M, N), got {got}"]
        io, out = self.meta.get("io_dtype"), self.meta.get("out_dtype")
        for t, label, want in ((a, "a", io), (b, "b", io), (c, "c", out)):
            wanted = getattr(torch, _TORCH_DTYPES.get(want or "", ""), None)
            if wanted is not None and t.dtype != wanted:
                problems.append(f"{label} must be {wanted}, got {t.dtype}")
        align = int(self.meta.get("align_bytes", 16))
        for t, label in ((a, "a"), (b, "b"), (c, "c")):
            if t.stride(1) != 1:
                problems.append(f"{label} must have last stride 1, got strides {tuple(t.stride())}")
            if t.data_ptr() % align:
                problems.append(f"{label}'s data must be {align}-byte aligned")
        values = {
            "m": m,
            "n": n,
            "k": k,
            "lda": a.stride(0),
            "ldb": b.stride(0),
            "ldc": c.stride(0),
        }
        if k == 0:
            # refused like cutegemm.gemm and the kernel file's launcher refuse it
            problems.append(f"K=0: a ({m}, 0) and b ({n}, 0) have nothing to reduce")
        for v, x in values.items():
            if v == "k" and x == 0:
                continue
            if not 0 < x < 2**31:
                problems.append(f"{v}={x} is out of range (1 .. 2^31-1)")
        for v, ld, extent in (("lda", "lda", k), ("ldb", "ldb", k), ("ldc", "ldc", n)):
            if values[ld] < extent:
                problems.append(f"{v}={values[ld]} is smaller than the row length {extent}")
        for v, mult in self.meta.get("multiples", {}).items():
            if v in values and values[v] % int(mult):
                problems.append(f"{v}={values[v]} is not a multiple of {mult}")
        problems += self._check_bias(bias, c, m if self.bias == "row" else n, align)
        return problems

    def _check_bias(self, bias, c, length: int, align: int) -> list[str]:
        if not self.bias:
            return [] if bias is None else [f"{self.name} takes no bias"]
        axis = "row" if self.bias == "row" else "column"
        if bias is None:
            return [f"{self.name} adds a bias per {axis} of C: pass bias, a ({length},) tensor"]
        if not bias.is_cuda or bias.device != c.device:
            return ["bias must be a CUDA tensor on c's device"]
        if bias.dim() != 1 or bias.shape[0] != length or bias.dtype != c.dtype:
            got = f"{bias.dtype} {tuple(bias.shape)}"
            return [f"bias must be a 1-D {c.dtype} tensor of length {length}, got {got}"]
        if bias.stride(0) != 1 or bias.data_ptr() % align:
            return [f"bias must be contiguous with a {align}-byte aligned base"]
        return []

    def __call__(self, a, b, c, bias=None):
        """C = A @ B^T (+ bias) on the current stream of c's device; returns c."""
        import torch

        problems = self.check(a, b, c, bias)
        if problems:
            raise ValueError(f"{self.name} cannot run this call: " + "; ".join(problems))
        (m, k), n = a.shape, b.shape[0]
        with torch.cuda.device(c.device):
            stream = torch.cuda.current_stream(c.device).cuda_stream
            pointers = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
            if self.bias:
                pointers.append(bias.data_ptr())
            rc = self._fn(
                *pointers,
                m,
                n,
                k,
                a.stride(0),
                b.stride(0),
                c.stride(0),
                stream,
            )
        if rc != 0:
            raise AotError(f"{self.name}: {self.error_text(rc)}")
        return c

    def __repr__(self) -> str:
        return f"AotKernel({str(self.lib_path)!r}, {self.name!r})"
