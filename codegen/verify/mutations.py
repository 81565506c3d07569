"""Mutation testing: seeded protocol bugs in the templates, each of which verify must report.

A mutation is a text substitution in one template. Its *hits* are the specs whose rendered kernel
changes; each hit is rendered (without black: same AST) and verified, and the mutation is
*detected* in a hit when verify reports a violation the unmutated kernel does not have (kernels
with a known finding, such as the missing producer tail of single-CTA sm100 kernels, keep
failing for that reason; only new violations count).

A hit whose mutant is the unmutated program once the module's constants are folded (`same_program`:
`if i == EPI_CHUNKS - 1:` made `if i == 0:` in a kernel of EPI_CHUNKS = 1) seeds no bug there: it
is reported as not applicable, with the constants that make it so, and not verified.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from codegen import loader, render
from codegen.plan_common import plural
from codegen.verify import KernelReport, verify_text


@dataclass(frozen=True)
class Mutation:
    name: str
    bug: str  # the class of bug it seeds
    template: str  # path under templates/
    old: str
    new: str
    occurrence: int = 1  # which match of `old` to replace (1-based)
    # kernels where the mutated code is harmless (name pattern), and why: not counted as misses
    benign: str = ""
    benign_why: str = ""

    def apply(self, text: str) -> str:
        start = -1
        for _ in range(self.occurrence):
            start = text.find(self.old, start + 1)
            if start < 0:
                raise LookupError(
                    f"mutation {self.name}: {self.template} no longer contains match "
                    f"{self.occurrence} of {self.old!r} (update codegen/verify/mutations.py)"
                )
        return text[:start] + self.new + text[start + len(self.old) :]


WS_MMA_FLIP = """            stage, phase = ring_next(stage, phase, STAGES)
{{ cluster.commit_acc("acc_full + slot")|indent(4, true) }}"""

# the consumer's ring advance: the mutant steps the slot but never flips the phase
SM90_CONSUMER_STEP = """        prev_stage = stage
        stage, phase = ring_next(stage, phase, STAGES)"""

CATALOGUE: tuple[Mutation, ...] = (
    Mutation(
        "sm100-empty-count",
        "wrong arrive count",
        "sm100/cluster/multicast.py.j2",
        "cute.arch.mbarrier_init(empty + s, EMPTY_ARRIVES)",
        "cute.arch.mbarrier_init(empty + s, EMPTY_ARRIVES + 1)",
    ),
    Mutation(
        "sm90-empty-count",
        "wrong arrive count",
        "sm90/gemm.py.j2",
        "cute.arch.mbarrier_init(empty + s, EMPTY_ARRIVES)",
        "cute.arch.mbarrier_init(empty + s, EMPTY_ARRIVES - 1)",
    ),
    Mutation(
        "sm90-mcast-release-per-warp",
        "wrong arrive count",
        "sm90/cluster/multicast.py.j2",
        # every consumer warp releases (per-warp arrivals against the per-warpgroup count)
        "(warp_idx % WG_WARPS == RELEASE_WARP)",
        "(warp_idx % WG_WARPS >= RELEASE_WARP)",
    ),
    Mutation(
        "sm100-acc-empty-count",
        "wrong arrive count",
        "sm100/scheduler/persistent.py.j2",
        "cute.arch.mbarrier_init(acc_empty + j, ACC_EMPTY_ARRIVES)",
        "cute.arch.mbarrier_init(acc_empty + j, ACC_EMPTY_ARRIVES + 1)",
    ),
    Mutation(
        "sm100-mma-parity",
        "missing parity flip",
        "sm100/mainloop/ws_persistent.py.j2",
        WS_MMA_FLIP,
        # the MMA warp's ring advance keeps its phase: its wait after the wrap expects the old one
        WS_MMA_FLIP.replace("stage, phase = ring_next", "stage, _ = ring_next"),
    ),
    Mutation(
        "sm90-pingpong-skip-phase",
        "missing parity flip",
        "sm90/consumer/pingpong.py.j2",
        # the phase flips counted from the skip alone, not from the position it starts at: right
        # only while stage + n wraps the ring as often as n does
        "phase ^ ((pos // STAGES) % 2)",
        "phase ^ ((n // STAGES) % 2)",
    ),
    Mutation(
        "sm90-consumer-parity",
        "missing parity flip",
        "sm90/gemm.py.j2",
        SM90_CONSUMER_STEP,
        SM90_CONSUMER_STEP.replace("stage, phase = ring_next", "stage, _ = ring_next"),
    ),
    Mutation(
        "sm100-tx-bytes",
        "wrong tx bytes",
        "sm100/cluster/single.py.j2",
        "cute.arch.mbarrier_arrive_and_expect_tx(full + stage, TX_BYTES)",
        "cute.arch.mbarrier_arrive_and_expect_tx(full + stage, TX_BYTES + 1024)",
    ),
    Mutation(
        "sm100-pair-tx-half",
        "wrong tx bytes",
        "sm100/cluster/pair.py.j2",
        "cute.arch.mbarrier_arrive_and_expect_tx(full + stage, TX_BYTES)",
        "cute.arch.mbarrier_arrive_and_expect_tx(full + stage, TX_BYTES // 2)",
    ),
    Mutation(
        "sm100-producer-tail",
        "missing drain",
        "sm100/mainloop/_producer_tail.py.j2",
        "for _ in cutlass.range(STAGES, unroll=1):",
        "for _ in cutlass.range(0, unroll=1):",
    ),
    Mutation(
        "sm90-cluster-drain",
        "missing drain",
        "sm90/cluster/multicast.py.j2",
        "for _ in cutlass.range_constexpr(STAGES):",
        "for _ in cutlass.range_constexpr(0):",
    ),
    Mutation(
        "sm100-commit-mask",
        "wrong multicast mask",
        "sm100/cluster/multicast.py.j2",
        "tcgen05.commit(empty + stage, mask_a | mask_b, tcgen05.CtaGroup.ONE)",
        "tcgen05.commit(empty + stage, mask_a, tcgen05.CtaGroup.ONE)",
    ),
    Mutation(
        "sm90-tma-mask",
        "wrong multicast mask",
        "sm90/cluster/multicast.py.j2",
        "mcast_mask=b_mcast_mask,",
        "mcast_mask=a_mcast_mask,",
    ),
    Mutation(
        "sm100-early-acc-release",
        "early slot release",
        "sm100/cluster/single.py.j2",
        # the epilogue hands the slot back after its first TMEM load, not its last. A kernel of
        # one epilogue chunk or sub-tile (EPI_CHUNKS or EPI_SUBTILES = 1: a direct epilogue of
        # tile N <= 64, a TMA-store epilogue of tile N = 64) is the same program: not applicable
        # there (same_program), not a miss
        "        if i == {{ last }}:",
        "        if i == 0:",
    ),
    Mutation(
        "sm90-early-stage-release",
        "early slot release",
        "sm90/gemm.py.j2",
        "warpgroup.wait_group(1)",
        "warpgroup.wait_group(2)",
    ),
    Mutation(
        "sm100-splitk-restage",
        "early slot release",
        "sm100/reduce/cluster.py.j2",
        "wait_cluster_acquire(consumed, (tile_count - 1) % 2)",
        "pass",
    ),
    Mutation(
        "sm90-release-unfilled",
        "release without a fill",
        "sm90/reduce/none.py.j2",
        # the consumer's final release also runs when no k-tile filled a stage (K = 0)
        "{% macro k_nonempty() %}k_tiles > 0{% endmacro %}",
        "{% macro k_nonempty() %}k_tiles >= 0{% endmacro %}",
    ),
    Mutation(
        "sm90-sk-empty-grid",
        "empty grid",
        "sm90/scheduler/stream_k.py.j2",
        # K = 0 makes no MAC iteration: min(0, workers) CTAs is a (0, 1, 1) grid
        "cutlass.max(cutlass.min(k_iters, max_workers(sm_count)), 1)",
        "cutlass.min(k_iters, max_workers(sm_count))",
    ),
    Mutation(
        "sm100-sk-empty-grid",
        "empty grid",
        "sm100/reduce/stream_k.py.j2",
        "cutlass.max(cutlass.min(k_iters, max_workers(sm_count)), 1)",
        "cutlass.min(k_iters, max_workers(sm_count))",
    ),
    Mutation(
        "sm100-sk-flag-reset",
        "missing flag reset",
        "sm100/reduce/stream_k.py.j2",
        "cute.arch.store(flags + peer, cutlass.Int32(0))",
        "cute.arch.store(flags + peer, cutlass.Int32(1))",
    ),
    Mutation(
        "sm90-sk-flag-reset",
        "missing flag reset",
        "sm90/reduce/stream_k.py.j2",
        "cute.arch.store(flags + peer, cutlass.Int32(0))",
        "cute.arch.store(flags + peer, cutlass.Int32(1))",
    ),
    Mutation(
        "sk-band-finisher-cta",
        "stream-K finisher outside its group",
        "common/stream_k.py.j2",
        "{% macro last_cta(t) %}sk_cta0 + cutlass.Int32(",
        "{% macro last_cta(t) %}cutlass.Int32(",
        benign=r"_dp$",
        benign_why="the data-parallel + stream-K hybrid's stream-K CTAs are one group, from CTA 0",
    ),
    Mutation(
        "sk-band-share-offset",
        "stream-K share outside its band",
        "common/stream_k.py.j2",
        "it_begin = group_iter0 + rank",
        "it_begin = rank",
        benign=r"_dp$",
        benign_why="the data-parallel + stream-K hybrid's stream-K tiles are one band, its first "
        "iteration 0 (hybrid_share adds the waves' iterations after)",
    ),
    Mutation(
        "sk-hybrid-dp-stride",
        "data-parallel tile outside its wave",
        "common/stream_k.py.j2",
        # a CTA's data-parallel units are tiles cta, cta + 1, ...: neighbours compute a tile twice
        "    tile = cta + unit * ctas\n",
        "    tile = cta + unit\n",
    ),
    Mutation(
        "sk-hybrid-share-offset",
        "stream-K share over the data-parallel tiles",
        "common/stream_k.py.j2",
        # the stream-K share counts from tile 0, over the data-parallel tiles instead of after them
        "it_begin + dp_iters, it_end + dp_iters",
        "it_begin, it_end",
    ),
    Mutation(
        "sm90-sk-plain-flag",
        "flag without release",
        "sm90/reduce/stream_k.py.j2",
        'cutlass.Int32(1), sem="release", scope="gpu")',
        'cutlass.Int32(1), scope="gpu")',
    ),
    Mutation(
        "sm100-no-tmem-fence",
        "no fence before reuse",
        "sm100/cluster/single.py.j2",
        "cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld",
        "pass  # tcgen05.wait::ld",
        benign=r"_splitk\d+_sep(_|$)",
        benign_why="one tile per CTA: no TMEM slot is reused",
    ),
    Mutation(
        "sm100-no-proxy-fence",
        "no fence before reuse",
        "sm100/epilogue/tma.py.j2",
        'cute.arch.fence_proxy("async.shared", space="cta")',
        "pass",
    ),
    Mutation(
        "sm90-no-proxy-fence",
        "no fence before reuse",
        "sm90/epilogue/tma.py.j2",
        'cute.arch.fence_proxy("async.shared", space="cta")',
        "pass",
    ),
    Mutation(
        "sm100-clc-overwrite",
        "early slot release",
        "sm100/scheduler/dynamic.py.j2",
        "cute.arch.mbarrier_wait(clc_empty, clc_phase)  # every reader took the previous answer",
        "pass  # every reader took the previous answer",
    ),
    Mutation(
        "sm100-clc-no-fence",
        "no fence before reuse",
        "sm100/scheduler/dynamic.py.j2",
        # the answer is read through the generic proxy, the next try_cancel overwrites it through
        # the async proxy: without the reader's fence the two are unordered
        'cute.arch.fence_proxy("async.shared", space="cta")',
        "pass",
    ),
    Mutation(
        "sm100-splitk-cta-scope",
        "CTA-scope hand-off",
        "sm100/reduce/cluster.py.j2",
        # the peer's staged partial is read by rank 0 through DSMEM: a CTA-scope release does
        # not make the staging stores visible to another CTA
        "cute.arch.mbarrier_arrive(staged, peer_cta_rank_in_cluster=0, scope=nvvm.MemScopeKind.CLUSTER)",
        "cute.arch.mbarrier_arrive(staged, peer_cta_rank_in_cluster=0)",
    ),
    Mutation(
        "sm90-splitk-cta-scope",
        "CTA-scope hand-off",
        "sm90/reduce/cluster.py.j2",
        "cute.arch.mbarrier_arrive(staged, peer_cta_rank_in_cluster=0, scope=nvvm.MemScopeKind.CLUSTER)",
        "cute.arch.mbarrier_arrive(staged, peer_cta_rank_in_cluster=0)",
    ),
    Mutation(
        "pdl-producer-no-wait",
        "PDL order",
        "common/pdl.py.j2",
        # the TMA warp loads right after its L2 prefetch, without waiting for the previous kernel
        "        cute.prefetch(tma_b, {{ b_src }})\ncute.arch.griddepcontrol_wait()",
        "        cute.prefetch(tma_b, {{ b_src }})\npass",
    ),
    # numeric: protocol-consistent bugs in what the kernel computes, seen only by the emulation
    # of its data movement (codegen/verify/numeric.py)
    Mutation(
        "sm100-kloop-short",
        "k-loop one tile short",
        "sm100/scheduler/grid.py.j2",
        # the producer, the MMA loop and the tail all run one k-tile fewer: the protocol is
        # intact (with one stage too), the last k-tile is never added
        "    k_tiles = cute.size(gA, mode=[2])\n",
        "    k_tiles = cute.size(gA, mode=[2]) - 1\n",
    ),
    Mutation(
        "sm100-persistent-kloop-short",
        "k-loop one tile short",
        "sm100/scheduler/persistent.py.j2",
        "k_tiles = cute.size(gA, mode=[3])",
        "k_tiles = cute.size(gA, mode=[3]) - 1",
    ),
    Mutation(
        "sm100-doubled-ktile",
        "doubled k-tile",
        "sm100/mainloop/ws.py.j2",
        # the TMA loads k-tiles 0, 0, 1, 1, ...: as many loads and MMAs as before
        'cluster.load_stage("tAgA[(None, k)]", "tBgB[(None, k)]")',
        'cluster.load_stage("tAgA[(None, k // 2)]", "tBgB[(None, k // 2)]")',
    ),
    Mutation(
        "sm100-mma-overwrite",
        "MMA overwrites the accumulator",
        "sm100/mainloop/ws.py.j2",
        # every MMA of the tile overwrites: only the last K block survives
        "tiled_mma.set(tcgen05.Field.ACCUMULATE, True)  # every later MMA adds",
        "tiled_mma.set(tcgen05.Field.ACCUMULATE, False)  # every later MMA adds",
    ),
    Mutation(
        "sm100-store-wrong-n",
        "wrong output tile coordinate",
        "sm100/scheduler/grid.py.j2",
        # every CTA stores its tile into output column tile 0
        "gC = cute.local_tile(mC, TILER, coord, proj=(1, 1, None))",
        "gC = cute.local_tile(mC, TILER, (coord[0], 0, None), proj=(1, 1, None))",
    ),
    Mutation(
        "sm100-tile-store-wrong-n",
        "wrong output tile coordinate",
        "sm100/scheduler/_tile_loop.py.j2",
        "tCgC_t = tCgC[(None, None, None, tm, tn)]",
        "tCgC_t = tCgC[(None, None, None, tm, 0)]",
    ),
    Mutation(
        "sm100-splitk-drop-partial",
        "split-K partial dropped",
        "sm100/reduce/cluster.py.j2",
        # rank 0 sums the staged partials of ranks 2.. only (rank 1's is still released)
        "for peer in cutlass.range_constexpr(1, SPLITS):",
        "for peer in cutlass.range_constexpr(2, SPLITS):",
    ),
    Mutation(
        "sm100-sk-drop-partial",
        "stream-K partial dropped",
        "sm100/reduce/stream_k.py.j2",
        # the fix-up adds the partials of CTAs bidx + 1 .. last_cta - 1 (it still waits for all)
        "for peer in cutlass.range(bidx + 1, last_cta + 1, unroll=1):",
        "for peer in cutlass.range(bidx + 1, last_cta, unroll=1):",
    ),
    Mutation(
        "sm90-kloop-short",
        "k-loop one tile short",
        "sm90/gemm.py.j2",
        "k_tiles = cute.size(gA, mode=[3])",
        "k_tiles = cute.size(gA, mode=[3]) - 1",
    ),
    Mutation(
        "sm90-direct-store-wrong-n",
        "wrong output tile coordinate",
        "sm90/epilogue/direct.py.j2",
        "gC = cute.local_tile(mC, (TILER[0], TILER[1]), (tile_m, tile_n))",
        "gC = cute.local_tile(mC, (TILER[0], TILER[1]), (tile_m, 0))",
    ),
    # a gated pair (swiglu, geglu): C (M, N / 2) stored through a view with the gate and up
    # columns of each 16 on 8 columns of C (the numeric check maps it: dsl.gate_image)
    Mutation(
        "sm90-gated-store-wrong-n",
        "wrong output tile coordinate",
        "sm90/epilogue/_fn.py.j2",
        # every tile's (TM, TN / 2) outputs go to C's first TN / 2 columns
        "gO = cute.local_tile(mC, (TILER[0], TILER[1] // 2), (tile_m, tile_n))",
        "gO = cute.local_tile(mC, (TILER[0], TILER[1] // 2), (tile_m, 0))",
    ),
    Mutation(
        "sm90-gated-swap-store-wrong-n",
        "wrong output tile coordinate",
        "sm90/epilogue/_fn.py.j2",
        # swap AB: C^T's rows are C's columns; every tile's outputs go to C's first TM / 2 ones
        "gO = cute.local_tile(mC, (TILER[0] // 2, TILER[1]), (tile_m, tile_n))",
        "gO = cute.local_tile(mC, (TILER[0] // 2, TILER[1]), (0, tile_n))",
    ),
    Mutation(
        "sm100-gated-tile-offset",
        "wrong output column offset",
        "common/epifn.py.j2",
        # the host's (M, N) view of C (M, N / 2) steps TN columns of C per tile, not TN / 2:
        # tile n >= 1 stores past its columns (C's second half is never written)
        "(TILER[1] // 2) * c.stride[1]))))",
        "TILER[1] * c.stride[1]))))",
    ),
    Mutation(
        "sm90-tma-store-wrong-n",
        "wrong output tile coordinate",
        "sm90/epilogue/tma.py.j2",
        "gC = cute.local_tile(mC_tma, (TILER[0], TILER[1]), (tile_m, tile_n))",
        "gC = cute.local_tile(mC_tma, (TILER[0], TILER[1]), (tile_m, 0))",
    ),
    Mutation(
        "sm90-splitk-drop-partial",
        "split-K partial dropped",
        "sm90/reduce/cluster.py.j2",
        "for peer in cutlass.range_constexpr(1, SPLITS):",
        "for peer in cutlass.range_constexpr(2, SPLITS):",
    ),
    Mutation(
        "sm90-sk-drop-partial",
        "stream-K partial dropped",
        "sm90/reduce/stream_k.py.j2",
        # the fix-up waits for every peer's flag and reads its partial, but adds none of them
        "acc_vec[(None, j)].store(acc_vec[(None, j)].load() + peer_vec.load())",
        "acc_vec[(None, j)].store(acc_vec[(None, j)].load())",
    ),
    Mutation(
        "splitk-reduce-drop-partial",
        "split-K partial dropped",
        "common/split_k_reduce.py.j2",
        # the reduce kernel sums splits 0, 2, 3, ...
        "for s in cutlass.range_constexpr(1, SPLITS):",
        "for s in cutlass.range_constexpr(2, SPLITS):",
    ),
    Mutation(
        "pdl-epilogue-no-wait",
        "PDL order",
        "common/pdl.py.j2",
        # only the TMA warp waits for the previous kernel: a direct epilogue that stores D (or
        # reads C, a bias) with no MMA before it (an empty split-K share) is not ordered after
        # any wait
        "    if warp_idx != TMA_WARP:\n        cute.arch.griddepcontrol_wait()",
        "    if warp_idx != TMA_WARP:\n        pass",
        # every stream-K kernel (bands along the weights, an epilogue function's suffix) but the
        # data-parallel + stream-K hybrid, whose whole tiles at K = 0 have none
        benign=r"_streamk(?!_dp)(_|$)",
        benign_why="stream-K: every unit has k-tiles, so every consumer access follows a TMA load "
        "and the TMA warp's wait",
    ),
    Mutation(
        "sm100-mcast-no-cluster-sync",
        "barrier used before init",
        "sm100/cluster/multicast.py.j2",
        "    cute.arch.cluster_arrive()\n    cute.arch.cluster_wait()",
        "    pass\n    pass",
    ),
)


@dataclass
class Hit:
    spec: str
    detected: bool
    new: list[str] = field(default_factory=list)  # new violated properties
    status: str = ""
    benign: bool = False  # the mutation is harmless in this kernel (Mutation.benign)
    # why the mutant is the unmutated program (same_program): nothing seeded, nothing verified
    same: str = ""


@dataclass
class MutationResult:
    mutation: Mutation
    hits: list[Hit] = field(default_factory=list)
    error: str | None = None

    @property
    def detected(self) -> int:
        return sum(h.detected for h in self.hits)

    @property
    def missed(self) -> list[str]:
        return [h.spec for h in self.hits if not h.detected and not h.benign and not h.same]

    @property
    def applicable(self) -> list[Hit]:
        """The hits where the mutant is another program (the others seed no bug)."""
        return [h for h in self.hits if not h.same]

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.applicable) and not self.missed


# -- the same program once the module's constants are folded ------------------------------------

_BINOPS: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_UNARYOPS: dict[type, Callable] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_NUMBER = (int, float, bool)


class _Fold(ast.NodeTransformer):
    """Replaces each read of a constant by its value and folds arithmetic on numbers."""

    def __init__(self, consts: dict[str, object]):
        self.consts = consts

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.consts:
            return ast.copy_location(ast.Constant(self.consts[node.id]), node)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op = _BINOPS.get(type(node.op))
        left, right = node.left, node.right
        if (
            op is not None
            and isinstance(left, ast.Constant)
            and isinstance(right, ast.Constant)
            and isinstance(left.value, _NUMBER)
            and isinstance(right.value, _NUMBER)
            and not (isinstance(node.op, ast.LShift) and right.value > 64)  # no huge numbers
        ):
            try:
                return ast.copy_location(ast.Constant(op(left.value, right.value)), node)
            except (ArithmeticError, ValueError):
                pass
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        op = _UNARYOPS.get(type(node.op))
        if (
            op is not None
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, _NUMBER)
        ):
            return ast.copy_location(ast.Constant(op(node.operand.value)), node)
        return node


def _bound_names(tree: ast.Module) -> Counter:
    """How often each name is bound anywhere in the module (assignment and loop targets,
    parameters, definitions, imports, except and match captures)."""
    bound: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound[node.id] += 1
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] += 1
        elif isinstance(node, ast.alias):
            bound[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                bound[n] += 2  # rebound from inside a function
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound[node.rest] += 1
    return bound


def module_constants(tree: ast.Module) -> dict[str, object]:
    """The module's constants: names bound once in the whole file, by a module-level assignment
    whose value folds to a number from the constants before it (EPI_CHUNKS = 1,
    PERSISTENT_WARPS = EPI_WARP0 + EPILOGUE_WARPS)."""
    once = {name for name, n in _bound_names(tree).items() if n == 1}
    consts: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id not in once:
            continue
        folded = _Fold(consts).visit(value)
        if isinstance(folded, ast.Constant) and isinstance(folded.value, _NUMBER):
            consts[target.id] = folded.value
    return consts


def _folded(tree: ast.Module) -> str:
    return ast.dump(_Fold(module_constants(tree)).visit(tree))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=4096)
def _original_forms(original: str) -> tuple[str, str] | None:
    """Digests of `original`'s syntax tree and of its constant-folded tree (None: not Python).
    Every mutation compares its mutants with the same unmutated kernels: each is parsed once."""
    try:
        tree = ast.parse(original)
    except SyntaxError:
        return None
    return _digest(ast.dump(tree)), _digest(_folded(tree))


def same_program(original: str, mutant: str) -> str:
    """Why `mutant` is the program `original` is (empty if it is not shown to be): with each
    file's constants folded (module_constants) both parse to the same syntax tree, so the mutation
    changed only how a value is spelled, e.g. `if i == EPI_CHUNKS - 1:` made `if i == 0:` where
    EPI_CHUNKS = 1. Names the constants of the original's changed lines."""
    forms = _original_forms(original)
    try:
        new = ast.parse(mutant)
    except SyntaxError:
        return ""
    if forms is None:
        return ""
    old_tree, old_folded = forms
    # the folded trees differ wherever the plain ones do: most mutants stop here, one dump each
    if _digest(_folded(new)) != old_folded:
        return ""
    # parsed again: folding rewrote `new` in place
    if _digest(ast.dump(ast.parse(mutant))) == old_tree:
        return "the same syntax tree (only comments or layout changed)"
    consts = module_constants(ast.parse(original))
    changed = [
        line[1:]
        for line in difflib.unified_diff(original.splitlines(), mutant.splitlines(), n=0)
        if line.startswith("-") and not line.startswith("---")
    ]
    names = sorted(
        {n for line in changed for n in re.findall(r"\b[A-Za-z_]\w*\b", line)} & consts.keys()
    )
    values = ", ".join(f"{n} = {consts[n]}" for n in names)
    return f"the same program with {values}" if values else "the same program, constants folded"


