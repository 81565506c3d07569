"""The dispatcher that generalizes, on the CPU: the cost model's shape arithmetic, its fit, the
fitted model file, the order gemm() picks in (the user's measurements, the table's exact entry,
the model, the rule), kernel_for without a GPU, and the per-GPU cache of cutegemm.tune (merged
under a lock by processes at once, never half-written)."""

from __future__ import annotations

import json
import math
import multiprocessing
import re
import sys
import types
from pathlib import Path

import pytest
from conftest import GENERATED, ROOT, shipped

from codegen import costmodel, generalize, package


@pytest.fixture(scope="module")
def pkg():
    return types.SimpleNamespace(
        cutegemm=shipped(), runtime=shipped("_runtime"), tune=shipped("_tune")
    )


def kern(**kw):
    base = {"name": "k", "tile": (64, 16, 64), "swap_ab": True, "scheduler": "split_k",
            "splits": 2, "max_tiles": None, "cluster": (1, 1), "dtype": "bf16",
            "out_dtype": "bf16"}  # fmt: skip
    return types.SimpleNamespace(**{**base, **kw})


def test_work_counts_waves_the_way_each_scheduler_walks_tiles() -> None:
    mod = costmodel.model_module()
    # swap AB: N = 5120 weight rows in 80 tiles of 64; split-K 2 runs 66 clusters: two rounds
    assert mod.work(kern(), 1, 5120, 4096, 132) == (2, 2 * 32, 66 * 2)
    # eight-way split K: 16 clusters, five rounds of 80 tiles, 8 k-tiles each
    assert mod.work(kern(splits=8), 1, 5120, 4096, 132) == (5, 5 * 8, 128)
    # a persistent 128x256 tile on M = 777, N = 5120: 7 x 20 = 140 tiles, two waves of 132
    big = kern(tile=(128, 256, 64), swap_ab=False, scheduler="persistent", splits=1)
    assert mod.work(big, 777, 5120, 4096, 132)[:2] == (2, 128)
    # stream-K: an equal share of all k-tiles per CTA
    sk = kern(scheduler="stream_k", splits=1)
    _, iters, ctas = mod.work(sk, 1, 5120, 4096, 132)
    assert ctas == 132 and iters == math.ceil(80 * 64 / 132)


def test_stream_k_weight_bands_read_the_weights_once_in_equal_groups() -> None:
    mod = costmodel.model_module()
    wb = kern(
        tile=(128, 192, 64), swap_ab=False, scheduler="stream_k", splits=1, sk_bands="weights"
    )
    # each weight tile is read by one group of CTAs
    assert mod.weight_reads(wb, 256, 132) == 1
    # N = 3072: 16 bands of 192-wide tiles, so 132 CTAs round down to 8 groups of 16 = 128
    assert mod.work(wb, 777, 3072, 3072, 132)[2] == 128
    # swap AB: the weights run along the kernel's M (128-row tiles): N = 5120 is 40 bands
    swapped = kern(tile=(128, 208, 64), scheduler="stream_k", splits=1, sk_bands="weights")
    assert mod.work(swapped, 777, 5120, 4096, 132)[2] == 120


def test_stream_k_hybrid_runs_waves_then_a_stream_k_share() -> None:
    mod = costmodel.model_module()
    dp = kern(
        tile=(128, 192, 64), swap_ab=False, scheduler="stream_k", splits=1, sk_data_parallel=True
    )
    # the persistent order: the weights are read once
    assert mod.weight_reads(dp, 8192, 132) == 1
    # 8192^3: 64 x 43 = 2752 tiles of 128 k-tiles on 132 CTAs: 20 full waves and 112 tiles, so
    # 19 waves data-parallel and 244 tiles stream-K, 237 k-tiles (ceil(244 * 128 / 132)) each:
    # a tail, a whole tile and a head
    assert mod.work(dp, 8192, 8192, 8192, 132) == (19 + 3, 19 * 128 + 237, 132)
    # 2 x 132 tiles: two whole waves, no stream-K part
    assert mod.work(dp, 256, 132 * 192, 4096, 132) == (2, 2 * 64, 132)
    # fewer tiles than CTAs: all stream-K, like the stream-K kernel
    sk = kern(tile=(128, 192, 64), swap_ab=False, scheduler="stream_k", splits=1)
    assert mod.work(dp, 777, 3072, 3072, 132) == mod.work(sk, 777, 3072, 3072, 132)


