"""The `codegen` command line: render, list, build, verify (and the GPU stages: test, bench,
export)."""

from __future__ import annotations

import fnmatch
import json
import math
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from codegen import loader
from codegen.cli_options import GeneratedOpt, OnlyOpt
from codegen.output import console, err, fail
from codegen.plan_common import plural

app = typer.Typer(
    help="Generate specialized CuTe DSL GEMM kernels from TOML specs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PathsArg = Annotated[
    list[Path] | None, typer.Argument(help="Spec files or folders (default: specs/).")
]


MAX_PROBLEM_LINES = 50  # then one line counting the rest
SkipIllegalOpt = Annotated[
    bool,
    typer.Option(
        "--skip-illegal",
        help="Leave out \\[\\[sweep]] combinations that break a rule; print one line per rule.",
    ),
]


def load_specs(paths: list[Path] | None, skip_illegal: bool = False) -> list[loader.LoadedSpec]:
    skipped: list[loader.SpecProblem] | None = [] if skip_illegal else None
    try:
        specs = loader.load(paths or [Path("specs")], skipped)
    except loader.SpecErrors as e:
        lines = loader.capped(e.problems, MAX_PROBLEM_LINES)
        lines.append(f"{plural(len(e.problems), 'problem')}; nothing written.")
        if any(p.swept for p in e.problems):
            lines.append("(illegal [[sweep]] combinations can be left out with --skip-illegal)")
        fail(lines)
        raise AssertionError from None  # unreachable
    if skipped:
        for line in loader.skip_summary(skipped):
            err.print(line, markup=False, soft_wrap=True)
    return specs


def _count(count: int | None, word: str) -> str:
    """plural(), or "? errors" where the tool printed no count."""
    return f"? {word}s" if count is None else plural(count, word)


def exit_interrupted(message: str) -> None:
    """Print one line and leave now with 130, the shell's code for Ctrl-C. Worker pools stopped
    mid-flight can leave the interpreter's exit hooks a pipe that is gone (a traceback from
    concurrent.futures at exit, or a hang): nothing is left to clean up here, so none run."""
    err.print(message, markup=False, soft_wrap=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def out_problem(out: Path, project: Path, given: list[Path], tuning: Path | None) -> str | None:
    """Why `out` cannot hold the package (one line), or None: a file; a folder inside a package
    codegen rendered (its orphans would be the package's own files); inside a spec or tuning
    folder (the package's pyproject.toml would be read as a spec); one whose pyproject.toml is
    not codegen's (a project's own)."""
    from codegen import render

    where = out.resolve()
    if where.exists() and not where.is_dir():
        return f"-o {out}: not a folder (-o names the folder the package is written to)"
    for folder in [where, *where.parents]:
        # a package folder codegen wrote, or a folder inside a rendered output folder
        if render.is_generated(folder / "__init__.py") or (
            folder != where and render.is_generated(folder / render.MANIFEST)
        ):
            top = next(
                (f for f in [folder, *folder.parents] if render.is_generated(f / render.MANIFEST)),
                folder.parent,
            )
            return (
                f"-o {out}: inside the package rendered in {loader.display_path(top)}/; name "
                f"that folder (the one holding MANIFEST): -o {loader.display_path(top)}"
            )
    spec_folders = [p for p in given if p.is_dir()] + [project / "specs"]
    spec_folders += [tuning] if tuning is not None else []
    for folder in spec_folders:
        folder = folder.resolve()
        if where == folder or folder in where.parents:
            return (
                f"-o {out}: inside the spec folder {loader.display_path(folder)}/ (the package's "
                "pyproject.toml would be read as a spec); write it elsewhere, e.g. -o "
                f"{loader.display_path(project / 'generated')}"
            )
    own = where / "pyproject.toml"
    if own.exists() and not render.is_generated(own):
        return (
            f"-o {out}: holds a pyproject.toml codegen did not write (a project's own); "
            f"write the package elsewhere, e.g. -o {loader.display_path(where / 'generated')}"
        )
    return None


@app.command("render")
def render_cmd(
    paths: PathsArg = None,
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Output folder \\[default: ROOT/generated]."),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; exit 1 if any file is stale or orphaned."),
    ] = False,
    tuning: Annotated[
        Path | None,
        typer.Option(
            "--tuning",
            help="Tuning tables (codegen tune) the dispatcher is made from "
            "\\[default: ROOT/specs/tuning].",
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="Project root: spec paths in kernel headers are relative to it \\[default: the "
            "nearest folder holding pyproject.toml above the first spec path, else the working "
            "directory].",
        ),
    ] = None,
    skip_illegal: SkipIllegalOpt = False,
) -> None:
    """Render every spec to a kernel file in OUT/cutegemm/<arch>/, with the package around them
    (registry, dispatcher, runtime, pyproject.toml), writing only files that changed."""
    try:
        _render(paths, out, check, tuning, root, skip_illegal)
    except KeyboardInterrupt:
        exit_interrupted("interrupted: nothing written")


