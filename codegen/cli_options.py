"""Command-line options that several commands take alike, each written once: a command's
parameter reads ``generated: GeneratedOpt = Path("generated")`` and typer finds the option's
name and help in the alias."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

GeneratedOpt = Annotated[Path, typer.Option("--dir", help="Folder of generated kernels.")]
OnlyOpt = Annotated[
    str | None, typer.Option("--only", help="Globs on kernel names, comma-separated.")
]
