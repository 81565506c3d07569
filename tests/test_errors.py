"""Snapshot tests of the exact error text for bad spec files, run through the real CLI.

Each case renders files from ``tests/bad_specs/`` with ``python -m codegen render`` in a
subprocess, from the ``tests/`` folder (so every path in a message reads ``bad_specs/...``), and
compares stderr byte for byte with ``tests/snapshots/CASE.txt``. To accept new error text after a
deliberate change, regenerate the snapshots and review the diff:

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_errors.py
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from conftest import TESTS, run_cli

from codegen.plan_common import plural

SNAPSHOTS = TESTS / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"

# case -> the spec paths given to `codegen render`, relative to tests/
CASES: dict[str, list[str]] = {
    "sw128_tile_k16": ["bad_specs/sw128_tile_k16.toml"],
    "six_stages": ["bad_specs/six_stages.toml"],
    "unknown_knob": ["bad_specs/unknown_knob.toml"],
    "bad_dtype": ["bad_specs/bad_dtype.toml"],
    "bad_tile_length": ["bad_specs/bad_tile_length.toml"],
    "bad_name": ["bad_specs/bad_name.toml"],
    "bad_name_reserved": ["bad_specs/bad_name_reserved.toml"],
    "nonfinite_epilogue": ["bad_specs/nonfinite_epilogue.toml"],
    "f32_epilogue": ["bad_specs/f32_epilogue.toml"],
    "spec_wording": ["bad_specs/spec_wording.toml"],
    "coerced_types": ["bad_specs/coerced_types.toml"],
    "utf8_bom": ["bad_specs/utf8_bom.toml"],
    "duplicate_in_one_file": ["bad_specs/duplicate_in_one_file.toml"],
    "not_utf8": ["bad_specs/not_utf8.toml"],
    "duplicate_names": ["bad_specs/duplicate_names"],
    "duplicate_canonical": ["bad_specs/duplicate_canonical.toml"],
    "sweep_not_list": ["bad_specs/sweep_not_list.toml"],
    "invalid_toml": ["bad_specs/invalid_toml.toml"],
    "unknown_table": ["bad_specs/unknown_table.toml"],
    "multiple_problems": ["bad_specs/multiple_problems.toml"],
    "union_without_tag": ["bad_specs/union_without_tag.toml"],
    "light_rules": ["bad_specs/light_rules.toml"],
    "layout_rules": ["bad_specs/layout_rules.toml"],
    "runtime_scalars": ["bad_specs/runtime_scalars.toml"],
    "epilogue_fn": ["bad_specs/epilogue_fn.toml"],
    "row_sumsq": ["bad_specs/row_sumsq.toml"],
    "block_quant": ["bad_specs/block_quant.toml"],
    "stream_k_hybrid": ["bad_specs/stream_k_hybrid.toml"],
}

PROBLEM = re.compile(r"^(?P<path>\S+\.toml)(?: \[(?P<variant>[^\]]+)\])?: (?P<message>.+)$")


def render_errors(args: list[str], tmp_path: Path, cwd: Path = TESTS) -> list[str]:
    """Run the CLI on bad specs; check it failed cleanly; return its stderr lines."""
    out = tmp_path / "out"
    return checked_lines(run_cli("render", *args, "-o", out, cwd=cwd), out)


def checked_lines(proc: subprocess.CompletedProcess[str], out: Path) -> list[str]:
    """stderr's lines, once the run is seen to have failed cleanly and written nothing."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Error:" not in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert not out.exists(), "a failed render must write nothing"
    assert proc.stderr.endswith("\n")
    return proc.stderr.splitlines()


def check_shape(lines: list[str], files: list[str]) -> list[re.Match[str]]:
    """One line per problem, each naming one of `files`, then the count."""
    *problems, summary = lines
    assert summary == f"{plural(len(problems), 'problem')}; nothing written."
    assert problems, "at least one problem"
    matches = []
    for line in problems:
        m = PROBLEM.match(line)
        assert m, f"not a 'FILE [VARIANT]: message' line: {line!r}"
        assert m["path"] in files, line
        matches.append(m)
    return matches


