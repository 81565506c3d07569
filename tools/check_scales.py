"""gemm() with FP8 scales and a device alpha, on a GPU.

Check (default): cutegemm.gemm(a, b, scale_a=, scale_b=, out_dtype=) with per-tensor (0-d) and
row-wise ((M, 1) / (1, N) and (M,) / (N,)) float32 scales against a float32 reference, (A @ B^T)
* scale_a * scale_b, and beside torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=) where
torch runs it; gemm(a, b, alpha=<0-d tensor>) for bf16, f16 and e4m3 against alpha * A @ B^T;
outputs NaN-poisoned first; rel_err against the tolerance, the kernel the dispatcher ran. Then
the refusals (GemmError before any launch: the poisoned output stays NaN), a CUDA graph captured
with scale tensors (and one with a device alpha) replayed after the tensors' values changed in
place, and one torch.compile(fullgraph=True) run of each.

Bench (--bench): row-wise e4m3 gemm against torch._scaled_mm row-wise on
specs/shapes/llama3-70b.toml (and M = 1 for each of its (N, K)), each timed as a CUDA graph of
back-to-back launches over inputs rotated past L2, both interleaved in one process; then each
runtime-alpha or device-alpha kernel against its compiled-in twin (the plain kernel of the same
tile, scheduler and store path) on the same shapes, where the twin takes them. A Markdown table.

    python tools/check_scales.py            (on a GPU, from the repository root)
    python tools/check_scales.py --bench [--rounds 20] [--reps 20] [--shapes FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "generated"))
sys.path.insert(0, str(ROOT))

import cutegemm
import torch
from cutegemm import GemmError, gemm

from codegen import gpu

E4M3 = torch.float8_e4m3fn
OUTS = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
NAMES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32", E4M3: "e4m3"}


def tol(in_dtype: torch.dtype, out_dtype: torch.dtype) -> float:
    """codegen test's tolerance: the output's rounding, for e4m3 in at least bf16's (Hopper's
    FP8 wgmma adds its products with fewer mantissa bits than f32)."""
    return gpu.tolerance(NAMES[in_dtype], NAMES[out_dtype])


# decode M 1-32 on llama3-70b's projections runs the split-K and stream-K function kernels
# (specs/sm90/scaled_decode.toml: the function after the K reduction)
SHAPES = ((1, 4096, 4096), (8, 10240, 8192), (13, 1000, 2048), (32, 8192, 8192),
          (32, 8192, 28672), (64, 8192, 8192), (777, 5120, 4096), (2048, 3072, 1024),
          (4096, 8192, 8192))  # fmt: skip
OK = True


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()  # NaN where an element was not written


def report(label: str, kernel: str, err: float, tol: float, extra: str = "") -> None:
    global OK
    ok = err <= tol
    OK &= ok
    print(f"| {label} | {kernel} | {err:.2e} | {tol:.0e} | {extra} | {'ok' if ok else 'FAIL'} |")


def fp8(rows: int, k: int) -> torch.Tensor:
    return (torch.randn(rows, k, device="cuda") * 2).to(E4M3)


def scales(kind: str, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh positive float32 scales: per tensor (0-d), row-wise 2-D or 1-D."""
    if kind == "tensor":
        return torch.rand((), device="cuda") + 0.5, torch.rand((), device="cuda") + 0.5
    sa, sb = torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5
    return (sa, sb) if kind == "rowwise" else (sa.reshape(m), sb.reshape(n))


def torch_scaled(a, b, sa, sb, odt):
    """torch._scaled_mm as a user calls it (row-wise: (M, 1) and (1, N)), or None where it
    refuses (its own shape and dtype limits)."""
    if sa.dim() == 1:
        sa, sb = sa.reshape(-1, 1), sb.reshape(1, -1)
    try:
        return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=odt)
    except RuntimeError:
        return None


