"""Epilogue functions shipped with the specs (``epilogue = { fn = "specs/epilogues/library.py:NAME" }``).

Each is called once per accumulator element, in f32, before the conversion to the output dtype;
its annotations say what each argument is (codegen/epilogue_fn.py). ``codegen render`` copies the
function into the generated kernel.
"""

from codegen.epilogue_fn import Acc, ColVec, DeviceScalar, RowVec


def scale_per_tensor(acc: Acc, scale_a: DeviceScalar, scale_b: DeviceScalar):
    """FP8 per-tensor scales: D = (A @ B^T) * scale_a * scale_b, the scales 0-d float32 CUDA
    tensors (as torch._scaled_mm takes them), read at each launch."""
    return acc * scale_a * scale_b


def scale_rowwise(acc: Acc, scale_a: RowVec, scale_b: ColVec):
    """FP8 row-wise scales: D[i, j] = (A @ B^T)[i, j] * scale_a[i] * scale_b[j], as
    torch._scaled_mm(a, b.t(), scale_a=(M, 1), scale_b=(1, N)) computes it."""
    return acc * scale_a * scale_b


def device_alpha(acc: Acc, alpha: DeviceScalar):
    """D = alpha * (A @ B^T), alpha a 0-d float32 CUDA tensor read at each launch (gemm(a, b,
    alpha=t): a captured CUDA graph replays with t's new value)."""
    return acc * alpha
