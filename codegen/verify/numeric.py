"""The numeric cross-check: each kernel's data movement, emulated at the tile level, against the
GEMM it claims to compute.

The recording stand-in (`dsl.py`) already runs every copy, MMA and store of the kernel with
concrete coordinates; besides the protocol ops it records *data ops* (``Op("data", ...)``):

- ``fill (dests, term, piece, pieces)``: a TMA load of a tile of a global tensor (its box in the
  tensor: ``("op", "a", rows, k)`` for an operand, ``("c", rows, cols)``, ``("bias", range)``)
  into SMEM slots, or one of `pieces` slices of it (multicast);
- ``mma (a, b, ka, kb, dests, accumulate, n, prev)``: an MMA reading the A and B slots (K block
  `ka` of its stage: ``(index, count)``) into TMEM slots or registers, overwriting or adding;
- ``load (n, res)`` / ``store (res, value)``: a thread reading or writing SMEM, TMEM, the
  workspace; ``gstore (term, value)`` / ``tma_store (term, res)``: D written to a tile of C.

Register values are symbolic (`dsl.Val`: sums of what the actor read), so the replay can run
after the checker has fixed one valid order of all actors' ops (`check.Result.data_order`, the
canonical run; without a race, which the checker proves, every valid order moves the same data).
The replay follows the contents of every buffer as multisets of *terms* (a product of an A tile
and a B tile over a K range, a C tile, a bias range) and checks every store to C: restricted to
the tile it writes, its content must be the sum over k in [0, K) of A[rows, k] B[cols, k], each
K range exactly once and the A and B ranges equal, plus C once when beta != 0 and the bias once
when there is one; and every element of C must be written. So a skipped or doubled k-tile, a
wrong tile coordinate in a load or a store, an MMA that overwrites instead of adding, a split-K
or stream-K partial dropped or added twice are reported, with the tile, the K ranges and the
store's line.

Not modelled: which rows, columns or chunks inside a tile each thread or TMEM load moves (a
tile's value is the whole tile's; a chunk stored to the wrong column of its own tile is not
seen), the values' coefficients (alpha, beta), the activation, rounding and tails (M, N, K are
whole tiles). row_sumsq's row partials are counted and said to be not followed (Outcome.unfollowed):
their values are sums of squares over a thread's elements and a lane butterfly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from codegen.verify.check import Violation
from codegen.verify.dsl import GATED_BLOCK, gate_image
from codegen.verify.model import KernelModel, Res

Term = tuple
Content = Counter


@dataclass(frozen=True)
class Expect:
    """The GEMM a kernel claims: D[M, N] = act(alpha A[M, K] B[N, K]^T + beta C + bias)."""

    m: int
    n: int
    k: int
    beta: bool = False
    bias: str | None = None  # "row" (length M) or "col" (length N)
    # a gated pair: D[M, N / 2] = fn(gate, up), B's rows gate and up in blocks of GATED_BLOCK
    # (dsl.gate_image): C's columns [o0, o1) hold A B^T's [2 o0, 2 o1) (o0, o1 whole blocks)
    gated: bool = False

    @property
    def n_out(self) -> int:
        """C's columns: N, or N / 2 for a gated pair."""
        return self.n // 2 if self.gated else self.n


@dataclass
class Outcome:
    violations: list[Violation]
    unknown: str | None = None  # why a store's value could not be followed
    stores: int = 0  # distinct (tile, content) stores checked
    # stores the emulation saw and does not follow (row_sumsq's row partials), in words
    unfollowed: str | None = None


# row_sumsq: what the cross-check says of the row partials' stores it does not follow
ROW_PARTIALS_UNFOLLOWED = (
    "row_partials (row_sumsq): {n} stores seen, values not followed (squares added per thread "
    "and over lanes, below the tile level): the GPU test checks them"
)

# block_quant: the same of the block scales' stores (the values of C are followed: their tiles)
SCALES_UNFOLLOWED = (
    "scales (block_quant): {n} stores seen, values not followed (a max per thread and over "
    "lanes, below the tile level): the GPU test checks them"
)


