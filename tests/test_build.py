"""Cross-compile every file in ``generated/`` for its architecture on the CPU (no GPU needed).

Every file must compile, its PTX must hold the instruction counts its spec implies, and ptxas must
report no spills. The seed chapter's ``compile_check`` table (its section 4) is asserted as
literal numbers for its four legal configurations. A second build of the same files is served
from the cache. About a minute for 40 kernels on two cores; deselect with ``-m "not build"``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import kernel_glob

from codegen import build as b
from codegen import registry
from codegen.build import BuildResult
from codegen.plan import expected_counts, plan

pytestmark = pytest.mark.build

FILES = sorted(
    p for p in kernel_glob("*.py") if p.read_text(encoding="utf-8").startswith("# @generated")
)

# Seed section 4, compile_check output: tcgen05.mma, tma.load (cp.async.bulk.tensor),
# try_wait (mbarrier.try_wait), tcgen05.ld; the accumulator is 256 f32 TMEM columns throughout.
# One try_wait more than the seed's: the producer's tail over the ring (the seed had none).
SEED_TABLE = {
    "sm100_f16_128x256x16_s1_inter_ws_direct_grid": (1, 4, 4, 4),
    "sm100_f16_128x256x16_s4_inter_ws_direct_grid": (1, 4, 4, 4),
    "sm100_f16_128x256x64_s4_inter_ws_direct_grid": (4, 16, 4, 4),
    "sm100_f16_128x256x64_s4_sw128_ws_direct_grid": (4, 2, 4, 4),
}
SEED_KEYS = ("tcgen05.mma", "cp.async.bulk.tensor", "mbarrier.try_wait", "tcgen05.ld")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of generated/'s kernels taken once, so every test here sees the same bytes even if
    generated/ is re-rendered while the module runs."""
    folder = tmp_path_factory.mktemp("generated")
    for p in FILES:
        shutil.copy2(p, folder / p.name)
    return {p.stem: folder / p.name for p in FILES}


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("build")


@pytest.fixture(scope="module")
def results(kernels: dict[str, Path], build_dir: Path) -> dict[str, BuildResult]:
    assert kernels, "generated/ holds no kernels"
    got = b.build(sorted(kernels.values()), build_dir, jobs=2)
    return {r.name: r for r in got}


def test_every_generated_file_was_built(results: dict[str, BuildResult]) -> None:
    assert sorted(results) == sorted(p.stem for p in FILES)
    assert not [r.name for r in results.values() if r.cached], "a fresh build dir has no cache"


def test_every_generated_file_passes(results: dict[str, BuildResult]) -> None:
    failed = {r.name: r.error or "; ".join(r.mismatches) for r in results.values() if not r.passed}
    assert not failed, failed


def test_no_register_spills(results: dict[str, BuildResult]) -> None:
    unknown = [r.name for r in results.values() if r.spill_bytes is None or r.registers is None]
    assert not unknown, f"ptxas gave no register report for {unknown}"
    spills = {r.name: r.spill_bytes for r in results.values() if r.spill_bytes}
    assert not spills, spills
    assert all(0 < r.registers <= 255 for r in results.values())


@pytest.mark.parametrize("name", [p.stem for p in FILES])
def test_counts_match_the_plan(
    name: str, kernels: dict[str, Path], results: dict[str, BuildResult]
) -> None:
    """Every expected count, and the TMEM allocation, read straight from the PTX."""
    r = results[name]
    assert r.ok, r.error
    spec = b.read_spec(kernels[name])
    p, want = plan(spec), expected_counts(spec)
    assert {k: r.counts[k] for k in want} == want
    if spec.mainloop == "light":  # no TMEM on either arch
        assert r.alloc_cols == []
    elif spec.arch == "sm_100a":  # one tcgen05.alloc of the planned columns
        assert r.alloc_cols == [p.values.mma.tmem_cols]
    assert r.smem_bytes == registry.for_spec(spec).smem_bytes(spec, spec.stages) <= 227 * 1024


