"""Synchronization every sm_100a kernel owes the hardware, checked in each generated file (and in
the PTX counts the planner expects, which `codegen build` checks):

- the TMA producer's tail: tcgen05.commit arrives on empty[] asynchronously, so after its last
  load the producer waits on the STAGES slots those last commits complete, in every mainloop and
  cluster kind (before, only multicast clusters and CTA pairs did);
- the dynamic scheduler's cross-proxy fence: the answer try_cancel wrote (async proxy) is read with
  generic loads, which must be fenced (fence.proxy.async.shared::cta) before clc_empty lets the
  next try_cancel overwrite it;
- the TMEM allocation permit is given up right after the allocation, not at teardown.

sm_90a needs no tail where no peer arrives: its consumers release a stage with a plain arrive, done
before the arriving thread goes on, so a CTA cannot exit with one in flight; clustered kernels,
whose peers arrive remotely, keep theirs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import kernel_glob

from codegen import build, plan
from codegen.arch.sm100 import counts as counts_sm100
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult

# the TMA kernels: a light kernel (codegen/light.py) has no ring, producer, TMEM or peers
SM100 = [p for p in kernel_glob() if p.parent.name == "sm100" and "_light_" not in p.stem]
SM90 = [p for p in kernel_glob() if p.parent.name == "sm90" and "_light_" not in p.stem]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _function(path: Path, name: str) -> ast.FunctionDef:
    return next(n for n in _tree(path).body if isinstance(n, ast.FunctionDef) and n.name == name)


def _calls(node: ast.AST) -> list[str]:
    """Every call in `node`, unparsed, in source order."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return [ast.unparse(c) for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def _producer(path: Path) -> ast.FunctionDef:
    """The role helper the kernel's TMA_WARP branch calls: `producer` (in a K-loop kernel,
    `mainloop`, the only loop warp's)."""
    fns = {n.name: n for n in _tree(path).body if isinstance(n, ast.FunctionDef)}
    (call,) = [
        c
        for n in fns["gemm_kernel"].body
        if isinstance(n, ast.If) and ast.unparse(n.test) == "warp_idx == TMA_WARP"
        for c in _calls(n)
        if c.startswith(("producer(", "mainloop("))
    ]
    return fns[call.split("(")[0]]


def _tail_loops(branch: ast.AST) -> list[ast.For]:
    """Loops over the STAGES ring slots whose body waits on an empty barrier."""
    return [
        n
        for n in ast.walk(branch)
        if isinstance(n, ast.For)
        and ast.unparse(n.iter)
        in ("cutlass.range(STAGES, unroll=1)", "cutlass.range_constexpr(STAGES)")
        and ast.unparse(n.body[0]).startswith("cute.arch.mbarrier_wait(empty + ")
    ]


def test_the_families_are_there() -> None:
    assert len(SM100) > 60 and len(SM90) > 40
    kinds = {rules_sm100.cluster_kind(build.read_spec(p)) for p in SM100}
    assert kinds == {"single", "multicast", "pair", "split"}


# ---- the producer tail ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", SM100, ids=lambda p: p.stem)
def test_every_sm100_producer_waits_for_the_last_commits(path: Path) -> None:
    branch = _producer(path)
    (tail,) = _tail_loops(branch)
    # it follows the producer's last load: nothing is loaded after it
    loads = [
        n.lineno
        for n in ast.walk(branch)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "cute.copy"
        if ast.unparse(n.args[0]) in ("tma_a", "tma_b")
    ]
    assert loads and max(loads) < tail.lineno
    # with the producer's own ring counters, advanced like the ring (ring_next: one phase flip
    # per wrap)
    wait = ast.unparse(tail.body[0])
    stage, phase = ("p_stage", "p_phase") if "p_stage" in wait else ("stage", "phase")
    assert wait == f"cute.arch.mbarrier_wait(empty + {stage}, {phase})"
    body = "\n".join(ast.unparse(s) for s in tail.body)
    assert f"{stage}, {phase} = ring_next({stage}, {phase}, STAGES)" in body


@pytest.mark.parametrize("path", SM100, ids=lambda p: p.stem)
def test_the_plan_counts_the_tail_wait(path: Path) -> None:
    spec = build.read_spec(path)
    # empty, full, acc_full and the tail, before any scheduler's or cluster's own waits
    assert counts_sm100.try_waits(spec) >= 4


