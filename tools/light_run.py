"""On a GPU: every configuration of tools/light_probe.py beside torch and cutegemm.gemm (the
dispatcher's pick) on decode products of both parts of specs/shapes/models.toml and two tiny
ones, each checked against a float32 reference (output poisoned first) and timed with the
package's tune.measure (CUDA graphs of launches over inputs rotated past L2, interleaved).

    python tools/light_run.py OUT.jsonl      (PYTHONPATH as .ci/gpu sets it)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "generated"))
sys.path.insert(0, str(ROOT / "tools"))

import cutegemm  # noqa: E402
import cutlass  # noqa: E402
import torch  # noqa: E402
from cutegemm import _tune as tune  # noqa: E402

import light_probe  # noqa: E402
from codegen.generalize import load_split, products  # noqa: E402

# (ROW_GROUPS, TOKEN_GROUPS, K_WARPS, UNROLL) tried per M
CONFIGS = {
    1: [(1, 1, 4, 4), (1, 1, 8, 4), (1, 1, 4, 8), (1, 1, 8, 2), (2, 1, 4, 4), (2, 1, 8, 2),
        (1, 1, 16, 2), (2, 1, 4, 8)],
    8: [(1, 1, 4, 4), (1, 1, 8, 4), (1, 1, 4, 8), (1, 1, 8, 2), (2, 1, 4, 4), (2, 1, 8, 2),
        (1, 1, 16, 2), (2, 1, 4, 8)],
    16: [(1, 2, 4, 4), (1, 2, 8, 2), (2, 2, 4, 2)],
    32: [(1, 4, 4, 4), (1, 4, 8, 2), (1, 4, 4, 2), (2, 4, 4, 2), (1, 2, 4, 4), (2, 4, 8, 1)],
}  # fmt: skip
# round 2 (after round 1 picked (1, 1, 16, 2) at M <= 8): more warps and deeper unroll, M <= 16
ROUND2 = {
    m: [(1, tg, 16, 2), (1, tg, 16, 4), (1, tg, 32, 1), (1, tg, 32, 2), (2, tg, 16, 2),
        (1, tg, 8, 8), (2, tg, 8, 4), (1, tg, 16, 1)]
    for m, tg in ((1, 1), (8, 1), (16, 2))
}  # fmt: skip
DTYPES = {"bf16": (torch.bfloat16, cutlass.BFloat16), "e4m3": (torch.float8_e4m3fn, cutlass.Float8E4M3FN)}


def main() -> None:
    out = Path(sys.argv[1]).open("w")  # noqa: SIM115
    split = load_split(ROOT / "specs/shapes/models.toml")
    global CONFIGS
    if len(sys.argv) > 3 and sys.argv[3] == "round2":
        CONFIGS = ROUND2
    prods = []
    for part in ("tune", "unseen"):
        seen = set()
        for p in products(split, part, prefill=False):
            if p.m in CONFIGS and (p.n, p.k, p.m) not in seen and p.n * p.k <= 20 * 2**26:
                seen.add((p.n, p.k, p.m))
                prods.append((part, p.model + " " + p.proj, p.m, p.n, p.k))
    tune_p = [x for x in prods if x[0] == "tune"]
    unseen_p = [x for x in prods if x[0] == "unseen"]
    prods = [x for pair in zip(tune_p, unseen_p) for x in pair] + tune_p[len(unseen_p):] + unseen_p[len(tune_p):]
    prods = [("tiny", "tiny", 1, 1024, 1024), ("tiny", "tiny", 16, 256, 256),
             ("tiny", "tiny", 8, 2048, 2048), ("tiny", "tiny", 16, 4096, 4096)] + prods  # fmt: skip
    compiled = {}
    t0 = time.time()
    for dname, (_, io) in DTYPES.items():
        for cfgs in CONFIGS.values():
            for cfg in cfgs:
                if (dname, cfg) not in compiled:
                    compiled[dname, cfg] = light_probe.compile_config(io, *cfg)
    print(f"compiled {len(compiled)} configs in {time.time() - t0:.0f} s", flush=True)
    tune.warm_clocks(3.0)
    rows = []
    deadline = t0 + float(sys.argv[2]) if len(sys.argv) > 2 else float("inf")
    for part, label, m, n, k in prods:
        if time.time() > deadline:
            print("deadline reached: stopping", flush=True)
            break
        for dname, (tin, _) in DTYPES.items():
            extra = {}
            for cfg in CONFIGS[m]:
                fn = compiled[dname, cfg]
                extra["L" + "_".join(map(str, cfg))] = lambda a, b, c, fn=fn: (lambda: fn(a, b, c))
            extra["@gemm"] = lambda a, b, c: (lambda: cutegemm.gemm(a, b, out=c))
            times, torch_us, failed = tune.measure(
                [], "sm_90a", m, n, k, tin, torch.bfloat16, 7, extra=extra
            )
            pick = cutegemm.kernel_for(m, n, k, dtype=tin).name
            row = dict(part=part, label=label, dtype=dname, m=m, n=n, k=k, torch=torch_us,
                       gemm=times.pop("@gemm", None), pick=pick, light=times, failed=failed)  # fmt: skip
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            best = min(times, key=times.get) if times else None
            print(
                f"{dname} {part:6} {label[:24]:24} M={m:<3} N={n:<6} K={k:<6} torch {torch_us:7.2f}"
                f" gemm {row['gemm'] or float('nan'):7.2f} light {best} "
                f"{times.get(best, float('nan')):7.2f} fail={list(failed.items())[:2]}",
                flush=True,
            )
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