@dataclass(frozen=True)
class _Atoms:
    atoms: tuple


def _sub(r: tuple, part: int, parts: int) -> tuple:
    lo, hi = r
    step = (hi - lo) // parts if parts > 0 else 0
    return (lo + part * step, lo + (part + 1) * step) if parts > 1 else r


def _piece(term: Term, piece: int | None, pieces: int) -> Term:
    """Slice `piece` of `pieces` of a tile (along its first dimension)."""
    if piece is None or pieces <= 1:
        return term
    if term[0] == "op":
        return ("op", term[1], _sub(term[2], piece, pieces), term[3])
    if term[0] in ("c", "bias") and len(term) > 1:
        return (term[0], _sub(term[1], piece, pieces), *term[2:])
    return term


class Replay:
    def __init__(self, model: KernelModel):
        self.model = model
        self.buf: dict[tuple, dict] = {}
        self.refs: dict[tuple, dict[int, Content]] = {}
        self.writes: list[tuple[Term, Content, str, int]] = []
        self.unknown: str | None = None
        self.whole = all(launch.full_grid for launch in model.launches)
        self.shared: set[int] = set()  # ids of contents that more than one holder may see
        self.chain: set[int] = set()  # ids of register MMA results (may grow in place)
        self.partials = 0  # stores to row_partials (row_sumsq): seen, not followed
        self.scales = 0  # stores to scales (block_quant): seen, not followed
        # every product an MMA computed (its own A x B term, before any accumulation), counted
        # per actor (launch, actor) that issued it: each k-block of each tile is computed by one
        # CTA (each of whose MMA actors, a wgmma warp or the MMA warp, records it once)
        self.computed: dict[Term, Counter] = {}

    # buffers: SMEM / TMEM per launch and CTA; the global workspace across launches. An entry
    # holds what was written whole ("base": by slice of a multicast, None = all of it) and what
    # threads wrote to their own part since ("parts": a thread-partitioned view's key): a thread
    # reading its part sees its own write, the rest of the buffer still holds the base
    def key(self, launch: int, res: Res, wkey: tuple | None = None) -> tuple:
        scope = -1 if res.space == "gmem" else launch
        return (scope, res.cta, res.space, res.root, wkey, res.slot)

    def _entry(self, k: tuple, slot_fallback: bool) -> dict | None:
        entry = self.buf.get(k)
        if entry is None and slot_fallback:
            entry = self.buf.get(k[:-1] + (None,))
        return entry

    def read(self, launch: int, res: Res, wkey: tuple | None = None) -> Content:
        k = self.key(launch, res, wkey)
        if res.slot is None and k not in self.buf:
            # the whole buffer, written slot by slot
            entries = [e for kk, e in self.buf.items() if kk[:-1] == k[:-1]]
        else:
            e = self._entry(k, True)
            entries = [e] if e is not None else []
        if not entries:
            if res.space == "gmem" and not self.whole:
                # written, if at all, by a CTA that is not modelled
                return Counter({("unknown",): 1})
            return Counter({("uninit",): 1})
        if len(entries) == 1:
            return self._read_entry(entries[0], res.part)  # shared: callers do not mutate it
        out: Content = Counter()
        for e in entries:
            out.update(self._read_entry(e, res.part))
        return out

    @staticmethod
    def _read_entry(e: dict, part) -> Content:
        parts = e["parts"]
        if part is not None and part in parts:
            return parts[part]
        if parts and (part is None or not e["base"]):
            # the whole, or a part of another partitioning (the reduce kernel's threads read
            # what the GEMM kernel's threads wrote): every part holds the tile's value
            first = next(iter(parts.values()))
            if all(c is first or c == first for c in parts.values()):
                return first  # every thread wrote the same tile value into its part
            return Counter({("unknown",): 1})
        if not e["base"]:
            return Counter({("uninit",): 1})
        if len(e["base"]) == 1:
            return next(iter(e["base"].values()))
        out: Content = Counter()
        for c in e["base"].values():
            out.update(c)
        return out

    def write(
        self,
        launch: int,
        res: Res,
        content: Content,
        piece: int | None = None,
        wkey: tuple | None = None,
    ) -> None:
        k = self.key(launch, res, wkey)
        if res.part is not None and piece is None:
            e = self._entry(k, False)
            if e is None:
                base = self._entry(k, True)
                e = {"base": dict(base["base"]) if base else {}, "parts": {}}
                self.buf[k] = e
            e["parts"][res.part] = content
            return
        if res.slot is None and piece is None:
            for kk in [kk for kk in self.buf if kk[:-1] == k[:-1]]:
                del self.buf[kk]
        e = self.buf.get(k)
        if piece is None or e is None:
            self.buf[k] = {"base": {piece: content}, "parts": {}}
        else:
            e["parts"] = {}
            e["base"].pop(None, None)
            e["base"][piece] = content

    def resolve(self, who: tuple, val) -> Content:
        atoms = val.atoms
        if len(atoms) == 1 and atoms[0][1] == 1 and atoms[0][0][0] == "ref":
            c = self.refs.get(who, {}).get(atoms[0][0][1])
            if c is not None:
                self.shared.add(id(c))  # handed on as is: never changed in place again
                return c
        out: Content = Counter()
        for atom, count in val.atoms:
            if atom[0] == "ref":
                c = self.refs.get(who, {}).get(atom[1])
                if c is None:
                    c = Counter({("unknown",): 1})
            elif atom[0] == "same":
                # element groups of one register tile, computed apart: equal at the tile level
                alts = [self.resolve(who, _Atoms(a)) for a in atom[1]]
                c = alts[0] if all(x == alts[0] for x in alts) else Counter({("unknown",): 1})
            else:
                c = Counter({atom[1]: 1})
            for t, n in c.items():
                out[t] += n * count
        return out

    def run(self, order: list) -> None:
        for launch_no, actor_no, op in order:
            launch = self.model.launches[launch_no]
            actor = launch.actors[actor_no]
            who = (launch_no, actor_no)
            action, *args = op.args
            if action == "fill":
                dests, term, piece, pieces = args
                for res in dests:
                    self.write(launch_no, res, Counter({_piece(term, piece, pieces): 1}), piece)
            elif action == "load":
                n, res, wkey = args
                self.refs.setdefault(who, {})[n] = self.read(launch_no, res, wkey)
            elif action == "store":
                res, val, wkey = args
                self.write(launch_no, res, self.resolve(who, val), None, wkey)
            elif action == "mma":
                self.mma(launch_no, who, *args)
            elif action == "unmapped":
                # a store through a layout the tile-level model does not map (dsl._global_view)
                self.unknown = self.unknown or (
                    f"{actor.name} (line {op.line}) stores to {args[0]} through a view the "
                    "emulation does not map"
                )
            elif action in ("gstore", "tma_store"):
                term, src = args
                content = (
                    self.resolve(who, src) if action == "gstore" else self.read(launch_no, src)
                )
                if term[0] == "row_partials":
                    self.partials += 1
                    continue
                if term[0] == "scales":
                    self.scales += 1
                    continue
                if term[0] == "unmapped":
                    self.unknown = self.unknown or (
                        f"{actor.name} (line {op.line}) stores to {term[1]} over a range the "
                        "emulation does not map to one box"
                    )
                    continue
                if term[0] != "c":
                    if term[0] in ("a", "b", "bias", "op", "unknown"):
                        self.unknown = self.unknown or (
                            f"{actor.name} (line {op.line}) stores to {term[0]}, not a tile of C"
                        )
                    continue
                self.writes.append((term, content, actor.name, op.line, (launch_no, actor.cta)))

    def mma(self, launch_no, who, ra, rb, ka, kb, dests, acc, n, prev) -> None:
        a = Counter()
        for res in ra:
            a.update(self.read(launch_no, res))
        b = Counter()
        for res in rb:
            b.update(self.read(launch_no, res))
        out: Content = Counter()
        for ta, ca in a.items():
            for tb, cb in b.items():
                if ta[0] != "op" or tb[0] != "op":
                    bad = ta if ta[0] != "op" else tb
                    out[("bad-operand", bad[0])] += ca * cb
                    continue
                ra_k, rb_k = _sub(ta[3], *ka), _sub(tb[3], *kb)
                if (ta[1], tb[1]) == ("a", "b"):
                    out[("prod", ta[2], tb[2], ra_k, rb_k)] += ca * cb
                elif (ta[1], tb[1]) == ("b", "a"):  # swap AB: C^T = B A^T
                    out[("prod", tb[2], ta[2], rb_k, ra_k)] += ca * cb
                else:
                    out[("bad-operand", f"{ta[1]} x {tb[1]}")] += ca * cb
        for t, c in out.items():
            if t[0] == "prod":
                self.computed.setdefault(t, Counter())[who] += c
        refs = self.refs.setdefault(who, {})
        if acc is None:
            out[("unknown",)] += 1
        elif acc:
            if dests:
                out.update(self.read(launch_no, dests[0]))
            elif prev is not None:
                atoms = prev.atoms
                if len(atoms) == 1 and atoms[0][0][0] == "ref" and atoms[0][1] == 1:
                    # a register accumulator chain (wgmma): the previous value is this
                    # register's alone, so add to it in place
                    old = refs.get(atoms[0][0][1])
                    if old is not None and id(old) in self.chain and id(old) not in self.shared:
                        old.update(out)
                        out = old
                    else:
                        out.update(self.resolve(who, prev))
                else:
                    out.update(self.resolve(who, prev))
        refs[n] = out
        if not dests:
            self.chain.add(id(out))  # an MMA's register result: only this register holds it
        for res in dests:
            self.write(launch_no, res, out)


