"""The GPU stages: check generated kernels against torch, and time them beside torch.matmul.

Runs where a CUDA GPU and the CuTe DSL are present. Each generated module is imported as is (it
compiles itself on first launch); only variants whose arch matches the GPU run, and the others are
reported as compiled only.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from codegen import registry
from codegen.build import load_module, read_spec
from codegen.epilogue_fn import ACC_KINDS
from codegen.plan_common import plural

TOLERANCE = {"f16": 2e-3, "bf16": 1e-2, "f32": 2e-3}  # by output dtype (f32: fast tanh/exp)


def tolerance(dtype: str, out_dtype: str) -> float:
    """The rel_err a kernel of input `dtype` and output `out_dtype` is checked at: the output
    dtype's, but for e4m3 in at least bf16's: Hopper's FP8 wgmma adds its products with fewer
    mantissa bits than f32 (why FP8 GEMMs promote partial sums to f32 now and then), so its
    error grows with K past f16/f32 output rounding (2.1e-3 at K = 8192 on the H200)."""
    tol = TOLERANCE[out_dtype]
    return max(tol, TOLERANCE["bf16"]) if dtype == "e4m3" else tol


# row_sumsq: the combined row sums of squares, row_partials.sum(0), against (ref ** 2).sum(1) of
# the float32 reference, per row: max_i |s_i - r_i| / r_i. The kernel adds the f32 values it
# stores (no output rounding), so 16-bit inputs differ only by the order of f32 accumulation (a
# few 1e-6 expected; 1e-3 leaves room for the tensor cores' own f32 adds and still shows one
# column dropped or doubled in the fixed shapes' rows of N = 424); a function using cute.math
# (exp / tanh: approximate in the kernel) gets 3e-3; e4m3 the FP8 wgmma's coarser accumulation
# (tolerance(): about 2e-3 per element at K = 8192, twice that squared): 1e-2
SUMSQ_TOLERANCE = {"exact": 1e-3, "approx": 3e-3, "e4m3": 1e-2}


def sumsq_tolerance(module) -> float:
    """The per-row relative error a row_sumsq kernel's combined sums are checked at (its SPEC's
    dtype, and its epilogue function's source as the kernel file holds it)."""
    import inspect

    spec = module.SPEC
    if spec["dtype"] == "e4m3":
        return SUMSQ_TOLERANCE["e4m3"]
    fn = (spec.get("epilogue") or {}).get("fn")
    if fn and "cute.math" in inspect.getsource(getattr(module, fn["ref"].rsplit(":", 1)[1])):
        return SUMSQ_TOLERANCE["approx"]
    return SUMSQ_TOLERANCE["exact"]


def check_row_sumsq(module, launch, parts, guard, ref) -> tuple[str, bool]:
    """row_sumsq after a first launch (`launch(row_partials)` launches the kernel with that
    tensor; `parts` the first one's, NaN-poisoned before it, `guard` the NaN band after it):
    every partial written and none past the end, row_partials.sum(0) against (ref ** 2).sum(1)
    per row (sumsq_tolerance), and a second launch into a fresh NaN tensor writes the same bits.
    Returns (a note, passed)."""
    import torch

    tol = sumsq_tolerance(module)
    if torch.isnan(parts).any():
        return f"row_partials: {int(torch.isnan(parts).sum())} NaN (unwritten)", False
    if not torch.isnan(guard).all():
        return "row_partials: written past its end", False
    got, want = parts.sum(0), (ref.double() ** 2).sum(1)
    err = ((got.double() - want).abs() / want.clamp_min(1e-30)).max().item() if got.numel() else 0.0
    again = torch.full_like(parts, float("nan"))
    launch(again)
    torch.cuda.synchronize()
    same = torch.equal(parts.view(torch.int32), again.view(torch.int32))
    note = f"sumsq rel_err={err:.2e} tol={tol:.0e}{'' if same else ' NOT bitwise-reproducible'}"
    return note, math.isfinite(err) and err <= tol and same