def test_stream_k_reads_the_weights_once_per_band() -> None:
    mod = costmodel.model_module()
    sk = kern(tile=(128, 192, 64), swap_ab=False, scheduler="stream_k", splits=1)
    # M = 256 in 128-row tiles: two bands, each walking every weight tile
    assert mod.weight_reads(sk, 256, 132) == 2
    assert mod.weight_reads(sk, 100, 132) == 1
    # swap AB: the bands run along the activations, here the kernel's 192-wide N
    assert mod.weight_reads(kern(tile=(128, 192, 64), scheduler="stream_k"), 777, 132) == 5
    # a persistent kernel walks down M first: each weight tile read once
    persistent = kern(tile=(128, 192, 64), swap_ab=False, scheduler="persistent", splits=1)
    assert mod.weight_reads(persistent, 8192, 132) == 1
    # the memory floor grows with it: A and C once, 470 MB of weights twice
    params = (0.0, 1e12, 1e12, 0.0, 1.0)
    t = mod.predict(sk, 256, 8192, 28672, params, 132, 4.15e6)
    floor = 2 * (256 * 28672 + 2 * 8192 * 28672) + 2 * 256 * 8192
    assert t == pytest.approx(floor / 4.15e6, rel=1e-6)


def test_correction_interpolates_in_log_m_and_holds_its_ends() -> None:
    mod = costmodel.model_module()
    pts = ((1, 0.0), (16, math.log(2.0)))
    assert mod.correction(1, pts) == 1.0
    assert mod.correction(4, pts) == pytest.approx(math.sqrt(2.0))
    assert mod.correction(1000, pts) == pytest.approx(2.0)
    assert mod.correction(7, ()) == 1.0


def test_local_correction_weighs_the_kernels_errors_near_the_shape() -> None:
    mod = costmodel.model_module()
    one = ((128, 4096, 4096, math.log(2.0), 0.0),)
    # on the measured product: two thirds of the error (one neighbour against SHRINK = 0.5 of
    # no error)
    assert mod.SHRINK == 0.5
    assert mod.local(128, 4096, 4096, one) == pytest.approx(2.0 ** (2 / 3))
    # a factor 4 away in N or 16 in M: nothing of it left
    assert mod.local(128, 16384, 4096, one) == pytest.approx(1.0, abs=1e-3)
    assert mod.local(8, 4096, 4096, one) == pytest.approx(1.0, abs=1e-3)
    assert mod.local(128, 4096, 4096, ()) == 1.0
    # many neighbours agreeing: close to their error; disagreeing: their weighted mean
    many = tuple((128, 4096, 4096, math.log(2.0), 0.0) for _ in range(19))
    assert mod.local(128, 4096, 4096, many) == pytest.approx(2.0 ** (19 / 19.5))
    mixed = ((128, 4096, 4096, 0.2, 0.0), (128, 4096, 4096, -0.2, 0.0))
    assert mod.local(128, 4096, 4096, mixed) == pytest.approx(1.0)


def test_at_decode_m_the_ranking_weighs_what_each_kernel_lost_nearby() -> None:
    mod = costmodel.model_module()
    params = (3.0, 5e6, 30e3, 0.5, 0.9)
    a, b = kern(name="a"), kern(name="b")  # the same kernel twice: the same estimate
    near = [(8, 4096, 4096 * s) for s in (1, 2)]
    model = {
        "sm_count": 132,
        "bandwidth": 4.0e6,
        "kernels": {
            # a was the fastest on both neighbours; b ran 10% slower there
            "a": (params, ((8, 0.0),), tuple((*p, 0.0, 0.0) for p in near)),
            "b": (params, ((8, 0.0),), tuple((*p, 0.0, round(math.log(1.1), 3)) for p in near)),
        },
    }
    got = mod.regrets(["a", "b"], 8, 4096, 6144, model)
    assert got["a"] == 0.0 and 0.5 * math.log(1.1) < got["b"] < math.log(1.1)
    assert [x.name for x in mod.rank([b, a], 8, 4096, 6144, model)] == ["a", "b"]
    # a product a kernel was not kept on counts as KEEP's regret
    model["kernels"]["b"] = (params, ((8, 0.0),), ())
    assert mod.regrets(["a", "b"], 8, 4096, 4096, model)["b"] > 0.9 * math.log(mod.KEEP) * (
        1 / (1 + mod.REGRET_SHRINK)
    )
    # far from every measured product, or above REGRET_M: no regret, the estimate alone
    assert max(mod.regrets(["a", "b"], 8, 65536, 512, model).values()) < 1e-6
    assert mod.regrets(["a", "b"], 777, 4096, 4096, model) == {}