def _breaks(lo: int, hi: int, ranges) -> list[int]:
    pts = {lo, hi}
    for a, b in ranges:
        if lo < a < hi:
            pts.add(a)
        if lo < b < hi:
            pts.add(b)
    return sorted(pts)


def _span(r: tuple) -> str:
    return f"{r[0]}:{r[1]}"


def _coverage(ks: list[tuple[tuple, int]], k: int) -> str | None:
    """None if the K ranges (with counts) cover [0, k) exactly once, else what is wrong."""
    pts = sorted({0, k, *(x for r, _ in ks for x in r)})
    # a range (a, b) covers the elementary interval [lo, hi) of consecutive points iff
    # a <= lo < b: one sweep of +c at a, -c at b gives each interval's count
    delta: dict[int, int] = {}
    for (a, b), c in ks:
        if a < b:
            delta[a] = delta.get(a, 0) + c
            delta[b] = delta.get(b, 0) - c
    wrong = []
    n = 0
    for lo, hi in pairwise(pts):
        n += delta.get(lo, 0)
        if 0 <= lo and hi <= k:
            if n != 1:
                wrong.append(f"k {lo}:{hi} {'missing' if n == 0 else f'counted {n} times'}")
        elif n:
            wrong.append(f"k {lo}:{hi} outside K = {k}")
    return "; ".join(wrong) if wrong else None


