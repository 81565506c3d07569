"""Does the speed hold on models the dispatcher never saw? The split, the sweep and the report.

`specs/shapes/models.toml` splits the public models' projections in two: the cost model is fitted
on the `tune` part only (`codegen fit`), and the `unseen` part is measured apart (`codegen sweep
--part unseen`) and reported first (`codegen report`): the dispatcher's pick, the best shipped
kernel (the oracle, which no user has) and torch, per dtype, at decode and prefill M.

A sweep times, per shape and dtype, every plain kernel of this GPU's arch that takes the shape
(prefill M: no swap-AB or cluster split-K kernels, which give M to the MMA's narrow side), torch,
and `cutegemm.gemm` itself (the dispatcher's pick as a user calls it), as CUDA graphs of
back-to-back launches over weights rotated past L2, interleaved in one process, clocks warmed
first. It writes one JSON line per measurement as it goes, so a run cut short keeps what it did.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import statistics
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PROJECTIONS = ("qkv", "o", "up", "down")


@dataclass(frozen=True)
class Split:
    path: Path
    models: dict[str, dict]  # model name -> its entry in the source file
    tune: tuple[str, ...]
    unseen: tuple[str, ...]
    decode_m: tuple[int, ...]
    prefill_m: tuple[int, ...]
    max_tflop: float


@dataclass(frozen=True)
class Product:
    model: str
    proj: str
    m: int
    n: int
    k: int

    @property
    def label(self) -> str:
        return f"{self.model} {self.proj} M={self.m}"

    @property
    def decode(self) -> bool:
        return self.m <= 256


def load_split(path: Path) -> Split:
    """The split file and the model list it names; every model named must exist."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    source = path.parent / doc["source"]
    models = {m["name"]: m for m in tomllib.loads(source.read_text(encoding="utf-8"))["model"]}
    for part in ("tune", "unseen"):
        missing = [x for x in doc[part] if x not in models]
        if missing:
            raise ValueError(f"{path}: {part} names models {source.name} lacks: {missing}")
    overlap = set(doc["tune"]) & set(doc["unseen"])
    if overlap:
        raise ValueError(f"{path}: models in both parts: {sorted(overlap)}")
    return Split(
        path,
        models,
        tuple(doc["tune"]),
        tuple(doc["unseen"]),
        tuple(doc["decode_m"]),
        tuple(doc["prefill_m"]),
        float(doc["max_tflop"]),
    )


def projections(split: Split, part: str) -> list[tuple[str, str]]:
    """(model, projection) of `part` ("tune" or "unseen"); the unseen part leaves out a
    projection whose (N, K) a tune model has too (Qwen2.5-14B's and Qwen3-14B's attention
    output, 5120 x 5120, is Phi-4's): never seen means no product of that shape was measured."""
    tuned = {
        tuple(split.models[x][p]) for x in split.tune for p in PROJECTIONS if p in split.models[x]
    }
    out = []
    for name in getattr(split, part):
        entry = split.models[name]
        for proj in PROJECTIONS:
            if proj in entry and (part == "tune" or tuple(entry[proj]) not in tuned):
                out.append((name, proj))
    return out


def products(split: Split, part: str, decode: bool = True, prefill: bool = True) -> list[Product]:
    """Every (model, projection, M) of `part` ("tune" or "unseen"), prefill capped by max_tflop."""
    ms = (split.decode_m if decode else ()) + (split.prefill_m if prefill else ())
    out = []
    for name, proj in projections(split, part):
        n, k = split.models[name][proj]
        for m in ms:
            if 2 * m * n * k / 1e12 <= split.max_tflop:
                out.append(Product(name, proj, m, n, k))
    return out


def layer(split: Split, model: str) -> list[tuple[str, int, int]]:
    """One decoder layer's projections of `model`, in order: (name, N, K)."""
    entry = split.models[model]
    return [(p, *entry[p]) for p in PROJECTIONS if p in entry]


# ---- the sweep (GPU) ---------------------------------------------------------------------------


def submodules(pkg):
    """The package's _tune and _runtime modules (imported on first use, like gemm)."""
    import importlib

    return importlib.import_module(f"{pkg.__name__}._tune"), importlib.import_module(
        f"{pkg.__name__}._runtime"
    )


PREFILL_SWAP_ROWS = 96  # the narrowest swap-AB activation tile a prefill sweep times


