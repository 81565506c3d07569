"""cutegemm.gemm under autograd, on a GPU: forward and backward (dA, dB, dbias) against a float32
torch reference on fresh random inputs, eager and under torch.compile, 2-D and 3-D (F.linear
style) activations; the kernels the backward launches (torch profiler); and the refusals.

    python tools/check_autograd.py  (on a GPU, from the repository root; PYTHONPATH as .ci/gpu sets)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch

TOL = 1e-2  # bf16 inputs and outputs, f32 accumulation: the package's bf16 tolerance
SHAPES = ((64, 256, 512), (200, 384, 1024), (1, 4096, 4096), (777, 1024, 2048), (4096, 512, 768))


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()


def check(
    m: int, n: int, k: int, bias: bool, lead: tuple, fn, wt: bool = False
) -> tuple[float, ...]:
    """wt: the weight stored (K, N), passed as b = w.t() (N-major: the MN-major kernels, and a
    backward that reads the transposed views instead of copies); the reference is the same."""
    x = torch.randn(*lead, m, k, device="cuda").to(torch.bfloat16).requires_grad_(True)
    shape = (k, n) if wt else (n, k)
    w = (torch.randn(*shape, device="cuda") / k**0.5).to(torch.bfloat16).requires_grad_(True)
    b = torch.randn(n, device="cuda").to(torch.bfloat16).requires_grad_(True) if bias else None
    r = torch.randn(*lead, m, n, device="cuda")
    y = fn(x, w, b)
    assert y.grad_fn is not None, "no grad_fn: the gradient would be dropped"
    (y.float() * r).sum().backward()
    xf, wf = x.detach().float().requires_grad_(True), w.detach().float().requires_grad_(True)
    bf = b.detach().float().requires_grad_(True) if bias else None
    yf = xf @ (wf if wt else wf.T) + (bf if bias else 0)
    (yf * r).sum().backward()
    errs = [rel(y, yf), rel(x.grad, xf.grad), rel(w.grad, wf.grad)]
    if bias:
        errs.append(rel(b.grad, bf.grad))
    return tuple(errs)


def main() -> None:
    eager = lambda x, w, b: cutegemm.gemm(x, w, bias=b)
    compiled = torch.compile(eager)
    eager_t = lambda x, w, b: cutegemm.gemm(x, w.t(), bias=b)  # w (K, N): b N-major
    compiled_t = torch.compile(eager_t)
    print("| mode | M | N | K | batch | bias | rel_err y | dA | dB | dbias | ok |")
    print("|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|")
    worst = 0.0
    modes = (
        ("eager", eager, False),
        ("torch.compile", compiled, False),
        ("eager, b = w.t()", eager_t, True),
        ("torch.compile, b = w.t()", compiled_t, True),
    )
    for mode, fn, wt in modes:
        for m, n, k in SHAPES:
            for bias, lead in ((False, ()), (True, ()), (False, (3,))):
                if bias and (m == 1 or wt):
                    # the bias kernels take tile-multiple-free M, but keep the list short; no
                    # bias kernel takes an N-major b
                    continue
                errs = check(m, n, k, bias, lead, fn, wt)
                worst = max(worst, *errs)
                cells = " | ".join(f"{e:.2e}" for e in errs) + (" |" if not bias else "")
                ok = "ok" if max(errs) <= TOL else "FAIL"
                print(f"| {mode} | {m} | {n} | {k} | {lead or '-'} | {bias} | {cells} | {ok} |")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        cutegemm.gemm(x, w).float().sum().backward()
        torch.cuda.synchronize()
    names = sorted(
        {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    )
    print("\nkernels of one forward + backward (256x512x1024):")
    for name in names:
        print("  ", name[:110])
    wt = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        cutegemm.gemm(x, wt.t()).float().sum().backward()
        torch.cuda.synchronize()
    names = sorted(
        {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    )
    print("\nkernels of one forward + backward with b = w.t() (256x512x1024; no transposed copy):")
    for name in names:
        print("  ", name[:110])
    for what, call in (
        (
            "fp8",
            lambda: cutegemm.gemm(
                x.detach().to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn).requires_grad_(True)
            ),
        ),
        ("activation", lambda: cutegemm.gemm(x, w, activation="relu")),
        (
            "out=",
            lambda: cutegemm.gemm(
                x, w, out=torch.empty(256, 512, device="cuda", dtype=torch.bfloat16)
            ),
        ),
    ):
        try:
            call()
            print(f"{what}: NOT refused")
            worst = float("inf")
        except cutegemm.GemmError as e:
            print(f"{what}: refused: {e}")
    print(f"\nworst rel_err {worst:.2e} (tol {TOL:.0e}): {'PASS' if worst <= TOL else 'FAIL'}")
    sys.exit(0 if worst <= TOL else 1)


if __name__ == "__main__":
    main()