def _render(
    paths: list[Path] | None,
    out: Path | None,
    check: bool,
    tuning: Path | None,
    root: Path | None,
    skip_illegal: bool,
) -> None:
    from codegen import package, render

    given = paths or [Path("specs")]
    project = (root or loader.project_root(given[0])).resolve()
    out = out or Path(loader.display_path(project / "generated"))
    if tuning is not None and not tuning.is_dir():
        what = "not a folder" if tuning.exists() else "no such folder"
        fail([f"--tuning {tuning}: {what} (it names the folder of tuning tables, *.toml)"])
    problem = out_problem(out, project, given, tuning)
    if problem:
        fail([problem])
    specs = load_specs(paths, skip_illegal)
    try:
        specs = [loader.relative_to_root(s, project) for s in specs]
        read = {loader.root_relative(f, project) for f in loader.spec_files(given)}
        scanned = {loader.root_relative(p, project) for p in given if p.is_dir()}
    except ValueError as e:
        fail([str(e)])
    if check and not out.is_dir():
        fail([f"{out}: no such folder to check; run `codegen render` first"])
    with _progress("rendering") as progress:
        task = progress.add_task("", total=len(specs))
        try:
            rendered = render.render_incremental(
                specs,
                out,
                jobs=min(os.cpu_count() or 1, 8),
                on_done=lambda name: progress.update(task, advance=1, description=name),
            )
        except render.RenderError as e:
            progress.stop()
            fail([str(e)])
        except KeyboardInterrupt:
            progress.stop()
            exit_interrupted(f"interrupted: nothing written to {out}/")
    try:
        outcome = render.sync(
            rendered,
            out,
            check=check,
            sources=read | {s.path for s in specs},
            tuning=tuning or project / "specs" / "tuning",
            root=project,
            scanned=scanned,
        )
    except (render.RenderError, package.TuningError) as e:
        fail(str(e).splitlines())
    except render.Refused as e:
        fail(e.lines if check else [*e.lines, f"nothing written to {out}/"])
    except KeyboardInterrupt:
        exit_interrupted(f"interrupted: nothing written to {out}/")
    if check:
        problems = [f"{out / f}: stale (differs from what the specs render)" for f in outcome.stale]
        problems += [f"{out / f}: orphan (no spec renders it)" for f in outcome.orphans]
        if problems:
            fail(problems + ["run `codegen render specs/` to regenerate."])
        console.print(f"{len(rendered)} kernels up to date in {out}/")
        return
    kernels = {r.relpath for r in rendered}
    console.print(
        f"{len(rendered)} kernels: {len(kernels & set(outcome.written))} "
        f"written, {len(kernels & set(outcome.unchanged))} unchanged, "
        f"{plural(len(outcome.orphans), 'orphan')} removed; package files "
        f"{len(set(outcome.written) - kernels)} written; in {out}/"
    )
    if outcome.interrupted:
        exit_interrupted(f"interrupted: {out}/ already held the new package; it is complete")


def _knobs(spec) -> dict[str, str]:
    """Every knob of a spec as flat text: tile 128x256x64, epilogue.style direct, ..."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict) and set(value) <= {"m", "n", "k"} and value:
            out[prefix] = "x".join(str(value[d]) for d in "mnk" if d in value)
        elif isinstance(value, dict):
            for k, v in sorted(value.items()):
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            out[prefix] = "" if value is None else str(value)

    walk("", spec.knobs())
    return out


LIST_ALWAYS = ("arch", "dtype", "tile", "stages")  # the narrow list names these for every variant
LIST_WIDTH = 80  # the narrow list's lines when not in a terminal


@app.command("list")
def list_cmd(
    paths: PathsArg = None,
    fmt: Annotated[
        str,
        typer.Option("--format", help="table (wraps, never cuts), plain (tab-separated) or json."),
    ] = "table",
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="table: one column per knob that differs between the variants (needs a wide "
            "terminal); default: per variant its name, then its arch, dtype, tile, stages and "
            "every knob set away from its default, wrapped to the terminal (80 columns piped).",
        ),
    ] = False,
    skip_illegal: SkipIllegalOpt = False,
) -> None:
    """List every variant the specs define: its name, every knob that differs between the listed
    variants (arch always), and where it is defined."""
    if fmt not in ("table", "plain", "json"):
        fail([f"--format {fmt!r}: use table, plain or json"])
    specs = load_specs(paths, skip_illegal)
    knobs = [_knobs(s.spec) for s in specs]
    keys = sorted({k for row in knobs for k in row})
    shown = [k for k in keys if k == "arch" or len({row.get(k, "") for row in knobs}) > 1]
    # the source: the spec file, and the variant where it is not the kernel's name
    rows = [
        [s.name, *(row.get(k, "") for k in shown), _source(s)]
        for s, row in zip(specs, knobs, strict=True)
    ]
    head = ["name", *shown, "source"]
    if fmt == "json":
        print(json.dumps([dict(zip(head, r, strict=True)) for r in rows], indent=1))
        return
    if fmt == "plain":
        print("\t".join(head))
        for r in rows:
            print("\t".join(r))
        return
    if wide:
        table = whole_table(head, rows)
        # piped: as wide as the table's longest lines, so no header or cell wraps (a terminal
        # wraps cells to its own width)
        if console.is_terminal:
            console.print(table)
        else:
            natural = console.measure(table, options=console.options.update_width(10_000))
            Console(highlight=False, width=max(console.width, natural.maximum)).print(table)
    else:
        for line in narrow_list(specs, knobs, console.width if console.is_terminal else LIST_WIDTH):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(specs)} variants")


def narrow_list(specs, knobs: list[dict[str, str]], width: int) -> list[str]:
    """Per variant: its name on a line of its own, then `knob=value` for the knobs every variant
    shows (LIST_ALWAYS) and those set away from their defaults (those of its scheduler and
    epilogue kind), and where it is defined, in lines of at most `width` characters (a value
    longer than a line gets one of its own)."""
    import textwrap

    from codegen.spec import Spec

    defaults: dict[tuple[str, str], dict[str, str]] = {}  # per (scheduler, epilogue) kind
    base = {"scheduler.kind": "grid", "epilogue.style": "direct"}  # the kinds' own defaults
    lines = []
    for s, row in zip(specs, knobs, strict=True):
        kinds = (row.get("scheduler.kind", "grid"), row.get("epilogue.style", "direct"))
        if kinds not in defaults:
            defaults[kinds] = _knobs(
                Spec.model_validate(
                    {"tile": [1, 1, 1], "scheduler": {"kind": kinds[0]}, "epilogue": kinds[1]}
                )
            )
        pairs = [f"{k}={row[k]}" for k in LIST_ALWAYS if k in row]
        pairs += [
            f"{k}={v}"
            for k, v in sorted(row.items())
            if k not in LIST_ALWAYS and v != "" and v != base.get(k, defaults[kinds].get(k))
        ]
        where = _source(s)
        lines.append(s.name)
        lines += textwrap.wrap(
            " ".join(pairs) + f" source={where}",
            width=width,
            initial_indent="    ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    return lines


PIPED_EVERY = 20  # piped (a CI log), long commands print a line per this many items done


class _LineProgress(Progress):
    """Progress that, where no bar is drawn (stderr is not a terminal), prints one line per
    PIPED_EVERY items done and one when the last is: `compiling: 40/142 done (1m 05s)`."""

    def __init__(self, verb: str, *columns, **kwargs) -> None:
        super().__init__(*columns, **kwargs)
        self.verb = verb
        self._said: dict = {}

    def update(self, task_id, **kwargs) -> None:  # type: ignore[override]
        super().update(task_id, **kwargs)
        if not self.disable:
            return
        task = self._tasks[task_id]
        done, total = int(task.completed), task.total
        last = self._said.get(task_id, 0)
        if total and done > last and (done // PIPED_EVERY > last // PIPED_EVERY or done >= total):
            self._said[task_id] = done
            seconds = int(task.elapsed or 0)
            err.print(
                f"{self.verb}: {done}/{int(total)} done ({seconds // 60}m {seconds % 60:02d}s)",
                markup=False,
                highlight=False,
            )


def _progress(verb: str, piped_lines: bool = False) -> Progress:
    """A transient progress bar on stderr; where stderr is not a terminal, none, or with
    `piped_lines` (long commands) a line per PIPED_EVERY items done."""
    columns = (
        TextColumn(verb),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    options = {"console": err, "transient": True, "disable": not err.is_terminal}
    return (
        _LineProgress(verb, *columns, **options) if piped_lines else Progress(*columns, **options)
    )


def _generated_files(folder: Path, only: str | None) -> list[Path]:
    if not folder.is_dir():
        fail([f"{folder}: no such folder; run `codegen render specs/` first."])
    from codegen.package import kernel_files

    files = kernel_files(folder)
    if only:  # one glob, or several separated by commas
        globs = [g.strip() for g in only.split(",") if g.strip()]
        files = [p for p in files if any(fnmatch.fnmatch(p.stem, g) for g in globs)]
    if not files:
        fail([f"{folder}: no generated kernels{f' match {only!r}' if only else ''}."])
    return files


@app.command("build")
def build_cmd(
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Parallel compile processes.")] = max(
        1, os.cpu_count() or 1
    ),
    only: Annotated[
        str | None,
        typer.Option(
            "--only", help="Globs on kernel names, comma-separated, e.g. 'sm100_f16_*,*_splitk*'."
        ),
    ] = None,
    generated: GeneratedOpt = Path("generated"),
    build_dir: Annotated[Path, typer.Option("--build-dir", help="Where PTX and cubin go.")] = Path(
        "build"
    ),
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the report as Markdown tables.")
    ] = False,
) -> None:
    """Cross-compile every generated kernel for its arch on the CPU; check instruction counts."""
    from codegen import build as b

    files = _generated_files(generated, only)
    with _progress("compiling", piped_lines=True) as progress:
        task = progress.add_task("", total=len(files))

        def done(r: b.BuildResult) -> None:
            progress.update(task, advance=1, description=r.name)

        try:
            results = b.build(files, build_dir, jobs, on_done=done)
        except KeyboardInterrupt:
            progress.stop()
            exit_interrupted(
                f"interrupted: compiles stopped; finished results kept in {build_dir}/"
            )
    for arch in sorted({r.arch for r in results}):  # one table per arch: each has its columns
        mine = [r for r in results if r.arch == arch]
        if markdown:
            console.print(report_markdown(mine), markup=False, soft_wrap=True)
        else:
            console.print(report_table(mine))
    bad = [r for r in results if not r.passed]
    cached = sum(r.cached for r in results)
    console.print(
        f"{len(results) - len(bad)}/{len(results)} passed ({cached} cached); PTX and cubin in {build_dir}/"
    )
    if bad:
        fail([f"{r.name}: {r.error or '; '.join(r.mismatches)}" for r in bad])


def report_columns(arch: str) -> tuple[str, ...]:
    """The PTX counts the build report shows for an architecture's kernels."""
    from codegen import registry

    return registry.get(arch).report_columns if arch in registry.ARCHES else ()


