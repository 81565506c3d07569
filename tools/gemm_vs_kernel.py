"""Is gemm() slower than a direct launch of the kernel it picks, or is the sweep's order to blame?
Per product: the pick launched directly (its compiled function and workspace, as the sweep times
every kernel), gemm() as a user calls it, and torch, each a CUDA graph of back-to-back launches
over inputs rotated past L2, timed interleaved in two orders (direct first, and gemm() first;
since time_graphs shuffles its order after each round, the order holds for the first round only,
as in BENCHMARKS.md's second 2026-12-04 call: the first call ran with the fixed order).
Prints a table per dtype and the geomean of gemm() / direct in each order.

    python tools/gemm_vs_kernel.py [--part unseen] [--count 24]   (on a GPU, from the repo root)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch
from cutegemm import _runtime as rt
from cutegemm import _tune as tune

from codegen import generalize as gen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="unseen", choices=("tune", "unseen"))
    ap.add_argument("--count", type=int, default=24, help="products per dtype, spread over M")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--split", type=Path, default=Path("specs/shapes/models.toml"))
    args = ap.parse_args()
    sp = gen.load_split(args.split)
    prods = gen.spread(gen.products(sp, args.part), args.count)
    _, arch = rt._device(0)
    tune.warm_clocks(3.0)
    for dtype in ("bf16", "e4m3"):
        tin, tout = rt._TORCH[dtype], torch.bfloat16
        ratios: dict[str, list[float]] = {"direct first": [], "gemm first": []}
        print(
            f"\n{dtype}: product | pick | direct µs | gemm() µs | torch µs (direct first; "
            "gemm first)"
        )
        for prod in prods:
            kern = cutegemm.kernel_for(prod.m, prod.n, prod.k, dtype=tin, out_dtype=tout)
            sets = tune.input_sets(prod.m, prod.n, prod.k, tin, tout)
            direct = tune.graph_of([tune.kernel_launch(kern, arch, a, b, c) for a, b, c in sets])
            via = tune.graph_of([lambda a=a, b=b, c=c: cutegemm.gemm(a, b, out=c)
                                 for a, b, c in sets])  # fmt: skip
            ref = tune.graph_of([tune.torch_launch(a, b, c) for a, b, c in sets])
            n = len(sets)
            first = tune.time_graphs({"direct": (direct, n), "gemm": (via, n), "torch": (ref, n)},
                                     args.rounds)  # fmt: skip
            second = tune.time_graphs({"gemm": (via, n), "direct": (direct, n), "torch": (ref, n)},
                                      args.rounds)  # fmt: skip
            ratios["direct first"].append(first["gemm"] / first["direct"])
            ratios["gemm first"].append(second["gemm"] / second["direct"])
            print(f"{prod.label} N={prod.n} K={prod.k} | {kern.name} | {first['direct']:.1f}; "
                  f"{second['direct']:.1f} | {first['gemm']:.1f}; {second['gemm']:.1f} | "
                  f"{first['torch']:.1f}; {second['torch']:.1f}")  # fmt: skip
        for order, vs in ratios.items():
            print(f"{dtype} {order}: gemm()/direct geomean {gen.geomean(vs):.4f} "
                  f"(min {min(vs):.3f}, max {max(vs):.3f}, {len(vs)} products)")  # fmt: skip


if __name__ == "__main__":
    main()
