"""The plan of a resolved, legal spec: everything its templates print, from its architecture's
planner (found through :mod:`codegen.registry`). The helpers every planner shares live in
:mod:`codegen.plan_common`.
"""

from __future__ import annotations

from codegen import registry
from codegen.plan_common import Plan
from codegen.spec import Spec

__all__ = ["expected_counts", "plan"]


def plan(spec: Spec) -> Plan:
    """The plan of a resolved, legal spec, from its architecture's planner."""
    return registry.for_spec(spec).plan(spec)


def expected_counts(spec: Spec) -> dict[str, int]:
    """The PTX instruction counts the build must find for a resolved, legal spec, computed from
    the spec alone (no plan)."""
    return registry.for_spec(spec).expected_counts(spec)
