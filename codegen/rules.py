"""Legality rules and budget arithmetic of a spec: the front door that picks its architecture.

:func:`check` and :func:`resolve` apply the rules every architecture shares
(:mod:`codegen.rules_common`, where their helpers and limits live) and the spec's own
architecture's (through :mod:`codegen.registry`); the SMEM budget functions take the
architecture's buffers the same way. The loader, the planner and the docs call these; nothing else
re-derives their numbers.
"""

from __future__ import annotations

from codegen import light, registry, rules_common
from codegen.arch.interface import ArchRules
from codegen.rules_common import Violation
from codegen.spec import Spec

__all__ = [
    "arch_rules",
    "check",
    "max_stages",
    "resolve",
    "smem_bytes",
    "stage_bytes",
    "tx_bytes",
]


def arch_rules(spec: Spec) -> ArchRules:
    """The rules of the spec's architecture (its rules module)."""
    return registry.for_spec(spec).rules


def stage_bytes(spec: Spec) -> int:
    """A + B bytes of one stage in one CTA's SMEM (each CTA of an sm_100a pair holds half the
    tile's rows: a pair's stage is twice this)."""
    return registry.for_spec(spec).stage_bytes(spec)


def tx_bytes(spec: Spec) -> int:
    """Bytes the full barrier the MMA (sm_90a: the consumers) waits on expects per stage, the
    kernel's TX_BYTES: one CTA's stage_bytes, or for a CTA pair both CTAs' (2 x stage_bytes, on
    the leader's barrier; the follower's is unused)."""
    return arch_rules(spec).full_tx_bytes(spec)


def smem_bytes(spec: Spec, stages: int) -> int:
    """Total dynamic SMEM per CTA: barriers, the A ring, the B ring and any epilogue buffers."""
    return registry.for_spec(spec).smem_bytes(spec, stages)


def max_stages(spec: Spec) -> int:
    """The most stages that fit in the SMEM budget (0 if not even one does)."""
    return rules_common.max_stages(spec, smem_bytes)


def resolve(spec: Spec) -> Spec:
    """Replace "auto" knobs with concrete values: the widest legal swizzle, the most stages (a
    light kernel: no swizzle, 2 k-steps)."""
    if light.is_light(spec):
        return light.resolve(spec)
    return rules_common.resolve(spec, smem_bytes)


def check(spec: Spec) -> list[Violation]:
    """Every rule the spec breaks. Expects a resolved spec (no "auto" left)."""
    arch = registry.for_spec(spec)
    if light.is_light(spec):
        # no ring: the light rules check the cluster, the registers and the SMEM themselves
        return rules_common.operand_violations(spec) + arch.check(spec)
    return rules_common.check(spec, arch.check(spec), arch.smem_bytes, arch.stage_bytes(spec))
