"""The GPU stages of the kernels package, as a user calls it: `cutegemm.gemm` checked against a
float32 torch reference for every epilogue the registry offers on this GPU, its errors,
torch.compile and CUDA-graph use, the first call with a warm disk cache; and the dispatcher's
pick timed beside torch in the same process, with host µs per call.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codegen.gpu import (
    Shape,
    capture_graph,
    input_sets,
    operand,
    reference,
    time_interleaved,
    tolerance,
    torch_dtype,
)
from codegen.spec import RUNTIME


def import_package(generated: Path):
    """cutegemm from `generated/` (or wherever it is installed when that folder lacks it)."""
    if (generated / "cutegemm" / "__init__.py").is_file():
        sys.path.insert(0, str(generated.resolve()))
    import cutegemm

    return cutegemm


@dataclass
class Check:
    what: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.passed else 'FAIL'} {self.what}: {self.detail}"


def _num(value: float | str) -> str:
    """alpha or beta as a label shows it: the number, or "runtime"."""
    return value if value == RUNTIME else f"{value:g}"


def _class_of(k) -> tuple:
    """What a kernel computes: (dtype, out dtype, alpha, beta, activation, bias)."""
    return (k.dtype, k.out_dtype, k.alpha, k.beta, k.activation, k.bias)


def _plain(k) -> bool:
    """A kernel gemm() dispatches to: no epilogue function, no row_sumsq, no block_quant (all
    called by name)."""
    return (
        getattr(k, "fn", None) is None
        and getattr(k, "row_partials", None) is None
        and getattr(k, "block_quant", None) is None
    )


def _classes(pkg, arch: str) -> list[tuple]:
    # epilogue-function kernels are checked by check_epilogue_fns (gemm_fn), not by gemm()
    return sorted(
        {_class_of(k) for k in pkg.KERNELS if k.arch == arch and _plain(k)},
        key=str,
    )


def _shapes(steps: tuple[int, int, int], count: int, rng: random.Random) -> list[tuple]:
    """Odd M where some kernel of the class takes any M (no tile divides it); N and K multiples
    of the smallest steps the class's kernels take (8 for TMA, 16 for e4m3 K)."""
    sm, sn, sk = steps

    def m_of(x: int) -> int:
        return 2 * x + 1 if sm == 1 else sm * (x + 1)

    fixed = [
        (m_of(0), 256, 512),
        (m_of(18), 1000, 1040),
        (m_of(166), 520, 2064),
        (m_of(500), 1536, 4096),
    ]
    fixed = [(m, -(-n // sn) * sn, -(-k // sk) * sk) for m, n, k in fixed]
    rand = [
        (
            m_of(rng.randint(0, 1100)),
            sn * rng.randint(1, 2400 // sn),
            sk * rng.randint(1, 4800 // sk),
        )
        for _ in range(count)
    ]
    return fixed + rand


def check_class(pkg, cls: tuple, count: int, rng: random.Random) -> list[Check]:
    """gemm() on random shapes for one epilogue class, against a float32 reference."""
    import torch

    dtype, out, alpha_k, beta_k, activation, bias_kind = cls
    tin, tout = torch_dtype(dtype), torch_dtype(out)
    tol = tolerance(dtype, out)
    label = f"{dtype}->{out} alpha={_num(alpha_k)} beta={_num(beta_k)} act={activation} bias={bias_kind}"
    checks = []
    # the kernels K-major operands reach (check_layouts takes the others)
    mine = [
        k
        for k in pkg.KERNELS
        if _class_of(k) == cls and k.a_major == k.b_major == "k" and _plain(k)
    ]
    steps = tuple(min(k.shape_multiples[i] for k in mine) for i in range(3))
    for i, (m, n, k) in enumerate(_shapes(steps, count, rng)):
        # a runtime alpha or beta: values no kernel compiles in, so gemm() picks one of this class
        alpha, beta = (
            rng.uniform(0.5, 2.0) if value == RUNTIME else value for value in (alpha_k, beta_k)
        )
        epi = {"alpha": alpha, "beta": beta, "activation": activation or "none", "bias": bias_kind}
        a = torch.randn(m, k, device="cuda").to(tin)
        b = torch.randn(n, k, device="cuda").to(tin)
        bias = None
        if bias_kind:
            bias = torch.randn(m if bias_kind == "row" else n, device="cuda").to(tout)
        # out lives in a NaN-poisoned buffer with a spare row and spare columns: an unwritten
        # element and a store past the edge both show; every other call lets gemm allocate
        buf = torch.full((m + 1, n + 8), float("nan"), device="cuda", dtype=tout)
        c = buf[:m, :n]
        if beta:
            c.copy_(torch.randn(m, n, device="cuda"))
        c0 = c.float().clone()
        use_out = beta != 0.0 or i % 2 == 0
        try:
            pick = pkg.kernel_for(
                m,
                n,
                k,
                dtype=tin,
                out_dtype=tout,
                alpha=alpha,
                beta=beta,
                activation=activation,
                bias=bias_kind,
            ).name
            got = pkg.gemm(
                a,
                b,
                out=c if use_out else None,
                bias=bias,
                alpha=alpha,
                beta=beta,
                activation=activation,
                out_dtype=tout,
            )
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a failed call is a failed check
            checks.append(Check(f"{label} M={m} N={n} K={k}", False, f"{type(e).__name__}: {e}"))
            continue
        ref = reference(a, b, c0, epi, bias)
        err = ((got.float() - ref).norm() / ref.norm()).item()
        outside = torch.cat([buf[:m, n:].flatten(), buf[m, :].flatten()])
        clean = bool(torch.isnan(outside).all())
        ok = math.isfinite(err) and err <= tol and clean and (got is c) == use_out
        checks.append(
            Check(
                f"{label} M={m} N={n} K={k}",
                ok,
                f"{pick}: rel_err {err:.2e} tol {tol:.0e}"
                + (f" alpha={alpha:.4g} beta={beta:.4g}" if RUNTIME in cls else "")
                + ("" if clean else "; wrote outside C")
                + ("" if use_out else " (allocated out)"),
            )
        )
    return checks


def check_runtime_scalars(pkg) -> list[Check]:
    """Calls only a runtime-scalar kernel serves, through gemm(): D = 0.75 A @ B^T, and C += A @
    B^T (out=c, beta=1.0), for each input dtype with such kernels on this GPU's arch; each must
    pick a kernel taking that scalar at launch and match the float32 reference (C NaN-poisoned
    where beta = 0, so a kernel that adds 0 * C shows)."""
    import torch

    from codegen import gpu

    arch, _ = gpu.gpu_arch()
    checks = []
    for dtype, out in sorted({(k.dtype, k.out_dtype) for k in pkg.KERNELS
                              if k.arch == arch and RUNTIME in (k.alpha, k.beta)}):  # fmt: skip
        tin, tout = torch_dtype(dtype), torch_dtype(out)
        tol = tolerance(dtype, out)
        m, n, k = 200, 512, 1024
        a = torch.randn(m, k, device="cuda").to(tin)
        b = torch.randn(n, k, device="cuda").to(tin)
        for what, alpha, beta in (("alpha=0.75", 0.75, 0.0), ("out=c, beta=1.0", 1.0, 1.0)):
            label = f"{dtype}->{out} gemm(a, b, {what}) M={m} N={n} K={k}"
            c = torch.full((m, n), float("nan"), device="cuda", dtype=tout)
            if beta:
                c.copy_(torch.randn(m, n, device="cuda"))
            c0 = c.float().clone()
            try:
                kern = pkg.kernel_for(m, n, k, dtype=tin, out_dtype=tout, alpha=alpha, beta=beta)
                got = pkg.gemm(a, b, out=c, alpha=alpha, beta=beta, out_dtype=tout)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a failed call is a failed check
                checks.append(Check(label, False, f"{type(e).__name__}: {e}"))
                continue
            ref = reference(a, b, c0, {"alpha": alpha, "beta": beta})
            err = ((got.float() - ref).norm() / ref.norm()).item()
            runtime = RUNTIME in (kern.alpha, kern.beta)
            ok = math.isfinite(err) and err <= tol and runtime and got is c
            checks.append(Check(label, ok, f"{kern.name}: rel_err {err:.2e} tol {tol:.0e}"))
    return checks


def check_epilogue_fns(pkg) -> list[Check]:
    """The epilogue-function kernels of this GPU's arch as a user calls them: scaled_mm (FP8
    per-tensor and row-wise scales, out NaN-poisoned, odd M) against torch._scaled_mm's
    definition in float32, (A @ B^T) * scale_a * scale_b; gemm_fn on every other such kernel
    against its function in float32 torch (codegen.gpu.fn_reference), gemm_sumsq on the
    row_sumsq kernels (D, and its rows' sums of squares per row within gpu.sumsq_tolerance),
    gemm_block_quant on the block_quant ones (gpu.check_block_quant: D * scale and the scales); and
    the refusals (bad scale shapes, a missing argument) raise GemmError before any launch."""
    import torch

    from codegen import gpu

    arch, _ = gpu.gpu_arch()
    # the function kernels and the row_sumsq ones (gemm_sumsq: D and its rows' sums of squares)
    mine = [k for k in pkg.KERNELS if k.arch == arch and not _plain(k)]
    checks = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    for m, n, k in ((1, 256, 512), (200, 512, 1024), (777, 1536, 4096)):
        for per_tensor in (True, False):
            if not any(
                x.fn == ("scale_per_tensor" if per_tensor else "scale_rowwise") for x in mine
            ):
                continue
            a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
            if per_tensor:
                sa, sb = torch.tensor(0.75, device="cuda"), torch.tensor(1.5, device="cuda")
            else:
                sa = torch.rand(m, 1, device="cuda", generator=gen) + 0.5
                sb = torch.rand(1, n, device="cuda", generator=gen) + 0.5
            label = f"scaled_mm e4m3->bf16 {'per-tensor' if per_tensor else 'row-wise'} M={m} N={n} K={k}"
            tol = tolerance("e4m3", "bf16")
            try:
                got = pkg.scaled_mm(a, b, sa, sb)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a failed call is a failed check
                checks.append(Check(label, False, f"{type(e).__name__}: {e}"))
                continue
            ref = (a.float() @ b.float().T) * sa * sb
            err = ((got.float() - ref).norm() / ref.norm()).item()
            checks.append(Check(label, math.isfinite(err) and err <= tol,
                                f"rel_err {err:.2e} tol {tol:.0e}"))  # fmt: skip
    rng = random.Random(7)
    for kern in mine:
        mult = kern.shape_multiples
        m, n, k = (max(s, (x // s) * s) for s, x in zip(mult, (333, 1000, 1040), strict=True))
        tin, tout = torch_dtype(kern.dtype), torch_dtype(kern.out_dtype)
        a = torch.randn(m, k, device="cuda", generator=gen).to(tin)
        b = torch.randn(n, k, device="cuda", generator=gen).to(tin)
        values = gpu.fn_inputs(list(kern.fn_args), m, n, k, 0, rng, gen, tout)
        # a gated pair: out (M, N/2), one column per gate and up pair
        gated = getattr(kern, "fn_gated", False)
        out = torch.full((m, n // 2 if gated else n), float("nan"), device="cuda", dtype=tout)
        sumsq = getattr(kern, "row_partials", None) is not None
        block = getattr(kern, "block_quant", None)
        call = "gemm_sumsq" if sumsq else "gemm_block_quant" if block else "gemm_fn"
        label = f"{call}({kern.name}) M={m} N={n} K={k}"
        tol = tolerance(kern.dtype, "bf16" if block else kern.out_dtype)
        try:
            if sumsq:
                _, sums = pkg.gemm_sumsq(kern.name, a, b, out=out, **values)
            elif block:
                _, scales = pkg.gemm_block_quant(kern.name, a, b, out=out, **values)
            else:
                pkg.gemm_fn(kern.name, a, b, out=out, **values)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a failed call is a failed check
            checks.append(Check(label, False, f"{type(e).__name__}: {e}"))
            continue
        module = __import__(kern.module, fromlist=["_"])
        ref = a.float() @ b.float().T
        if kern.fn is not None:
            ref = gpu.fn_reference(module, module.SPEC["epilogue"]["fn"], ref, values)
        if block:
            # D * scale against the reference, and the scales against its blocks' amax / 448
            note, ok, _ = gpu.check_block_quant(
                out, scales, ref, block, gpu.block_quant_gemm_tolerance(kern.dtype)
            )
            checks.append(Check(label, ok, note))
            continue
        err = ((out.float() - ref).norm() / ref.norm()).item()
        ok, note = math.isfinite(err) and err <= tol, f"rel_err {err:.2e} tol {tol:.0e}"
        if sumsq:
            # the rows' sums of squares, per row against the float32 reference's
            want = (ref.double() ** 2).sum(1)
            sq_err = ((sums.double() - want).abs() / want.clamp_min(1e-30)).max().item()
            sq_tol = gpu.sumsq_tolerance(module)
            ok = ok and math.isfinite(sq_err) and sq_err <= sq_tol
            note += f"; sumsq rel_err {sq_err:.2e} tol {sq_tol:.0e}"
        checks.append(Check(label, ok, note))
    for fn_name, act in (("swiglu", torch.nn.functional.silu),):
        # gated_mm on a [gate; up] weight reordered by interleave_gate_up, decode and prefill M
        if not any(x.fn == fn_name and getattr(x, "fn_gated", False) for x in mine):
            continue
        for m, f, k in ((1, 1024, 1024), (16, 1536, 512), (1000, 2048, 1024)):
            x = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
            w = (torch.randn(2 * f, k, device="cuda", generator=gen) / 8).to(torch.bfloat16)
            label = f"gated_mm({fn_name}) M={m} F={f} K={k}"
            tol = tolerance("bf16", "bf16")
            try:
                got = pkg.gated_mm(x, pkg.interleave_gate_up(w), fn_name)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a failed call is a failed check
                checks.append(Check(label, False, f"{type(e).__name__}: {e}"))
                continue
            ref = act(x.float() @ w[:f].float().T) * (x.float() @ w[f:].float().T)
            err = ((got.float() - ref).norm() / ref.norm()).item()
            checks.append(Check(label, math.isfinite(err) and err <= tol,
                                f"rel_err {err:.2e} tol {tol:.0e}"))  # fmt: skip
    if mine:
        a = torch.zeros(64, 128, device="cuda").to(torch.float8_e4m3fn)
        b = torch.zeros(256, 128, device="cuda").to(torch.float8_e4m3fn)
        for what, call, text in (
            ("scaled_mm scale_a (3,)", lambda: pkg.scaled_mm(a, b, torch.ones(3, device="cuda"),
                                                             torch.ones(256, device="cuda")),
             "scales must both be 0-d"),
            ("gemm_fn without its arguments",
             lambda: pkg.gemm_fn(next(x for x in mine if x.fn_args).name, a, b),
             "by keyword"),
        ):  # fmt: skip
            ok, detail = _raises(call, pkg.GemmError, text)
            checks.append(Check(f"refused: {what}", ok, detail))
    return checks


def _raises(fn: Callable[[], object], error: type, text: str) -> tuple[bool, str]:
    try:
        fn()
    except error as e:
        return text in str(e), f"{type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001
        return False, f"wrong error {type(e).__name__}: {e}"
    return False, "no error raised"


def check_errors(pkg) -> list[Check]:
    """Bad input: one clear GemmError before any launch, and the next call still correct."""
    import torch

    bf = torch.bfloat16
    a = torch.randn(64, 256, device="cuda", dtype=bf)
    b = torch.randn(128, 256, device="cuda", dtype=bf)
    cases = [
        ("CPU tensor", lambda: pkg.gemm(a.cpu(), b), "CUDA device"),
        (
            "K not a multiple of 8",
            lambda: pkg.gemm(a[:, :250].contiguous(), b[:, :250].contiguous()),
            "K=250",
        ),
        ("mixed dtypes", lambda: pkg.gemm(a, b.half()), "one dtype"),
        ("beta without out", lambda: pkg.gemm(a, b, beta=1.0, activation="relu"), "pass out="),
        (
            "no such epilogue",
            lambda: pkg.gemm(a, b, alpha=3.0, activation="relu"),
            "no sm_90a kernel computes",
        ),
        ("float32 inputs", lambda: pkg.gemm(a.float(), b.float()), "float16, bfloat16"),
        (
            "a with no stride 1",
            lambda: pkg.gemm(torch.randn(64, 512, device="cuda", dtype=bf)[:, ::2], b),
            "last stride 1",
        ),
        (
            "bias of a wrong length",
            lambda: pkg.gemm(a, b, bias=torch.randn(7, device="cuda", dtype=bf)),
            "length N=128",
        ),
    ]
    checks = []
    for what, fn, text in cases:
        ok, detail = _raises(fn, pkg.GemmError, text)
        checks.append(Check(f"error: {what}", ok, detail))
    ref = a.float() @ b.float().T
    got = pkg.gemm(a, b)
    torch.cuda.synchronize()
    err = ((got.float() - ref).norm() / ref.norm()).item()
    checks.append(Check("the call after the errors", err <= 1e-2, f"rel_err {err:.2e} tol 1e-02"))
    return checks


def check_layouts(pkg) -> list[Check]:
    """MN-major operands: for every (a_major, b_major) the plain bf16 / f16 kernels of this GPU's
    arch take, gemm() on a = x.t() (x (K, M) row-major) and b = w.t() (w (K, N)) against a
    float32 reference, out poisoned first, odd and tile-sized shapes; then a layout no kernel
    takes (e4m3 with b N-major on sm_90a, whose wgmma reads MN-major operands for 16-bit types
    only) refused with the fix; then autograd: dA and dB of gemm(x, w.t()) against float32
    torch (the backward reads dD.t(), A.t() and B.t() as MN-major views where kernels take
    them)."""
    import importlib

    import torch

    rt = importlib.import_module(f"{pkg.__name__}._runtime")
    gpu, arch = rt._device(torch.cuda.current_device())
    checks = []
    for dtype in ("bf16", "f16"):
        tin = torch_dtype(dtype)
        tol = tolerance(dtype, dtype)
        layouts = sorted(
            {
                (k.a_major, k.b_major)
                for k in pkg.KERNELS
                if k.arch == arch
                and _class_of(k) == (dtype, dtype, 1.0, 0.0, None, None)
                and _plain(k)
            }
            - {("k", "k")}
        )
        for a_major, b_major in layouts:
            for m, n, k in ((128, 256, 512), (264, 1000, 1040), (8, 4096, 2048), (1000, 520, 2064)):
                # MN-major: views of wider tensors (ld past the extent), as gpu.operand makes
                a, b = operand(m, k, a_major, tin, None), operand(n, k, b_major, tin, None)
                buf = torch.full((m + 1, n + 8), float("nan"), device="cuda", dtype=tin)
                c = buf[:m, :n]
                label = f"layout {dtype} a {a_major} b {b_major} M={m} N={n} K={k}"
                try:
                    pick = rt._choose(
                        gpu,
                        arch,
                        (dtype, dtype, 1.0, 0.0, None, None),
                        m,
                        n,
                        k,
                        layout=(a_major, b_major),
                    ).name
                    got = pkg.gemm(a, b, out=c)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001 - a failed call is a failed check
                    checks.append(Check(label, False, f"{type(e).__name__}: {e}"))
                    continue
                ref = a.float() @ b.float().T
                err = ((got.float() - ref).norm() / ref.norm()).item()
                outside = torch.cat([buf[:m, n:].flatten(), buf[m, :].flatten()])
                clean = bool(torch.isnan(outside).all())
                ok = math.isfinite(err) and err <= tol and clean and got is c
                detail = f"{pick}: rel_err {err:.2e} tol {tol:.0e}"
                checks.append(Check(label, ok, detail + ("" if clean else "; wrote outside C")))
    if arch == "sm_90a":
        x = torch.randn(64, 256, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(256, 128, device="cuda").to(torch.float8_e4m3fn)
        ok, detail = _raises(lambda: pkg.gemm(x, w.t()), pkg.GemmError, "16-bit types only")
        checks.append(Check("layout refused: e4m3 b N-major on sm_90a", ok, detail))
    for m in (64, 77):
        x = torch.randn(m, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16) / 16
        w.requires_grad_(True)
        try:
            y = pkg.gemm(x, w.t())
            g = torch.randn_like(y)
            y.backward(g)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            checks.append(Check(f"layout autograd x @ w M={m}", False, f"{type(e).__name__}: {e}"))
            continue
        xf, wf = x.detach().float(), w.detach().float()
        errs = {
            "y": ((y.float() - xf @ wf).norm() / (xf @ wf).norm()).item(),
            "dx": ((x.grad.float() - g.float() @ wf.T).norm() / (g.float() @ wf.T).norm()).item(),
            "dw": ((w.grad.float() - xf.T @ g.float()).norm() / (xf.T @ g.float()).norm()).item(),
        }
        ok = all(math.isfinite(e) and e <= TOLERANCE_AUTOGRAD for e in errs.values())
        detail = ", ".join(f"{k} {v:.2e}" for k, v in errs.items())
        checks.append(Check(f"layout autograd x @ w (b = w.t()) M={m}", ok, detail))
    return checks


TOLERANCE_AUTOGRAD = 1e-2  # bf16 products against float32, as the bf16 kernels are checked


def check_torch_compile(pkg) -> list[Check]:
    """A two-layer MLP calling gemm, compiled with fullgraph=True (a graph break is an error)."""
    import torch

    bf = torch.bfloat16

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1 = torch.nn.Parameter(torch.randn(1024, 512, device="cuda", dtype=bf) / 16)
            self.b1 = torch.nn.Parameter(torch.randn(1024, device="cuda", dtype=bf))
            self.w2 = torch.nn.Parameter(torch.randn(512, 1024, device="cuda", dtype=bf) / 32)
            self.b2 = torch.nn.Parameter(torch.randn(512, device="cuda", dtype=bf))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = pkg.gemm(x, self.w1, bias=self.b1, activation="silu")
            return pkg.gemm(h, self.w2, bias=self.b2) * 0.5

    model = MLP()
    checks = []
    for m in (77, 256):
        x = torch.randn(m, 512, device="cuda", dtype=bf)
        with torch.no_grad():
            h = torch.nn.functional.silu(x.float() @ model.w1.float().T + model.b1.float())
            ref = (h.to(bf).float() @ model.w2.float().T + model.b2.float()) * 0.5
            try:
                compiled = torch.compile(model, fullgraph=True)
                got = compiled(x)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                checks.append(
                    Check(
                        f"torch.compile(fullgraph=True) MLP M={m}",
                        False,
                        f"{type(e).__name__}: {e}",
                    )
                )
                continue
        err = ((got.float() - ref).norm() / ref.norm()).item()
        checks.append(
            Check(
                f"torch.compile(fullgraph=True) MLP M={m}",
                err <= 1e-2,
                f"rel_err {err:.2e} tol 1e-02",
            )
        )
    return checks


def check_cuda_graph(pkg) -> list[Check]:
    """gemm captured in a CUDA graph (after a warm-up call), replayed on new inputs."""
    import torch

    bf = torch.bfloat16
    checks = []
    for m, n, k in ((16, 8192, 8192), (300, 2048, 1024)):
        a = torch.randn(m, k, device="cuda", dtype=bf)
        b = torch.randn(n, k, device="cuda", dtype=bf)
        out = torch.empty(m, n, device="cuda", dtype=bf)
        graph = capture_graph([lambda a=a, b=b, out=out: pkg.gemm(a, b, out=out)])
        a.copy_(torch.randn(m, k, device="cuda", dtype=bf))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        err = ((out.float() - ref).norm() / ref.norm()).item()
        pick = pkg.kernel_for(m, n, k).name
        checks.append(
            Check(
                f"CUDA graph replay M={m} N={n} K={k}",
                err <= 1e-2,
                f"{pick}: rel_err {err:.2e} tol 1e-02",
            )
        )
    return checks


FIRST_CALL = """
import json, os, sys, time
import torch
sys.path.insert(0, sys.argv[1])
a = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16)
b = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t0 = time.perf_counter()
from cutegemm import gemm, kernel_for
t1 = time.perf_counter()
c = gemm(a, b)
torch.cuda.synchronize()
t2 = time.perf_counter()
c = gemm(a, b)
torch.cuda.synchronize()
t3 = time.perf_counter()
err = ((c.float() - a.float() @ b.float().T).norm() / (a.float() @ b.float().T).norm()).item()
x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t4 = time.perf_counter()
y = gemm(x, w)  # another kernel (small M): its own first call
torch.cuda.synchronize()
t5 = time.perf_counter()
err2 = ((y.float() - x.float() @ w.float().T).norm() / (x.float() @ w.float().T).norm()).item()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3,
                  "second_ms": (t3 - t2) * 1e3, "kernel": kernel_for(256, 512, 1024).name,
                  "other_first_ms": (t5 - t4) * 1e3, "other": kernel_for(16, 4096, 4096).name,
                  "rel_err": max(err, err2), "cutlass_imported": "cutlass" in sys.modules}))
"""


def first_call(generated: Path) -> list[dict]:
    """A new process, twice, sharing one empty cache folder: the first compiles and stores the
    kernel, the second loads it (the warm cache). Times are of the process's first gemm()."""
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUTEGEMM_CACHE_DIR=cache)
        for label in ("cold cache", "warm cache"):
            proc = subprocess.run(
                [sys.executable, "-c", FIRST_CALL, str(generated.resolve())],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if proc.returncode != 0:
                runs.append({"run": label, "error": proc.stderr[-2000:]})
                continue
            runs.append({"run": label, **json.loads(proc.stdout.strip().splitlines()[-1])})
    return runs


# ---- timing ------------------------------------------------------------------------------------


@dataclass
class PickRow:
    dtype: str
    shape: Shape
    kernel: str
    us: float
    torch_us: float
    rel_err: float

    @property
    def ratio(self) -> float:
        return self.torch_us / self.us


def bench_picks(pkg, shapes: list[Shape], dtype: str, rounds: int, reps: int) -> list[PickRow]:
    """gemm() as a user calls it (the dispatcher's pick, out= given) beside torch, interleaved."""
    import torch

    from codegen.tune import torch_launch

    out = "bf16" if dtype == "e4m3" else dtype
    rows = []
    for shape in shapes:
        tin = torch_dtype(dtype)
        try:
            kern = pkg.kernel_for(shape.m, shape.n, shape.k, dtype=tin, out_dtype=torch_dtype(out))
        except pkg.GemmError as e:
            print(f"  {shape.name}: {e}")
            continue
        sets = input_sets(shape, tin, torch_dtype(out))
        a, b, c = sets[0]
        try:
            torch_launch(dtype, a, b, c)()
        except RuntimeError as e:  # e.g. torch._scaled_mm wants multiples of 16
            print(f"  {shape.name}: torch cannot run it ({str(e).splitlines()[0]}); not timed")
            continue
        c.fill_(float("nan"))
        pkg.gemm(a, b, out=c)
        ref = a.float() @ b.float().T
        err = ((c.float() - ref).norm() / ref.norm()).item()
        fns = {
            "gemm": [lambda a=a, b=b, c=c: pkg.gemm(a, b, out=c) for a, b, c in sets],
            "torch": [torch_launch(dtype, a, b, c) for a, b, c in sets],
        }
        t = time_interleaved(fns, rounds, reps)
        rows.append(PickRow(dtype, shape, kern.name, t["gemm"], t["torch"], err))
        torch.cuda.synchronize()
    return rows


HOST_COSTS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import cutegemm
from codegen.library import host_costs
print(json.dumps(host_costs(cutegemm)))
"""


def host_costs_fresh(generated: Path) -> dict[str, float]:
    """host_costs() in a new process: no other kernels, tensors or garbage around the loops."""
    proc = subprocess.run(
        [sys.executable, "-c", HOST_COSTS, str(generated.resolve())],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"host cost process failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def host_costs(pkg, calls: int = 200, rounds: int = 15) -> dict[str, float]:
    """Host µs per call: the wall time of `calls` back-to-back calls, measured from a synchronized
    GPU and stopped before synchronizing again. 200 calls stay inside the launch queue, so the
    loop never waits for the GPU and the time is the host's alone. Median over rounds that
    alternate between the entries. Two products: M=16, N=K=256 (the tuned pick there is a split-K
    kernel: two launches per call) and M=N=K=256 (one launch)."""
    import torch

    bf = torch.bfloat16
    entries: dict[str, Callable[[], object]] = {}
    for m, n, k in ((16, 256, 256), (256, 256, 256)):
        a = torch.randn(m, k, device="cuda", dtype=bf)
        b = torch.randn(n, k, device="cuda", dtype=bf)
        c = torch.empty(m, n, device="cuda", dtype=bf)
        tag = f"M={m} N={n} K={k}"
        name = pkg.kernel_for(m, n, k).name
        module = __import__(next(x.module for x in pkg.KERNELS if x.name == name), fromlist=["_"])
        entries[f"{tag}: cutegemm.gemm(a, b, out=c) [{name}]"] = lambda a=a, b=b, c=c: pkg.gemm(
            a, b, out=c
        )
        entries[f"{tag}: cutegemm.gemm(a, b)"] = lambda a=a, b=b: pkg.gemm(a, b)
        entries[f"{tag}: torch.matmul(a, b.T, out=c)"] = lambda a=a, b=b, c=c: torch.matmul(
            a, b.T, out=c
        )
        entries[f"{tag}: torch.matmul(a, b.T)"] = lambda a=a, b=b: torch.matmul(a, b.T)
        entries[f"{tag}: the function {name}.launcher() returns"] = module.launcher(a, b, c)
        entries[f"{tag}: {name}.launcher(a, b, c)()"] = lambda a=a, b=b, c=c, mod=module: (
            mod.launcher(a, b, c)()
        )
    samples: dict[str, list[float]] = {k: [] for k in entries}
    for fn in entries.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for key, fn in entries.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            samples[key].append((t1 - t0) * 1e6 / calls)
    torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in samples.items()}


# ---- the decode chain --------------------------------------------------------------------------

# One Llama-3-70B decoder layer's projections, in order: C[M, N] = A[M, K] @ W[N, K]^T
LLAMA3_70B_LAYER = (
    ("QKV", 10240, 8192),
    ("attn-out", 8192, 8192),
    ("MLP up", 28672, 8192),
    ("MLP down", 8192, 28672),
)


@dataclass
class ChainRow:
    dtype: str
    m: int
    layers: int
    us: float  # one decode step (every projection of every layer), generated, in a CUDA graph
    torch_us: float  # the same step with torch, in its own CUDA graph
    bytes_moved: int  # weights + activations + outputs, each once
    picks: dict[str, str]  # projection -> the dispatcher's kernel
    rel_err: float  # the worst projection's, after a replay of the generated graph
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.torch_us / self.us

    def tb_s(self, us: float) -> float:
        return self.bytes_moved / us / 1e6


def bench_chain(
    pkg,
    dtype: str,
    m: int,
    layers: int,
    rounds: int,
    reps: int,
    layer: tuple | list = LLAMA3_70B_LAYER,
) -> ChainRow:
    """A decode step of `layers` layers (`layer`'s projections (name, N, K), distinct weights;
    Llama-3-70B's by default)
    captured in one CUDA graph with cutegemm.gemm (the dispatcher's picks), against the same
    step with torch in its own graph; replays timed interleaved, median µs per step."""
    import torch

    from codegen.tune import torch_launch

    tin, tout = torch_dtype(dtype), torch.bfloat16
    ours: list[Callable[[], object]] = []
    theirs: list[Callable[[], object]] = []
    products = []
    picks: dict[str, str] = {}
    moved = 0
    for _ in range(layers):
        for name, n, k in layer:
            a = torch.randn(m, k, device="cuda").to(tin)
            w = torch.randn(n, k, device="cuda").to(tin)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=tout)
            c_torch = torch.empty(m, n, device="cuda", dtype=tout)
            picks[name] = pkg.kernel_for(m, n, k, dtype=tin, out_dtype=tout).name
            ours.append(lambda a=a, w=w, c=c: pkg.gemm(a, w, out=c))
            theirs.append(torch_launch(dtype, a, w, c_torch))
            products.append((a, w, c))
            moved += (m * k + n * k) * tin.itemsize + m * n * tout.itemsize
    try:
        torch_graph = capture_graph(theirs)
    except RuntimeError as e:  # e.g. torch._scaled_mm's own shape limits
        return ChainRow(dtype, m, layers, math.nan, math.nan, moved, picks, math.nan,
                        f"torch cannot run it: {str(e).splitlines()[0]}")  # fmt: skip
    our_graph = capture_graph(ours)
    for _, _, c in products:
        c.fill_(float("nan"))
    our_graph.replay()
    torch.cuda.synchronize()
    worst = 0.0
    for a, w, c in products:
        ref = a.float() @ w.float().T
        err = ((c.float() - ref).norm() / ref.norm()).item()
        worst = max(worst, err if math.isfinite(err) else math.inf)  # NaN: unwritten output
    t = time_interleaved({"gemm": [our_graph.replay], "torch": [torch_graph.replay]}, rounds, reps)
    return ChainRow(dtype, m, layers, t["gemm"], t["torch"], moved, picks, worst)
