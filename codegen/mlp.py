"""`codegen bench --mlp`: a transformer MLP block end to end (issue 23), cutegemm against torch.

The block, per layer, on a model's shapes (specs/shapes/public-models.toml: `up` is the fused
gate+up projection (2F, hidden), `down` (hidden, F)):

    y = x + down(act(x @ W_gate^T) * (x @ W_up^T))        (--no-residual: without `x +`)

Sides, each a CUDA graph of `layers` blocks back to back (distinct weights per layer, each
layer's output the next one's input), timed interleaved in one process after the clocks are
warmed; µs are per block (one replay / layers):

- cutegemm: the gated-pair kernel (epilogue function swiglu / geglu: act(gate) * up in the
  epilogue, output (M, F)) on cutegemm.interleave_gate_up's copy of the weight, then the down
  projection with the residual add fused (a residual_add kernel) where one takes the shape;
- cutegemm +add: the same up, then cutegemm.gemm (the dispatcher's pick) and a torch add;
- torch eager: x @ W_gu^T, F.silu(g) * u (or gelu tanh), @ W_down^T, + x;
- torch.compile of the same function (default mode; --max-autotune also
  mode="max-autotune-no-cudagraphs": the graph is ours, not inductor's).

FP8 (--fp8): quantize x row-wise to e4m3 -> scaled GEMM (row-wise scales; weights quantized
per output row once) -> act * up -> quantize -> scaled GEMM -> + x, with torch._scaled_mm
against cutegemm.gemm(a, b, scale_a=, scale_b=), the elementwise steps in torch on both sides
(eager, and both under torch.compile).

Correctness first: every output a side writes is NaN-poisoned, the side's graph replayed once,
and each layer's output compared with a float32 reference computed from that side's own input
to the layer (rel_err = |out - ref| / |ref|, Frobenius): an output the replay did not write
(a launch the capture missed) stays NaN and fails. A replay faster than the weights can stream
from HBM is flagged too.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

DECODE_M = (1, 32, 128)
PREFILL_M = (2048, 4096)
DEFAULT_MODELS = ("qwen2.5-7b", "qwen3-14b", "llama-3.1-8b")  # two unseen models, one tuned
# rel_err of a block against its float32 reference; e4m3: h is quantized from each side's own
# bf16 h, and a one-ulp difference there moves an e4m3 rounding now and then (~1.5e-2 measured)
TOL = {"bf16": 1e-2, "e4m3": 5e-2}
HBM_BOUND = 6e12  # bytes / s: no GPU streams weights faster (H200: 4.8e12); faster = not captured
ACTIVATIONS = {"swiglu": "silu", "geglu": "gelu_tanh"}


@dataclass(frozen=True)
class Block:
    model: str
    hidden: int  # K of up, N of down
    f: int  # the intermediate size: up's N is 2F, down's K is F

    @property
    def weight_bytes(self) -> int:  # bf16 weights of one layer
        return 2 * (2 * self.f * self.hidden + self.hidden * self.f)


def blocks(models: dict[str, dict], names: list[str]) -> tuple[list[Block], list[str]]:
    """The models' MLP shapes, and one line per model that cannot be benchmarked."""
    out, errors = [], []
    for name in names:
        entry = models.get(name)
        if entry is None:
            errors.append(f"--model {name!r}: not in the model list ({', '.join(models)})")
            continue
        if "experts" in entry:
            errors.append(f"--model {name!r}: a mixture of experts (routing is not benchmarked)")
            continue
        (two_f, hidden), (hidden_d, f) = entry["up"], entry["down"]
        if two_f != 2 * f or hidden_d != hidden:
            errors.append(f"--model {name!r}: up {entry['up']} is not [2F, hidden] for down "
                          f"{entry['down']} = [hidden, F]")  # fmt: skip
            continue
        out.append(Block(name, hidden, f))
    return out, errors