# block_quant: D (float8_e4m3fn) and its scales (one per row and block of 128 columns) against the
# float32 reference of the values the kernel quantizes, v. The kernel takes amax = max |v| of a
# block, scale = amax / 448 (1 where amax = 0) and D = e4m3(v * (448 / amax)), round to nearest,
# saturated (block_quant_reference does the same in float32 torch). Checked:
# - each scale against amax / 448 of the reference's block: relative error at most the GEMM's own
#   (the reference adds the products in another order): 1e-3 for 16-bit inputs, 2e-2 for e4m3
#   (the FP8 wgmma's coarser accumulation, see tolerance(); the worst single element over every
#   block, not a norm: 1.0e-2 measured at K = 8192 on the H100, 2026-12-07);
# - each dequantized element D * scale against v: |D * scale - v| <= 2^-4 |v| (e4m3 keeps 3
#   mantissa bits: round to nearest is off by at most half an ulp, 2^-4 of the value) + 2^-10 *
#   scale (below e4m3's smallest normal, 2^-6, the step is 2^-9: half of it, in value units) +
#   the GEMM's tolerance x amax (the kernel's v differs from the reference's by that much, which
#   can move a value across a rounding boundary);
# - no NaN left in D or the scales (poisoned first), nothing written past either, and a second
#   launch into freshly poisoned tensors writes the same bits (the amax is a fixed butterfly).
E4M3_MAX = 448.0
E4M3_REL = 2.0**-4  # half an ulp of e4m3's 3-bit mantissa, relative to the value
E4M3_SUBNORMAL_HALF_STEP = 2.0**-10  # half of e4m3's subnormal step 2^-9, in scaled units
BLOCK_QUANT_GEMM_TOLERANCE = {"16-bit": 1e-3, "e4m3": 2e-2}


def block_quant_gemm_tolerance(dtype: str) -> float:
    """The relative difference allowed between the kernel's f32 values and the float32
    reference's (scales, and the GEMM's share of each element's bound), by input dtype."""
    return BLOCK_QUANT_GEMM_TOLERANCE["e4m3" if dtype == "e4m3" else "16-bit"]


