"""Launch each Llama-3-70B bf16 prefill GEMM once with `cutegemm.gemm` (the dispatcher's pick) and
once with torch.matmul, inside a CUDA profiler range, for Nsight Compute to compare the two:

    ncu --clock-control none --profile-from-start off --section SpeedOfLight \\
        --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \\
        python tools/profile_prefill.py

Inputs are made, and both kernels compiled and warmed up, before the range opens, so the range
holds exactly two kernels per shape: ours, then torch's. Prints which kernel the dispatcher picked
for each shape. Needs a GPU, torch and the cutegemm package on the path (generated/).
"""

import sys

import torch

SHAPES = {
    "prefill QKV": (8192, 10240, 8192),
    "prefill attn-out": (8192, 8192, 8192),
    "prefill MLP up": (8192, 28672, 8192),
    "prefill MLP down": (8192, 8192, 28672),
}


def main() -> None:
    import cutegemm

    wanted = sys.argv[1:] or list(SHAPES)
    inputs = {}
    for name in wanted:
        m, n, k = SHAPES[name]
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):
            cutegemm.gemm(a, b, out=c)
            torch.matmul(a, b.T, out=c)
        inputs[name] = (a, b, c)
        print(f"{name} M={m} N={n} K={k}: {cutegemm.kernel_for(m, n, k).name}", flush=True)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for a, b, c in inputs.values():
        cutegemm.gemm(a, b, out=c)
        torch.matmul(a, b.T, out=c)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
