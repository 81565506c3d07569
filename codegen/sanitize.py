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

from codegen.build import read_spec
from codegen.gpu import legal

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
    explained: str = ""  # why every report shown is a known tool blind spot, if it is

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.warnings == 0 and self.result == "ok"

    @property
    def passed(self) -> bool:
        """Clean, or every report it shows is explained and the result is right."""
        return self.clean or (bool(self.explained) and self.result == "ok")


# One racecheck hazard: its level and kind, then the two accesses, each with its thread, the CTA
# rank in the cluster (when clustered) and the kernel offset of its instruction
HAZARD = re.compile(
    r"(?P<level>Error|Warning): (?P<what>.*?)Potential (?P<kind>RAW|WAR|WAW) hazard detected"
    r"(?P<barrier> \(CUDA barrier operation\))? at __shared__ (?P<addr>0x[0-9a-f]+)"
    r".*?\n.*?(?:Write|Read) Thread \((?P<t1>\d+),\d+,\d+\)(?: \(block rank (?P<r1>\d+)\))? at"
    r" \S*?\+(?P<o1>0x[0-9a-f]+)"
    r".*?\n.*?(?:Write|Read) Thread \((?P<t2>\d+),\d+,\d+\)(?: \(block rank (?P<r2>\d+)\))? at"
    r" \S*?\+(?P<o2>0x[0-9a-f]+)",
)
CROSS_CTA = (
    "racecheck does not model a cross-CTA hand-off ordered by a cluster-scope mbarrier "
    "(release arrive by the writer's CTA, acquire wait by the reader's): every hazard shown is "
    "a write by one CTA of the cluster and a read by another; tools/probe_dsmem_racecheck.py "
    "gets the same report on a correct minimal hand-off and none with barrier.cluster"
)
INIT_PAIR = (
    "racecheck's warp-level warning on an mbarrier's setup: the init (SYNCS.EXCH, a warp-uniform "
    "instruction it attributes to one lane) and, in the next instruction of the same warp, the "
    "elected lane's pre-arm arrive on that barrier; one thread's program order in the source"
)


def hands_off_through_dsmem(spec: dict) -> bool:
    """Split-K reduced in the cluster: rank 0 reads each peer's partial through DSMEM after an
    acquire wait on an mbarrier the peer's release arrive completes."""
    sched = spec.get("scheduler")
    return (
        isinstance(sched, dict)
        and sched.get("kind") == "split_k"
        and sched.get("reduce", "cluster") == "cluster"
    )


def _cross_cta(h: re.Match[str]) -> bool:
    return h["r1"] is not None and h["r2"] is not None and h["r1"] != h["r2"] and not h["barrier"]


def _init_then_prearm(h: re.Match[str]) -> bool:
    """A barrier-operation warning between two lanes of one warp whose second access is the
    instruction right after the first (SASS instructions are 16 bytes): an init, then the pre-arm
    arrive the same source thread makes on the barrier it initialized."""
    return (
        h["level"] == "Warning"
        and bool(h["barrier"])
        and h["r1"] == h["r2"]
        and int(h["t1"]) // 32 == int(h["t2"]) // 32
        and int(h["o2"], 16) - int(h["o1"], 16) == 0x10
    )


def explain_racecheck(text: str, spec: dict) -> str:
    """Why every hazard racecheck showed is a known blind spot of the tool, or "" if one is not.

    Errors: CROSS_CTA, only for a variant whose design is the mbarrier-ordered DSMEM hand-off and
    only when every error is between two CTAs of its cluster. racecheck reports a real race the
    same way (the probe's `none` mode), so the report alone proves nothing: the explanation holds
    for this hand-off, whose protocol `codegen verify` checks, and only with a correct result
    (Finding.passed). Warnings: INIT_PAIR, when every one is a barrier's init and pre-arm."""
    hazards = list(HAZARD.finditer(text))
    errors = [h for h in hazards if h["level"] == "Error"]
    warnings = [h for h in hazards if h["level"] == "Warning"]
    if not hazards:
        return ""
    reasons = []
    if errors:
        if not hands_off_through_dsmem(spec) or not all(_cross_cta(h) for h in errors):
            return ""
        reasons.append(CROSS_CTA)
    if warnings:
        if not all(_init_then_prearm(h) for h in warnings):
            return ""
        reasons.append(INIT_PAIR)
    return "; ".join(reasons) + f" ({len(hazards)} shown)"


def small_shape(mult: dict[str, int]) -> tuple[int, int, int]:
    """About 256 x 256 x 512, rounded to the variant's legal multiples; M and N off the tile."""
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
    cmd = [sanitizer, "--tool", tool, "--print-limit", "200", "--report-api-errors", "no"]
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


def run_one(
    sanitizer: str, tool: str, path: Path, timeout: float = 600, logs: Path | None = None
) -> Finding:
    """One sanitized launch of the variant in `path`; the tool's whole output goes to
    `logs/VARIANT.TOOL.txt` when `logs` is given."""
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
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{path.stem}.{tool}.txt").write_text(text, encoding="utf-8")
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
    explained = ""
    if tool == "racecheck" and (errors or warnings):
        explained = explain_racecheck(text, read_spec(path).model_dump())
    return Finding(path.stem, tool, errors, warnings, verdict, _first_report(text), explained)


def run_all(
    files: list[Path],
    tools: tuple[str, ...],
    jobs: int,
    on_done: Callable[[Finding], None] | None = None,
    logs: Path | None = None,
) -> list[Finding]:
    """Every (variant, tool) pair, `jobs` children at a time; results in a stable order."""
    sanitizer = find_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError("compute-sanitizer is not on PATH (it ships with the CUDA toolkit)")
    pairs = [(f, t) for f in files for t in tools]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_one, sanitizer, t, f, logs=logs) for f, t in pairs]
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