def _norm(text: str) -> str:
    return re.sub(r"line \d+", "line N", text)


def violation_keys(report: KernelReport) -> set[tuple[str, str]]:
    keys = {(v.prop, _norm(v.message)) for c in report.cases for v in c.violations}
    if report.error:
        keys.add(("error", _norm(report.error)))
    return keys


class Renderer:
    """Raw renders of every spec, original and with one template replaced."""

    def __init__(self, specs: Iterable[loader.LoadedSpec] | None = None):
        self.specs = list(specs if specs is not None else loader.load([Path("specs")]))
        self.env = render.environment()
        self._raw: dict[str, str] = {}
        self.templates = render.TEMPLATES
        # each unmutated kernel's report, verified once for every mutation run with this renderer
        self.reports: dict[str, KernelReport] = {}

    def original(self, spec: loader.LoadedSpec) -> str:
        if spec.name not in self._raw:
            self._raw[spec.name] = render.render_raw(spec, self.env)
        return self._raw[spec.name]

    def mutated_env(self, m: Mutation) -> jinja2.Environment:
        text = (self.templates / m.template).read_text()
        env = render.environment()
        env.loader = jinja2.ChoiceLoader(
            [
                jinja2.DictLoader({m.template: render.with_contract(m.template, m.apply(text))}),
                self.env.loader,
            ]  # type: ignore[list-item]
        )
        return env

    def hits(self, m: Mutation) -> list[tuple[loader.LoadedSpec, str]]:
        env = self.mutated_env(m)
        arch = m.template.split("/", 1)[0]
        out = []
        for spec in self.specs:
            if arch in ("sm90", "sm100") and spec.spec.arch != f"sm_{arch[2:]}a":
                continue
            text = render.render_raw(spec, env)
            if text != self.original(spec):
                out.append((spec, text))
        return out