def check_values() -> None:
    print("| call | kernel | rel_err vs f32 | tol | vs torch._scaled_mm | ok |")
    print("|---|---|---:|---:|---|---|")
    for m, n, k in SHAPES:
        a, b = fp8(m, k), fp8(n, k)
        acc = a.float() @ b.float().T
        for kind in ("tensor", "rowwise", "rowwise-1d"):
            for oname, odt in OUTS.items():
                sa, sb = scales(kind, m, n)
                label = f"e4m3->{oname} {kind} M={m} N={n} K={k}"
                out = torch.full((m, n), float("nan"), device="cuda", dtype=odt)
                try:
                    kern = cutegemm.kernel_for(
                        m, n, k, dtype=E4M3, out_dtype=odt, scales=kind.split("-")[0]
                    )
                    gemm(a, b, scale_a=sa, scale_b=sb, out=out)
                except GemmError as e:
                    print(f"| {label} | refused: {str(e)[:160]} | | | | refused |")
                    continue
                ref = acc * sa.reshape(-1, 1) * sb.reshape(1, -1) if kind != "tensor" else (
                    acc * sa * sb)  # fmt: skip
                theirs = torch_scaled(a, b, sa, sb, odt)
                vs = "n/a" if theirs is None else f"{rel(out, theirs.float()):.2e}"
                report(label, kern.name, rel(out, ref), tol(E4M3, odt), f"torch {vs}")
        for dname, dt in (("bf16", torch.bfloat16), ("f16", torch.float16), ("e4m3", E4M3)):
            x = a if dt == E4M3 else torch.randn(m, k, device="cuda").to(dt)
            w = b if dt == E4M3 else torch.randn(n, k, device="cuda").to(dt)
            alpha = torch.rand((), device="cuda") + 0.5
            label = f"{dname} alpha=<0-d tensor> M={m} N={n} K={k}"
            try:
                kern = cutegemm.kernel_for(m, n, k, dtype=dt, alpha="device")
                out = gemm(x, w, alpha=alpha)
            except GemmError as e:
                print(f"| {label} | refused: {str(e)[:160]} | | | | refused |")
                continue
            ref = (x.float() @ w.float().T) * alpha
            report(label, kern.name, rel(out, ref), tol(dt, out.dtype))


def check_refusals() -> None:
    global OK
    m, n, k = 64, 256, 512
    a, b = fp8(m, k), fp8(n, k)
    one = torch.ones((), device="cuda")
    cases = {
        "scale_a (3,)": {"scale_a": torch.ones(3, device="cuda"), "scale_b": one},
        "scale_a on the CPU": {"scale_a": torch.ones(()), "scale_b": one},
        "float64 scale_b": {"scale_a": one, "scale_b": one.double()},
        "scale_a alone": {"scale_a": one},
        "row-wise with f32 out": {
            "scale_a": torch.ones(m, 1, device="cuda"),
            "scale_b": torch.ones(1, n, device="cuda"),
            "out_dtype": torch.float32,
        },
        "tensor beta": {"alpha": one, "beta": one},
        "scales with bias": {"scale_a": one, "scale_b": one, "bias": torch.ones(n, device="cuda")},
    }  # fmt: skip
    print("\n| refusal | GemmError | out untouched |")
    print("|---|---|---|")
    for label, kw in cases.items():
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        try:
            gemm(a, b, out=out, **kw)
            got, ok = "none raised", False
        except GemmError as e:
            got, ok = str(e)[:140], True
        untouched = bool(out.isnan().all())
        OK &= ok and untouched
        print(f"| {label} | {got} | {untouched} |")


