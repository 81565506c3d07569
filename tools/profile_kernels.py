"""Launch chosen generated kernels once per shape inside a CUDA profiler range, for Nsight Compute
to compare them (e.g. a stream-K kernel against a persistent one with the same tile):

    ncu --clock-control none --profile-from-start off --section SpeedOfLight \\
        --section MemoryWorkloadAnalysis --section WarpStateStats \\
        python tools/profile_kernels.py MxNxK[,MxNxK...] KERNEL [KERNEL ...]

Each kernel file's own `launcher` is used (bf16 inputs, random normal), compiled and warmed up
before the range opens, so the range holds exactly one launch per (shape, kernel), in the order
given. Needs a GPU, torch, the CuTe DSL and generated/ on the path.
"""

import importlib
import sys

import torch


def main() -> None:
    shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")]
    names = sys.argv[2:]
    launches = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for name in names:
            mod = importlib.import_module(f"cutegemm.sm90.{name}")
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            fn = mod.launcher(a, b, c)
            for _ in range(3):
                fn()
            ref = a.float() @ b.float().T
            err = ((c.float() - ref).norm() / ref.norm()).item()
            print(f"{name} M={m} N={n} K={k}: rel_err {err:.2e}", flush=True)
            launches.append(fn)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for fn in launches:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