def report_rows(results) -> tuple[list[str], list[list[str]]]:
    """The build report as a header and rows of text, one row per variant."""
    arches = sorted({r.arch for r in results})
    cols = list(dict.fromkeys(c for a in arches for c in report_columns(a)))
    rows = []
    for r in results:
        counts = [str(r.counts.get(c, "")) if r.ok else "" for c in cols]
        if r.ok and "tcgen05.alloc" in cols and r.alloc_cols:
            i = cols.index("tcgen05.alloc")
            counts[i] = f"{counts[i]} ({','.join(map(str, r.alloc_cols))} cols)"
        status = "ok" if r.passed else ("FAIL" if r.ok else "REJECTED")
        regs = str(r.registers if r.registers is not None else "?")
        spill = str(r.spill_bytes if r.spill_bytes is not None else "?")
        rows.append([r.name, str(r.smem_bytes), regs, spill, *counts, status])
    return ["variant", "SMEM B", "regs", "spill B", *cols, "status"], rows


def report_table(results) -> Table:
    head, rows = report_rows(results)
    return whole_table(head, rows)


def _source(s: loader.LoadedSpec) -> str:
    """Where a variant is defined: its spec file, then `[variant]` unless that is its name."""
    return s.path if s.variant == s.name else f"{s.path} [{s.variant}]"


def whole_table(head: list[str], rows: list[list[str]]) -> Table:
    """A table whose cells wrap and are never cut; the first column (the variant) is kept on one
    line: it is what a reader searches a log for."""
    table = Table(*head)
    for col in table.columns:
        col.overflow = "fold"
    first = table.columns[0]
    first.min_width = max([len(head[0]), *(len(r[0]) for r in rows)])
    first.no_wrap = True
    for row in rows:
        table.add_row(*(Text(x) for x in row))  # Text: "[variant]" is not rich markup
    return table


def report_markdown(results) -> str:
    head, rows = report_rows(results)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@app.command("verify")