def check_graph_and_compile() -> None:
    print("\n| CUDA graph / torch.compile | kernel | rel_err | tol | | ok |")
    print("|---|---|---:|---:|---|---|")
    for m, n, k in ((8, 4096, 4096), (512, 8192, 4096)):
        a, b = fp8(m, k), fp8(n, k)
        acc = a.float() @ b.float().T
        for kind in ("tensor", "rowwise"):
            sa, sb = scales(kind, m, n)
            out = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
            graph = gpu.capture_graph(
                [
                    lambda a=a, b=b, sa=sa, sb=sb, out=out: gemm(
                        a, b, scale_a=sa, scale_b=sb, out=out
                    )
                ]
            )
            new_a, new_b = scales(kind, m, n)
            sa.copy_(new_a)  # new values, same tensors: the replay reads them
            sb.copy_(new_b)
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            kern = cutegemm.kernel_for(m, n, k, dtype=E4M3, scales=kind)
            report(f"graph replay, {kind} scales changed, M={m}", kern.name,
                   rel(out, acc * sa * sb), 1e-2)  # fmt: skip
            compiled = torch.compile(
                lambda x, y, p, q: gemm(x, y, scale_a=p, scale_b=q), fullgraph=True
            )
            got = compiled(a, b, sa, sb)
            report(f"torch.compile, {kind} scales, M={m}", kern.name, rel(got, acc * sa * sb),
                   1e-2)  # fmt: skip
            torch._dynamo.reset()
        x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        alpha = torch.full((), 0.5, device="cuda")
        out = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
        graph = gpu.capture_graph([lambda x=x, w=w, s=alpha, o=out: gemm(x, w, alpha=s, out=o)])
        alpha.fill_(-2.0)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = (x.float() @ w.float().T) * -2.0
        kern = cutegemm.kernel_for(m, n, k, alpha="device")
        report(f"graph replay, bf16 device alpha 0.5 -> -2, M={m}", kern.name, rel(out, ref), 1e-2)
        compiled = torch.compile(lambda p, q, s: gemm(p, q, alpha=s), fullgraph=True)
        report(f"torch.compile, bf16 device alpha, M={m}", kern.name,
               rel(compiled(x, w, alpha), ref), 1e-2)  # fmt: skip
        torch._dynamo.reset()


# ---- bench -------------------------------------------------------------------------------------


def graph_us(launch_sets: dict[str, list], rounds: int, reps: int) -> dict[str, float]:
    """µs per launch of each entry: a CUDA graph of `reps` back-to-back launches rotating over
    its input sets, the graphs replayed interleaved (gpu.time_interleaved), median of rounds."""
    graphs = {
        key: gpu.capture_graph([launches[i % len(launches)] for i in range(reps)])
        for key, launches in launch_sets.items()
    }
    times = gpu.time_interleaved({key: [g.replay] for key, g in graphs.items()}, rounds, 1)
    return {key: us / reps for key, us in times.items()}


def bench_shapes(path: Path) -> list:
    shapes = gpu.load_shapes(path)
    seen = {(s.n, s.k) for s in shapes}
    return [gpu.Shape(f"M=1 N={n} K={k}", 1, n, k) for n, k in sorted(seen)] + shapes


def _plain_spec(kern) -> str | None:
    """A kernel's SPEC without its name and its epilogue's alpha, beta and function; None where
    its file is not in this tree (a partial copy: that kernel is simply not paired)."""
    import importlib

    try:
        spec = dict(importlib.import_module(kern.module).SPEC)
    except ModuleNotFoundError:
        return None
    epi = {k: v for k, v in spec["epilogue"].items() if k not in ("alpha", "beta", "fn")}
    return repr(sorted({**spec, "name": None, "epilogue": sorted(epi.items())}.items()))


def twins_of_scalars(arch: str) -> list[tuple]:
    """(kernel taking alpha at launch, its compiled-in twin): a runtime-alpha kernel or a
    device_alpha function kernel of `arch`, and the plain kernel (alpha 1, beta 0) whose SPEC is
    the same but for the name and the epilogue's alpha, beta and function."""
    plain = {}
    for k in cutegemm.KERNELS:
        if k.arch == arch and k.fn is None and (k.alpha, k.beta) == (1.0, 0.0) \
                and getattr(k, "row_partials", None) is None:  # fmt: skip
            plain.setdefault(_plain_spec(k), k)
    plain.pop(None, None)
    pairs = []
    for k in cutegemm.KERNELS:
        if k.arch == arch and (k.fn == "device_alpha" or (k.fn is None and k.alpha == "runtime")):
            key = _plain_spec(k)
            twin = None if key is None else plain.get(key)
            if twin is not None:
                pairs.append((k, twin))
    return pairs


