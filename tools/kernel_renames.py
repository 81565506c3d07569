"""Write the kernel rename table (old name -> derived name) once, when the shipped specs dropped
their explicit names for the one derived scheme (README, "Kernel names").

    git show REV:generated/MANIFEST > old-manifest
    python tools/kernel_renames.py old-manifest

A kernel is the same kernel when its arch and spec hash (every knob but the name) are: each
kernel of the old MANIFEST is matched to the spec that now derives its name, and every pair whose
names differ goes into templates/package/_renames.py (rendered into the package as
cutegemm._renames). The tuning data keyed by name (specs/tuning/*.toml: the tables and the
fitted cost models) is rewritten in place, only the quoted names changing; the kept sweeps
(specs/tuning/sweeps/) are not: `codegen fit` and `codegen report` map their names on read.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen import loader, package
from codegen.render import TEMPLATES, format_source

TABLE = TEMPLATES / "package" / "_renames.py"
HEAD = '''"""Kernels renamed in {version}: old name -> new name (the README's "Kernel names"). For
this release the old names still work, with a DeprecationWarning naming the new one, wherever
a kernel is named: the package's kernel(), gemm_fn, precompile, its tune cache, and importing
`<package>.<arch>.<old name>`. Written by tools/kernel_renames.py; do not edit."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVED_IN = "{removed}"  # the release that drops the old names

# names a renamed kernel took that a kernel of the same spec already had (one kernel now)
KEPT: tuple[str, ...] = {kept!r}

RENAMED: dict[str, str] = {{
'''
TAIL = '''}


def current(name: str, stacklevel: int = 3) -> str:
    """`name`, or the new name of a renamed kernel (with a DeprecationWarning naming it)."""
    new = RENAMED.get(name)
    if new is None:
        return name
    warnings.warn(
        f"kernel {name!r} is now named {new!r}; the old name goes in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return new


class _Alias(importlib.abc.Loader):
    """Loads a renamed kernel's module under its old name: the module itself, not a copy."""

    def __init__(self, module) -> None:
        self.module, self.own_spec = module, module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        module.__spec__ = self.own_spec  # the import set the alias's; the module keeps its own


_PACKAGES: set[str] = set()  # the arch packages that called aliases()


class _OldModules(importlib.abc.MetaPathFinder):
    """Finds `<arch package>.<old name>` for the arch packages that called aliases()."""

    def find_spec(self, fullname, path=None, target=None):
        parent, _, old = fullname.rpartition(".")
        arch = parent.rpartition(".")[2]  # a kernel's name starts with its arch folder's
        if parent not in _PACKAGES or not RENAMED.get(old, "").startswith(f"{arch}_"):
            return None
        module = importlib.import_module(f"{parent}.{current(old)}")
        return importlib.util.spec_from_loader(fullname, _Alias(module))


def aliases(arch_package: str) -> None:
    """Let `import <arch_package>.<old name>` import the renamed kernel's module."""
    if not any(isinstance(f, _OldModules) for f in sys.meta_path):
        sys.meta_path.append(_OldModules())
    _PACKAGES.add(arch_package)
'''


def new_names() -> dict[tuple[str, str], str]:
    """(arch folder, spec hash) -> the name each shipped spec derives now."""
    out = {}
    for s in loader.load([ROOT / "specs"]):
        key = (package.ARCH_DIR[s.spec.arch], s.spec.spec_hash())
        assert key not in out, f"two shipped specs of one spec hash: {out[key]}, {s.name}"
        out[key] = s.name
    return out


def renames(manifest: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """Every kernel of an old MANIFEST whose name changed: old name -> new name; and the new
    names that were already a kernel's name in it."""
    now = new_names()
    table, missing, before = {}, [], set()
    for line in manifest.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        relpath, spec_hash = line.split()[:2]
        folder, old = relpath.split("/")[1], Path(relpath).stem
        before.add(old)
        new = now.get((folder, spec_hash))
        if new is None:
            missing.append(old)
        elif new != old:
            table[old] = new
    if missing:
        sys.exit(f"no shipped spec makes these kernels any more: {', '.join(missing)}")
    return dict(sorted(table.items())), tuple(sorted(before & set(table.values())))


def write_table(table: dict[str, str], kept: tuple[str, ...]) -> None:
    major, minor, _ = package.PKG_VERSION.split(".")
    removed = f"{major}.{int(minor) + 1}.0"
    text = HEAD.format(version=package.PKG_VERSION, removed=removed, kept=kept)
    text += "".join(f"    {old!r}: {new!r},\n" for old, new in table.items()) + TAIL
    TABLE.write_text(format_source(text, TABLE.name), encoding="utf-8")


def rewrite_tuning(table: dict[str, str], folder: Path) -> list[Path]:
    """Each quoted kernel name in the tuning files replaced by its new name; nothing else."""
    quoted = re.compile(r'"([A-Za-z0-9_]+)"')
    changed = []
    for path in sorted(folder.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        new = quoted.sub(lambda m: f'"{table.get(m.group(1), m.group(1))}"', text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manifest", type=Path, help="the MANIFEST of the package before")
    args = parser.parse_args()
    table, kept = renames(args.manifest.read_text(encoding="utf-8"))
    write_table(table, kept)
    print(f"{len(table)} kernels renamed: {TABLE.relative_to(ROOT)}")
    for path in rewrite_tuning(table, ROOT / "specs" / "tuning"):
        print(f"rewrote the names in {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