def test_the_fit_keeps_errors_only_where_the_kernel_ran_near_the_fastest() -> None:
    mod = costmodel.model_module()
    k = kern()
    truth = (3.0, 5e6, 30e3, 0.5, 0.9)
    shapes = [(m, n, kk) for m in (1, 8) for n, kk in ((2048, 2048), (4096, 14336), (6144, 4096))]
    points = [(m, n, kk, mod.predict(k, m, n, kk, truth, 132, 4.0e6)) for m, n, kk in shapes]
    fastest = {(m, n, kk): us for m, n, kk, us in points}
    fastest[shapes[0]] = points[0][3] / 2  # another kernel ran twice as fast there
    fit = costmodel.fit_kernel(k, points, 132, 4.0e6, fastest)
    assert [r[:3] for r in fit.residuals] == sorted(shapes[1:])
    assert all(abs(r[3]) <= 0.05 for r in fit.residuals)  # the model fits its own truth
    assert all(r[4] == 0.0 for r in fit.residuals)  # it was the fastest on those it kept
    # a kernel within KEEP of the fastest keeps its regret: log of its time over the fastest's
    slower = {key: us / 1.2 for key, us in fastest.items()}
    fit = costmodel.fit_kernel(k, points, 132, 4.0e6, slower)
    assert [r[4] for r in fit.residuals] == [round(math.log(1.2), 3)] * 5


def test_the_fit_recovers_the_parameters_it_was_given() -> None:
    mod = costmodel.model_module()
    k = kern()
    truth = (3.0, 5e6, 30e3, 0.5, 0.9)
    points = [
        (m, n, kk, mod.predict(k, m, n, kk, truth, 132, 4.0e6))
        for m in (1, 8, 32)
        for n, kk in ((2048, 2048), (4096, 14336), (28672, 4096), (6144, 4096), (1024, 512))
    ]
    fit = costmodel.fit_kernel(k, points, 132, 4.0e6)
    assert fit.rms_log_error < 0.02
    assert all(abs(r) < 0.05 for _, r in fit.m_correction)
    assert fit.params[0] == pytest.approx(3.0, rel=0.2)


def test_the_fit_is_the_same_in_several_processes() -> None:
    """`codegen fit -j N` fits each kernel in its own process: the same fits, in the same order."""
    mod = costmodel.model_module()
    files = [p for p in package.kernel_files(GENERATED) if p.parent.name == "sm90"][:3]
    rows = {
        p.stem: package.read_entry(p.read_text(encoding="utf-8"), f"cutegemm/sm90/{p.name}").row()
        for p in files
    }
    truth = (3.0, 5e6, 30e3, 0.5, 0.9)
    shapes = [(m, n, k) for m in (1, 128, 777) for n, k in ((2048, 2048), (4096, 14336))]
    points = {
        name: [(m, n, k, mod.predict(costmodel.kernel_view(row), m, n, k, truth, 132, 4.0e6))
               for m, n, k in shapes]
        for name, row in rows.items()
    }  # fmt: skip
    one = costmodel.fit(rows, points, 132, 4.0e6)
    assert [f.name for f in one] == sorted(rows)
    assert costmodel.fit(rows, points, 132, 4.0e6, jobs=2) == one


def test_a_model_file_round_trips_and_bad_parameters_are_refused(tmp_path: Path) -> None:
    res = tuple((m, 4096, 1024 * m, 0.01 * m, 0.001 * m) for m in range(1, 7))
    fit = costmodel.Fit("a", (3.0, 5e6, 3e4, 0.5, 0.8), 9, 0.05, ((1, 0.1), (256, -0.2)), res)
    other = costmodel.Fit("gone", (3.0, 5e6, 3e4, 0.5, 0.8), 9, 0.05, ())
    text = costmodel.model_text([fit, other], "NVIDIA H200", "sm_90a", 132, 4.1e6, ["x"], "cmd")
    (tmp_path / f"h200{package.MODEL_SUFFIX}").write_text(text)
    (model,) = package.load_models(tmp_path, {"a"}, "specs/tuning")
    assert model.gpu == "NVIDIA H200" and model.sm_count == 132
    assert model.kernels == (("a", ((3.0, 5e6, 3e4, 0.5, 0.8), ((1, 0.1), (256, -0.2)), res)),)
    # a table loader skips the model file; a broken one is one line naming the file
    assert package.load_tables(tmp_path, {"a"}, "specs/tuning") == []
    (tmp_path / f"h200{package.MODEL_SUFFIX}").write_text(text.replace("0.5", "nan", 1))
    with pytest.raises(package.TuningError, match=r"h200\.model\.toml \[kernel 1\]: .*finite"):
        package.load_models(tmp_path, {"a"}, "specs/tuning")