def sweep_candidates(pkg, arch: str, dtype: str, out: str, prod: Product) -> list:
    """Every plain kernel of `arch` for (dtype, out) that takes the product; prefill leaves out
    cluster split-K kernels and the swap-AB kernels whose tile gives M fewer than
    PREFILL_SWAP_ROWS rows (decode tiles: at prefill M they run many times more tiles)."""
    _, rt = submodules(pkg)
    kernels = rt._BY_CLASS.get((arch, dtype, out, 1.0, 0.0, None, None), [])
    keep = []
    for kern in kernels:
        if rt._refusal(kern, prod.m, prod.n, prod.k) is not None:
            continue
        if not prod.decode and (
            (kern.swap_ab and kern.tile[1] < PREFILL_SWAP_ROWS)
            or (kern.scheduler == "split_k" and not kern.max_tiles)
        ):
            continue
        keep.append(kern)
    return keep


def sweep(
    pkg,
    prods: list[Product],
    dtypes: list[str],
    out_path: Path,
    rounds: int = 5,
    all_kernels: bool = True,
    log=print,
    only: list[str] | None = None,
    contenders: dict[tuple, list[str]] | None = None,
) -> None:
    """Time every candidate (or, with all_kernels False, only the pick; with `only`, the
    candidates whose names match one of these globs; with `contenders`, {(dtype, model, proj,
    M): kernel names}, only those of each product and the pick), torch and gemm() on each
    product, appending JSON lines to `out_path` (see the module's docstring)."""
    import torch

    tune, rt = submodules(pkg)
    gpu, arch = rt._device(torch.cuda.current_device())
    props = torch.cuda.get_device_properties(0)
    with out_path.open("a", encoding="utf-8") as f:

        def emit(**row) -> None:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()

        emit(kind="meta", gpu=gpu, arch=arch, sm_count=props.multi_processor_count,
             torch=torch.__version__, bandwidth=copy_bandwidth())  # fmt: skip
        for dtype in dtypes:
            out = "bf16"
            tin, tout = rt._TORCH[dtype], rt._TORCH[out]
            kerns = {p: sweep_candidates(pkg, arch, dtype, out, p) if all_kernels else []
                     for p in prods}  # fmt: skip
            if only is not None:
                kerns = {p: [k for k in ks if any(fnmatch.fnmatchcase(k.name, g) for g in only)]
                         for p, ks in kerns.items()}  # fmt: skip
            t0 = time.perf_counter()
            picks = {p: pkg.kernel_for(p.m, p.n, p.k, dtype=tin, out_dtype=tout) for p in prods}
            if contenders is not None:
                kerns = {p: [k for k in ks if k.name in contenders.get(
                    (dtype, p.model, p.proj, p.m), ()) or k.name == picks[p].name]
                    for p, ks in kerns.items()}  # fmt: skip
            ready = set(picks.values()) | {k for ks in kerns.values() for k in ks}
            tune.compile_ahead(ready, arch, 0)  # gemm()'s picks too: none compiles mid-sweep
            log(f"{dtype}: {len(ready)} kernels ready ({time.perf_counter() - t0:.0f} s)")
            tune.warm_clocks(3.0)
            for i, prod in enumerate(prods):
                pick = picks[prod]
                cands = kerns[prod] if all_kernels else [pick]
                base = {"model": prod.model, "proj": prod.proj, "dtype": dtype,
                        "out_dtype": out, "m": prod.m, "n": prod.n, "k": prod.k}  # fmt: skip
                try:
                    times, torch_us, failed, gemm_us = measure_with_gemm(
                        pkg, cands, arch, prod, tin, tout, rounds
                    )
                except RuntimeError as e:  # e.g. torch._scaled_mm's own shape limits
                    emit(kind="skipped", why=str(e).splitlines()[0], **base)
                    continue
                for name, us in times.items():
                    emit(kind="time", kernel=name, us=round(us, 3), **base)
                for name, why in failed.items():
                    emit(kind="failed", kernel=name, why=why, **base)
                emit(kind="torch", us=round(torch_us, 3), **base)
                emit(kind="gemm", kernel=pick.name, us=round(gemm_us, 3), **base)
                best = min(times.values()) if times else math.nan
                log(f"[{dtype} {i + 1}/{len(prods)}] {prod.label} N={prod.n} K={prod.k}: "
                    f"pick {pick.name} {gemm_us:.1f} us, best {best:.1f}, torch {torch_us:.1f} "
                    f"({len(times)} timed, {time.perf_counter() - t0:.0f} s)")  # fmt: skip


