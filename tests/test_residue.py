"""Generated files carry no residue: each pattern below is a thing a reviewer should never have to
read past in generated/ (formatter-wrapped comments, no-ops, unused or magic numbers, mixed
spellings, the ring advance written out at every site, the other architecture's knobs).

Each test names the files and lines that break its rule, so a failure says what to fix in which
template.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted(
    p for p in (ROOT / "generated" / "cutegemm").glob("sm*/*.py") if p.name != "__init__.py"
)
ARCH_DIRS = ("sm90", "sm100")

# Spec fields only one architecture has: a file's SPEC must not carry the other's.
OTHER_ARCH_KNOBS = {
    "sm90": {"cta_group", "accumulators"},
    "sm100": {"consumer_warpgroups", "consumer_mode"},
}

# (rule, regex over the whole file text, what to write instead)
TEXT_RULES: list[tuple[str, str, str]] = [
    (
        "comment trailing a closing-bracket line (a formatter wrapped a statement to fit it)",
        r"(?m)^\s*[)\]}][^#\n]*#",
        "put the comment on its own line above the statement",
    ),
    (
        "statement wrapped in parentheses only to carry a trailing comment",
        r"(?m)[=(]\s*\(\n[^\n]*#[^\n]*\n\s*\)",
        "put the comment on its own line above the statement",
    ),
    ("no-op tile copy", r"tile_m, tile_n = ctm, ctn", "use ctm, ctn directly"),
    ("no-op multiply by one", r"\*\s*1\b(?![.\d])", "drop the factor"),
    ("no-op add of zero", r"[+-]\s*0\b(?![.\dx])", "drop the term"),
    (
        "magic warp index",
        r"\bwarp(?:_idx)?\s*(?:==|!=|<=|>=|<|>)\s*\d",
        "compare with a named warp-role constant",
    ),
    ("magic named-barrier id", r"barrier_id\s*=\s*\d", "use a named *_BARRIER_ID constant"),
    ("magic thread offset", r"\btidx\s*[-+]\s*\d", "offset by a named constant"),
    ("spelling EPI_BUFS / EPI_STAGES", r"\bEPI_(?:BUFS|STAGES)\b", "EPI_BUFFERS"),
    ("struct named Barriers", r"\bclass Barriers\b", "SharedStorage, as on both arches"),
    ("variable named warp", r"(?m)^\s*warp\s*=", "warp_idx, as on both arches"),
]

MAX_LINE = 100
# the ring advance (index + 1, wrap, phase flip) lives in one helper per file
PHASE_FLIP = re.compile(r"\bphase\w*\s*\^=\s*1\b")


def _arch(path: Path) -> str:
    return path.parent.name


def _ids() -> list[str]:
    return [f"{_arch(p)}/{p.stem}" for p in KERNELS]


def test_generated_tree_found() -> None:
    assert len(KERNELS) > 50, "generated/cutegemm/sm*/ should hold the shipped kernels"
    assert {_arch(p) for p in KERNELS} == set(ARCH_DIRS)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@pytest.mark.parametrize("rule,pattern,instead", TEXT_RULES, ids=[r[0] for r in TEXT_RULES])
def test_no_text_residue(rule: str, pattern: str, instead: str) -> None:
    rx = re.compile(pattern)
    hits = []
    for path in KERNELS:
        text = path.read_text()
        for m in rx.finditer(text):
            hits.append(f"{_arch(path)}/{path.name}:{_line_of(text, m.start())}: {m.group(0)!r}")
    assert not hits, f"{rule} ({instead}); {len(hits)} hit(s):\n" + "\n".join(hits[:40])


def test_comments_within_line_length() -> None:
    hits = []
    for path in KERNELS:
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if len(line) > MAX_LINE and "#" in line:
                hits.append(f"{_arch(path)}/{path.name}:{no}: {len(line)} columns")
    assert not hits, f"{len(hits)} comment line(s) over {MAX_LINE} columns:\n" + "\n".join(
        hits[:40]
    )


def test_one_ring_advance_per_file() -> None:
    hits = []
    for path in KERNELS:
        flips = len(PHASE_FLIP.findall(path.read_text()))
        if flips > 1:
            hits.append(f"{_arch(path)}/{path.name}: {flips} phase flips written out")
    assert not hits, "the ring advance belongs in one helper per file:\n" + "\n".join(hits[:40])


def _module_constants(tree: ast.Module) -> dict[str, int]:
    names: dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]*", n.id):
                    names[n.id] = node.lineno
    return names


def _exported(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def test_no_unused_constants() -> None:
    hits = []
    for path in KERNELS:
        tree = ast.parse(path.read_text())
        loads = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        exported = _exported(tree)
        for name, line in _module_constants(tree).items():
            if name not in loads and name not in exported:
                hits.append(f"{_arch(path)}/{path.name}:{line}: {name}")
    assert not hits, f"{len(hits)} module constant(s) nothing reads:\n" + "\n".join(hits[:40])


def test_spec_holds_only_its_arch_knobs() -> None:
    hits = []
    for path in KERNELS:
        tree = ast.parse(path.read_text())
        spec = next(
            (
                ast.literal_eval(n.value)
                for n in tree.body
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "SPEC" for t in n.targets)
            ),
            None,
        )
        assert spec is not None, f"{path.name}: no SPEC"
        other = OTHER_ARCH_KNOBS[_arch(path)] & set(spec)
        if other:
            hits.append(f"{_arch(path)}/{path.name}: {sorted(other)}")
    assert not hits, "SPEC carries the other architecture's knobs:\n" + "\n".join(hits[:40])


@pytest.mark.parametrize("pattern", [p for _, p, _ in TEXT_RULES])
def test_rules_catch_their_example(pattern: str) -> None:
    """Each rule's regex matches at least one line of the residue it names (it can fail)."""
    examples = [
        "    ):  # wrapped the ring",
        "X = (\n    132  # SMs\n)",
        "tile_m, tile_n = ctm, ctn",
        "grid=(clusters * 1, 1, 1)",
        "k = k + 0",
        "if warp_idx == 4:",
        "cute.arch.barrier(barrier_id=1, number_of_threads=128)",
        "ctidx = tidx - 128",
        "buf = epi_count % EPI_STAGES",
        "class Barriers:",
        "    warp = cute.arch.warp_idx()",
    ]
    assert any(re.search(pattern, e) for e in examples)