def block_quant_reference(values, block: int):
    """What a block_quant kernel writes for the f32 values `values` (M, N): (D float8_e4m3fn (M,
    N), scales float32 (M, ceil(N / block))), computed as the kernel does: per row and block,
    amax = max |v|, scale = amax / 448 and D = e4m3(v * (448 / amax)) (both 1 where amax = 0),
    clamped to +-448 before the conversion (the kernel's cvt saturates; torch's does not)."""
    import torch

    v = values.float()
    m, n = v.shape
    blocks = -(-n // block)
    padded = torch.zeros(m, blocks * block, dtype=torch.float32, device=v.device)
    padded[:, :n] = v
    amax = padded.view(m, blocks, block).abs().amax(dim=2)
    zero = amax == 0
    ones = torch.ones_like(amax)
    scale = torch.where(zero, ones, amax / E4M3_MAX)
    inv = torch.where(zero, ones, E4M3_MAX / torch.where(zero, ones, amax))
    x = (padded.view(m, blocks, block) * inv[:, :, None]).view(m, blocks * block)[:, :n]
    d = x.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return d, scale


def dequantize(d, scales, block: int):
    """D (M, N) float8 times its block's scale: the f32 values a consumer of D reads."""
    n = d.shape[1]
    return d.float() * scales.float().repeat_interleave(block, dim=1)[:, :n]


def check_block_quant(d, scales, ref, block: int, gemm_tol: float) -> tuple[str, bool, float]:
    """block_quant's D (float8, (M, N)) and scales ((M, ceil(N / block)) float32) after a launch
    against the float32 reference values `ref` (M, N) (see E4M3_MAX's comment): returns (a note,
    passed, the relative error of the dequantized D, ||D * scale - ref|| / ||ref||)."""
    import torch

    df = d.float()
    if torch.isnan(df).any():
        return f"{int(torch.isnan(df).sum())} NaN (unwritten) of {df.numel()} in D", False, math.inf
    if torch.isnan(scales).any():
        return f"scales: {int(torch.isnan(scales).sum())} NaN (unwritten)", False, math.inf
    _, want_scale = block_quant_reference(ref, block)
    scale_err = ((scales.double() - want_scale.double()).abs() / want_scale.double()).max().item()
    deq = dequantize(d, scales, block).double()
    r = ref.double()
    n = r.shape[1]
    per_elem_scale = scales.double().repeat_interleave(block, dim=1)[:, :n]
    bound = (
        E4M3_REL * r.abs()
        + E4M3_SUBNORMAL_HALF_STEP * per_elem_scale
        + gemm_tol * E4M3_MAX * per_elem_scale
    )
    excess = (deq - r).abs() - bound
    bad = int((excess > 0).sum())
    err = ((deq - r).norm() / r.norm().clamp_min(1e-30)).item() if r.numel() else 0.0
    note = f"dequantized rel_err={err:.2e}; scale rel_err={scale_err:.2e} tol={gemm_tol:.0e}"
    if bad:
        note += f"; {bad} elements off by more than 2^-4 |v| + bounds"
    ok = math.isfinite(err) and scale_err <= gemm_tol and not bad
    return note, ok, err


FIXED_K = (64, 192, 1024, 8192)
ARCH_OF_CAPABILITY = {a.capability: a.name for a in registry.ARCHES.values()}
GPU_NAME_OF_ARCH = {a.name: a.gpu_family for a in registry.ARCHES.values()}


def gpu_arch() -> tuple[str | None, str]:
    """(the arch generated kernels need to run here, or None; a sentence saying why)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "no CUDA GPU is visible"
    cap = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    arch = ARCH_OF_CAPABILITY.get(cap)
    if arch is None:
        known = " nor ".join(sorted(registry.ARCHES, key=lambda a: registry.get(a).capability))
        return None, f"{name} (sm_{cap[0]}{cap[1]}) runs neither {known} kernels"
    return arch, f"{name} (sm_{cap[0]}{cap[1]})"


def split_by_arch(files: list[Path], arch: str | None) -> tuple[list[Path], dict[str, list[Path]]]:
    """Files this GPU runs, and the rest grouped by the arch they need."""
    runnable, skipped = [], {}
    for f in files:
        need = read_spec(f).arch
        if need == arch:
            runnable.append(f)
        else:
            skipped.setdefault(need, []).append(f)
    return runnable, skipped


def skip_lines(skipped: dict[str, list[Path]], here: str) -> list[str]:
    return [
        f"skipped {plural(len(fs), a + ' variant')}: compiled only (codegen build), not run: "
        f"they need an {GPU_NAME_OF_ARCH[a]} GPU; here: {here}."
        for a, fs in sorted(skipped.items())
    ]


# ---- correctness -------------------------------------------------------------------------------


@dataclass
class Case:
    variant: str
    m: int
    n: int
    k: int
    rel_err: float
    tol: float
    passed: bool
    note: str = ""

    def line(self) -> str:
        verdict = "ok" if self.passed else "FAIL"
        return (
            f"{self.variant:48} M={self.m:<5} N={self.n:<5} K={self.k:<5} "
            f"rel_err={self.rel_err:.2e} tol={self.tol:.0e} {verdict} {self.note}".rstrip()
        )


def legal(x: int, step: int) -> int:
    """x rounded down to a multiple of step, at least step: an extent the variant takes."""
    return max(step, (x // step) * step)


def shapes_for(
    mult: dict[str, int], count: int, rng: random.Random
) -> Iterator[tuple[int, int, int]]:
    """Fixed K cases, then `count` random shapes, each legal for the variant's SHAPE_MULTIPLES.

    Where M or N may be any multiple of 1, the fixed cases use extents that are not tile
    multiples, so a missing predicate shows up.
    """
    mm, mn, mk = mult["M"], mult["N"], mult["K"]
    for k in FIXED_K:
        yield legal(2 * 128 + 67, mm), legal(3 * 128 + 40, mn), k
    for _ in range(count):
        m = legal(rng.randint(1, 1100), mm)
        n = legal(rng.randint(1, 1100), mn)
        k = legal(rng.randint(8, 2100), mk)
        yield m, n, k


def reference(a, b, c0, epi: dict, bias=None):
    """float32 D = activation(alpha * A @ B^T + beta * C0 + bias), the fused epilogue's
    definition; bias is a row vector (one per column) or, for a per-row bias, a column."""
    import torch

    d = (a.float() @ b.float().T) * epi.get("alpha", 1.0)
    if epi.get("beta", 0.0):
        d = d + epi["beta"] * c0
    if bias is not None:
        d = d + (bias.float()[:, None] if epi.get("bias") == "row" else bias.float()[None, :])
    act = epi.get("activation", "none")
    if act == "relu":
        d = torch.relu(d)
    elif act == "gelu_tanh":
        d = torch.nn.functional.gelu(d, approximate="tanh")
    elif act == "silu":
        d = torch.nn.functional.silu(d)
    return d


def operand(rows: int, k: int, major: str, dtype, gen):
    """A random (rows, K) operand of `dtype` in the kernel's major mode: "k" row-major; "mn" the
    transpose of a (K, rows) row-major tensor whose rows are 8 elements longer than `rows` (a
    leading dimension past the extent, as a view of a wider tensor has), so a kernel that assumed
    ld = rows would be caught."""
    import torch

    if major == "k":
        return torch.randn(rows, k, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
    wide = torch.randn(k, rows + 8, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
    return wide[:, :rows].t()


def runtime_values(epi: dict, index: int, rng: random.Random) -> dict[str, float]:
    """The values of a kernel's runtime scalars for its `index`-th shape: alpha uniform in
    [0.5, 2]; beta the same on even shapes, where C is filled with random values, so a kernel
    that ignores C is off by beta * C0 (far past any tolerance) and an unwritten element keeps
    C0; and 0 on odd shapes, where C stays NaN-poisoned, so an unwritten element is NaN and so is
    D where the kernel adds 0 * C (torch.addmm ignores C at beta = 0, and so must the kernel)."""
    values = {}
    if epi.get("alpha") == "runtime":
        values["alpha"] = rng.uniform(0.5, 2.0)
    if epi.get("beta") == "runtime":
        values["beta"] = rng.uniform(0.5, 2.0) if index % 2 == 0 else 0.0
    return values


def fn_inputs(
    args: list, m: int, n: int, k: int, index: int, rng: random.Random, gen, out_dtype=None
) -> dict:
    """Fresh values for an epilogue function's arguments after the accumulator (SPEC's
    epilogue.fn.args): a runtime scalar uniform in [0.5, 2] x sqrt(K) (the accumulator's scale for
    randn inputs, so a clamp limit cuts some elements and not others); a device scalar the same
    as a 0-d float32 tensor; vectors uniform in [0.5, 2], (M,) / (N,) on even shapes and (M, 1)
    / (1, N) on odd ones (both forms torch._scaled_mm takes)."""
    import torch

    values: dict = {}
    for name, kind in args:
        if kind == "scalar":
            values[name] = rng.uniform(0.5, 2.0) * math.sqrt(k)
        elif kind == "device_scalar":
            values[name] = torch.tensor(rng.uniform(0.5, 2.0), device="cuda")
        elif kind in ("row", "col"):
            length = m if kind == "row" else n
            v = torch.rand(length, device="cuda", generator=gen) * 1.5 + 0.5
            if index % 2:
                v = v[:, None] if kind == "row" else v[None, :]
            values[name] = v.contiguous()
        elif kind == "tile":
            # an (M, N) input in C's dtype (a residual): the accumulator's scale, sqrt(K)
            t = torch.randn(m, n, device="cuda", generator=gen) * math.sqrt(k)
            values[name] = t.to(out_dtype or torch.bfloat16)
    return values


def split_gated(acc, block: int = 8):
    """The gate and up halves of a gated pair's product A @ B^T (M, N), B's rows interleaved in
    blocks of `block` (gate rows, then up rows; cutegemm.interleave_gate_up): two (M, N/2)."""
    m, n = acc.shape
    pairs = acc.reshape(m, n // (2 * block), 2, block)
    return pairs[:, :, 0, :].reshape(m, n // 2), pairs[:, :, 1, :].reshape(m, n // 2)


def fn_reference(module, fn: dict, acc, values: dict):
    """float32 D = the epilogue function on the whole f32 product, in torch: the function's own
    source (copied into the kernel file) run again with torch tensors, `cutlass.min` / `max` as
    torch.minimum / maximum and `cute.math` as torch's; vectors broadcast as (M, 1) and (1, N)."""
    import inspect
    import types

    import torch

    def pair(op):
        def f(x, y):
            return op(torch.as_tensor(x, device=acc.device), torch.as_tensor(y, device=acc.device))

        return f

    math_ns = types.SimpleNamespace(exp=torch.exp, tanh=torch.tanh, log=torch.log,
                                    sqrt=torch.sqrt, rsqrt=torch.rsqrt)  # fmt: skip
    names = {
        "cutlass": types.SimpleNamespace(min=pair(torch.minimum), max=pair(torch.maximum)),
        "cute": types.SimpleNamespace(math=math_ns),
    }
    name = fn["ref"].rsplit(":", 1)[1]
    source = inspect.getsource(getattr(module, name))
    namespace: dict = {**names, **{kind: float for kind in ("Acc", "Scalar", "DeviceScalar",
                                                            "RowVec", "ColVec", "Tile", "Gate",
                                                            "Up")}}  # fmt: skip
    exec(compile(source, f"<{fn['ref']}>", "exec"), namespace)  # noqa: S102 - the project's own
    call = {}
    gated = any(kind == "gate" for _, kind in fn["args"])
    gate, up = split_gated(acc) if gated else (None, None)
    for arg, kind in fn["args"]:
        if kind == "acc":
            call[arg] = acc
        elif kind == "gate":
            call[arg] = gate
        elif kind == "up":
            call[arg] = up
        elif kind == "tile":
            call[arg] = values[arg].float()
        elif kind == "row":
            call[arg] = values[arg].reshape(-1, 1).float()
        elif kind == "col":
            call[arg] = values[arg].reshape(1, -1).float()
        else:
            call[arg] = values[arg]
    return torch.as_tensor(namespace[name](**call), device=acc.device).float()