@pytest.fixture(scope="module")
def case_lines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[], list[str]]]:
    """Every case's CLI run, started at once (each is a Python start-up, mostly idle)."""
    outs = tmp_path_factory.mktemp("outs")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            case: pool.submit(run_cli, "render", *args, "-o", outs / case, cwd=TESTS)
            for case, args in CASES.items()
        }
        procs = {case: f.result() for case, f in futures.items()}
    return {case: partial(checked_lines, proc, outs / case) for case, proc in procs.items()}


@pytest.mark.parametrize(
    "case",
    list(CASES),
)
def test_error_text(case: str, case_lines: dict[str, Callable[[], list[str]]]) -> None:
    args = CASES[case]
    files = sorted(
        p.relative_to(TESTS).as_posix()
        for a in args
        for p in ([TESTS / a] if a.endswith(".toml") else sorted((TESTS / a).glob("*.toml")))
    )
    lines = case_lines[case]()
    check_shape(lines, files)
    text = "\n".join(lines) + "\n"
    snapshot = SNAPSHOTS / f"{case}.txt"
    if UPDATE:
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), f"no snapshot {snapshot.name}; run with UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text(encoding="utf-8")


def test_every_bad_spec_has_a_case_and_every_snapshot_a_case() -> None:
    used = {Path(a).parts[1] for args in CASES.values() for a in args}
    # .py files there are the epilogue functions the bad specs name, not specs
    present = {p.name for p in (TESTS / "bad_specs").iterdir() if p.suffix != ".py"}
    assert used == present
    assert {p.stem for p in SNAPSHOTS.glob("*.txt")} == set(CASES)


# ---- the seed's two illegal configurations, read for meaning as well as text -----------------


def test_sw128_at_tile_k16_names_swizzle_and_the_row_width(case_lines: dict) -> None:
    lines = case_lines["sw128_tile_k16"]()
    (m,) = check_shape(lines, ["bad_specs/sw128_tile_k16.toml"])
    assert m["variant"] == "seed_s1_k16_sw128"
    assert m["message"].startswith("swizzle=128B needs ")
    assert "tile K=16 gives 32 B rows" in m["message"]
    assert m["message"].endswith("legal: none, 32B")


def test_six_stages_says_it_needs_more_than_227_kib_and_4_fit(case_lines: dict) -> None:
    lines = case_lines["six_stages"]()
    (m,) = check_shape(lines, ["bad_specs/six_stages.toml"])
    assert m["variant"] == "seed_s6_k64_sw128"
    need = re.search(
        r"^stages=6 needs (\d+) KiB of shared memory \(48 KiB per stage\)", m["message"]
    )
    assert need and int(need[1]) > 227
    assert int(need[1]) >= 6 * 48  # the ring alone is 288 KiB
    assert m["message"].endswith("at most 4 stages fit in 227 KiB")


def test_multiple_problems_each_name_variant_and_field(case_lines: dict) -> None:
    lines = case_lines["multiple_problems"]()
    matches = check_shape(lines, ["bad_specs/multiple_problems.toml"])
    by_variant: dict[str, list[str]] = {}
    for m in matches:
        by_variant.setdefault(m["variant"], []).append(m["message"])
    assert list(by_variant) == ["schema", "rules", "hopper"]  # file order; "legal" is fine
    fields = [
        "tile",
        "stages",
        "swizzle",
        "warp_specialized",
        "cluster",
        "epilogue",
        "scheduler",
        "tile_m",
    ]
    assert len(by_variant["schema"]) == len(fields)
    for msg, field in zip(by_variant["schema"], fields, strict=True):
        assert msg.startswith(field), (field, msg)
    rules_fields = {re.split(r"[ :=]", msg)[0] for msg in by_variant["rules"]}
    assert rules_fields == {"tile", "swizzle", "consumer_warpgroups", "stages"}
    hopper_fields = {re.split(r"[ :=]", msg)[0] for msg in by_variant["hopper"]}
    assert hopper_fields == {"tile", "warp_specialized", "cluster"}


