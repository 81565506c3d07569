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
    text = tune.table_text([], "GPU", "sm_90a", "codegen tune --only 'sm90_bf16_*'", "torch x")
    doc = tomllib.loads(text)
    assert doc["commands"] == ["codegen tune --only 'sm90_bf16_*'"]
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


# ---- tables are validated like specs: one line per problem, never a traceback --------------------

KERNELS = (
    '[[variant]]\nname = "h_a"\narch = "sm_90a"\ndtype = "bf16"\ntile = [128, 128, 64]\n'
    '[[variant]]\nname = "h_relu"\narch = "sm_90a"\ndtype = "bf16"\ntile = [128, 128, 64]\n'
    'epilogue = {style = "direct", activation = "relu"}\n'
    '[[variant]]\nname = "b_a"\narch = "sm_100a"\ndtype = "bf16"\ntile = [128, 128, 64]\n'
)
HEAD = 'gpu = "G"\narch = "sm_90a"\n'
GOOD = 'dtype = "bf16"\nout_dtype = "bf16"\nm = 64\nn = 64\nk = 64\nratio = 1.0\nranked = ["h_a"]\n'


def bad_pick(**changes: str) -> str:
    """A [[pick]] entry of GOOD with `changes` (key -> TOML value; "" drops the key)."""
    lines = dict(line.split(" = ", 1) for line in GOOD.splitlines())
    lines.update(changes)
    return "[[pick]]\n" + "".join(f"{k} = {v}\n" for k, v in lines.items() if v) + "\n"


TABLES = {
    "a_not_tables.toml": HEAD + "pick = 5\n",
    "b_deep.toml": HEAD + "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "c_arch.toml": 'gpu = "G"\narch = "sm_42"\n' + bad_pick(),
    "d_picks.toml": HEAD
    + bad_pick(m="-5")
    + bad_pick(n="0", k="4096.7")
    + bad_pick(m="1e30", n="true")
    + bad_pick(ratio="nan")
    + bad_pick(ratio="-1")
    + bad_pick(dtype='"f64"')
    + bad_pick(ranked='["b_a"]')
    + bad_pick(ranked='["h_relu", "nope"]')
    + bad_pick(out_dtype='"f16"', ratio="")
    + bad_pick(ranked="[]", extra="1"),
    "e_good.toml": 'gpu = "H"\narch = "sm_90a"\n' + bad_pick(),
}
P = "tuning/d_picks.toml [pick {}, ?]: "
TABLE_PROBLEMS = [
    "tuning/a_not_tables.toml: pick must be tables: [[pick]], got 5",
    "tuning/b_deep.toml: not a TOML file: nested too deeply to read",
    "tuning/c_arch.toml: arch = 'sm_42' is not allowed; one of 'sm_100a', 'sm_90a'",
    P.format(1) + "m = -5: must be an integer from 1 to 2147483647",
    P.format(2) + "n = 0: must be an integer from 1 to 2147483647",
    P.format(2) + "k = 4096.7: must be an integer from 1 to 2147483647",
    P.format(3) + "m = 1e+30: must be an integer from 1 to 2147483647",
    P.format(3) + "n = True: must be an integer from 1 to 2147483647",
    P.format(4) + "ratio = nan: must be a finite number above 0",
    P.format(5) + "ratio = -1: must be a finite number above 0",
    P.format(6) + "dtype = 'f64' is not allowed; one of 'f16', 'bf16', 'e4m3'",
    P.format(6) + "h_a computes bf16 -> bf16, not 'f64' -> 'bf16'",
    P.format(7) + "b_a is an sm_100a kernel; this table is for sm_90a",
    P.format(8) + "names no kernel that exists: nope; re-run `codegen tune` or remove the entry",
    P.format(8) + "h_relu has a fused epilogue; tables rank plain kernels",
    P.format(9) + "needs ratio",
    P.format(9) + "h_a computes bf16 -> bf16, not 'bf16' -> 'f16'",
    P.format(10) + "unknown key 'extra'; a pick has shape, dtype, out_dtype, m, n, k, us, "
    "torch_us, ratio, ranked, ranked_us",
    P.format(10) + "ranked = []: must be a non-empty list of kernel names",
]


def test_a_bad_tuning_table_is_one_line_per_problem_and_writes_nothing(tmp_path: Path) -> None:
    """Types, ranges, finite numbers (`ratio = nan` never reaches _dispatch.py), a legal arch
    and dtypes, kernels that exist for the table's arch and dtypes, with a plain epilogue."""
    (tmp_path / "k.toml").write_text(KERNELS)
    (tmp_path / "tuning").mkdir()
    for name, text in TABLES.items():
        (tmp_path / "tuning" / name).write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "render", "k.toml", "-o", "out", "--tuning", "tuning"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines() == TABLE_PROBLEMS
    assert not (tmp_path / "out").exists()
    for name in [n for n in TABLES if n != "e_good.toml"]:
        (tmp_path / "tuning" / name).unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "render", "k.toml", "-o", "out", "--tuning", "tuning"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert '"H": (' in (tmp_path / "out" / "cutegemm" / "_dispatch.py").read_text()
