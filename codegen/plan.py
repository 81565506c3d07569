"""Everything a template prints, computed here from a resolved spec.

Templates place these values; they never compute. :class:`Plan` also says which partials the
root template includes and which instruction counts the build must find in the PTX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from codegen.spec import Spec

CUTLASS_DTYPE = {
    "f16": "cutlass.Float16",
    "bf16": "cutlass.BFloat16",
    "e4m3": "cutlass.Float8E4M3FN",
    "f32": "cutlass.Float32",
}
TORCH_DTYPE = {
    "f16": "torch.float16",
    "bf16": "torch.bfloat16",
    "e4m3": "torch.float8_e4m3fn",
    "f32": "torch.float32",
}


# gelu, tanh form: gelu(x) = x/2 (1 + tanh(GELU_C (x + GELU_CUBIC x^3)))
GELU_C = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
# bias: the dimension of C its values run along (its length): "row" one per row, "col" per column
BIAS_DIM = {"row": "M", "col": "N"}


@dataclass(frozen=True)
class Plan:
    """Values and partial names for one generated file."""

    template: str
    partials: dict[str, str]
    values: dict[str, object]
    expected_counts: dict[str, int] = field(default_factory=dict)

    def __getattr__(self, name: str) -> object:  # lets templates write plan.tx_bytes
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def fusion_note(spec: Spec) -> str:
    """The fused epilogue as a formula, or nothing when it is a plain store."""
    epi = spec.epilogue
    if not epi.fused:
        return ""
    expr = "A @ B^T" if epi.alpha == 1.0 else f"{epi.alpha:g} * A @ B^T"
    if epi.beta != 0.0:
        expr += f" + {epi.beta:g} * C"
    if epi.bias != "none":
        expr += f" + {epi.bias}_bias"
    if epi.activation != "none":
        expr = f"{epi.activation}({expr})"
    return f"; D = {expr}"


def fusion_values(spec: Spec) -> dict[str, object]:
    """What the shared fusion macros (templates/common/fusion.py.j2) and the bias argument of the
    entry points (templates/common/runner.py.j2) print, for both architectures."""
    epi = spec.epilogue
    values: dict[str, object] = {
        "alpha": epi.alpha,
        "beta": epi.beta,
        "activation": epi.activation,
        "bias": epi.bias,
        "gelu_c": GELU_C,
        "gelu_cubic": GELU_CUBIC,
    }
    if epi.bias != "none":
        dim = BIAS_DIM[epi.bias]
        values |= {
            "bias_dim": dim,  # the bias has one value per row (M) or column (N) of C
            "bias_per": "row" if dim == "M" else "column",
            "bias_len": "a.shape[0]" if dim == "M" else "b.shape[0]",  # in launcher()
            "bias_fake_len": dim.lower(),  # compile_args' dynamic extent of that dimension
            "bias_note": (
                "+ bias[row]: one value per row of C"
                if dim == "M"
                else "+ bias[col]: one value per column of C"
            ),
        }
    return values


def plan(spec: Spec) -> Plan:
    """The plan of a resolved, legal spec, from its architecture's planner."""
    if spec.arch == "sm_100a":
        from codegen.plan_sm100 import plan_sm100

        return plan_sm100(spec)
    from codegen.plan_sm90 import plan_sm90

    return plan_sm90(spec)
