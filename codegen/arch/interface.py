"""What an architecture provides: the interface every package under ``codegen/arch/`` implements
and :mod:`codegen.registry` hands out. Generic code (rules, planner front doors, render, build,
the CLI) reaches an architecture only through it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Protocol, runtime_checkable

from codegen import light
from codegen.plan_common import Plan
from codegen.rules_common import Violation
from codegen.spec import Spec


@runtime_checkable
class ArchRules(Protocol):
    """What generic code reads of an architecture's rules (its ``rules`` module implements it):
    the legality rules and the per-CTA budget arithmetic."""

    def check(self, spec: Spec) -> list[Violation]:
        """The architecture's own rules the spec breaks (the shared ones are checked besides)."""
        ...

    def stage_bytes(self, spec: Spec) -> int:
        """A + B bytes of one stage in one CTA's SMEM (one CTA of a pair: half the tile's rows)."""
        ...

    def full_tx_bytes(self, spec: Spec) -> int:
        """Bytes the full barrier of one stage expects (TX_BYTES; a CTA pair's: both CTAs')."""
        ...

    def barrier_bytes(self, spec: Spec, stages: int) -> int:
        """SMEM of the kernel's mbarriers (and what sits beside them) with `stages` stages."""
        ...

    def smem_bytes(self, spec: Spec, stages: int) -> int:
        """Dynamic SMEM one CTA needs with `stages` stages."""
        ...


@runtime_checkable
class Arch(Protocol):
    """One architecture: its rules, its planner, its expected PTX counts and what the build reports.

    Attributes:
        name: the spec's ``arch`` value ("sm_100a").
        short: the short name ("sm100"): the package, template folder and generated folder.
        template: the root template its kernels render from ("sm100/gemm.py.j2").
        template_root: the template folder of its partials ("sm100").
        knobs: the Spec fields this architecture owns (other architectures reject them and its
            kernels' SPEC dict prints them); the fields no architecture owns are shared.
        report_columns: the PTX counts `codegen build` reports for its kernels, in order.
        patterns: the PTX patterns only its kernels have (name -> regex); the build counts the
            union of every architecture's patterns and the shared ones in every kernel.
        flagship_sm_count: SMs of the GPU a cross-compile assumes.
        capability: the CUDA compute capability of the GPUs that run its kernels ((10, 0)).
        gpu_family: those GPUs, in words ("sm_100 (Blackwell: B200/GB200)").
        rules: its rules (:class:`ArchRules`; a module: the derived numbers and the legality
            rules).
        values_type: the frozen dataclass of its plan values (templates read `plan.GROUP.NAME`).
    """

    name: str
    short: str
    template: str
    template_root: str
    knobs: frozenset[str]
    report_columns: tuple[str, ...]
    patterns: dict[str, str]
    flagship_sm_count: int
    capability: tuple[int, int]
    gpu_family: str
    rules: ArchRules
    values_type: type

    def check(self, spec: Spec) -> list[Violation]:
        """The architecture's own rules the spec breaks (the shared ones are checked besides)."""
        ...

    def stage_bytes(self, spec: Spec) -> int:
        """A + B bytes of one stage in one CTA's SMEM (one CTA of a pair: half the tile's rows)."""
        ...

    def smem_bytes(self, spec: Spec, stages: int) -> int:
        """Dynamic SMEM one CTA needs with `stages` stages."""
        ...

    def plan(self, spec: Spec) -> Plan:
        """Everything the templates print for a resolved, legal spec."""
        ...

    def expected_counts(self, spec: Spec) -> dict[str, int]:
        """PTX instruction counts the build must find, computed from the spec alone."""
        ...

    def alloc_columns(self, spec: Spec) -> int | None:
        """TMEM columns every tcgen05.alloc of the kernel must take (None: no TMEM)."""
        ...


class ModuleArch:
    """An :class:`Arch` made of one package's modules: `rules` (:class:`ArchRules`), `values`
    (the planner: ``partials`` and ``values``) and `counts` (``expected_counts``,
    ``REPORT_COLUMNS``, ``PATTERNS``). A subclass sets only what is its own (`name`, `knobs`,
    `capability`, `gpu_family`, and :meth:`tmem_columns` if its kernels allocate TMEM); the other
    attributes follow, alike for every architecture, from the short name, the three modules and
    the plan's dataclass its one instance is made with."""

    name: str
    knobs: frozenset[str]
    capability: tuple[int, int]
    gpu_family: str

    def __init__(
        self,
        short: str,
        rules: ArchRules,
        values: ModuleType,
        counts: ModuleType,
        values_type: type,
    ) -> None:
        self.short = short
        self.template_root = short  # templates/<short>/: its partials
        self.template = f"{short}/gemm.py.j2"
        self.rules = rules
        self.values = values
        self.counts = counts
        self.values_type = values_type
        self.report_columns: tuple[str, ...] = counts.REPORT_COLUMNS
        self.patterns: dict[str, str] = counts.PATTERNS
        self.flagship_sm_count: int = rules.SM_COUNT

    # a light kernel (spec.mainloop = "light") is one design for every architecture:
    # codegen/light.py holds its rules, plan and counts

    def check(self, spec: Spec) -> list[Violation]:
        if light.is_light(spec):
            return light.check(spec)
        return light.tma_violations(spec) + self.rules.check(spec)

    def stage_bytes(self, spec: Spec) -> int:
        return 0 if light.is_light(spec) else self.rules.stage_bytes(spec)

    def smem_bytes(self, spec: Spec, stages: int) -> int:
        if light.is_light(spec):
            return light.smem_bytes(spec, stages)
        return self.rules.smem_bytes(spec, stages)

    def plan(self, spec: Spec) -> Plan:
        if light.is_light(spec):
            return light.plan(spec)
        return Plan(
            template=self.template,
            partials=self.values.partials(spec),
            values=self.values.values(spec),
        )

    def expected_counts(self, spec: Spec) -> dict[str, int]:
        if light.is_light(spec):
            return light.expected_counts(spec)
        return self.counts.expected_counts(spec)

    def alloc_columns(self, spec: Spec) -> int | None:
        return None if light.is_light(spec) else self.tmem_columns(spec)

    def tmem_columns(self, spec: Spec) -> int | None:
        """TMEM columns of a TMA kernel's tcgen05.alloc (None: the architecture has no TMEM)."""
        return None
