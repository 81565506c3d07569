"""The dispatcher's cost model: fit it on a sweep's measurements, write it, read it back.

The model itself (what a kernel's time is made of) is `templates/package/model.py.j2`, which the
package ships as `cutegemm._model` and this module loads as it is, so the fit and the dispatcher
compute the same thing. Fitting finds, per kernel, the four parameters (fixed µs, MMA flop/µs,
load bytes/µs, epilogue µs) that minimize the squared log error of its predicted times over the
measured products, by Nelder-Mead in log space with a weak pull towards a prior (so a term no
measurement exercises stays plausible). The result is a reviewable TOML file,
`specs/tuning/GPU.model.toml`, that `codegen render` reads (codegen.package.load_models) and
turns into `cutegemm._dispatch.MODELS`. With each kernel's parameters it keeps the kernel's
errors on the products it ran fast on (the model's local correction).
"""

from __future__ import annotations

import datetime
import functools
import math
import statistics
import types
from dataclasses import dataclass

from codegen.package import MODEL_PARAMS as PARAMS

MIN_POINTS = 3  # a kernel measured on fewer products gets no parameters of its own
PRIOR_WEIGHT = 0.02  # pull of each log-parameter towards its prior, against the data's errors
# priors per input dtype: fixed µs, flop/µs and bytes/µs of one CTA, epilogue µs per tile, share
# of the copy bandwidth reached
PRIORS = {
    "bf16": (5.0, 4.0e6, 40e3, 1.0, 0.75),
    "f16": (5.0, 4.0e6, 40e3, 1.0, 0.75),
    "e4m3": (5.0, 8.0e6, 40e3, 1.0, 0.75),
}


@functools.cache
def model_module() -> types.ModuleType:
    """templates/package/model.py.j2 as a module (it is plain Python)."""
    from codegen.render import package_module

    return package_module("model.py.j2", "cutegemm_model")


def kernel_view(row: dict) -> types.SimpleNamespace:
    """A registry row (package.Entry.row()) with the attributes the model reads."""
    return types.SimpleNamespace(**row)