def _acc_cols(cols: tuple) -> tuple | None:
    """A gated pair: the columns of A B^T (gate and up) that C's columns `cols` are computed
    from, or None where `cols` splits a gate and up block (not followed at the tile level)."""
    o0, o1 = cols
    if o0 % GATED_BLOCK or o1 % GATED_BLOCK:
        return None
    return (2 * o0, 2 * o1)


def _cell(r0: int, r1: int, c0: int, c1: int, ex: Expect) -> str:
    if not ex.gated:
        return f"C[{r0}:{r1}, {c0}:{c1}]"
    return f"C[{r0}:{r1}, {gate_image(c0)}:{gate_image(c1)}] (gate and up columns {c0}:{c1})"


def check_store(term: Term, content: Content, ex: Expect) -> str | None:
    """What is wrong with `content` stored to the tile `term` of C, or None. A gated pair's
    store to C's columns [o0, o1) is checked as A B^T's [2 o0, 2 o1): every gate and up column
    of its pairs, each over all of K once."""
    _, rows, cols = term
    if ex.gated:
        acc = _acc_cols(cols)
        if acc is None:
            return (
                f"columns {_span(cols)} split a block of {GATED_BLOCK} gate and up pairs: "
                "lost track of them at the tile level"
            )
        cols = acc
    odd = [t for t in content if t[0] in ("uninit", "unknown", "bad-operand", "op")]
    if odd:
        t = odd[0]
        if t[0] == "uninit":
            what = "an accumulator or buffer nothing wrote (no MMA ran into it)"
        elif t[0] == "unknown":
            what = "a value the emulation lost track of"
        elif t[0] == "bad-operand":
            what = f"an MMA over something that is not an A and a B tile ({t[1:]})"
        else:
            what = f"an operand tile of {t[1]}"
        return f"holds {what}"
    prods, cs, biases = [], [], []
    for t, c in content.items():
        if t[0] == "prod":
            r = (max(t[1][0], rows[0]), min(t[1][1], rows[1]))
            q = (max(t[2][0], cols[0]), min(t[2][1], cols[1]))
            if r[0] < r[1] and q[0] < q[1]:
                prods.append((r, q, t[3], t[4], c))
        elif t[0] == "c":
            r = (max(t[1][0], rows[0]), min(t[1][1], rows[1]))
            q = (max(t[2][0], cols[0]), min(t[2][1], cols[1]))
            if r[0] < r[1] and q[0] < q[1]:
                cs.append((r, q, c))
        elif t[0] == "bias":
            span = rows if ex.bias == "row" else cols
            r = (max(t[1][0], span[0]), min(t[1][1], span[1]))
            if r[0] < r[1]:
                biases.append((r, c))
    rb = _breaks(
        *rows,
        [p[0] for p in prods] + [c[0] for c in cs] + [b[0] for b in biases if ex.bias == "row"],
    )
    cb = _breaks(
        *cols,
        [p[1] for p in prods] + [c[1] for c in cs] + [b[0] for b in biases if ex.bias != "row"],
    )
    problems: list[str] = []
    for r0, r1 in pairwise(rb):
        for c0, c1 in pairwise(cb):
            cell = _cell(r0, r1, c0, c1, ex)
            here = [
                (ka, kb, n)
                for r, q, ka, kb, n in prods
                if r[0] <= r0 and r1 <= r[1] and q[0] <= c0 and c1 <= q[1]
            ]
            for ka, kb, _ in here:
                if ka != kb:
                    return f"{cell}: A over k {_span(ka)} is multiplied with B over k {_span(kb)}"
            wrong = _coverage([(ka, n) for ka, _, n in here], ex.k)
            if wrong:
                if not here:
                    wrong = f"no product of A and B for these rows and columns ({wrong})"
                problems.append(f"{cell}: {wrong}")
            nc = sum(n for r, q, n in cs if r[0] <= r0 and r1 <= r[1] and q[0] <= c0 and c1 <= q[1])
            want_c = 1 if ex.beta else 0
            if nc != want_c:
                problems.append(f"{cell}: beta C added {nc} times (expected {want_c})")
            span = (r0, r1) if ex.bias == "row" else (c0, c1)
            nb = sum(n for r, n in biases if r[0] <= span[0] and span[1] <= r[1])
            want_b = 1 if ex.bias else 0
            if nb != want_b:
                problems.append(f"{cell}: the bias added {nb} times (expected {want_b})")
            if problems:
                return problems[0]
    return None