def bench(args) -> None:
    from cutegemm import _runtime as rt

    _, arch = rt._device(torch.cuda.current_device())
    dev = torch.cuda.current_device()
    print(f"{torch.cuda.get_device_name()}: CUDA graphs of {args.reps} back-to-back launches, "
          f"inputs rotated past L2, median of {args.rounds} interleaved rounds")  # fmt: skip
    print("\n| shape | M | N | K | gemm row-wise µs | torch._scaled_mm row-wise µs | torch / gemm "
          "| gemm's kernel |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    ratios = []
    for s in bench_shapes(args.shapes):
        sets = gpu.input_sets(s, E4M3, torch.bfloat16)
        scaled = [(a, b, c, *scales("rowwise", s.m, s.n)) for a, b, c in sets]
        try:
            kern = cutegemm.kernel_for(s.m, s.n, s.k, dtype=E4M3, scales="rowwise")
        except GemmError as e:
            print(f"| {s.name} | {s.m} | {s.n} | {s.k} | refused: {str(e)[:100]} | | | |")
            continue
        fns = {
            "gemm": [lambda a=a, b=b, c=c, p=p, q=q: gemm(a, b, scale_a=p, scale_b=q, out=c)
                     for a, b, c, p, q in scaled],
            "torch": [lambda a=a, b=b, p=p, q=q: torch._scaled_mm(
                a, b.t(), scale_a=p, scale_b=q, out_dtype=torch.bfloat16)
                for a, b, _, p, q in scaled],
        }  # fmt: skip
        try:
            us = graph_us(fns, args.rounds, args.reps)
        except RuntimeError as e:  # torch._scaled_mm's own limits
            print(f"| {s.name} | {s.m} | {s.n} | {s.k} | torch refused: {str(e)[:80]} | | | |")
            continue
        ratios.append(us["torch"] / us["gemm"])
        print(f"| {s.name} | {s.m} | {s.n} | {s.k} | {us['gemm']:.1f} | {us['torch']:.1f} | "
              f"{ratios[-1]:.3f}x | {kern.name} |")  # fmt: skip
    if ratios:
        print(f"\ngeomean torch / gemm (row-wise e4m3): {statistics.geometric_mean(ratios):.3f}x")

    print("\n| kernel (alpha at launch) | compiled-in twin | M | N | K | launch µs | twin µs | "
          "ratio |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kern, twin in twins_of_scalars(arch):
        if kern.workspace_elems or twin.workspace_elems:
            continue
        fk, ft = rt._compiled(kern, arch, dev), rt._compiled(twin, arch, dev)
        dt = gpu.torch_dtype(kern.dtype)
        for s in bench_shapes(args.shapes):
            if rt._refusal(kern, s.m, s.n, s.k) or rt._refusal(twin, s.m, s.n, s.k):
                continue
            sets = gpu.input_sets(s, dt, gpu.torch_dtype(kern.out_dtype))
            if kern.fn == "device_alpha":
                alpha = torch.ones(1, device="cuda")
                extra = (alpha,)
            else:
                extra = tuple(1.0 for x in (kern.alpha, kern.beta) if x == "runtime")
            fns = {
                "kern": [lambda a=a, b=b, c=c, f=fk, e=extra: f(a, b, c, *e) for a, b, c in sets],
                "twin": [lambda a=a, b=b, c=c, f=ft: f(a, b, c) for a, b, c in sets],
            }
            us = graph_us(fns, args.rounds, args.reps)
            print(f"| {kern.name} | {twin.name} | {s.m} | {s.n} | {s.k} | {us['kern']:.1f} | "
                  f"{us['twin']:.1f} | {us['kern'] / us['twin']:.3f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--shapes", type=Path, default=ROOT / "specs/shapes/llama3-70b.toml")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.bench:
        bench(args)
        return
    check_values()
    check_refusals()
    check_graph_and_compile()
    print("PASS" if OK else "FAIL")
    sys.exit(0 if OK else 1)


if __name__ == "__main__":
    main()