@dataclass
class Plan:
    """The cutegemm kernels of one (block, M): the gated kernel for up (None: a plain gemm and
    the activation in torch, `why`), the residual kernel for down (None: gemm + a torch add)."""

    gated: str | None
    residual: str | None
    notes: list[str] = field(default_factory=list)


SMS = 132  # the H100's and H200's SM count: how many CTAs fill the GPU once
# At decode M a residual-add kernel serves down only where it streams the weight at most this many
# times (runtime._weight_passes): it has no split-K, and with the down projection's few output
# tiles it leaves most SMs idle, where cutegemm.gemm's split-K pick streams the weight once; on
# the H100 gemm + a torch add ran the Llama-3.1-8B block 5-17% faster at M = 1-128 (4.1 passes)
RESIDUAL_PASSES = 1.5


def gated_kernels(kernels, arch: str, dtype: str, fn: str) -> list:
    """The gated-pair kernels (epilogue function `fn`) of `kernels` for arch and dtype, K-major."""
    return [k for k in kernels if k.fn == fn and k.fn_gated and k.arch == arch
            and k.dtype == dtype and k.a_major == k.b_major == "k"]  # fmt: skip


def residual_kernels(kernels, arch: str, dtype: str) -> list:
    """The residual-add kernels of `kernels` for arch and dtype, K-major; not the row_sumsq ones
    (they write row partials besides D)."""
    return [k for k in kernels if k.fn == "residual_add" and k.arch == arch and k.dtype == dtype
            and k.a_major == k.b_major == "k"
            and getattr(k, "row_partials", None) is None]  # fmt: skip


def plan(kernels, arch: str, dtype: str, m: int, b: Block, fn: str, runtime) -> Plan:
    """Which gated-pair and residual kernels of `kernels` (cutegemm.KERNELS) serve the block at
    M: the fewest weight passes, then activation passes, ties in the package's rule order, as
    cutegemm.gated_mm orders them (runtime: cutegemm._runtime, for _pass_order and _refusal). By
    the rule order alone, M = 32 and 128 took the 16-wide swap tile, which re-reads the gate+up
    weight 2 and 8 times: on the H100 the bf16 block ran 0.67x and 0.24x of torch eager there
    (BENCHMARKS.md, the MLP block on the H100). Up to DECODE_M a residual kernel that would
    stream the down weight more than RESIDUAL_PASSES times gives way to gemm + a torch add."""
    notes = []

    def first(cands: list, n: int, k: int, what: str) -> str | None:
        if not cands:
            notes.append(f"no {arch} {dtype} {what} kernel")
            return None
        for kern in runtime._pass_order(cands, m, n, SMS):
            if runtime._refusal(kern, m, n, k) is None:
                return kern.name
        why = "; ".join(f"{x.name}: {runtime._refusal(x, m, n, k)}" for x in cands)
        notes.append(f"no {what} kernel takes M={m} N={n} K={k} ({why})")
        return None

    gated = gated_kernels(kernels, arch, dtype, fn)
    res = residual_kernels(kernels, arch, dtype)
    g = first(gated, 2 * b.f, b.hidden, f"gated {fn}")
    if g is None:
        notes[-1] += ": up is cutegemm.gemm, the activation torch's"
    r = first(res, b.hidden, b.f, "residual_add")
    if r is None:
        notes[-1] += ": down is cutegemm.gemm + a torch add"
    elif m <= runtime.DECODE_M:
        passes = runtime._weight_passes(next(x for x in res if x.name == r), m, b.hidden, SMS)
        if passes > RESIDUAL_PASSES:
            notes.append(f"the residual kernel {r} would stream the down weight {passes:g} times "
                         "at this M: down is cutegemm.gemm (split-K) + a torch add")  # fmt: skip
            r = None
    return Plan(g, r, notes)


# ---- GPU -----------------------------------------------------------------------------------------