def verify_cmd(
    only: Annotated[
        str | None,
        typer.Option("--only", help="Glob on kernel names (with --mutations: on mutation names)."),
    ] = None,
    generated: GeneratedOpt = Path("generated"),
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Parallel processes.")] = max(
        1, os.cpu_count() or 1
    ),
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the report as a Markdown table.")
    ] = False,
    traces: Annotated[
        int, typer.Option("--traces", help="Counterexamples printed per failing kernel.")
    ] = 1,
    mutations: Annotated[
        bool,
        typer.Option(
            "--mutations",
            help="Instead: seed each protocol bug of the mutation catalogue into the templates, "
            "verify every kernel it changes, print the Markdown table; exit 1 if one is missed.",
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", help="With --mutations: at most this many kernels per mutation."),
    ] = None,
    build_dir: Annotated[
        Path,
        typer.Option(
            "--build-dir",
            help="Reports are cached in BUILD_DIR/verify/, keyed by each file's content and "
            "codegen's own code: an unchanged kernel is not checked again.",
        ),
    ] = Path("build"),
) -> None:
    """Check every generated kernel's mbarrier protocol in all interleavings of its warps, for
    small problem sizes (docs/verify.md); exit 1 on a violation or a kernel it cannot model."""
    if mutations:
        _verify_mutations(jobs, limit, only)
        return
    import functools
    from concurrent.futures import ProcessPoolExecutor

    from codegen.render import stop_pool
    from codegen.verify import cached_report, verify_and_cache

    files = _generated_files(generated, only)
    cache_dir = build_dir / "verify"
    found = {f: cached_report(f, cache_dir) for f in files}
    todo = [f for f in files if found[f] is None]
    work = functools.partial(verify_and_cache, cache_dir=cache_dir)
    with _progress("verifying", piped_lines=True) as progress:
        task = progress.add_task("", total=len(files), completed=len(files) - len(todo))
        fresh = {}
        try:
            if jobs > 1 and len(todo) > 1:
                pool = ProcessPoolExecutor(min(jobs, len(todo)))
                try:
                    for f, r in zip(todo, pool.map(work, todo), strict=True):
                        fresh[f] = r
                        progress.update(task, advance=1, description=r.name)
                except BaseException:
                    stop_pool(pool)
                    raise
                pool.shutdown(wait=True)
            else:
                for f in todo:
                    fresh[f] = work(f)
                    progress.update(task, advance=1, description=f.stem)
        except KeyboardInterrupt:
            progress.stop()
            exit_interrupted(f"interrupted: finished results kept in {cache_dir}/")
    reports = [found[f] or fresh[f] for f in files]
    head, rows = verify_rows(reports)
    if markdown:
        console.print("| " + " | ".join(head) + " |", markup=False, soft_wrap=True)
        console.print("|" + "---|" * len(head), markup=False)
        for row in rows:
            console.print("| " + " | ".join(row) + " |", markup=False, soft_wrap=True)
    else:
        from rich.markup import escape

        table = Table(*head)
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    bad = [r for r in reports if r.status != "pass"]
    for r in bad:
        case = r.first_failure
        if case is None:
            console.print(f"{r.name}: {r.status.lower()}: {r.reason}", markup=False, soft_wrap=True)
            continue
        console.print(f"{r.name} [{case.case.label}]:", markup=False)
        for v in case.violations[:traces]:
            console.print(v.render(), markup=False, soft_wrap=True)
    seconds = sum(r.seconds for r in fresh.values())
    fails = sum(r.status == "FAIL" for r in reports)
    skipped = sum(r.status == "NOT MODELLED" for r in reports)
    console.print(
        f"{len(reports) - len(bad)}/{len(reports)} passed, {fails} failed, {skipped} not modelled "
        f"({len(files) - len(todo)} cached; {seconds:.1f} s of checking)"
    )
    if bad:
        raise typer.Exit(1)


def verify_rows(reports) -> tuple[list[str], list[list[str]]]:
    """The verify report: a header and one row per kernel."""
    rows = []
    for r in reports:
        ks = sorted({c.case.k_tiles for c in r.cases})
        ts = sorted({c.case.tiles for c in r.cases})
        sizes = f"k {','.join(map(str, ks))}" if ks else "-"
        if ts and ts != [1]:
            sizes += f"; tiles {','.join(map(str, ts))}"
        sizes += f" ({len(r.cases)} cases)"
        if r.status == "FAIL":
            case = r.first_failure
            where = f" at {case.case.label}" if case else ""
            result = f"FAIL: {', '.join(r.properties()) or r.error}{where}"
        elif r.status == "NOT MODELLED":
            result = f"not modelled: {r.reason}"
        elif any(c.numeric_unknown for c in r.cases):
            result = "pass (protocol; numerics: GPU test)"  # a light kernel or a gated pair
        elif any(c.numeric_unfollowed for c in r.cases):
            # C checked; row_sumsq's partials (block_quant's scales) seen and not followed
            scales = any((c.numeric_unfollowed or "").startswith("scales") for c in r.cases)
            result = f"pass (C; {'block scales' if scales else 'row partials'}: GPU test)"
        else:
            result = "pass"
        rows.append([r.name, r.family, r.roles, sizes, str(r.events), f"{r.seconds:.2f}", result])
    return ["kernel", "scheduler", "roles (modelled)", "sizes", "events", "s", "result"], rows


def _verify_mutations(jobs: int, limit: int | None, only: str | None = None) -> None:
    import fnmatch

    from codegen.verify import mutations as m

    # with --mutations, --only picks mutations by name (e.g. "*drop-partial")
    chosen = [x for x in m.CATALOGUE if only is None or fnmatch.fnmatch(x.name, only)]
    if not chosen:
        fail([f"no mutation matches {only!r}"])
    results = m.run(
        chosen, limit=limit, jobs=jobs, progress=lambda line: err.print(line, markup=False)
    )
    console.print(m.markdown(results), markup=False, soft_wrap=True)
    missed = [r for r in results if not r.ok]
    if missed:
        fail(
            [
                f"{r.mutation.name}: {r.error or 'not detected in every kernel it changes'}"
                for r in missed
            ]
        )


def _runnable_here(generated: Path, only: str | None) -> tuple[list[Path], str | None, str]:
    """The generated files this GPU runs, its arch and name; prints a line per skipped arch."""
    from codegen import gpu

    files = _generated_files(generated, only)
    arch, here = gpu.gpu_arch()
    runnable, skipped = gpu.split_by_arch(files, arch)
    for line in gpu.skip_lines(skipped, here):
        console.print(line)
    return runnable, arch, here


def _parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        fail([f"--shape {text!r}: write M x N x K as three positive integers, e.g. 4096x4096x512"])
    m, n, k = (int(p) for p in parts)
    return m, n, k


