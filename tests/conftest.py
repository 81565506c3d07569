"""Shared paths, the CLI runner and the ``build`` marker for the CPU test suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPECS = ROOT / "specs"
GENERATED = ROOT / "generated"
TEMPLATES = ROOT / "templates"
PACKAGE = GENERATED / "cutegemm"


def kernel_glob(pattern: str = "*.py") -> list[Path]:
    """Generated kernel files (both arch folders of the package) whose name matches `pattern`."""
    return sorted(
        (p for p in PACKAGE.glob(f"sm*/{pattern}") if p.name != "__init__.py"),
        key=lambda p: p.name,
    )


def kernel_file(name: str) -> Path:
    """The generated kernel file of variant `name`, in whichever arch folder holds it."""
    found = kernel_glob(f"{name}.py")
    return found[0] if found else PACKAGE / "sm90" / f"{name}.py"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "build: cross-compiles generated kernels on the CPU (slow; deselect with -m 'not build')",
    )
    config.addinivalue_line(
        "markers",
        "export: AOT-exports generated kernels on the CPU (deselect with -m 'not export')",
    )


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: no forced colour, so the text is plain; and the
    codegen of this checkout first on the path, wherever the command runs (from a temporary
    folder, an editable install of another checkout would answer instead)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_cli(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m codegen ARGS`` in ``cwd`` with stdout and stderr piped."""
    return subprocess.run(
        [sys.executable, "-m", "codegen", *map(str, args)],
        cwd=cwd,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
