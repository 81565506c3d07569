"""gemm(a, b, out_dtype=...) for every (input, output) dtype pair, on a GPU, at decode and prefill
M: the result against a float32 torch reference (output poisoned with NaN first), rel_err and the
tolerance, and the kernel the dispatcher ran.

    python tools/check_out_dtypes.py  (on a GPU, from the repository root; PYTHONPATH as
    .ci/gpu sets)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch

INS = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}
OUTS = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
TOL = {"f16": 2e-3, "bf16": 1e-2, "e4m3": 1e-2}  # by input dtype: its rounding dominates
SHAPES = ((1, 4096, 4096), (13, 1000, 2048), (777, 5120, 4096), (2048, 3072, 1024))


def main() -> None:
    worst_ok = True
    print("| in | out | M | N | K | kernel | rel_err | tol | ok |")
    print("|---|---|---:|---:|---:|---|---:|---:|---|")
    for iname, idt in INS.items():
        for oname, odt in OUTS.items():
            for m, n, k in SHAPES:
                a = torch.randn(m, k, device="cuda").to(idt)
                b = torch.randn(n, k, device="cuda").to(idt)
                out = torch.full((m, n), float("nan"), device="cuda", dtype=odt)
                kern = cutegemm.kernel_for(m, n, k, dtype=idt, out_dtype=odt)
                cutegemm.gemm(a, b, out=out)
                ref = a.float() @ b.float().T
                err = ((out.float() - ref).norm() / ref.norm()).item()
                ok = err <= TOL[iname]  # NaN (an unwritten element) fails too
                worst_ok &= ok
                print(f"| {iname} | {oname} | {m} | {n} | {k} | {kern.name} | {err:.2e} "
                      f"| {TOL[iname]:.0e} | {'ok' if ok else 'FAIL'} |")  # fmt: skip
    print("PASS" if worst_ok else "FAIL")
    sys.exit(0 if worst_ok else 1)


if __name__ == "__main__":
    main()