def measure_with_gemm(pkg, kernels, arch, prod: Product, tin, tout, rounds: int):
    """The package's tune.measure of the candidates and torch, plus gemm() as a user calls it,
    in one interleaving: (times, torch µs, failed, gemm µs)."""
    tune, _ = submodules(pkg)

    def gemm_launch(a, b, c):
        return lambda: pkg.gemm(a, b, out=c)

    times, torch_us, failed = tune.measure(
        kernels, arch, prod.m, prod.n, prod.k, tin, tout, rounds, extra={"@gemm": gemm_launch}
    )
    if "@gemm" in failed:
        raise RuntimeError(f"gemm(): {failed['@gemm']}")
    return times, torch_us, failed, times.pop("@gemm")


def contenders(got: dict[tuple, Measured], shipped: set[str], top: int) -> dict[tuple, list]:
    """{(dtype, model, proj, M): the `top` fastest shipped kernels} of earlier sweeps (read_runs):
    the kernels a same-process re-timing needs to find each product's best (the oracle), so a
    pick's distance from it is measured in one process, not across days."""
    out = {}
    for key, rec in got.items():
        times = {k: v for k, v in rec.times.items() if k in shipped}
        out[key] = sorted(times, key=times.__getitem__)[:top]
    return out


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/µs (read + write), median of 10 copies of 2 GiB."""
    import torch

    x = torch.empty(1 << 30, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(12):
        start.record()
        y.copy_(x)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return 2 * x.numel() * x.itemsize / statistics.median(samples[2:])


# ---- reading a sweep (CPU) ---------------------------------------------------------------------


@dataclass
class Measured:
    """One product's measurements from a sweep."""

    prod: Product
    dtype: str
    times: dict[str, float]  # kernel -> µs
    torch_us: float
    gemm_us: float | None
    gemm_kernel: str | None


@functools.cache
def renames() -> dict[str, str]:
    """Old kernel name -> new name: the package's rename table (templates/package/_renames.py,
    cutegemm._renames), which maps the names of the kept sweeps measured before the rename."""
    from codegen.render import package_module

    return dict(package_module("_renames.py", "cutegemm_renames").RENAMED)


def _lines(path: Path) -> list[str]:
    """A sweep file's lines (`.xz`: compressed, as the ones kept in specs/tuning/sweeps/)."""
    if path.suffix == ".xz":
        import lzma

        return lzma.decompress(path.read_bytes()).decode("utf-8").splitlines()
    return path.read_text(encoding="utf-8").splitlines()


def read_compiled(paths: list[Path]) -> list[dict]:
    """The kind="compiled" lines of sweep files (compiled_baseline)."""
    return [
        row for path in paths for row in map(json.loads, _lines(path)) if row["kind"] == "compiled"
    ]


def read_runs(
    paths: list[Path], calibrate: bool = False, gemm_from_first: bool = False
) -> tuple[dict, dict[tuple, Measured]]:
    """(the first meta line, {(dtype, model, proj, m): Measured}); a later line for the same
    (product, kernel) replaces an earlier one. With `gemm_from_first`, gemm() times come from the
    first file alone (a `--pick-only` sweep of the dispatcher as rendered now; the later files
    give the kernels' times). With `calibrate`, the times of each file after
    the first are put on the first file's clock: scaled, per (dtype, M), by the geometric mean
    of first / this file's torch time over the products both timed (sweeps from two machines or
    days differ by a few percent; torch is the yardstick both measured). A file that shares no
    product with the first at some (dtype, M) is taken as it is there. A kernel measured under
    a name it had before the rename (renames) is read under its new name."""
    renamed = renames()
    meta: dict = {}
    got: dict[tuple, Measured] = {}
    base_torch: dict[tuple, float] = {}
    for i, path in enumerate(paths):
        rows = [json.loads(line) for line in _lines(path)]
        scale = _clock_ratio(base_torch, rows) if calibrate and i else {}
        for row in rows:
            if row["kind"] == "meta":
                meta = meta or row
                continue
            if row["kind"] in ("skipped", "failed", "compiled"):
                continue
            prod = Product(row["model"], row["proj"], row["m"], row["n"], row["k"])
            key = (row["dtype"], prod.model, prod.proj, prod.m)
            us = row["us"] * scale.get((row["dtype"], prod.m), 1.0)
            rec = got.setdefault(key, Measured(prod, row["dtype"], {}, math.nan, None, None))
            if row["kind"] == "time":
                rec.times[renamed.get(row["kernel"], row["kernel"])] = us
            elif row["kind"] == "torch":
                rec.torch_us = us
                if i == 0:
                    base_torch[key] = us
            elif row["kind"] == "gemm" and not (gemm_from_first and i):
                rec.gemm_us, rec.gemm_kernel = us, renamed.get(row["kernel"], row["kernel"])
    return meta, got