def test_kernel_for_answers_for_a_named_gpu_without_one(pkg) -> None:
    import torch

    rt = pkg.runtime
    if "NVIDIA H200" not in rt.MODELS:
        pytest.skip("no H200 cost model rendered")
    model = rt.MODELS["NVIDIA H200"][2]
    # a product no table measured: the model's fastest of the kernels it ranks there
    m, n, k = 1, 5120, 3072
    got = pkg.cutegemm.kernel_for(m, n, k, gpu="NVIDIA H200")
    cls = ("bf16", "bf16", 1.0, 0.0, None, None)
    ranked = [x for x in rt._BY_CLASS[("sm_90a", *cls)] if x.name in model["kernels"]]
    ranked = [x for x in ranked if rt._model.measured_near(m, model["kernels"][x.name])]
    best = min(ranked, key=lambda x: rt._model.estimate(x, m, n, k, model))
    assert got.name == best.name and got.swap_ab
    # prefill: no decode-only kernel is extrapolated there (a swap-AB prefill tile may win)
    pick = pkg.cutegemm.kernel_for(3001, 5120, 3072, gpu="NVIDIA H200")
    assert rt._model.measured_near(3001, model["kernels"][pick.name])
    decode_only = [x for x in ranked if not rt._model.measured_near(3001, model["kernels"][x.name])]
    assert decode_only and pick.name not in {x.name for x in decode_only}
    assert pkg.cutegemm.kernel_for(8, 5120, 3072, dtype=torch.float8_e4m3fn,
                                   gpu="NVIDIA H200").dtype == "e4m3"  # fmt: skip
    with pytest.raises(rt.GemmError, match=r"no tuning table or cost model for 'NVIDIA X1'"):
        pkg.cutegemm.kernel_for(1, 64, 64, gpu="NVIDIA X1")
    # a GPU of a known arch with no model of its own: the pick gemm() makes there, from the
    # model of the first GPU of that arch (what _table falls back to)
    first = next(gpu for gpu, t in rt.MODELS.items() if t[0] == "sm_90a")
    for mnk in ((1, 5120, 3072), (777, 5120, 17920), (3001, 4096, 4096)):
        there = pkg.cutegemm.kernel_for(*mnk, gpu="NVIDIA H800", arch="sm_90a")
        assert there.name == pkg.cutegemm.kernel_for(*mnk, gpu=first).name
    with pytest.raises(rt.GemmError, match=r"pass arch="):
        pkg.cutegemm.kernel_for(1, 64, 64, gpu="NVIDIA H800")


def _store_one(cache_dir: str, i: int) -> None:
    import os

    os.environ["CUTEGEMM_CACHE_DIR"] = cache_dir
    sys.path.insert(0, str(GENERATED))
    from cutegemm import _tune

    for j in range(20):
        _tune._store("NVIDIA H200", {f"bf16|bf16|{i}|{j}|64": {"ranked": ["x"], "us": [1.0]}})


