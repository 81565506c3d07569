"""Epilogue functions that are not in the library: the README's walk-through."""

import cutlass

from codegen.epilogue_fn import Acc, ColVec, Scalar


def clamp_bias(acc: Acc, alpha: Scalar, bias: ColVec, limit: Scalar):
    """D = clamp(alpha * A @ B^T + bias[col], -limit, limit); alpha and limit host floats, bias a
    float32 vector of length N."""
    x = acc * alpha + bias
    return cutlass.min(cutlass.max(x, -limit), limit)
