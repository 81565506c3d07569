"""`codegen test --sanitize` reads compute-sanitizer's summaries right (a stand-in sanitizer
prints what the real one prints; the real one runs on the GPU machine)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from codegen import sanitize

RACE = "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)"
CLEAN_RACE = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
HAZARD = "========= Error: Race reported between Write access at gemm_kernel+0x1a0"


def fake_sanitizer(tmp_path: Path, output: str, code: int = 0) -> str:
    script = tmp_path / "compute-sanitizer"
    script.write_text(f"#!/bin/sh\ncat <<'END'\n{output}\nEND\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize(
    ("tool", "output", "errors", "warnings", "clean"),
    [
        ("racecheck", f"RESULT ok rel_err=1.0e-03 tol=1e-02\n{HAZARD}\n{RACE}", 2, 1, False),
        ("racecheck", f"RESULT ok rel_err=1.0e-03 tol=1e-02\n{CLEAN_RACE}", 0, 0, True),
        ("memcheck", "RESULT ok rel_err=1.0e-03 tol=1e-02\n========= ERROR SUMMARY: 0 errors", 0, 0, True),
        ("synccheck", "RESULT ok rel_err=1.0e-03 tol=1e-02\n========= ERROR SUMMARY: 4 errors", 4, 0, False),
        ("memcheck", "RESULT FAIL rel_err=inf tol=1e-02\n========= ERROR SUMMARY: 0 errors", 0, 0, False),
    ],
)  # fmt: skip
def test_summaries_are_read(tmp_path, tool, output, errors, warnings, clean) -> None:
    got = sanitize.run_one(fake_sanitizer(tmp_path, output), tool, tmp_path / "k.py")
    assert (got.variant, got.tool, got.errors, got.warnings, got.clean) == (
        "k", tool, errors, warnings, clean
    )  # fmt: skip
    if errors:
        assert got.detail.startswith(("Error: Race", "")) and got.detail == (
            HAZARD.removeprefix("========= ") if tool == "racecheck" else ""
        )


def test_a_run_without_a_summary_is_not_clean(tmp_path: Path) -> None:
    got = sanitize.run_one(
        fake_sanitizer(tmp_path, "Segmentation fault", 139), "racecheck", tmp_path / "k.py"
    )
    assert got.errors is None and not got.clean
    assert "no result (exit 139)" in got.result and "Segmentation fault" in got.result


def test_the_small_shape_is_legal_and_off_the_tile() -> None:
    assert sanitize.small_shape({"M": 1, "N": 8, "K": 8}) == (323, 296, 512)
    assert sanitize.small_shape({"M": 128, "N": 256, "K": 64}) == (256, 256, 512)