def test_the_cache_merges_writers_under_a_lock(tmp_path: Path, pkg, monkeypatch) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_store_one, args=(str(tmp_path), i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", str(tmp_path))
    path = pkg.tune.cache_file("NVIDIA H200")
    doc = json.loads(path.read_text())
    assert len(doc["entries"]) == 4 * 20  # every writer's every entry: none lost to a race
    assert not list(path.parent.glob("*.tmp"))


def test_gemm_picks_the_users_measurement_first(tmp_path: Path, pkg, monkeypatch) -> None:
    rt, tune = pkg.runtime, pkg.tune
    monkeypatch.setenv("CUTEGEMM_CACHE_DIR", str(tmp_path))
    cls = ("bf16", "bf16", 1.0, 0.0, None, None)
    m, n, k = 40, 3000, 1000
    before = rt._choose("NVIDIA H200", "sm_90a", cls, m, n, k)
    other = next(x for x in rt._BY_CLASS[("sm_90a", *cls)]
                 if x.name != before.name and rt._refusal(x, m, n, k) is None)  # fmt: skip
    tune._store("NVIDIA H200", {tune._key("bf16", "bf16", m, n, k): {"ranked": [other.name]}})
    assert rt._choose("NVIDIA H200", "sm_90a", cls, m, n, k).name == other.name
    # kernel_for(gpu=...) answers for the package as shipped, without the user's cache
    assert pkg.cutegemm.kernel_for(m, n, k, gpu="NVIDIA H200").name == before.name
    # a corrupt cache is ignored, never fatal
    tune._MEMO.clear()
    tune.cache_file("NVIDIA H200").write_text("{not json")
    assert rt._choose("NVIDIA H200", "sm_90a", cls, m, n, k).name == before.name
    tune._MEMO.clear()


def test_the_split_keeps_its_parts_apart(tmp_path: Path) -> None:
    split = generalize.load_split(ROOT / "specs" / "shapes" / "models.toml")
    assert not set(split.tune) & set(split.unseen)
    pairs = {
        name: {
            tuple(split.models[name][p]) for p in generalize.PROJECTIONS if p in split.models[name]
        }
        for name in split.models
    }
    seen = set().union(*(pairs[x] for x in split.tune))
    prods = generalize.products(split, "unseen")
    for p in prods:  # no product of a never-seen projection's shape was tuned on
        assert (p.n, p.k) not in seen, p
    # the two 14B models' attention output is Phi-4's (5120 x 5120): left out of the unseen part
    assert ("qwen3-14b", "o") not in generalize.projections(split, "unseen")
    assert ("qwen3-14b", "qkv") in generalize.projections(split, "unseen")
    assert all(2 * p.m * p.n * p.k <= split.max_tflop * 1e12 for p in prods)
    bad = tmp_path / "split.toml"
    bad.write_text(
        (ROOT / "specs/shapes/models.toml").read_text().replace('"qwen2.5-7b",', '"nope",')
    )
    (tmp_path / "public-models.toml").write_text(
        (ROOT / "specs/shapes/public-models.toml").read_text()
    )
    with pytest.raises(ValueError, match="lacks: \\['nope'\\]"):
        generalize.load_split(bad)


def test_every_never_seen_pick_is_a_kernel_the_sweep_timed_there(pkg) -> None:
    """On the kept H200 sweep of the unseen part, the dispatcher (no user cache) picks, for
    every product, a kernel that was measured on it (or, for a kernel shipped after the sweep,
    one fitted on tune products at that M): a prefill product never gets a swap-AB or split-K
    decode kernel extrapolated past the M range it was fitted on."""
    import torch

    split = generalize.load_split(ROOT / "specs" / "shapes" / "models.toml")
    _, got = generalize.read_runs([ROOT / "specs/tuning/sweeps/h200-2026-12-02b-unseen.jsonl.xz"])
    swept = {name for r in got.values() for name in r.times}
    fitted = pkg.runtime.MODELS["NVIDIA H200"][2]["kernels"]
    for dtype, tin in (("bf16", torch.bfloat16), ("e4m3", torch.float8_e4m3fn)):
        recs = list(generalize.iter_part(got, split, "unseen", dtype))
        assert len(recs) == len(generalize.products(split, "unseen"))
        for r in recs:
            p = r.prod
            name = pkg.cutegemm.kernel_for(
                p.m, p.n, p.k, dtype=tin, out_dtype=torch.bfloat16, gpu="NVIDIA H200"
            ).name
            if name in swept:
                assert name in r.times, (dtype, p.label, name)
            else:  # shipped after this sweep: fitted on tune products at this very M
                points = fitted[name][1]
                assert p.m in [m for m, _ in points], (dtype, p.label, name, points)


def test_report_prints_the_never_seen_table_from_the_kept_sweeps() -> None:
    from conftest import run_cli

    sweeps = ROOT / "specs" / "tuning" / "sweeps"
    proc = run_cli("report", sweeps / "h200-2026-12-02b-unseen.jsonl.xz",
                   sweeps / "h200-2026-12-02-compiled.jsonl.xz", "--markdown", cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith("| unseen")]

    def untimed(source: str) -> int:  # picks newer than the sweep: counted, left out
        hit = re.search(r"(\d+) picks never timed", source)
        return int(hit.group(1)) if hit else 0

    assert [(r[1], r[2], int(r[3]) + untimed(r[9])) for r in rows] == [
        (d, regime, n)
        for d in ("bf16", "e4m3")
        for regime, n in (("decode", 120), ("prefill", 57), ("all", 177))
    ]
    assert "nan" not in proc.stdout.lower()
    # the last column: picks within 3% by their own kernel rows, out of the picks with one
    for r in rows:
        got, timed = map(int, r[10].strip(" |").split("/"))
        assert 0 <= got <= timed <= int(r[3]) + untimed(r[9])
    assert "against torch.compile(mode='max-autotune')" in proc.stdout
    # the fit on the kept tune sweep names it, so it can be run again
    assert "h200-2026-12-02-tune.jsonl.xz" in (ROOT / "specs/tuning/h200.model.toml").read_text()


def test_calibrate_puts_a_later_sweep_on_the_first_ones_clock(tmp_path: Path) -> None:
    """A second sweep whose torch ran 1.25x slower at M=1 (another machine): with calibrate its
    kernel times are divided by 1.25 at that M, and left alone at an M the first never timed."""

    def write(path: Path, rows: list[dict]) -> Path:
        meta = {"kind": "meta", "gpu": "NVIDIA H200", "arch": "sm_90a", "sm_count": 132,
                "bandwidth": 4e6}  # fmt: skip
        path.write_text("\n".join(json.dumps(r) for r in [meta, *rows]) + "\n")
        return path

    def row(kind: str, m: int, us: float, kernel: str | None = None) -> dict:
        base = {"kind": kind, "model": "x", "proj": "up", "dtype": "bf16", "out_dtype": "bf16",
                "m": m, "n": 4096, "k": 4096, "us": us}  # fmt: skip
        return base | ({"kernel": kernel} if kernel else {})

    first = write(tmp_path / "a.jsonl", [row("torch", 1, 10.0), row("time", 1, 11.0, "old")])
    later = write(tmp_path / "b.jsonl", [row("torch", 1, 12.5), row("time", 1, 10.0, "new"),
                                         row("torch", 8, 20.0), row("time", 8, 30.0, "new")])  # fmt: skip
    _, raw = generalize.read_runs([first, later])
    _, cal = generalize.read_runs([first, later], calibrate=True)
    assert raw[("bf16", "x", "up", 1)].times == {"old": 11.0, "new": 10.0}
    assert cal[("bf16", "x", "up", 1)].times == pytest.approx({"old": 11.0, "new": 8.0})
    assert cal[("bf16", "x", "up", 1)].torch_us == pytest.approx(10.0)
    assert cal[("bf16", "x", "up", 8)].times == {"new": 30.0}
    # a pick-only sweep first (report --pick-sweep): its gemm() time stands, a later one's is
    # ignored, and the later kernel times come onto its clock
    pick = write(tmp_path / "p.jsonl", [row("torch", 1, 10.0), row("gemm", 1, 12.0, "old")])
    again = write(tmp_path / "c.jsonl", [row("torch", 1, 12.5), row("gemm", 1, 99.0, "new"),
                                         row("time", 1, 10.0, "new")])  # fmt: skip
    _, got = generalize.read_runs([pick, again], calibrate=True, gemm_from_first=True)
    rec = got[("bf16", "x", "up", 1)]
    assert (rec.gemm_us, rec.gemm_kernel) == (12.0, "old")
    assert rec.times == pytest.approx({"new": 8.0})


def test_contenders_are_each_products_fastest_shipped_kernels() -> None:
    """`sweep --contenders`: per product the `top` fastest kernels the package ships, fastest
    first; a kernel no longer shipped is passed over, a product with fewer keeps what it has."""
    rec = generalize.Measured(generalize.Product("x", "up", 8, 64, 64), "bf16",
                              {"a": 3.0, "gone": 1.0, "b": 2.0, "c": 4.0}, 5.0, None, None)  # fmt: skip
    few = generalize.Measured(generalize.Product("x", "o", 8, 64, 64), "bf16", {"c": 1.0}, 5.0,
                              None, None)  # fmt: skip
    got = generalize.contenders({("bf16", "x", "up", 8): rec, ("bf16", "x", "o", 8): few},
                                {"a", "b", "c"}, 2)  # fmt: skip
    assert got == {("bf16", "x", "up", 8): ["b", "a"], ("bf16", "x", "o", 8): ["c"]}


def test_sweep_refuses_contenders_beside_pick_only_or_a_missing_file(tmp_path: Path) -> None:
    """--contenders chooses the kernels itself: with --pick-only it is refused, and a sweep file
    that is not there is named, both before any GPU work."""
    from conftest import run_cli

    proc = run_cli("sweep", "--pick-only", "--contenders", str(tmp_path / "a.jsonl"), cwd=ROOT)
    assert proc.returncode != 0
    assert "not with --pick-only" in proc.stderr + proc.stdout
    proc = run_cli("sweep", "--contenders", str(tmp_path / "a.jsonl"), cwd=ROOT)
    assert proc.returncode != 0
    assert "a.jsonl: no such sweep file" in proc.stderr + proc.stdout


def test_nn_linear_is_torch_linear_with_its_product_on_gemm(pkg) -> None:
    """swap_linears turns every nn.Linear (not subclasses) into cutegemm's in place, the same
    parameters; its forward is gemm's (here on the CPU: gemm's device refusal, not F.linear)."""
    import torch

    sys.path.insert(0, str(GENERATED))
    try:
        from cutegemm import nn as cnn
    finally:
        sys.path.remove(str(GENERATED))
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    weight = model[0].weight
    assert cnn.swap_linears(model) is model
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    assert all(isinstance(m, cnn.Linear) for m in (model[0], model[2]))
    assert model[0].weight is weight
    with pytest.raises(pkg.runtime.GemmError, match="one CUDA device"):
        model(torch.randn(4, 32))


def test_sweep_refuses_an_m_the_split_does_not_have() -> None:
    """`codegen sweep --ms` names the split's M values when given another, before any GPU work."""
    from conftest import run_cli

    proc = run_cli("sweep", "--ms", "128,500", cwd=ROOT)
    assert proc.returncode != 0
    assert "--ms '128,500'" in proc.stderr + proc.stdout
    assert "1, 8, 32, 128, 256, 777, 3001, 8192" in proc.stderr + proc.stdout


def test_prefill_sweeps_time_wide_swap_tiles_only(pkg) -> None:
    """At prefill M a sweep times swap-AB kernels whose tile gives M at least PREFILL_SWAP_ROWS
    rows (the mid-M 128x200 tiles) and none of the narrow decode tiles or cluster split-K."""
    prod = generalize.Product("x", "up", 777, 8192, 8192)
    got = generalize.sweep_candidates(pkg.cutegemm, "sm_90a", "bf16", "bf16", prod)
    swaps = [k for k in got if k.swap_ab]
    assert any(k.tile[1] == 200 for k in swaps)
    assert all(k.tile[1] >= generalize.PREFILL_SWAP_ROWS for k in swaps)
    assert not [k for k in got if k.scheduler == "split_k" and k.max_tiles is None]
    decode = generalize.sweep_candidates(
        pkg.cutegemm, "sm_90a", "bf16", "bf16", generalize.Product("x", "up", 8, 8192, 8192)
    )
    assert any(k.swap_ab and k.tile[1] < generalize.PREFILL_SWAP_ROWS for k in decode)


def test_cross_validation_ranks_each_left_out_model_with_the_others_fit() -> None:
    mod = costmodel.model_module()
    fast = kern(name="fast", splits=4)
    slow = kern(name="slow", splits=2)
    truth = {"fast": (2.0, 5e6, 30e3, 0.5, 0.9), "slow": (6.0, 5e6, 30e3, 0.5, 0.9)}
    rows = {k.name: vars(k) for k in (fast, slow)}
    prods = []
    for model, shapes in (("a", ((2048, 2048), (4096, 4096))), ("b", ((6144, 4096), (8192, 2048))),
                          ("c", ((3072, 3072), (5120, 4096)))):  # fmt: skip
        for m in (1, 8):
            for n, k in shapes:
                times = {x.name: mod.predict(x, m, n, k, truth[x.name], 132, 4e6)
                         for x in (fast, slow)}  # fmt: skip
                prods.append((model, m, n, k, "bf16", times))
    held = costmodel.cross_validate(rows, prods, 132, 4e6)
    assert sorted({h.model for h in held}) == ["a", "b", "c"] and len(held) == len(prods)
    assert all(h.pick_us == h.best_us for h in held)  # the fast kernel, fitted without its model
