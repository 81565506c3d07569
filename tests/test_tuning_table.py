"""The tuning table's header: `codegen tune` writes its command as a one-line `commands` array,
and `.ci/merge-tuning.py` appends each merged run as one more line (an old single `command`
string is split into its runs), leaving the picks alone."""

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

from codegen import tune

ROOT = Path(__file__).resolve().parent.parent
MERGE = ROOT / ".ci" / "merge-tuning.py"


def merge_module():
    spec = importlib.util.spec_from_file_location("merge_tuning", MERGE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pick(dtype: str, m: int, winner: str) -> str:
    return (
        f'[[pick]]\nshape = "s M={m}"\ndtype = "{dtype}"\nout_dtype = "bf16"\n'
        f"m = {m}\nn = 64\nk = 64\nus = 1.0\ntorch_us = 1.0\nratio = 1.0\n"
        f'ranked = ["{winner}"]\nranked_us = [1.0]\n\n'
    )


def test_tune_writes_its_command_as_a_one_entry_array() -> None:
    text = tune.table_text([], "GPU", "sm_90a", "codegen tune --only 'h_*'", "torch x")
    doc = tomllib.loads(text)
    assert doc["commands"] == ["codegen tune --only 'h_*'"]
    assert "command" not in doc


def test_an_old_command_string_becomes_one_line_per_run() -> None:
    head = 'gpu = "G"\narch = "sm_90a"\ncommand = "tune A; then tune B (x)"\nversions = "v"\n'
    doc = tomllib.loads(merge_module().with_commands(head, ["tune A", "tune B (x)", "tune C"]))
    assert doc["commands"] == ["tune A", "tune B (x)", "tune C"]
    assert "command" not in doc and doc["versions"] == "v"


def test_merge_appends_the_run_and_replaces_only_the_measured_shapes(tmp_path: Path) -> None:
    head = tune.table_text([], "G", "sm_90a", "codegen tune first", "v")
    table = tmp_path / "table.toml"
    table.write_text(
        head + pick("bf16", 1, "old1") + pick("bf16", 2, "old2") + pick("e4m3", 1, "f8")
    )
    run = tmp_path / "run.toml"
    run.write_text(tune.table_text([], "G", "sm_90a", "x", "v") + pick("bf16", 2, "new2"))
    subprocess.run(
        [
            sys.executable,
            str(MERGE),
            str(table),
            str(run),
            "bf16",
            "codegen tune second",
            "--by-shape",
        ],
        check=True,
        capture_output=True,
    )
    doc = tomllib.loads(table.read_text())
    assert doc["commands"] == [
        "codegen tune first",
        "codegen tune second (its bf16 picks replace the earlier ones of the shapes it measured)",
    ]
    winners = {(p["dtype"], p["m"]): p["ranked"][0] for p in doc["pick"]}
    assert winners == {("bf16", 1): "old1", ("bf16", 2): "new2", ("e4m3", 1): "f8"}
