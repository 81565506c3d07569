"""Load spec files: ``[defaults]``, ``[[variant]]`` entries and ``[[sweep]]`` families.

A ``[[sweep]]`` table gives a list of choices for each knob it names; it expands to the Cartesian
product of those lists (in file order), each combination layered over ``[defaults]``. Problems are
collected, never raised one at a time: the caller prints them all, one line each, naming the file,
the variant and the field.
"""

from __future__ import annotations

import itertools
import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from codegen import epilogue_fn, rules
from codegen.plan_common import plural
from codegen.spec import Spec

TOP_LEVEL_KEYS = ("defaults", "variant", "sweep")


@dataclass(frozen=True)
class SpecProblem:
    """A user mistake in a spec file, printed as one line."""

    path: str
    variant: str | None
    field: str | None
    message: str
    swept: bool = False  # a [[sweep]] combination that breaks a rule (--skip-illegal leaves it out)

    def __str__(self) -> str:
        where = self.path + (f" [{self.variant}]" if self.variant else "")
        what = f"{self.field}: " if self.field and not self.message.startswith(self.field) else ""
        return shown(f"{where}: {what}{self.message}")


def shown(text: str) -> str:
    """Text from a file or a spec (a path, a name, a message quoting them), safe to print on one
    line: control characters (newline, NUL, ...) and other unprintable ones escaped as Python
    writes them in a string; printable text, non-ASCII included, unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class LoadedSpec:
    """A resolved, legal spec, with where it came from."""

    spec: Spec
    path: str
    variant: str

    @property
    def name(self) -> str:
        return self.spec.name or self.spec.canonical_name()


class SpecErrors(Exception):
    """Raised with every problem found, after all files were read."""

    def __init__(self, problems: list[SpecProblem]):
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


def display_path(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def project_root(path: Path) -> Path:
    """The nearest folder at or above `path` that holds pyproject.toml; else the working folder."""
    here = path.resolve()
    for folder in [here, *here.parents]:
        if (folder / "pyproject.toml").is_file():
            return folder
    return Path.cwd().resolve()


def root_relative(path: Path, root: Path) -> str:
    """`path` relative to the project root, in / form; ValueError when outside it."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise ValueError(
            f"{path}: outside the project root {root}; pass --root to name the folder holding "
            "both the specs and the project"
        ) from None


def relative_to_root(loaded: LoadedSpec, root: Path) -> LoadedSpec:
    """The same spec with its path relative to the project root (what kernel headers record)."""
    return LoadedSpec(loaded.spec, root_relative(Path(loaded.path), root), loaded.variant)


MAX_DEPTH = 16  # tables and arrays within each other: a spec needs 3 (epilogue = {...}, a sweep)


def parse_toml(text: str) -> dict:
    """`text` parsed as TOML; TOMLDecodeError also for nesting deeper than MAX_DEPTH (which the
    parser, or any code walking the result, would meet as a RecursionError)."""
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply to read") from None
    todo: list[tuple[object, int]] = [(doc, 0)]
    while todo:
        value, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise tomllib.TOMLDecodeError(
                f"tables and arrays nested more than {MAX_DEPTH} levels deep"
            )
        if isinstance(value, dict):
            todo += [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            todo += [(v, depth + 1) for v in value]
    return doc


def spec_files(paths: list[Path]) -> list[Path]:
    """Every ``*.toml`` under the given files and folders, sorted, shape lists excluded."""
    found: set[Path] = set()
    for p in paths:
        if p.is_dir():
            found.update(f for f in p.rglob("*.toml") if not {"shapes", "tuning"} & set(f.parts))
        else:
            found.add(p)
    return sorted(found)


_BRANCH = re.compile(r"^(int|float|bool|str|literal\[.*\])$")  # a union member in an error's loc
_KIND = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "int_parsing": "an integer",
    "float_parsing": "a number",
}


def _tags(field: str) -> tuple[str, list[str]]:
    """The key that picks the member of a tagged-union knob (epilogue: style), and its values."""
    info = Spec.model_fields[field]
    key = str(info.discriminator)
    tags = [
        tag
        for member in typing.get_args(info.annotation)
        if key in getattr(member, "model_fields", {})
        for tag in typing.get_args(member.model_fields[key].annotation)
    ]
    return key, tags


# what a knob that takes a table (or its short forms) must be, said in the spec's own terms
_TABLE_KNOBS = {
    "tile": "three numbers [M, N, K]",
    "cluster": "two numbers [M, N]",
    "epilogue": '"direct", "tma" or a table {style = "direct", ...}',
    "scheduler": 'one of "grid", "persistent", "split_k", "stream_k", "dynamic" or a table {kind = ...}',
}


