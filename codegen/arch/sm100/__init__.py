"""Blackwell (sm_100a): tcgen05 MMAs into TMEM, CTA pairs, cluster launch control.

- :mod:`.rules`: derived numbers (masks, arrive counts, buffer sizes) and the legality rules;
- :mod:`.values`: the plan, every value the templates under ``templates/sm100/`` print;
- :mod:`.docs`: the docstring prose, printed from those values;
- :mod:`.counts`: the PTX counts the build expects, from the spec alone, and the PTX patterns and
  report columns only this architecture has.
"""

from __future__ import annotations

from codegen.arch.interface import ModuleArch
from codegen.arch.sm100 import counts, rules, values
from codegen.spec import Spec


class Sm100(ModuleArch):
    """The sm_100a architecture (see :class:`codegen.arch.interface.Arch`)."""

    name = "sm_100a"
    knobs: frozenset[str] = frozenset({"cta_group", "accumulators"})
    capability = (10, 0)
    gpu_family = "sm_100 (Blackwell: B200/GB200)"

    def tmem_columns(self, spec: Spec) -> int | None:
        return rules.spec_tmem_columns(spec)


ARCH = Sm100("sm100", rules, values, counts, values.Sm100Values)
