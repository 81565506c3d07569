"""Persistent grids sized by the GPU they run on (both architectures).

Static persistent, split-K cluster and stream-K kernels launch at most one worker per SM (per
cluster of SMs). The SM count used to be a constant of the file (148 on sm_100a, 132 on sm_90a);
now `gemm` takes it as a compile-time argument, sm_count, defaulting to DEFAULT_SM_COUNT (the
arch's flagship, what a cross-compile assumes), and launcher / compile_tvm_ffi pass the current
device's. The package runtime keys its compiled functions and its disk cache by that count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import kernel_glob, shipped

from codegen import build, plan
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm100 import rules as rules_sm100
from codegen.spec import PersistentScheduler, Spec, SplitKScheduler, StreamKScheduler

FLAGSHIP = {"sm_100a": rules_sm100.SM_COUNT, "sm_90a": rules_sm90.SM_COUNT}


def sized_by_sms(spec: Spec) -> bool:
    """The kernels whose grid is one wave of workers (not a CTA per tile)."""
    sched = spec.scheduler
    if isinstance(sched, SplitKScheduler):
        return sched.reduce == "cluster"
    return isinstance(sched, PersistentScheduler | StreamKScheduler)


FILES = [(p, build.read_spec(p)) for p in kernel_glob()]
SIZED = [(p, s) for p, s in FILES if sized_by_sms(s)]
OTHERS = [(p, s) for p, s in FILES if not sized_by_sms(s)]


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _constants(path: Path) -> dict[str, object]:
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def reference_workers(spec: Spec, sm_count: int) -> int:
    """One worker per SM (pair, cluster of SMs), capped as the spec says."""
    sched = spec.scheduler
    if isinstance(sched, StreamKScheduler):
        ctas = rules_sm100.streamk_ctas if spec.arch == "sm_100a" else rules_sm90.streamk_ctas
        return min(sm_count, ctas(spec))
    if isinstance(sched, SplitKScheduler):
        workers = sm_count // sched.splits
        return min(workers, sched.max_clusters) if sched.max_clusters else workers
    return min(sm_count, sched.sm_count or sm_count) // spec.cluster.size


def test_the_families() -> None:
    kinds = {(s.arch, s.scheduler.kind) for _, s in SIZED}
    assert kinds == {
        (arch, kind) for arch in FLAGSHIP for kind in ("persistent", "split_k", "stream_k")
    }
    assert len(OTHERS) > 20


@pytest.mark.parametrize(("path", "spec"), SIZED, ids=lambda x: getattr(x, "stem", ""))
def test_the_grid_is_sized_by_the_gpu(path: Path, spec: Spec) -> None:
    src = path.read_text(encoding="utf-8")
    consts = _constants(path)
    assert consts["DEFAULT_SM_COUNT"] == FLAGSHIP[spec.arch]
    # the fixed counts are gone: no SM_COUNT, MAX_WORKERS or MAX_CLUSTERS constant
    assert not {"SM_COUNT", "MAX_WORKERS", "MAX_CLUSTERS"} & set(consts)
    fns = _functions(path)
    gemm = fns["gemm"]
    assert gemm.args.args[-1].arg == "sm_count"
    assert ast.unparse(gemm.args.args[-1].annotation) == "cutlass.Constexpr"
    assert ast.unparse(gemm.args.defaults[-1]) == "DEFAULT_SM_COUNT"
    host = ast.unparse(gemm)
    assert host.count("max_workers(sm_count)") == 1
    # max_workers, run as generated, against the reference, on several GPUs
    env = {k: v for k, v in consts.items() if k.isupper()}
    exec(ast.unparse(fns["max_workers"]), env)  # noqa: S102 - the generated file's own function
    for sms in (FLAGSHIP[spec.arch], 132, 114, 78, 160):
        assert env["max_workers"](sms) == reference_workers(spec, sms), sms
    assert env["max_workers"](FLAGSHIP[spec.arch]) >= 1
    # launcher and compile_tvm_ffi compile for the device's SM count
    assert "sm_count = device_sm_count(a.device.index)" in src
    assert "cute.compile(gemm, *compile_args(), sm_count)" in src
    assert "cute.compile(gemm, *compile_args(tvm_ffi=True), sm_count, options=options)" in src


@pytest.mark.parametrize(("path", "spec"), OTHERS, ids=lambda x: getattr(x, "stem", ""))
def test_other_grids_take_no_sm_count(path: Path, spec: Spec) -> None:
    fns = _functions(path)
    assert [a.arg for a in fns["gemm"].args.args][-1] == "stream"
    assert "max_workers" not in fns and "device_sm_count" not in fns
    assert "DEFAULT_SM_COUNT" not in _constants(path)


def test_the_flagship_counts_are_the_old_constants() -> None:
    """On the flagship GPU (and in a cross-compile) the grids are what they were."""
    for path, spec in SIZED:
        env = {k: v for k, v in _constants(path).items() if k.isupper()}
        exec(ast.unparse(_functions(path)["max_workers"]), env)  # noqa: S102
        got = env["max_workers"](FLAGSHIP[spec.arch])
        if isinstance(spec.scheduler, StreamKScheduler):
            assert got == plan.plan(spec).values.sk.ctas, path.stem
        elif spec.arch == "sm_100a":
            assert got == rules_sm100.max_workers(spec), path.stem
        elif isinstance(spec.scheduler, SplitKScheduler):
            assert got == rules_sm90.splitk_max_clusters(spec), path.stem
        else:
            assert got == FLAGSHIP["sm_90a"] // spec.cluster.size, path.stem


def test_device_sm_count_without_a_gpu() -> None:
    """No CUDA device (this machine): the cross-compile's count."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("cutlass")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    for path, spec in (SIZED[0], SIZED[-1]):
        module = build.load_module(path)
        assert module.device_sm_count() == module.DEFAULT_SM_COUNT == FLAGSHIP[spec.arch]


@pytest.fixture(scope="module")
def runtime():

    pytest.importorskip("tvm_ffi")
    return shipped("_runtime")


def test_the_registry_and_the_runtime_key_by_sm_count(runtime) -> None:
    sized = {p.stem for p, _ in SIZED}
    for kern in runtime.KERNELS:
        want = FLAGSHIP[kern.arch] if kern.name in sized else None
        assert kern.default_sm_count == want, kern.name
        # a cross-compile (precompile) sizes the grid for the flagship
        assert runtime._sm_count(kern, None) == want
    kern = next(k for k in runtime.KERNELS if k.default_sm_count)
    keys = {runtime._cache_key(kern, kern.arch, n) for n in (None, 132, 114)}
    assert len(keys) == 3  # one library per SM count
    grid = next(k for k in runtime.KERNELS if k.default_sm_count is None)
    assert runtime._cache_key(grid, grid.arch) == runtime._cache_key(grid, grid.arch, None)
