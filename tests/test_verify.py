"""`codegen verify`: the protocol checker on every generated kernel, its coverage of the source and
the PTX, and its sensitivity (seeded template bugs it must report).

Every kernel must pass. The finding this checker first reported (sm_100a single-CTA kernels let
the CTA exit while tcgen05.commit arrivals on empty[] are pending: no A/B producer tail) is fixed
in the templates; the tests below keep it as a regression case on the ladder's step 3 with its
tail cut out.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, kernel_glob

from codegen import loader
from codegen.plan import expected_counts
from codegen.verify import LIGHT_NUMERIC, KernelReport, verify_file, verify_text
from codegen.verify import mutations as mut
from codegen.verify.check import check as check_model
from codegen.verify.explore import explore
from codegen.verify.model import Actor, Bar, KernelModel, LaunchModel, Op
from codegen.verify.sites import model_lines, model_sites, source_calls
from codegen.verify.trace import KernelSource, Problem

FILES = sorted(kernel_glob("*.py"), key=lambda p: p.stem)
JOBS = min(2, os.cpu_count() or 1)

L3 = ROOT / "generated" / "cutegemm" / "sm100" / "sm100_f16_128x256x16_s4_inter_ws_direct_grid.py"
# ladder step 3's producer tail (templates/sm100/mainloop/_producer_tail.py.j2), comments and
# all, at the end of its producer helper
TAIL_BLOCK = re.compile(
    r"    # tail: .*\n(?:    #.*\n)*"
    r"    for _ in cutlass\.range\(STAGES, unroll=1\):\n(?:        .*\n)+?"
    r"(?=    return stage, phase\n)"
)


@functools.cache
def l3_without_tail() -> str:
    """Ladder step 3 as it was before the fix: no producer tail."""
    text, cut = TAIL_BLOCK.subn("", L3.read_text(), count=1)
    assert cut == 1, "ladder step 3's producer tail moved: update TAIL_BLOCK"
    return text


def _verify(path: Path) -> tuple[KernelReport, dict, dict, dict]:
    report = verify_file(path, keep_models=True)
    models = [c.model for c in report.cases if c.model]
    for c in report.cases:
        c.model = None
    return report, source_calls(path.read_text()), model_lines(models), model_sites(models)


@pytest.fixture(scope="module")
def verified() -> dict[str, tuple[KernelReport, dict, dict, dict]]:
    with ProcessPoolExecutor(JOBS) as pool:
        return {p.stem: r for p, r in zip(FILES, pool.map(_verify, FILES))}


def _unexpected(report: KernelReport) -> list[str]:
    out = []
    for case in report.cases:
        for v in case.violations:
            out.append(f"[{case.case.label}] {v.render()}")
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_kernel_protocol(path: Path, verified: dict) -> None:
    report = verified[path.stem][0]
    assert report.status != "NOT MODELLED", report.reason
    assert report.cases, "no problem size was checked"
    assert not _unexpected(report), "\n".join(_unexpected(report))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_barrier_call_is_modelled(path: Path, verified: dict) -> None:
    """Each barrier primitive's call sites in the file = the source lines the model recorded."""
    _, calls, lines, _ = verified[path.stem]
    assert calls == lines


@functools.cache
def _expected_counts() -> dict[str, dict[str, int]]:
    out = {}
    for loaded in loader.load([ROOT / "specs"]):
        spec = loaded.spec.model_copy(update={"name": loaded.name})
        out[loaded.name] = expected_counts(spec)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_sites_match_planned_ptx(path: Path, verified: dict) -> None:
    """Unrolled sites of mbarrier.init / try_wait, tcgen05.commit / mma / ld, cluster barriers,
    flag release / acquire, CLC requests = the PTX counts `codegen build` checks for."""
    expected = _expected_counts()[path.stem]
    sites = verified[path.stem][3]
    diff = {k: (expected[k], n) for k, n in sites.items() if k in expected and expected[k] != n}
    assert not diff, f"(planned PTX count, model sites): {diff}"


PTX_SAMPLE = (
    "sm100_f16_128x256x16_s4_inter_ws_direct_grid",
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm",
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic",
    "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2",
    "sm100_bf16_128x32x64_s11_sw128_ws_acc2_direct_streamk",
    "sm90_bf16_128x128x64_s6_sw128_ws_wg1_tma_streamk",
    "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk2",
)


