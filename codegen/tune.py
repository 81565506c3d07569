"""`codegen tune`: time every plain kernel of this GPU's arch over shape lists, interleaved with
torch, and write the tuning table `codegen render` turns into the package's dispatcher.

Plain means the epilogue computes torch's product and nothing else (alpha 1, beta 0, no bias,
no activation); kernels are grouped by (input dtype, output dtype) and compared with
torch.matmul (f16, bf16) or torch._scaled_mm (e4m3, unit scales). Each candidate is checked
against a float32 reference (output poisoned with NaN) before it is timed; one that fails is
left out of the ranking and reported.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codegen.build import load_module
from codegen.gpu import TOLERANCE, Shape, time_interleaved, workspace_fits

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


def is_plain(spec: dict) -> bool:
    epi = spec["epilogue"]
    return (
        float(epi.get("alpha", 1.0)) == 1.0
        and float(epi.get("beta", 0.0)) == 0.0
        and epi.get("activation", "none") == "none"
        and epi.get("bias", "none") == "none"
    )


def out_name(spec: dict) -> str:
    return spec["epilogue"].get("out_dtype") or spec["dtype"]


def _torch_dtypes(dtype: str, out: str):
    import torch

    names = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    return (torch.float8_e4m3fn if dtype == "e4m3" else names[dtype]), names[out]


def _sets(shape: Shape, dtype: str, out: str, min_bytes: int = 256 << 20) -> list[tuple]:
    """(a, b, c) input sets, enough that cycling through them overflows the 50 MB L2."""
    import torch

    tin, tout = _torch_dtypes(dtype, out)
    in_bytes = 1 if dtype == "e4m3" else 2
    per = shape.bytes_moved(in_bytes, torch.empty(0, dtype=tout).element_size())
    sets = []
    for _ in range(max(2, min(8, -(-min_bytes // per)))):
        a = torch.randn(shape.m, shape.k, device="cuda").to(tin)
        b = torch.randn(shape.n, shape.k, device="cuda").to(tin)
        sets.append((a, b, torch.empty(shape.m, shape.n, device="cuda", dtype=tout)))
    return sets


def torch_launch(dtype: str, a, b, c) -> Callable[[], None]:
    """What a torch user runs for the same product (the ratio's denominator)."""
    import torch

    if dtype == "e4m3":
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=c.dtype)
    return lambda: torch.mm(a, b.T, out=c)


def tune_class(
    dtype: str, out: str, modules: dict[str, object], shape: Shape, rounds: int, reps: int
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
    sets = _sets(shape, dtype, out)
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
        if not math.isfinite(err) or err > TOLERANCE[out]:
            failed[name] = f"rel_err {err:.2e} > tol {TOLERANCE[out]:.0e}"
            continue
        errors[name] = err
        fns[name] = [mod.launcher(x, y, z) for x, y, z in sets]
    if len(fns) == 1:
        return Pick(dtype, out, shape, {}, errors, failed)
    times = time_interleaved(fns, rounds, reps)
    return Pick(dtype, out, shape, times, errors, failed)


def tune(
    files: list[Path],
    spec_of: Callable[[Path], dict],
    shapes: list[Shape],
    rounds: int,
    reps: int,
    on_shape: Callable[[str], None] | None = None,
) -> list[Pick]:
    """Every plain (dtype, out dtype) class of `files`, timed on every shape."""
    classes: dict[tuple[str, str], dict[str, object]] = {}
    for f in files:
        spec = spec_of(f)
        if is_plain(spec):
            classes.setdefault((spec["dtype"], out_name(spec)), {})[f.stem] = f
    picks = []
    for (dtype, out), paths in sorted(classes.items()):
        modules = {name: load_module(p) for name, p in paths.items()}
        for shape in shapes:
            if on_shape:
                on_shape(f"{dtype}->{out} {shape.name}")
            pick = tune_class(dtype, out, modules, shape, rounds, reps)
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
        f'command = "{command}"',
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