def _verify(args: tuple[str, str]) -> KernelReport:
    name, text = args
    return verify_text(text, name)


def run(
    mutations: Iterable[Mutation] = CATALOGUE,
    limit: int | None = None,
    jobs: int = 1,
    renderer: Renderer | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[MutationResult]:
    """Apply each mutation, verify its hits (at most `limit` of them, spread over the hits)."""
    renderer = renderer or Renderer()
    results = []
    originals = renderer.reports  # each unmutated kernel is verified once per renderer
    pool = ProcessPoolExecutor(jobs) if jobs > 1 else None

    def verify_all(work: list[tuple[str, str]]) -> list[KernelReport]:
        if pool is not None and len(work) > 1:
            return list(pool.map(_verify, work))
        return [_verify(w) for w in work]

    try:
        _run(mutations, limit, renderer, progress, results, originals, verify_all)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return results


def _run(mutations, limit, renderer, progress, results, originals, verify_all) -> None:
    for m in mutations:
        res = MutationResult(m)
        results.append(res)
        try:
            hits = renderer.hits(m)
        except LookupError as e:
            res.error = str(e)
            continue
        for spec, text in hits:
            why = same_program(renderer.original(spec), text)
            if why:
                res.hits.append(Hit(spec.name, False, status="same program", same=why))
        same = {h.spec for h in res.hits}
        hits = [(spec, text) for spec, text in hits if spec.name not in same]
        if not hits:
            if same:
                res.error = "the mutant is the unmutated program in every kernel it changes"
            continue
        if limit is not None and len(hits) > limit:
            step = len(hits) / limit
            hits = [hits[int(i * step)] for i in range(limit)]
        if progress:
            skipped = f" ({len(same)} more: the same program)" if same else ""
            progress(f"{m.name}: {plural(len(hits), 'hit')}{skipped}")
        todo = [(spec.name, renderer.original(spec)) for spec, _ in hits]
        todo = [w for w in todo if w[0] not in originals]
        reports = verify_all(todo + [(spec.name, text) for spec, text in hits])
        for (name, _), report in zip(todo, reports):
            originals[name] = report
        for (spec, _), mutant in zip(hits, reports[len(todo) :]):
            name = spec.name
            new = violation_keys(mutant) - violation_keys(originals[name])
            benign = bool(m.benign and re.search(m.benign, name))
            props = sorted({p for p, _ in new})
            res.hits.append(Hit(name, bool(new), props, mutant.status, benign))


def markdown(results: list[MutationResult]) -> str:
    lines = [
        "| mutation | bug | template | hits | detected | new violations |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for r in results:
        m = r.mutation
        if r.error:
            lines.append(f"| {m.name} | {m.bug} | {m.template} | - | - | ERROR: {r.error} |")
            continue
        props = sorted({p for h in r.hits for p in h.new})
        note = ", ".join(props)
        harmless = [h.spec for h in r.hits if h.benign and not h.detected]
        if harmless:
            note += f"; not a bug in {', '.join(harmless)}: {m.benign_why}"
        same: dict[str, list[str]] = {}
        for h in r.hits:
            if h.same:
                same.setdefault(h.same, []).append(h.spec)
        for why, specs in same.items():
            note += f"; not applicable in {', '.join(specs)}: {why}"
        if r.missed:
            note += f"; MISSED in {', '.join(r.missed)}"
        lines.append(
            f"| {m.name} | {m.bug} | {m.template} | {len(r.hits)} | {r.detected} | {note} |"
        )
    return "\n".join(lines)