@pytest.mark.build
def test_sites_match_real_ptx(tmp_path: Path) -> None:
    """Cross-compile a sample (one per scheduler family) and compare the PTX instruction counts
    of codegen/build.py with the model's unrolled sites, directly."""
    from codegen import build

    files = [p for p in FILES if p.stem in PTX_SAMPLE]
    assert len(files) == len(PTX_SAMPLE)
    results = {r.name: r for r in build.build(files, tmp_path, jobs=JOBS)}
    for path in files:
        r = results[path.stem]
        assert r.ok, r.error
        sites = _verify(path)[3]
        diff = {k: (r.counts.get(k), n) for k, n in sites.items() if r.counts.get(k) != n}
        assert not diff, f"{path.stem}: (PTX, model sites) {diff}"


def test_a_missing_producer_tail_is_reported() -> None:
    """A single-CTA sm_100a kernel without its tail: the CTA can exit with a commit pending."""
    report = verify_text(l3_without_tail(), "ladder_3_no_tail", "sm_100a")
    assert report.status == "FAIL"
    assert report.properties() == ["exit-pending"]


# -- seeded bugs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def renderer() -> mut.Renderer:
    return mut.Renderer(loader.load([ROOT / "specs"]))


@pytest.mark.parametrize("mutation", mut.CATALOGUE, ids=lambda m: m.name)
def test_mutation_is_detected(mutation: mut.Mutation, renderer: mut.Renderer) -> None:
    (result,) = mut.run([mutation], limit=2, renderer=renderer, jobs=JOBS)
    assert result.error is None, result.error
    assert result.hits, f"{mutation.name} changes no kernel"
    missed = result.missed  # hits not detected, but for those Mutation.benign explains
    assert not missed, f"{mutation.name} not reported for {missed}"


def test_mutation_table_markdown() -> None:
    m = mut.CATALOGUE[0]
    res = mut.MutationResult(m, [mut.Hit("k", True, ["deadlock"], "FAIL")])
    text = mut.markdown([res])
    assert text.splitlines()[0].startswith("| mutation | bug |")
    assert f"| {m.name} | {m.bug} | {m.template} | 1 | 1 | deadlock |" in text
    # a hit whose mutant is the same program is listed as not applicable, not as a miss
    res.hits.append(mut.Hit("k2", False, same="the same program with EPI_CHUNKS = 1"))
    assert res.ok and not res.missed
    assert "| 2 | 1 | deadlock; not applicable in k2: the same program with EPI_CHUNKS = 1 |" in (
        mut.markdown([res])
    )
    # ... and a mutation that is the same program in every kernel it changes seeds nothing
    assert not mut.MutationResult(m, [res.hits[1]]).ok


# a loop over the epilogue's chunks releasing the accumulator slot after the chunk `last`
CHUNKS_SRC = """\
EPI_CHUNKS = {chunks}
LAST = EPI_CHUNKS - 1


def drain(release):
    for i in range(EPI_CHUNKS):
        if i == {last}:  # the last load
            release(i)
"""


@pytest.mark.parametrize(
    "chunks, last, same",
    [
        (1, "EPI_CHUNKS - 1", "the same program with EPI_CHUNKS = 1"),
        (1, "LAST", "the same program with LAST = 0"),
        (1, "-(1 - EPI_CHUNKS)", "the same program with EPI_CHUNKS = 1"),
        (2, "EPI_CHUNKS - 1", ""),
        (2, "LAST", ""),
        (1, "0", "the same syntax tree (only comments or layout changed)"),
    ],
)
def test_same_program_folds_constants(chunks: int, last: str, same: str) -> None:
    original = CHUNKS_SRC.format(chunks=chunks, last=last)
    mutant = CHUNKS_SRC.format(chunks=chunks, last="0").replace("the last", "the first")
    assert mut.same_program(original, mutant) == same


@pytest.mark.parametrize(
    "rebind",
    [
        "EPI_CHUNKS = 2\n",  # assigned twice: not a constant
        "def f(EPI_CHUNKS):\n    return EPI_CHUNKS\n",  # a parameter shadows it
        "for EPI_CHUNKS in range(3):\n    pass\n",
        "def g():\n    global EPI_CHUNKS\n",
        "from math import tau as EPI_CHUNKS\n",
    ],
)
def test_same_program_needs_constants(rebind: str) -> None:
    """A name bound anywhere else is no constant: the mutant is not claimed to be the same."""
    original = CHUNKS_SRC.format(chunks=1, last="EPI_CHUNKS - 1") + rebind
    mutant = CHUNKS_SRC.format(chunks=1, last="0") + rebind
    assert mut.same_program(original, mutant) == ""