def test_paths_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    from_root = render_errors(["tests/bad_specs/six_stages.toml"], tmp_path, cwd=TESTS.parent)
    assert from_root[0].startswith("tests/bad_specs/six_stages.toml [seed_s6_k64_sw128]: stages=6")
    # a file outside the working directory is shown as given
    outside = tmp_path / "elsewhere" / "six.toml"
    outside.parent.mkdir()
    outside.write_text((TESTS / "bad_specs" / "six_stages.toml").read_text())
    lines = render_errors([str(outside)], tmp_path, cwd=TESTS)
    assert lines[0].startswith(f"{outside.as_posix()} [seed_s6_k64_sw128]: stages=6")


def test_problems_from_several_files_are_all_reported_sorted_by_file(tmp_path: Path) -> None:
    args = [
        "bad_specs/six_stages.toml",
        "bad_specs/bad_dtype.toml",
        "bad_specs/sw128_tile_k16.toml",
    ]
    lines = render_errors(args, tmp_path)
    matches = check_shape(lines, [a for a in args])
    assert [m["path"] for m in matches] == [
        "bad_specs/bad_dtype.toml",
        "bad_specs/bad_dtype.toml",
        "bad_specs/six_stages.toml",
        "bad_specs/sw128_tile_k16.toml",
    ]


def test_a_legal_file_beside_a_bad_one_is_not_written(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[[variant]]\nname = "fine"\ntile = [128, 256, 64]\n')
    lines = render_errors([str(good), "bad_specs/six_stages.toml"], tmp_path)
    assert lines[-1] == "1 problem; nothing written."


def test_missing_spec_file_is_an_error_line(tmp_path: Path) -> None:
    lines = render_errors(["bad_specs/no_such_file.toml"], tmp_path)
    assert lines == ["bad_specs/no_such_file.toml: no such file", "1 problem; nothing written."]


def test_long_problem_lines_are_not_wrapped(tmp_path: Path) -> None:
    """One problem is one line however long it is (here about 230 characters)."""
    name = "v_" + "x" * 98  # the longest name allowed
    spec = tmp_path / "long.toml"
    spec.write_text(f'[[variant]]\nname = "{name}"\ntile = [128, 256, 64]\nstages = 6\n')
    proc = run_cli("render", "long.toml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"long.toml [{name}]: stages=6 needs 289 KiB")


@pytest.mark.parametrize(
    "text",
    [
        "variant = 5\n",
        "variant = [1, 2]\n",
        "sweep = [1]\n",
        "defaults = 3\n[[variant]]\ntile = [128, 256, 64]\n",
    ],
    ids=["variant_int", "variant_list_of_ints", "sweep_list_of_ints", "defaults_int"],
)
def test_malformed_top_level_tables_are_error_lines(text: str, tmp_path: Path) -> None:
    (tmp_path / "shape.toml").write_text(text)
    proc = run_cli("render", "shape.toml", "-o", "out", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-300:]
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0].startswith("shape.toml")


@pytest.mark.parametrize(
    ("depth", "why"),
    [
        (3000, "nested too deeply to read"),
        (40, "tables and arrays nested more than 16 levels deep"),
    ],
)
@pytest.mark.parametrize("command", ["render", "list"])
def test_deeply_nested_toml_is_one_line(depth: int, why: str, command: str, tmp_path: Path) -> None:
    """3000 levels make the TOML parser recurse too deep; 40 would make whatever walks the
    values (pydantic, a message's repr) do it: both are one line, never a RecursionError."""
    (tmp_path / "deep.toml").write_text(
        '[[variant]]\nname = "x"\ntile = ' + "[" * depth + "]" * depth + "\n"
    )
    proc = run_cli(command, "deep.toml", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-500:]
    assert proc.stderr.splitlines()[0] == f"deep.toml: not valid TOML: {why}"