def _nelder_mead(f, x0: list[float], step: float = 0.5, iters: int = 600) -> list[float]:
    n = len(x0)
    simplex = [list(x0)] + [
        [x + (step if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)
    ]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-10:
            break
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(refl)
        if fr < values[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(exp)
            simplex[-1], values[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(con)
            if fc < values[-1]:
                simplex[-1], values[-1] = con, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (p - b) for b, p in zip(best, q)] for q in simplex[1:]
                ]
                values = [values[0]] + [f(q) for q in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


@dataclass(frozen=True)
class Fit:
    name: str
    params: tuple[float, ...]
    points: int
    rms_log_error: float  # of the model without the M correction
    m_correction: tuple[tuple[int, float], ...] = ()  # (M, mean log(measured / predicted))
    # (M, N, K, log(measured / predicted) after the M correction, log(measured / fastest)),
    # where the kernel ran within the model's KEEP of the fastest kernel
    residuals: tuple[tuple[int, int, int, float, float], ...] = ()


def fit_kernel(
    kern,
    points: list[tuple[int, int, int, float]],
    sm_count: int,
    bandwidth: float,
    fastest: dict[tuple[int, int, int], float] | None = None,
) -> Fit:
    """The parameters of one kernel from its measured (M, N, K, µs) points; `fastest`: the best
    µs any kernel of its dtype measured per (M, N, K) (default: these points' own)."""
    mod = model_module()
    prior = [math.log(p) for p in PRIORS[kern.dtype]]

    def loss(logp: list[float]) -> float:
        params = tuple(math.exp(x) for x in logp)
        err = sum(
            mod.log_error(mod.predict(kern, m, n, k, params, sm_count, bandwidth), us) ** 2
            for m, n, k, us in points
        )
        return err + PRIOR_WEIGHT * sum((x - p) ** 2 for x, p in zip(logp, prior))

    best = _nelder_mead(loss, prior)
    for _ in range(2):  # restarts from the best point: Nelder-Mead stalls on flat terms
        best = _nelder_mead(loss, best, step=0.3)
    params = tuple(math.exp(x) for x in best[:4]) + (min(1.0, math.exp(best[4])),)
    # log(measured / predicted) per point: the M correction is their mean at each M, the local
    # correction's residuals what is left of them after it
    errs = [
        (m, n, k, us, -mod.log_error(mod.predict(kern, m, n, k, params, sm_count, bandwidth), us))
        for m, n, k, us in sorted(points)
    ]
    logs: dict[int, list[float]] = {}
    for m, _, _, _, err in errs:
        logs.setdefault(m, []).append(err)
    rms = math.sqrt(statistics.fmean(x * x for v in logs.values() for x in v))
    corr = tuple((m, round(statistics.fmean(v), 4)) for m, v in sorted(logs.items()))
    at_m = dict(corr)
    best = fastest or {}
    residuals = tuple(
        (m, n, k, round(err - at_m[m], 2), round(math.log(us / best.get((m, n, k), us)), 3))
        for m, n, k, us, err in errs
        if us <= mod.KEEP * best.get((m, n, k), us)
    )
    return Fit(kern.name, params, len(points), rms, corr, residuals)


def _fit_one(args: tuple) -> Fit:
    return fit_kernel(*args)


def fit(
    rows: dict[str, dict],
    points: dict[str, list],
    sm_count: int,
    bandwidth: float,
    jobs: int = 1,
) -> list[Fit]:
    """Fits for every kernel with at least MIN_POINTS points (rows: registry rows by name); each
    kernel's fit is independent of the others', so `jobs` processes give the same fits."""
    from concurrent.futures import ProcessPoolExecutor

    fastest: dict[str, dict[tuple[int, int, int], float]] = {}  # dtype -> (M, N, K) -> µs
    for name, pts in points.items():
        best = fastest.setdefault(rows[name]["dtype"], {}) if name in rows else {}
        for m, n, k, us in pts:
            best[m, n, k] = min(us, best.get((m, n, k), us))
    work = [
        (kern, points[name], sm_count, bandwidth, fastest[kern.dtype])
        for name in sorted(points)
        if name in rows and len(points[name]) >= MIN_POINTS
        for kern in [kernel_view(rows[name])]
    ]
    if jobs <= 1:
        return [_fit_one(w) for w in work]
    with ProcessPoolExecutor(jobs) as ex:
        return list(ex.map(_fit_one, work))


def points_of(products) -> dict[str, list[tuple[int, int, int, float]]]:
    """{kernel: [(M, N, K, µs), ...]} from measured products (model, M, N, K, dtype, {kernel:
    µs})."""
    points: dict[str, list] = {}
    for _, m, n, k, _, times in products:
        for name, us in times.items():
            points.setdefault(name, []).append((m, n, k, us))
    return points


def model_text(fits: list[Fit], gpu: str, arch: str, sm_count: int, bandwidth: float,
               fitted_on: list[str], command: str) -> str:  # fmt: skip
    lines = [
        "# Fitted by `codegen fit`: per kernel, the cost model's parameters (cutegemm._model):",
        "# fixed µs, one CTA's MMA flop/µs and load bytes/µs, epilogue µs per tile, share of the",
        "# copy bandwidth reached when the whole GPU streams; `m_correction`: (M, mean log of",
        "# measured / predicted time at that M), applied in between by interpolation; `points`",
        "# products measured, `rms_log_error` the fit's error on them before the correction;",
        "# `residuals`: (M, N, K, log of measured / predicted after it, log of measured / the",
        f"# fastest kernel's) where the kernel ran within {model_module().KEEP}x of the fastest",
        "# kernel: the local correction and, at decode M, the kernel's regret.",
        "# `codegen render` turns this file into cutegemm._dispatch.MODELS.",
        f'gpu = "{gpu}"',
        f'arch = "{arch}"',
        f'fitted = "{datetime.date.today().isoformat()}"',
        f"sm_count = {sm_count}",
        f"bandwidth = {bandwidth:.4g}  # bytes/µs, the copy bandwidth measured in the sweep",
        "fitted_on = [" + ", ".join(f'"{m}"' for m in fitted_on) + "]",
        f'command = "{command}"',
        "",
    ]
    for f in fits:
        lines += [
            "[[kernel]]",
            f'name = "{f.name}"',
            *(f"{key} = {value:.4g}" for key, value in zip(PARAMS, f.params)),
            "m_correction = [" + ", ".join(f"[{m}, {r}]" for m, r in f.m_correction) + "]",
            *_residual_lines(f.residuals),
            f"points = {f.points}",
            f"rms_log_error = {f.rms_log_error:.3f}",
            "",
        ]
    return "\n".join(lines)


def _residual_lines(residuals: tuple, per_line: int = 4) -> list[str]:
    if not residuals:
        return ["residuals = []"]
    items = [f"[{m}, {n}, {k}, {r}, {g}]," for m, n, k, r, g in residuals]
    rows = [" ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return ["residuals = [", *(f"    {row}" for row in rows), "]"]


# ---- how well the model ranks on a model it was not fitted on ----------------------------------


@dataclass(frozen=True)
class Held:
    """One held-out product: the kernel the model ranks first and the fastest one measured."""

    dtype: str
    model: str
    m: int
    pick_us: float
    best_us: float


def _fold(args: tuple) -> list[Held]:
    rows, train, held, sm_count, bandwidth = args
    fitted = {f.name: (f.params, f.m_correction, f.residuals)
              for f in fit(rows, points_of(train), sm_count, bandwidth)}  # fmt: skip
    model = {"sm_count": sm_count, "bandwidth": bandwidth, "kernels": fitted}
    mod = model_module()
    out = []
    for name, m, n, k, dtype, times in held:
        kerns = [kernel_view(rows[x]) for x in times if x in rows]
        ranked = mod.rank(kerns, m, n, k, model)
        if ranked:
            out.append(Held(dtype, name, m, times[ranked[0].name], min(times.values())))
    return out


def cross_validate(
    rows: dict[str, dict],
    products: list[tuple[str, int, int, int, str, dict[str, float]]],
    sm_count: int,
    bandwidth: float,
    jobs: int = 1,
) -> list[Held]:
    """Leave one model out: for each model among `products` ((model, M, N, K, dtype, {kernel:
    µs})), fit on the others' products and rank the kernels measured on its own."""
    from concurrent.futures import ProcessPoolExecutor

    models = sorted({p[0] for p in products})
    folds = [
        (rows, [p for p in products if p[0] != x], [p for p in products if p[0] == x],
         sm_count, bandwidth)
        for x in models
    ]  # fmt: skip
    if jobs <= 1:
        return [h for f in folds for h in _fold(f)]
    with ProcessPoolExecutor(jobs) as ex:
        return [h for got in ex.map(_fold, folds) for h in got]
