"""`codegen build` when the compiler crashes: the kernel it crashed on is named, with the signal
that ended it, and every other kernel gets its own result (not BrokenProcessPool for all).

The "kernels" here are stand-ins that fail at import, before any compile: one aborts its process
(SIGABRT, as the DSL does on a tile it cannot lower), two raise. No compiler runs: seconds."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import kernel_glob

from codegen import build as b


def stand_in(folder: Path, name: str, body: str) -> Path:
    """A file with a real kernel's header and SPEC (so build reads its arch) and then `body`."""
    kernel = kernel_glob("sm90_*.py")[0]
    real = kernel.read_text(encoding="utf-8")
    spec = re.search(r"^SPEC = \{.*?^\}\n", real, re.DOTALL | re.MULTILINE)
    assert spec, "a generated kernel has a SPEC literal"
    path = folder / f"{name}.py"
    path.write_text(spec.group(0).replace(kernel.stem, name) + body)
    return path


def test_a_compile_that_crashes_names_its_kernel_and_no_other(tmp_path: Path) -> None:
    files = [
        stand_in(tmp_path, "aborts", "import os\nos.abort()\n"),
        stand_in(tmp_path, "raises_a", "raise ValueError('broken on purpose')\n"),
        stand_in(tmp_path, "raises_b", "raise ValueError('broken on purpose')\n"),
    ]
    results = {r.name: r for r in b.build(files, tmp_path / "build", jobs=2)}
    assert sorted(results) == ["aborts", "raises_a", "raises_b"]
    assert results["aborts"].error == "the compiler crashed (killed by SIGABRT) on this kernel"
    for name in ("raises_a", "raises_b"):
        assert results[name].error == "ValueError: broken on purpose", results[name].error
    assert not any(r.ok for r in results.values())
