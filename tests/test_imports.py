"""The import graph of codegen/: no cycles, no architecture imported by generic code, no
architecture importing another.

Every module under codegen/ is parsed with ast; each `import` and `from ... import` anywhere in
it (module level or inside a function) is an edge to the codegen module it names. The layers:

- an architecture package: ``codegen.arch.<name>`` and its modules (``codegen/arch/sm100/``);
- the registry, ``codegen.registry``: the one module that may import architecture packages;
- everything else goes through the registry. The generic core (:data:`GENERIC`: the spec, the
  shared rules and plan helpers, the arch interface and the split-K / stream-K pieces both
  architectures share) may not import the registry either, since the architectures import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codegen.spec import ARCHES

ROOT = Path(__file__).resolve().parent.parent
CODEGEN = ROOT / "codegen"
ARCH_PACKAGE = "codegen.arch"
REGISTRY = "codegen.registry"
# modules the architectures build on: they import neither an architecture nor the registry
GENERIC = frozenset(
    {
        "codegen.spec",
        "codegen.rules_common",
        "codegen.plan_common",
        "codegen.arch",
        "codegen.arch.interface",
        "codegen.arch.shared",
    }
)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The codegen module `name` refers to (itself, or the package holding a name in it)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(source: str, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The codegen modules a module's source imports, anywhere in it (function-level included)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from codegen.arch.sm100 import rules` names the module codegen.arch.sm100.rules
            targets = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for target in targets:
            found = _resolve(target, modules)
            if found and found != module:
                out.add(found)
    return out


def import_graph(root: Path = CODEGEN) -> dict[str, set[str]]:
    """module -> the codegen modules it imports, for every module under `root`."""
    base = root.parent
    paths = {module_name(p, base): p for p in sorted(root.rglob("*.py"))}
    modules = set(paths)
    return {
        name: imports_of(p.read_text(encoding="utf-8"), name, p.name == "__init__.py", modules)
        for name, p in paths.items()
    }


def arch_of(module: str) -> str | None:
    """The architecture package a module belongs to (codegen.arch.sm100), or None."""
    prefix = ARCH_PACKAGE + "."
    if not module.startswith(prefix):
        return None
    head = module[len(prefix) :].split(".")[0]
    package = prefix + head
    return package if package not in GENERIC else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, first == last) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(graph, set(g)) for g in groups]


def _cycle_through(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A path from the group's first module back to it, inside the group (for the message)."""
    start = min(group)
    seen = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return seen[node] + [start]
            if nxt in group and nxt not in seen:
                seen[nxt] = seen[node] + [nxt]
                todo.append(nxt)
    return sorted(group)


def layer_problems(graph: dict[str, set[str]]) -> list[str]:
    """Every edge that breaks the layering: generic code importing an architecture (or the
    registry, for the generic core), an architecture importing another, anything but the
    registry importing an architecture."""
    out = []
    for module, targets in sorted(graph.items()):
        mine = arch_of(module)
        for target in sorted(targets):
            theirs = arch_of(target)
            if mine and theirs and theirs != mine:
                out.append(f"{module} (architecture) imports {target} (another architecture)")
            elif module in GENERIC and (theirs or target == REGISTRY):
                out.append(f"{module} (generic) imports {target}")
            elif mine and target == REGISTRY:
                out.append(f"{module} (architecture) imports the registry")
            elif not mine and theirs and module != REGISTRY:
                out.append(f"{module} imports {target}: only {REGISTRY} may import an architecture")
    return out


def test_codegen_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "codegen.registry" in graph and "codegen.arch.sm100.rules" in graph
    assert cycles(graph) == []


def test_codegen_keeps_its_layers() -> None:
    assert layer_problems(import_graph()) == []


def test_every_arch_package_is_in_the_registry() -> None:
    from codegen import registry
    from codegen.arch.interface import Arch, ArchRules

    assert all(isinstance(a, Arch) for a in registry.ARCHES.values())
    assert all(isinstance(a.rules, ArchRules) for a in registry.ARCHES.values())
    assert all(name == a.name for name, a in registry.ARCHES.items())
    assert set(registry.ARCHES) == set(ARCHES)  # the spec's arch names

    folders = {p.name for p in (CODEGEN / "arch").iterdir() if (p / "__init__.py").exists()}
    assert folders == {a.short for a in registry.ARCHES.values()}
    assert {f"{ARCH_PACKAGE}.{a}" for a in folders} <= set(import_graph()[REGISTRY])


# ---- the checks can fail: a small synthetic tree ---------------------------------------------


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    files = {
        "codegen/__init__.py": "",
        "codegen/spec.py": "",
        # generic -> arch, and a cycle through a function-level import
        "codegen/rules_common.py": "def f():\n    from codegen.arch.sm90 import rules\n",
        "codegen/arch/__init__.py": "",
        "codegen/arch/shared.py": "",
        "codegen/arch/sm90/__init__.py": "from . import rules\n",
        "codegen/arch/sm90/rules.py": "from codegen import rules_common\n",
        # one arch importing another
        "codegen/arch/sm100/__init__.py": "",
        "codegen/arch/sm100/rules.py": "from codegen.arch.sm90.rules import check\n",
        # a front door importing an arch directly instead of through the registry
        "codegen/render.py": "import codegen.arch.sm100.rules\n",
        "codegen/registry.py": "from codegen.arch import sm90, sm100\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "codegen"


def test_the_checks_catch_a_bad_tree(bad_tree: Path) -> None:
    graph = import_graph(bad_tree)
    assert graph["codegen.arch.sm90"] == {"codegen.arch.sm90.rules"}  # a relative import
    assert graph["codegen.registry"] == {"codegen.arch.sm90", "codegen.arch.sm100"}
    assert cycles(graph) == [
        ["codegen.arch.sm90.rules", "codegen.rules_common", "codegen.arch.sm90.rules"]
    ]
    problems = layer_problems(graph)
    assert [p.split(" imports ")[0] for p in problems] == [
        "codegen.arch.sm100.rules (architecture)",
        "codegen.render",
        "codegen.rules_common (generic)",
    ]
    assert "another architecture" in problems[0] and "only codegen.registry" in problems[1]


def test_a_clean_tree_passes(bad_tree: Path) -> None:
    (bad_tree / "rules_common.py").write_text("")
    (bad_tree / "arch/sm100/rules.py").write_text("from codegen.arch.shared import *\n")
    (bad_tree / "render.py").write_text("from codegen import registry\n")
    graph = import_graph(bad_tree)
    assert cycles(graph) == [] and layer_problems(graph) == []


def test_every_codegen_package_ships() -> None:
    """pyproject.toml lists the packages a wheel holds: every package under codegen/."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    packages = {module_name(p, ROOT) for p in CODEGEN.rglob("__init__.py")}
    assert packages <= listed
