"""Every generated kernel's docstring has a per-role Timeline whose names are the file's own: each
role constant it quotes (`TMA_WARP = 0`) is a module constant with that value, each upper-case
constant it names (`TX_BYTES`, `EPILOGUE_BARRIER_ID`) is defined, and each barrier it waits on,
arrives on, commits or arms (`empty[s]`, `acc_full`) is a name the kernel code uses."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted(
    p for p in (ROOT / "generated" / "cutegemm").glob("sm*/*.py") if p.name != "__init__.py"
)

ROLE_CONSTANT = re.compile(r"\b([A-Z][A-Z0-9_]*) = (\d+)\b")
UPPER_NAME = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]*|STAGES)\b")
BARRIER = re.compile(r"\b(?:wait|arrive|commit|arm)\s+([a-z_][a-z0-9_]*)")


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level `NAME = value` and `A, B = 1, 2` assignments (values that are literals)."""
    found: dict[str, object] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                pairs = [(target, node.value)]
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts))
            else:
                continue
            for name, value in pairs:
                if isinstance(name, ast.Name):
                    try:
                        found[name.id] = ast.literal_eval(value)
                    except ValueError:
                        found[name.id] = None
    return found


def timeline_section(doc: str) -> str | None:
    """The docstring's Timeline section: its heading line up to the next blank line."""
    match = re.search(r"^Timeline \(.*?(?=\n\s*\n|\Z)", doc, re.DOTALL | re.MULTILINE)
    return match.group(0) if match else None


def check(source: str) -> list[str]:
    """What is wrong with a kernel's timeline (empty when it is right)."""
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False) or ""
    section = timeline_section(doc)
    if section is None:
        return ["no Timeline section in the module docstring"]
    end = tree.body[0].end_lineno if tree.body else 0
    code = "\n".join(source.splitlines()[end:])
    constants = module_constants(tree)
    problems = []
    roles = ROLE_CONSTANT.findall(section)
    if not roles:
        problems.append("the timeline names no role constant")
    for name, value in roles:
        if constants.get(name) != int(value):
            problems.append(f"{name} = {value}: the file has {name} = {constants.get(name)!r}")
    for name in set(UPPER_NAME.findall(section)):
        if name not in constants:
            problems.append(f"{name} is not a module constant")
    barriers = set(BARRIER.findall(section))
    if not barriers:
        problems.append("the timeline names no barrier")
    for name in barriers:
        if not re.search(rf"\b{name}\b", code):
            problems.append(f"barrier {name} does not occur in the kernel code")
    return problems


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_timeline_names_match_the_code(path: Path) -> None:
    problems = check(path.read_text())
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_check_catches_wrong_names() -> None:
    """The checker fails a timeline whose role constant, constant name or barrier is not the
    file's, and a docstring without a timeline."""
    path = next(p for p in KERNELS if p.parent.name == "sm100")
    source = path.read_text()
    assert not check(source)
    assert "TMA warp (TMA_WARP = 0)" in source
    wrong_value = source.replace("TMA warp (TMA_WARP = 0)", "TMA warp (TMA_WARP = 3)", 1)
    assert any("TMA_WARP = 3" in p for p in check(wrong_value))
    assert "wait empty[s]" in source
    wrong_barrier = source.replace("wait empty[s]", "wait vacant[s]", 1)
    assert any("vacant" in p for p in check(wrong_barrier))
    wrong_name = source.replace("(TX_BYTES)", "(TX_BYTES_ALL)", 1)
    assert any("TX_BYTES_ALL" in p for p in check(wrong_name))
    no_section = source.replace("\nTimeline (", "\nTime line (", 1)
    assert check(no_section) == ["no Timeline section in the module docstring"]
