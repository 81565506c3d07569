"""`codegen test --sanitize` reads compute-sanitizer's summaries right (a stand-in sanitizer
prints what the real one prints; the real one runs on the GPU machine)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from conftest import GENERATED

from codegen import sanitize

DSMEM_SPLITK = (
    GENERATED
    / "cutegemm"
    / "sm90"
    / "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_biascol_splitk2.py"
)
PLAIN = GENERATED / "cutegemm" / "sm90" / "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid.py"

RACE = "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)"
CLEAN_RACE = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
HAZARD = "========= Error: Race reported between Write access at gemm_kernel+0x1a0"


def hazard(write_rank: int, read_rank: int, barrier: bool = False) -> str:
    """One racecheck hazard record as compute-sanitizer prints it."""
    level, what = ("Warning", "(Warp Level Programming) ") if barrier else ("Error", "")
    op = " (CUDA barrier operation)" if barrier else ""
    return (
        f"========= {level}: {what}Potential RAW hazard detected{op} at __shared__ 0x1000484 in "
        "block (0,0,0) :\n"
        f"=========     Write Thread (1,0,0) (block rank {write_rank}) at kernel_x+0x230\n"
        f"=========     Read Thread (1,0,0) (block rank {read_rank}) at kernel_x+0x350\n"
        "=========     Current Value : 0\n"
    )


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
    kernel = tmp_path / "k.py"
    shutil.copy(PLAIN, kernel)
    got = sanitize.run_one(fake_sanitizer(tmp_path, output), tool, kernel, logs=tmp_path / "logs")
    assert (tmp_path / "logs" / f"k.{tool}.txt").read_text().strip() == output.strip()
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


@pytest.mark.parametrize(
    ("kernel", "records", "explained"),
    [
        (DSMEM_SPLITK, [hazard(1, 0), hazard(2, 0)], True),  # the mbarrier-ordered hand-off
        (PLAIN, [hazard(1, 0)], False),  # no DSMEM hand-off in this design: a real report
        (DSMEM_SPLITK, [hazard(1, 0), hazard(0, 0)], False),  # one hazard inside a CTA
        (DSMEM_SPLITK, [hazard(1, 0, barrier=True)], False),  # on a barrier word: not this
        (DSMEM_SPLITK, [], False),
    ],
)
def test_only_cross_cta_hazards_of_the_dsmem_hand_off_are_explained(
    tmp_path: Path, kernel: Path, records: list[str], explained: bool
) -> None:
    output = "RESULT ok rel_err=1.0e-03 tol=1e-02\n" + "".join(records) + "\n" + RACE
    got = sanitize.run_one(fake_sanitizer(tmp_path, output), "racecheck", kernel)
    assert bool(got.explained) == explained and got.passed == explained
    if explained:
        assert got.explained.endswith(f"({len(records)} shown)")


def test_an_explained_report_with_a_wrong_result_fails(tmp_path: Path) -> None:
    output = "RESULT FAIL rel_err=inf tol=1e-02\n" + hazard(1, 0) + RACE
    got = sanitize.run_one(fake_sanitizer(tmp_path, output), "racecheck", DSMEM_SPLITK)
    assert got.explained and not got.passed


def barrier_warning(t1: int, o1: int, t2: int, o2: int) -> str:
    """racecheck's warp-level warning on a barrier word, intra-CTA (no block rank)."""
    return (
        "========= Warning: (Warp Level Programming) Potential RAW hazard detected (CUDA barrier "
        "operation) at __shared__ 0x420 in block (2,0,0) :\n"
        f"=========     Write Thread ({t1},0,0) at kernel_cutlass_gemm_kernel_x+{o1:#x}\n"
        f"=========     Read Thread ({t2},0,0) at kernel_cutlass_gemm_kernel_x+{o2:#x}\n"
        "=========     Current Value : 0\n"
    )


@pytest.mark.parametrize(
    ("records", "explained"),
    [
        # H200, sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm: SYNCS.EXCH.64 (init of
        # empty[s]) at 0x2f0, attributed to lane 31, then the elected lane's predicated
        # SYNCS.ARRIVE (pre-arm) at 0x300
        ([barrier_warning(31, 0x2F0, 0, 0x300), barrier_warning(31, 0x320, 0, 0x330)], True),
        ([barrier_warning(31, 0x2F0, 0, 0x400)], False),  # not the next instruction
        ([barrier_warning(31, 0x2F0, 32, 0x300)], False),  # two warps: not one thread's order
    ],
)
def test_a_barrier_init_and_its_pre_arm_are_explained(
    tmp_path: Path, records: list[str], explained: bool
) -> None:
    warn = "========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)"
    output = "RESULT ok rel_err=1.0e-03 tol=1e-02\n" + "".join(records) + warn
    got = sanitize.run_one(fake_sanitizer(tmp_path, output), "racecheck", PLAIN)
    assert got.warnings == 2 and bool(got.explained) == explained and got.passed == explained


def test_errors_and_warnings_must_both_be_explained(tmp_path: Path) -> None:
    both = "========= RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)"
    ok = hazard(1, 0) + barrier_warning(31, 0x260, 0, 0x270)
    got = sanitize.run_one(
        fake_sanitizer(tmp_path, "RESULT ok rel_err=1e-03 tol=1e-02\n" + ok + both),
        "racecheck",
        DSMEM_SPLITK,
    )
    assert got.passed and "cross-CTA" in got.explained and "pre-arm" in got.explained
    bad = hazard(1, 0) + barrier_warning(31, 0x260, 0, 0x400)
    got = sanitize.run_one(
        fake_sanitizer(tmp_path, "RESULT ok rel_err=1e-03 tol=1e-02\n" + bad + both),
        "racecheck",
        DSMEM_SPLITK,
    )
    assert not got.passed