def test_same_program_not_for_changed_constants() -> None:
    """A mutation of a constant's value is a different program, however it is spelled."""
    original = CHUNKS_SRC.format(chunks=2, last="EPI_CHUNKS - 1")
    assert mut.same_program(original, original.replace("EPI_CHUNKS = 2", "EPI_CHUNKS = 1")) == ""
    assert mut.same_program(original, original.replace("i == EPI", "i == 1 + EPI")) == ""


EARLY_ACC = next(m for m in mut.CATALOGUE if m.name == "sm100-early-acc-release")
ONE_EPI_STEP = re.compile(r"^EPI_(CHUNKS|SUBTILES) = 1\b", re.MULTILINE)
# kernels of one direct-epilogue chunk (tile N 32 or 64: a chunk is up to 64 columns) that the
# mutation's old benign name pattern (tile N = 16) left out: they were reported as misses
ONE_CHUNK = [
    "sm100_bf16_128x32x64_s11_sw128_ws_acc2_direct_streamk",
    "sm100_bf16_128x32x64_s8_sw128_ws_swap_direct_splitk2",
    "sm100_bf16_64x32x64_s18_sw128_ws_swap_direct_persistent_rm",
    "sm100_bf16_128x64x64_s9_sw128_ws_direct_biascol_splitk4_sep",
    "sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32",
]


def test_early_acc_release_same_program_in_one_step_epilogues(renderer: mut.Renderer) -> None:
    """The early TMEM-slot release (`if i == 0:` for `if i == EPI_CHUNKS - 1:`, or
    EPI_SUBTILES) changes nothing in a kernel whose epilogue takes one step: exactly those hits
    are the same program; every other is a real mutant."""
    hits = renderer.hits(EARLY_ACC)
    same = {}
    for spec, text in hits:
        original = renderer.original(spec)
        why = mut.same_program(original, text)
        assert bool(why) == bool(ONE_EPI_STEP.search(original)), spec.name
        if why:
            same[spec.name] = why
    assert set(ONE_CHUNK) <= same.keys()
    assert set(same.values()) == {
        "the same program with EPI_CHUNKS = 1",
        "the same program with EPI_SUBTILES = 1",
    }
    assert len(same) < len(hits)


def test_early_acc_release_one_chunk_not_a_miss(renderer: mut.Renderer) -> None:
    """Run on a one-chunk kernel and a four-chunk one: the first is not applicable (and not
    verified), the second is detected (the slot is overwritten while later chunks read it)."""
    names = {ONE_CHUNK[0], "sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk"}
    sub = mut.Renderer([s for s in renderer.specs if s.name in names])
    (result,) = mut.run([EARLY_ACC], renderer=sub)
    assert result.ok, mut.markdown([result])
    by_name = {h.spec: h for h in result.hits}
    assert by_name.keys() == names
    assert by_name[ONE_CHUNK[0]].same == "the same program with EPI_CHUNKS = 1"
    four = by_name["sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk"]
    assert four.detected and not four.same and "buffer-race" in four.new


# -- the partial-order checker against explicit-state exploration -------------------------------

# ladder step 3 with a bare A/B producer tail put back in place of its own (at the end of its
# producer helper, the first to return the ring position), then seeded bugs on top
TAIL_CODE = """\
    for _ in cutlass.range(STAGES, unroll=1):
        cute.arch.mbarrier_wait(empty + stage, phase)
        stage, phase = ring_next(stage, phase, STAGES)
"""
TAIL = ("    return stage, phase\n", TAIL_CODE + "    return stage, phase\n")
# a ring advance that keeps its phase (`_`) is a missing parity flip
FLIP = "        stage, {} = ring_next(stage, phase, STAGES)\n    {}"
L3_MUTANTS = {
    "with-tail": [],
    "mma-flip": [(FLIP.format("phase", "with"), FLIP.format("_", "with"))],
    "producer-flip": [(FLIP.format("phase", "for _"), FLIP.format("_", "for _"))],
    "epilogue-parity": [("mbarrier_wait(acc_full, 0)", "mbarrier_wait(acc_full, 1)")],
    "tx-bytes": [("(full + stage, TX_BYTES)", "(full + stage, TX_BYTES // 2)")],
    "no-full-wait": [("        cute.arch.mbarrier_wait(full + stage, phase)", "        pass")],
}


