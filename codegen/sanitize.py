"""`codegen test --sanitize`: one small launch of each variant under NVIDIA compute-sanitizer.

Each (variant, tool) runs in its own child process, `compute-sanitizer --tool TOOL python -m
codegen.sanitize FILE`, which compiles the variant, launches it once on a small problem with a
NaN-poisoned output and checks the result against a float32 reference. The parent reads the
tool's summary line. Tools: racecheck (shared-memory hazards), synccheck (barrier misuse) and
memcheck (out-of-bounds and misaligned accesses; kernel errors only, API errors not reported).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("racecheck", "synccheck", "memcheck")
# racecheck: "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)"
RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)"
)
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RESULT = re.compile(r"^RESULT (\S+) rel_err=(\S+) tol=(\S+)(?: (.*))?$", re.MULTILINE)


@dataclass(frozen=True)
class Finding:
    """What one tool said about one launch of one variant."""

    variant: str
    tool: str
    errors: int | None  # None: the tool printed no summary (it, or the child, failed)
    warnings: int
    result: str  # "ok", "FAIL", or why the launch did not happen
    detail: str  # the first hazard/error line the tool printed, if any

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.warnings == 0 and self.result == "ok"


def small_shape(mult: dict[str, int]) -> tuple[int, int, int]:
    """About 256 x 256 x 512, rounded to the variant's legal multiples; M and N off the tile."""

    def legal(x: int, step: int) -> int:
        return max(step, (x // step) * step)

    return legal(256 + 67, mult["M"]), legal(256 + 40, mult["N"]), legal(512, mult["K"])


def find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and Path(home, "bin", "compute-sanitizer").is_file():
            return str(Path(home, "bin", "compute-sanitizer"))
    return None


def _command(sanitizer: str, tool: str, path: Path) -> list[str]:
    cmd = [sanitizer, "--tool", tool, "--print-limit", "20", "--report-api-errors", "no"]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "all"]
    return [*cmd, sys.executable, "-m", "codegen.sanitize", str(path)]


def _first_report(text: str) -> str:
    for line in text.splitlines():
        body = line.removeprefix("========= ").strip()
        if (
            re.match(r"(Error|Warning|Invalid|Race|Barrier|Uninitialized)", body)
            and "SUMMARY" not in body
        ):
            return body[:200]
    return ""


def run_one(sanitizer: str, tool: str, path: Path, timeout: float = 600) -> Finding:
    """One sanitized launch of the variant in `path`."""
    try:
        done = subprocess.run(
            _command(sanitizer, tool, path),
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Finding(path.stem, tool, None, 0, f"timed out after {timeout:.0f} s", "")
    text = done.stdout + done.stderr
    result = RESULT.search(text)
    verdict = result.group(1) if result else f"no result (exit {done.returncode})"
    if tool == "racecheck":
        m = RACE_SUMMARY.search(text)
        errors, warnings = (int(m.group(2)), int(m.group(3))) if m else (None, 0)
        if m is None and ERROR_SUMMARY.search(text):
            errors = int(ERROR_SUMMARY.search(text).group(1))
    else:
        m = ERROR_SUMMARY.search(text)
        errors, warnings = (int(m.group(1)) if m else None), 0
    if errors is None and not result:
        tail = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [""]
        verdict = f"{verdict}: {tail[0][:160]}"
    return Finding(path.stem, tool, errors, warnings, verdict, _first_report(text))


def run_all(
    files: list[Path],
    tools: tuple[str, ...],
    jobs: int,
    on_done: Callable[[Finding], None] | None = None,
) -> list[Finding]:
    """Every (variant, tool) pair, `jobs` children at a time; results in a stable order."""
    sanitizer = find_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError("compute-sanitizer is not on PATH (it ships with the CUDA toolkit)")
    pairs = [(f, t) for f in files for t in tools]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_one, sanitizer, t, f) for f, t in pairs]
        out = []
        for fut in futures:
            finding = fut.result()
            if on_done:
                on_done(finding)
            out.append(finding)
    return out


def _child(path: Path) -> None:
    """Inside compute-sanitizer: one launch of one variant, checked; prints a RESULT line."""
    from codegen import gpu
    from codegen.build import load_module

    module = load_module(path)
    (case,) = gpu.check_variant(path, 0, 0, shapes=[small_shape(module.SHAPE_MULTIPLES)])
    note = f" {case.note}" if case.note else ""
    verdict = "ok" if case.passed else "FAIL"
    print(f"RESULT {verdict} rel_err={case.rel_err:.2e} tol={case.tol:.0e}{note}", flush=True)


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
