"""Trace extraction: run a generated kernel file's Python with the recording DSL stand-in.

The module is executed once (its imports served by `codegen.verify.dsl`); each problem size then
runs the host ``gemm`` function, whose ``kernel(...).launch(grid=, block=, cluster=)`` calls are
captured, and runs every captured kernel once per modelled CTA and warp (and per lane class
where the warp's lanes diverge), each run producing one actor's linear op trace.
"""

from __future__ import annotations

import builtins
import inspect
from dataclasses import dataclass
from typing import Any

from codegen.verify import dsl
from codegen.verify.model import Actor, KernelModel, LaunchModel, coords

# the host gemm's tensors whose tiles the numeric emulation follows (codegen.verify.numeric);
# row_partials (row_sumsq) and scales (block_quant) are tracked for the PDL order and counted,
# their values not followed
GLOBAL_TENSORS = ("a", "b", "c", "bias", "row_partials", "scales")

MAX_FULL_GRID = 8  # grids of at most this many CTAs are modelled whole; larger: the first cluster


@dataclass(frozen=True)
class Problem:
    """One problem to trace: sizes, an optional grid cap (a device with that many SMs, for
    kernels whose CTAs split work by gridDim), and CLC answers for a dynamic scheduler."""

    m: int
    n: int
    k: int
    grid_cap: int | None = None
    clc_answers: tuple[bool, ...] = ()
    numeric: bool = True  # record data ops for the numeric cross-check (codegen.verify.numeric)


