"""The architectures: arch name -> the object implementing :class:`codegen.arch.interface.Arch`.

Adding an architecture is one package under ``codegen/arch/`` and one line here. Generic code
(rules, planner, render, build, the CLI) reaches an architecture only through this module.
"""

from __future__ import annotations

from codegen.arch import sm90, sm100
from codegen.arch.interface import Arch
from codegen.spec import Spec

# one line per architecture: each names itself (Arch.name, one of spec.ARCHES)
ARCHES: dict[str, Arch] = {a.name: a for a in (sm100.ARCH, sm90.ARCH)}


def get(arch: str) -> Arch:
    """The architecture of that name ("sm_100a")."""
    try:
        return ARCHES[arch]
    except KeyError:
        raise KeyError(f"unknown architecture {arch!r}; known: {', '.join(ARCHES)}") from None


def for_spec(spec: Spec) -> Arch:
    """The architecture a spec targets."""
    return get(spec.arch)


def shared_knobs() -> frozenset[str]:
    """Spec fields no architecture owns: every kernel's SPEC prints them."""
    owned = frozenset().union(*(a.knobs for a in ARCHES.values()))
    return frozenset(Spec.model_fields) - owned


def spec_knobs(spec: Spec) -> dict[str, object]:
    """The spec as its kernel file prints it (SPEC): the shared knobs and its own architecture's,
    not another architecture's (those are at their defaults: the rules reject anything else, and
    reading SPEC back into a Spec restores them)."""
    keep = shared_knobs() | for_spec(spec).knobs
    # the name first, as Spec declares it
    return {"name": spec.name} | {k: v for k, v in spec.knobs().items() if k in keep}


def patterns() -> dict[str, str]:
    """The PTX patterns only some architecture's kernels have, of every architecture."""
    out: dict[str, str] = {}
    for arch in ARCHES.values():
        out |= arch.patterns
    return out
