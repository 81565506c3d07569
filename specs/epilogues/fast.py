"""Epilogue functions with approximate division (rcp.approx.ftz.f32, about 1 ulp of f32: far below
bf16's rounding), for kernels where an IEEE f32 division's slow-path subroutine costs a register
spill (the sm_100a gated pairs: specs/sm100/gated.toml). Same names and arguments as their
library.py counterparts, so cutegemm.gated_mm(x, w, "swiglu") finds them."""

from cutlass import cute

from codegen.epilogue_fn import Gate, Up


def swiglu(gate: Gate, up: Up):
    """silu(x @ W_gate^T) * (x @ W_up^T), B interleaved in blocks of 8 rows
    (cutegemm.interleave_gate_up); D has N / 2 columns."""
    return gate * cute.arch.rcp_approx(cute.math.exp(gate * -1.0) + 1.0) * up