class KernelSource:
    """A generated kernel file, executed once with the stand-in modules."""

    def __init__(self, text: str, name: str):
        self.name = name
        self.text = text
        self.filename = f"<verify:{name}>"
        self.rec = dsl.Recorder(self.filename, text)
        mods = dsl.build_modules()
        bi = dict(vars(builtins))
        bi["__import__"] = dsl.make_import(mods)
        self.ns: dict[str, Any] = {
            "__name__": f"_verify_{name}",
            "__builtins__": bi,
            "__file__": self.filename,
        }
        code = compile(text, self.filename, "exec", dont_inherit=True)
        with dsl.active_recorder(self.rec):
            exec(code, self.ns)  # noqa: S102 - running the generated file is the point
        if "gemm" not in self.ns or "compile_args" not in self.ns:
            raise dsl.NotModelled("the file has no gemm() / compile_args()")

    @property
    def spec(self) -> dict:
        spec = self.ns.get("SPEC")
        return spec if isinstance(spec, dict) else {}

    def constant(self, name: str, default: Any = None) -> Any:
        return self.ns.get(name, default)

    # -- host ---------------------------------------------------------------------------------

    def host_launches(self, problem: Problem) -> list[dsl.LaunchRequest]:
        """Run the host `gemm` on fake tensors of the problem's sizes; return its launches."""
        rec = self.rec
        with dsl.active_recorder(rec):
            rec.host = True
            rec.ctx = None
            rec.launches = []
            rec.sym_values = [problem.m, problem.n, problem.k]
            if "n_half = cute.sym_int32(" in self.text:
                # a gated pair: C's own column symbol, N / 2 (the next one compile_args makes)
                rec.sym_values.append(problem.n // 2)
            if "row_partial_count" in self.ns:
                # row_sumsq: compile_args' fourth dynamic size, the row partials' P
                rec.sym_values.append(int(self.ns["row_partial_count"](problem.n)))
            if "scale_block_count" in self.ns:
                # block_quant: the scales' dynamic size, the blocks per row
                rec.sym_values.append(int(self.ns["scale_block_count"](problem.n)))
            args = list(self.ns["compile_args"]())
            params = list(inspect.signature(self.ns["gemm"]).parameters)
            for i, p in enumerate(params[: len(args)]):
                if p == "workspace" and isinstance(args[i], dsl.FakeTensor):
                    t = args[i]
                    args[i] = dsl.FakeTensor(t.shape, dsl.Root("gmem", "workspace"), None, t.dtype)
                elif p in GLOBAL_TENSORS and isinstance(args[i], dsl.FakeTensor):
                    # a global input or output: views of it know which tile they cover
                    t = args[i]
                    args[i] = dsl.FakeTensor(t.shape, None, None, t.dtype, g=_global(p, t.shape))
            try:
                self.ns["gemm"](*args)
            except AssertionError as e:
                raise dsl.HostCheckFailed(f"host assertion failed: {e or 'assert'}") from None
            return list(rec.launches)

    # -- device -------------------------------------------------------------------------------

    def trace(self, problem: Problem) -> KernelModel:
        self.rec.numeric = problem.numeric and problem.k > 0
        launches = []
        notes: list[str] = []
        for index, req in enumerate(self.host_launches(problem)):
            launches.append(self._trace_launch(index, req, problem, notes))
        notes.extend(sorted(self.rec.notes))
        return KernelModel(launches, notes)

    def _trace_launch(
        self, index: int, req: dsl.LaunchRequest, problem: Problem, notes: list[str]
    ) -> LaunchModel:
        grid = req.grid
        clamped = False
        if problem.grid_cap is not None and grid[0] > problem.grid_cap:
            cx = req.cluster[0]
            grid = (max(cx, problem.grid_cap - problem.grid_cap % cx), grid[1], grid[2])
            clamped = True
        total = grid[0] * grid[1] * grid[2]
        launch = LaunchModel(req.name, grid, req.block, req.cluster, [], [], clamped)
        launch.pdl = req.pdl
        if total <= MAX_FULL_GRID:
            ctas = list(range(total))
        else:
            ctas = [c for c in range(total) if launch.cluster_of(c) == 0]
            launch.full_grid = False
        launch.ctas = ctas
        if req.block % 32:
            raise dsl.NotModelled(f"block of {req.block} threads is not whole warps")
        for cta in ctas:
            for warp in range(req.block // 32):
                launch.actors.extend(self._trace_warp(launch, req, cta, warp, problem))
        return launch

    def _trace_warp(
        self, launch: LaunchModel, req: dsl.LaunchRequest, cta: int, warp: int, problem: Problem
    ) -> list[Actor]:
        rec = self.rec
        pending: list[tuple[int, ...]] = [tuple(range(32))]
        done: list[tuple[tuple[int, ...], list]] = []
        xyz = coords(cta, launch.grid)
        while pending:
            lanes = pending.pop(0)
            ctx = dsl.RunContext(launch, cta, xyz, warp, lanes, problem.clc_answers)
            with dsl.active_recorder(rec):
                rec.begin(ctx)
                try:
                    req.kernel(*req.args, **req.kwargs)
                except dsl.LaneSplit as split:
                    pending.extend(split.groups)
                    continue
                finally:
                    rec.host = True
            done.append((lanes, rec.ops))
        done.sort()
        actors = []
        for lanes, ops in done:
            if len(done) == 1:
                ops = [op for op in ops if op.kind != "warp_sync"]
            name = f"cta{cta}.w{warp}" if len(done) == 1 else f"cta{cta}.w{warp}.l{_lanes(lanes)}"
            actors.append(Actor(name, cta, warp, lanes, ops))
        return actors


def _lanes(lanes: tuple[int, ...]) -> str:
    if len(lanes) == 1:
        return str(lanes[0])
    if lanes == tuple(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}-{lanes[-1]}"
    return ",".join(map(str, lanes))


def _global(name: str, shape: Any) -> dsl.GView | None:
    """The whole of a row-major global tensor (compile_args makes them compact, stride order
    (1, 0))."""
    if not isinstance(shape, tuple) or not all(isinstance(s, int) for s in shape):
        return None
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(1, int(extent))
    dims = tuple(range(len(shape)))
    return dsl.GView(
        name, dims, tuple(shape), (0,) * len(shape), tuple(shape), (), tuple(reversed(strides))
    )