def _clock_ratio(base_torch: dict[tuple, float], rows: list[dict]) -> dict[tuple, float]:
    """{(dtype, M): geomean of the first file's torch µs / these rows' torch µs}."""
    ratios: dict[tuple, list[float]] = {}
    for row in rows:
        if row["kind"] == "torch":
            first = base_torch.get((row["dtype"], row["model"], row["proj"], row["m"]))
            if first and row["us"] > 0:
                ratios.setdefault((row["dtype"], row["m"]), []).append(first / row["us"])
    return {key: geomean(v) for key, v in ratios.items()}


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def iter_part(
    got: dict[tuple, Measured], split: Split, part: str, dtype: str
) -> Iterator[Measured]:
    """The measured products of `part` (its projections, see `projections`) for `dtype`."""
    keep = set(projections(split, part))
    for (dt, model, proj, _), rec in sorted(got.items()):
        if dt == dtype and (model, proj) in keep and rec.times and math.isfinite(rec.torch_us):
            yield rec


# ---- torch.compile(mode="max-autotune") (GPU) --------------------------------------------------


def compiled_baseline(pkg, prods: list[Product], dtype: str, out_path: Path, rounds: int = 5,
                      log=print) -> None:  # fmt: skip
    """What a user would try instead: torch.compile's max-autotune (Triton templates benchmarked
    beside cuBLAS) of the same product, without its own CUDA graphs so that it is captured and
    timed exactly like gemm() and torch, interleaved with both; JSON lines kind="compiled"."""
    import torch

    tune, rt = submodules(pkg)
    tin, tout = rt._TORCH[dtype], torch.bfloat16
    with out_path.open("a", encoding="utf-8") as f:
        for prod in prods:
            torch._dynamo.reset()
            if dtype == "e4m3":
                one = torch.ones((), device="cuda")

                def product(a, b, one=one):
                    return torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=tout)
            else:

                def product(a, b):
                    return torch.mm(a, b.T)

            fn = torch.compile(product, mode="max-autotune-no-cudagraphs", dynamic=False)
            sets = tune.input_sets(prod.m, prod.n, prod.k, tin, tout)
            t0 = time.perf_counter()
            try:
                a, b, _ = sets[0]
                got = fn(a, b)
                ref = a.float() @ b.float().T
                err = ((got.float() - ref).norm() / ref.norm()).item()
                graphs = {
                    "compiled": (tune.graph_of([lambda x=x, y=y, f=fn: f(x, y) for x, y, _ in sets]),
                                 len(sets)),
                    "gemm": (tune.graph_of([lambda x=x, y=y, z=z: pkg.gemm(x, y, out=z)
                                            for x, y, z in sets]), len(sets)),
                    "torch": (tune.graph_of([tune.torch_launch(x, y, z) for x, y, z in sets]),
                              len(sets)),
                }  # fmt: skip
            except Exception as e:  # noqa: BLE001 - inductor cannot always compile a product
                log(f"compiled {prod.label}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                continue
            compile_s = time.perf_counter() - t0
            times = tune.time_graphs(graphs, rounds)
            row = {"kind": "compiled", "model": prod.model, "proj": prod.proj, "dtype": dtype,
                   "m": prod.m, "n": prod.n, "k": prod.k, "us": round(times["compiled"], 3),
                   "gemm_us": round(times["gemm"], 3), "torch_us": round(times["torch"], 3),
                   "rel_err": err, "compile_s": round(compile_s, 1)}  # fmt: skip
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            log(f"compiled {prod.label}: max-autotune {times['compiled']:.1f} us, gemm "
                f"{times['gemm']:.1f}, torch {times['torch']:.1f} (compile {compile_s:.0f} s)")  # fmt: skip


def spread(prods: list[Product], count: int) -> list[Product]:
    """`count` products spread evenly over M, projections and models: every k-th of the list
    ordered by (M, projection, model)."""
    if count >= len(prods):
        return prods
    ordered = sorted(prods, key=lambda p: (p.m, p.proj, p.model))
    step = len(ordered) / count
    return [ordered[int(i * step + step / 2)] for i in range(count)]
