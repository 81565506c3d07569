"""Where the command line prints: the consoles and the one-line-per-problem exit, shared by
codegen.cli and the commands that join it (codegen.cli_generalize)."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

# Rich sizes tables to the terminal; piped output (CI logs) gets a width that fits the report.
_WIDTH = None if sys.stdout.isatty() else 240
console = Console(highlight=False, width=_WIDTH)
err = Console(stderr=True, highlight=False, width=_WIDTH)


def fail(lines: list[str]) -> None:
    """Print each problem on one line of stderr, however long, and exit 1."""
    for line in lines:
        err.print(line, markup=False, soft_wrap=True)
    raise typer.Exit(1)
