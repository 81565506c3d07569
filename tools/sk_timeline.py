"""Per-CTA timeline of an sm_90a stream-K kernel: where each CTA's time goes (mainloop, the
fix-up's wait and reads, the epilogue), read from %globaltimer.

    python tools/sk_timeline.py NAME MxNxK [CTAS]

Makes an instrumented copy of generated/cutegemm/sm90/NAME.py in memory (a temporary file,
never generated/): consumer thread 0 of every CTA stamps the global timer at its start and, per unit
(tile, k range), after the mainloop, after the hand-over or fix-up and after the epilogue, into
16 int64 slots per CTA placed after the kernel's own workspace. Launches it once cold and once
warm (same inputs), then prints, relative to the earliest start: per CTA the stamps; over all
CTAs the mean and max of each phase. The output is checked against a float32 reference. Needs a
GPU, torch, the CuTe DSL and generated/ on the path.
"""

import importlib.util
import math
import sys
import tempfile
from pathlib import Path

import torch

from codegen.build import load_module

SLOTS = 16  # int64 stamps per CTA: start, then 3 per unit (at most 5 units)


def instrument(src: str) -> str:
    """The kernel source with timer stamps added (see the module docstring)."""
    loop = "    for ct in cutlass.range(first_tile, last_tile + 1, 1, unroll=1):\n"
    consumer_loop = src.index(loop, src.index("def consumers("))
    head = (
        "    dbg = cute.recast_ptr(mWork.iterator + WORKSPACE_ELEMS, dtype=cutlass.Int64)\n"
        "    unit = cutlass.Int32(0)\n"
        "    if ctidx == 0:\n"
        f"        cute.arch.store(dbg + bidx * {SLOTS}, cute.arch.globaltimer())\n"
    )
    src = src[:consumer_loop] + head + src[consumer_loop:]

    def stamp(slot: int, indent: str = "        ") -> str:
        return (
            f"{indent}if ctidx == 0:\n"
            f"{indent}    if unit < 5:\n"
            f"{indent}        cute.arch.store(dbg + bidx * {SLOTS} + {slot} + 3 * unit, "
            "cute.arch.globaltimer())\n"
        )

    after_main = "            tiled_mma, acc, tCrA, tCrB, full, empty, stage, phase, k_begin, k_end\n        )\n"
    i = src.index(after_main, consumer_loop) + len(after_main)
    src = src[:i] + stamp(1) + src[i:]
    epi = "        # ---- 4. epilogue"
    i = src.index(epi, consumer_loop)
    src = src[:i] + stamp(2) + src[i:]
    teardown = "    # ---- 5. teardown"
    i = src.index(teardown, consumer_loop)
    src = src[:i] + stamp(3) + "        unit += 1\n\n" + src[i:]
    src = src.replace(
        "workspace = torch.zeros(WORKSPACE_ELEMS, dtype=torch.float32, device=a.device)",
        "workspace = torch.zeros(WORKSPACE_ELEMS + 2 * SLOTS * SK_CTAS, dtype=torch.float32, "
        "device=a.device)\n    global LAST_WORKSPACE\n    LAST_WORKSPACE = workspace",
    )
    return f"SLOTS = {SLOTS}\nLAST_WORKSPACE = None\n" + src


def main() -> None:
    name, shape = sys.argv[1], sys.argv[2]
    m, n, k = (int(x) for x in shape.split("x"))
    spec = importlib.util.find_spec(f"cutegemm.sm90.{name}")
    # a real file: the DSL reads each kernel function's source back from its module's file
    path = Path(tempfile.mkdtemp()) / f"_timeline_{name}.py"
    path.write_text(instrument(Path(spec.origin).read_text()))
    mod = load_module(path)
    if len(sys.argv) > 3:
        mod.device_sm_count = lambda device=None, c=int(sys.argv[3]): c
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    fn = mod.launcher(a, b, c)
    ws = mod.LAST_WORKSPACE
    fn()
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    print(f"{name} M={m} N={n} K={k}: rel_err {((c.float() - ref).norm() / ref.norm()).item():.1e}")
    for label in ("cold", "warm"):
        ws[mod.WORKSPACE_ELEMS :].zero_()
        fn()
        torch.cuda.synchronize()
        stamps = ws[mod.WORKSPACE_ELEMS :].view(torch.int64).view(-1, SLOTS).cpu()
        ctas = int((stamps[:, 0] != 0).sum())
        t0 = int(stamps[:ctas, 0].min())
        rel = (stamps[:ctas].double() - t0) / 1000.0  # µs
        rel[stamps[:ctas] == 0] = float("nan")
        end = torch.nan_to_num(rel[:, 1:], nan=-1.0).max(dim=1).values
        print(f"-- {label}: {ctas} CTAs, kernel span {float(end.max()):.1f} µs (from first start)")
        starts = rel[:, 0]
        print(f"   start: mean {float(starts.mean()):.1f} max {float(starts.max()):.1f}")
        for u in range(5):
            main_end, fix_end, epi_end = rel[:, 1 + 3 * u], rel[:, 2 + 3 * u], rel[:, 3 + 3 * u]
            ok = ~torch.isnan(main_end)
            if not ok.any():
                break
            fix = (fix_end - main_end)[ok]
            epi = (epi_end - fix_end)[ok]
            print(
                f"   unit {u}: {int(ok.sum())} CTAs; mainloop ends mean {float(main_end[ok].mean()):.1f} "
                f"max {float(main_end[ok].max()):.1f}; hand-over/fix-up mean {float(fix.mean()):.1f} "
                f"max {float(fix.max()):.1f}; epilogue mean {float(epi.mean()):.1f} max {float(epi.max()):.1f}"
            )
        if label == "warm":
            for cta in list(range(min(ctas, 20))) + list(range(max(ctas - 4, 20), ctas)):
                row = " ".join(
                    "-" if math.isnan(v) else f"{v:6.1f}" for v in rel[cta].tolist()[:13]
                )
                print(f"   cta {cta:3d}: {row}")


if __name__ == "__main__":
    main()
