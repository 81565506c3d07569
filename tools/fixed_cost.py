"""Where does a small GEMM's fixed cost go? For each plain decode kernel (and torch), on a product
whose CTAs each run one k-tile (M=1, N=64 x 132, K=64: the time is all fixed cost) and on one that
streams 69 MB of weights (K=4096), this prints:

- graph µs: the time per launch in a CUDA graph of 8 back-to-back launches (what a decode step
  pays: kernel plus the gap to the next);
- kernel µs: the kernels' own device time per launch (CUDA profiler activity records, no replay);
- the difference: launch and inter-kernel gap.

    python tools/fixed_cost.py   (on a GPU, from the repository root; PYTHONPATH as .ci/gpu sets)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch
from cutegemm import _runtime as rt
from cutegemm import _tune as tune

PRODUCTS = ((1, 64 * 132, 64), (1, 64 * 132, 4096), (16, 64 * 132, 64))


def kernel_us(launch, reps: int = 20) -> float:
    """Median device time per launch of the kernels `launch` issues (sum over its kernels)."""
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            launch()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total = sum(e.time_range.elapsed_us() for e in events if "memcpy" not in e.name.lower())
    return total / reps


def main() -> None:
    gpu, arch = rt._device(0)
    cls = ("bf16", "bf16", 1.0, 0.0, None, None)
    kernels = [
        k
        for k in rt._BY_CLASS[(arch, *cls)]
        if k.swap_ab
        or k.name
        in (
            "sm90_bf16_64x128x64_s8_sw128_ws_wg1_c1x2_tma_grid",
            "sm90_bf16_128x64x64_s8_sw128_ws_wg2_c1x2_tma_persistent_rm",
        )
    ]
    tune.compile_ahead(kernels, arch, 0)
    tune.warm_clocks(3.0)
    print("| product | kernel | graph µs | kernel µs | gap µs |")
    print("|---|---|---:|---:|---:|")
    for m, n, k in PRODUCTS:
        sets = tune.input_sets(m, n, k, torch.bfloat16, torch.bfloat16)
        graphs, direct = {}, {}
        for kern in kernels:
            if rt._refusal(kern, m, n, k) is None:
                launches = [tune.kernel_launch(kern, arch, a, b, c) for a, b, c in sets]
                graphs[kern.name] = (tune.graph_of(launches), len(launches))
                direct[kern.name] = launches[0]
        launches = [tune.torch_launch(a, b, c) for a, b, c in sets]
        graphs["torch"] = (tune.graph_of(launches), len(launches))
        direct["torch"] = launches[0]
        times = tune.time_graphs(graphs, 9)
        rows = []
        for name, us in times.items():
            dev = kernel_us(direct[name])
            rows.append((us, name, dev))
        for us, name, dev in sorted(rows)[:12] + [r for r in rows if r[1] == "torch"]:
            print(f"| M={m} N={n} K={k} | {name} | {us:.2f} | {dev:.2f} | {us - dev:.2f} |")
        gap = statistics.median(r[0] - r[2] for r in rows if r[1] != "torch")
        print(f"| M={m} N={n} K={k} | median gap of ours | | | {gap:.2f} |")
    print(cutegemm.__name__, gpu)


if __name__ == "__main__":
    main()
