"""The package's build backend (pyproject.toml: build-backend): setuptools, from a clean tree.

setuptools copies the package into build/lib/ and never removes what an earlier build copied
there, so a wheel built after a kernel was renamed or removed would ship the old file too. Each
wheel build here starts by removing build/lib/; every other hook is setuptools' own.
"""

import shutil
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    shutil.rmtree(Path(__file__).resolve().parent / "build" / "lib", ignore_errors=True)
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
