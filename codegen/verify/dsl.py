"""A recording stand-in for the CuTe DSL (``cutlass``, ``cutlass.cute``, ...).

A generated kernel file is executed with these modules in place of the real ones. Scalar
arithmetic on problem sizes, tile counts, loop bounds, stages and phases is ordinary Python
arithmetic on ints, so the kernel's control flow runs for real; tensor algebra is inert except
for what the protocol needs (tile counts from ``local_tile``/``size``, byte counts of TMA boxes,
which SMEM/TMEM/workspace buffer and which stage of it a tensor view names); every barrier,
TMA, MMA, commit, fence, flag and named-barrier operation is recorded as an `Op` of the actor
(warp, or lane class of a warp) being traced.

Values the model cannot know are `Opaque`. An opaque value may flow anywhere except into
control flow that guards synchronization: a branch on it inside an ``assert`` passes, an ``if``
on it runs its body (the body's buffer accesses are kept, a synchronization op there stops the
trace as *not modelled*), and a loop over it, a ``while`` on it or using it as a loop bound stops
the trace as *not modelled*. Lane-dependent values (`LaneVec`) split a warp into lane classes
when they decide a branch or an op's target (`LaneSplit`).
"""

from __future__ import annotations

import ast
import dis
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from codegen.verify.model import Bar, LaunchModel, Op, Res, Word


class NotModelled(Exception):
    """The kernel does something the model cannot represent faithfully."""


class LaneSplit(Exception):
    """A lane-dependent value decided control flow or an op's target: re-run per lane class."""

    def __init__(self, groups: list[tuple[int, ...]]):
        super().__init__(f"lane split into {len(groups)} classes")
        self.groups = groups


class HostCheckFailed(Exception):
    """An ``assert`` of the host function failed (the real compile would fail the same way)."""


# ---------------------------------------------------------------------------------------------
# values


class OpaqueAttrs:
    """A model object whose other attributes are untracked: a name it does not define reads as
    OPAQUE (a dunder name stays an AttributeError, so Python's protocols see a plain object)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return OPAQUE


class Opaque(OpaqueAttrs):
    """A value the model does not track (tensor data, unknown layouts, register fragments)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<opaque>"

    def _same(self, *args: Any, **kwargs: Any) -> Any:
        # untracked arithmetic on a tracked data value (alpha * d, tanh(...) * d) keeps the value
        if args and isinstance(args[0], Val):
            return args[0].nonlinear()
        return OPAQUE

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _same
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _same
    __neg__ = __pos__ = __invert__ = __abs__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _same  # type: ignore[assignment]
    __call__ = __getitem__ = _same
    __hash__ = object.__hash__

    def __setitem__(self, key: Any, value: Any) -> None:
        return None

    def __bool__(self) -> bool:
        return current().branch_on_opaque()

    def __iter__(self) -> Iterator[Any]:
        return current().iterate_opaque()

    def __index__(self) -> int:
        raise NotModelled(f"an untracked value is used as an integer (line {current().line()})")

    __int__ = __index__

    def __len__(self) -> int:
        raise NotModelled(f"len() of an untracked value (line {current().line()})")


OPAQUE = Opaque()


def is_concrete(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) or isinstance(x, bool)


def _lanewise(f: Callable[[Any, Any], Any], swap: bool = False) -> Callable[..., Any]:
    def op(self: LaneVec, other: Any) -> Any:
        if isinstance(other, Opaque):
            return OPAQUE
        if isinstance(other, LaneVec):
            out = {
                k: (f(other.vals[k], v) if swap else f(v, other.vals[k]))
                for k, v in self.vals.items()
            }
        else:
            out = {k: (f(other, v) if swap else f(v, other)) for k, v in self.vals.items()}
        return LaneVec(out)

    return op


class LaneVec:
    """A per-lane value (thread index, lane index and what is computed from them)."""

    __slots__ = ("vals",)

    def __init__(self, vals: dict[int, Any]):
        self.vals = vals

    def __repr__(self) -> str:
        return f"LaneVec({self.vals})"

    __add__ = _lanewise(operator.add)
    __radd__ = _lanewise(operator.add, swap=True)
    __sub__ = _lanewise(operator.sub)
    __rsub__ = _lanewise(operator.sub, swap=True)
    __mul__ = _lanewise(operator.mul)
    __rmul__ = _lanewise(operator.mul, swap=True)
    __floordiv__ = _lanewise(operator.floordiv)
    __rfloordiv__ = _lanewise(operator.floordiv, swap=True)
    __mod__ = _lanewise(operator.mod)
    __rmod__ = _lanewise(operator.mod, swap=True)
    __and__ = _lanewise(operator.and_)
    __rand__ = _lanewise(operator.and_, swap=True)
    __or__ = _lanewise(operator.or_)
    __ror__ = _lanewise(operator.or_, swap=True)
    __xor__ = _lanewise(operator.xor)
    __rxor__ = _lanewise(operator.xor, swap=True)
    __lshift__ = _lanewise(operator.lshift)
    __rshift__ = _lanewise(operator.rshift)
    __lt__ = _lanewise(operator.lt)  # type: ignore[assignment]
    __le__ = _lanewise(operator.le)  # type: ignore[assignment]
    __gt__ = _lanewise(operator.gt)  # type: ignore[assignment]
    __ge__ = _lanewise(operator.ge)  # type: ignore[assignment]
    __eq__ = _lanewise(operator.eq)  # type: ignore[assignment]
    __ne__ = _lanewise(operator.ne)  # type: ignore[assignment]
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return bool(current().uniform(self, truth=True))

    def __index__(self) -> int:
        return int(current().uniform(self))

    __int__ = __index__


def uniform_value(x: Any) -> Any:
    """`x` with lane-dependent values resolved (splitting the warp when they differ)."""
    if isinstance(x, LaneVec):
        return current().uniform(x)
    return x


class DslInt(int):
    """``cutlass.Int32(x)`` of a concrete x: an int that stays one through arithmetic and also
    answers ``.ir_value()`` and ``.to(dtype)``."""

    def ir_value(self) -> int:
        return int(self)

    def to(self, dtype: Any) -> Any:
        return dtype(int(self)) if isinstance(dtype, DType) else self


def _keep_int(name: str) -> Callable[..., Any]:
    base = getattr(int, name)

    def op(self: int, *args: Any) -> Any:
        out = base(self, *args)
        return DslInt(out) if type(out) is int else out

    return op


_INT_OPS = (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __floordiv__ __rfloordiv__ __mod__ "
    "__rmod__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ "
    "__rshift__ __rrshift__ __neg__ __pos__ __abs__ __invert__"
)
for _name in _INT_OPS.split():
    setattr(DslInt, _name, _keep_int(_name))


@dataclass(frozen=True)
class DType:
    name: str
    width: int
    is_int: bool = False

    def __call__(self, value: Any = 0) -> Any:
        if isinstance(value, (Opaque, LaneVec, Probe, Val)):
            return value
        if self.name == "Boolean":
            return value if isinstance(value, bool) else bool(value)
        if self.is_int and isinstance(value, int):
            return DslInt(value)
        return OPAQUE

    def __repr__(self) -> str:
        return f"cutlass.{self.name}"


# ---------------------------------------------------------------------------------------------
# probes: values read from memory that a spin loop waits on


class Probe:
    """The result of a non-blocking probe (``try_wait``, a flag load); a ``while`` on it is a
    blocking wait in the model."""

    def __bool__(self) -> bool:
        return current().probe_bool(self)


@dataclass(eq=False)
class MbarProbe(Probe):
    bar: Any
    parity: int


@dataclass(eq=False)
class FlagPred(Probe):
    word: Word
    op: str
    value: int
    sem: str


@dataclass(eq=False)
class FlagValue(OpaqueAttrs):
    word: Word
    sem: str

    def _cmp(self, other: Any, op: str) -> Any:
        if isinstance(other, int):
            return FlagPred(self.word, op, int(other), self.sem)
        return OPAQUE

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return self._cmp(other, "!=")

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return self._cmp(other, "==")

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, ">=")

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, ">")

    __hash__ = object.__hash__


NEGATE = {"!=": "==", "==": "!=", ">=": "<", ">": "<=", "<": ">=", "<=": ">"}


# ---------------------------------------------------------------------------------------------
# data values (the numeric emulation, codegen/verify/numeric.py)


class Val(OpaqueAttrs):
    """A data value at the tile level: a multiset of atoms, each the content of a buffer read
    by this actor (``("ref", n)``, resolved when the reads are replayed in a valid order) or a
    tile of an input tensor read directly (``("c", rows, cols)``, ``("bias", ...)``). A sum of
    values adds the multisets; once a product of two values or an untracked function of one
    (an activation) is taken, coefficients are no longer counted (``nl``): multisets join by
    their largest count, so gelu(d) still holds d once."""

    __slots__ = ("atoms", "nl")

    def __init__(self, atoms: tuple = (), nl: bool = False):
        self.atoms = atoms if len(atoms) < 2 else tuple(sorted(atoms))  # ((atom, count), ...)
        self.nl = nl

    def __repr__(self) -> str:
        return f"Val({self.atoms}{', nl' if self.nl else ''})"

    def nonlinear(self) -> Val:
        return self if self.nl else Val(self.atoms, True)

    def _join(self, other: Val, add: bool) -> Val:
        a, b = dict(self.atoms), dict(other.atoms)
        nl = self.nl or other.nl or not add
        out = dict(a)
        for k, v in b.items():
            out[k] = max(out.get(k, 0), v) if nl else out.get(k, 0) + v
        return Val(tuple(out.items()), nl)

    def _add(self, other: Any) -> Val:
        return self._join(other, True) if isinstance(other, Val) else self

    def _mul(self, other: Any) -> Val:
        return self._join(other, False) if isinstance(other, Val) else self

    def _keep(self, *args: Any, **kwargs: Any) -> Val:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = _add
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _mul
    __neg__ = __pos__ = __abs__ = _keep

    def _cmp(self, other: Any) -> Val:
        return self.nonlinear()

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _cmp  # type: ignore[assignment]
    __hash__ = object.__hash__

    def to(self, dtype: Any) -> Val:
        return self

    def __bool__(self) -> bool:
        return current().branch_on_opaque()


ZERO = Val()


def as_val(x: Any) -> Val | None:
    """The tracked value of `x`: a Val, zero for a number, None for an untracked value."""
    if isinstance(x, Val):
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ZERO
    return None


def _data_key(args: tuple) -> tuple:
    """A data op's arguments compared by content: a Val by its atoms (`==` on a Val is a data
    comparison, a Val itself, never truth-tested), e.g. two chunks' stores of one block, each
    its values times the block's 448 / amax (block_quant), new Vals with the same atoms."""
    return tuple(("val", a.atoms, a.nl) if isinstance(a, Val) else a for a in args)


def known(x: Any) -> Val:
    """as_val, with a value the model lost track of marked unknown (never truth-tested: a Val
    in a condition is data-dependent control flow)."""
    v = as_val(x)
    return _UNKNOWN if v is None else v


def first_val(*args: Any) -> Any:
    """The first tracked value among `args` (a function of it: nonlinear), else OPAQUE."""
    for a in args:
        if isinstance(a, Val):
            return a.nonlinear()
    return OPAQUE


# a gated pair (an epilogue function with Gate and Up arguments): B's rows are gate and up rows
# interleaved in blocks of GATED_BLOCK (the runner's interleave_gate_up), and the kernel stores
# through a view of C (M, N / 2) with N logical columns: logical x of each 2 * GATED_BLOCK at
# (x // (2 * GATED_BLOCK)) * GATED_BLOCK + x % GATED_BLOCK, its up half aliased (stride 0)
GATED_BLOCK = 8


