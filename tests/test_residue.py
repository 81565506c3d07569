"""Generated files carry no residue: each pattern below is a thing a reviewer should never have to
read past in generated/ (formatter-wrapped comments, no-ops, unused or magic numbers, mixed
spellings, the ring advance written out at every site, the other architecture's knobs), and in
their docstrings and comments (lines over 100 columns, a paragraph said twice, files that do not
exist, plurals hedged with "(s)", a count of one before a plural noun, placeholders printed as
they are). The project's own Python (codegen/, the package's plain modules, tests/, tools/,
.ci/) keeps its docstrings and comments to 100 columns, names only files that exist and says
what it means; so do the comments of its TOML files.

Each test names the files and lines that break its rule, so a failure says what to fix in which
template.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import os
import re
import sys
import tokenize
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
    (
        "literal loop count",
        r"\brange\w*\((?:\s*\d+\s*\)|\s*\w+\s*,\s*\d+\s*[,)])",
        "count from a layout (cute.size) or a named constant",
    ),
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
        "for i in cutlass.range_constexpr(0, 4):",
    ]
    assert any(re.search(pattern, e) for e in examples)


# ---- docstrings and comments: line length, references, repeated paragraphs, words ----------------

GENERATED = ROOT / "generated"
TEMPLATES = ROOT / "templates"
# every Python file of the package: kernels, registry, runtime, build backend (not a build/ copy)
PACKAGE_PY = sorted([*GENERATED.glob("*.py"), *(GENERATED / "cutegemm").rglob("*.py")])
# the generator's own Python, the package's plain modules that render copies as they are, the
# tests, the tools and CI's scripts
SOURCE_PY = sorted(
    [
        *(ROOT / "codegen").rglob("*.py"),
        *(TEMPLATES / "package").glob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "tools").rglob("*.py"),
        *(ROOT / ".ci").glob("*.py"),
    ]
)
# a comment that is a tool's pragma, not prose: the line it ends is as long as its code
PRAGMA = re.compile(r"#\s*(?:fmt:|type:|noqa\b|pragma:)")
# stand-ins for any name in a file a comment names: cutegemm/sm90/NAME.py, GPU.model.toml
PLACEHOLDERS = ("NAME", "GPU")
# Paragraphs a kernel repeats on purpose: each stands above the same step in another role of an
# sm_100a kernel (the ring and accumulator-slot advance in the TMA, MMA and epilogue warps; the
# slot hand-back after the last TMEM load in each epilogue branch; the tile-answer read of the
# dynamic scheduler in every role), so a reader of one role finds it there. Each must still occur
# twice somewhere: an entry nothing repeats any more fails the test.
INTENDED_REPEATS = (
    "the tile's last TMEM load: hand the slot back",
    "tcgen05.wait::ld one arrive per warp",
    "the next slot; past the last one the ring wraps",
    "the next accumulator slot; past the last one",
    "this CTA's own tile first, then the tiles of CTAs it cancels",
    "answer j completes clc_full's phase j",
    "one answer per tile, in a ring of one slot",
)
MIN_PARAGRAPH = 60  # shorter paragraphs ("wait full[s]") may well stand twice
# a file a comment or docstring names: templates/sm90/gemm.py.j2, specs/sm90/family.toml, ...
FILE_REF = re.compile(r"(?<![\w/.-])(\w[\w./*-]*\.(?:py\.j2|j2|py|toml|md))\b")


def _prose(text: str) -> list[tuple[int, str, str]]:
    """(line, "doc" or "comment", text) of every docstring line and comment of a Python file."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if ast.get_docstring(node, clean=False) is not None and first is not None:
                lines = text.splitlines()[first.lineno - 1 : first.end_lineno]
                out += [(first.lineno + i, "doc", s) for i, s in enumerate(lines)]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and not PRAGMA.match(tok.string):
            out.append((tok.start[0], "comment", tok.line.rstrip("\n")))
    return out


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """Docstring paragraphs and comment blocks (consecutive comment lines), whitespace folded."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            for para in re.split(r"\n\s*\n", doc or ""):
                out.append((node.body[0].lineno, " ".join(para.split())))
    block: list[str] = []
    start = last = -2
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.COMMENT:
            continue
        if tok.start[0] != last + 1 and block:
            out.append((start, " ".join(block)))
            block = []
        if not block:
            start = tok.start[0]
        block.append(tok.string.lstrip("#").strip())
        last = tok.start[0]
    if block:
        out.append((start, " ".join(block)))
    return out


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_docstrings_and_comments_within_line_length() -> None:
    """Every docstring and comment line of the package within MAX_LINE columns, the kernels'
    Pipeline sections (codegen.plan_common.ring_lines) and parameter lists included."""
    hits = [
        f"{_rel(path)}:{no}: {kind} line of {len(line)} columns"
        for path in PACKAGE_PY
        for no, kind, line in _prose(path.read_text(encoding="utf-8"))
        if len(line) > MAX_LINE
    ]
    assert not hits, (
        f"{len(hits)} docstring or comment line(s) over {MAX_LINE} columns (the `wrap` filter of "
        "codegen/render.py wraps prose in a template):\n" + "\n".join(hits[:40])
    )


def test_source_docstrings_and_comments_within_line_length() -> None:
    """codegen/, the package's plain modules, tests/, tools/ and .ci/: no docstring or comment
    line over MAX_LINE columns (a comment that is only a pragma, `# fmt: skip`, counts as code)."""
    hits = [
        f"{_rel(path)}:{no}: {kind} line of {len(line)} columns"
        for path in SOURCE_PY
        for no, kind, line in _prose(path.read_text(encoding="utf-8"))
        if len(line) > MAX_LINE
    ]
    assert not hits, (
        f"{len(hits)} docstring or comment line(s) over {MAX_LINE} columns:\n"
        + "\n".join(hits[:40])
    )


def _toml_comment(line: str) -> str | None:
    """The comment of a TOML line (from its `#` outside a string on), or None."""
    quote, i = None, 0
    while i < len(line):
        ch = line[i]
        if quote == '"' and ch == "\\":
            i += 2  # an escaped character of a basic string
            continue
        if quote is None and ch == "#":
            return line[i:]
        if ch in "\"'" and quote in (None, ch):
            quote = None if quote else ch
        i += 1
    return None


def test_toml_comments_within_line_length() -> None:
    """Every TOML file of the project (specs, tuning tables, test specs, pyproject.toml): no line
    that holds a comment runs past MAX_LINE columns (a long inline table alone may)."""
    hits = [
        f"{rel}:{no}: {len(line)} columns"
        for rel in _project_files()
        if rel.endswith(".toml") and not rel.startswith("generated/")
        for no, line in enumerate((ROOT / rel).read_text(errors="replace").splitlines(), 1)
        if len(line) > MAX_LINE and _toml_comment(line) is not None
    ]
    assert not hits, "comment lines over 100 columns:\n" + "\n".join(hits[:40])


def _project_files() -> list[str]:
    skip = {".git", ".venv", "build", "__pycache__", ".hypothesis", ".pytest_cache", "scratch"}
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
        base = Path(folder).relative_to(ROOT).as_posix()
        found += [f if base == "." else f"{base}/{f}" for f in files]
    return found


def test_no_reference_to_a_file_that_does_not_exist() -> None:
    """A file named in a docstring or comment of a generated or codegen/ file, or anywhere in a
    template, exists: as a path from the project root, or as the tail of one (`sm100/gemm.py.j2`,
    a template's own folder's `_contract.py.j2`); NAME and GPU stand for any name, and a bare
    `functools.py` is the standard library's."""
    files = _project_files()

    def exists(ref: str) -> bool:
        if "/" not in ref and ref.removesuffix(".py") in sys.stdlib_module_names:
            return True
        pattern = ref
        for name in PLACEHOLDERS:
            pattern = pattern.replace(name, "*")
        return any(
            f == ref or f.endswith("/" + ref) or fnmatch.fnmatch(f, f"*{pattern}") for f in files
        )

    prose = [*PACKAGE_PY, *SOURCE_PY]
    texts = [(p, [s for _, _, s in _prose(p.read_text(encoding="utf-8"))]) for p in prose]
    texts += [(p, p.read_text(encoding="utf-8").splitlines()) for p in TEMPLATES.rglob("*.j2")]
    hits = [
        f"{_rel(path)}: {m.group(1)}"
        for path, lines in texts
        for line in lines
        for m in FILE_REF.finditer(line)
        if not exists(m.group(1))
    ]
    assert not hits, "names of files that do not exist:\n" + "\n".join(sorted(set(hits))[:40])