@pytest.mark.parametrize("path", SM90, ids=lambda p: p.stem)
def test_sm90_tail_exactly_where_peers_arrive(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    clustered = "cluster=(CLUSTER[0], CLUSTER[1], 1)" in src
    producer = _function(path, "producer")  # the TMA warp's role helper
    assert len(_tail_loops(producer)) == int(clustered)
    release = _function(path, "release_stage")
    arrives = [c for c in _calls(release) if c.startswith("cute.arch.mbarrier_arrive(")]
    if clustered:  # remote arrives: the filling CTAs' barriers, the reason for the tail
        assert all("peer_cta_rank_in_cluster" in c for c in arrives)
    else:  # a plain local arrive, complete when the arriving thread moves on: no tail needed
        assert arrives == ["cute.arch.mbarrier_arrive(bar)"]


# ---- the CLC answer's cross-proxy fence ----------------------------------------------------------


DYNAMIC = [p for p in SM100 if rules_sm100.is_dynamic(build.read_spec(p))]


@pytest.mark.parametrize("path", DYNAMIC, ids=lambda p: p.stem)
def test_the_clc_answer_is_fenced_before_its_release(path: Path) -> None:
    calls = _calls(_function(path, "wait_and_release_next_tile"))
    read = calls.index("cute.arch.clc_response(response)")
    fence = calls.index("cute.arch.fence_proxy('async.shared', space='cta')")
    release = calls.index("cute.arch.mbarrier_arrive(empty)")
    assert read < fence < release
    counts = plan.expected_counts(build.read_spec(path))
    # wait_and_release_next_tile is inlined at its three call sites (producer, MMA, epilogue)
    sub_tiles = rules_sm100.epilogue_chunks(build.read_spec(path))[1]
    tma = rules_sm100.is_tma_store(build.read_spec(path))
    assert counts["fence.proxy.async"] == 3 + (sub_tiles if tma else 0)


@pytest.mark.parametrize("path", DYNAMIC, ids=lambda p: p.stem)
def test_consumers_take_the_answer_before_working_on_a_tile(path: Path) -> None:
    """The producer's next request waits for every reader of the last answer: the MMA warp and
    the epilogue read it before the tile's MMAs (stores), or the ring drains at every tile."""
    loops = [
        n
        for role in ("producer", "mma", "epilogue")  # the role helpers
        for n in ast.walk(_function(path, role))
        if isinstance(n, ast.While) and ast.unparse(n.test) == "more"
    ]
    assert len(loops) == 3  # producer, MMA, epilogue
    for loop in loops:
        calls = _calls(loop)
        read = next(i for i, c in enumerate(calls) if c.startswith("wait_and_release_next_tile("))
        waits = [i for i, c in enumerate(calls) if c.startswith("cute.arch.mbarrier_wait(")]
        work = [
            i
            for i, c in enumerate(calls)
            if c.startswith(("cute.gemm(", "cute.arch.mbarrier_wait(acc_full"))
        ]
        if work:  # the MMA warp and the epilogue: the answer first
            assert read < min(work) and read < min(waits), path.stem


def test_there_are_dynamic_kernels() -> None:
    assert {p.stem for p in DYNAMIC} >= {"sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"}


# ---- the TMEM allocation permit ------------------------------------------------------------------


@pytest.mark.parametrize("path", SM100, ids=lambda p: p.stem)
def test_the_alloc_permit_goes_right_after_the_allocation(path: Path) -> None:
    kernel = _function(path, "gemm_kernel")
    calls = _calls(kernel)
    (alloc,) = [i for i, c in enumerate(calls) if c.startswith("cute.arch.alloc_tmem(")]
    (permit,) = [i for i, c in enumerate(calls) if "relinquish_tmem_alloc_permit" in c]
    assert permit == alloc + 1
    pair = "is_two_cta=True" in calls[alloc]
    assert calls[permit] == (
        "cute.arch.relinquish_tmem_alloc_permit(is_two_cta=True)"
        if pair
        else "cute.arch.relinquish_tmem_alloc_permit()"
    )
    assert plan.expected_counts(build.read_spec(path))["tcgen05.relinquish"] == 1


# ---- cross-compiled ------------------------------------------------------------------------------

BUILT = [
    "sm100_f16_128x256x16_s1_inter_kloop_direct_grid",
    "sm100_f16_128x256x16_s4_inter_ws_direct_grid",
    "sm100_bf16_64x64x64_s14_sw128_ws_direct_grid",
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic",
    "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    files = [p for p in SM100 if p.stem in BUILT]
    assert len(files) == len(BUILT)
    return {r.name: r for r in build.build(files, tmp_path_factory.mktemp("build"), jobs=1)}


@pytest.mark.build
@pytest.mark.parametrize("name", BUILT)
def test_the_ptx_has_them(built: dict[str, BuildResult], name: str) -> None:
    r = built[name]
    assert r.passed, (name, r.error or r.mismatches)
    assert r.counts["tcgen05.relinquish"] == 1
    # the tail is one more try_wait site than empty, full and acc_full
    assert r.counts["mbarrier.try_wait"] >= 4
    if name == "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic":
        assert r.counts["fence.proxy.async"] >= 3