def _test_sanitize(files: list[Path], tools: str, jobs: int, here: str, logs: Path | None) -> None:
    from codegen import sanitize as san

    chosen = tuple(t.strip() for t in tools.split(",") if t.strip())
    unknown = [t for t in chosen if t not in san.TOOLS]
    if unknown or not chosen:
        fail([f"--tools {tools!r}: choose from {', '.join(san.TOOLS)}"])
    console.print(
        f"compute-sanitizer ({', '.join(chosen)}): {plural(len(files), 'variant')} on {here}"
    )

    def show(f: san.Finding) -> None:
        state = "clean" if f.clean else "explained" if f.passed else "REPORTED"
        errors = "?" if f.errors is None else str(f.errors)
        line = f"{f.variant:56} {f.tool:10} errors={errors:<4} warnings={f.warnings:<4} "
        console.print(f"{line}result={f.result:<4} {state} {f.detail}".rstrip(), markup=False)

    try:
        findings = san.run_all(files, chosen, jobs, on_done=show, logs=logs)
    except FileNotFoundError as e:
        fail([str(e)])
    for reason in sorted({f.explained.rsplit(" (", 1)[0] for f in findings if f.explained}):
        console.print(f"explained: {reason}", markup=False)
    bad = [f for f in findings if not f.passed]
    clean = sum(f.clean for f in findings)
    console.print(
        f"{clean}/{len(findings)} sanitized runs clean, {len(findings) - clean - len(bad)} "
        f"explained, {len(bad)} reported" + (f"; full tool output in {logs}/" if logs else "")
    )
    if bad:
        fail([f"{f.variant} [{f.tool}]: {_count(f.errors, 'error')}, "
              f"{plural(f.warnings, 'warning')}, result {f.result}" for f in bad])  # fmt: skip


@app.command("test")
def test_cmd(
    only: OnlyOpt = None,
    generated: GeneratedOpt = Path("generated"),
    shapes: Annotated[int, typer.Option("--shapes", help="Random shapes per variant.")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Seed for shapes and inputs.")] = 0,
    shape: Annotated[
        list[str] | None,
        typer.Option(
            "--shape",
            help="Run exactly this MxNxK (repeatable) instead of the fixed and random shapes.",
        ),
    ] = None,
    aot: Annotated[
        Path | None,
        typer.Option("--aot", help="Run the AOT-exported kernels in this folder instead of JIT."),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every case here.")] = None,
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="Exit 0 when there is nothing to run here."),
    ] = False,
    package: Annotated[
        bool,
        typer.Option(
            "--package",
            help="Test the cutegemm package as a user calls it: gemm() for every epilogue the "
            "registry offers here, its errors, torch.compile, CUDA graphs, the warm-cache first call.",
        ),
    ] = False,
    sanitize: Annotated[
        bool,
        typer.Option(
            "--sanitize",
            help="Run one small launch of each variant under compute-sanitizer (racecheck, "
            "synccheck, memcheck with kernel errors only) and report per variant.",
        ),
    ] = False,
    tools: Annotated[
        str, typer.Option("--tools", help="With --sanitize: comma-separated tools to run.")
    ] = "racecheck,synccheck,memcheck",
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="With --sanitize: sanitized runs at a time.")
    ] = 8,
    sanitize_logs: Annotated[
        Path | None,
        typer.Option("--logs", help="With --sanitize: keep each tool's whole output here."),
    ] = None,
) -> None:
    """Run each variant on this GPU against a float32 torch reference (NaN-poisoned outputs)."""
    from codegen import gpu

    if package:
        _test_package(generated, shapes, seed, json_out)
        return
    runnable, arch, here = _runnable_here(generated, only)
    if sanitize and runnable:
        _test_sanitize(runnable, tools, jobs, here, sanitize_logs)
        return
    exact = [_parse_shape(x) for x in shape or []]
    if not runnable:
        if allow_empty:
            console.print(f"nothing to run here ({here}); --allow-empty: exit 0")
            return
        fail(
            [
                f"nothing to run here ({here}): `codegen test` needs a GPU and torch (--allow-empty to pass anyway)."
            ]
        )
    console.print(
        f"running {plural(len(runnable), arch + ' variant')} on {here}, "
        f"{'AOT from ' + str(aot) if aot else 'JIT'}"
    )
    cases = []
    failed_variants = []
    for f in runnable:
        launch = "jit"
        if aot:
            from codegen.aot import AotKernel

            launch = AotKernel(aot / f.stem / f"lib{f.stem}.so", f.stem)
        got = gpu.check_variant(f, shapes, seed, launch, shapes=exact or None)
        worst = max(got, key=lambda c: c.rel_err)
        bad = [c for c in got if not c.passed]
        for c in got[: len(gpu.FIXED_K)] + bad[:5]:
            console.print(c.line(), markup=False)
        console.print(
            f"  {f.stem}: {len(got) - len(bad)}/{len(got)} passed, worst rel_err "
            f"{worst.rel_err:.2e} (tol {worst.tol:.0e})",
            markup=False,
        )
        if bad:
            failed_variants.append(f.stem)
        cases += got
    if json_out:
        gpu.results_json(json_out, {"gpu": here, "mode": "aot" if aot else "jit", "cases": cases})
    total_bad = sum(not c.passed for c in cases)
    console.print(
        f"{len(cases) - total_bad}/{len(cases)} cases passed over {len(runnable)} variants"
    )
    if failed_variants:
        fail([f"FAILED: {name}" for name in failed_variants])


def _test_package(generated: Path, shapes: int, seed: int, json_out: Path | None) -> None:
    import random

    from codegen import gpu, library

    arch, here = gpu.gpu_arch()
    if arch is None:
        fail([f"nothing to run here ({here}): `codegen test --package` needs a GPU and torch."])
    pkg = library.import_package(generated)
    rng = random.Random(seed)
    checks = []
    classes = library._classes(pkg, arch)
    console.print(
        f"cutegemm from {Path(pkg.__file__).parent}: {len(classes)} epilogue classes on {here}"
    )
    for cls in classes:
        got = library.check_class(pkg, cls, max(1, shapes), rng)
        for c in got:
            console.print(c.line(), markup=False)
        checks += got
    for group in (
        library.check_errors,
        library.check_runtime_scalars,
        library.check_epilogue_fns,
        library.check_layouts,
        library.check_torch_compile,
        library.check_cuda_graph,
    ):
        try:
            got = group(pkg)
        except Exception as e:  # noqa: BLE001 - one broken group must not hide the others
            got = [library.Check(group.__name__, False, f"{type(e).__name__}: {e}")]
        for c in got:
            console.print(c.line(), markup=False)
        checks += got
    runs = library.first_call(generated)
    for r in runs:
        console.print(f"first gemm() in a new process, {json.dumps(r)}", markup=False)
    bad = [c for c in checks if not c.passed] + [r for r in runs if "error" in r]
    if json_out:
        gpu.results_json(json_out, {"gpu": here, "checks": checks, "first_call": runs})
    console.print(
        f"{len(checks) - len([c for c in checks if not c.passed])}/{len(checks)} checks passed"
    )
    if bad:
        fail([f"FAILED: {getattr(c, 'what', c)}" for c in bad])


