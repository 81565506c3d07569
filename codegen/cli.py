"""The `codegen` command line: render, list, build (and the GPU stages: test, bench, export)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from codegen import loader, render

app = typer.Typer(
    help="Generate specialized CuTe DSL GEMM kernels from TOML specs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
import sys  # noqa: E402

# Rich sizes tables to the terminal; piped output (CI logs) gets a width that fits the report.
_WIDTH = None if sys.stdout.isatty() else 240
console = Console(highlight=False, width=_WIDTH)
err = Console(stderr=True, highlight=False, width=_WIDTH)

PathsArg = Annotated[
    Optional[list[Path]], typer.Argument(help="Spec files or folders (default: specs/).")
]


def fail(lines: list[str]) -> None:
    for line in lines:
        err.print(line, markup=False)
    raise typer.Exit(1)


def load_specs(paths: list[Path] | None) -> list[loader.LoadedSpec]:
    try:
        return loader.load(paths or [Path("specs")])
    except loader.SpecErrors as e:
        fail([str(p) for p in e.problems] + [f"{len(e.problems)} problem(s); nothing written."])
        raise AssertionError  # unreachable


@app.command("render")
def render_cmd(
    paths: PathsArg = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output folder.")] = Path("generated"),
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 1 if any file is stale or orphaned."),
    ] = False,
) -> None:
    """Render every spec to a kernel file in OUT, writing only files that changed."""
    specs = load_specs(paths)
    env = render.environment()
    try:
        rendered = [render.render_one(s, env) for s in specs]
    except render.RenderError as e:
        fail([str(e)])
    outcome = render.sync(rendered, out, check=check)
    if check:
        problems = [f"{out / f}: stale (differs from what the specs render)" for f in outcome.stale]
        problems += [f"{out / f}: orphan (no spec renders it)" for f in outcome.orphans]
        if problems:
            fail(problems + ["run `codegen render specs/` to regenerate."])
        console.print(f"{len(rendered)} kernels up to date in {out}/")
        return
    console.print(
        f"{len(rendered)} kernels: {len([w for w in outcome.written if w.endswith('.py')])} "
        f"written, {len([u for u in outcome.unchanged if u.endswith('.py')])} unchanged, "
        f"{len(outcome.orphans)} orphan(s) removed, in {out}/"
    )


@app.command("list")
def list_cmd(paths: PathsArg = None) -> None:
    """List every variant the specs define, with its key knobs."""
    specs = load_specs(paths)
    table = Table("name", "arch", "dtype", "tile", "stages", "swizzle", "epilogue", "scheduler", "source")
    for s in specs:
        sp = s.spec
        table.add_row(
            s.name,
            sp.arch,
            sp.dtype,
            str(sp.tile),
            str(sp.stages),
            str(sp.swizzle),
            sp.epilogue.style,
            sp.scheduler.kind,
            f"{s.path} [{s.variant}]",
        )
    console.print(table)
    console.print(f"{len(specs)} variants")


def _generated_files(folder: Path, only: str | None) -> list[Path]:
    if not folder.is_dir():
        fail([f"{folder}: no such folder; run `codegen render specs/` first."])
    files = sorted(p for p in folder.glob("*.py") if p.read_text(encoding="utf-8").startswith("# @generated"))
    if only:
        files = [p for p in files if fnmatch.fnmatch(p.stem, only)]
    if not files:
        fail([f"{folder}: no generated kernels{f' match {only!r}' if only else ''}."])
    return files


@app.command("build")
def build_cmd(
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Parallel compile processes.")] = max(
        1, os.cpu_count() or 1
    ),
    only: Annotated[
        Optional[str], typer.Option("--only", help="Glob on kernel names, e.g. 'sm100_f16_*'.")
    ] = None,
    generated: Annotated[Path, typer.Option("--dir", help="Folder of generated kernels.")] = Path(
        "generated"
    ),
    build_dir: Annotated[Path, typer.Option("--build-dir", help="Where PTX and cubin go.")] = Path(
        "build"
    ),
) -> None:
    """Cross-compile every generated kernel for its arch on the CPU; check instruction counts."""
    from codegen import build as b

    files = _generated_files(generated, only)
    with Progress(
        TextColumn("compiling"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(files))

        def done(r: b.BuildResult) -> None:
            progress.update(task, advance=1, description=r.name)

        results = b.build(files, build_dir, jobs, on_done=done)
    console.print(report_table(results))
    bad = [r for r in results if not r.passed]
    cached = sum(r.cached for r in results)
    console.print(f"{len(results) - len(bad)}/{len(results)} passed ({cached} cached); PTX and cubin in {build_dir}/")
    if bad:
        fail([f"{r.name}: {r.error or '; '.join(r.mismatches)}" for r in bad])


REPORT_COLUMNS = {
    "sm_100a": [
        "tcgen05.mma",
        "cp.async.bulk.tensor",
        "mbarrier.try_wait",
        "tcgen05.ld",
        "tcgen05.alloc",
        "tcgen05.commit",
    ],
    "sm_90a": [
        "wgmma.mma_async",
        "cp.async.bulk.tensor",
        "TMA multicast",
        "TMA store",
        "mbarrier.try_wait",
        "setmaxnreg",
        "barrier.cluster",
        "st.global",
    ],
}


def report_table(results) -> Table:
    arches = sorted({r.arch for r in results})
    cols = [c for a in arches for c in REPORT_COLUMNS.get(a, []) if c]
    cols = list(dict.fromkeys(cols))
    table = Table("variant", "SMEM B", "regs", "spill B", *cols, "status")
    for r in results:
        counts = [str(r.counts.get(c, "")) if r.ok else "" for c in cols]
        if r.ok and "tcgen05.alloc" in cols and r.alloc_cols:
            i = cols.index("tcgen05.alloc")
            counts[i] = f"{counts[i]} ({','.join(map(str, r.alloc_cols))} cols)"
        status = "ok" if r.passed else ("FAIL" if r.ok else "REJECTED")
        table.add_row(
            r.name,
            str(r.smem_bytes),
            str(r.registers if r.registers is not None else "?"),
            str(r.spill_bytes if r.spill_bytes is not None else "?"),
            *counts,
            status,
        )
    return table


def main() -> None:
    app()


if __name__ == "__main__":
    main()
