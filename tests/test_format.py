"""render formats with ruff (fast); the project promises black's output. Check that promise on
every shipped file: black 26.10.1 leaves each one unchanged."""

from pathlib import Path

import black
import pytest

from codegen import render

ROOT = Path(__file__).resolve().parent.parent
MODE = black.Mode(line_length=render.LINE_LENGTH, target_versions={black.TargetVersion.PY311})
FILES = sorted((ROOT / "generated").rglob("*.py"))


def test_there_are_files_to_check():
    assert len(FILES) > 100


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT / "generated").as_posix())
def test_black_leaves_every_generated_file_unchanged(path: Path):
    text = path.read_text(encoding="utf-8")
    assert black.format_str(text, mode=MODE) == text


def test_user_configuration_does_not_reach_the_formatter(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 40\n[tool.ruff.format]\nquote-style = "single"\n'
    )
    monkeypatch.chdir(tmp_path)
    raw = 'x = {"a": 1, "bbbbbbbbbbbbbbbbbbbb": 2, "cccccccccccccccccccccc": 3}\n'
    assert render.format_source(raw, "t") == raw