@app.command("tune")
def tune_cmd(
    shapes: Annotated[
        list[Path] | None, typer.Option("--shapes", help="Shape lists (TOML); repeatable.")
    ] = None,
    only: OnlyOpt = None,
    generated: GeneratedOpt = Path("generated"),
    rounds: Annotated[int, typer.Option("--rounds", help="Timed samples per kernel.")] = 10,
    reps: Annotated[int, typer.Option("--reps", help="Launches per timed sample.")] = 5,
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="Tuning table (default specs/tuning/<gpu>.toml)."),
    ] = None,
    command_note: Annotated[
        str, typer.Option("--command", help="The command line to record in the table.")
    ] = "codegen tune",
    graph: Annotated[
        bool,
        typer.Option(
            "--graph",
            help="Time each kernel (and torch) as a decode step runs it: one launch per input "
            "set, back to back in one CUDA graph, cold weights, no host work between launches.",
        ),
    ] = False,
) -> None:
    """On a GPU: time every plain kernel of its arch on shape lists, interleaved with torch, and
    write the tuning table `codegen render` makes the dispatcher from."""
    from codegen import gpu, tune

    shape_files = shapes or [Path("specs/shapes/llama3-70b.toml")]
    missing = [str(p) for p in shape_files if not p.exists()]
    if missing:
        fail([f"{p}: no such shape list" for p in missing])
    shape_list = [s for p in shape_files for s in gpu.load_shapes(p)]
    runnable, arch, here = _runnable_here(generated, only)
    if not runnable:
        fail([f"nothing to tune here ({here}): `codegen tune` needs a GPU and torch."])
    import torch

    name = torch.cuda.get_device_name()
    with _progress("tuning") as progress:
        task = progress.add_task("", total=None)
        picks = tune.tune(
            runnable,
            shape_list,
            rounds,
            reps,
            on_shape=lambda label: progress.update(task, description=label),
            graph=graph,
        )
    table = Table("dtype", "shape", "M", "N", "K", "winner", "µs", "torch µs", "ratio", "failed")
    for p in picks:
        if not p.times:
            table.add_row(p.dtype, p.shape.name, *[""] * 7, str(len(p.failed)))
            continue
        w = p.ranked[0]
        table.add_row(
            f"{p.dtype}->{p.out_dtype}",
            p.shape.name,
            str(p.shape.m),
            str(p.shape.n),
            str(p.shape.k),
            w,
            f"{p.times[w]:.1f}",
            f"{p.times['torch']:.1f}",
            f"{p.ratio:.2f}x",
            str(len(p.failed)),
        )
    console.print(table)
    for p in picks:
        for k, why in p.failed.items():
            console.print(f"not ranked on {p.shape.name}: {k}: {why}", markup=False)
    slug = name.lower().removeprefix("nvidia ").replace(" ", "-")
    path = out or Path("specs/tuning") / f"{slug}.toml"
    versions = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
    tune.write_table(path, tune.table_text(picks, name, arch, command_note, versions))
    console.print(
        f"tuning table: {path} ({len(picks)} entries); `codegen render` makes it the dispatcher"
    )


