"""Render speed, as a user meets it: `codegen render specs/` into an empty folder (cold), then
again and with --check when nothing changed (warm). Prints the median wall seconds of RUNS runs
each. Run from the repository root: `python .ci/bench-render.py [RUNS]`."""

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def wall(*args: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codegen", *args], check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    cold, warm, check = [], [], []
    for _ in range(RUNS):
        out = Path(tempfile.mkdtemp(prefix="render-bench-"))
        try:
            cold.append(wall("render", "specs/", "-o", str(out)))
            warm.append(wall("render", "specs/", "-o", str(out)))
            check.append(wall("render", "specs/", "-o", str(out), "--check"))
        finally:
            shutil.rmtree(out)
    kernels = len(list(Path("generated/cutegemm").glob("sm*/[!_]*.py")))
    print(f"{kernels} kernels, median of {RUNS} runs (wall seconds):")
    print(f"  render specs/ into an empty folder   {statistics.median(cold):6.2f}")
    print(f"  render specs/, nothing changed       {statistics.median(warm):6.2f}")
    print(f"  render specs/ --check, nothing changed {statistics.median(check):4.2f}")


if __name__ == "__main__":
    main()