@dataclass
class Row:
    model: str
    dtype: str
    m: int
    layers: int
    us: dict[str, float]  # side -> µs per block (NaN: not timed)
    rel_err: dict[str, float]  # side -> worst layer's rel_err
    notes: list[str]
    kernels: dict[str, str]  # role -> kernel name

    def ratio(self, ours: str, theirs: str) -> float:
        return self.us.get(theirs, math.nan) / self.us.get(ours, math.nan)

    def best_ours(self) -> str | None:
        mine = [s for s in self.us if s.startswith("cutegemm") and math.isfinite(self.us[s])]
        return min(mine, key=self.us.__getitem__) if mine else None


def _rel(x, ref) -> float:
    err = ((x.float() - ref).norm() / ref.norm()).item()
    return err if math.isfinite(err) else math.inf  # NaN: an output the replay did not write


def _act(name: str):
    import torch.nn.functional as F

    if name == "silu":
        return F.silu
    return lambda g: F.gelu(g, approximate="tanh")


class _Weights:
    """One layer's weights: the checkpoint's [gate; up] (2F, K) and down (hidden, F), scaled
    1/sqrt(K) so a chain keeps its activations near unit size; the interleaved copy for the
    gated kernel; and (fp8) e4m3 copies with per-row float32 scales."""

    def __init__(self, b: Block, fp8: bool, device: str = "cuda") -> None:
        import torch

        dev, bf = device, torch.bfloat16
        self.gu = (torch.randn(2 * b.f, b.hidden, device=dev) / b.hidden**0.5).to(bf)
        self.down = (torch.randn(b.hidden, b.f, device=dev) / b.f**0.5).to(bf)
        self.gu_i = None
        if fp8:
            self.gu_q, gu_s = quantize_rows(self.gu)
            self.down_q, down_s = quantize_rows(self.down)
            # (1, N) contiguous, as torch._scaled_mm takes a row-wise scale_b
            self.gu_s, self.down_s = gu_s.reshape(1, -1), down_s.reshape(1, -1)


def quantize_rows(x):
    """(x / s).to(e4m3) and s (rows, 1) float32, s = the row's amax / 448."""
    import torch

    s = x.abs().amax(dim=1, keepdim=True).float().clamp_min(1e-8) / 448.0
    return (x.float() / s).to(torch.float8_e4m3fn), s


def _dequant(q, s):
    return q.float() * s


def reference(x, w: _Weights, act: str, residual: bool, fp8: bool):
    """The block in float32 from x (bf16) as the sides compute it: their bf16 roundings of the
    up output and of act(gate) * up mirrored; fp8: the same row-wise quantization of x and h."""
    import torch

    bf = torch.bfloat16
    f = w.gu.shape[0] // 2
    if fp8:
        gu = _dequant(*quantize_rows(x)) @ _dequant(w.gu_q, w.gu_s.T).T
    else:
        gu = x.float() @ w.gu.float().T
    gu = gu.to(bf).float()
    h = (_act(act)(gu[:, :f]) * gu[:, f:]).to(bf)
    if fp8:
        y = _dequant(*quantize_rows(h)) @ _dequant(w.down_q, w.down_s.T).T
    else:
        y = h.float() @ w.down.float().T
    return y + x.float() if residual else y


def torch_block(act: str, residual: bool, fp8: bool) -> Callable:
    """The torch function of one block: (x, weights...) -> y; what eager runs and torch.compile
    compiles."""
    import torch

    a = _act(act)
    bf = torch.bfloat16
    if not fp8:

        def block(x, gu, down):
            g, u = (x @ gu.T).chunk(2, dim=-1)
            y = (a(g) * u) @ down.T
            return x + y if residual else y

        return block

    def block8(x, gu_q, gu_s, down_q, down_s):
        xq, xs = quantize_rows(x)
        g, u = torch._scaled_mm(xq, gu_q.T, scale_a=xs, scale_b=gu_s, out_dtype=bf).chunk(2, -1)
        hq, hs = quantize_rows(a(g) * u)
        y = torch._scaled_mm(hq, down_q.T, scale_a=hs, scale_b=down_s, out_dtype=bf)
        return x + y if residual else y

    return block8


