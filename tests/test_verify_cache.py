"""`codegen verify` keeps each report in BUILD_DIR/verify/, keyed by the kernel file's content
and codegen's own code: a second run checks only what changed (two small kernels: seconds)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from conftest import GENERATED, kernel_file, run_cli


def test_verify_checks_again_only_a_file_that_changed(tmp_path: Path) -> None:
    for name in (
        "sm100_f16_128x256x16_s1_inter_kloop_direct_grid",
        "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid",
    ):
        src = kernel_file(name)
        dst = tmp_path / "gen" / src.relative_to(GENERATED)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)

    def verify() -> tuple[str, str]:
        proc = run_cli("verify", "--dir", "gen", "--build-dir", "b", "-j", "1", cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        last = proc.stdout.splitlines()[-1]
        rows = re.findall(r"^│ (\w+) .*│ (pass) +│$", proc.stdout, re.MULTILINE)
        return last, str(sorted(rows))

    first, rows = verify()
    assert (
        "sm100_f16_128x256x16_s1_inter_kloop_direct_grid" in rows
        and "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid" in rows
    ), rows
    assert re.fullmatch(r"2/2 passed, 0 failed, 0 not modelled \(0 cached; .*\)", first), first
    second, rows_again = verify()
    assert re.fullmatch(r"2/2 passed, .* \(2 cached; 0\.0 s of checking\)", second), second
    assert rows_again == rows
    edited = next((tmp_path / "gen").rglob("sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid.py"))
    edited.write_text(edited.read_text() + "# edited\n")
    third, _ = verify()
    assert "(1 cached;" in third, third
