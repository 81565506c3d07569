"""The plan of a resolved, legal spec: everything its templates print, from its architecture's
planner (found through :mod:`codegen.registry`). The helpers every planner shares live in
:mod:`codegen.plan_common` and are re-exported here.
"""

from __future__ import annotations

from codegen import registry
from codegen.arch.shared import STREAMK_WIDE_DIVS
from codegen.plan_common import (
    BIAS_DIM,
    CUTLASS_DTYPE,
    GELU_C,
    GELU_CUBIC,
    TORCH_DTYPE,
    Plan,
    bias_values,
    extra_tensors,
    fusion_note,
    fusion_values,
    sm_sized_values,
    table,
    tile_order,
)
from codegen.spec import Spec

__all__ = [
    "BIAS_DIM",
    "CUTLASS_DTYPE",
    "GELU_C",
    "GELU_CUBIC",
    "STREAMK_WIDE_DIVS",
    "TORCH_DTYPE",
    "Plan",
    "bias_values",
    "expected_counts",
    "extra_tensors",
    "fusion_note",
    "fusion_values",
    "plan",
    "sm_sized_values",
    "table",
    "tile_order",
]


def plan(spec: Spec) -> Plan:
    """The plan of a resolved, legal spec, from its architecture's planner."""
    return registry.for_spec(spec).plan(spec)


def expected_counts(spec: Spec) -> dict[str, int]:
    """The PTX instruction counts the build must find for a resolved, legal spec, computed from
    the spec alone (no plan)."""
    return registry.for_spec(spec).expected_counts(spec)
