"""After `codegen tune-cache --model NAME`: in a fresh process, does gemm() use the measurements
with no compile and no tuning? Prints, per shape, the pick against the cache's first entry and the
first call's wall time (a load from the disk cache takes milliseconds, a compile seconds).

    python tools/check_tuned.py MODEL [--dtype bf16|e4m3]   (on a GPU, from the repository root)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch
from cutegemm import _tune

from codegen import generalize as gen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "e4m3"))
    ap.add_argument("--split", type=Path, default=Path("specs/shapes/models.toml"))
    args = ap.parse_args()
    sp = gen.load_split(args.split)
    dt = {"bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}[args.dtype]
    gpu = torch.cuda.get_device_name()
    same, worst, total = 0, 0.0, 0
    for _, n, k in gen.layer(sp, args.model):
        for m in sp.decode_m + sp.prefill_m:
            a = torch.randn(m, k, device="cuda").to(dt)
            b = torch.randn(n, k, device="cuda").to(dt)
            cached = _tune.cached_order(gpu, args.dtype, "bf16", m, n, k)
            pick = cutegemm.kernel_for(m, n, k, dtype=dt, out_dtype=torch.bfloat16).name
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            c = cutegemm.gemm(a, b, out_dtype=torch.bfloat16)
            torch.cuda.synchronize()
            first = (time.perf_counter() - t0) * 1e3
            ref = a.float() @ b.float().T
            err = ((c.float() - ref).norm() / ref.norm()).item()
            total += 1
            same += bool(cached) and pick == cached[0]
            worst = max(worst, first)
            print(f"M={m} N={n} K={k}: pick {pick} cached-first {cached[0] if cached else None} "
                  f"first call {first:.1f} ms rel_err {err:.1e}")  # fmt: skip
    print(f"{same}/{total} picks are the cache's measured best; slowest first call {worst:.1f} ms")


if __name__ == "__main__":
    main()
