"""The checker: every interleaving of the actors' traces, explored as one partial order.

Method. The actors' traces are fixed (control flow never depends on a barrier's outcome except
spin loops, which are blocking waits in the trace). Under *exact* barrier semantics (a wait for
phase n passes once phase n has completed; a wait's phase n is the next phase of the waited
parity after the last phase this actor observed on that barrier) every enabling condition is
monotone and every transition commutes, so all interleavings are linearizations of one partial
order of events, provided every arrival, tx count and named-barrier arrival is credited to the
same phase in every interleaving. The checker

1. runs one canonical interleaving (actors greedily, asynchronous completions - TMA byte
   delivery, tcgen05.commit arrivals, bulk-store reads, CLC answers - as late as possible),
   building the happens-before DAG of all events (each event's ancestors as a bitset);
2. proves that credit assignment is interleaving-independent: everything credited to phase j
   of a barrier happens after phase j-1 completed, in the DAG (else: "phase nondeterminism");
3. proves the PTX parity wait equals the exact wait in every interleaving: the phase before the
   awaited one completes before the waiter can reach the wait (else a stale phase two
   completions back satisfies it: "phase aliasing"), and the phase after it cannot complete
   before the wait (else the waiter misses its phase);
4. checks every property on the DAG, hence for all interleavings: no deadlock (the canonical run
   ends with every actor done); no two accesses to a buffer (SMEM stage, TMEM accumulator slot,
   workspace slot, C sub-tile, CLC answer) with a write among them unordered - an access spans
   from its issue to its completion (TMA delivery, the commit after an MMA, wgmma.wait_group,
   tcgen05.wait::ld, bulk wait_group.read; a wgmma group is one operation of its warpgroup, so
   a warp's wait_group retires it only once every warp of the warpgroup has committed it);
   generic writes read by the async proxy are fenced
   (fence.proxy.async); no CTA exits before every arrival, delivery, MMA and remote access that
   targets its shared memory; TMEM is deallocated after its last access; every phase that was
   begun completes; global flags are handed over release -> acquire and are 0 again at exit.

A violation carries a witness: the events involved and a schedule of the relevant actors.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from codegen.plan_common import plural
from codegen.verify.model import (
    WARPGROUP_WARPS,
    Actor,
    Bar,
    KernelModel,
    LaunchModel,
    Op,
    Res,
    Word,
)

CLC_RESPONSE_BYTES = 16  # clusterlaunchcontrol.try_cancel writes a 16-byte answer (PTX ISA)


@dataclass
class Violation:
    prop: str
    message: str
    trace: list[str] = field(default_factory=list)

    def render(self, limit: int = 14) -> str:
        lines = [f"[{self.prop}] {self.message}"]
        tail = self.trace[-limit:]
        if len(self.trace) > limit:
            lines.append(f"  ... {len(self.trace) - limit} earlier events")
        lines += [f"  {t}" for t in tail]
        return "\n".join(lines)


@dataclass
class Result:
    events: int
    violations: list[Violation]
    data_order: list = field(default_factory=list)  # (launch, actor, data op), canonical order

    @property
    def ok(self) -> bool:
        return not self.violations


class Token:
    """The event id of an asynchronous completion, once it has happened."""

    __slots__ = ("ev",)

    def __init__(self) -> None:
        self.ev: int | None = None


@dataclass
class Access:
    res: Res
    write: bool
    proxy: str  # "generic" | "async"
    kind: str  # op kind
    actor: int  # actor index (the issuer for async accesses)
    start: int
    end: Token | int | None  # None: open (never completes unless set later)
    text: str

    def end_ev(self) -> int | None:
        return self.end.ev if isinstance(self.end, Token) else self.end


@dataclass
class BarState:
    count: int | None = None
    init_ev: int | None = None
    pending: int = 0
    tx: int = 0
    contrib: list[int] = field(default_factory=list)
    completions: list[int] = field(default_factory=list)


@dataclass
class SyncState:
    """A named barrier (or warp / cluster barrier): generations of arrivals."""

    expected: int | None = None
    arrived: dict[int, int] = field(default_factory=dict)  # generation -> threads
    events: dict[int, list[int]] = field(default_factory=dict)
    completions: list[int] = field(default_factory=list)


@dataclass
class Async:
    kind: str
    preds: list[int]
    after: list[Token]
    token: Token
    text: str
    payload: Any = None


@dataclass
class ActorState:
    actor: Actor
    index: int
    pc: int = 0
    last_ev: int | None = None
    release_ev: int | None = None
    done: bool = False
    observed: dict[Bar, int] = field(default_factory=dict)
    sync_pending: tuple[Any, int, int] | None = None  # (key, generation, arrival event)
    wait_phase: int | None = None  # the phase the blocked wait at pc is for
    blocked_on: BarState | None = None  # the barrier of that wait, while it is blocked
    cluster_gen: int = 0
    umma_open: list[Access] = field(default_factory=list)
    cc_prev: Token | None = None
    wg_open: list[Access] = field(default_factory=list)
    wg_commits: int = 0  # wgmma groups this warp has committed
    ld_open: list[Access] = field(default_factory=list)
    bulk_open: list[Token] = field(default_factory=list)
    bulk_groups: list[list[Token]] = field(default_factory=list)
    fences: list[int] = field(default_factory=list)
    # release events wider than the CTA: cluster-scope arrives, cluster barrier arrives,
    # st.release.gpu (what makes this actor's earlier writes visible to another CTA)
    wide_releases: list[int] = field(default_factory=list)

    @property
    def op(self) -> Op:
        return self.actor.ops[self.pc]


class Checker:
    def __init__(self, model: KernelModel):
        self.model = model
        self.anc: list[int] = []
        self.text: list[str] = []
        self.actor_of: list[int | None] = []
        self.violations: list[Violation] = []
        self._seen: set[tuple[str, str]] = set()
        self.mem: dict[Word, int] = {}
        self.stores: dict[Word, list[tuple[int, int, str]]] = {}
        # (event, word, store index, op, value) of every flag spin
        self.awaits: list[tuple[int, Word, int, str, int]] = []
        self.issue_of: dict[int, int] = {}  # asynchronous event -> the op event that issued it
        # the data ops (codegen.verify.numeric) in the canonical run's order: (launch, actor, op)
        self.data_order: list[tuple[int, int, Op]] = []
        self.launch_no = -1
        self._handlers: dict[str, Any] = {}  # op kind -> bound op_* method

    # -- events -------------------------------------------------------------------------------

    def event(self, preds: Iterable[int | None], text: str, actor: int | None = None) -> int:
        a = 0
        for p in preds:
            if p is not None:
                a |= self.anc[p] | (1 << p)
        self.anc.append(a)
        self.text.append(text)
        self.actor_of.append(actor)
        return len(self.anc) - 1

    def hb(self, a: int | None, b: int | None) -> bool:
        """a happens before (or is) b."""
        if a is None or b is None:
            return False
        return a == b or bool((self.anc[b] >> a) & 1)

    def violate(
        self, prop: str, message: str, trace: list[str] | None = None, key: str | None = None
    ) -> None:
        k = (prop, key or message)
        if k in self._seen or len(self.violations) >= 20:
            return
        self._seen.add(k)
        self.violations.append(Violation(prop, message, trace or []))

    def witness(
        self,
        *targets: int | None,
        focus: Iterable[int] = (),
        mention: Iterable[str] = (),
        exclude: int | None = None,
        limit: int = 14,
    ) -> list[str]:
        """A schedule reaching the target events: their ancestors in a topological order (the
        canonical run's), restricted to the focus actors' events and to the asynchronous or
        barrier-completion events that mention one of `mention`; without `exclude` and what
        depends on it. Most recent last."""
        evs = 0
        for t in targets:
            if t is not None:
                evs |= self.anc[t] | (1 << t)
        focus = set(focus)
        mention = tuple(mention)
        out = []
        i = 0
        e = evs
        while e:
            if e & 1 and not (exclude is not None and self.hb(exclude, i)):
                who = self.actor_of[i]
                text = self.text[i]
                if (
                    who in focus
                    or i in targets
                    or (who is None and any(m in text for m in mention))
                ):
                    out.append(text)
            e >>= 1
            i += 1
        return out[-limit:]

    # -- run ----------------------------------------------------------------------------------

    def run(self) -> Result:
        boundary: int | None = None
        for launch in self.model.launches:
            boundary = self.run_launch(launch, boundary)
            if boundary is None:
                break
        if boundary is not None:
            for word, value in sorted(self.mem.items()):
                if value != 0:
                    last = self.stores[word][-1][0]
                    self.violate(
                        "flag-reset",
                        f"global flag {word.show()} is left at {value} after the launch (the next launch expects 0)",
                        [self.text[last]],
                    )
        self.check_awaits()
        return Result(len(self.anc), self.violations, self.data_order)

    def run_launch(self, launch: LaunchModel, boundary: int | None) -> int | None:
        self.launch = launch
        self.launch_no += 1
        self.bars: dict[Bar, BarState] = {}
        self.syncs: dict[Any, SyncState] = {}
        self.accesses: list[Access] = []
        self.queue: list[Async] = []
        self.deallocs: list[tuple[int, int]] = []
        self.signals: list[tuple[int, Bar]] = []
        self.waits: list[tuple[int, Bar, int, int]] = []  # (event, bar, phase, actor)
        self.gdc_waits: list[int] = []  # griddepcontrol.wait events
        self.global_evs: list[int] = []  # TMA loads / stores, flag and workspace accesses
        self.states = [
            ActorState(a, i, last_ev=boundary, release_ev=boundary)
            for i, a in enumerate(launch.actors)
        ]
        self.base = len(self.anc)
        # the warps of each (CTA, warpgroup) that issue wgmma, and each group's commit events
        self.wg_warps: dict[tuple[int, int], int] = {}
        for a in launch.actors:
            if any(op.kind == "wgmma_commit" for op in a.ops):
                key = (a.cta, a.warp // WARPGROUP_WARPS)
                self.wg_warps[key] = self.wg_warps.get(key, 0) + 1
        self.wg_commit_evs: dict[tuple[int, int, int], list[int]] = {}
        self.wg_reads: dict[tuple[int, int, int], list[Access]] = {}
        self.wg_done: dict[tuple[int, int, int], int] = {}
        if not launch.full_grid and any(
            op.kind in ("gstore", "await") for a in launch.actors for op in a.ops
        ):
            self.violate(
                "not-modelled",
                f"{launch.kernel}: global flags with only {len(launch.ctas)} of the grid's CTAs modelled",
            )
            return None
        while True:
            progressed = False
            for st in self.states:
                blocked = st.blocked_on
                if blocked is not None:
                    # blocked on an mbarrier wait whose phase has not completed: stepping it
                    # again would return False with no effect (op_wait), so skip it
                    if len(blocked.completions) <= st.wait_phase:
                        continue
                    st.blocked_on = None
                while not st.done and self.step(st):
                    progressed = True
            if progressed:
                continue
            fired = False
            for i, item in enumerate(self.queue):
                if all(t.ev is not None for t in item.after):
                    self.queue.pop(i)
                    self.fire(item)
                    fired = True
                    break
            if not fired:
                break
        stuck = [st for st in self.states if not st.done]
        if stuck:
            self.report_deadlock(stuck)
            return None
        self.finish_launch()
        finals = [st.last_ev for st in self.states] + list(range(self.base, len(self.anc)))
        return self.event(finals, f"-- {launch.kernel} complete (kernel boundary) --")

    # -- actor steps ----------------------------------------------------------------------------

    def step(self, st: ActorState) -> bool:
        if st.pc >= len(st.actor.ops):
            self.finish_actor(st)
            return False
        op = st.op
        if op.kind == "data":
            # not part of the protocol: only where it falls in the canonical run matters
            self.data_order.append((self.launch_no, st.index, op))
            st.pc += 1
            if st.pc >= len(st.actor.ops):
                self.finish_actor(st)
            return True
        handler = self._handlers.get(op.kind)
        if handler is None:
            handler = self._handlers[op.kind] = getattr(self, f"op_{op.kind}")
        if handler(st, op) is False:
            return False
        st.pc += 1
        if st.pc >= len(st.actor.ops):
            self.finish_actor(st)
        return True

    def desc(self, st: ActorState, op: Op, what: str) -> str:
        return f"{st.actor.name}: {what} (line {op.line})"

    def own(self, st: ActorState, op: Op, what: str, extra: Iterable[int | None] = ()) -> int:
        ev = self.event([st.last_ev, *extra], self.desc(st, op, what), st.index)
        st.last_ev = ev
        st.release_ev = ev
        return ev

    def finish_actor(self, st: ActorState) -> None:
        if st.done:
            return
        st.done = True
        for a in st.ld_open:
            a.end = st.release_ev
        st.ld_open = []

    def here(self, st: ActorState) -> int:
        return st.actor.cta

    # barrier credit

    def credit(self, bar: Bar, ev: int, arrive: int = 0, tx: int = 0) -> None:
        b = self.bars.get(bar)
        if b is None or b.count is None:
            self.violate(
                "uninitialized-barrier",
                f"{self.text[ev]} signals {bar.show()} before it is initialized",
                self.witness(ev),
                key=str(bar),
            )
            b = self.bars.setdefault(bar, BarState())
            return
        prev = b.completions[-1] if b.completions else b.init_ev
        if not self.hb(prev, ev):
            j = len(b.completions)
            what = f"phase {j - 1} of {bar.show()}" if j else f"the init of {bar.show()}"
            self.violate(
                "phase-nondeterminism",
                f"{self.text[ev]} is credited to phase {j} of {bar.show()} but does not wait for "
                f"{what}: in another interleaving it lands in an earlier phase",
                self.witness(ev, prev),
                key=f"{bar.name}:{self.text[ev]}",
            )
        b.pending -= arrive
        b.tx += tx
        b.contrib.append(ev)
        self.signals.append((ev, bar))
        if b.pending < 0:
            self.violate(
                "over-arrival",
                f"{self.text[ev]}: phase {len(b.completions)} of {bar.show()} gets more arrivals than its count {b.count}",
                self.witness(ev),
                key=str(bar),
            )
        if b.pending <= 0 and b.tx == 0:
            j = len(b.completions)
            c = self.event(b.contrib, f"   {bar.show()} phase {j} completes")
            b.completions.append(c)
            b.pending = b.count + min(b.pending, 0)
            b.contrib = []

    def op_init(self, st: ActorState, op: Op) -> None:
        bar, count = op.args
        ev = self.own(st, op, f"init {bar.show(self.here(st))} count {count}")
        b = self.bars.setdefault(bar, BarState())
        if b.count is not None:
            self.violate("reinit", f"{self.text[ev]}: {bar.show()} initialized twice", key=str(bar))
        b.count, b.init_ev, b.pending, b.tx = count, ev, count, 0

    def op_arrive(self, st: ActorState, op: Op) -> None:
        bar, count, tx, *rest = op.args
        scope = rest[0] if rest else "cta"  # hand-built models may leave the scope out
        n, t = count * op.threads, tx * op.threads
        what = (
            f"arrive {bar.show(self.here(st))}"
            + (f" x{n}" if n != 1 else "")
            + (f" expect_tx {t}" if t else "")
            + (" (cluster scope)" if scope == "cluster" else "")
        )
        ev = self.own(st, op, what)
        if scope == "cluster":
            st.wide_releases.append(ev)
        self.credit(bar, ev, arrive=n, tx=t)

    def op_gdc_wait(self, st: ActorState, op: Op) -> None:
        self.gdc_waits.append(self.own(st, op, "griddepcontrol.wait"))

    def op_expect_tx(self, st: ActorState, op: Op) -> None:
        bar, tx = op.args
        ev = self.own(st, op, f"expect_tx {bar.show(self.here(st))} {tx * op.threads}")
        self.credit(bar, ev, tx=tx * op.threads)

    def awaited(self, st: ActorState, bar: Bar, parity: int) -> int | None:
        """The phase a wait is for, fixed when the actor first reaches it in the canonical run:
        PTX try_wait.parity P passes iff the current phase's parity differs from P, i.e. it is
        satisfied by the last completed phase if that has parity P, else by the current one.
        `check_behind` and the end-of-launch ahead check prove that every interleaving picks
        the same phase."""
        if st.wait_phase is not None:
            return st.wait_phase
        b = self.bars.get(bar)
        if b is None or b.count is None:
            return None
        c = len(b.completions)
        st.wait_phase = c - 1 if c % 2 != parity else c
        return st.wait_phase

    def op_wait(self, st: ActorState, op: Op) -> bool:
        bar, parity = op.args
        n = self.awaited(st, bar, parity)
        b = self.bars.get(bar)
        if n is None or b is None or n >= len(b.completions):
            if n is not None and b is not None:
                st.blocked_on = b
            return False
        st.wait_phase = None
        src = b.completions[n] if n >= 0 else b.init_ev
        self.check_behind(st, op, bar, n, parity)
        last = st.observed.get(bar)
        ev = self.own(st, op, f"wait {bar.show(self.here(st))} parity {parity} (phase {n})", [src])
        if last is not None and n <= last:
            self.violate(
                "phase-aliasing",
                f"{self.text[ev]} is satisfied by phase {n}, which this actor already waited for "
                f"(phase {last}): a stale phase satisfies the parity",
                self.witness(ev, focus=[st.index]),
                key=f"stale:{bar.name}:{op.line}:{st.actor.name}",
            )
        st.observed[bar] = n
        self.waits.append((ev, bar, n, st.index))
        return True

    def check_behind(self, st: ActorState, op: Op, bar: Bar, n: int, parity: int) -> None:
        """The actor cannot reach the wait before phase n - 1 completes (else phase n - 2,
        of the same parity, would satisfy it)."""
        b = self.bars.get(bar)
        if b is None:
            return
        need = (
            b.init_ev if n <= 0 else (b.completions[n - 1] if n - 1 < len(b.completions) else None)
        )
        if need is not None and self.hb(need, st.last_ev):
            return
        stale = f"phase {n - 2}" if n >= 2 else "the barrier's initial state"
        self.violate(
            "phase-aliasing",
            f"{st.actor.name} waits on {bar.show()} with parity {parity} (line {op.line}) for phase {n}, "
            f"but can reach the wait before phase {n - 1} completes: {stale} then satisfies it",
            self.witness(st.last_ev, need, focus=[st.index]),
            key=f"{bar.name}:{op.line}:{st.actor.name}",
        )

    # named barriers, warp syncs, cluster barriers

    def sync_arrive(
        self,
        st: ActorState,
        op: Op,
        key: Any,
        expected: int,
        threads: int,
        what: str,
        gen: int | None = None,
    ) -> tuple[int, int]:
        s = self.syncs.setdefault(key, SyncState())
        if s.expected is None:
            s.expected = expected
        elif s.expected != expected:
            self.violate(
                "barrier-count",
                f"{self.desc(st, op, what)}: expects {expected} threads, others {s.expected}",
                key=str(key),
            )
        g = len(s.completions) if gen is None else gen
        while g in s.arrived and s.arrived[g] >= s.expected:
            g += 1
        ev = self.own(st, op, f"{what} (generation {g})")
        if g > 0 and g - 1 < len(s.completions) and not self.hb(s.completions[g - 1], ev):
            self.violate(
                "phase-nondeterminism", f"{self.text[ev]} may join generation {g - 1}", key=str(key)
            )
        s.arrived[g] = s.arrived.get(g, 0) + threads
        s.events.setdefault(g, []).append(ev)
        if s.arrived[g] > s.expected:
            self.violate(
                "over-arrival",
                f"{self.text[ev]}: more than {s.expected} threads arrive",
                key=str(key),
            )
        self.complete_syncs(key, s, what)
        return g, ev

    def complete_syncs(self, key: Any, s: SyncState, what: str) -> None:
        while True:
            g = len(s.completions)
            if s.expected is None or s.arrived.get(g, 0) < s.expected:
                return
            s.completions.append(
                self.event(s.events[g], f"   {_sync_name(key)} generation {g} completes")
            )

    def blocking_sync(self, st: ActorState, op: Op, key: Any, expected: int, what: str) -> bool:
        if st.sync_pending is None:
            g, ev = self.sync_arrive(st, op, key, expected, op.threads, what)
            st.sync_pending = (key, g, ev)
        key, g, _ = st.sync_pending
        s = self.syncs[key]
        if g >= len(s.completions):
            return False
        st.sync_pending = None
        ev = self.event(
            [st.last_ev, s.completions[g]], self.desc(st, op, f"passes {what}"), st.index
        )
        st.last_ev = ev
        return True

    def op_nbar(self, st: ActorState, op: Op) -> bool:
        cta, bid, n, wait = op.args
        what = f"bar.sync {bid} ({n} threads)" if wait else f"bar.arrive {bid} ({n} threads)"
        if not wait:
            self.sync_arrive(st, op, ("nbar", cta, bid), n, op.threads, what)
            return True
        return self.blocking_sync(st, op, ("nbar", cta, bid), n, what)

    def op_warp_sync(self, st: ActorState, op: Op) -> bool:
        cta, warp = op.args
        return self.blocking_sync(st, op, ("warp", cta, warp), 32, f"warp sync w{warp}")

    def cluster_threads(self, cluster: int) -> int:
        ctas = [c for c in self.launch.ctas if self.launch.cluster_of(c) == cluster]
        cx, cy, cz = self.launch.cluster
        if len(ctas) != cx * cy * cz:
            raise RuntimeError("cluster barrier with part of the cluster modelled")
        return self.launch.block * len(ctas)

    def op_cluster_arrive(self, st: ActorState, op: Op) -> None:
        (cluster,) = op.args
        key = ("cluster", cluster)
        self.sync_arrive(
            st,
            op,
            key,
            self.cluster_threads(cluster),
            op.threads,
            "cluster arrive",
            gen=st.cluster_gen,
        )
        st.cluster_gen += 1
        if st.last_ev is not None:
            st.wide_releases.append(st.last_ev)  # barrier.cluster.arrive: release, cluster scope

    def op_cluster_wait(self, st: ActorState, op: Op) -> bool:
        (cluster,) = op.args
        s = self.syncs.get(("cluster", cluster))
        g = st.cluster_gen - 1
        if s is None or g < 0 or g >= len(s.completions):
            return False
        self.own(st, op, f"cluster wait (generation {g})", [s.completions[g]])
        return True

    # asynchronous copies and MMAs

    def spawn(
        self,
        kind: str,
        preds: list[int],
        text: str,
        after: list[Token] | None = None,
        payload: Any = None,
    ) -> Token:
        tok = Token()
        self.queue.append(Async(kind, preds, after or [], tok, text, payload))
        return tok

    def fire(self, item: Async) -> None:
        preds = list(item.preds) + [t.ev for t in item.after]
        ev = self.event(preds, item.text)
        item.token.ev = ev
        first = item.preds[0] if item.preds else item.after[0].ev
        self.issue_of[ev] = self.issue_of.get(first, first) if first is not None else ev
        if item.kind in ("tx", "clc"):
            bar, nbytes = item.payload
            self.credit(bar, ev, tx=-nbytes)
        elif item.kind == "arrive":
            self.credit(item.payload, ev, arrive=1)

    def access(
        self,
        st: ActorState,
        res: Res,
        write: bool,
        proxy: str,
        kind: str,
        start: int,
        end: Token | int | None,
        what: str,
    ) -> Access:
        a = Access(res, write, proxy, kind, st.index, start, end, what)
        self.accesses.append(a)
        return a

    def op_tma_load(self, st: ActorState, op: Op) -> None:
        dests, bars, nbytes = op.args
        here = self.here(st)
        ev = self.own(
            st,
            op,
            f"TMA load {nbytes} B -> "
            + ", ".join(f"{r.show(here)} on {b.show(here)}" for r, b in zip(dests, bars)),
        )
        self.global_evs.append(ev)
        for res, bar in zip(dests, bars):
            tok = self.spawn(
                "tx",
                [ev],
                f"   TMA bytes land in {res.show()}: complete_tx {nbytes} on {bar.show()} (from {st.actor.name} line {op.line})",
                payload=(bar, nbytes),
            )
            self.access(st, res, True, "async", "tma_load", ev, tok, self.text[ev])

    def op_tma_store(self, st: ActorState, op: Op) -> None:
        (res,) = op.args
        ev = self.own(st, op, f"TMA store from {res.show(self.here(st))}")
        self.global_evs.append(ev)
        tok = self.spawn(
            "store",
            [ev],
            f"   TMA store finished reading {res.show()} (from {st.actor.name} line {op.line})",
        )
        self.access(st, res, False, "async", "tma_store", ev, tok, self.text[ev])
        st.bulk_open.append(tok)

    def op_bulk_commit(self, st: ActorState, op: Op) -> None:
        self.own(st, op, "bulk commit_group")
        st.bulk_groups.append(st.bulk_open)
        st.bulk_open = []

    def op_bulk_wait(self, st: ActorState, op: Op) -> bool:
        (n,) = op.args
        retire = st.bulk_groups[: len(st.bulk_groups) - n] if n < len(st.bulk_groups) else []
        toks = [t for g in retire for t in g]
        if any(t.ev is None for t in toks):
            return False
        self.own(st, op, f"bulk wait_group.read {n}", [t.ev for t in toks])
        st.bulk_groups = st.bulk_groups[len(retire) :]
        return True

    def op_umma(self, st: ActorState, op: Op) -> None:
        reads, writes = op.args
        here = self.here(st)
        if (
            st.umma_open
            and st.umma_open[-1].text.startswith(f"{st.actor.name}: MMA")
            and self._same_mma(st, reads, writes)
        ):
            return
        ev = self.own(
            st,
            op,
            "MMA reads "
            + ", ".join(r.show(here) for r in reads)
            + " writes "
            + ", ".join(w.show(here) for w in writes),
        )
        for r in reads:
            st.umma_open.append(self.access(st, r, False, "async", "umma", ev, None, self.text[ev]))
        for w in writes:
            st.umma_open.append(self.access(st, w, True, "async", "umma", ev, None, self.text[ev]))

    def _same_mma(self, st: ActorState, reads: tuple, writes: tuple) -> bool:
        n = len(reads) + len(writes)
        tail = st.umma_open[-n:]
        return len(tail) == n and [a.res for a in tail] == [*reads, *writes]

    def op_umma_commit(self, st: ActorState, op: Op) -> None:
        (bars,) = op.args
        here = self.here(st)
        ev = self.own(st, op, "tcgen05.commit -> " + ", ".join(b.show(here) for b in bars))
        cc = self.spawn(
            "cc",
            [ev],
            f"   MMAs before {st.actor.name} line {op.line} complete",
            after=[st.cc_prev] if st.cc_prev else [],
        )
        for a in st.umma_open:
            a.end = cc
        st.umma_open = []
        st.cc_prev = cc
        for bar in bars:
            self.spawn(
                "arrive",
                [],
                f"   tcgen05.commit arrives on {bar.show()} (from {st.actor.name} line {op.line})",
                after=[cc],
                payload=bar,
            )

    def op_wgmma(self, st: ActorState, op: Op) -> None:
        (reads,) = op.args
        ev = self.own(st, op, "wgmma reads " + ", ".join(r.show(self.here(st)) for r in reads))
        for r in reads:
            st.wg_open.append(self.access(st, r, False, "async", "wgmma", ev, None, self.text[ev]))

    def op_mma_sync(self, st: ActorState, op: Op) -> None:
        # a warp-level mma.sync: registers in and out, no shared resource
        self.own(st, op, "mma.sync")

    def wg_key(self, st: ActorState) -> tuple[int, int]:
        return st.actor.cta, st.actor.warp // WARPGROUP_WARPS

    def op_wgmma_commit(self, st: ActorState, op: Op) -> None:
        ev = self.own(st, op, "wgmma commit_group")
        group = (*self.wg_key(st), st.wg_commits)
        self.wg_commit_evs.setdefault(group, []).append(ev)
        self.wg_reads.setdefault(group, []).extend(st.wg_open)
        st.wg_commits += 1
        st.wg_open = []

    def wg_complete(self, group: tuple[int, int, int]) -> int:
        """The completion of a warpgroup's wgmma group (after every warp of the warpgroup has
        committed it, and after the group before it): every warp's reads in it end there."""
        if group not in self.wg_done:
            cta, wg, g = group
            before = self.wg_done.get((cta, wg, g - 1))
            ev = self.event(
                [*self.wg_commit_evs[group], before],
                f"   wgmma group {g} of warpgroup {wg}@cta{cta} completes",
            )
            self.wg_done[group] = ev
            for a in self.wg_reads.get(group, []):
                a.end = ev
        return self.wg_done[group]

    def op_wgmma_wait(self, st: ActorState, op: Op) -> bool:
        (n,) = op.args
        # the wgmma of a group are one warpgroup-wide operation: the group runs once every warp
        # of the warpgroup has committed it, so a wait that retires it can pass only then
        cta, wg = self.wg_key(st)
        newest = st.wg_commits - n - 1
        if (
            newest >= 0
            and len(self.wg_commit_evs.get((cta, wg, newest), [])) < self.wg_warps[(cta, wg)]
        ):
            return False
        done = [self.wg_complete((cta, wg, g)) for g in range(newest + 1)]
        self.own(st, op, f"wgmma wait_group {n}", done[-1:])
        return True

    def op_tmem_ld(self, st: ActorState, op: Op) -> None:
        (res,) = op.args
        ev = self.own(st, op, f"tcgen05.ld {res.show(self.here(st))}")
        st.ld_open.append(self.access(st, res, False, "async", "tmem_ld", ev, None, self.text[ev]))

    def op_tmem_wait_ld(self, st: ActorState, op: Op) -> None:
        ev = self.own(st, op, "tcgen05.wait::ld")
        for a in st.ld_open:
            a.end = ev
        st.ld_open = []

    def op_read(self, st: ActorState, op: Op) -> None:
        (res,) = op.args
        ev = self.own(st, op, f"load {res.show(self.here(st))}")
        if res.space == "gmem":
            self.global_evs.append(ev)
        self.access(st, res, False, "generic", "read", ev, ev, self.text[ev])

    def op_write(self, st: ActorState, op: Op) -> None:
        (res,) = op.args
        ev = self.own(st, op, f"store {res.show(self.here(st))}")
        if res.space == "gmem":
            self.global_evs.append(ev)
        self.access(st, res, True, "generic", "write", ev, ev, self.text[ev])

    def op_gaccess(self, st: ActorState, op: Op) -> None:
        """A thread's plain load or store of a global tensor (C read for beta, a bias vector,
        D stored by a direct epilogue): only the PDL order is checked on it."""
        name, what = op.args
        ev = self.own(st, op, f"global {'store to' if what == 'write' else 'load of'} {name}")
        self.global_evs.append(ev)

    def op_fence_proxy(self, st: ActorState, op: Op) -> None:
        (kind,) = op.args
        ev = self.own(st, op, f"fence.proxy.{kind}")
        if kind.startswith("async"):
            st.fences.append(ev)

    def op_fence(self, st: ActorState, op: Op) -> None:
        self.own(st, op, f"{op.args[0]} (not modelled)")

    def op_tmem_alloc(self, st: ActorState, op: Op) -> None:
        self.own(st, op, "tcgen05.alloc")

    def op_tmem_dealloc(self, st: ActorState, op: Op) -> None:
        ev = self.own(st, op, "tcgen05.dealloc")
        self.deallocs.append((op.args[0], ev))

    def op_clc_query(self, st: ActorState, op: Op) -> None:
        bar, res = op.args
        ev = self.own(
            st,
            op,
            f"clusterlaunchcontrol.try_cancel -> {res.show(self.here(st))} on {bar.show(self.here(st))}",
        )
        tok = self.spawn(
            "clc",
            [ev],
            f"   CLC answer lands in {res.show()}: complete_tx {CLC_RESPONSE_BYTES} on {bar.show()}",
            payload=(bar, CLC_RESPONSE_BYTES),
        )
        self.access(st, res, True, "async", "clc", ev, tok, self.text[ev])

    def op_clc_read(self, st: ActorState, op: Op) -> None:
        (res,) = op.args
        ev = self.own(st, op, f"read CLC answer {res.show(self.here(st))}")
        self.access(st, res, False, "generic", "read", ev, ev, self.text[ev])

    # global flags

    def op_gstore(self, st: ActorState, op: Op) -> None:
        word, value, sem = op.args
        hist = self.stores.setdefault(word, [])
        ev = self.own(st, op, f"st.{sem} {word.show()} = {value}")
        if hist and not self.hb(hist[-1][0], ev):
            self.violate(
                "flag-race",
                f"{self.text[ev]} and {self.text[hist[-1][0]]} store to one flag unordered",
                key=str(word),
            )
        hist.append((ev, value, sem))
        self.mem[word] = value
        self.global_evs.append(ev)
        if sem == "release":
            st.wide_releases.append(ev)

    def op_await(self, st: ActorState, op: Op) -> bool:
        word, cmp, value, sem = op.args
        cur = self.mem.get(word, 0)
        if not _compare(cur, cmp, value):
            return False
        hist = self.stores.get(word, [])
        src = hist[-1][0] if hist else None
        ev = self.own(st, op, f"spin ld.{sem} {word.show()} until {cmp} {value}", [src])
        self.global_evs.append(ev)
        if hist:
            s_ev, _, s_sem = hist[-1]
            if s_sem != "release" or sem != "acquire":
                self.violate(
                    "flag-handoff",
                    f"{self.text[ev]} takes {self.text[s_ev]}: a flag hand-over needs st.release / ld.acquire",
                    key=str(word),
                )
            before = hist[-2][1] if len(hist) >= 2 else 0
            if _compare(before, cmp, value) and not self.hb(s_ev, st.last_ev):
                self.violate(
                    "flag-handoff",
                    f"{self.text[ev]} can pass on the flag's earlier value {before}",
                    key=str(word),
                )
        self.awaits.append((ev, word, len(hist) - 1, cmp, value))
        return True

    def check_awaits(self) -> None:
        for ev, word, i, cmp, value in self.awaits:
            hist = self.stores.get(word, [])
            if i + 1 < len(hist):
                nxt, v, _ = hist[i + 1]
                if not _compare(v, cmp, value) and not self.hb(ev, nxt):
                    self.violate(
                        "flag-handoff",
                        f"{self.text[nxt]} can overwrite the flag before {self.text[ev]} sees it",
                        key=str(word),
                    )

    # -- end of a launch --------------------------------------------------------------------------

    def finish_launch(self) -> None:
        for bar, b in sorted(self.bars.items()):
            if b.count is not None and (b.contrib or b.tx != 0):
                self.violate(
                    "incomplete-phase",
                    f"phase {len(b.completions)} of {bar.show()} is left incomplete at exit: "
                    f"{b.count - b.pending} of {b.count} arrivals, {b.tx} tx bytes outstanding",
                    [self.text[e] for e in b.contrib[-6:]],
                    key=str(bar),
                )
        for ev, bar, n, who in self.waits:
            b = self.bars[bar]
            if n + 1 < len(b.completions) and not self.hb(ev, b.completions[n + 1]):
                self.violate(
                    "phase-aliasing",
                    f"{self.text[ev]}: phase {n + 1} of {bar.show()} can complete before this wait, "
                    "which then misses its phase (the parity matches phase n + 2)",
                    self.witness(b.completions[n + 1], focus=[who]),
                    key=f"ahead:{bar.name}:{self.text[ev]}",
                )
        self.check_races()
        self.check_fences()
        self.check_scope()
        self.check_pdl()
        finals: dict[int, list[int]] = {}
        for st in self.states:
            mine = finals.setdefault(st.actor.cta, [])
            mine += [e for e in (st.release_ev, st.last_ev) if e is not None]
        self.check_exits(finals)
        for cta, dealloc in self.deallocs:
            for a in self.accesses:
                if a.res.cta == cta and a.res.space == "tmem":
                    end = a.end_ev()
                    if end is None or not self.hb(end, dealloc):
                        self.violate(
                            "tmem-dealloc",
                            f"{self.text[dealloc]} can free TMEM before {a.text} completes",
                            self.witness(
                                dealloc, a.start, focus=[a.actor, self.actor_of[dealloc] or 0]
                            ),
                            key=f"{cta}:{a.kind}",
                        )

    def ordered(self, a: Access, b: Access) -> bool:
        end = a.end_ev()
        return end is not None and self.hb(end, b.start)

    def check_races(self) -> None:
        by_root: dict[tuple, list[Access]] = {}
        for a in self.accesses:
            by_root.setdefault((a.res.cta, a.res.space, a.res.root), []).append(a)
        anc = self.anc
        for group in by_root.values():
            if not any(a.write for a in group):
                continue
            # candidate partners by slot (a whole-buffer access overlaps every slot), visited in
            # the group's order: the same pairs, in the same order, as all pairs of the group.
            # A read's partners are only the writes (two reads never race): the pairs skipped
            # are ones the test below would skip, so the reported pairs keep their order.
            by_slot: dict[int | None, list[int]] = {}
            by_slot_w: dict[int | None, list[int]] = {}
            for j, a in enumerate(group):
                by_slot.setdefault(a.res.slot, []).append(j)
                if a.write:
                    by_slot_w.setdefault(a.res.slot, []).append(j)
            everyone = list(range(len(group)))
            all_writes = [j for j, a in enumerate(group) if a.write]
            ends = [a.end_ev() for a in group]
            for i, a in enumerate(group):
                slots = by_slot if a.write else by_slot_w
                if a.res.slot is None:
                    pool = everyone if a.write else all_writes
                    later: list[int] = pool[bisect.bisect_right(pool, i) :]
                else:
                    same = slots.get(a.res.slot, [])
                    later = same[bisect.bisect_right(same, i) :]
                    wide = slots.get(None)
                    if wide:
                        later = sorted([*later, *wide[bisect.bisect_right(wide, i) :]])
                ea = ends[i]
                for j in later:
                    b = group[j]
                    if not a.res.overlaps(b.res):
                        continue
                    if a.proxy == "generic" and b.proxy == "generic":
                        if a.write and b.write or a.actor == b.actor:
                            continue
                        pa, pb = a.res.part, b.res.part
                        if pa and pb and pa[0] == pb[0] and not pa[1] & pb[1]:
                            continue  # one partitioning, disjoint threads: disjoint elements
                    if (
                        a.actor == b.actor
                        and a.kind == b.kind
                        and a.kind in ("umma", "wgmma", "tma_store")
                    ):
                        continue
                    # ordered(a, b) or ordered(b, a): one's end happens before (or is) the
                    # other's start
                    if ea is not None and (ea == b.start or (anc[b.start] >> ea) & 1):
                        continue
                    eb = ends[j]
                    if eb is not None and (eb == a.start or (anc[a.start] >> eb) & 1):
                        continue
                    self.report_race(a, b)

    def report_race(self, a: Access, b: Access) -> None:
        res = a.res if a.res.slot is not None else b.res
        first, second = (a, b) if a.start <= b.start else (b, a)
        end = first.end_ev()
        how = "never completes" if end is None else f"completes at: {self.text[end].strip()}"
        if first.write and second.write:
            kind = "overwritten while still being written"
        elif first.write:
            kind = (
                "read before the write landed"
                if second.proxy == "generic" or second.kind != "tma_load"
                else "written twice"
            )
        else:
            kind = "overwritten before its reader released it"
        key = f"{res.cta}:{res.root}:{first.kind}:{second.kind}"
        if ("buffer-race", key) in self._seen or len(self.violations) >= 20:
            return  # violate() would drop it: skip building its witness
        trace = self.witness(
            first.start,
            second.start,
            focus=[first.actor, second.actor],
            mention=[res.root],
            exclude=end,
        )
        trace.append(f"-> both in flight: [{second.text}] while [{first.text}] has not completed")
        self.violate(
            "buffer-race",
            f"{res.show()} {kind}: [{first.text}] and [{second.text}] are unordered; the first {how}",
            trace,
            key=key,
        )

    def check_fences(self) -> None:
        # a generic write and then an async-proxy read of the same SMEM (a TMA store of a C
        # sub-tile, an MMA operand) are ordered only by a fence.proxy.async of the writer
        for w, t in self.unfenced(
            lambda g: g.write, lambda t: t.kind in ("tma_store", "umma", "wgmma")
        ):
            self.violate(
                "proxy-fence",
                f"{t.text} reads {t.res.show()} through the async proxy after [{w.text}] "
                "without a fence.proxy.async by the writer in between",
                self.witness(t.start, focus=[w.actor, t.actor]),
                key=f"{t.res.root}:{w.actor}",
            )

        # the other direction: a generic access (the CLC answer read, a C sub-tile read) and then
        # an async-proxy write into the same SMEM (the next try_cancel, a TMA load) are ordered
        # only by a fence.proxy.async of the generic accessor between them
        for g, t in self.unfenced(lambda g: True, lambda t: t.write):
            self.violate(
                "proxy-fence",
                f"{t.text} writes {t.res.show()} through the async proxy after [{g.text}] "
                "without a fence.proxy.async by that thread in between",
                self.witness(t.start, focus=[g.actor, t.actor]),
                key=f"w:{t.res.root}:{g.actor}",
            )

    def unfenced(
        self, pick_generic: Callable[[Access], bool], pick_async: Callable[[Access], bool]
    ) -> Iterator[tuple[Access, Access]]:
        """The pairs (g, t) of a generic-proxy SMEM access g that `pick_generic` takes and an
        async-proxy SMEM access t that `pick_async` takes, of overlapping parts of one buffer,
        g happening before t with no fence.proxy.async by g's thread in between."""
        by_buffer: dict[tuple, list[Access]] = {}
        for a in self.accesses:
            if a.proxy == "generic" and a.res.space == "smem" and pick_generic(a):
                by_buffer.setdefault((a.res.cta, a.res.root), []).append(a)
        if not by_buffer:
            return
        for t in self.accesses:
            if t.proxy != "async" or t.res.space != "smem" or not pick_async(t):
                continue
            for g in by_buffer.get((t.res.cta, t.res.root), ()):
                if (
                    g.res.overlaps(t.res)
                    and self.hb(g.start, t.start)
                    and not self.fenced_between(g, t)
                ):
                    yield g, t

    def fenced_between(self, first: Access, then: Access) -> bool:
        """A fence.proxy.async by `first`'s thread after `first` that happens before `then`."""
        fences = self.states[first.actor].fences
        i = bisect.bisect_right(fences, first.start)
        return i < len(fences) and self.hb(fences[i], then.start)

    def check_scope(self) -> None:
        """Data handed to another CTA (a generic write read by a thread of another CTA, through
        DSMEM) is made visible by a release wider than the CTA: a cluster-scope arrive, a
        cluster barrier arrive or st.release.gpu by the writer after the write, ordered before
        the read. An mbarrier arrive has CTA scope unless it says otherwise (PTX)."""
        writes: dict[tuple, list[Access]] = {}
        for a in self.accesses:
            if a.proxy == "generic" and a.write and a.res.space == "smem":
                writes.setdefault((a.res.cta, a.res.root), []).append(a)
        for r in self.accesses:
            if r.proxy != "generic" or r.write or r.res.space != "smem":
                continue
            reader_cta = self.states[r.actor].actor.cta
            for w in writes.get((r.res.cta, r.res.root), ()):
                writer = self.states[w.actor]
                if writer.actor.cta == reader_cta or not w.res.overlaps(r.res):
                    continue
                if not self.hb(w.start, r.start):
                    continue
                rel = writer.wide_releases
                i = bisect.bisect_right(rel, w.start)
                if any(self.hb(e, r.start) for e in rel[i:]):
                    continue
                self.violate(
                    "scope",
                    f"[{r.text}] in CTA {reader_cta} reads what [{w.text}] wrote in CTA "
                    f"{writer.actor.cta}, ordered only by CTA-scope synchronization (the "
                    "hand-off needs a cluster-scope release)",
                    self.witness(r.start, focus=[w.actor, r.actor]),
                    key=f"{r.res.root}:{w.actor}",
                )

    def check_pdl(self) -> None:
        """A launch with programmatic stream serialization may start while the previous kernel
        runs: every global access (TMA load or store, flag, workspace; an L2 prefetch is only a
        hint and is not recorded) must come after a griddepcontrol.wait."""
        if not self.launch.pdl:
            return
        for ev in self.global_evs:
            if not any(self.hb(w, ev) for w in self.gdc_waits):
                who = self.actor_of[ev]
                self.violate(
                    "pdl-order",
                    f"{self.text[ev]} can run before griddepcontrol.wait: the previous kernel "
                    "may still be writing (programmatic dependent launch)",
                    self.witness(ev, focus=[who] if who is not None else []),
                    key=f"{who}",
                )

    def check_exits(self, finals: dict[int, list[int]]) -> None:
        # the events each CTA's exit waits for: the union of its actors' final events and
        # their ancestors (ev happens before some final event iff its bit is set)
        exit_anc: dict[int, int] = {}
        for cta, evs in finals.items():
            mask = 0
            for f in evs:
                mask |= self.anc[f] | (1 << f)
            exit_anc[cta] = mask

        def before_exit(ev: int | None, cta: int) -> bool:
            return ev is not None and bool((exit_anc.get(cta, 0) >> ev) & 1)

        def schedule(cta: int, pending: int, issue: int | None, what: str) -> list[str]:
            """The issue of what is pending, then every actor of the CTA finishing without it."""
            lines = [f"{self.text[issue]}  <- issues it"] if issue is not None else []
            last: dict[int, int] = {}
            for f in finals[cta]:
                who = self.actor_of[f]
                if who is not None and not self.hb(pending, f):
                    last[who] = max(last.get(who, f), f)
            lines += [self.text[f] for f in sorted(last.values())]
            return lines + [f"-> CTA {cta} exits; still pending: {what}"]

        for ev, text, bar in self._remote_signals():
            if bar.cta in finals and not before_exit(ev, bar.cta):
                self.violate(
                    "exit-pending",
                    f"CTA {bar.cta} can exit while [{text.strip()}] is still pending",
                    schedule(bar.cta, ev, self.issue_of.get(ev), text.strip()),
                    key=f"{bar.cta}:{bar.name}:{text.split('(from')[-1]}",
                )
        for a in self.accesses:
            cta = a.res.cta
            if cta < 0 or a.res.space not in ("smem", "tmem") or cta not in finals:
                continue
            if a.proxy == "generic" and self.states[a.actor].actor.cta == cta:
                continue
            end = a.end_ev()
            if not before_exit(end, cta):
                self.violate(
                    "exit-pending",
                    f"CTA {cta} can exit while [{a.text}] still accesses {a.res.show()}",
                    schedule(cta, end if end is not None else a.start, a.start, a.text),
                    key=f"{cta}:{a.res.root}:{a.kind}:{a.actor}",
                )

    def _remote_signals(self) -> list[tuple[int, str, Bar]]:
        """Every barrier signal of this launch: (event, text, barrier)."""
        return [(e, self.text[e], bar) for e, bar in self.signals]

    # -- deadlock ---------------------------------------------------------------------------------

    def report_deadlock(self, stuck: list[ActorState]) -> None:
        lines = []
        for st in stuck:
            op = st.op
            lines.append(
                f"{st.actor.name} blocked at line {op.line}: {self.blocked_reason(st, op)}"
            )
            if op.kind == "wait":
                bar, parity = op.args
                n = self.awaited(st, bar, parity)
                if n is not None:
                    self.check_behind(st, op, bar, n, parity)
        pending = [f"pending async: {a.text.strip()}" for a in self.queue]
        recent = [self.text[i] for i in range(max(self.base, len(self.text) - 8), len(self.text))]
        self.violate(
            "deadlock",
            f"{plural(len(stuck), 'actor')} can never finish: "
            + "; ".join(lines[:4])
            + (" ..." if len(lines) > 4 else ""),
            lines + pending[:4] + ["recent events:"] + recent,
        )

    def blocked_reason(self, st: ActorState, op: Op) -> str:
        if op.kind == "wait":
            bar, parity = op.args
            n = self.awaited(st, bar, parity)
            b = self.bars.get(bar)
            if b is None or b.count is None:
                return f"wait {bar.show()} parity {parity}: barrier never initialized"
            return (
                f"wait {bar.show()} parity {parity} for phase {n}; "
                f"{plural(len(b.completions), 'phase')} completed, "
                f"current phase has {b.count - b.pending}/{b.count} arrivals, tx {b.tx}"
            )
        if op.kind in ("nbar", "warp_sync") and st.sync_pending:
            key, g, _ = st.sync_pending
            s = self.syncs[key]
            arrived = s.arrived.get(g, 0)
            return f"{_sync_name(key)} generation {g}: {arrived} of {s.expected} threads arrived"
        if op.kind == "await":
            word, cmp, value, _ = op.args
            return f"spin on {word.show()} {cmp} {value}; it holds {self.mem.get(word, 0)}"
        if op.kind == "bulk_wait":
            return f"bulk wait_group {op.args[0]}"
        if op.kind == "cluster_wait":
            return "cluster wait"
        if op.kind == "wgmma_wait":
            cta, wg = self.wg_key(st)
            newest = st.wg_commits - op.args[0] - 1
            done = len(self.wg_commit_evs.get((cta, wg, newest), []))
            return (
                f"wgmma wait_group {op.args[0]}: {done} of warpgroup {wg}'s "
                f"{self.wg_warps[(cta, wg)]} warps committed its group {newest}"
            )
        return op.kind


def _sync_name(key: Any) -> str:
    if key[0] == "nbar":
        return f"named barrier {key[2]}@cta{key[1]}"
    if key[0] == "warp":
        return f"warp {key[2]}@cta{key[1]} sync"
    return f"cluster {key[1]} barrier"


def _compare(a: int, op: str, b: int) -> bool:
    return {
        "!=": a != b,
        "==": a == b,
        ">=": a >= b,
        ">": a > b,
        "<": a < b,
        "<=": a <= b,
    }[op]


def check(model: KernelModel) -> Result:
    """Check one traced problem: every property, for every interleaving."""
    return Checker(model).run()