def gate_image(x: int) -> int:
    """The first column of C (M, N / 2) past the gate columns of logical [0, x): the logical
    range [lo, hi) of a gated view stores C's [gate_image(lo), gate_image(hi))."""
    block, within = divmod(x, 2 * GATED_BLOCK)
    return block * GATED_BLOCK + min(within, GATED_BLOCK)


def _image(x: int, modes: tuple) -> int:
    """Where logical coordinate `x` of a nested mode ((extent, stride), ...) lands (the last
    mode unbounded: a tile past the tensor's end lands past it)."""
    off = 0
    for i, (extent, stride) in enumerate(modes):
        if i == len(modes) - 1:
            off += x * stride
        else:
            x, c = divmod(x, extent)
            off += c * stride
    return off


@dataclass(frozen=True)
class GView:
    """Which part of a global input or output tensor (a, b, c, bias) a view covers, at the tile
    level. ``perm`` maps each view dimension to the tensor's own (None: a broadcast dimension,
    stride 0); ``lo``/``hi`` bound each view dimension; ``groups`` are the modes not yet fixed by
    an index, last first to be fixed: ("tile", dim, size) moves the box by a tile, ("sub", ...)
    subdivides it (epilogue chunks, thread vectors: not tracked, the box stays the tile)."""

    name: str
    perm: tuple
    ext: tuple  # the tensor's own extents
    lo: tuple
    hi: tuple
    groups: tuple = ()
    strides: tuple = ()
    # view dimensions with a gated pair's layout, (dim, modes) each (_gated_mode): lo / hi count
    # their logical (gate and up) coordinates; box() maps them to the tensor's (_image)
    gated: tuple = ()
    # where the view starts in the tensor's own dimensions (a view made over a tile's pointer)
    origin: tuple = ()

    def box(self) -> tuple:
        """((lo, hi) per dimension of the tensor itself), clipped to its extents."""
        out: list[Any] = [(0, e) for e in self.ext]
        for d, src in enumerate(self.perm):
            if src is None:
                continue
            lo, hi = self.lo[d], self.hi[d]
            for gd, modes in self.gated:
                if gd == d and hi > lo:
                    lo, hi = _image(lo, modes), _image(hi - 1, modes) + 1
            if self.origin:
                lo, hi = lo + self.origin[src], hi + self.origin[src]
            lo, hi = max(lo, 0), min(hi, self.ext[src])
            out[src] = (lo, max(lo, hi))
        return tuple(out)

    def tiled(self, tiler: tuple, coord: tuple) -> GView | None:
        if len(tiler) != len(self.perm) or len(coord) != len(self.perm):
            return None
        lo, hi, groups = list(self.lo), list(self.hi), list(self.groups)
        for d, (size, c) in enumerate(zip(tiler, coord)):
            size = uniform_value(size)
            if not isinstance(size, int):
                return None
            if c is None:
                hi[d] = lo[d] + size
                groups.append(("tile", d, size))
            else:
                c = uniform_value(c)
                if not isinstance(c, int):
                    return None
                lo[d] += int(c) * size
                hi[d] = lo[d] + size
        return replace(self, lo=tuple(lo), hi=tuple(hi), groups=tuple(groups))

    def half(self, which: int) -> GView:
        """Half `which` of the first view dimension (one CTA of a pair)."""
        lo, hi = list(self.lo), list(self.hi)
        size = (hi[0] - lo[0]) // 2
        lo[0] += which * size
        hi[0] = lo[0] + size
        return replace(self, lo=tuple(lo), hi=tuple(hi))

    def divided(self, n: int) -> GView:
        return replace(self, groups=self.groups + (("sub",),) * n)

    def indexed(self, idx: tuple) -> GView | None:
        """Fix the unbound groups with the trailing entries of `idx` (None keeps a group)."""
        n = min(len(idx), len(self.groups))
        if n == 0:
            return self
        lo, hi = list(self.lo), list(self.hi)
        keep = list(self.groups[: len(self.groups) - n])
        for g, i in zip(self.groups[len(self.groups) - n :], idx[len(idx) - n :]):
            if i is None or _has_none(i):
                keep.append(g)
                continue
            if g[0] != "tile":
                continue
            i = uniform_value(i) if not isinstance(i, tuple) else i
            if not isinstance(i, int):
                return None
            _, d, size = g
            lo[d] += int(i) * size
            hi[d] += int(i) * size
        return replace(self, lo=tuple(lo), hi=tuple(hi), groups=tuple(keep))

    def exact(self) -> bool:
        """False where a gated dimension's range spans two runs of its last mode with a gap
        between them in the tensor (box() would claim the gap)."""
        for d, modes in self.gated:
            run = 1
            for extent, _ in modes[:-1]:
                run *= extent
            compact = (run // (2 * GATED_BLOCK)) * GATED_BLOCK
            lo, hi = self.lo[d], self.hi[d]
            if modes[-1][1] != compact and hi > lo and lo // run != (hi - 1) // run:
                return False
        return True

    def term(self) -> tuple:
        """What a copy of this view holds: an operand tile of a or b (rows, k), else a tile of
        the tensor (c, bias); ("unmapped", name) where box() is not exact."""
        if self.gated and not self.exact():
            return ("unmapped", self.name)
        box = self.box()
        if self.name in ("a", "b"):
            return ("op", self.name, box[0], box[1] if len(box) > 1 else (0, 0))
        return (self.name, *box)


@dataclass(frozen=True)
class GPtr(OpaqueAttrs):
    """The data pointer of a tracked global tensor (``c.iterator``): `make_tensor` over it is a
    new view (a transposed C, a broadcast bias)."""

    g: GView
    dtype: DType | None = None  # the element type: a view keeps it (a TMA box's bytes)


class RegPtr(OpaqueAttrs):
    """The register storage of a register tensor (``r_acc.iterator``): views share it."""

    def __init__(self, cell: dict):
        self.cell = cell


class RegTensor(OpaqueAttrs):
    """A register fragment: its value (a Val, at the tile level: every element is the tile's
    value) in storage that views over the same registers share. A view or element fixed by an
    index (``r_vec[(None, j)]``, ``r[j]``) keeps its own value once written, so a loop adding a
    peer's vector element by element adds it once per element, not once per iteration."""

    def __init__(self, shape: Any, cell: dict | None = None, key: Any = None):
        self.shape = _norm_shape(shape)
        self.cell: dict = cell if cell is not None else {"whole": None, "subs": {}}
        self.key = key

    @property
    def layout(self) -> FakeLayout:
        return FakeLayout(self.shape)

    @property
    def iterator(self) -> RegPtr:
        return RegPtr(self.cell)

    def _whole(self) -> Any:
        subs = self.cell["subs"]
        if subs:
            vals = list(subs.values())
            if all(v is vals[0] or _same_val(v, vals[0]) for v in vals):
                return vals[0]
            # each element group computed on its own (a fix-up adding a peer's vector per
            # group): at the tile level they must all hold the same data, checked on replay
            alts = tuple(sorted({v.atoms for v in vals}))
            return Val(((("same", alts), 1),))
        return self.cell["whole"]

    def load(self) -> Any:
        if self.key is not None and self.key in self.cell["subs"]:
            v = self.cell["subs"][self.key]
        elif self.key is not None:
            v = self.cell["whole"]
        else:
            v = self._whole()
        return v if v is not None else Val(((("term", ("uninit",)), 1),))

    def store(self, value: Any) -> None:
        v = known(value)
        if self.key is None:
            self.cell["whole"] = v
            self.cell["subs"] = {}
        else:
            if not self.cell["subs"] and self.cell["whole"] is None:
                pass
            self.cell["subs"][self.key] = v

    def fill(self, value: Any) -> None:
        self.store(value)

    def _sub(self, idx: Any) -> RegTensor:
        idx = idx if isinstance(idx, tuple) else (idx,)
        key = _reg_key(idx)
        if self.key is not None and key is not None:
            key = (self.key, key)
        return RegTensor(OPAQUE, self.cell, key if key is not None else self.key)

    def __getitem__(self, idx: Any) -> Any:
        sub = self._sub(idx)
        if _has_none(idx if isinstance(idx, tuple) else (idx,)):
            return sub
        return sub.load()

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._sub(idx).store(value)


def _reg_key(idx: tuple) -> Any:
    """The concrete entries of an index (None when it fixes nothing)."""
    out = []
    for i in idx:
        if isinstance(i, tuple):
            k = _reg_key(i)
            if k is not None:
                out.append(k)
        elif is_concrete(i):
            out.append(int(i))
    return tuple(out) if out else None


def _same_val(a: Any, b: Any) -> bool:
    return isinstance(a, Val) and isinstance(b, Val) and a.atoms == b.atoms


# a register value the model lost track of (an untracked function produced it)
_UNKNOWN = Val(((("term", ("unknown",)), 1),))


# ---------------------------------------------------------------------------------------------
# shapes, layouts, tensors, pointers


def shape_size(shape: Any) -> Any:
    if isinstance(shape, Opaque):
        return OPAQUE
    if isinstance(shape, (tuple, list)):
        out = 1
        for s in shape:
            v = shape_size(s)
            if isinstance(v, Opaque):
                return OPAQUE
            out *= v
        return out
    if isinstance(shape, int):
        return int(shape)
    return OPAQUE


def shape_mode(shape: Any, mode: Any) -> Any:
    if mode is None:
        return shape
    for m in mode if isinstance(mode, (list, tuple)) else [mode]:
        if not isinstance(shape, tuple) or not isinstance(m, int) or m >= len(shape):
            return OPAQUE
        shape = shape[m]
    return shape


def shape_of(x: Any) -> Any:
    if isinstance(x, (FakeTensor, FakeLayout, RegTensor)):
        return x.shape
    if isinstance(x, (tuple, int)):
        return x
    return OPAQUE


class FakeLayout(OpaqueAttrs):
    def __init__(self, shape: Any, stride: Any = None):
        self.shape = _norm_shape(shape)
        self.stride = stride

    @property
    def outer(self) -> FakeLayout:
        return self

    @property
    def inner(self) -> Opaque:
        return OPAQUE


def _norm_shape(shape: Any) -> Any:
    if isinstance(shape, bool):
        return OPAQUE
    if isinstance(shape, int):
        return int(shape)
    if isinstance(shape, (tuple, list)):
        parts = tuple(_norm_shape(s) for s in shape)
        return OPAQUE if any(isinstance(p, Opaque) for p in parts) else parts
    return OPAQUE


@dataclass(frozen=True)
class Root:
    """What a tensor or pointer addresses: an SMEM allocation, TMEM, or a tracked global
    buffer (the workspace); ``peer`` is a cluster rank for DSMEM views of another CTA."""

    space: str
    name: str
    peer: int | None = None


class FakeTensor(OpaqueAttrs):
    """A tensor view: its shape where the model knows it, the buffer it addresses (if tracked),
    the slot (stage, accumulator, workspace slot) picked by the first index that fixes the last
    coordinate, and, for TMA partitions of SMEM, the bytes one copy moves."""

    def __init__(
        self,
        shape: Any,
        root: Root | None = None,
        slot: int | None = None,
        dtype: DType | None = None,
        tma_bytes: int | None = None,
        piece: int | None = None,
        part: tuple | None = None,
        g: GView | None = None,
        sub: tuple | None = None,
        wkey: tuple | None = None,
        unmapped: str | None = None,
    ):
        self.shape = _norm_shape(shape)
        self.root = root
        self.slot = slot
        self.dtype = dtype
        self.tma_bytes = tma_bytes
        self.piece = piece
        self.part = part
        self.g = g  # the part of a global tensor (a, b, c, bias) it covers, if it is one
        self.sub = sub  # (index, shape) of the indexing that made this view (MMA K blocks)
        # the concrete entries of the index that picked this view's slot (a workspace slot
        # [tile][split], a stream-K partial [vector][chunk][CTA]): where its data lives
        self.wkey = wkey
        # a global tensor's name, where this view addresses it through a layout the tile-level
        # model does not map (_global_view): its accesses count for the PDL order, their data
        # is not followed
        self.unmapped = unmapped

    def view(
        self,
        shape: Any = OPAQUE,
        slot: int | None = None,
        part: tuple | None = None,
        g: Any = False,
        sub: tuple | None = None,
        normalized: bool = False,
    ) -> FakeTensor:
        out = object.__new__(FakeTensor)
        # a shape derived from this view's own (normalized) shape needs no normalizing again
        out.shape = shape if normalized or shape is OPAQUE else _norm_shape(shape)
        out.root = self.root
        out.slot = self.slot if self.slot is not None else slot
        out.dtype = self.dtype
        out.tma_bytes = self.tma_bytes
        out.piece = self.piece
        out.part = self.part if self.part is not None else part
        out.g = self.g if g is False else g
        out.sub = sub if sub is not None else self.sub
        out.wkey = self.wkey
        out.unmapped = self.unmapped
        return out

    @property
    def stride(self) -> Any:
        return self.g.strides if self.g is not None and self.g.strides else OPAQUE

    @property
    def layout(self) -> FakeLayout:
        return FakeLayout(self.shape)

    @property
    def element_type(self) -> Any:
        return self.dtype or OPAQUE

    @property
    def iterator(self) -> Any:
        if self.root is None:
            return GPtr(self.g, self.dtype) if self.g is not None else OPAQUE
        return MemPtr(self.root, self.slot, 0, (self.dtype.width // 8) if self.dtype else 4)

    def _index_slot(self, idx: tuple) -> int | None:
        last = idx[-1] if idx else None
        return int(last) if is_concrete(last) and not isinstance(last, bool) else None

    def __getitem__(self, idx: Any) -> Any:
        idx = idx if isinstance(idx, tuple) else (idx,)
        if _has_none(idx):
            shape: Any = OPAQUE
            part = None
            own = self.shape
            sized = type(own) is tuple and len(idx) == len(own)
            kept = []
            for pos, i in enumerate(idx):
                if i is None:
                    if sized:
                        kept.append(own[pos])
                elif type(i) is not int and type(i) is not DslInt:
                    if not is_concrete(i):
                        sized = False
                    if part is None and isinstance(i, LaneVec):
                        part = (("index", pos), frozenset(i.vals.values()))
            if sized:
                shape = tuple(kept)
            g = self.g.indexed(idx) if self.g is not None else None
            sub = (idx, self.shape) if self.shape is not OPAQUE else None
            out = self.view(shape, self._index_slot(idx), part, g, sub, normalized=True)
            if self.wkey is None and self.root is not None and self.root.space == "gmem":
                out.wkey = _reg_key(idx)
            return out
        if self.root is not None:
            return current().access("read", self, self._index_slot(idx))
        if self.g is not None:
            return current().global_read(self.g)
        if self.unmapped is not None:
            current().unmapped_access(self.unmapped, "read")
        return OPAQUE

    def __setitem__(self, idx: Any, value: Any) -> None:
        idx = idx if isinstance(idx, tuple) else (idx,)
        if self.root is not None:
            current().access("write", self, self._index_slot(idx), value)
        elif self.g is not None:
            current().global_write(self.g, value)
        elif self.unmapped is not None:
            current().unmapped_access(self.unmapped, "write")

    def load(self) -> Any:
        if self.root is not None:
            return current().access("read", self, None)
        if self.g is not None:
            return current().global_read(self.g)
        if self.unmapped is not None:
            current().unmapped_access(self.unmapped, "read")
        return OPAQUE

    def store(self, value: Any) -> None:
        if self.root is not None:
            current().access("write", self, None, value)
        elif self.g is not None:
            current().global_write(self.g, value)
        elif self.unmapped is not None:
            current().unmapped_access(self.unmapped, "write")

    def fill(self, value: Any) -> None:
        self.store(value)


def _has_none(idx: Any) -> bool:
    if idx is None:
        return True
    if isinstance(idx, tuple):
        return any(_has_none(i) for i in idx)
    return False


@dataclass(frozen=True)
class BarPtr(OpaqueAttrs):
    """An mbarrier address: ``name[index]`` of this CTA (or of cluster rank ``peer``)."""

    name: str
    index: Any = 0
    peer: int | None = None

    def __add__(self, n: Any) -> BarPtr:
        if isinstance(n, Opaque):
            raise NotModelled(f"barrier {self.name} indexed by an untracked value")
        return BarPtr(self.name, self.index + n, self.peer)

    __radd__ = __add__

    @property
    def llvm_ptr(self) -> BarPtr:
        return self


@dataclass(frozen=True)
class MemPtr(OpaqueAttrs):
    """A data address in a tracked buffer: `root`, `slot`, plus a byte offset."""

    root: Root
    slot: int | None
    offset: int
    elem: int  # bytes per element (pointer arithmetic unit)

    def __add__(self, n: Any) -> Any:
        n = uniform_value(n)
        if not isinstance(n, int):
            return OPAQUE
        return MemPtr(self.root, self.slot, self.offset + int(n) * self.elem, self.elem)

    __radd__ = __add__


class TmemPtr(OpaqueAttrs):
    """The TMEM base address (``retrieve_tmem_ptr``)."""


# ---------------------------------------------------------------------------------------------
# copy atoms, MMA atoms


@dataclass(frozen=True)
class TmaOp:
    direction: str  # "load" | "store"
    cta_group: int = 1
    multicast: bool = False


@dataclass(frozen=True)
class TmaAtom:
    op: TmaOp
    box_bytes: Any  # bytes of the SMEM box the atom was made for (all CTAs of a multicast)


def _thread_part(x: Any) -> tuple | None:
    """The partition key of a thread slice made with thread coordinate `x`."""
    if isinstance(x, LaneVec):
        return (("slice", current().line()), frozenset(x.vals.values()))
    return None


@dataclass(frozen=True)
class CopyKind(OpaqueAttrs):
    """A copy atom / tiled copy / thread slice of one: what kind of copy it performs."""

    kind: str  # "tmem_ld" | "generic"
    part: tuple | None = None

    def get_slice(self, *args: Any) -> CopyKind:
        return CopyKind(self.kind, _thread_part(args[0]) if args else None)

    def partition_S(self, t: Any) -> Any:
        if isinstance(t, RegTensor):
            return RegTensor(OPAQUE, t.cell, t.key)
        return t.view(part=self.part) if isinstance(t, FakeTensor) else OPAQUE

    partition_D = partition_S

    def retile(self, t: Any) -> Any:
        if isinstance(t, RegTensor):
            return RegTensor(OPAQUE, t.cell, t.key)
        return t.view() if isinstance(t, FakeTensor) else OPAQUE


class CtaGroup:
    ONE = 1
    TWO = 2


@dataclass(frozen=True)
class MmaOp:
    inst: tuple[int, int, int]
    cta_group: int


@dataclass(frozen=True)
class WarpMmaOp:
    """A warp-level mma.sync op (cute.nvgpu.warp): registers in, registers out."""


class TiledMma(OpaqueAttrs):
    def __init__(
        self, kind: str, op: MmaOp | None = None, part: tuple | None = None, vid: Any = None
    ):
        self.kind = kind  # "umma" | "wgmma" | "mma_sync"
        self.op = op
        self.part = part
        self.vid = vid  # the slice index (cta_group::2: which CTA of the pair)

    @property
    def cta_group(self) -> int:
        return self.op.cta_group if self.op else 1

    def set(self, *args: Any) -> None:
        if len(args) >= 2 and "ACCUMULATE" in repr(args[0]):
            v = uniform_value(args[1])
            current().mma_acc[id(self)] = bool(v) if is_concrete(v) else None

    def get_slice(self, *args: Any) -> TiledMma:
        vid = uniform_value(args[0]) if args and not isinstance(args[0], LaneVec) else None
        return TiledMma(self.kind, self.op, _thread_part(args[0]) if args else None, vid)

    def partition_A(self, t: Any) -> Any:
        if isinstance(t, RegTensor):
            return RegTensor(OPAQUE, t.cell, t.key)
        if not isinstance(t, FakeTensor):
            return OPAQUE
        g = t.g
        if g is not None and self.cta_group == 2 and is_concrete(self.vid):
            # a CTA pair's MMA: this CTA holds its half of the A, B and C rows
            g = g.half(int(self.vid))
        shape: Any = OPAQUE
        s = t.shape
        if (
            self.kind == "wgmma"
            and t.root is not None
            and isinstance(s, tuple)
            and len(s) == 3
            and isinstance(t.dtype, DType)
            and all(isinstance(x, int) for x in s)
        ):
            # (MMA, MMA_M, MMA_K, STAGES) over a (rows, TK, STAGES) SMEM ring: a wgmma takes
            # 32 bytes of K (16 f16 / bf16, 32 e4m3), so MMA_K = TK / that
            inst_k = max(1, 256 // t.dtype.width)
            shape = (1, 1, max(1, s[1] // inst_k), s[2])
        return t.view(shape, part=self.part, g=g)

    partition_B = partition_C = partition_A

    def make_fragment_A(self, t: Any) -> Any:
        return t.view(t.shape) if isinstance(t, FakeTensor) else OPAQUE

    make_fragment_B = make_fragment_A

    def make_fragment_C(self, *args: Any) -> Any:
        return RegTensor(OPAQUE)

    def partition_shape_C(self, *args: Any) -> Any:
        return OPAQUE

    def _operand_shape(self, shape: Any, rows: int) -> Any:
        """((rows per CTA, K per instruction), row blocks, K blocks) of one operand."""
        if self.op is None or not isinstance(shape, tuple) or len(shape) != 2:
            return OPAQUE
        _, _, ik = self.op.inst
        g = self.op.cta_group
        r, k = shape
        return ((rows // g, ik), r // rows, k // ik)

    def partition_shape_A(self, shape: Any) -> Any:
        return self._operand_shape(shape_of(shape), self.op.inst[0] if self.op else 0)

    def partition_shape_B(self, shape: Any) -> Any:
        return self._operand_shape(shape_of(shape), self.op.inst[1] if self.op else 0)


def mma_op(*args: Any, **kwargs: Any) -> MmaOp:
    inst = next(
        (
            a
            for a in args
            if isinstance(a, tuple) and len(a) == 3 and all(isinstance(x, int) for x in a)
        ),
        None,
    )
    group = next(
        (a for a in args if a in (CtaGroup.ONE, CtaGroup.TWO) and not isinstance(a, bool)), 1
    )
    if inst is None:
        raise NotModelled("an MMA op without an instruction shape")
    return MmaOp(inst, group)


# ---------------------------------------------------------------------------------------------
# shared-memory structs


@dataclass(frozen=True)
class MemRangeType:
    elem: Any
    count: int


class _MemRange:
    def __getitem__(self, args: tuple) -> MemRangeType:
        elem, count = args
        return MemRangeType(elem, count)


class _Align:
    def __getitem__(self, args: tuple) -> Any:
        return args[0]


class StructType:
    def __init__(self, cls: type):
        self.name = cls.__name__
        self.fields: dict[str, Any] = dict(getattr(cls, "__annotations__", {}))


class _StructNamespace:
    MemRange = _MemRange()
    Align = _Align()

    def __call__(self, cls: type) -> StructType:
        return StructType(cls)


def _is_barrier_type(t: Any) -> bool:
    elem = t.elem if isinstance(t, MemRangeType) else t
    return isinstance(elem, DType) and elem.name == "Int64"


class FieldRef(OpaqueAttrs):
    def __init__(self, name: str, ftype: Any):
        self.name = name
        self.ftype = ftype

    def _ptr(self) -> Any:
        if _is_barrier_type(self.ftype):
            return BarPtr(self.name, 0)
        elem = self.ftype.elem if isinstance(self.ftype, MemRangeType) else self.ftype
        width = elem.width // 8 if isinstance(elem, DType) else 4
        return MemPtr(Root("smem", self.name), None, 0, width)

    def data_ptr(self) -> Any:
        return self._ptr()

    @property
    def ptr(self) -> Any:
        return self._ptr()

    def get_tensor(self, layout: Any, **kwargs: Any) -> FakeTensor:
        elem = self.ftype.elem if isinstance(self.ftype, MemRangeType) else self.ftype
        return FakeTensor(
            shape_of(layout),
            Root("smem", self.name),
            None,
            elem if isinstance(elem, DType) else None,
        )


class StructInstance:
    def __init__(self, st: StructType):
        self._st = st

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._st.fields:
            return FieldRef(name, self._st.fields[name])
        return OPAQUE


class SmemAllocator(OpaqueAttrs):
    def allocate(self, what: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(what, StructType):
            return StructInstance(what)
        return OPAQUE

    def allocate_tensor(self, dtype: Any, layout: Any, *args: Any, **kwargs: Any) -> FakeTensor:
        name = current().assigned_name() or "smem"
        return FakeTensor(
            shape_of(layout), Root("smem", name), None, dtype if isinstance(dtype, DType) else None
        )


# ---------------------------------------------------------------------------------------------
# kernels and launches


@dataclass
class LaunchRequest:
    kernel: Callable[..., Any]
    name: str
    args: tuple
    kwargs: dict
    grid: tuple[int, int, int]
    block: int
    cluster: tuple[int, int, int]
    pdl: bool = False  # launched with programmatic stream serialization (use_pdl)


class PendingLaunch:
    def __init__(self, fn: KernelFn, args: tuple, kwargs: dict):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def launch(
        self, grid: Any = (1, 1, 1), block: Any = (1, 1, 1), cluster: Any = None, **kw: Any
    ) -> None:
        dims = _dim3(grid)
        pdl = bool(kw.get("use_pdl"))
        if 0 in dims:
            # CUDA rejects a launch with an empty grid (cudaErrorInvalidConfiguration)
            raise HostCheckFailed(f"{self.fn.func.__name__} launched with an empty grid {dims}")
        current().launches.append(
            LaunchRequest(
                self.fn.func,
                self.fn.func.__name__,
                self.args,
                self.kwargs,
                dims,
                _size3(block),
                _dim3(cluster or (1, 1, 1)),
                pdl,
            )
        )


def _scope(kw: dict) -> str:
    """The memory scope of an mbarrier arrive: "cluster" or the PTX default, "cta"."""
    return "cluster" if "CLUSTER" in repr(kw.get("scope", "")).upper() else "cta"


def _dim3(x: Any) -> tuple[int, int, int]:
    vals = [uniform_value(v) for v in (x if isinstance(x, (tuple, list)) else (x,))]
    vals = (vals + [1, 1, 1])[:3]
    if not all(isinstance(v, int) for v in vals):
        raise NotModelled(f"launch dimensions {x!r} are not concrete")
    return int(vals[0]), int(vals[1]), int(vals[2])


def _size3(x: Any) -> int:
    a, b, c = _dim3(x)
    return a * b * c


class KernelFn:
    def __init__(self, func: Callable[..., Any]):
        self.func = func

    def __call__(self, *args: Any, **kwargs: Any) -> PendingLaunch:
        return PendingLaunch(self, args, kwargs)


# ---------------------------------------------------------------------------------------------
# the recorder: context of the actor being traced, and the op list


@dataclass
class RunContext:
    launch: LaunchModel  # geometry (grid, block, cluster) of the launch being traced
    cta: int
    xyz: tuple[int, int, int]
    warp: int
    lanes: tuple[int, ...]  # the lane class being traced
    clc_answers: tuple[bool, ...] = ()


@dataclass
class Recorder:
    """Collects ops of one actor run (or launches, during the host run)."""

    filename: str
    source: str
    ctx: RunContext | None = None
    ops: list[Op] = field(default_factory=list)
    launches: list[LaunchRequest] = field(default_factory=list)
    sym_values: list[int] = field(default_factory=list)
    host: bool = True
    notes: set[str] = field(default_factory=set)
    _tests: list[tuple[int, int, str, int, int]] = field(default_factory=list)
    _elect: int = 0
    _cx: list[int] = field(default_factory=list)
    _opaque_loops: int = 0
    _opaque_regions: list[tuple[Any, int, int]] = field(default_factory=list)
    _last_probe: tuple[int, int] | None = None
    _clc_reads: int = 0
    _refs: int = 0  # data reads of this actor run (Val atoms ("ref", n))
    numeric: bool = True  # record data ops (off where the numeric check does not run)
    mma_acc: dict = field(default_factory=dict)  # id(tiled MMA) -> its ACCUMULATE field
    _lines: list[str] = field(default_factory=list)
    max_ops: int = 200_000

    def __post_init__(self) -> None:
        self._lines = self.source.splitlines()
        tree = ast.parse(self.source)
        for node in ast.walk(tree):
            kind = {ast.If: "if", ast.While: "while", ast.Assert: "assert"}.get(type(node))
            if kind is None:
                continue
            test = node.test  # type: ignore[attr-defined]
            end = getattr(node, "end_lineno", node.lineno) or node.lineno
            self._tests.append(
                (test.lineno, test.end_lineno or test.lineno, kind, node.lineno, end)
            )

    # -- context --------------------------------------------------------------------------------

    def begin(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.ops = []
        self.host = False
        self._elect = 0
        self._cx = []
        self._opaque_loops = 0
        self._opaque_regions = []
        self._last_probe = None
        self._clc_reads = 0
        self._refs = 0
        self.mma_acc = {}

    def active(self) -> tuple[int, ...]:
        assert self.ctx is not None
        if self._elect:
            return (0,) if 0 in self.ctx.lanes else ()
        return self.ctx.lanes

    def issuer(self) -> bool:
        """This lane class holds the lane that issues warp-level single-thread ops."""
        return self.ctx is not None and 0 in self.ctx.lanes

    # -- source positions -------------------------------------------------------------------------

    def frames(self) -> list[Any]:
        out = []
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.filename:
                out.append(f)
            f = f.f_back
        return out

    def line(self) -> int:
        fr = self.frames()
        return fr[0].f_lineno if fr else 0

    def assigned_name(self) -> str | None:
        ln = self.line()
        if 0 < ln <= len(self._lines):
            m = re.match(r"\s*(\w+)\s*=", self._lines[ln - 1])
            if m:
                return m.group(1)
        return None

    def _test_at(self, line: int) -> tuple[str, int, int] | None:
        best = None
        for a, b, kind, start, end in self._tests:
            if a <= line <= b and (best is None or b - a < best[0]):
                best = (b - a, kind, start, end)
        return None if best is None else (best[1], best[2], best[3])

    # -- opaque control flow ----------------------------------------------------------------------

    def branch_on_opaque(self) -> bool:
        fr = self.frames()
        if not fr:
            return True  # inside the DSL stand-in itself
        f = fr[0]
        test = self._test_at(f.f_lineno)
        if test is None:
            raise NotModelled(f"line {f.f_lineno}: a condition on an untracked value")
        kind, start, end = test
        if kind == "assert":
            return True
        if kind == "if":
            self._opaque_regions.append((f.f_code, start, end))
            self.notes.add(f"line {f.f_lineno}: data-dependent branch taken (accesses kept)")
            return True
        raise NotModelled(f"line {f.f_lineno}: a loop condition on an untracked value")

    def iterate_opaque(self) -> Iterator[Any]:
        fr = self.frames()
        if fr:
            f = fr[0]
            instr = _instr_at(f.f_code, f.f_lasti)
            if instr is not None and instr.opname == "UNPACK_SEQUENCE":
                return iter([OPAQUE] * int(instr.arg or 0))
            raise NotModelled(f"line {f.f_lineno}: iterating over an untracked value")
        raise NotModelled("iterating over an untracked value")

    def uniform(self, v: LaneVec, truth: bool = False) -> Any:
        act = self.active() or (self.ctx.lanes[:1] if self.ctx else ())
        vals = {
            lane: (bool(v.vals[lane]) if truth else v.vals[lane]) for lane in act if lane in v.vals
        }
        distinct = set(vals.values())
        if len(distinct) <= 1:
            return next(iter(distinct)) if distinct else 0
        if self._elect:
            raise NotModelled("a lane-dependent value inside elect_one")
        groups: dict[Any, list[int]] = {}
        assert self.ctx is not None
        for lane in self.ctx.lanes:
            key = bool(v.vals[lane]) if truth else v.vals[lane]
            groups.setdefault(key, []).append(lane)
        raise LaneSplit([tuple(g) for g in groups.values()])

    # -- loops ------------------------------------------------------------------------------------

    def range_constexpr(self, *args: Any) -> Iterator[Any]:
        args = tuple(uniform_value(a) for a in args)
        if any(isinstance(a, Opaque) for a in args):
            self._opaque_loops += 1
            try:
                yield OPAQUE
            finally:
                self._opaque_loops -= 1
            return
        for i in range(*(int(a) for a in args)):
            self._cx.append(i)
            try:
                yield i
            finally:
                self._cx.pop()

    def range_dynamic(self, *args: Any) -> Iterator[int]:
        args = tuple(uniform_value(a) for a in args)
        if any(not isinstance(a, int) for a in args):
            raise NotModelled(f"line {self.line()}: a loop bound the model does not know")
        yield from range(*(int(a) for a in args))

    # -- recording --------------------------------------------------------------------------------

    def record(
        self, kind: str, args: tuple, single: bool = False, collective: bool = False
    ) -> None:
        """Append an op of the current actor. `single`: issued once per warp (by the lane
        class holding lane 0); `collective`: a .sync.aligned warp op (a warp-wide sync follows
        it, so a split warp's other lane classes are ordered after it)."""
        if self.host or self.ctx is None:
            raise NotModelled(f"{kind} outside a kernel")
        act = self.active()
        if single or collective:
            mine = self.issuer() if not self._elect else bool(act)
            threads = 1
        else:
            mine = bool(act)
            threads = 1 if self._elect else len(act)
        fr = self.frames()
        line = fr[0].f_lineno if fr else 0
        if mine and kind not in ("read", "write", "data", "gaccess"):
            if self._opaque_loops:
                raise NotModelled(f"line {line}: {kind} inside a loop of unknown trip count")
            for f in fr:
                for code, a, b in self._opaque_regions:
                    if f.f_code is code and a <= f.f_lineno <= b:
                        raise NotModelled(
                            f"line {f.f_lineno}: {kind} under a data-dependent branch (line {a})"
                        )
        if mine:
            site = (tuple(f.f_lineno for f in reversed(fr)), tuple(self._cx))
            if kind in ("read", "write", "gaccess") and self.ops:
                # the same access again (a loop over a fragment's elements) is one op; data
                # ops and plain global accesses in between do not count
                j = len(self.ops) - 1
                while j > 0 and self.ops[j].kind in ("data", "gaccess"):
                    j -= 1
                last = self.ops[j]
                if last.kind == kind and last.args == args:
                    return
            self.ops.append(Op(kind, args, threads, line, site))
            if len(self.ops) > self.max_ops:
                raise NotModelled("the trace does not end (op budget exceeded)")
        if collective and self.ctx is not None:
            self.ops.append(
                Op("warp_sync", (self.ctx.cta, self.ctx.warp), len(self.ctx.lanes), line, ())
            )

    def warp_sync(self) -> None:
        assert self.ctx is not None
        fr = self.frames()
        line = fr[0].f_lineno if fr else 0
        self.ops.append(
            Op("warp_sync", (self.ctx.cta, self.ctx.warp), len(self.ctx.lanes), line, ())
        )

    # -- resolution -------------------------------------------------------------------------------

    def cta_of(self, peer: Any) -> int:
        assert self.ctx is not None
        peer = uniform_value(peer)
        if peer is None:
            return self.ctx.cta
        if not isinstance(peer, int):
            raise NotModelled("a peer CTA rank the model does not know")
        return self.ctx.launch.cta_of_rank(self.ctx.cta, int(peer))

    def bar(self, ptr: Any, peer: Any = None) -> Bar:
        if not isinstance(ptr, BarPtr):
            raise NotModelled(f"line {self.line()}: a barrier operation on {ptr!r}")
        index = uniform_value(ptr.index)
        if not isinstance(index, int):
            raise NotModelled(f"barrier {ptr.name} index is not concrete")
        cta = self.cta_of(peer if peer is not None else ptr.peer)
        return Bar(cta, ptr.name, int(index))

    def res(
        self, t: FakeTensor | MemPtr, slot: int | None = None, peer_rank: int | None = None
    ) -> Res:
        root = t.root
        s = t.slot if t.slot is not None else slot
        piece = t.piece if isinstance(t, FakeTensor) else None
        part = t.part if isinstance(t, FakeTensor) else None
        if root.space == "gmem":
            return Res(-1, "gmem", root.name, s, piece, part)
        if peer_rank is not None:
            cta = peer_rank
        else:
            cta = self.cta_of(root.peer)
        return Res(cta, root.space, root.name, s, piece, part)

    def access(self, kind: str, t: FakeTensor, slot: int | None, value: Any = None) -> Any:
        """A generic load or store of a tracked buffer; a load returns its data value, a store
        records what it writes (the numeric emulation)."""
        if self.host or t.root is None:
            return OPAQUE
        res = self.res(t, slot)
        self.record(kind, (res,))
        wkey = t.wkey if res.space == "gmem" else None
        if kind == "read":
            return self.data_read(res, wkey=wkey)
        self.data("store", res, known(value), wkey)
        return None

    # -- data (the numeric emulation) ------------------------------------------------------------

    def data(self, *args: Any, single: bool = False) -> None:
        """A data op: what a copy, MMA or store moves, replayed by codegen.verify.numeric in the
        checker's canonical order; not part of the protocol."""
        if self.host or self.ctx is None or not self.numeric:
            return
        act = self.active()
        mine = (self.issuer() if not self._elect else bool(act)) if single else bool(act)
        if not mine:
            return
        ops = self.ops
        if (
            args[0] in ("store", "gstore")
            and ops
            and ops[-1].kind == "data"
            and _data_key(ops[-1].args) == _data_key(args)
        ):
            return  # the same store again (a loop over a fragment's elements)
        # the source line only (no call-stack site: data ops are not protocol sites)
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename != self.filename:
            f = f.f_back
        ops.append(Op("data", args, 1, f.f_lineno if f is not None else 0, ()))

    def new_ref(self) -> int:
        self._refs += 1
        return self._refs

    def data_read(self, res: Res, single: bool = False, wkey: tuple | None = None) -> Val:
        n = self.new_ref()
        self.data("load", n, res, wkey, single=single)
        return Val(((("ref", n), 1),))

    def global_read(self, g: GView) -> Any:
        """A thread's plain load of a global tensor (C for beta, a bias vector)."""
        if self.host or self.ctx is None:
            return OPAQUE
        if self.ctx.launch.pdl:  # only the PDL order is checked on it
            self.record("gaccess", (g.name, "read"))
        return Val(((("term", g.term()), 1),))

    def global_write(self, g: GView, value: Any) -> None:
        """A thread's plain store to a global tensor (D)."""
        if self.host or self.ctx is None:
            return
        if self.ctx.launch.pdl:
            self.record("gaccess", (g.name, "write"))
        self.data("gstore", g.term(), known(value))

    def unmapped_access(self, name: str, how: str) -> None:
        """A thread's plain load or store of global tensor `name` through a view the tile-level
        model does not map (a layout _global_view does not know): recorded for the PDL order, its
        data not followed (a store says so to the numeric check: Replay.unknown)."""
        if self.host or self.ctx is None:
            return
        if self.ctx.launch.pdl:
            self.record("gaccess", (name, how))
        if how == "write":
            self.data("unmapped", name)

    def mask_ctas(self, mask: Any) -> list[int]:
        assert self.ctx is not None
        mask = uniform_value(mask)
        if mask is None:
            return [self.ctx.cta]
        if not isinstance(mask, int):
            raise NotModelled("a multicast mask the model does not know")
        return [self.cta_of(r) for r in range(16) if (int(mask) >> r) & 1]

    # -- probes -------------------------------------------------------------------------------

    def probe_bool(self, p: Probe) -> bool:
        fr = self.frames()
        line = fr[0].f_lineno if fr else 0
        test = self._test_at(line)
        if test is None or test[0] != "while":
            raise NotModelled(
                f"line {line}: a branch on a barrier or flag probe (only spin loops are modelled)"
            )
        if self._last_probe is not None and self._last_probe == (line, len(self.ops) - 1):
            prev = self.ops[-1]
            if prev.kind != "await":
                raise NotModelled(
                    f"line {line}: a spin loop that waits for a barrier to be incomplete"
                )
            word, op, value, sem = prev.args
            self.ops[-1] = prev._replace(args=(word, NEGATE[op], value, sem))
            self._last_probe = None
            return False
        if isinstance(p, MbarProbe):
            self.record("wait", (self.bar(p.bar), int(uniform_value(p.parity)) & 1))
        elif isinstance(p, FlagPred):
            self.record("await", (p.word, p.op, p.value, p.sem))
        self._last_probe = (line, len(self.ops) - 1)
        return True

    def clc_answer(self) -> bool:
        assert self.ctx is not None
        i = self._clc_reads
        self._clc_reads += 1
        return i < len(self.ctx.clc_answers) and self.ctx.clc_answers[i]


_CURRENT: list[Recorder] = []


def current() -> Recorder:
    if not _CURRENT:
        raise RuntimeError("no verify recorder is active")
    return _CURRENT[-1]


class active_recorder:
    """Context manager making `rec` the recorder the stand-in modules report to."""

    def __init__(self, rec: Recorder):
        self.rec = rec

    def __enter__(self) -> Recorder:
        _CURRENT.append(self.rec)
        return self.rec

    def __exit__(self, *exc: object) -> None:
        _CURRENT.pop()


_INSTR_CACHE: dict[Any, dict[int, dis.Instruction]] = {}


def _instr_at(code: Any, offset: int) -> dis.Instruction | None:
    table = _INSTR_CACHE.get(code)
    if table is None:
        table = {i.offset: i for i in dis.get_instructions(code)}
        _INSTR_CACHE[code] = table
    return table.get(offset)


# ---------------------------------------------------------------------------------------------
# the stand-in modules


SYNC_WORDS = re.compile(
    r"(^|_)(mbarrier|barrier|clc|commit|arrive|wait|atomic|atom|red|cluster|elect|tma|bulk|tmem"
    r"|tcgen05|wgmma|sync|cancel|semaphore|lock|flag)(_|$)"
)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class Unknown:
    """A DSL name the stand-in does not implement. Calling it is inert unless its name says it
    synchronizes (then the trace stops: not modelled) or fences (recorded as an unmodelled
    fence, listed in the report)."""

    def __init__(self, path: str):
        self.path = path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Unknown(f"{self.path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaf = _snake(self.path.rsplit(".", 1)[-1])
        rec = current()
        if "fence" in leaf:
            if not rec.host:
                rec.record("fence", (self.path,))
            return OPAQUE
        if SYNC_WORDS.search(leaf) and not rec.host:
            raise NotModelled(f"line {rec.line()}: {self.path} is not modelled")
        return OPAQUE

    def __repr__(self) -> str:
        return f"<{self.path}>"

    def __getitem__(self, key: Any) -> Any:
        return OPAQUE


class FakeModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Unknown(f"{self.__name__}.{name}")


def _module(name: str, **attrs: Any) -> FakeModule:
    m = FakeModule(name)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


class _ElectOne:
    def __enter__(self) -> None:
        rec = current()
        if not rec.host:
            rec.warp_sync()
        rec._elect += 1

    def __exit__(self, *exc: object) -> None:
        current()._elect -= 1


def _ceil_div(a: Any, b: Any) -> Any:
    a, b = uniform_value(a), uniform_value(b)
    if isinstance(a, tuple):
        bt = b if isinstance(b, tuple) else (b,)
        return tuple(_ceil_div(x, bt[i]) if i < len(bt) else x for i, x in enumerate(a))
    if isinstance(a, int) and isinstance(b, int):
        return -(-int(a) // int(b))
    return OPAQUE


def _round_up(a: Any, b: Any) -> Any:
    if isinstance(a, tuple):
        bt = b if isinstance(b, tuple) else (b,)
        return tuple(_round_up(x, bt[i]) if i < len(bt) else x for i, x in enumerate(a))
    c = _ceil_div(a, b)
    return c * b if isinstance(c, int) else OPAQUE


def _size(x: Any, mode: Any = None) -> Any:
    return shape_size(shape_mode(shape_of(x), mode))


def _local_tile(t: Any, tiler: Any, coord: Any, proj: Any = None) -> Any:
    if not isinstance(t, FakeTensor):
        return OPAQUE
    tiler = tuple(tiler)
    coord = tuple(coord) if isinstance(coord, tuple) else (coord,)
    if proj is not None:
        keep = [i for i, p in enumerate(proj) if p is not None]
        tiler = tuple(tiler[i] for i in keep)
        coord = tuple(coord[i] for i in keep)
    shape: Any = OPAQUE
    if isinstance(t.shape, tuple) and len(t.shape) == len(tiler):
        rest = []
        for extent, tile, c in zip(t.shape, tiler, coord):
            if c is None:
                rest.append(_ceil_div(extent, tile))
        shape = (*tiler, *rest)
    g = t.g.tiled(tiler, coord) if t.g is not None else None
    return FakeTensor(shape, t.root, t.slot, t.dtype, g=g)


def _group_modes(t: Any, a: int, b: int) -> Any:
    if isinstance(t, FakeTensor):
        shape: Any = OPAQUE
        if isinstance(t.shape, tuple):
            shape = (*t.shape[:a], tuple(t.shape[a:b]), *t.shape[b:])
        return t.view(shape)
    if isinstance(t, FakeLayout):
        return t
    if isinstance(t, RegTensor):
        return RegTensor(OPAQUE, t.cell, t.key)
    return OPAQUE


def _view(t: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(t, RegTensor):
        return RegTensor(OPAQUE, t.cell, t.key)
    if not isinstance(t, FakeTensor):
        return OPAQUE
    return t.view(g=t.g.divided(1) if t.g is not None else None)


def _flat_divide(t: Any, tiler: Any = None, *args: Any, **kwargs: Any) -> Any:
    """Like _view, but each mode of the tiler leaves its own rest mode (indexed separately)."""
    if isinstance(t, RegTensor):
        return RegTensor(OPAQUE, t.cell, t.key)
    if not isinstance(t, FakeTensor):
        return OPAQUE
    n = len(tiler) if isinstance(tiler, tuple) else 1
    return t.view(g=t.g.divided(n) if t.g is not None else None)


def _make_layout(shape: Any, stride: Any = None) -> FakeLayout:
    return FakeLayout(shape, stride)


def _append(shape: Any, x: Any) -> Any:
    s = shape_of(shape)
    if isinstance(s, tuple):
        return (*s, x)
    if isinstance(s, int):
        return (s, x)
    return OPAQUE


def _select(x: Any, mode: Any) -> Any:
    s = shape_of(x)
    if isinstance(s, tuple) and all(isinstance(m, int) and m < len(s) for m in mode):
        return FakeLayout(tuple(s[m] for m in mode))
    return FakeLayout(OPAQUE)


def _dice(tiler: Any, proj: Any) -> Any:
    return tuple(t for t, p in zip(tiler, proj) if p is not None)


def _slice(x: Any, coord: Any) -> Any:
    s = shape_of(x)
    if isinstance(s, tuple) and len(s) == len(coord):
        return FakeLayout(tuple(m for m, c in zip(s, coord) if c is None))
    return FakeLayout(OPAQUE)


def _size_in_bytes(dtype: Any, layout: Any) -> Any:
    n = _size(layout)
    if isinstance(n, int) and isinstance(dtype, DType):
        return n * dtype.width // 8
    return OPAQUE


def _make_tensor(ptr: Any, layout: Any, *args: Any, **kwargs: Any) -> Any:
    shape = shape_of(layout)
    if isinstance(ptr, RegPtr):
        return RegTensor(shape, ptr.cell)
    if isinstance(ptr, GPtr):
        g = _global_view(ptr.g, shape, layout)
        # a layout the tile-level model cannot map: still the tensor, for the PDL order
        return FakeTensor(
            shape, None, dtype=ptr.dtype, g=g, unmapped=ptr.g.name if g is None else None
        )
    if isinstance(ptr, MemPtr):
        return FakeTensor(shape, ptr.root, ptr.slot, None)
    if isinstance(ptr, TmemPtr):
        return FakeTensor(shape, Root("tmem", "tmem"), None, None)
    if ptr is OPAQUE or isinstance(ptr, Opaque):
        return FakeTensor(shape, None)
    return OPAQUE


def _gated_mode(shape: Any, stride: Any) -> tuple[int, Any, tuple] | None:
    """(logical extent, base stride, ((extent, stride in base strides), ...)) of a gated pair's
    mode of a view of C (M, N / 2): shape (8, 2, n2, ...) with stride (s, 0, s2, ...), each
    s2, ... a positive multiple of s (compact: 8 s, 8 s n2, ...: gate_image), else None."""
    if not (isinstance(shape, tuple) and isinstance(stride, tuple)):
        return None
    if len(shape) < 2 or len(shape) != len(stride) or shape[:2] != (GATED_BLOCK, 2):
        return None
    if not all(isinstance(x, int) for x in shape):
        return None
    strides = [uniform_value(x) for x in stride]
    base = strides[0]
    if not all(isinstance(x, int) for x in strides) or base <= 0 or strides[1] != 0:
        return None
    if any(x <= 0 or x % base for x in strides[2:]):
        return None
    # every mode but the last compact (8 s, 8 s n2, ...), the last one's steps no closer: each
    # run of the last mode's coordinate is one range of C, runs never overlap
    step = GATED_BLOCK * base
    for i, (extent, x) in enumerate(zip(shape[2:], strides[2:])):
        if x != step and (i < len(shape) - 3 or x < step):
            return None
        step *= extent
    n = 1
    for extent in shape:
        n *= extent
    return n, base, tuple((e, x // base) for e, x in zip(shape, strides))


def _global_view(g: GView, shape: Any, layout: Any) -> GView | None:
    """A new view over tensor `g.name` with `layout`: each dimension maps to the tensor's
    dimension of the same stride (stride 0: broadcast), e.g. C^T or a bias as an (M, N) matrix;
    a gated pair's nested mode (_gated_mode) maps to C's columns through _image. A view over
    a tile's pointer starts at the tile."""
    stride = getattr(layout, "stride", None) if isinstance(layout, FakeLayout) else None
    if (
        isinstance(shape, tuple)
        and isinstance(stride, tuple)
        and len(stride) == len(shape)
        and any(isinstance(s, tuple) for s in shape)
    ):
        return _gated_view(g, shape, stride)
    if not isinstance(shape, tuple) or not all(isinstance(s, int) for s in shape):
        return None
    if not isinstance(stride, tuple) or len(stride) != len(shape):
        if tuple(shape) == tuple(g.ext):
            return GView(
                g.name,
                tuple(range(len(shape))),
                g.ext,
                (0,) * len(shape),
                tuple(shape),
                (),
                g.strides,
            )
        return None
    perm: list[Any] = []
    for s in stride:
        s = uniform_value(s)
        if s == 0:
            perm.append(None)
        elif s in g.strides:
            perm.append(g.strides.index(s))
        else:
            return None
    return GView(g.name, tuple(perm), g.ext, (0,) * len(shape), tuple(shape), (), tuple(stride))


def _gated_view(g: GView, shape: tuple, stride: tuple) -> GView | None:
    """A view with nested modes: each a plain mode or a gated pair's (_gated_mode), over the
    pointer of `g` (the whole tensor or a tile of it: the view starts where `g` does)."""
    perm: list[Any] = []
    extents: list[int] = []
    gated: list[tuple] = []
    flat: list[Any] = []
    for d, (extent, s) in enumerate(zip(shape, stride)):
        if isinstance(extent, tuple):
            mode = _gated_mode(extent, s)
            if mode is None:
                return None
            extent, s, modes = mode
            gated.append((d, modes))
        s = uniform_value(s)
        if not isinstance(extent, int) or not isinstance(s, int) or s == 0:
            return None
        if s not in g.strides or g.perm[g.strides.index(s)] is None:
            return None
        perm.append(g.perm[g.strides.index(s)])  # g's strides are its own dimensions
        extents.append(extent)
        flat.append(s)
    if len(set(perm)) != len(perm):
        return None
    origin = tuple(lo for lo, _ in g.box())
    return GView(
        g.name,
        tuple(perm),
        g.ext,
        (0,) * len(extents),
        tuple(extents),
        (),
        tuple(flat),
        tuple(gated),
        origin,
    )


def _recast_ptr(ptr: Any, swizzle_: Any = None, dtype: Any = None) -> Any:
    if isinstance(ptr, MemPtr) and isinstance(dtype, DType):
        return MemPtr(ptr.root, ptr.slot, ptr.offset, dtype.width // 8)
    return OPAQUE


def _copy(atom: Any, src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
    rec = current()
    if rec.host:
        return
    if isinstance(atom, TmaAtom):
        if atom.op.direction == "load":
            _tma_load(rec, atom, dst, kwargs.get("tma_bar_ptr"), kwargs.get("mcast_mask"), src)
        else:
            if not (isinstance(src, FakeTensor) and src.root is not None):
                raise NotModelled(f"line {rec.line()}: a TMA store from an untracked buffer")
            res = rec.res(src)
            rec.record("tma_store", (res,), single=True)
            g = dst.g if isinstance(dst, FakeTensor) else None
            rec.data("tma_store", g.term() if g is not None else ("unknown",), res, single=True)
        return
    kind = atom.kind if isinstance(atom, CopyKind) else "generic"
    if kind == "tmem_ld":
        if isinstance(src, FakeTensor) and src.root is not None:
            res = rec.res(src)
            rec.record("tmem_ld", (res,), collective=True)
            value = rec.data_read(res)
            if isinstance(dst, RegTensor):
                dst.store(value)
        return
    # a generic copy: registers, SMEM, TMEM, the workspace, a global tensor
    value: Any = None
    if isinstance(src, RegTensor):
        value = src.load()
    elif isinstance(src, FakeTensor) and src.root is not None:
        value = rec.access("read", src, None)
    elif isinstance(src, FakeTensor) and src.g is not None:
        value = rec.global_read(src.g)
    elif isinstance(src, FakeTensor) and src.unmapped is not None:
        rec.unmapped_access(src.unmapped, "read")
    if isinstance(dst, FakeTensor) and dst.root is not None:
        rec.access("write", dst, None, value)
    elif isinstance(dst, FakeTensor) and dst.g is not None:
        rec.global_write(dst.g, value)
    elif isinstance(dst, FakeTensor) and dst.unmapped is not None:
        rec.unmapped_access(dst.unmapped, "write")
    elif isinstance(dst, RegTensor):
        dst.store(value)


def _tma_load(
    rec: Recorder, atom: TmaAtom, dst: Any, bar_ptr: Any, mask: Any, src: Any = None
) -> None:
    if not (
        isinstance(dst, FakeTensor) and dst.root is not None and isinstance(dst.tma_bytes, int)
    ):
        raise NotModelled(f"line {rec.line()}: a TMA load into a buffer the model does not track")
    if bar_ptr is None:
        raise NotModelled(f"line {rec.line()}: a TMA load without a barrier")
    assert rec.ctx is not None
    launch = rec.ctx.launch
    dests = rec.mask_ctas(mask) if atom.op.multicast or mask is not None else [rec.ctx.cta]
    bar = rec.bar(bar_ptr)
    res, bars = [], []
    for d in dests:
        res.append(rec.res(dst, peer_rank=d))
        target = d
        if atom.op.cta_group == 2:
            target = launch.cta_of_rank(d, launch.rank_of(d) & ~1)
        bars.append(Bar(target, bar.name, bar.index))
    rec.record("tma_load", (tuple(res), tuple(bars), dst.tma_bytes), single=True)
    # what lands: the source tile of a global tensor; one of `pieces` slices of it when the
    # CTAs of a multicast each load a slice into every destination
    g = src.g if isinstance(src, FakeTensor) else None
    box = atom.box_bytes
    pieces = box // dst.tma_bytes if isinstance(box, int) and dst.tma_bytes else 1
    term = g.term() if g is not None else ("unknown",)
    rec.data("fill", tuple(res), term, dst.piece, max(1, pieces), single=True)


def _gemm(tiled_mma: Any, d: Any, a: Any, b: Any, c: Any = None, **kwargs: Any) -> None:
    rec = current()
    if rec.host or not isinstance(tiled_mma, TiledMma):
        return
    assert rec.ctx is not None
    if tiled_mma.kind == "mma_sync":
        # registers only: nothing of the protocol; recorded for the site count (mma.sync)
        rec.record("mma_sync", (), collective=True)
        return
    launch = rec.ctx.launch
    ctas = [rec.ctx.cta]
    if tiled_mma.kind == "umma" and tiled_mma.cta_group == 2:
        ctas = [launch.cta_of_rank(rec.ctx.cta, launch.rank_of(rec.ctx.cta) ^ 1), rec.ctx.cta]
        ctas.sort()
    operands = []
    for t in (a, b):
        if isinstance(t, FakeTensor) and t.root is not None:
            operands.append((tuple(rec.res(t, peer_rank=cta) for cta in ctas), _k_block(t)))
        else:
            operands.append(((), (0, 1)))
    (ra, ka), (rb, kb) = operands
    reads = ra + rb
    acc = rec.mma_acc.get(id(tiled_mma), False)
    n = rec.new_ref()
    if tiled_mma.kind == "umma":
        writes = tuple(
            rec.res(d, peer_rank=cta)
            for cta in ctas
            if isinstance(d, FakeTensor) and d.root is not None
        )
        rec.record("umma", (reads, writes), single=True)
        rec.data("mma", ra, rb, ka, kb, writes, acc, n, None, single=True)
    else:
        rec.record("wgmma", (reads,), collective=True)
        prev = c.load() if isinstance(c, RegTensor) else None
        rec.data("mma", ra, rb, ka, kb, (), acc, n, prev)
        if isinstance(d, RegTensor):
            d.store(Val(((("ref", n), 1),)))


def _make_tiled_mma(op: Any, *args: Any, **kwargs: Any) -> TiledMma:
    if isinstance(op, WarpMmaOp):
        return TiledMma("mma_sync")
    return TiledMma("umma", op if isinstance(op, MmaOp) else None)


_K_BLOCKS: dict = {}


def _k_block(t: FakeTensor) -> tuple[int, int]:
    """(which, of how many) K blocks of its stage an MMA operand view is: the index of the
    first mode of extent > 1 fixed before the stage index (``tCrA[(None, None, kb, stage)]``)."""
    if t.sub is None:
        return (0, 1)
    idx, shape = t.sub
    for i in idx:
        if i is not None and type(i) is not int and type(i) is not DslInt:
            return _k_block_of(idx, shape)  # a lane vector in the key would compare lane-wise
    out = _K_BLOCKS.get(t.sub)
    if out is None:
        out = _K_BLOCKS[t.sub] = _k_block_of(idx, shape)
    return out


def _k_block_of(idx: tuple, shape: Any) -> tuple[int, int]:
    if not isinstance(shape, tuple) or len(shape) != len(idx):
        return (0, 1)
    for pos in range(len(idx) - 1):
        i, extent = idx[pos], shape[pos]
        if isinstance(extent, tuple):
            extent = shape_size(extent)
        if (
            isinstance(i, int)
            and not isinstance(i, bool)
            and isinstance(extent, int)
            and extent > 1
        ):
            return (int(i), int(extent))
    return (0, 1)


def _autovec_copy(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
    _copy(None, src, dst)


def _tma_partition(
    atom: Any, cta_coord: Any, cta_layout: Any, smem: Any, gmem: Any, **kw: Any
) -> Any:
    n = _size(cta_layout)
    box = atom.box_bytes if isinstance(atom, TmaAtom) else OPAQUE
    s_part: Any = OPAQUE
    if isinstance(smem, FakeTensor):
        s_part = smem.view()
        if isinstance(box, int) and isinstance(n, int) and n > 0:
            s_part.tma_bytes = box // n
        coord = uniform_value(cta_coord)
        if isinstance(n, int) and n > 1 and isinstance(coord, int):
            s_part.piece = int(coord)
    g_part = gmem.view() if isinstance(gmem, FakeTensor) else OPAQUE
    return s_part, g_part


def _tma_atom(op: Any, gmem: Any, smem_layout: Any, *args: Any, **kwargs: Any) -> tuple:
    if not isinstance(op, TmaOp):
        raise NotModelled("a TMA atom of an unknown op")
    dtype = gmem.dtype if isinstance(gmem, FakeTensor) else None
    box = _size_in_bytes(dtype, smem_layout) if dtype else OPAQUE
    view = gmem.view(gmem.shape) if isinstance(gmem, FakeTensor) else OPAQUE
    return TmaAtom(op, box), view


def _copy_atom(op: Any, *args: Any, **kwargs: Any) -> CopyKind:
    return CopyKind("tmem_ld" if isinstance(op, _TmemLoadOp) else "generic")


class _TmemLoadOp:
    def __init__(self, *args: Any, **kwargs: Any):
        pass


def _tmem_copy(atom: Any, *args: Any, **kwargs: Any) -> CopyKind:
    return atom if isinstance(atom, CopyKind) else CopyKind("generic")


def _tiled_copy(atom: Any, *args: Any, **kwargs: Any) -> CopyKind:
    return atom if isinstance(atom, CopyKind) else CopyKind("generic")


def _min(*args: Any) -> Any:
    args = tuple(uniform_value(a) for a in args)
    if all(isinstance(a, int) for a in args):
        return min(args)
    return OPAQUE


def _max(*args: Any) -> Any:
    args = tuple(uniform_value(a) for a in args)
    if all(isinstance(a, int) for a in args):
        return max(args)
    return OPAQUE


def _sym_int32(*args: Any, **kwargs: Any) -> int:
    rec = current()
    if not rec.sym_values:
        raise NotModelled("more symbolic sizes than M, N, K")
    return rec.sym_values.pop(0)


def _fake_tensor(dtype: Any, shape: Any, *args: Any, **kwargs: Any) -> FakeTensor:
    return FakeTensor(tuple(shape), None, None, dtype if isinstance(dtype, DType) else None)


def _arch_module() -> FakeModule:
    def ctx() -> RunContext:
        rec = current()
        if rec.ctx is None or rec.host:
            raise NotModelled("a device query in host code")
        return rec.ctx

    def thread_idx() -> tuple:
        c = ctx()
        return LaneVec({lane: 32 * c.warp + lane for lane in c.lanes}), 0, 0

    def lane_idx() -> LaneVec:
        c = ctx()
        return LaneVec({lane: lane for lane in c.lanes})

    def block_idx() -> tuple:
        return ctx().xyz

    def grid_dim() -> tuple:
        return ctx().launch.grid

    def block_dim() -> tuple:
        return (ctx().launch.block, 1, 1)

    def block_idx_in_cluster() -> int:
        c = ctx()
        return c.launch.rank_of(c.cta)

    def cluster_dim() -> tuple:
        return ctx().launch.cluster

    def mbarrier_init(ptr: Any, cnt: Any, **kw: Any) -> None:
        rec = current()
        rec.record("init", (rec.bar(ptr), int(uniform_value(cnt))))

    def mbarrier_arrive(
        ptr: Any, peer_cta_rank_in_cluster: Any = None, arrive_count: Any = 1, **kw: Any
    ) -> None:
        rec = current()
        bar = rec.bar(ptr, peer_cta_rank_in_cluster)
        rec.record("arrive", (bar, int(uniform_value(arrive_count)), 0, _scope(kw)))

    def mbarrier_arrive_and_expect_tx(
        ptr: Any, nbytes: Any, peer_cta_rank_in_cluster: Any = None, *a: Any, **kw: Any
    ) -> None:
        rec = current()
        nbytes = uniform_value(nbytes)
        if not isinstance(nbytes, int):
            raise NotModelled(f"line {rec.line()}: expect_tx of an unknown byte count")
        rec.record("arrive", (rec.bar(ptr, peer_cta_rank_in_cluster), 1, int(nbytes), _scope(kw)))

    def mbarrier_expect_tx(
        ptr: Any, nbytes: Any, peer_cta_rank_in_cluster: Any = None, **kw: Any
    ) -> None:
        rec = current()
        nbytes = uniform_value(nbytes)
        if not isinstance(nbytes, int):
            raise NotModelled(f"line {rec.line()}: expect_tx of an unknown byte count")
        rec.record("expect_tx", (rec.bar(ptr, peer_cta_rank_in_cluster), int(nbytes)))

    def mbarrier_wait(ptr: Any, phase: Any, **kw: Any) -> None:
        rec = current()
        p = uniform_value(phase)
        if not isinstance(p, int):
            raise NotModelled(f"line {rec.line()}: a wait parity the model does not know")
        rec.record("wait", (rec.bar(ptr), int(p) & 1))

    def mbarrier_try_wait(ptr: Any, phase: Any, **kw: Any) -> MbarProbe:
        return MbarProbe(ptr, phase)

    def elect_one(**kw: Any) -> _ElectOne:
        return _ElectOne()

    def sync_threads() -> None:
        rec = current()
        c = ctx()
        rec.record("nbar", (c.cta, 0, c.launch.block, True))

    def barrier(barrier_id: Any = None, number_of_threads: Any = None, **kw: Any) -> None:
        rec = current()
        c = ctx()
        bid = uniform_value(barrier_id) if barrier_id is not None else 0
        n = uniform_value(number_of_threads) if number_of_threads is not None else c.launch.block
        rec.record("nbar", (c.cta, int(bid), int(n), True))

    def barrier_arrive(barrier_id: Any = None, number_of_threads: Any = None, **kw: Any) -> None:
        rec = current()
        c = ctx()
        bid = uniform_value(barrier_id) if barrier_id is not None else 0
        n = uniform_value(number_of_threads) if number_of_threads is not None else c.launch.block
        rec.record("nbar", (c.cta, int(bid), int(n), False))

    def sync_warp(*a: Any, **kw: Any) -> None:
        current().warp_sync()

    def shuffle_sync_bfly(value: Any, offset: Any = None, *a: Any, **kw: Any) -> Any:
        # shfl.sync over the full mask: every lane of the warp takes part (a warp split at
        # this point would wait for lanes that never come); the value is another lane's, which
        # the model does not follow
        current().warp_sync()
        return OPAQUE

    def cluster_arrive(**kw: Any) -> None:
        c = ctx()
        current().record("cluster_arrive", (c.launch.cluster_of(c.cta),))

    def cluster_wait(**kw: Any) -> None:
        c = ctx()
        current().record("cluster_wait", (c.launch.cluster_of(c.cta),))

    def alloc_tmem(*a: Any, **kw: Any) -> None:
        current().record("tmem_alloc", (ctx().cta,), collective=True)

    def dealloc_tmem(*a: Any, **kw: Any) -> None:
        current().record("tmem_dealloc", (ctx().cta,), collective=True)

    def retrieve_tmem_ptr(*a: Any, **kw: Any) -> TmemPtr:
        return TmemPtr()

    def fence_proxy(kind: Any = "", **kw: Any) -> None:
        current().record("fence_proxy", (str(kind),))

    def fence_view_async_tmem_load(**kw: Any) -> None:
        current().record("tmem_wait_ld", (), collective=True)

    def cp_async_bulk_commit_group(**kw: Any) -> None:
        current().record("bulk_commit", (), single=True)

    def cp_async_bulk_wait_group(group: Any, read: Any = None, **kw: Any) -> None:
        current().record("bulk_wait", (int(uniform_value(group)),), single=True)

    def store(ptr: Any, val: Any, sem: Any = None, scope: Any = None, **kw: Any) -> None:
        rec = current()
        if isinstance(ptr, MemPtr) and ptr.root.space == "gmem":
            v = uniform_value(val)
            if not isinstance(v, int):
                raise NotModelled(f"line {rec.line()}: a flag store of an unknown value")
            rec.record("gstore", (Word(ptr.root.name, ptr.offset), int(v), str(sem or "weak")))
        elif isinstance(ptr, MemPtr):
            rec.record("write", (rec.res(ptr),))
        else:
            raise NotModelled(f"line {rec.line()}: a store through an untracked pointer")

    def load(ptr: Any, dtype: Any = None, sem: Any = None, scope: Any = None, **kw: Any) -> Any:
        rec = current()
        if isinstance(ptr, MemPtr) and ptr.root.space == "gmem":
            return FlagValue(Word(ptr.root.name, ptr.offset), str(sem or "weak"))
        if isinstance(ptr, MemPtr):
            rec.record("read", (rec.res(ptr),))
        return OPAQUE

    def map_dsmem_ptr(ptr: Any, rank: Any, **kw: Any) -> Any:
        if isinstance(ptr, MemPtr):
            r = uniform_value(rank)
            if not isinstance(r, int):
                raise NotModelled("a DSMEM peer rank the model does not know")
            root = Root(ptr.root.space, ptr.root.name, int(r))
            return MemPtr(root, ptr.slot, ptr.offset, ptr.elem)
        if isinstance(ptr, BarPtr):
            return BarPtr(ptr.name, ptr.index, int(uniform_value(rank)))
        return OPAQUE

    def issue_clc_query(ptr: Any, response: Any, multicast: bool = True, **kw: Any) -> None:
        rec = current()
        c = ctx()
        if multicast and c.launch.cluster != (1, 1, 1):
            raise NotModelled("multicast cluster launch control is not modelled")
        if not isinstance(response, MemPtr):
            raise NotModelled("a CLC response buffer the model does not track")
        rec.record("clc_query", (rec.bar(ptr), rec.res(response)), single=True)

    def clc_response(ptr: Any, **kw: Any) -> tuple:
        rec = current()
        if not isinstance(ptr, MemPtr):
            raise NotModelled("a CLC response buffer the model does not track")
        rec.record("clc_read", (rec.res(ptr),))
        valid = rec.clc_answer()
        c = ctx()
        return c.xyz[0] + 1, c.xyz[1], 0, int(valid)

    def griddepcontrol_wait(**kw: Any) -> None:
        current().record("gdc_wait", ())

    def inert(*a: Any, **kw: Any) -> Any:
        return OPAQUE

    def make_warp_uniform(x: Any) -> Any:
        return uniform_value(x)

    cluster_arrive_relaxed = cluster_arrive
    names = dict(locals())
    return _module(
        "cutlass.cute.arch",
        **{k: v for k, v in names.items() if callable(v) and k not in ("ctx", "inert")},
        warp_idx=lambda: ctx().warp,
        mbarrier_init_fence=inert,
        relinquish_tmem_alloc_permit=inert,
        setmaxregister_increase=inert,
        setmaxregister_decrease=inert,
        prefetch_descriptor=inert,
        # PDL orders this launch after the previous kernel and lets the next one start its setup:
        # grid-level, between launches, not between the warps of one; every global load and store
        # comes after the wait (only the TMA warp's L2 prefetch precedes it: tests/test_render.py),
        # so a launch sees the last one's workspace whole
        griddepcontrol_launch_dependents=inert,
    )


def _math_module() -> FakeModule:
    def f(*a: Any, **k: Any) -> Any:
        return first_val(*a)

    return _module("cutlass.cute.math", exp=f, exp2=f, tanh=f, log=f, sqrt=f, rsqrt=f, erf=f)


def _tcgen05_module() -> FakeModule:
    def commit(ptr: Any, mask: Any = None, cta_group: Any = CtaGroup.ONE, **kw: Any) -> None:
        rec = current()
        if isinstance(ptr, BarPtr):
            base = rec.bar(ptr)
            targets = rec.mask_ctas(mask) if mask is not None else [base.cta]
            bars = tuple(Bar(t, base.name, base.index) for t in targets)
        else:
            raise NotModelled("tcgen05.commit to something that is not a barrier")
        rec.record("umma_commit", (bars,), single=True)

    return _module(
        "cutlass.cute.nvgpu.tcgen05",
        commit=commit,
        CtaGroup=CtaGroup,
        MmaF16BF16Op=mma_op,
        MmaF8F6F4Op=mma_op,
        MmaTF32Op=mma_op,
        MmaI8Op=mma_op,
        tile_to_mma_shape=lambda atom, shape, order=None, **k: FakeLayout(shape_of(shape)),
        make_smem_layout_atom=lambda *a, **k: OPAQUE,
        make_tmem_copy=_tmem_copy,
        Ld32x32bOp=_TmemLoadOp,
        Ld16x32bx2Op=_TmemLoadOp,
        Ld16x64bOp=_TmemLoadOp,
        Ld16x128bOp=_TmemLoadOp,
        Ld16x256bOp=_TmemLoadOp,
    )


def _cpasync_module() -> FakeModule:
    return _module(
        "cutlass.cute.nvgpu.cpasync",
        tma_partition=_tma_partition,
        prefetch_descriptor=lambda *a, **k: None,
        CopyBulkTensorTileG2SOp=lambda cta_group=CtaGroup.ONE, **k: TmaOp("load", int(cta_group)),
        CopyBulkTensorTileG2SMulticastOp=lambda cta_group=CtaGroup.ONE, **k: TmaOp(
            "load", int(cta_group), True
        ),
        CopyBulkTensorTileS2GOp=lambda *a, **k: TmaOp("store"),
        make_tiled_tma_atom=_tma_atom,
    )


def _warpgroup_module() -> FakeModule:
    return _module(
        "cutlass.cute.nvgpu.warpgroup",
        fence=lambda *a, **k: None,
        commit_group=lambda *a, **k: current().record("wgmma_commit", (), collective=True),
        wait_group=lambda n, *a, **k: current().record(
            "wgmma_wait", (int(uniform_value(n)),), collective=True
        ),
    )


def build_modules() -> dict[str, Any]:
    """Fresh stand-in modules, keyed by import name."""
    arch = _arch_module()
    tcgen05 = _tcgen05_module()
    cpasync = _cpasync_module()
    warpgroup = _warpgroup_module()
    warp = _module(
        "cutlass.cute.nvgpu.warp",
        MmaF16BF16Op=lambda *a, **k: WarpMmaOp(),
        MmaFP8Op=lambda *a, **k: WarpMmaOp(),
    )
    nvgpu = _module(
        "cutlass.cute.nvgpu",
        tcgen05=tcgen05,
        cpasync=cpasync,
        warpgroup=warpgroup,
        warp=warp,
        make_tiled_tma_atom_A=_tma_atom,
        make_tiled_tma_atom_B=_tma_atom,
        CopyUniversalOp=lambda *a, **k: OPAQUE,
    )
    runtime = _module(
        "cutlass.cute.runtime",
        make_fake_compact_tensor=_fake_tensor,
        from_dlpack=lambda *a, **k: OPAQUE,
    )
    cute = _module(
        "cutlass.cute",
        arch=arch,
        nvgpu=nvgpu,
        math=_math_module(),
        runtime=runtime,
        struct=_StructNamespace(),
        kernel=KernelFn,
        jit=lambda f=None, **k: f if f is not None else (lambda g: g),
        group_modes=_group_modes,
        local_tile=_local_tile,
        make_layout=_make_layout,
        make_ordered_layout=_make_layout,
        size=_size,
        make_rmem_tensor=lambda shape=OPAQUE, *a, **k: RegTensor(shape_of(shape)),
        make_fragment=lambda shape=OPAQUE, *a, **k: RegTensor(shape_of(shape)),
        copy=_copy,
        autovec_copy=_autovec_copy,
        # a TMA prefetch to L2 (pdl): a cache hint, it touches no SMEM, barrier or value
        prefetch=lambda *a, **k: None,
        make_copy_atom=_copy_atom,
        size_in_bytes=_size_in_bytes,
        zipped_divide=_view,
        flat_divide=_flat_divide,
        logical_divide=_view,
        tiled_divide=_view,
        make_tensor=_make_tensor,
        append=_append,
        select=_select,
        dice=_dice,
        slice_=_slice,
        ceil_div=_ceil_div,
        round_up=_round_up,
        cosize=_size,
        gemm=_gemm,
        make_tiled_mma=_make_tiled_mma,
        make_identity_tensor=lambda *a, **k: OPAQUE,
        make_tiled_copy_S=_tiled_copy,
        make_tiled_copy_D=_tiled_copy,
        make_tiled_copy_C_atom=_tiled_copy,
        tile_to_shape=lambda atom, shape, order=None, **k: FakeLayout(shape_of(shape)),
        where=lambda cond=None, x=None, y=None, *a, **k: first_val(x, y),
        recast_ptr=_recast_ptr,
        sym_int32=_sym_int32,
        compile=lambda *a, **k: OPAQUE,
    )
    hopper = _module(
        "cutlass.utils.hopper_helpers",
        make_trivial_tiled_mma=lambda *a, **k: TiledMma("wgmma"),
        make_smem_layout_a=lambda major, tiler, dtype, stages, **k: FakeLayout(
            (tiler[0], tiler[2], stages)
        ),
        make_smem_layout_b=lambda major, tiler, dtype, stages, **k: FakeLayout(
            (tiler[1], tiler[2], stages)
        ),
        make_smem_layout_epi=lambda dtype, major, tile, stages, **k: FakeLayout(
            (tile[0], tile[1], stages)
        ),
        get_smem_store_op=lambda *a, **k: CopyKind("generic"),
    )
    utils = _module("cutlass.utils", SmemAllocator=SmemAllocator, hopper_helpers=hopper)
    nvvm = _module(
        "cutlass._mlir.dialects.nvvm",
        mbarrier_wait_parity=lambda ptr, parity, kind=None, **k: MbarProbe(ptr, parity),
    )
    dialects = _module("cutlass._mlir.dialects", nvvm=nvvm)
    mlir = _module("cutlass._mlir", dialects=dialects)
    ints = {
        n: DType(n, w, True)
        for n, w in (
            ("Int8", 8),
            ("Int16", 16),
            ("Int32", 32),
            ("Int64", 64),
            ("Uint8", 8),
            ("Uint16", 16),
            ("Uint32", 32),
            ("Uint64", 64),
        )
    }
    floats = {
        n: DType(n, w)
        for n, w in (
            ("Float32", 32),
            ("Float16", 16),
            ("BFloat16", 16),
            ("TFloat32", 32),
            ("Float8E4M3FN", 8),
            ("Float8E5M2", 8),
            ("Float64", 64),
        )
    }
    cutlass = _module(
        "cutlass",
        cute=cute,
        utils=utils,
        _mlir=mlir,
        runtime=_module("cutlass.runtime", make_fake_stream=lambda *a, **k: OPAQUE),
        tensor_utils=_module("cutlass.tensor_utils"),
        Boolean=DType("Boolean", 1, True),
        range=lambda *a, **k: current().range_dynamic(*a),
        range_constexpr=lambda *a, **k: current().range_constexpr(*a),
        range_dynamic=lambda *a, **k: current().range_dynamic(*a),
        const_expr=lambda x: x,
        min=_min,
        max=_max,
        **ints,
        **floats,
    )
    mods: dict[str, Any] = {"cutlass": cutlass}

    def walk(prefix: str, mod: Any) -> None:
        for k, v in vars(mod).items():
            if isinstance(v, FakeModule):
                mods[f"{prefix}.{k}"] = v
                walk(f"{prefix}.{k}", v)

    walk("cutlass", cutlass)
    return mods


def make_import(mods: dict[str, Any]) -> Callable[..., Any]:
    """An ``__import__`` that serves the stand-in modules and refuses other DSL imports."""
    real_import = __import__

    def imp(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if name == "cutlass" or name.startswith("cutlass."):
            if name not in mods:
                raise NotModelled(f"import of {name} (not in the verify stand-in)")
            return mods[name] if fromlist else mods["cutlass"]
        if name.startswith("cuda") or name == "torch":
            raise NotModelled(f"import of {name} during tracing")
        return real_import(name, globals, locals, fromlist, level)

    return imp