@pytest.mark.parametrize("mutant", list(L3_MUTANTS), ids=str)
def test_explicit_exploration_agrees(mutant: str) -> None:
    """Breadth-first search of every state (PTX parity semantics) and the partial-order checker
    reach the same verdict, and the explorer's first violation is one the checker reports."""
    text = l3_without_tail().replace(*TAIL, 1)
    for old, new in L3_MUTANTS[mutant]:
        assert old in text
        text = text.replace(old, new, 1)
    source = KernelSource(text, f"ladder_3_{mutant}")
    for k_tiles in (2, 5):  # inside the 4-stage ring, and around it
        model = source.trace(Problem(128, 256, 16 * k_tiles))
        props = {v.prop for v in check_model(model).violations}
        outcome = explore(model, max_states=200_000)
        assert (outcome.violation is None) == (not props), (k_tiles, outcome.violation, props)
        if outcome.violation:
            assert outcome.violation in props, (k_tiles, outcome.violation, props)
        if mutant == "with-tail":
            assert outcome.states > 10_000  # the whole space was walked


def test_explicit_exploration_finds_a_missing_producer_tail() -> None:
    model = KernelSource(l3_without_tail(), "ladder_3").trace(Problem(128, 256, 16))
    outcome = explore(model)
    assert outcome.violation == "exit-pending"
    assert outcome.trace[-1].startswith("-> exit-pending")


# -- the checker on hand-made models -------------------------------------------------------------


def _op(kind: str, *args: object, threads: int = 1, line: int = 1) -> Op:
    return Op(kind, args, threads, line, ((line,), ()))


def _model(*actors: list[Op]) -> KernelModel:
    launch = LaunchModel(
        "k",
        (1, 1, 1),
        32 * len(actors),
        (1, 1, 1),
        [0],
        [Actor(f"cta0.w{i}", 0, i, tuple(range(32)), list(ops)) for i, ops in enumerate(actors)],
    )
    return KernelModel([launch])


FULL, EMPTY = Bar(0, "full", 0), Bar(0, "empty", 0)


def _ring(consumer_flips: bool) -> KernelModel:
    """One-stage ring, two laps: producer arrives on full, consumer waits full and arrives on
    empty; the consumer's second wait uses parity 1, or 0 if it forgets to flip."""
    init = [_op("init", FULL, 1), _op("init", EMPTY, 1), _op("nbar", 0, 0, 64, True, threads=32)]
    producer = init + [
        _op("arrive", FULL, 1, 0),
        _op("wait", EMPTY, 0, threads=32),
        _op("arrive", FULL, 1, 0),
    ]
    consumer = [
        _op("nbar", 0, 0, 64, True, threads=32),
        _op("wait", FULL, 0, threads=32),
        _op("arrive", EMPTY, 1, 0),
        _op("wait", FULL, 1 if consumer_flips else 0, threads=32, line=7),
    ]
    return _model(producer, consumer)


def test_ring_passes() -> None:
    assert check_model(_ring(True)).ok


def test_missing_parity_flip_is_phase_aliasing() -> None:
    result = check_model(_ring(False))
    assert "phase-aliasing" in {v.prop for v in result.violations}


def test_deadlock_trace_names_role_op_barrier_phase() -> None:
    model = _model(
        [_op("init", FULL, 1), _op("wait", FULL, 0, threads=32, line=9)],
    )
    (v,) = check_model(model).violations
    assert v.prop == "deadlock"
    assert "cta0.w0 blocked at line 9: wait full[0]@cta0 parity 0 for phase 0" in "\n".join(v.trace)


def test_untracked_branch_around_a_barrier_is_not_modelled() -> None:
    text = (
        ROOT
        / "generated"
        / "cutegemm"
        / "sm100"
        / "sm100_f16_128x256x16_s4_inter_ws_direct_grid.py"
    ).read_text()
    # make the MMA warp's commit depend on an accumulator value the model cannot know
    bad = text.replace(
        "        with cute.arch.elect_one():\n            tcgen05.commit(empty + stage)",
        "        if acc.load() > 0:\n            tcgen05.commit(empty + stage)",
        1,
    )
    assert bad != text
    report = verify_text(bad, "ladder_3_mutant")
    assert report.status == "NOT MODELLED"
    assert "data-dependent branch" in report.reason


