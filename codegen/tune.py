"""`codegen tune`: time every plain kernel of this GPU's arch over shape lists, interleaved with
torch, and write the tuning table `codegen render` turns into the package's dispatcher.

Plain means the epilogue computes torch's product and nothing else (alpha 1, beta 0, no bias,
no activation); kernels are grouped by (input dtype, output dtype) and compared with
torch.matmul (f16, bf16) or torch._scaled_mm (e4m3, unit scales). Each candidate is checked
against a float32 reference (output poisoned with NaN) before it is timed; one that fails is
left out of the ranking and reported.

With `graph`, each candidate (and torch) is timed as a decode step runs it: one launch per input
set, back to back in one CUDA graph (each launch reads weights no other launch left in L2, and
no host work sits between them); the time per launch is the replay's divided by the launches.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codegen.build import load_module, read_spec
from codegen.gpu import (
    Shape,
    capture_graph,
    input_sets,
    time_interleaved,
    tolerance,
    torch_dtype,
    workspace_fits,
)

COMMANDS_NOTE = (
    "# the runs that made this table, in order; a later run's picks replace earlier ones as it says"
)
TOP = 5  # kernels ranked per entry: the winner and the fallbacks for shapes it cannot take


@dataclass
class Pick:
    dtype: str
    out_dtype: str
    shape: Shape
    times: dict[str, float]  # kernel -> median µs, plus "torch"
    errors: dict[str, float]
    failed: dict[str, str]

    @property
    def ranked(self) -> list[str]:
        return sorted((k for k in self.times if k != "torch"), key=self.times.__getitem__)

    @property
    def ratio(self) -> float:
        return self.times["torch"] / self.times[self.ranked[0]]


def torch_launch(dtype: str, a, b, c) -> Callable[[], None]:
    """What a torch user runs for the same product (the ratio's denominator)."""
    import torch

    if dtype == "e4m3":
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=c.dtype)
    return lambda: torch.mm(a, b.T, out=c)


def tune_class(
    dtype: str,
    out: str,
    modules: dict[str, object],
    shape: Shape,
    rounds: int,
    reps: int,
    graph: bool = False,
) -> Pick | None:
    import torch

    fits = {
        name: mod
        for name, mod in modules.items()
        if all(
            v % mod.SHAPE_MULTIPLES[d] == 0
            for d, v in (("M", shape.m), ("N", shape.n), ("K", shape.k))
        )
        and workspace_fits(mod, shape.m, shape.n)
    }
    if not fits:
        return None
    sets = input_sets(shape, torch_dtype(dtype), torch_dtype(out))
    fns: dict[str, list[Callable[[], None]]] = {
        "torch": [torch_launch(dtype, a, b, c) for a, b, c in sets]
    }
    errors, failed = {}, {}
    a, b, c = sets[0]
    ref = a.float() @ b.float().T
    for name, mod in fits.items():
        c.fill_(float("nan"))
        try:
            mod.launcher(a, b, c)()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a kernel that cannot run is not ranked
            failed[name] = f"{type(e).__name__}: {e}"
            continue
        err = ((c.float() - ref).norm() / ref.norm()).item()
        tol = tolerance(dtype, out)
        if not math.isfinite(err) or err > tol:
            failed[name] = f"rel_err {err:.2e} > tol {tol:.0e}"
            continue
        errors[name] = err
        if graph:
            # launcher() binds the stream current at its call: call it inside the capture
            fns[name] = [lambda x=x, y=y, z=z, m=mod: m.launcher(x, y, z)() for x, y, z in sets]
        else:
            fns[name] = [mod.launcher(x, y, z) for x, y, z in sets]
    if len(fns) == 1:
        return Pick(dtype, out, shape, {}, errors, failed)
    if graph:
        graphs = {}
        for name, launches in fns.items():
            try:
                graphs[name] = [capture_graph(launches).replay]
            except RuntimeError as e:  # a launch that cannot be captured is not ranked
                failed[name] = f"CUDA graph capture: {str(e).splitlines()[0]}"
        if "torch" not in graphs or len(graphs) == 1:
            return Pick(dtype, out, shape, {}, errors, failed)
        fns = graphs
    times = time_interleaved(fns, rounds, reps)
    if graph:
        times = {name: t / len(sets) for name, t in times.items()}
    return Pick(dtype, out, shape, times, errors, failed)


def tune(
    files: list[Path],
    shapes: list[Shape],
    rounds: int,
    reps: int,
    on_shape: Callable[[str], None] | None = None,
    graph: bool = False,
) -> list[Pick]:
    """Every plain (dtype, out dtype) class of `files`, timed on every shape (with `graph`, in
    CUDA graphs: see the module's docstring)."""
    classes: dict[tuple[str, str], dict[str, object]] = {}
    for f in files:
        spec = read_spec(f)
        # the plain classes, K-major operands (the inputs torch.mm and the dispatcher see)
        if (
            not (spec.epilogue.fused or spec.epilogue.row_sumsq or spec.epilogue.block_quant)
            and spec.a_major == spec.b_major == "k"
        ):
            classes.setdefault((spec.dtype, spec.epilogue.out_dtype or spec.dtype), {})[f.stem] = f
    picks = []
    for (dtype, out), paths in sorted(classes.items()):
        modules = {name: load_module(p) for name, p in paths.items()}
        for shape in shapes:
            if on_shape:
                on_shape(f"{dtype}->{out} {shape.name}")
            pick = tune_class(dtype, out, modules, shape, rounds, reps, graph)
            if pick is not None:
                picks.append(pick)
    return picks


def table_text(picks: list[Pick], gpu: str, arch: str, command: str, versions: str) -> str:
    """The tuning table as TOML, one [[pick]] per (class, shape) with a ranking."""
    lines = [
        "# Measured by `codegen tune`: per input/output dtype (plain epilogue) and shape, every",
        "# kernel of this arch that takes the shape, timed interleaved with torch in one process",
        "# (median of the rounds; inputs rotated past L2). `codegen render` turns this file into",
        "# the cutegemm dispatcher; `ranked` is fastest first (the winner, then fallbacks).",
        f'gpu = "{gpu}"',
        f'arch = "{arch}"',
        f'measured = "{datetime.date.today().isoformat()}"',
        COMMANDS_NOTE,
        "commands = [",
        f'    "{command}",',
        "]",
        f'versions = "{versions}"',
        "",
    ]
    for p in picks:
        if not p.times:
            continue
        ranked = p.ranked[:TOP]
        lines += [
            "[[pick]]",
            f'shape = "{p.shape.name}"',
            f'dtype = "{p.dtype}"',
            f'out_dtype = "{p.out_dtype}"',
            f"m = {p.shape.m}",
            f"n = {p.shape.n}",
            f"k = {p.shape.k}",
            f"us = {p.times[ranked[0]]:.1f}",
            f"torch_us = {p.times['torch']:.1f}",
            f"ratio = {p.ratio:.3f}",
            "ranked = [" + ", ".join(f'"{r}"' for r in ranked) + "]",
            "ranked_us = [" + ", ".join(f"{p.times[r]:.1f}" for r in ranked) + "]",
            "",
        ]
    return "\n".join(lines)


def write_table(path: Path, text: str) -> None:
    """Write via a temporary file and a rename: never a half-written table."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
