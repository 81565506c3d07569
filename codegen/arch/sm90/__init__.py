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
    short = "sm90"
    template = "sm90/gemm.py.j2"
    template_root = "sm90"
    knobs: frozenset[str] = frozenset({"consumer_warpgroups", "consumer_mode", "ctas_per_sm"})
    report_columns = counts.REPORT_COLUMNS
    patterns = counts.PATTERNS
    flagship_sm_count = rules.SM_COUNT
    capability = (9, 0)
    gpu_family = "sm_90 (Hopper: H100/H200)"
    rules = rules
    values = values
    counts = counts
    values_type = values.Sm90Values


ARCH = Sm90()