def test_unknown_sync_primitive_is_not_modelled() -> None:
    text = (
        ROOT
        / "generated"
        / "cutegemm"
        / "sm90"
        / "sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid.py"
    ).read_text()
    bad = text.replace(
        "    cute.arch.mbarrier_init_fence()", "    cute.arch.mbarrier_shiny_new_arrive()", 1
    )
    report = verify_text(bad, "h_mutant")
    assert report.status == "NOT MODELLED"
    assert "mbarrier_shiny_new_arrive is not modelled" in report.reason


def test_stand_in_refuses_real_imports() -> None:
    report = verify_text("import torch\n", "x")
    assert report.status == "NOT MODELLED"
    assert "import of torch" in report.reason


# -- the command ---------------------------------------------------------------------------------


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, "-m", "codegen", "verify", "-j", "1", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_pass() -> None:
    proc = _cli("--only", "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid" in proc.stdout
        and "1/1 passed" in proc.stdout
    )


def test_cli_failure_prints_a_counterexample(tmp_path: Path) -> None:
    kernel = (
        tmp_path / "gen" / "cutegemm" / "sm100" / "sm100_f16_128x256x16_s4_inter_ws_direct_grid.py"
    )
    kernel.parent.mkdir(parents=True)
    kernel.write_text(l3_without_tail())
    proc = _cli("--dir", str(tmp_path / "gen"), "--markdown")
    assert proc.returncode == 1
    assert "| sm100_f16_128x256x16_s4_inter_ws_direct_grid | grid |" in proc.stdout
    assert "[exit-pending] CTA 0 can exit while [tcgen05.commit arrives on empty[" in proc.stdout
    assert "cta0.w1: tcgen05.commit -> empty[" in proc.stdout  # the issue ...
    assert "-> CTA 0 exits; still pending: tcgen05.commit arrives on empty[" in proc.stdout


def test_persistent_sizes_cross_k_tiles_with_tiles_per_cta() -> None:
    """Persistent kernels (ping-pong first): every k-tile count with 1, 2 and 3 tiles for the
    first worker, and K = 0; a ring position after a tile depends on both."""
    from codegen.verify.sizes import cases, k_counts

    path = next(
        p for p in FILES if p.stem == "sm90_bf16_64x256x64_s4_sw128_ws_wg2_pp_tma_persistent_rm"
    )
    todo = cases(KernelSource(path.read_text(), path.stem))
    got = {(c.k_tiles, c.tiles) for c in todo if "tiles=" not in c.label}
    assert got == {(k, t) for k in [*k_counts(4), 0] for t in (1, 2, 3)}
    # and 2 x 2 tiles, so that a tile has N coordinate 1 (numeric)
    (extra,) = [c for c in todo if "tiles=" in c.label]
    assert extra.label == "k=2 tiles=2x2" and extra.problem.n == 2 * 256


