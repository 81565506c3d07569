"""Epilogue functions: a spec's ``epilogue.fn`` names a plain Python function in a file of the
project, ``fn = "specs/epilogues/library.py:scale_rowwise"``, that the epilogue calls once per
accumulator element, in f32, before the conversion to the output dtype. Its source is copied into
the generated kernel (the file stays standalone; a reviewer reads the function where it is
called).

Each parameter declares what it needs by its annotation, one of the kinds below (import them from
this module so the file is valid Python; only the names are read, by parsing the file, never by
importing it):

=================  ========================================================================
``Acc``            the accumulator element, f32 (exactly one parameter)
``Scalar``         a runtime scalar: a host float, passed as an f32 kernel argument at launch
``DeviceScalar``   a 0-d float32 CUDA tensor, read by the kernel (a CUDA graph replays with
                   the tensor's new value)
``RowVec``         a float32 CUDA tensor of length M (or (M, 1)): the element's row's value
``ColVec``         a float32 CUDA tensor of length N (or (1, N)): the element's column's value
``Tile``           an (M, N) CUDA tensor in the output dtype (e.g. a residual): its element at
                   the accumulator element's (row, col)
``Gate``, ``Up``   instead of ``Acc``, a gated activation on a fused gate+up projection: the
                   weight B (2F, K) holds gate and up rows interleaved in blocks of 8
                   (``cutegemm.interleave_gate_up``); the function gets one gate and one up
                   element of a row and returns one value, stored into an (M, F) output
=================  ========================================================================

Every value the function sees is one f32 number (a ``cutlass.Float32`` in the kernel); it returns
the element's new f32 value. Its body may use its parameters, its own locals, ``cutlass`` and
``cute`` (the kernel file imports both: ``cutlass.max``, ``cutlass.min``, ``cute.math.exp``, ...)
and ``abs``, ``float``, ``int``; nothing else of its module is copied.

:func:`resolve` reads and checks a reference at load time; every mistake is one line naming the
function, the parameter and what would be legal.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from dataclasses import dataclass
from pathlib import Path


class Acc(float):
    """The accumulator element (f32)."""


class Scalar(float):
    """A runtime scalar: a host float passed to the kernel (f32) at each launch."""


class DeviceScalar(float):
    """A 0-d float32 CUDA tensor the kernel reads (one value)."""


class RowVec(float):
    """A float32 vector of length M: the value of the element's row."""


class ColVec(float):
    """A float32 vector of length N: the value of the element's column."""


class Tile(float):
    """An (M, N) tensor in the output dtype: its element at the accumulator element's (row, col)."""


class Gate(float):
    """The gate half of a gated pair (instead of Acc): the product with gate row f of the weight."""


class Up(float):
    """The up half of a gated pair (instead of Acc): the product with up row f of the weight."""


# a gated pair's weight rows: gate rows f..f+7, then up rows f..f+7, for f = 0, 8, 16, ...
# (cutegemm.interleave_gate_up); a multiple of 8 keeps a gate value and its up value in one
# thread's accumulator fragment on both architectures (wgmma: 8-column groups and rows r, r + 8
# with swap AB; tcgen05: a thread's row)
GATED_BLOCK = 8


# annotation name -> kind, as the spec's SPEC dict records it
KINDS: dict[str, str] = {
    "Acc": "acc",
    "Scalar": "scalar",
    "DeviceScalar": "device_scalar",
    "RowVec": "row",
    "ColVec": "col",
    "Tile": "tile",
    "Gate": "gate",
    "Up": "up",
}
# the kinds that are accumulator elements, not arguments the caller passes
ACC_KINDS = frozenset({"acc", "gate", "up"})
KIND_NAMES = {kind: name for name, kind in KINDS.items()}
# what a kind is, in a docstring's words
KIND_DOC = {
    "scalar": "a host float (f32 at launch)",
    "device_scalar": "a 0-d float32 CUDA tensor",
    "row": "a float32 CUDA tensor of length M",
    "col": "a float32 CUDA tensor of length N",
    "tile": "an (M, N) CUDA tensor in the output dtype",
}
# names the copied body may read besides its parameters and locals: the kernel file's imports
# and a few builtins that act on DSL numbers
GLOBALS = ("cutlass", "cute")
BUILTINS = ("abs", "float", "int")
# the host names launcher() and run() use: a parameter of that name would shadow one
RESERVED = frozenset(
    {"a", "b", "c", "workspace", "stream", "sm_count", "m", "n", "k", "args", "tensors"}
    | {"problems", "compiled", "scalars", "label", "value", "t", "lead", "leading", "torch"}
    | {"cuda", "cute", "cutlass", "from_dlpack", "tiles", "F32_MAX", "fn_args", "row_partials"}
)


class EpilogueFnError(ValueError):
    """A reference that cannot be used: its message is one line."""


@dataclass(frozen=True)
class Resolved:
    """A checked epilogue function: what the spec records and the source the kernel copies."""

    ref: str  # "path:name", the path relative to the project root
    name: str
    args: tuple[tuple[str, str], ...]  # every parameter, in order: (name, kind)
    source: str  # the function's text, dedented, decorators none
    digest: str  # sha256 of the source, 12 hex digits: the spec hash covers it


def legal_kinds() -> str:
    return ", ".join(KINDS)


def is_gated(args) -> bool:
    """A gated pair's function (Gate and Up parameters): output N/2 columns."""
    return any(kind == "gate" for _, kind in args)