@app.command("bench")
def bench_cmd(
    shapes: Annotated[Path, typer.Option("--shapes", help="Shape list (TOML).")] = Path(
        "specs/shapes/llama3-70b.toml"
    ),
    only: OnlyOpt = None,
    generated: GeneratedOpt = Path("generated"),
    rounds: Annotated[
        int, typer.Option("--rounds", help="Timed samples per kernel (median).")
    ] = 20,
    reps: Annotated[int, typer.Option("--reps", help="Launches per timed sample.")] = 5,
    json_out: Annotated[Path, typer.Option("--json", help="Results as JSON.")] = Path("bench.json"),
    plot_out: Annotated[Path, typer.Option("--plot", help="Speedup plot (PNG).")] = Path(
        "bench.png"
    ),
    pick: Annotated[
        str,
        typer.Option(
            "--pick",
            help="dispatcher: time what cutegemm.gemm runs per shape (what a user gets), plus host "
            "µs per call; all: time every variant and report the best (an oracle).",
        ),
    ] = "dispatcher",
    extra_shapes: Annotated[
        list[Path] | None,
        typer.Option("--also", help="More shape lists (e.g. shapes the tuning never saw)."),
    ] = None,
    chain: Annotated[
        bool,
        typer.Option(
            "--chain",
            help="Time a decode step instead: every projection of --layers Llama-3-70B layers in "
            "one CUDA graph (the dispatcher's picks) against torch in its own graph.",
        ),
    ] = False,
    chain_m: Annotated[
        str, typer.Option("--chain-m", help="With --chain: the batch sizes M, comma-separated.")
    ] = "1,16,64,128,256",
    layers: Annotated[
        int, typer.Option("--layers", help="With --chain or --mlp: decoder layers (decode M).")
    ] = 4,
    mlp: Annotated[
        bool,
        typer.Option(
            "--mlp",
            help="Time the MLP block end to end instead (x -> fused gate+up with the activation "
            "-> down + residual) against torch eager and torch.compile: codegen/mlp.py.",
        ),
    ] = False,
    model: Annotated[
        list[str] | None, typer.Option("--model", help="With --mlp: models (repeatable).")
    ] = None,
    mlp_m: Annotated[
        str, typer.Option("--mlp-m", help="With --mlp: M values (decode <= 256, prefill above).")
    ] = "1,32,128,2048,4096",
    prefill_layers: Annotated[
        int, typer.Option("--prefill-layers", help="With --mlp: layers per graph at prefill M.")
    ] = 2,
    max_autotune: Annotated[
        bool, typer.Option("--max-autotune", help="With --mlp: also torch.compile max-autotune.")
    ] = False,
    fp8: Annotated[
        bool, typer.Option("--fp8", help="With --mlp: also the FP8 (e4m3, row-wise) pipeline.")
    ] = False,
    fp8_only: Annotated[bool, typer.Option("--fp8-only", help="With --mlp: FP8 only.")] = False,
    residual: Annotated[
        bool, typer.Option("--residual/--no-residual", help="With --mlp: y = x + MLP(x) or not.")
    ] = True,
    act: Annotated[
        str, typer.Option("--act", help="With --mlp: the gated activation, swiglu or geglu.")
    ] = "swiglu",
    alternatives: Annotated[
        bool,
        typer.Option(
            "--alternatives",
            help="With --mlp: also time each other gated (residual) kernel that takes the shape "
            "as a side 'alt up=TILE' ('alt down=TILE'), bf16; never counted as cutegemm's time.",
        ),
    ] = False,
    plan_gpu: Annotated[
        str | None,
        typer.Option(
            "--plan",
            help="With --mlp: no GPU; print the kernels each side would run on this GPU (e.g. "
            "'NVIDIA H200') from the registry and its tuning table, then stop.",
        ),
    ] = None,
) -> None:
    """Time generated kernels beside torch, interleaved, in one process, on shape lists."""
    from codegen import build as b
    from codegen import gpu

    if mlp:
        from codegen import cli_mlp

        cli_mlp.bench_mlp(
            generated, model or list(cli_mlp.DEFAULT_MODELS), mlp_m, layers, prefill_layers,
            rounds, reps, json_out if json_out != Path("bench.json") else Path("mlp.json"),
            max_autotune=max_autotune, fp8=fp8 or fp8_only, bf16=not fp8_only,
            residual=residual, act=act, plan_gpu=plan_gpu, alternatives=alternatives,
        )  # fmt: skip
        return
    if chain:
        try:
            ms = [int(x) for x in chain_m.split(",") if x.strip()]
        except ValueError:
            fail([f"--chain-m {chain_m!r}: give batch sizes like 1,16,64"])
        if not ms or min(ms) < 1 or layers < 1:
            fail(["--chain-m needs batch sizes >= 1 and --layers at least 1"])
        _bench_chain(generated, ms, layers, rounds, reps, json_out)
        return

    if not shapes.exists():
        fail([f"{shapes}: no such shape list"])
    if pick not in ("dispatcher", "all"):
        fail([f"--pick {pick!r}: use dispatcher or all"])
    if pick == "dispatcher":
        _bench_dispatch([shapes, *(extra_shapes or [])], generated, rounds, reps, json_out)
        return
    shape_list = gpu.load_shapes(shapes)
    runnable, _, here = _runnable_here(generated, only)
    if not runnable:
        fail([f"nothing to time here ({here})."])
    modules = {f.stem: b.load_module(f) for f in runnable}
    rows: list = []
    with _progress("timing") as progress:
        task = progress.add_task("", total=len(shape_list))
        for shape in shape_list:
            progress.update(task, description=shape.name)
            rows += gpu.bench_shape(shape, modules, rounds, reps)
            progress.update(task, advance=1)
    best = {}
    for r in rows:
        if r.shape not in best or r.us < best[r.shape].us:
            best[r.shape] = r
    table = Table(
        "shape",
        "M",
        "N",
        "K",
        "best variant",
        "µs",
        "TFLOP/s",
        "TB/s",
        "torch µs",
        "torch TFLOP/s",
        "ratio",
        "rel_err",
    )
    for shape in shape_list:
        r = best.get(shape.name)
        if r is None:
            table.add_row(
                shape.name, str(shape.m), str(shape.n), str(shape.k), "(no variant fits)", *[""] * 7
            )
            continue
        table.add_row(
            r.shape,
            str(r.m),
            str(r.n),
            str(r.k),
            r.variant,
            f"{r.us:.1f}",
            f"{r.tflops:.0f}",
            f"{r.tbps:.2f}",
            f"{r.torch_us:.1f}",
            f"{r.torch_tflops:.0f}",
            f"{r.ratio:.2f}x",
            f"{r.rel_err:.1e}",
        )
    console.print(table)
    ratios = [r.ratio for r in best.values()]
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        console.print(
            f"geomean ratio to torch.matmul over {len(ratios)} shapes: {geo:.3f}x ({here})"
        )
    gpu.results_json(
        json_out,
        {
            "gpu": here,
            "rounds": rounds,
            "reps": reps,
            "rows": [dict(r.__dict__, tflops=r.tflops, tbps=r.tbps, ratio=r.ratio) for r in rows],
        },
    )
    if best:
        gpu.plot([best[s.name] for s in shape_list if s.name in best], plot_out)
    console.print(f"results: {json_out}, plot: {plot_out}")


def _package_here(generated: Path, command: str) -> tuple[object, str, list[str]]:
    """The cutegemm package, this GPU's name, and the input dtypes it has kernels of for it."""
    from codegen import gpu, library

    arch, here = gpu.gpu_arch()
    if arch is None:
        fail([f"nothing to time here ({here}): `{command}` needs a GPU and torch."])
    pkg = library.import_package(generated)
    dtypes = [
        d for d in ("bf16", "e4m3") if any(k.arch == arch and k.dtype == d for k in pkg.KERNELS)
    ]
    return pkg, here, dtypes


