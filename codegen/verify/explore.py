"""A reference checker: explicit-state breadth-first exploration of every interleaving.

Independent of `check.py` (which reasons on one happens-before order): states are explored one by
one with the PTX semantics of mbarriers (``try_wait.parity P`` passes iff the current phase's
parity differs from P; arrivals and tx bytes count down the current phase), asynchronous
completions as transitions that may fire any time after their issue, and visited-state hashing.
It reports the same property classes where they are observable in one state: deadlock (no
transition, not everything done), buffer overlap (an access starting while a conflicting
asynchronous one is in flight), a CTA touched after it exited, over-arrival, phases left
incomplete, TMEM freed under a pending access. Generic (thread) accesses are instantaneous here,
so thread-against-thread races (workspace, DSMEM) and flag protocols are out of its scope, as
are proxy fences. The state space grows fast: it is for small configurations, as a cross-check
of `check.py` in the tests.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace

from codegen.verify.model import WARPGROUP_WARPS, Bar, KernelModel, Res


class TooLarge(Exception):
    """The state space exceeds the budget."""


@dataclass
class Outcome:
    states: int
    violation: str | None  # property class, None when every interleaving is fine
    trace: list[str]


# an in-flight asynchronous access: (tag, res, write, actor); tags say what completes it:
#   ("tma", uid) a delivery, ("umma", actor, commit index), ("wg", actor, group), ("ld", actor),
#   ("st", uid) a store's read
Flight = tuple
# a transition: (label, next state, violated property or None)
Transition = tuple[str, tuple, "str | None"]


class Explorer:
    def __init__(self, model: KernelModel, max_states: int = 300_000):
        if len(model.launches) != 1:
            raise ValueError("the explorer takes one launch")
        self.launch = model.launches[0]
        # data ops (the numeric emulation) and plain global accesses (checked for PDL order
        # only) change no state the explorer tracks: leave them out, or they only add states
        self.actors = [
            replace(a, ops=[op for op in a.ops if op.kind not in ("data", "gaccess")])
            for a in self.launch.actors
        ]
        self.max_states = max_states
        self.bars = sorted({b for a in self.actors for op in a.ops for b in _bars(op)})
        self.bar_index = {b: i for i, b in enumerate(self.bars)}
        self.sync_keys = sorted(
            {_sync_key(op) for a in self.actors for op in a.ops if _sync_key(op)}
        )
        self.sync_index = {k: i for i, k in enumerate(self.sync_keys)}
        self.cta_actors: dict[int, list[int]] = {}
        for i, a in enumerate(self.actors):
            self.cta_actors.setdefault(a.cta, []).append(i)
        # the actors of each actor's warpgroup that issue wgmma (a group is one operation of
        # the warpgroup: it runs once all of them have committed it, and retires for all)
        issuers = [
            i for i, a in enumerate(self.actors) if any(op.kind == "wgmma_commit" for op in a.ops)
        ]
        self.wg_peers = {
            i: [j for j in issuers if _warpgroup(self.actors[j]) == _warpgroup(a)]
            for i, a in enumerate(self.actors)
        }
        for a in self.actors:
            for op in a.ops:
                if op.kind in ("gstore", "await", "clc_query", "clc_read"):
                    raise ValueError(f"the explorer does not model {op.kind}")

    # state: (actors, bars, syncs, asyncs, flights, exited)
    #   actor: (pc, waiting sync generation or -1, commits issued, commits complete,
    #           wgmma groups closed, wgmma groups retired, (stores not committed, bulk groups))
    #   bar: None (not initialized) or (count, completed, pending, tx)
    #   sync: (completed generations, threads arrived in the current one)
    #   async: frozenset of (kind, uid, payload)
    def initial(self) -> tuple:
        actors = tuple((0, -1, 0, 0, 0, 0, ((), ())) for _ in self.actors)
        bars = tuple(None for _ in self.bars)
        syncs = tuple((0, 0) for _ in self.sync_keys)
        return (actors, bars, syncs, frozenset(), frozenset(), frozenset())

    def run(self) -> Outcome:
        start = self.initial()
        parent: dict[tuple, tuple[tuple | None, str]] = {start: (None, "start")}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            succ = list(self.successors(state))
            if not succ:
                bad = self.final_violation(state)
                if bad:
                    return Outcome(len(parent), bad, self.trace(parent, state))
                continue
            for label, nxt, bad in succ:
                if bad:
                    parent.setdefault(nxt, (state, label))
                    return Outcome(
                        len(parent), bad, self.trace(parent, nxt) + [f"-> {bad}: {label}"]
                    )
                if nxt not in parent:
                    parent[nxt] = (state, label)
                    if len(parent) > self.max_states:
                        raise TooLarge(f"more than {self.max_states} states")
                    queue.append(nxt)
        return Outcome(len(parent), None, [])

    def trace(self, parent: dict, state: tuple) -> list[str]:
        out = []
        while True:
            prev, label = parent[state]
            if prev is None:
                break
            out.append(label)
            state = prev
        return out[::-1]

    # -- transitions --------------------------------------------------------------------------

    def successors(self, state: tuple) -> Iterator[Transition]:
        actors, asyncs = state[0], state[3]
        for i, a in enumerate(self.actors):
            pc = actors[i][0]
            if pc < len(a.ops):
                r = self.step(state, i)
                if r is not None:
                    yield r
        for item in asyncs:
            r = self.fire(state, item)
            if r is not None:
                yield r

    def final_violation(self, state: tuple) -> str | None:
        actors, bars, asyncs = state[0], state[1], state[3]
        if any(actors[i][0] < len(a.ops) for i, a in enumerate(self.actors)) or asyncs:
            return "deadlock"
        for b, st in zip(self.bars, bars):
            if st is not None and (st[2] != st[0] or st[3] != 0):
                return "incomplete-phase"
        return None

    def step(self, state: tuple, i: int) -> Transition | None:
        actors, bars, syncs, asyncs, flights, exited = state
        a = self.actors[i]
        pc, wait_gen, c_issued, c_done, g_closed, g_done, stores = actors[i]
        op = a.ops[pc]
        bars, syncs, flights, asyncs = list(bars), list(syncs), set(flights), set(asyncs)
        bad = None
        label = f"{a.name}: {op.kind} {_args(op)} (line {op.line})"
        me = [pc, wait_gen, c_issued, c_done, g_closed, g_done, stores]
        touched = _ctas(op)
        if touched & exited:
            bad = "exit-pending"
        k = op.kind
        if k == "init":
            bar, count = op.args
            bars[self.bar_index[bar]] = (count, 0, count, 0)
        elif k in ("arrive", "expect_tx"):
            bar = op.args[0]
            n = op.args[1] * op.threads if k == "arrive" else 0
            tx = (op.args[2] if k == "arrive" else op.args[1]) * op.threads
            bad = bad or self.credit(bars, bar, n, tx)
        elif k == "wait":
            bar, parity = op.args
            st = bars[self.bar_index[bar]]
            if st is None or st[1] % 2 == parity:
                return None
        elif k == "tma_load":
            dests, tbars, nbytes = op.args
            for j, (res, bar) in enumerate(zip(dests, tbars)):
                uid = (i, pc, j)
                bad = bad or self.start(flights, (("tma", uid), res, True, i))
                asyncs.add(("tx", uid, (bar, nbytes)))
        elif k == "tma_store":
            uid = (i, pc)
            bad = bad or self.start(flights, (("st", uid), op.args[0], False, i))
            asyncs.add(("st", uid, None))
            me[6] = ((*stores[0], uid), stores[1])
        elif k == "bulk_commit":
            me[6] = ((), (*stores[1], stores[0]))
        elif k == "bulk_wait":
            groups = stores[1]
            retire = groups[: len(groups) - op.args[0]] if op.args[0] < len(groups) else ()
            pending = {("st", u) for g in retire for u in g}
            if any(f[0] in pending for f in flights):
                return None
            me[6] = (stores[0], groups[len(retire) :])
        elif k == "umma":
            reads, writes = op.args
            for res in reads:
                bad = bad or self.start(flights, (("umma", i, c_issued), res, False, i))
            for res in writes:
                bad = bad or self.start(flights, (("umma", i, c_issued), res, True, i))
        elif k == "umma_commit":
            asyncs.add(("cc", (i, c_issued), op.args[0]))
            me[2] = c_issued + 1
        elif k == "wgmma":
            for res in op.args[0]:
                bad = bad or self.start(flights, (("wg", i, g_closed), res, False, i))
        elif k == "wgmma_commit":
            me[4] = g_closed + 1
        elif k == "wgmma_wait":
            keep_from = g_closed - op.args[0]
            peers = self.wg_peers[i]
            if any(actors[j][4] < keep_from for j in peers):
                return None
            flights = {
                f
                for f in flights
                if not (f[0][0] == "wg" and f[0][1] in peers and f[0][2] < keep_from)
            }
            me[5] = max(g_done, keep_from)
        elif k == "tmem_ld":
            bad = bad or self.start(flights, (("ld", i), op.args[0], False, i))
        elif k == "tmem_wait_ld":
            flights = {f for f in flights if f[0] != ("ld", i)}
        elif k == "read" or k == "write":
            bad = bad or self.conflict(flights, (("now", i), op.args[0], k == "write", i))
        elif k in ("nbar", "warp_sync"):
            key = _sync_key(op)
            si = self.sync_index[key]
            done, arrived = syncs[si]
            expected = op.args[2] if k == "nbar" else 32
            waits = op.args[3] if k == "nbar" else True
            if wait_gen < 0:
                arrived += op.threads
                gen = done
                if arrived >= expected:
                    bad = bad or ("over-arrival" if arrived > expected else None)
                    done, arrived = done + 1, 0
                syncs[si] = (done, arrived)
                if waits and done <= gen:
                    me[1] = gen
                    if pc == len(a.ops) - 1:
                        flights = {f for f in flights if f[0] != ("ld", i)}
                    return self.pack(
                        label + " (arrives)", state, i, me, bars, syncs, asyncs, flights, bad
                    )
            elif done <= wait_gen:
                return None
            me[1] = -1
        elif k in ("cluster_arrive", "cluster_wait"):
            raise ValueError("the explorer does not model cluster barriers")
        elif k == "tmem_dealloc":
            cta = op.args[0]
            # the dealloc is the warp's last op: its own TMEM loads end with it (check.py alike)
            if any(f[1].cta == cta and f[1].space == "tmem" and f[0] != ("ld", i) for f in flights):
                bad = bad or "tmem-dealloc"
        me[0] = pc + 1
        if me[0] == len(a.ops):
            flights = {f for f in flights if f[0] != ("ld", i)}
        return self.pack(label, state, i, me, bars, syncs, asyncs, flights, bad)

    def pack(
        self,
        label: str,
        state: tuple,
        i: int,
        me: list,
        bars: list,
        syncs: list,
        asyncs: set,
        flights: set,
        bad: str | None,
    ) -> Transition:
        actors, _, _, _, _, exited = state
        actors = actors[:i] + (tuple(me),) + actors[i + 1 :]
        exited = set(exited)
        for cta, members in self.cta_actors.items():
            if cta not in exited and all(actors[j][0] >= len(self.actors[j].ops) for j in members):
                exited.add(cta)
                if any(_item_ctas(item) & {cta} for item in asyncs) or any(
                    f[1].cta == cta for f in flights
                ):
                    bad = bad or "exit-pending"
        nxt = (
            actors,
            tuple(bars),
            tuple(syncs),
            frozenset(asyncs),
            frozenset(flights),
            frozenset(exited),
        )
        return label, nxt, bad

    def fire(self, state: tuple, item: tuple) -> Transition | None:
        actors, bars, syncs, asyncs, flights, exited = state
        kind, uid, payload = item
        bars, flights, asyncs = list(bars), set(flights), set(asyncs)
        bad = None
        if kind == "cc":
            i, idx = uid
            if idx > 0 and ("cc", (i, idx - 1)) in {(a[0], a[1]) for a in asyncs}:
                return None  # commits complete in order
            flights = {
                f for f in flights if not (f[0][0] == "umma" and f[0][1] == i and f[0][2] <= idx)
            }
            for bar in payload:
                asyncs.add(("arrive", (i, idx, bar), bar))
            label = f"   MMAs of {self.actors[i].name} commit {idx} complete"
        elif kind == "arrive":
            bad = self.credit(bars, payload, 1, 0)
            label = f"   commit arrives on {payload.show()}"
        elif kind == "tx":
            bar, nbytes = payload
            flights = {f for f in flights if f[0] != ("tma", uid)}
            bad = self.credit(bars, bar, 0, -nbytes)
            label = f"   TMA bytes land: complete_tx {nbytes} on {bar.show()}"
        elif kind == "st":
            flights = {f for f in flights if f[0] != ("st", uid)}
            label = "   TMA store read done"
        else:  # pragma: no cover
            raise AssertionError(kind)
        asyncs.discard(item)
        if _item_ctas(item) & exited:
            bad = bad or "exit-pending"
        nxt = (actors, tuple(bars), syncs, frozenset(asyncs), frozenset(flights), exited)
        return label, nxt, bad

    def credit(self, bars: list, bar: Bar, arrive: int, tx: int) -> str | None:
        st = bars[self.bar_index[bar]]
        if st is None:
            return "uninitialized-barrier"
        count, done, pending, cur = st
        pending -= arrive
        cur += tx
        bad = "over-arrival" if pending < 0 else None
        if pending <= 0 and cur == 0:
            done, pending = done + 1, count
        bars[self.bar_index[bar]] = (count, done, pending, cur)
        return bad

    def start(self, flights: set, f: Flight) -> str | None:
        bad = self.conflict(flights, f)
        flights.add(f)
        return bad

    def conflict(self, flights: set, f: Flight) -> str | None:
        tag, res, write, actor = f
        for g in flights:
            gtag, gres, gwrite, gactor = g
            if not (write or gwrite) or not res.overlaps(gres):
                continue
            if gactor == actor and gtag[0] == tag[0] and tag[0] in ("umma", "wg", "st"):
                continue
            if gactor == actor and tag[0] == "now" and gtag[0] in ("ld",):
                continue
            return "buffer-race"
        return None


def _warpgroup(actor) -> tuple[int, int]:
    return actor.cta, actor.warp // WARPGROUP_WARPS


def _bars(op) -> list[Bar]:
    if op.kind in ("init", "arrive", "expect_tx", "wait"):
        return [op.args[0]]
    if op.kind == "tma_load":
        return list(op.args[1])
    if op.kind == "umma_commit":
        return list(op.args[0])
    return []


def _sync_key(op) -> tuple | None:
    if op.kind == "nbar":
        return ("nbar", op.args[0], op.args[1])
    if op.kind == "warp_sync":
        return ("warp", op.args[0], op.args[1])
    return None


def _ctas(op) -> set[int]:
    out: set[int] = set()
    for b in _bars(op):
        out.add(b.cta)
    for x in op.args:
        for r in x if isinstance(x, tuple) else (x,):
            if isinstance(r, Res) and r.cta >= 0:
                out.add(r.cta)
    return out


def _item_ctas(item: tuple) -> set[int]:
    kind, _, payload = item
    if kind == "tx":
        return {payload[0].cta}
    if kind == "arrive":
        return {payload.cta}
    if kind == "cc":
        return {b.cta for b in payload}
    return set()


def _args(op) -> str:
    parts = []
    for x in op.args:
        if isinstance(x, (Bar, Res)):
            parts.append(x.show())
        elif isinstance(x, tuple) and x and isinstance(x[0], (Bar, Res)):
            parts.append(",".join(y.show() for y in x))
        else:
            parts.append(str(x))
    return " ".join(parts)


def explore(model: KernelModel, max_states: int = 300_000) -> Outcome:
    """Explore every interleaving of a one-launch model (raises TooLarge past the budget)."""
    return Explorer(model, max_states).run()