def emulate(model: KernelModel, order: list, ex: Expect) -> Outcome:
    """Replay the data ops in `order` and check every store to C and that all of C is written."""
    if ex.gated and (ex.beta or ex.bias):
        # beta C (M, N / 2) and a bias added before or after the pair's function: not modelled
        return Outcome([], "a gated pair with beta C or a bias: not followed by the emulation")
    rp = Replay(model)
    rp.run(order)
    out = Outcome([], rp.unknown)
    if rp.partials:
        out.unfollowed = ROW_PARTIALS_UNFOLLOWED.format(n=rp.partials)
    if rp.scales:
        out.unfollowed = SCALES_UNFOLLOWED.format(n=rp.scales)
    seen: set = set()
    boxes = []  # (rows, cols, the writing CTA) of every store to C
    for term, content, who, line, cta in rp.writes:
        boxes.append((term[1], term[2], cta))
        key = (term, tuple(sorted(content.items())))
        if key in seen:
            continue
        seen.add(key)
        out.stores += 1
        wrong = check_store(term, content, ex)
        if wrong is None:
            continue
        if "lost track" in wrong:
            out.unknown = (
                out.unknown
                or f"{who} (line {line}): the value stored to C[{_span(term[1])}, {_span(term[2])}]"
            )
            continue
        out.violations.append(
            Violation(
                "numeric",
                f"{who} (line {line}) stores C[{_span(term[1])}, {_span(term[2])}] of the "
                f"{ex.m}x{ex.n}x{ex.k} GEMM: {wrong}",
            )
        )
        if len(out.violations) >= 3:
            break
    # where the whole grid is modelled (else only the first cluster's CTAs ran): every product
    # of an A and a B k-block computed once (a tile's k-tile run twice, by two CTAs or by one,
    # is wasted work even when only one of them is stored), and every element of C written, by
    # one CTA (one store of each tile: a second would race the first, or overwrite it)
    if not out.violations and out.unknown is None and all(l.full_grid for l in model.launches):
        twice = _computed_twice(rp, ex)
        if twice:
            out.violations.append(Violation("numeric", twice))
            return out
        rb = _breaks(0, ex.m, [b[0] for b in boxes])
        cb = _breaks(0, ex.n_out, [b[1] for b in boxes])
        for r0, r1 in pairwise(rb):
            for c0, c1 in pairwise(cb):
                writers = {
                    cta
                    for r, q, cta in boxes
                    if r[0] <= r0 and r1 <= r[1] and q[0] <= c0 and c1 <= q[1]
                }
                if len(writers) == 1:
                    continue
                cell = f"C[{r0}:{r1}, {c0}:{c1}] of the {ex.m}x{ex.n}x{ex.k} GEMM"
                out.violations.append(
                    Violation(
                        "numeric",
                        f"{cell} is never written"
                        if not writers
                        else f"{cell} is stored by {len(writers)} CTAs "
                        f"({', '.join(_cta(c) for c in sorted(writers))}): once is right",
                    )
                )
                return out
    return out


def _cta(who: tuple[int, int]) -> str:
    """A writing CTA as a message names it: launch 0's CTA c is "CTA c"."""
    launch, cta = who
    return f"CTA {cta}" if launch == 0 else f"CTA {cta} of launch {launch}"


def _computed_twice(rp: Replay, ex: Expect) -> str | None:
    """The first product of an A and a B k-block that the whole grid computed more than once (by
    two CTAs, or by one actor twice), as the violation says it, or None."""
    for term, actors in rp.computed.items():
        ctas = sorted({(launch, rp.model.launches[launch].actors[a].cta) for launch, a in actors})
        again = max(actors.values())
        if len(ctas) > 1 or again > 1:
            _, rows, cols, ka, _ = term
            how = f"by {len(ctas)} CTAs" if len(ctas) > 1 else f"{again} times"
            return (
                f"A[{_span(rows)}] x B[{_span(cols)}] over k {_span(ka)} of the "
                f"{ex.m}x{ex.n}x{ex.k} GEMM is computed {how} "
                f"({', '.join(_cta(c) for c in ctas)}): each k-tile of a tile once is right"
            )
    return None
