"""Shared paths, the CLI runner and the ``build`` marker for the CPU test suite."""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

# A test run started in the background (`cmd &` from a non-interactive shell) inherits SIGINT
# ignored, and so would the CLI subprocesses the Ctrl-C tests interrupt: take SIGINT back, so
# that those children start with the default (Python's KeyboardInterrupt).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPECS = ROOT / "specs"
GENERATED = ROOT / "generated"
TEMPLATES = ROOT / "templates"
PACKAGE = GENERATED / "cutegemm"


def source_registry(folder: Path, pkg: str) -> types.ModuleType:
    """The package's registry rendered from its template with no kernels, imported as `pkg` from
    `folder`, its submodules (the runtime, the dispatcher's plain modules) found in
    templates/package/ where they live: the tests then set KERNELS and fake what they need."""
    from codegen import render

    init = folder / "__init__.py"
    template = render.environment().get_template("package/__init__.py.j2")
    init.write_text(template.render(pkg=pkg, version="0", dsl_version="9.9.9", rows=[]))
    spec = importlib.util.spec_from_file_location(
        pkg, init, submodule_search_locations=[str(TEMPLATES / "package")]
    )
    registry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registry)
    return registry


def kernel_glob(pattern: str = "*.py") -> list[Path]:
    """Generated kernel files (both arch folders of the package) whose name matches `pattern`."""
    return sorted(
        (p for p in PACKAGE.glob(f"sm*/{pattern}") if p.name != "__init__.py"),
        key=lambda p: p.name,
    )


def shipped(module: str = "") -> types.ModuleType:
    """The shipped package generated/cutegemm, or its submodule `module`, imported from
    generated/ (torch needed: skip without it); later submodule imports find the package."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(GENERATED))
    try:
        return importlib.import_module(f"cutegemm.{module}" if module else "cutegemm")
    finally:
        sys.path.remove(str(GENERATED))


def build_named(names: list[str], out: Path, jobs: int = 2) -> dict:
    """Cross-compile the generated kernels `names` into `out`: {name: BuildResult}."""
    from codegen import build

    files = [kernel_file(n) for n in names]
    assert all(f.exists() for f in files), "run `codegen render specs/` first"
    return {r.name: r for r in build.build(files, out, jobs=jobs)}


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
