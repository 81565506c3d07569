"""One package per architecture (``sm100/``, ``sm90/``), each with its rules, planner (values),
docstring prose and expected PTX counts, plus :mod:`codegen.arch.shared`, the split-K and stream-K
pieces both architectures implement alike, and :mod:`codegen.arch.interface`, what an architecture
provides. :mod:`codegen.registry` maps an arch name to its package; no architecture imports
another, and nothing outside the registry imports an architecture.
"""
