"""Markdown tables for BENCHMARKS.md from the JSON that `codegen bench` (per shape, and with
--chain) writes. Usage: python .ci/bench-markdown.py bench.json [chain.json] [chain_pdl.json]"""

import json
import math
import sys


def per_shape(path: str) -> None:
    doc = json.load(open(path))
    print("| shape list | dtype | shapes | geomean ratio (torch µs / gemm µs) | worst rel_err |")
    print("|---|---|---:|---:|---:|")
    for t in doc["tables"]:
        rows = t["rows"]
        geo = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
        worst = max(r["rel_err"] for r in rows)
        print(f"| `{t['shapes']}` | {t['dtype']} | {len(rows)} | {geo:.3f}x | {worst:.1e} |")
    print()
    print("| call (bf16) | host µs |")
    print("|---|---:|")
    for k, v in doc.get("host_us", {}).items():
        print(f"| {k} | {v:.1f} |")
    for t in doc["tables"]:
        base = "torch._scaled_mm" if t["dtype"] == "e4m3" else "torch.matmul"
        print(f"\n### `{t['shapes']}`, {t['dtype']}\n")
        print(f"| shape | M | N | K | dispatcher's pick | µs | TFLOP/s | {base} µs | ratio | rel_err |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
        for r in t["rows"]:
            tflops = 2 * r["m"] * r["n"] * r["k"] / r["us"] / 1e6
            print(
                f"| {r['shape']} | {r['m']} | {r['n']} | {r['k']} | {r['kernel']} | "
                f"{r['us']:.1f} | {tflops:.0f} | {r['torch_us']:.1f} | {r['ratio']:.3f}x | "
                f"{r['rel_err']:.1e} |"
            )


def chain(path: str, label: str) -> None:
    doc = json.load(open(path))
    print(f"\n### decode chain, {label}\n")
    print("| dtype | M | µs / step | TB/s | torch µs / step | torch TB/s | ratio | rel_err | picks (QKV, attn-out, MLP up, MLP down) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in doc["chain"]:
        if r["note"]:
            print(f"| {r['dtype']} | {r['m']} | | | | | | | {r['note']} |")
            continue
        picks = ", ".join(r["picks"].values())
        print(
            f"| {r['dtype']} | {r['m']} | {r['us']:.1f} | {r['tb_s']:.2f} | {r['torch_us']:.1f} | "
            f"{r['torch_tb_s']:.2f} | {r['ratio']:.3f}x | {r['rel_err']:.1e} | {picks} |"
        )


if __name__ == "__main__":
    per_shape(sys.argv[1])
    if len(sys.argv) > 2:
        chain(sys.argv[2], "the shipped package")
    if len(sys.argv) > 3:
        chain(sys.argv[3], "every kernel launched with PDL (.ci/render-pdl-copy.sh)")
