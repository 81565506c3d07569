"""Decode streaming probe: for M = 1-32 products whose weights are 20-400 MB, every swap-AB kernel
of the rendered package (pass its folder: the shipped one, or one rendered with extra specs) timed
beside torch as CUDA graphs of launches cycling weights past L2, printed as TB/s (weights +
activations + output bytes over the time per launch), best kernels first.

    python tools/decode_probe.py PACKAGE_DIR [OUT.jsonl]   (on a GPU; PYTHONPATH as .ci/gpu sets)

The variants measured for specs/sm90/decode.toml (BENCHMARKS.md) are tools/decode_probe_specs/:
`codegen render specs/ tools/decode_probe_specs/round1.toml --out PROBE --skip-illegal` (a machine
with ruff), then this script on PROBE (round 2 likewise).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(
    0, sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[1] / "generated")
)

import torch
from cutegemm import _runtime as rt
from cutegemm import _tune as tune

SHAPES = ((5120, 5120), (7168, 5120), (4608, 3584), (8192, 3840), (5120, 17408), (3840, 15360),
          (27648, 5120), (28672, 8192))  # fmt: skip
MS = (1, 8, 32)
DTYPES = {"bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}


def main() -> None:
    out = Path(sys.argv[2]).open("w") if len(sys.argv) > 2 else None  # noqa: SIM115
    _, arch = rt._device(0)
    plan = {}
    for name, dt in DTYPES.items():
        cls = (name, "bf16", 1.0, 0.0, None, None)
        plan[name] = [k for k in rt._BY_CLASS[(arch, *cls)] if k.swap_ab]
    tune.compile_ahead([k for ks in plan.values() for k in ks], arch, 0)
    tune.warm_clocks(3.0)
    for name, dt in DTYPES.items():
        el = dt.itemsize
        print(f"\n## {name}: {len(plan[name])} swap-AB kernels")
        print(
            "| M | N | K | MB | torch µs | torch TB/s | best µs | best TB/s | best/torch | best kernels |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for m in MS:
            for n, k in SHAPES:
                kerns = [kk for kk in plan[name] if rt._refusal(kk, m, n, k) is None]
                times, torch_us, failed = tune.measure(
                    kerns, arch, m, n, k, dt, torch.bfloat16, rounds=7
                )
                mb = ((n * k + m * k) * el + m * n * 2) / 1e6
                order = sorted(times, key=times.get)
                top = ", ".join(f"{kk} {times[kk]:.1f}" for kk in order[:4])
                b = times[order[0]]
                print(
                    f"| {m} | {n} | {k} | {mb:.0f} | {torch_us:.1f} | {mb / torch_us:.2f} | {b:.1f} "
                    f"| {mb / b:.2f} | {torch_us / b:.3f} | {top} |",
                    flush=True,
                )
                if failed:
                    print("  failed:", failed)
                if out:
                    out.write(
                        json.dumps(
                            {
                                "dtype": name,
                                "m": m,
                                "n": n,
                                "k": k,
                                "torch": torch_us,
                                "times": times,
                                "failed": failed,
                            }
                        )
                        + "\n"
                    )
                    out.flush()


if __name__ == "__main__":
    main()