def check_variant(
    path: Path,
    count: int,
    seed: int,
    launch_with: str = "jit",
    shapes: list[tuple[int, int, int]] | None = None,
) -> list[Case]:
    """Poison C with NaN, launch, compare with a float32 reference, for every shape (the fixed
    and `count` random ones, or exactly `shapes`). A runtime alpha or beta (SPEC "runtime") is
    drawn per shape, uniform in [0.5, 2], and passed at launch; see runtime_values for beta. A
    row_sumsq kernel's row_partials are NaN-poisoned too and checked by check_row_sumsq (its
    combined sums against the reference's, and a second launch bitwise the same)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    module = load_module(path)
    spec = module.SPEC
    # e4m3: randn in f32 rounded to float8; the reference upcasts those same float8 values
    dtype = torch_dtype(spec["dtype"])
    out_name = spec["epilogue"].get("out_dtype") or spec["dtype"]
    out_dtype = torch_dtype(out_name)
    # block_quant (e4m3 out): its own check below (check_block_quant)
    tol = E4M3_REL if out_name == "e4m3" else tolerance(spec["dtype"], out_name)
    rng = random.Random(seed)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    cases = []
    # the operands in the kernel's major modes: a (M, K) K- or M-major, b (N, K) K- or N-major
    a_major, b_major = spec.get("a_major", "k"), spec.get("b_major", "k")
    for i, (m, n, k) in enumerate(shapes or shapes_for(module.SHAPE_MULTIPLES, count, rng)):
        scalars = runtime_values(spec["epilogue"], i, rng)
        epi = {**spec["epilogue"], **scalars}
        a = operand(m, k, a_major, dtype, gen)
        b = operand(n, k, b_major, dtype, gen)
        # c lives inside a NaN-poisoned buffer with spare columns and a spare row, so both an
        # unwritten element and a store past the edge of C are caught
        pad = 16 if out_dtype.itemsize == 1 else 8  # 16-byte aligned rows (float8: 16 columns)
        fn = epi.get("fn")
        # a gated pair (Gate, Up): C has one column per gate and up pair
        n_out = n // 2 if fn and any(kind == "gate" for _, kind in fn["args"]) else n
        buf = torch.full((m + 1, n_out + pad), float("nan"), device="cuda", dtype=out_dtype)
        c = buf[:m, :n_out]
        if epi.get("beta", 0.0):  # C is an input: fill it (an unwritten element then keeps C0)
            c.copy_(torch.randn(m, n, device="cuda", generator=gen))
        c0 = c.float().clone()
        extra = []
        fn_values = (
            fn_inputs(
                [a_ for a_ in fn["args"] if a_[1] not in ACC_KINDS],
                m,
                n,
                k,
                i,
                rng,
                gen,
                out_dtype,
            )
            if fn
            else {}
        )
        if epi.get("bias", "none") != "none":  # a fresh bias vector of C's dtype
            length = m if epi["bias"] == "row" else n
            extra.append(torch.randn(length, device="cuda", generator=gen).to(out_dtype))
        sumsq: dict = {}
        if epi.get("row_sumsq"):
            # row_partials (P, M), NaN-poisoned, with a NaN guard band after it (a contiguous
            # view of a longer buffer): an unwritten partial or a store past the end shows
            elems = module.row_partial_count(n) * m
            pbuf = torch.full((elems + 64,), float("nan"), device="cuda", dtype=torch.float32)
            sumsq["row_partials"] = pbuf[:elems].view(-1, m)
        block = epi.get("block_quant")
        if block:
            # scales (M, blocks) with strides (1, M): the transpose of a NaN-poisoned (blocks, M)
            # view of a longer buffer, a NaN guard band after it
            elems = module.scale_block_count(n) * m
            sbuf = torch.full((elems + 64,), float("nan"), device="cuda", dtype=torch.float32)
            sumsq["scales"] = sbuf[:elems].view(-1, m).t()
        note = ""
        try:
            if launch_with == "jit":
                module.launcher(a, b, c, *extra, **scalars, **fn_values, **sumsq)()
            elif sumsq:
                raise ValueError("row_sumsq and block_quant kernels are not exported to C")
            else:
                launch_with(a, b, c, *extra)  # an AOT kernel object
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a failed launch is a failed case
            cases.append(Case(path.stem, m, n, k, math.inf, tol, False, f"{type(e).__name__}: {e}"))
            continue
        if fn:
            ref = fn_reference(module, fn, a.float() @ b.float().T, fn_values)
        else:
            ref = reference(a, b, c0, epi, *extra)
        got = c.float()
        err = ((got - ref).norm() / ref.norm()).item()
        outside = torch.cat([buf[:m, n_out:].flatten(), buf[m, :].flatten()])
        if not torch.isnan(outside.float()).all():
            note = "wrote outside C"
        passed = math.isfinite(err) and err <= tol and not note
        if not math.isfinite(err):
            note = f"{int(torch.isnan(got).sum())} NaN (unwritten) of {m * n_out}"
        if block:
            tol = E4M3_REL
            bq_note, bq_ok, err = check_block_quant(
                c, sumsq["scales"], ref, block, block_quant_gemm_tolerance(spec["dtype"])
            )
            if not torch.isnan(sbuf[elems:]).all():
                bq_note, bq_ok = bq_note + "; scales written past their end", False
            # a second launch into fresh NaN tensors: the same bits in D and in the scales
            d2 = torch.full_like(c, float("nan"))
            s2 = torch.full((elems,), float("nan"), device="cuda").view(-1, m).t()
            module.launcher(a, b, d2, *extra, **scalars, **fn_values, scales=s2)()
            torch.cuda.synchronize()
            same = torch.equal(c.view(torch.uint8), d2.view(torch.uint8)) and torch.equal(
                sumsq["scales"].view(torch.int32), s2.view(torch.int32)
            )
            if not same:
                bq_note += "; NOT bitwise-reproducible"
            outside_note = "wrote outside C" if "outside" in note else ""
            note = "; ".join(x for x in (outside_note, bq_note) if x)
            passed = bq_ok and same and "outside" not in note
        elif sumsq:

            def launch(parts, a=a, b=b, c=c, extra=extra, scalars=scalars, fn_values=fn_values):
                module.launcher(a, b, c, *extra, **scalars, **fn_values, row_partials=parts)()

            elems = sumsq["row_partials"].numel()
            sq_note, sq_ok = check_row_sumsq(
                module, launch, sumsq["row_partials"], pbuf[elems:], ref
            )
            note = "; ".join(x for x in (note, sq_note) if x)
            passed = passed and sq_ok
        values = ", ".join(f"{name}={value:.4g}" for name, value in scalars.items())
        if fn:
            values = ", ".join(
                f"{name} {tuple(v.shape)}" if hasattr(v, "shape") and v.dim() else
                f"{name}={float(v):.4g}" for name, v in fn_values.items()
            )  # fmt: skip
        note = "; ".join(x for x in (note, values) if x)
        cases.append(Case(path.stem, m, n, k, err, tol, passed, note))
    return cases


# ---- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    m: int
    n: int
    k: int

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def bytes_moved(self, in_bytes: int = 2, out_bytes: int = 2) -> int:
        """A + B + C, each once: the fewest bytes the product must move."""
        return in_bytes * (self.m * self.k + self.n * self.k) + out_bytes * self.m * self.n


def load_shapes(path: Path) -> list[Shape]:
    """A shape list: `[[shape]]` tables with name, m, n, k (m may be a list: one shape each)."""
    doc = tomllib.loads(path.read_text())
    out = []
    for entry in doc.get("shape", []):
        ms = entry["m"] if isinstance(entry["m"], list) else [entry["m"]]
        for m in ms:
            label = entry["name"] if len(ms) == 1 else f"{entry['name']} M={m}"
            out.append(Shape(label, m, entry["n"], entry["k"]))
    return out


def time_interleaved(
    fns: dict[str, list[Callable[[], None]]], rounds: int, reps: int
) -> dict[str, float]:
    """Median µs per launch for each entry, timing the entries in turn, `rounds` times over.

    Each entry is a list of launch functions over different input sets; consecutive launches
    rotate through them so the L2 cache does not serve the inputs. Each timed sample is `reps`
    back-to-back launches between two CUDA events.
    """
    import torch

    samples: dict[str, list[float]] = {k: [] for k in fns}
    for launches in fns.values():  # warm-up: compile, load, first-touch
        for f in launches:
            f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for key, launches in fns.items():
            start.record()
            for i in range(reps):
                launches[i % len(launches)]()
            end.record()
            end.synchronize()
            samples[key].append(start.elapsed_time(end) * 1000.0 / reps)
    return {k: statistics.median(v) for k, v in samples.items()}


def torch_dtype(name: str):
    """The torch dtype of a spec's dtype name (f16, bf16, f32, e4m3)."""
    import torch

    return {
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "f32": torch.float32,
        "e4m3": torch.float8_e4m3fn,
    }[name]


