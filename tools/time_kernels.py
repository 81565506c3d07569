"""Time chosen kernels beside torch on chosen products, as the dispatcher's tuner does (each
side a CUDA graph of back-to-back launches over inputs rotated past L2, interleaved, clocks
warmed, every output checked against a float32 reference first), and print a Markdown table:

    python tools/time_kernels.py MxNxK[,MxNxK...] GLOB[,GLOB...] [--dtype bf16|e4m3] [--rounds 9]

For A/B pairs of kernels (e.g. a kernel and its `_pdl` twin) on products no sweep covers, such
as the tiny ones of specs/shapes/tiny.toml. Needs a GPU, torch, the CuTe DSL and generated/ on
the path.
"""

from __future__ import annotations

import argparse
import fnmatch

import cutegemm
import torch
from cutegemm import _runtime as rt
from cutegemm import _tune as tune


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shapes", help="MxNxK[,MxNxK...]")
    p.add_argument("globs", help="kernel name globs, comma-separated")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "e4m3"])
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    gpu, arch = rt._device(torch.cuda.current_device())
    tin, tout = rt._TORCH[args.dtype], rt._TORCH["bf16"]
    globs = [g for g in args.globs.split(",") if g]
    kernels = [
        k
        for k in rt._BY_CLASS.get((arch, args.dtype, "bf16", 1.0, 0.0, None, None), [])
        if any(fnmatch.fnmatchcase(k.name, g) for g in globs)
    ]
    tune.compile_ahead(kernels, arch, 0)
    tune.warm_clocks(3.0)
    print(f"{gpu}, {args.dtype}, rounds {args.rounds}\n")
    print("| M | N | K | kernel | µs | torch µs | torch/kernel |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        takes = [kern for kern in kernels if rt._refusal(kern, m, n, k) is None]
        pick = cutegemm.kernel_for(m, n, k, dtype=tin, out_dtype=tout)
        times, torch_us, failed = tune.measure(takes, arch, m, n, k, tin, tout, args.rounds)
        for name, us in sorted(times.items(), key=lambda x: x[1]):
            mark = " (pick)" if name == pick.name else ""
            print(f"| {m} | {n} | {k} | {name}{mark} | {us:.2f} | {torch_us:.2f} | "
                  f"{torch_us / us:.3f} |")  # fmt: skip
        for name, why in failed.items():
            print(f"| {m} | {n} | {k} | {name} | failed: {why} | | |")


if __name__ == "__main__":
    main()
