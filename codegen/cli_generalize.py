"""`codegen sweep`, `codegen fit`, `codegen report`, `codegen chain`: does the speed hold on
models the dispatcher never saw (codegen.generalize), and the cost model fitted to make it hold."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from codegen import generalize as gen
from codegen.cli_options import GeneratedOpt
from codegen.output import console, fail

app = typer.Typer()  # its commands join codegen's own (codegen.cli)


SplitOpt = Annotated[
    Path, typer.Option("--split", help="The split of the model list into tune and unseen parts.")
]
DEFAULT_SPLIT = Path("specs/shapes/models.toml")
CalibrateOpt = Annotated[
    bool,
    typer.Option(
        "--calibrate",
        help="Put each later sweep file on the first one's clock by the torch times both "
        "measured (per dtype and M): for rows of new kernels timed on another day or machine.",
    ),
]


def _split(path: Path) -> gen.Split:
    if not path.is_file():
        fail([f"{path}: no such split file (see specs/shapes/models.toml)"])
    try:
        return gen.load_split(path)
    except (ValueError, KeyError, OSError) as e:
        fail([f"{path}: {e}"])
    raise AssertionError


def _part(part: str) -> str:
    if part not in ("tune", "unseen"):
        fail([f"--part {part!r}: use tune or unseen"])
    return part


def _dtypes(text: str) -> list[str]:
    got = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in got if x not in ("bf16", "e4m3")]
    if bad or not got:
        fail([f"--dtypes {text!r}: use bf16, e4m3 or both (comma-separated)"])
    return got


def _ms(text: str, sp: gen.Split) -> set[int]:
    """--ms: M values the split has (decode_m and prefill_m), or a clear refusal."""
    legal = (*sp.decode_m, *sp.prefill_m)
    try:
        got = {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        got = set()
    bad = sorted(got - set(legal))
    if bad or not got:
        fail([f"--ms {text!r}: use M values of {sp.path.name}: {', '.join(map(str, legal))}"])
    return got


@app.command("sweep")
def sweep_cmd(
    part: Annotated[str, typer.Option("--part", help="tune or unseen.")] = "unseen",
    split: SplitOpt = DEFAULT_SPLIT,
    dtypes: Annotated[str, typer.Option("--dtypes", help="bf16, e4m3 or both.")] = "bf16,e4m3",
    out: Annotated[Path, typer.Option("-o", "--out", help="JSON lines, appended.")] = Path(
        "sweep.jsonl"
    ),
    decode: Annotated[bool, typer.Option("--decode/--no-decode", help="Decode M.")] = True,
    prefill: Annotated[bool, typer.Option("--prefill/--no-prefill", help="Prefill M.")] = True,
    ms: Annotated[
        str | None,
        typer.Option(
            "--ms", help="Only these M values of the split, comma-separated (e.g. 128,777)."
        ),
    ] = None,
    pick_only: Annotated[
        bool, typer.Option("--pick-only", help="Time only gemm() and torch (no oracle).")
    ] = False,
    rounds: Annotated[int, typer.Option("--rounds", help="Replays per graph (median).")] = 5,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Time only the kernels these comma-separated name globs match (beside gemm() "
            "and torch): new kernels' rows for `codegen fit` to read after an earlier sweep.",
        ),
    ] = None,
    compiled: Annotated[
        int,
        typer.Option(
            "--compiled",
            help="Instead: torch.compile max-autotune on this many products spread over the part "
            "(bf16 and e4m3), beside gemm() and torch.",
        ),
    ] = 0,
    contenders: Annotated[
        list[Path] | None,
        typer.Option(
            "--contenders",
            help="Earlier sweep files (repeatable): time per product only their --top fastest "
            "shipped kernels and gemm()'s pick, so pick and oracle are measured in one process.",
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="Contenders per product.")] = 4,
    generated: GeneratedOpt = Path("generated"),
) -> None:
    """On a GPU: time every plain kernel, gemm() (the dispatcher's pick) and torch on every
    projection of one part of the split, as CUDA graphs, interleaved; JSON lines to --out."""
    from codegen import gpu, library

    sp = _split(split)
    if contenders and (pick_only or only or compiled):
        fail(["--contenders: not with --pick-only, --only or --compiled (it chooses the kernels)"])
    if top < 1:
        fail([f"--top {top}: at least 1"])
    missing = [str(p) for p in contenders or [] if not p.is_file()]
    if missing:
        fail([f"--contenders {p}: no such sweep file" for p in missing])
    prods = gen.products(sp, _part(part), decode, prefill)
    if ms:
        prods = [p for p in prods if p.m in _ms(ms, sp)]
    arch, here = gpu.gpu_arch()
    if arch is None:
        fail([f"nothing to time here ({here}): `codegen sweep` needs a GPU and torch."])
    pkg = library.import_package(generated)
    console.print(f"{len(prods)} products of {len(getattr(sp, part))} {part} models on {here}")
    if compiled:
        for dtype in _dtypes(dtypes):
            gen.compiled_baseline(pkg, gen.spread(prods, compiled), dtype, out, rounds,
                                  log=lambda s: console.print(s, markup=False))  # fmt: skip
        return
    globs = [g.strip() for g in only.split(",") if g.strip()] if only else None
    chosen = None
    if contenders:
        shipped = {k.name for k in pkg.KERNELS}
        chosen = gen.contenders(gen.read_runs(contenders, calibrate=True)[1], shipped, top)
    gen.sweep(pkg, prods, _dtypes(dtypes), out, rounds, all_kernels=not pick_only, only=globs,
              contenders=chosen, log=lambda s: console.print(s, markup=False))  # fmt: skip
    console.print(f"wrote {out}")


@app.command("fit")
def fit_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Sweep files (JSON lines).")],
    split: SplitOpt = DEFAULT_SPLIT,
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Cost model (default specs/tuning/<gpu>.model.toml)."),
    ] = None,
    generated: GeneratedOpt = Path("generated"),
    calibrate: CalibrateOpt = False,
    cv: Annotated[
        bool,
        typer.Option(
            "--cv",
            help="Only cross-validate: fit on all tune models but one, rank on the one left "
            "out, for each in turn; print the pick vs the best measured kernel (writes nothing).",
        ),
    ] = False,
    jobs: Annotated[
        int, typer.Option("-j", "--jobs", help="Processes (each kernel's fit, or each --cv fold).")
    ] = 2,
) -> None:
    """Fit the cost model on the tune part's measurements only (CPU) and write it for render."""
    from codegen import costmodel, package, tune

    sp = _split(split)
    missing = [str(p) for p in runs if not p.is_file()]
    if missing:
        fail([f"{p}: no such sweep file" for p in missing])
    meta, got = gen.read_runs(runs, calibrate=calibrate)
    if not meta:
        fail([f"{', '.join(map(str, runs))}: no meta line (not a sweep file?)"])
    rows = {e.name: e.row() for e in _entries(generated)}
    prods = [(r.prod.model, r.prod.m, r.prod.n, r.prod.k, r.dtype, r.times)
             for r in got.values() if r.prod.model in sp.tune and r.times]  # fmt: skip
    points = costmodel.points_of(prods)
    if not points:
        fail([f"no measurement of a tune-part model ({', '.join(sp.tune)}) in the sweep files"])
    if cv:
        _cross_validate(sp, prods, rows, meta, jobs)
        return
    fits = costmodel.fit(rows, points, meta["sm_count"], meta["bandwidth"], max(1, jobs))
    command = (
        "codegen fit "
        + ("--calibrate " if calibrate else "")
        + " ".join(shlex.quote(str(p)) for p in runs)
    )
    text = costmodel.model_text(fits, meta["gpu"], meta["arch"], meta["sm_count"],
                                meta["bandwidth"], list(sp.tune), command)  # fmt: skip
    slug = meta["gpu"].lower().removeprefix("nvidia ").replace(" ", "-")
    path = out or Path("specs/tuning") / f"{slug}{package.MODEL_SUFFIX}"
    tune.write_table(path, text)
    table = Table(
        "kernel", "points", "rms log error", "fixed µs", "TFLOP/s per CTA", "GB/s per CTA"
    )
    for f in fits:
        table.add_row(f.name, str(f.points), f"{f.rms_log_error:.3f}", f"{f.params[0]:.1f}",
                      f"{f.params[1] / 1e6:.2f}", f"{f.params[2] / 1e3:.0f}")  # fmt: skip
    console.print(table)
    console.print(f"cost model: {path} ({len(fits)} kernels); `codegen render` makes it dispatch")


def _cross_validate(sp: gen.Split, prods: list, rows: dict, meta: dict, jobs: int) -> None:
    from codegen import costmodel

    console.print(f"cross-validating: {len(sp.tune)} fits, one per tune model left out "
                  f"({jobs} processes)")  # fmt: skip
    held = costmodel.cross_validate(rows, prods, meta["sm_count"], meta["bandwidth"], jobs)
    table = Table("dtype", "regime", "products", "pick/best (geomean)", "within 3%", "worst")
    for dtype in ("bf16", "e4m3"):
        for regime, sel in (("decode", True), ("prefill", False), ("all", None)):
            hs = [h for h in held if h.dtype == dtype and (sel is None or (h.m <= 256) == sel)]
            if hs:
                vs = [h.best_us / h.pick_us for h in hs]
                worst = min(zip(vs, hs), key=lambda x: x[0])
                table.add_row(dtype, regime, str(len(hs)), f"{gen.geomean(vs):.3f}",
                              f"{_within_3pct(vs) / len(vs):.0%}",
                              f"{worst[0]:.2f} ({worst[1].model} M={worst[1].m})")  # fmt: skip
    console.print(table)


def _within_3pct(ratios: list[float]) -> int:
    """How many of these best / pick ratios put the pick within 3% of the best kernel."""
    return sum(v >= 1 / 1.03 for v in ratios)


def _entries(generated: Path) -> list:
    from codegen import package

    return [
        package.read_entry(p.read_text(encoding="utf-8"), p.relative_to(generated).as_posix())
        for p in package.kernel_files(generated)
    ]


def _pick_of(pkg, rec: gen.Measured, gpu: str, arch: str = "sm_90a") -> str:
    """The kernel the dispatcher (the package as rendered now, no user cache) picks on `gpu` (a
    GPU with no table or model of its own: as gemm() does there, from one of its `arch`)."""
    import torch

    dt = {"bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}[rec.dtype]
    p = rec.prod
    return pkg.kernel_for(
        p.m, p.n, p.k, dtype=dt, out_dtype=torch.bfloat16, gpu=gpu, arch=arch
    ).name


@app.command("report")
def report_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Sweep files (JSON lines).")],
    split: SplitOpt = DEFAULT_SPLIT,
    generated: GeneratedOpt = Path("generated"),
    calibrate: CalibrateOpt = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown tables.")] = False,
    rows_out: Annotated[
        bool, typer.Option("--rows", help="Also one row per product (unseen part).")
    ] = False,
    pick_sweep: Annotated[
        Path | None,
        typer.Option(
            "--pick-sweep",
            help="A `codegen sweep --pick-only` file: gemm() and torch from it, the kernels' "
            "times from RUNS put on its clock (implies --calibrate).",
        ),
    ] = None,
) -> None:
    """From sweeps (CPU): per part (unseen first) and dtype, the pick, the oracle (best shipped
    kernel) and torch. The pick is what gemm() ran when the sweep timed it; where the sweep
    predates the dispatcher rendered now, what that dispatcher picks, at the sweep's time. The
    last column compares the pick's own kernel row with the oracle's (both kernel rows, as the
    cross-validation does), where a gemm() time from another file would add its clock's noise."""
    from codegen import library

    sp = _split(split)
    if pick_sweep is not None:
        if not pick_sweep.is_file():
            fail([f"--pick-sweep {pick_sweep}: no such sweep file"])
        runs, calibrate = [pick_sweep, *runs], True
    meta, got = gen.read_runs(runs, calibrate=calibrate, gemm_from_first=pick_sweep is not None)
    pkg = library.import_package(generated)
    # the oracle is the best kernel the package ships: a sweep's rows of candidates that were
    # not shipped (or were removed since) are left out
    shipped = {k.name for k in pkg.KERNELS}
    for rec in got.values():
        for name in [x for x in rec.times if x not in shipped]:
            del rec.times[name]
    gpu = meta.get("gpu", "NVIDIA H200")
    head = ["part", "dtype", "regime", "shapes", "pick/torch", "oracle/torch", "pick/oracle",
            "within 3%", "worst pick/torch", "source of the pick", "within 3%, kernel rows"]  # fmt: skip
    lines, details = [], []
    for part in ("unseen", "tune"):
        for dtype in ("bf16", "e4m3"):
            recs = list(gen.iter_part(got, sp, part, dtype))
            for regime, sel in (("decode", True), ("prefill", False), ("all", None)):
                rs = [r for r in recs if sel is None or r.prod.decode == sel]
                if not rs:
                    continue
                pick_us, src, rows_vs = [], set(), []
                for r in rs:
                    name = _pick_of(pkg, r, gpu, meta.get("arch", "sm_90a"))
                    if name in r.times:  # the pick's own kernel row, the oracle's kind of number
                        rows_vs.append(min(r.times.values()) / r.times[name])
                    if r.gemm_us is not None and r.gemm_kernel == name:
                        pick_us.append(r.gemm_us)
                        src.add("gemm() timed")
                    elif name in r.times:
                        pick_us.append(r.times[name])
                        src.add("sweep time of the pick")
                    else:  # a kernel newer than the sweep
                        pick_us.append(math.nan)
                    if part == "unseen" and regime == "all":
                        best = min(r.times, key=r.times.__getitem__)
                        details.append((r, name, pick_us[-1], best))
                # a pick this sweep never timed is left out of every column and counted, never
                # read as a number
                timed = [(r, u) for r, u in zip(rs, pick_us) if math.isfinite(u)]
                if len(timed) < len(rs):
                    src.add(f"{len(rs) - len(timed)} picks never timed, left out")
                if not timed:
                    continue
                ratio = [r.torch_us / u for r, u in timed]
                oracle = [r.torch_us / min(r.times.values()) for r, _ in timed]
                vs = [min(r.times.values()) / u for r, u in timed]
                worst = min(zip(ratio, (r for r, _ in timed)), key=lambda x: x[0])
                lines.append([
                    part, dtype, regime, str(len(timed)), f"{gen.geomean(ratio):.3f}x",
                    f"{gen.geomean(oracle):.3f}x", f"{gen.geomean(vs):.3f}",
                    f"{_within_3pct(vs)}/{len(vs)}",
                    f"{worst[0]:.2f}x ({worst[1].prod.label})", ", ".join(sorted(src)),
                    f"{_within_3pct(rows_vs)}/{len(rows_vs)}",
                ])  # fmt: skip
    _print(head, lines, markdown, f"pick vs torch and the oracle, {gpu}")
    comp = gen.read_compiled(runs)
    if comp:
        head3 = ["dtype", "products", "gemm/max-autotune", "gemm/torch", "max-autotune/torch",
                 "worst gemm/max-autotune"]  # fmt: skip
        rows3 = []
        for dtype in ("bf16", "e4m3"):
            cs = [c for c in comp if c["dtype"] == dtype]
            if cs:
                worst = min(cs, key=lambda c: c["us"] / c["gemm_us"])
                rows3.append([dtype, str(len(cs)),
                              f"{gen.geomean([c['us'] / c['gemm_us'] for c in cs]):.3f}x",
                              f"{gen.geomean([c['torch_us'] / c['gemm_us'] for c in cs]):.3f}x",
                              f"{gen.geomean([c['torch_us'] / c['us'] for c in cs]):.3f}x",
                              (f"{worst['us'] / worst['gemm_us']:.2f}x ({worst['model']} "
                               f"{worst['proj']} M={worst['m']})")])  # fmt: skip
        _print(head3, rows3, markdown, "against torch.compile(mode='max-autotune'), same process")
    if rows_out:
        head2 = ["dtype", "product", "N", "K", "pick", "µs", "torch µs", "ratio", "best", "best µs"]
        rows2 = [[r.dtype, r.prod.label, str(r.prod.n), str(r.prod.k), name, f"{us:.1f}",
                  f"{r.torch_us:.1f}", f"{r.torch_us / us:.2f}x", best, f"{r.times[best]:.1f}"]
                 for r, name, us, best in details]  # fmt: skip
        _print(head2, rows2, markdown, "unseen products")


def _print(head: list[str], rows: list[list[str]], markdown: bool, title: str) -> None:
    if markdown:
        print(f"\n**{title}**\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    table = Table(*head, title=title)
    for r in rows:
        table.add_row(*r)
    console.print(table)


@app.command("chain")
def chain_cmd(
    model: Annotated[list[str], typer.Option("--model", help="Model names of the split's list.")],
    split: SplitOpt = DEFAULT_SPLIT,
    ms: Annotated[
        str, typer.Option("--m", help="Batch sizes, comma-separated.")
    ] = "1,8,32,128,256",
    layers: Annotated[int, typer.Option("--layers", help="Decoder layers.")] = 4,
    rounds: Annotated[int, typer.Option("--rounds", help="Timed samples (median).")] = 20,
    reps: Annotated[int, typer.Option("--reps", help="Replays per timed sample.")] = 3,
    generated: GeneratedOpt = Path("generated"),
    json_out: Annotated[Path, typer.Option("--json", help="Results as JSON.")] = Path("chain.json"),
) -> None:
    """On a GPU: a decode step of `layers` layers of each model (every projection, distinct
    weights) in one CUDA graph with cutegemm.gemm, against torch in its own graph, interleaved."""
    from codegen import gpu, library

    sp = _split(split)
    unknown = [m for m in model if m not in sp.models]
    if unknown:
        fail([f"--model {m!r}: not in {sp.path.parent / 'public-models.toml'}" for m in unknown])
    try:
        batch = [int(x) for x in ms.split(",") if x.strip()]
    except ValueError:
        fail([f"--m {ms!r}: give batch sizes like 1,8,32"])
    arch, here = gpu.gpu_arch()
    if arch is None:
        fail([f"nothing to time here ({here}): `codegen chain` needs a GPU and torch."])
    pkg = library.import_package(generated)
    gen.submodules(pkg)[0].warm_clocks(3.0)
    out = []
    head = ["model", "dtype", "M", "µs / step", "TB/s", "torch µs", "ratio", "rel_err", "picks"]
    rows = []
    for name in model:
        proj = [(p, n, k) for p, n, k in gen.layer(sp, name)]
        for dtype in ("bf16", "e4m3"):
            for m in batch:
                r = library.bench_chain(pkg, dtype, m, layers, rounds, reps, proj)
                picks = ", ".join(f"{k}: {v}" for k, v in r.picks.items())
                rows.append([name, dtype, str(m), f"{r.us:.1f}", f"{r.tb_s(r.us):.2f}",
                             f"{r.torch_us:.1f}", f"{r.ratio:.3f}x", f"{r.rel_err:.1e}", picks])  # fmt: skip
                out.append({"model": name, "dtype": dtype, "m": m, "us": r.us,
                            "torch_us": r.torch_us, "ratio": r.ratio, "rel_err": r.rel_err,
                            "picks": r.picks, "note": r.note})  # fmt: skip
                if r.note:
                    console.print(f"  {name} {dtype} M={m}: {r.note}", markup=False)
                elif not r.rel_err <= gpu.TOLERANCE["bf16"]:
                    console.print(f"  {name} {dtype} M={m}: FAIL rel_err {r.rel_err:.1e}")
    _print(head, rows, not sys.stdout.isatty(), f"decode step, {layers} layers, {here}")
    json_out.write_text(json.dumps(out, indent=1))


@app.command("tune-cache")
def tune_cache_cmd(
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Models of the split's list; repeatable.")
    ] = None,
    shapes: Annotated[
        list[Path] | None, typer.Option("--shapes", help="Shape lists (TOML); repeatable.")
    ] = None,
    dtypes: Annotated[str, typer.Option("--dtypes", help="bf16, e4m3 or both.")] = "bf16",
    top: Annotated[
        int, typer.Option("--top", help="Candidates timed per shape, the model's first (0: all).")
    ] = 8,
    split: SplitOpt = DEFAULT_SPLIT,
    generated: GeneratedOpt = Path("generated"),
) -> None:
    """On a GPU: what cutegemm.tune does, from the command line: measure the shapes (every
    projection of --model at the split's decode and prefill M, and/or --shapes lists) on this GPU
    into the per-GPU cache that gemm() reads first, in this and every later process."""
    import time

    import torch

    from codegen import gpu, library

    sp = _split(split)
    todo: list[tuple[int, int, int]] = []
    for name in model or []:
        if name not in sp.models:
            fail([f"--model {name!r}: not in the split's model list ({sp.path})"])
        for proj, n, k in gen.layer(sp, name):
            todo += [(m, n, k) for m in sp.decode_m + sp.prefill_m]
    for path in shapes or []:
        if not path.is_file():
            fail([f"{path}: no such shape list"])
        todo += [(s.m, s.n, s.k) for s in gpu.load_shapes(path)]
    if not todo:
        fail(["nothing to tune: give --model NAME or --shapes FILE"])
    arch, here = gpu.gpu_arch()
    if arch is None:
        fail([f"nothing to tune here ({here}): `codegen tune-cache` needs a GPU and torch."])
    pkg = library.import_package(generated)
    tune, _ = gen.submodules(pkg)
    todo = list(dict.fromkeys(todo))
    t0 = time.perf_counter()
    for dtype in _dtypes(dtypes):
        dt = {"bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn}[dtype]
        rows = pkg.tune(todo, dtype=dt, top=top)
        console.print(f"{dtype}: {len(rows)} shapes; geomean vs torch "
                      f"{gen.geomean([r.get('ratio', math.nan) for r in rows]):.3f}x")  # fmt: skip
    console.print(f"tuned {len(todo)} shapes in {time.perf_counter() - t0:.0f} s on {here}; "
                  f"cache: {tune.cache_file(torch.cuda.get_device_name())}")  # fmt: skip
