"""Epilogue functions shipped with the specs (``epilogue = { fn = "specs/epilogues/library.py:NAME" }``).

Each is called once per accumulator element (a gated one, Gate and Up, once per gate and up pair),
in f32, before the conversion to the output dtype; its annotations say what each argument is
(codegen/epilogue_fn.py). ``codegen render`` copies the
function into the generated kernel.
"""

import cutlass.cute as cute

from codegen.epilogue_fn import Acc, ColVec, DeviceScalar, Gate, RowVec, Tile, Up


def scale_per_tensor(acc: Acc, scale_a: DeviceScalar, scale_b: DeviceScalar):
    """FP8 per-tensor scales: D = (A @ B^T) * scale_a * scale_b, the scales 0-d float32 CUDA
    tensors (as torch._scaled_mm takes them), read at each launch."""
    return acc * scale_a * scale_b


def scale_rowwise(acc: Acc, scale_a: RowVec, scale_b: ColVec):
    """FP8 row-wise scales: D[i, j] = (A @ B^T)[i, j] * scale_a[i] * scale_b[j], as
    torch._scaled_mm(a, b.t(), scale_a=(M, 1), scale_b=(1, N)) computes it."""
    return acc * scale_a * scale_b


def residual_add(acc: Acc, residual: Tile):
    """Residual add: D = A @ B^T + residual, the residual an (M, N) tensor in the output dtype
    (e.g. the hidden state an attention output or down projection adds to)."""
    return acc + residual


def gelu_tanh_residual(acc: Acc, residual: Tile):
    """D = gelu_tanh(A @ B^T) + residual: an activation before the residual add."""
    inner = (acc + acc * acc * acc * 0.044715) * 0.7978845608028654
    return acc * 0.5 * (cute.math.tanh(inner) + 1.0) + residual


def swiglu(gate: Gate, up: Up):
    """Gated SwiGLU on a fused gate+up projection: D = silu(x @ W_gate^T) * (x @ W_up^T), with B
    the [gate; up] weight interleaved in blocks of 8 rows (cutegemm.interleave_gate_up); D has
    N / 2 columns."""
    return gate / (cute.math.exp(gate * -1.0) + 1.0) * up


def geglu(gate: Gate, up: Up):
    """Gated GeGLU (tanh form): D = gelu_tanh(x @ W_gate^T) * (x @ W_up^T), B interleaved as for
    swiglu."""
    inner = (gate + gate * gate * gate * 0.044715) * 0.7978845608028654
    return gate * 0.5 * (cute.math.tanh(inner) + 1.0) * up


def device_alpha(acc: Acc, alpha: DeviceScalar):
    """D = alpha * (A @ B^T), alpha a 0-d float32 CUDA tensor read at each launch (gemm(a, b,
    alpha=t): a captured CUDA graph replays with t's new value)."""
    return acc * alpha