def _bench_chain(
    generated: Path, ms: list[int], layers: int, rounds: int, reps: int, json_out: Path
) -> None:
    from codegen import gpu, library

    pkg, here, dtypes = _package_here(generated, "codegen bench --chain")
    report: dict = {"gpu": here, "rounds": rounds, "reps": reps, "layers": layers, "chain": []}
    for dtype in dtypes:
        torch_name = "torch._scaled_mm" if dtype == "e4m3" else "torch.matmul"
        table = Table(
            "M", "µs / step", "TB/s", f"{torch_name} µs", "TB/s", "ratio", "rel_err", "picks",
            title=f"decode step, {layers} Llama-3-70B layers x (QKV, attn-out, MLP up, MLP down), "
            f"{dtype}: one CUDA graph each, cutegemm.gemm vs {torch_name}, interleaved",
        )  # fmt: skip
        for col in table.columns:
            col.overflow = "fold"
        rows = []
        for m in ms:
            r = library.bench_chain(pkg, dtype, m, layers, rounds, reps)
            rows.append(r)
            if r.note:
                console.print(f"  M={m}: {r.note}", markup=False)
                continue
            if not r.rel_err <= gpu.TOLERANCE["bf16"]:
                console.print(f"  M={m}: FAIL rel_err {r.rel_err:.1e} > tol 1e-02", markup=False)
            picks = ", ".join(f"{k}: {v}" for k, v in r.picks.items())
            table.add_row(
                str(m), f"{r.us:.1f}", f"{r.tb_s(r.us):.2f}", f"{r.torch_us:.1f}",
                f"{r.tb_s(r.torch_us):.2f}", f"{r.ratio:.3f}x", f"{r.rel_err:.1e}", Text(picks),
            )  # fmt: skip
        console.print(table)
        report["chain"] += [
            {
                "dtype": r.dtype, "m": r.m, "us": r.us, "torch_us": r.torch_us,
                "ratio": r.ratio, "tb_s": r.tb_s(r.us), "torch_tb_s": r.tb_s(r.torch_us),
                "bytes": r.bytes_moved, "picks": r.picks, "rel_err": r.rel_err, "note": r.note,
            }
            for r in rows
        ]  # fmt: skip
    json_out.write_text(json.dumps(report, indent=1))
    console.print(f"wrote {json_out}")


def _bench_dispatch(
    shape_files: list[Path], generated: Path, rounds: int, reps: int, json_out: Path
) -> None:
    from codegen import gpu, library

    pkg, here, dtypes = _package_here(generated, "codegen bench")
    report: dict = {"gpu": here, "rounds": rounds, "reps": reps, "tables": []}
    for path in shape_files:
        if not path.exists():
            fail([f"{path}: no such shape list"])
        shapes = gpu.load_shapes(path)
        for dtype in dtypes:
            rows = library.bench_picks(pkg, shapes, dtype, rounds, reps)
            torch_name = "torch._scaled_mm" if dtype == "e4m3" else "torch.matmul"
            table = Table(
                "shape",
                "M",
                "N",
                "K",
                "dispatcher's pick",
                "µs",
                "TFLOP/s",
                "TB/s",
                f"{torch_name} µs",
                "ratio",
                "rel_err",
                title=f"{path} {dtype}: cutegemm.gemm vs {torch_name}, same process, interleaved",
            )
            in_b = 1 if dtype == "e4m3" else 2
            for r in rows:
                sh = r.shape
                table.add_row(
                    sh.name,
                    str(sh.m),
                    str(sh.n),
                    str(sh.k),
                    r.kernel,
                    f"{r.us:.1f}",
                    f"{sh.flop / r.us / 1e6:.0f}",
                    f"{sh.bytes_moved(in_b, 2) / r.us / 1e6:.2f}",
                    f"{r.torch_us:.1f}",
                    f"{r.ratio:.2f}x",
                    f"{r.rel_err:.1e}",
                )
            console.print(table)
            if rows:
                geo = math.exp(sum(math.log(r.ratio) for r in rows) / len(rows))
                console.print(f"geomean ratio {geo:.3f}x over {len(rows)} shapes ({path}, {dtype})")
            report["tables"].append(
                {
                    "shapes": str(path),
                    "dtype": dtype,
                    "rows": [
                        {
                            "shape": r.shape.name,
                            "m": r.shape.m,
                            "n": r.shape.n,
                            "k": r.shape.k,
                            "kernel": r.kernel,
                            "us": r.us,
                            "torch_us": r.torch_us,
                            "ratio": r.ratio,
                            "rel_err": r.rel_err,
                        }
                        for r in rows
                    ],
                }
            )
    costs = library.host_costs_fresh(generated)
    table = Table(
        "call (bf16)", "host µs per call", title="host cost per call (200 calls, no sync)"
    )
    for k, v in costs.items():
        table.add_row(k, f"{v:.1f}")
    console.print(table)
    report["host_us"] = costs
    gpu.results_json(json_out, report)
    console.print(f"results: {json_out}")


@app.command("export")
def export_cmd(
    only: OnlyOpt = None,
    generated: GeneratedOpt = Path("generated"),
    out: Annotated[Path, typer.Option("-o", "--out", help="Export folder.")] = Path("export"),
    link: Annotated[
        bool, typer.Option("--link/--no-link", help="Link libNAME.so where CUDA headers exist.")
    ] = True,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Parallel export processes.")] = max(
        1, os.cpu_count() or 1
    ),
) -> None:
    """AOT-export kernels to NAME.o + NAME.h, a C shim with a flat entry point, and libNAME.so.

    The shared library needs no DSL to run: load it with `codegen.aot.AotKernel` (torch only).
    """
    from codegen import export
    from codegen.build import read_spec

    files = _generated_files(generated, only)
    # the C shim's flat entry point takes row-major A (M, K) and B (N, K) with lda, ldb
    specs = {f: read_spec(f) for f in files}
    mn = [f for f in files if (specs[f].a_major, specs[f].b_major) != ("k", "k")]
    if mn:
        files = [f for f in files if f not in mn]
        console.print(
            f"skipped {plural(len(mn), 'kernel')} with an MN-major operand (a_major / b_major = "
            '"mn"): the C shim takes row-major a (M, K) and b (N, K) with lda, ldb',
            markup=False,
        )
    with _progress("exporting") as progress:
        progress.add_task("", total=None)
        try:
            dirs = export.export_variants(files, out, jobs=jobs)
        except export.ExportError as e:
            progress.stop()
            fail(str(e).splitlines())
    console.print(f"exported {plural(len(dirs), 'kernel')} to {out}/ (NAME.o, NAME.h, NAME_shim.c)")
    include = export.find_cuda_include() if link else None
    if include is None:
        console.print(f"not linked here; on the GPU machine run: sh {out}/build.sh")
        return
    try:
        libs = export.build_shared_library(out, include)
    except export.ExportError as e:
        fail(str(e).splitlines())
    console.print(
        f"linked {len(libs)} shared librar{'y' if len(libs) == 1 else 'ies'} against {include}"
    )


from codegen import cli_generalize  # sweep, fit, report, chain

app.registered_commands += cli_generalize.app.registered_commands


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # before or after a command's own handling (typer's set-up)
        exit_interrupted("interrupted")


if __name__ == "__main__":
    main()