@pytest.mark.parametrize("name", sorted(SEED_TABLE))
def test_seed_compile_check_table(name: str, results: dict[str, BuildResult]) -> None:
    r = results[name]
    assert r.passed, r.error or r.mismatches
    assert tuple(r.counts[k] for k in SEED_KEYS) == SEED_TABLE[name]
    assert r.counts["tcgen05.alloc"] == 1
    assert r.alloc_cols == [256]
    assert r.counts["tcgen05.commit"] == 2  # stage-empty and accumulator-full
    assert r.counts["mma cta_group::1"] == r.counts["tcgen05.mma"]
    assert r.counts["mma cta_group::2"] == 0 and r.counts["wgmma.mma_async"] == 0


def test_build_records_ptx_and_results(build_dir: Path, results: dict[str, BuildResult]) -> None:
    for name in SEED_TABLE:
        record = json.loads((build_dir / name / "result.json").read_text())
        assert record["result"]["counts"] == results[name].counts
        assert list((build_dir / name / "sm_100a").rglob("*.ptx")), name


def test_second_build_is_cached(
    kernels: dict[str, Path], build_dir: Path, results: dict[str, BuildResult]
) -> None:
    again = b.build(sorted(kernels.values()), build_dir, jobs=2)
    assert [r.name for r in again] == sorted(results)
    assert all(r.cached for r in again)
    for r in again:
        first = results[r.name]
        assert (r.passed, r.counts, r.alloc_cols, r.registers) == (
            first.passed,
            first.counts,
            first.alloc_cols,
            first.registers,
        )


def test_changed_file_is_rebuilt(
    tmp_path: Path, kernels: dict[str, Path], build_dir: Path, results: dict[str, BuildResult]
) -> None:
    """The cache key is the file's content: an edit (here a comment) misses the cache."""
    src = kernels["sm100_f16_128x256x16_s1_inter_ws_direct_grid"]
    cache = tmp_path / "build"
    shutil.copytree(build_dir / src.stem, cache / src.stem)
    (same,) = b.build([src], cache, jobs=1)
    assert same.cached
    copy = tmp_path / src.name
    copy.write_text(src.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    (r,) = b.build([copy], cache, jobs=1)
    assert not r.cached
    assert r.passed and r.counts == results[src.stem].counts


def test_a_cached_build_checks_the_counts_again(
    tmp_path: Path, kernels: dict[str, Path], build_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache holds the compile, not the verdict: counts the generator expects now are
    checked against the cached PTX counts (a changed rule fails a cached kernel too)."""
    src = kernels["sm100_f16_128x256x16_s1_inter_ws_direct_grid"]
    cache = tmp_path / "build"
    shutil.copytree(build_dir / src.stem, cache / src.stem)
    real = b.expected_counts
    monkeypatch.setattr(b, "expected_counts", lambda spec: {**real(spec), "tcgen05.mma": 99})
    (r,) = b.build([src], cache, jobs=1)
    assert r.cached and not r.passed
    assert any(m.startswith("tcgen05.mma: expected 99") for m in r.mismatches)


def test_ctrl_c_stops_a_build_at_once(tmp_path: Path) -> None:
    """SIGINT to the process group during a cold build: exit 130 within a second or two (the
    compiles are killed, not drained), and every result record written is whole."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT, cli_env

    proc = subprocess.Popen(
        [sys.executable, "-m", "codegen", "build", "--build-dir", str(tmp_path / "b"), "-j", "2"],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    time.sleep(6)
    assert proc.poll() is None
    start = time.perf_counter()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.perf_counter() - start < 3
    assert "interrupted" in err and "Traceback" not in err
    for record in (tmp_path / "b").rglob("result.json"):
        assert json.loads(record.read_text())["result"]["ok"] in (True, False)