def cutegemm_block8(pkg, act: str, residual: bool) -> Callable:
    """The fp8 block with cutegemm's row-wise scaled GEMMs (elementwise steps in torch)."""
    a = _act(act)

    def block8(x, gu_q, gu_s, down_q, down_s):
        xq, xs = quantize_rows(x)
        gu = pkg.gemm(xq, gu_q, scale_a=xs, scale_b=gu_s)
        g, u = gu.chunk(2, dim=-1)
        hq, hs = quantize_rows(a(g) * u)
        y = pkg.gemm(hq, down_q, scale_a=hs, scale_b=down_s)
        return x + y if residual else y

    return block8


def _compile(fn: Callable, mode: str | None):
    import torch

    for knob in ("cache_size_limit", "recompile_limit"):  # one compile per model and M
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 256)
    return torch.compile(fn, dynamic=False, mode=mode)


def run_block(
    pkg, b: Block, m: int, layers: int, *, fn: str, residual: bool, fp8: bool,
    max_autotune: bool, rounds: int, reps: int, alternatives: bool = False,
) -> Row:  # fmt: skip
    """One (model, M, dtype) row: every side captured, checked, then timed interleaved.
    alternatives (bf16): each other gated (residual) kernel that takes the shape is a side
    'alt up=TILE' ('alt down=TILE') of its own, timed like the rest, never cutegemm's time."""
    import torch

    from codegen.gpu import capture_step, time_interleaved

    runtime = importlib.import_module(f"{pkg.__name__}._runtime")
    act = ACTIVATIONS[fn]
    dtype = "e4m3" if fp8 else "bf16"
    arch = runtime._device(torch.cuda.current_device())[1]
    torch.manual_seed(0)
    ws = [_Weights(b, fp8) for _ in range(layers)]
    x0 = torch.randn(m, b.hidden, device="cuda").to(torch.bfloat16)
    notes: list[str] = []
    kernels: dict[str, str] = {}
    sides: dict[str, Callable[[], list]] = {}

    def chain(block: Callable, args: Callable) -> Callable[[], list]:
        def step() -> list:
            outs, x = [], x0
            for w in ws:
                x = block(x, *args(w))
                outs.append(x)
            return outs

        return step

    if fp8:
        e4m3 = torch.float8_e4m3fn
        for role, (n, k) in (("up", (2 * b.f, b.hidden)), ("down", (b.hidden, b.f))):
            try:
                kernels[role] = pkg.kernel_for(m, n, k, dtype=e4m3, out_dtype=torch.bfloat16,
                                               scales="rowwise").name  # fmt: skip
            except pkg.GemmError as e:
                notes.append(f"cutegemm {role}: {e}")
        tb = torch_block(act, residual, True)
        args8 = lambda w: (w.gu_q, w.gu_s, w.down_q, w.down_s)
        sides["cutegemm"] = chain(cutegemm_block8(pkg, act, residual), args8)
        sides["cutegemm+compile"] = chain(_compile(cutegemm_block8(pkg, act, residual), None),
                                          args8)  # fmt: skip
        sides["torch eager"] = chain(tb, args8)
        sides["torch.compile"] = chain(_compile(tb, None), args8)
        if max_autotune:
            sides["max-autotune"] = chain(_compile(tb, "max-autotune-no-cudagraphs"), args8)
    else:
        p = plan(pkg.KERNELS, arch, "bf16", m, b, fn, runtime)
        notes += p.notes
        if p.gated:
            kernels["up"] = p.gated
            for w in ws:
                w.gu_i = pkg.interleave_gate_up(w.gu)
        else:
            kernels["up"] = pkg.kernel_for(m, 2 * b.f, b.hidden).name
        kernels["down"] = pkg.kernel_for(m, b.hidden, b.f).name
        a = _act(act)

        def up(x, w, h, gated: str | None):
            if gated:
                return pkg.gemm_fn(gated, x, w.gu_i, out=h)
            g, u = pkg.gemm(x, w.gu).chunk(2, dim=-1)
            return torch.mul(a(g), u, out=h)

        def ours(
            fused: bool, gated: str | None = p.gated, res: str | None = p.residual
        ) -> Callable[[], list]:
            bufs = [
                (torch.empty(m, b.f, device="cuda", dtype=torch.bfloat16),
                 torch.empty(m, b.hidden, device="cuda", dtype=torch.bfloat16),
                 torch.empty(m, b.hidden, device="cuda", dtype=torch.bfloat16))
                for _ in ws
            ]  # fmt: skip

            def step() -> list:
                outs, x = [], x0
                for w, (h, y0, y) in zip(ws, bufs, strict=True):
                    up(x, w, h, gated)
                    if fused:
                        pkg.gemm_fn(res, h, w.down, residual=x, out=y)
                    elif residual:
                        torch.add(pkg.gemm(h, w.down, out=y0), x, out=y)
                    else:
                        pkg.gemm(h, w.down, out=y)
                    outs.append(y)
                    x = y
                return outs

            step.scratch = [t for trio in bufs for t in trio]  # poisoned too: h, y0
            return step

        if residual and p.residual:
            kernels["down (fused residual)"] = p.residual
            sides["cutegemm"] = ours(True)
            sides["cutegemm +add"] = ours(False)
        else:
            sides["cutegemm"] = ours(False)
        if alternatives and p.gated:
            fused = bool(residual and p.residual)
            for kern in gated_kernels(pkg.KERNELS, arch, "bf16", fn):
                if kern.name != p.gated and runtime._refusal(kern, m, 2 * b.f, b.hidden) is None:
                    sides[f"alt up={'x'.join(map(str, kern.tile))}"] = ours(fused, kern.name)
        if alternatives and residual:  # also where the plan keeps down unfused (plan: why)
            for kern in residual_kernels(pkg.KERNELS, arch, "bf16"):
                if kern.name != p.residual and runtime._refusal(kern, m, b.hidden, b.f) is None:
                    sides[f"alt down={'x'.join(map(str, kern.tile))}"] = ours(True, res=kern.name)
        tb = torch_block(act, residual, False)
        argsb = lambda w: (w.gu, w.down)
        sides["torch eager"] = chain(tb, argsb)
        sides["torch.compile"] = chain(_compile(tb, None), argsb)
        if max_autotune:
            sides["max-autotune"] = chain(_compile(tb, "max-autotune-no-cudagraphs"), argsb)

    graphs, errs = {}, {}
    for name, step in sides.items():
        try:
            graph, outs = capture_step(step, warmups=2)
        except Exception as e:  # noqa: BLE001 - one side fails (e.g. _scaled_mm shapes), not the run
            notes.append(f"{name}: not run ({type(e).__name__}: {str(e).splitlines()[0][:160]})")
            continue
        for o in [*outs, *getattr(step, "scratch", ())]:
            o.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        worst, x = 0.0, x0
        for w, o in zip(ws, outs, strict=True):
            worst = max(worst, _rel(o, reference(x, w, act, residual, fp8)))
            x = o
        errs[name] = worst
        if not worst <= TOL[dtype]:
            notes.append(
                f"{name}: FAIL rel_err {worst:.1e} > {TOL[dtype]:.0e}"
                + (" (NaN left: a launch not captured?)" if worst == math.inf else "")
            )
        graphs[name] = graph
    t = time_interleaved({k: [g.replay] for k, g in graphs.items()}, rounds, reps)
    us = {k: t.get(k, math.nan) / layers for k in sides}
    wbytes = b.weight_bytes // (2 if fp8 else 1)
    for k, v in us.items():
        if math.isfinite(v) and wbytes / (v * 1e-6) > HBM_BOUND:
            notes.append(f"{k}: {v:.1f} µs per block streams weights at "
                         f"{wbytes / v / 1e6:.1f} TB/s: faster than HBM, launches not captured?")  # fmt: skip
    del graphs
    torch.cuda.synchronize()
    return Row(b.model, dtype, m, layers, us, errs, notes, kernels)