# Words a docstring or comment must not hold: (rule, regex over its prose, what to write instead)
WORD_RULES: list[tuple[str, str, str]] = [
    (
        "a plural hedged with (s)",
        r"\w\(s\)",
        "the count's own number: plural() in codegen/plan_common",
    ),
    (
        "one of a plural noun",
        (
            r"(?<![-+*/%<>=] )(?<!rank )(?<!warp )\b1 (?:CTAs|SMs|slots|stages|warps|warpgroups|"
            r"buffers|tiles|splits|peers|clusters|workers|threads|columns|rows|answers|arrives)\b"
        ),
        "the singular: plural() in codegen/plan_common",
    ),
    (
        "a placeholder printed as it is (an f-string that is not one, or template residue)",
        r"\{[A-Za-z_][\w.]*\}|\{\{|\{%|\{#",
        "the value it stands for",
    ),
]


def _prose_words(text: str) -> list[tuple[int, str]]:
    """(line, words) of every docstring line and comment: a comment without the code before it."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                out += [(node.body[0].lineno + i, s) for i, s in enumerate(doc.splitlines())]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and not PRAGMA.match(tok.string):
            out.append((tok.start[0], tok.string))
    return out


@pytest.mark.parametrize("rule,pattern,instead", WORD_RULES, ids=[r[0] for r in WORD_RULES])
def test_no_wrong_words(rule: str, pattern: str, instead: str) -> None:
    """Docstrings and comments of every package file and of codegen/ say what they mean."""
    rx = re.compile(pattern)
    hits = [
        f"{_rel(path)}:{no}: {m.group(0)!r}"
        for path in [*PACKAGE_PY, *SOURCE_PY]
        for no, words in _prose_words(path.read_text(encoding="utf-8"))
        for m in rx.finditer(words)
    ]
    assert not hits, f"{rule} ({instead}); {len(hits)} hit(s):\n" + "\n".join(hits[:40])


def test_no_paragraph_repeated_within_a_file() -> None:
    hits, intended = [], set()
    for path in PACKAGE_PY:
        seen: dict[str, int] = {}
        for no, para in _paragraphs(path.read_text(encoding="utf-8")):
            if len(para) < MIN_PARAGRAPH:
                continue
            if para in seen and para.startswith(INTENDED_REPEATS):
                intended |= {p for p in INTENDED_REPEATS if para.startswith(p)}
            elif para in seen:
                hits.append(f"{_rel(path)}:{no}: repeats line {seen[para]}: {para[:80]}")
            seen.setdefault(para, no)
    assert not hits, (
        "a paragraph repeated within a file (say it once, or add it to INTENDED_REPEATS with "
        "why):\n" + "\n".join(hits[:40])
    )
    assert intended == set(INTENDED_REPEATS), (
        f"repeated nowhere now, drop from INTENDED_REPEATS: {set(INTENDED_REPEATS) - intended}"
    )


def test_the_prose_rules_catch_their_example() -> None:
    text = (
        '"""Doc.\n\nThe same paragraph, long enough to count as one: sixty characters or more.\n"""\n'
        "# The same paragraph, long enough to count as one: sixty characters or more.\n\n"
        "x = 1  # " + "y" * 100 + "\n"
    )
    paras = [p for _, p in _paragraphs(text) if len(p) >= MIN_PARAGRAPH]
    assert len(paras) == 3 and paras[0] == paras[1]
    assert [k for _, k, s in _prose(text) if len(s) > MAX_LINE] == ["comment"]
    assert _prose("x = 1  # fmt: skip\ny = 2  # type: ignore[misc]\n") == []
    assert _toml_comment('x = "a # b"  # c') == "# c" and _toml_comment("y = 'b#'") is None
    assert FILE_REF.findall("(templates/sm90/nothing.py.j2) and specs/a.toml") == [
        "templates/sm90/nothing.py.j2",
        "specs/a.toml",
    ]
    words = [w for _, w in _prose_words('"""1 CTAs, slot(s), {__package__}.KERNELS"""\nx = 1\n')]
    for _, pattern, _ in WORD_RULES:
        assert re.search(pattern, words[0]), pattern
    fine = (
        "rank 1 consumers; STAGES - 1 stages; 1 CTA; {'a': 1}; {name: (params,)}}; 1 + 16 tx bytes"
    )
    assert not any(re.search(p, fine) for _, p, _ in WORD_RULES)
