"""Hopper (sm_90a): wgmma into registers, producer and consumer warpgroups, ping-pong.

- :mod:`.rules`: derived numbers (masks, arrive counts, buffer sizes) and the legality rules;
- :mod:`.values`: the plan, every value the templates under ``templates/sm90/`` print;
- :mod:`.docs`: the docstring prose, printed from those values;
- :mod:`.counts`: the PTX counts the build expects, from the spec alone, and the PTX patterns and
  report columns only this architecture has.
"""

from __future__ import annotations

from codegen.arch.interface import ModuleArch
from codegen.arch.sm90 import counts, rules, values


class Sm90(ModuleArch):
    """The sm_90a architecture (see :class:`codegen.arch.interface.Arch`)."""

    name = "sm_90a"
    knobs: frozenset[str] = frozenset({"consumer_warpgroups", "consumer_mode", "ctas_per_sm"})
    capability = (9, 0)
    gpu_family = "sm_90 (Hopper: H100/H200)"


ARCH = Sm90("sm90", rules, values, counts, values.Sm90Values)