def input_sets(shape: Shape, dtype, out_dtype=None, min_bytes: int = 256 << 20) -> list[tuple]:
    """Enough (a, b, c) sets that cycling through them overflows a 50 MB L2 several times;
    c is `out_dtype` (default: the input dtype)."""
    import torch

    out_dtype = out_dtype or dtype
    per = shape.bytes_moved(dtype.itemsize, out_dtype.itemsize)
    count = max(2, min(8, -(-min_bytes // per)))
    sets = []
    for _ in range(count):
        a = torch.randn(shape.m, shape.k, device="cuda", dtype=torch.float32).to(dtype)
        b = torch.randn(shape.n, shape.k, device="cuda", dtype=torch.float32).to(dtype)
        c = torch.empty(shape.m, shape.n, device="cuda", dtype=out_dtype)
        sets.append((a, b, c))
    return sets


def capture_graph(launches: list[Callable[[], object]]):
    """The launches captured in one CUDA graph, after a warm-up on a side stream (compile, load,
    workspace) outside it."""
    graph, _ = capture_step(lambda: [f() for f in launches])
    return graph


def capture_step(step: Callable[[], object], warmups: int = 1):
    """step() run `warmups` times on a side stream (compile, load, workspaces), then captured in
    one CUDA graph; returns (graph, what the captured step returned)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmups):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = step()
    torch.cuda.synchronize()
    return graph, outs


def results_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, default=lambda o: asdict(o)))


@dataclass
class BenchRow:
    shape: str
    m: int
    n: int
    k: int
    variant: str
    us: float
    torch_us: float
    rel_err: float

    @property
    def tflops(self) -> float:
        return 2 * self.m * self.n * self.k / self.us / 1e6

    @property
    def torch_tflops(self) -> float:
        return 2 * self.m * self.n * self.k / self.torch_us / 1e6

    @property
    def tbps(self) -> float:
        return Shape(self.shape, self.m, self.n, self.k).bytes_moved() / self.us / 1e6

    @property
    def ratio(self) -> float:
        """Speed relative to torch.matmul timed in the same process (> 1: faster)."""
        return self.torch_us / self.us


def is_fused(spec: dict) -> bool:
    """A fused or non-input-dtype epilogue computes something other than torch.mm (row_sumsq:
    besides it, row partials that launcher takes)."""
    from codegen.spec import Spec

    epi = Spec.model_validate(spec).epilogue
    return (
        epi.fused
        or epi.row_sumsq
        or epi.block_quant is not None
        or epi.out_dtype not in (None, spec["dtype"])
    )


def is_k_major(spec: dict) -> bool:
    """Both operands K-major (a (M, K), b (N, K) row-major): what the timing stages feed."""
    return spec.get("a_major", "k") == spec.get("b_major", "k") == "k"


def workspace_fits(module, m: int, n: int) -> bool:
    """A split-K separate-reduce kernel's workspace holds MAX_TILES output tiles: False for a
    shape with more (its launcher would refuse it); True for every other kernel."""
    if not getattr(module, "MAX_TILES", 0):
        return True
    rows, cols = module.C_TILE
    return -(-m // rows) * -(-n // cols) <= module.MAX_TILES


def bench_shape(shape: Shape, modules: dict[str, object], rounds: int, reps: int) -> list[BenchRow]:
    """Time every module that takes this shape, interleaved with torch.mm on the same inputs."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    fits = {
        name: mod
        for name, mod in modules.items()
        if mod.SPEC["dtype"] == "bf16"
        and not is_fused(mod.SPEC)
        and is_k_major(mod.SPEC)
        and all(
            v % mod.SHAPE_MULTIPLES[d] == 0
            for d, v in (("M", shape.m), ("N", shape.n), ("K", shape.k))
        )
        and workspace_fits(mod, shape.m, shape.n)
    }
    if not fits:
        return []
    dtype = torch.bfloat16
    sets = input_sets(shape, dtype)
    fns: dict[str, list[Callable[[], None]]] = {
        "torch": [lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c) for a, b, c in sets]
    }
    errors = {}
    for name, mod in fits.items():
        a, b, c = sets[0]
        c.fill_(float("nan"))
        mod.launcher(a, b, c)()
        ref = a.float() @ b.float().T
        errors[name] = ((c.float() - ref).norm() / ref.norm()).item()
        fns[name] = [mod.launcher(a, b, c) for a, b, c in sets]
    times = time_interleaved(fns, rounds, reps)
    return [
        BenchRow(
            shape.name, shape.m, shape.n, shape.k, name, times[name], times["torch"], errors[name]
        )
        for name in fits
    ]


def plot(best: list[BenchRow], path: Path) -> None:
    """One bar per shape: the best variant's speed relative to torch.matmul."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(best)), 5))
    ratios = [r.ratio for r in best]
    ax.bar(range(len(best)), ratios, color=["tab:green" if x >= 1 else "tab:red" for x in ratios])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(best)), [r.shape for r in best], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speed vs torch.matmul (same process)")
    ax.set_title("best generated variant per shape, bf16")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