def _short(value: object) -> str:
    """A value a user wrote, for a message: its repr, escaped, at most 60 characters."""
    text = shown(repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


def _pydantic_problems(path: str, label: str, err: ValidationError) -> list[SpecProblem]:
    """One line per field, in the spec's terms rather than pydantic's: the errors of a union's
    members (stages: an integer or "auto") are merged into one that lists what each member
    takes; a tagged union's tag (epilogue.direct.alpha) is left out of the field's name."""
    merged: dict[str | None, tuple[list[str], object]] = {}
    out = []
    for e in err.errors():
        raw = [str(x) for x in e["loc"] if not str(x).startswith(("function-", "tagged-union"))]
        loc = [x for x in raw if not _BRANCH.match(x)]
        if len(loc) > 1 and loc[0] in ("epilogue", "scheduler") and loc[1] in _tags(loc[0])[1]:
            del loc[1]
            raw = raw[:1] + raw[2:]
        field = ".".join(loc) if loc else None
        msg = e["msg"].removeprefix("Value error, ")
        value = e.get("input")
        if len(loc) != len(raw):  # a union member's complaint: merged below
            want = _KIND.get(e["type"]) or msg.removeprefix("Input should be ")
            merged.setdefault(field, ([], value))[0].append(want)
            continue
        if e["type"] == "extra_forbidden" and len(loc) > 1:
            msg = f"unknown key {shown(loc[-1])!r} in {loc[0]}"
        elif e["type"] == "extra_forbidden":
            msg = (
                f"unknown knob {shown(field or '')!r}; legal knobs: {', '.join(Spec.model_fields)}"
            )
        elif e["type"] in _KIND and "input" in e:
            msg = f"{_short(value)} is not allowed; it must be {_KIND[e['type']]} (written without quotes)"
        elif e["type"] == "union_tag_not_found" and loc:
            key, tags = _tags(loc[0])
            msg = f"a table for {field} needs a {key!r} key: one of {', '.join(map(repr, tags))}"
        elif e["type"] == "union_tag_invalid" and loc:
            key, tags = _tags(loc[0])
            tag = e.get("ctx", {}).get("tag", value)
            msg = f"{_short(tag)} is not allowed; its {key} must be one of {', '.join(map(repr, tags))}"
        elif e["type"] in ("model_type", "model_attributes_type", "dict_type") and loc:
            want = _TABLE_KNOBS.get(loc[-1], "a table")
            msg = f"{_short(value)} is not allowed; it must be {want}"
        elif e["type"] == "missing":
            knob = loc[0] if loc else ""
            msg = "is required" + (
                f" ({knob} takes {_TABLE_KNOBS[knob]})" if knob in _TABLE_KNOBS else ""
            )
        elif msg.startswith("Input should be ") and "input" in e:  # literal_error and the rest
            msg = (
                f"{_short(value)} is not allowed; it must be {msg.removeprefix('Input should be ')}"
            )
        out.append(SpecProblem(path, label, field, msg))
    for field, (wants, value) in merged.items():
        out.append(
            SpecProblem(
                path,
                label,
                field,
                f"{_short(value)} is not allowed; it must be {' or '.join(wants)}",
            )
        )
    return out


def _entries(path: str, doc: dict) -> tuple[list[tuple[str | None, dict, bool]], list[SpecProblem]]:
    """The raw knob dicts of a file, each with its given name (None: derive one) and whether a
    [[sweep]] made it."""
    problems = [
        SpecProblem(path, None, key, f"unknown table [{key}]; legal: {', '.join(TOP_LEVEL_KEYS)}")
        for key in doc
        if key not in TOP_LEVEL_KEYS
    ]
    shapes = {
        "defaults": "a table: [defaults]",
        "variant": "tables: [[variant]]",
        "sweep": "tables: [[sweep]]",
    }
    for key, want in shapes.items():
        value = doc.get(key)
        ok = (
            isinstance(value, dict)
            if key == "defaults"
            else (isinstance(value, list) and all(isinstance(v, dict) for v in value))
        )
        if value is not None and not ok:
            problems.append(SpecProblem(path, None, key, f"{key} must be {want}, got {value!r}"))
            doc = {k: v for k, v in doc.items() if k != key}
    defaults = doc.get("defaults", {})
    entries: list[tuple[str | None, dict, bool]] = []
    for variant in doc.get("variant", []):
        entries.append((variant.get("name"), {**defaults, **variant}, False))
    if not entries and not doc.get("sweep") and not problems:
        problems.append(SpecProblem(path, None, None, "no [[variant]] or [[sweep]] entries"))
    for i, sweep in enumerate(doc.get("sweep", [])):
        bad = [k for k, v in sweep.items() if not isinstance(v, list) or not v]
        if bad:
            problems.append(
                SpecProblem(
                    path,
                    f"sweep {i + 1}",
                    bad[0],
                    f"every knob of a [[sweep]] is a non-empty list of choices; {bad[0]} is "
                    f"{sweep[bad[0]]!r}",
                )
            )
            continue
        keys = list(sweep)
        for combo in itertools.product(*(sweep[k] for k in keys)):
            entries.append((None, {**defaults, **dict(zip(keys, combo, strict=True))}, True))
    return entries, problems


def _resolve_fn(knobs: dict, root: Path) -> tuple[dict, str | None]:
    """The knobs with ``epilogue.fn = "FILE:FUNCTION"`` read and checked (codegen/epilogue_fn.py)
    into the table the spec model takes; or the one-line reason it cannot be used."""
    epi = knobs.get("epilogue")
    if not isinstance(epi, dict) or "fn" not in epi or isinstance(epi["fn"], dict):
        return knobs, None
    try:
        got = epilogue_fn.resolve(epi["fn"], root)
    except epilogue_fn.EpilogueFnError as e:
        return knobs, str(e)
    fn = {"ref": got.ref, "args": got.args, "digest": got.digest, "source": got.source}
    return {**knobs, "epilogue": {**epi, "fn": fn}}, None


def load_file(
    path: Path, skipped: list[SpecProblem] | None = None
) -> tuple[list[LoadedSpec], list[SpecProblem]]:
    """All legal specs of one file, and every problem found in it. With `skipped` (a list), a
    [[sweep]] combination that breaks a rule is not a problem: its violations go to `skipped`."""
    shown = display_path(path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is allowed and dropped
        doc = parse_toml(text)
    except FileNotFoundError:
        return [], [SpecProblem(shown, None, None, "no such file")]
    except IsADirectoryError:
        return [], [SpecProblem(shown, None, None, "a folder where a spec file was expected")]
    except UnicodeDecodeError as e:
        return [], [
            SpecProblem(
                shown,
                None,
                None,
                f"not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); save it as UTF-8",
            )
        ]
    except tomllib.TOMLDecodeError as e:
        return [], [SpecProblem(shown, None, None, f"not valid TOML: {e}")]

    entries, problems = _entries(shown, doc)
    specs: list[LoadedSpec] = []
    root = project_root(path.parent)
    for i, (given, knobs, swept) in enumerate(entries):
        label = given or f"entry {i + 1}"
        knobs, why = _resolve_fn(knobs, root)
        if why:
            problems.append(SpecProblem(shown, label, "epilogue.fn", why))
            continue
        try:
            spec = rules.resolve(Spec.model_validate(knobs))
        except ValidationError as e:
            problems += _pydantic_problems(shown, label, e)
            continue
        label = given or spec.canonical_name()
        broken = rules.check(spec)
        found = [SpecProblem(shown, label, v.field, v.message, swept) for v in broken]
        if swept and skipped is not None:
            skipped += found
        else:
            problems += found
        if not broken:
            specs.append(LoadedSpec(spec, shown, label))
    return specs, problems


def load(paths: list[Path], skipped: list[SpecProblem] | None = None) -> list[LoadedSpec]:
    """Every spec under ``paths``, sorted by name; raises :class:`SpecErrors` listing all problems.

    With `skipped` (a list), illegal [[sweep]] combinations are left out and their violations
    appended to it instead (see :func:`skip_summary`)."""
    files = spec_files(paths)
    problems: list[SpecProblem] = []
    if not files:
        problems.append(
            SpecProblem(", ".join(p.as_posix() for p in paths), None, None, "no *.toml spec files")
        )
    specs: list[LoadedSpec] = []
    for f in files:
        got, bad = load_file(f, skipped)
        specs += got
        problems += bad

    seen: dict[str, LoadedSpec] = {}
    for s in specs:
        if s.name in seen:
            first = seen[s.name]
            problems.append(
                SpecProblem(
                    s.path,
                    s.variant,
                    "name",
                    (
                        f"name {s.name!r} is given to more than one variant of this file; "
                        "give each a distinct name"
                        if first.path == s.path
                        else f"name {s.name!r} is already used by {first.path} "
                        f"[{first.variant}]; give one of them a distinct name"
                    ),
                )
            )
        else:
            seen[s.name] = s
    if problems:
        raise SpecErrors(problems)
    return sorted(seen.values(), key=lambda s: s.name)


def _rule_of(problem: SpecProblem) -> tuple[str, str]:
    """A violation's rule: its field and its message with the numbers taken out."""
    return problem.field or "", re.sub(r"\d+(\.\d+)?", "#", problem.message)


def skip_summary(skipped: list[SpecProblem]) -> list[str]:
    """One line per broken rule: how many sweep combinations it removed, and one example."""
    by_rule: dict[tuple[str, str], list[SpecProblem]] = {}
    for p in skipped:
        by_rule.setdefault(_rule_of(p), []).append(p)
    combos = len({(p.path, p.variant) for p in skipped})
    lines = [f"skipped {plural(combos, 'illegal sweep combination')}:"]
    for (field, _), found in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = found[0]
        lines.append(
            f"  {len(found)} break {field or 'the spec'}: {first.message} (e.g. {first.variant})"
        )
    return lines


def capped(problems: list[SpecProblem], limit: int) -> list[str]:
    """At most `limit` problem lines, then one line counting the rest and the rules they break."""
    lines = [str(p) for p in problems[:limit]]
    rest = problems[limit:]
    if rest:
        rules_left = len({_rule_of(p) for p in rest})
        lines.append(
            f"... and {plural(len(rest), 'more problem')}, breaking {plural(rules_left, 'rule')}"
        )
    return lines