# epilogue functions whose values the numeric emulation cannot follow
FN_NOT_FOLLOWED = {"clamp_bias", "residual_add", "gelu_tanh_residual"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_numeric_emulation_follows_every_store(path: Path, verified: dict) -> None:
    """The numeric cross-check ran on every case with K > 0 of every kernel: it followed the
    value of every store to C (no value it lost track of) and checked at least one."""
    report = verified[path.stem][0]
    if "_light_" in path.stem:
        # a light kernel's operands move per lane, below the tile level: said, not followed
        assert all(c.numeric_unknown == LIGHT_NUMERIC for c in report.cases)
        return
    fn = (KernelSource(path.read_text(), path.stem).spec.get("epilogue") or {}).get("fn") or {}
    if fn and fn["ref"].rsplit(":", 1)[1] in FN_NOT_FOLLOWED:
        # values the emulation does not model (min / max, a second input tile): it says so,
        # and the GPU test checks their numerics (`codegen test`)
        followed = [
            c.case.label
            for c in report.cases
            if c.case.problem.k and c.case.problem.numeric and not c.violations
            and not c.numeric_unknown
        ]  # fmt: skip
        assert not followed, f"followed after all (drop it from FN_NOT_FOLLOWED): {followed}"
        return
    # row_sumsq: C is followed; the row partials' stores are seen and said to be not followed
    epi = KernelSource(path.read_text(), path.stem).spec.get("epilogue") or {}
    sumsq = bool(epi.get("row_sumsq"))
    # block_quant: the same of the block scales' stores
    scales = bool(epi.get("block_quant"))
    for case in report.cases:
        if case.case.problem.k == 0 or not case.case.problem.numeric or case.violations:
            continue
        assert case.numeric_unknown is None, f"[{case.case.label}] {case.numeric_unknown}"
        assert case.stores > 0, f"[{case.case.label}] no store to C was checked"
        if sumsq:
            assert (case.numeric_unfollowed or "").startswith("row_partials (row_sumsq): "), (
                f"[{case.case.label}] row partials not reported: {case.numeric_unfollowed}"
            )
        elif scales:
            assert (case.numeric_unfollowed or "").startswith("scales (block_quant): "), (
                f"[{case.case.label}] block scales not reported: {case.numeric_unfollowed}"
            )
        else:
            assert case.numeric_unfollowed is None, f"[{case.case.label}] {case.numeric_unfollowed}"


def _l3_mutant(old: str, new: str) -> KernelReport:
    text = L3.read_text()
    assert old in text, f"ladder step 3 no longer contains {old!r}"
    return verify_text(text.replace(old, new, 1), "sm100_f16_128x256x16_s4_inter_ws_direct_grid")


def _numeric(report: KernelReport) -> list[str]:
    return [v.message for c in report.cases for v in c.violations if v.prop == "numeric"]


def test_numeric_catches_a_wrong_k_coordinate() -> None:
    """The TMA loads A's first k-tile for every k: only the emulation sees it (the protocol is
    intact), and it names the tile and the K ranges multiplied."""
    report = _l3_mutant("tAgA[(None, k)]", "tAgA[(None, 0)]")
    props = {v.prop for c in report.cases for v in c.violations}
    assert props == {"numeric"}
    assert any(
        "stores C[0:128, 0:256] of the 128x256x48 GEMM" in m
        and "A over k 0:16 is multiplied with B over k" in m
        for m in _numeric(report)
    ), _numeric(report)


def test_numeric_catches_a_short_k_loop_and_a_wrong_store_tile() -> None:
    short = _l3_mutant("k_tiles = cute.size(gA, mode=[2])", "k_tiles = cute.size(gA, mode=[2]) - 1")
    msgs = _numeric(short)
    assert any("k 32:48 missing" in m for m in msgs), msgs  # k = 3: the last k-tile
    # every CTA stores into output column tile 0: the 2 x 2 tile case sees it
    wrong = _l3_mutant(
        "gC = cute.local_tile(mC, TILER, coord, proj=(1, 1, None))",
        "gC = cute.local_tile(mC, TILER, (bm, 0, None), proj=(1, 1, None))",
    )
    msgs = _numeric(wrong)
    assert any("no product of A and B for these rows and columns" in m for m in msgs), msgs
    assert any("never written" in m for m in msgs) or len(msgs) >= 1


# -- gated pairs (swiglu, geglu): C (M, N / 2), one column per gate and up pair ------------------

GATED = sorted(
    (p for p in FILES if "_fn_swiglu_" in p.stem or "_fn_geglu_" in p.stem), key=lambda p: p.stem
)
GATED_SWAP = next(p for p in GATED if "_swap_" in p.stem and "swiglu" in p.stem)
GATED_SM90 = next(p for p in GATED if p.stem.startswith("sm90") and "_swap_" not in p.stem)


def _gated_mutant(path: Path, old: str, new: str) -> KernelReport:
    text = path.read_text()
    assert old in text, f"{path.stem} no longer contains {old!r}"
    return verify_text(text.replace(old, new, 1), path.stem)


def test_gated_pairs_are_checked_numerically() -> None:
    """Every gated pair's stores to C are followed (no "numerics: GPU test"): verify says pass."""
    from codegen.cli import verify_rows

    assert {p.stem.split("_")[0] for p in GATED} == {"sm90", "sm100"}
    for path in GATED:
        report = verify_file(path)
        assert report.status == "pass", (path.stem, report.reason)
        numeric = [c for c in report.cases if c.case.problem.k and c.case.problem.numeric]
        assert numeric and all(c.stores and not c.numeric_unknown for c in numeric), path.stem
        assert verify_rows([report])[1][0][-1] == "pass"


def test_numeric_catches_a_gated_pairs_short_k_loop() -> None:
    """The last k-tile dropped in a gated pair (swap AB: C^T): the store of C's columns names
    the gate and up columns of A B^T it is computed from and the k-tile missing."""
    report = _gated_mutant(
        GATED_SWAP,
        "k_tiles = cute.size(gA, mode=[3])",
        "k_tiles = cute.size(gA, mode=[3]) - 1",
    )
    msgs = _numeric(report)
    assert any(
        "stores C[0:16, 0:64]" in m and "(gate and up columns 0:128)" in m and "missing" in m
        for m in msgs
    ), msgs


def test_numeric_catches_a_gated_pairs_store_offset() -> None:
    """A gated store's tile at the wrong output columns: its columns' products are missing,
    and C's other columns are never written."""
    report = _gated_mutant(
        GATED_SM90,
        "gO = cute.local_tile(mC, (TILER[0], TILER[1] // 2), (tile_m, tile_n))",
        "gO = cute.local_tile(mC, (TILER[0], TILER[1] // 2), (tile_m, 0))",
    )
    msgs = _numeric(report)
    assert any("no product of A and B for these rows and columns" in m for m in msgs), msgs


def test_a_gated_view_the_emulation_cannot_map_is_said() -> None:
    """Gate columns 4 apart instead of 8 (overlapping runs): the emulation does not map that
    view; it says so rather than pass or report a column never written."""
    from codegen.cli import verify_rows

    report = _gated_mutant(GATED_SM90, "0, 8 * gO.stride[1]", "0, 4 * gO.stride[1]")
    assert report.status == "pass" and not _numeric(report)
    unknown = {
        c.numeric_unknown for c in report.cases if c.case.problem.numeric and c.case.problem.k
    }
    assert all(u and "through a view the emulation does not map" in u for u in unknown), unknown
    assert verify_rows([report])[1][0][-1] == "pass (protocol; numerics: GPU test)"


def test_gated_store_check_maps_columns() -> None:
    """C's columns [o0, o1) of a gated pair hold A B^T's [2 o0, 2 o1), each over all of K."""
    from collections import Counter

    from codegen.verify.numeric import Expect, check_store

    ex = Expect(128, 256, 64, gated=True)
    prod = lambda cols, k: ("prod", (0, 128), cols, k, k)
    tile = ("c", (0, 128), (64, 128))
    assert check_store(tile, Counter({prod((128, 256), (0, 64)): 1}), ex) is None
    # the tile's columns computed from another tile's gate and up columns
    wrong = check_store(tile, Counter({prod((0, 128), (0, 64)): 1}), ex)
    assert wrong and "C[0:128, 64:128] (gate and up columns 128:256)" in wrong
    # half its K
    short = check_store(tile, Counter({prod((128, 256), (0, 32)): 1}), ex)
    assert short and "k 32:64 missing" in short
    # a store that splits a block of 8 pairs is not followed (lost track), not passed
    split = check_store(("c", (0, 128), (64, 124)), Counter({prod((128, 256), (0, 64)): 1}), ex)
    assert split and "lost track" in split


def test_numeric_store_check_names_what_is_wrong() -> None:
    from collections import Counter

    from codegen.verify.numeric import Expect, check_store

    ex = Expect(128, 64, 96, beta=True)
    tile = ("c", (0, 128), (0, 64))
    prod = lambda k0, k1: ("prod", (0, 128), (0, 64), (k0, k1), (k0, k1))
    good = Counter({prod(0, 32): 1, prod(32, 96): 1, ("c", (0, 128), (0, 64)): 1})
    assert check_store(tile, good, ex) is None
    doubled = good + Counter({prod(32, 64): 1})
    assert "k 32:64 counted 2 times" in check_store(tile, doubled, ex)
    assert "k 0:32 missing" in check_store(tile, good - Counter({prod(0, 32): 1}), ex)
    no_c = good - Counter({("c", (0, 128), (0, 64)): 1})
    assert "beta C added 0 times (expected 1)" in check_store(tile, no_c, ex)
    assert "nothing wrote" in check_store(tile, Counter({("uninit",): 1}), ex)
