"""`codegen bench --mlp`: the MLP block end to end (codegen/mlp.py), its table and JSON."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from rich.table import Table

from codegen import generalize as gen
from codegen import mlp
from codegen.output import console, fail

DEFAULT_MODELS = mlp.DEFAULT_MODELS
SPLIT = Path("specs/shapes/models.toml")


def _args(names: list[str], ms_text: str, layers: int, prefill_layers: int, act: str):
    try:
        ms = [int(x) for x in ms_text.split(",") if x.strip()]
    except ValueError:
        ms = []
    errors = []
    if not ms or min(ms) < 1:
        errors.append(f"--mlp-m {ms_text!r}: give M values like 1,32,128,2048,4096")
    if layers < 1 or prefill_layers < 1:
        errors.append("--layers and --prefill-layers must be at least 1")
    if act not in mlp.ACTIVATIONS:
        errors.append(f"--act {act!r}: use {' or '.join(mlp.ACTIVATIONS)}")
    blocks, bad = mlp.blocks(gen.load_split(SPLIT).models, names)
    errors += bad
    if errors:
        fail(errors)
    return blocks, ms


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if math.isfinite(x) else "-"


def print_plan(pkg, blocks, ms: list[int], gpu: str, act: str, fp8: bool, bf16: bool) -> list:
    """The kernels each cutegemm side runs on `gpu`, from the registry and the GPU's tuning table
    (no GPU needed): one dict per (model, M, dtype)."""
    import importlib

    import torch

    runtime = importlib.import_module(f"{pkg.__name__}._runtime")
    arch = next((t[0] for n, t in (*runtime.TABLES.items(), *runtime.MODELS.items()) if n == gpu),
                None)  # fmt: skip
    if arch is None:
        fail([f"--plan {gpu!r}: no tuning table or cost model of that GPU"])
    out = []
    table = Table(
        "model", "dtype", "M", "up", "down", "notes", title=f"MLP block on {gpu} ({arch})"
    )
    for col in table.columns:
        col.overflow = "fold"

    def pick(m, n, k, **kw) -> str:
        try:
            return pkg.kernel_for(m, n, k, gpu=gpu, **kw).name
        except pkg.GemmError as e:
            return f"(none: {e})"

    for b in blocks:
        for m in ms:
            if bf16:
                p = mlp.plan(pkg.KERNELS, arch, "bf16", m, b, act, runtime)
                up = p.gated or f"gemm {pick(m, 2 * b.f, b.hidden)} + torch {act} (fallback)"
                down = pick(m, b.hidden, b.f)
                down = (f"{p.residual} (fused residual) | {down} + add" if p.residual
                        else f"{down} + add")  # fmt: skip
                out.append({"model": b.model, "dtype": "bf16", "m": m, "up": up, "down": down,
                            "notes": p.notes})  # fmt: skip
                table.add_row(b.model, "bf16", str(m), up, down, "; ".join(p.notes))
            if fp8:
                kw = {"dtype": torch.float8_e4m3fn, "out_dtype": torch.bfloat16,
                      "scales": "rowwise"}  # fmt: skip
                up, down = pick(m, 2 * b.f, b.hidden, **kw), pick(m, b.hidden, b.f, **kw)
                out.append({"model": b.model, "dtype": "e4m3", "m": m, "up": up, "down": down})
                table.add_row(b.model, "e4m3", str(m), up, down, "torch quantize and " + act)
    console.print(table)
    return out


def bench_mlp(
    generated: Path, names: list[str], ms_text: str, layers: int, prefill_layers: int,
    rounds: int, reps: int, json_out: Path, *, max_autotune: bool, fp8: bool, bf16: bool,
    residual: bool, act: str, plan_gpu: str | None, alternatives: bool = False,
) -> None:  # fmt: skip
    from codegen import gpu, library

    blocks, ms = _args(names, ms_text, layers, prefill_layers, act)
    if plan_gpu:
        pkg = library.import_package(generated)
        rows = print_plan(pkg, blocks, ms, plan_gpu, act, fp8, bf16)
        json_out.write_text(json.dumps({"plan": plan_gpu, "rows": rows}, indent=1))
        console.print(f"wrote {json_out}")
        return
    arch, here = gpu.gpu_arch()
    if arch is None:
        why = "needs a GPU and torch (--plan GPU prints the kernels without one)"
        fail([f"nothing to time here ({here}): `codegen bench --mlp` {why}"])
    pkg = library.import_package(generated)
    gen.submodules(pkg)[0].warm_clocks(3.0)
    dtypes = [d for d, on in (("bf16", bf16), ("e4m3", fp8)) if on]
    report = {"gpu": here, "rounds": rounds, "reps": reps, "residual": residual, "act": act,
              "tolerance": mlp.TOL, "rows": []}  # fmt: skip
    for dtype in dtypes:
        rows = []
        for b in blocks:
            for m in ms:
                n_layers = layers if m <= 256 else prefill_layers
                console.print(f"  {b.model} {dtype} M={m} ({n_layers} layers) ...", markup=False)
                r = mlp.run_block(
                    pkg, b, m, n_layers, fn=act, residual=residual, fp8=dtype == "e4m3",
                    max_autotune=max_autotune, rounds=rounds, reps=reps,
                    alternatives=alternatives,
                )  # fmt: skip
                rows.append(r)
                for note in r.notes:
                    console.print(f"    {note}", markup=False)
                report["rows"].append({
                    "model": r.model, "dtype": r.dtype, "m": r.m, "layers": r.layers,
                    "us_per_block": r.us, "rel_err": r.rel_err, "kernels": r.kernels,
                    "notes": r.notes, "best_cutegemm": r.best_ours(),
                    "ratios": {s: r.ratio(r.best_ours(), s) for s in r.us
                               if not s.startswith("cutegemm") and r.best_ours()},
                })  # fmt: skip
                json_out.write_text(json.dumps(report, indent=1))  # a run cut short keeps rows
        _table(rows, dtype, residual, act, here)
    console.print(f"wrote {json_out}")


def _table(rows: list, dtype: str, residual: bool, act: str, here: str) -> None:
    sides = list(dict.fromkeys(s for r in rows for s in r.us))
    theirs = [s for s in sides if not s.startswith("cutegemm")]
    head = ["model", "M", "layers", *(f"{s} µs" for s in sides),
            *(f"{s} / cutegemm" for s in theirs), "worst rel_err", "kernels"]  # fmt: skip
    what = f"x + down({act}(up x))" if residual else f"down({act}(up x))"
    title = (f"MLP block {what}, {dtype}, {here}: µs per block (a CUDA graph of `layers` "
             f"blocks per side, interleaved); ratio = torch µs / best cutegemm µs")  # fmt: skip
    table = Table(*head, title=title)
    for col in table.columns:
        col.overflow = "fold"
    for r in rows:
        best = r.best_ours()
        errs = [v for v in r.rel_err.values()]
        table.add_row(
            r.model, str(r.m), str(r.layers), *(_fmt(r.us.get(s, math.nan), ".1f") for s in sides),
            *(_fmt(r.ratio(best, s), ".3f") + "x" if best else "-" for s in theirs),
            _fmt(max(errs), ".1e") if errs else "-",
            ", ".join(f"{k}: {v}" for k, v in r.kernels.items()),
        )  # fmt: skip
    console.print(table)
    if not sys.stdout.isatty():
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            best = r.best_ours()
            cells = [r.model, str(r.m), str(r.layers),
                     *(_fmt(r.us.get(s, math.nan), ".1f") for s in sides),
                     *((_fmt(r.ratio(best, s), ".3f") + "x") if best else "-" for s in theirs),
                     _fmt(max(r.rel_err.values(), default=math.nan), ".1e"),
                     ", ".join(f"{k}: {v}" for k, v in r.kernels.items())]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