def resolve(ref: object, root: Path) -> Resolved:
    """Read and check ``fn = "FILE:FUNCTION"`` (path relative to `root`, the project root)."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise EpilogueFnError(
            f'{ref!r} is not allowed; it must be a string "path/to/file.py:function" (the path '
            "relative to the project root)"
        )
    path_text, name = ref.split(":")
    if not name.isidentifier():
        raise EpilogueFnError(f"{ref!r}: {name!r} is not a function name")
    path = Path(path_text)
    if path.is_absolute() or ".." in path.parts or path.suffix != ".py":
        raise EpilogueFnError(
            f"{ref!r}: the file must be a .py file named relative to the project root, inside it"
        )
    try:
        text = (root / path).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise EpilogueFnError(
            f"{ref!r}: no such file {path.as_posix()} under the project root"
        ) from None
    except UnicodeDecodeError:
        raise EpilogueFnError(f"{ref!r}: {path.as_posix()} is not UTF-8 text") from None
    try:
        module = ast.parse(text, filename=path.as_posix())
    except SyntaxError as e:
        raise EpilogueFnError(
            f"{ref!r}: {path.as_posix()} does not parse (line {e.lineno}: {e.msg})"
        ) from None
    found = [
        node
        for node in module.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]
    if not found:
        defined = sorted(
            n.name
            for n in module.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
        )
        raise EpilogueFnError(
            f"{ref!r}: no top-level function {name!r} in {path.as_posix()} (it defines: "
            f"{', '.join(defined) or 'none'})"
        )
    fn = found[-1]
    where = f"epilogue function {name} ({path.as_posix()})"
    if isinstance(fn, ast.AsyncFunctionDef) or fn.decorator_list:
        raise EpilogueFnError(f"{where}: must be a plain def, without decorators (not async)")
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise EpilogueFnError(
            f"{where}: takes plain parameters only (no *args, **kwargs, keyword-only, "
            "positional-only or default values), each annotated with its kind"
        )
    args: list[tuple[str, str]] = []
    for param in a.args:
        note = param.annotation
        label = (
            note.id
            if isinstance(note, ast.Name)
            else note.attr
            if isinstance(note, ast.Attribute)
            else None
        )
        if label not in KINDS:
            shown = ast.unparse(note) if note is not None else "no annotation"
            raise EpilogueFnError(
                f"{where}: parameter {param.arg!r} has {shown!s}, not a kind the epilogue can "
                f"give; annotate it with one of {legal_kinds()} (codegen/epilogue_fn.py)"
            )
        if KINDS[label] not in ACC_KINDS and (param.arg in RESERVED or param.arg.startswith("_")):
            raise EpilogueFnError(
                f"{where}: parameter {param.arg!r} would shadow a name of the generated "
                "launcher; rename it"
            )
        args.append((param.arg, KINDS[label]))
    accs = [p for p, kind in args if kind == "acc"]
    gated = [kind for _, kind in args if kind in ("gate", "up")]
    if gated:
        if accs or sorted(gated) != ["gate", "up"]:
            raise EpilogueFnError(
                f"{where}: a gated function takes exactly one Gate and one Up parameter and no "
                f"Acc (got {len(accs)} Acc, {gated.count('gate')} Gate, {gated.count('up')} Up)"
            )
        if any(kind == "tile" for _, kind in args):
            raise EpilogueFnError(
                f"{where}: a gated function (Gate, Up) takes no Tile: its output has N/2 "
                "columns; legal with Gate and Up: Scalar, DeviceScalar, RowVec"
            )
        if any(kind == "col" for _, kind in args):
            raise EpilogueFnError(
                f"{where}: a gated function (Gate, Up) takes no ColVec (the weight's rows are "
                "interleaved); legal with Gate and Up: Scalar, DeviceScalar, RowVec"
            )
    elif len(accs) != 1:
        raise EpilogueFnError(
            f"{where}: needs exactly one parameter annotated Acc (the accumulator element), "
            f"got {len(accs)} (or one Gate and one Up for a gated pair)"
        )
    if not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn)):
        raise EpilogueFnError(f"{where}: returns nothing; return the element's new f32 value")
    free = _free_names(fn, {p for p, _ in args})
    if free:
        raise EpilogueFnError(
            f"{where}: uses {', '.join(sorted(free))}, which the kernel file does not have "
            f"(the body may use its parameters, its locals, {', '.join(GLOBALS + BUILTINS)})"
        )
    segment = ast.get_source_segment(text, fn)
    assert segment is not None
    first_col = fn.col_offset
    source = textwrap.dedent(" " * first_col + segment).strip() + "\n"
    return Resolved(
        ref=f"{path.as_posix()}:{name}",
        name=name,
        args=tuple(args),
        source=source,
        digest=hashlib.sha256(source.encode()).hexdigest()[:12],
    )


def _free_names(fn: ast.FunctionDef, params: set[str]) -> set[str]:
    """Names the body reads that are neither its parameters, its locals, nor allowed globals."""
    stored = set(params)
    loaded: set[str] = set()
    body = [node for stmt in fn.body for node in ast.walk(stmt)]
    for node in body:
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and node is not fn:
            stored.add(getattr(node, "name", ""))
    allowed = set(GLOBALS) | set(BUILTINS)
    return {n for n in loaded - stored - allowed if n not in allowed}
