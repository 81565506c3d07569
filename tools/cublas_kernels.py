"""Which cuBLAS kernel torch runs for a GEMM shape, with its launch configuration.

    python tools/cublas_kernels.py [--dtype bf16|e4m3|both] [M,N,K ...]

For each shape (default: the Llama-3-70B decode projections at M = 128 and 256, and the prefill
shapes at M = 8192), runs `torch.matmul(a, b.T)` (bf16) or `torch._scaled_mm` (e4m3, unit scales,
bf16 out) under torch.profiler and prints every GPU kernel it launched: name, grid, block,
registers per thread and dynamic shared memory, as the profiler's trace records them. The tile
and cluster shape are usually in the kernel name (e.g. `..._128x256_64x4_2x1_...`).
Needs a GPU and torch.
"""

import argparse
import json
import os
import tempfile

import torch

DECODE = [(8192 + 2048, 8192), (8192, 8192), (28672, 8192), (8192, 28672)]
DEFAULT = (
    [(m, n, k) for m in (128, 256) for n, k in DECODE]
    + [(8192, n, k) for n, k in DECODE]
    + [(4096, 4096, 4096), (8192, 8192, 8192)]
)


def call(dtype: str, m: int, n: int, k: int):
    if dtype == "bf16":
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        return lambda: torch.matmul(a, b.T)
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    return lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def kernels(fn) -> list[dict]:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=["bf16", "e4m3", "both"], default="both")
    parser.add_argument("shapes", nargs="*", help="M,N,K (default: decode M=128/256 and prefill)")
    args = parser.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] or DEFAULT
    dtypes = ["bf16", "e4m3"] if args.dtype == "both" else [args.dtype]
    for dtype in dtypes:
        for m, n, k in shapes:
            for e in kernels(call(dtype, m, n, k)):
                a = e.get("args", {})
                print(
                    f"{dtype} M={m} N={n} K={k}: {e['name']} grid={a.get('grid')} "
                    f"block={a.get('block')} regs={a.get('registers per thread')} "
                    f"smem={a.get('shared memory')} dur={e.get('dur')}us",
                    flush=True,
                )


if __name__ == "__main__":
    main()
