"""Cross-checks of the model against the source and the PTX: which barrier operations it saw.

* `source_calls` counts, with `ast`, the call sites of each barrier primitive in a kernel file's
  device code; `model_lines` counts the distinct source lines of the ops the model recorded for
  them (over all traced sizes). Equal counts mean every barrier call in the file was executed
  by the model for some size: none was skipped by a path the sizes never took.
* `model_sites` counts unrolled sites per PTX instruction class (a constexpr loop unrolls, an
  inlined `@cute.jit` helper is a site per call site, a dynamic loop is one site), which is what
  the PTX holds once per site: comparable to `codegen.plan.expected_counts` (what
  `codegen build` checks the PTX against) and to the PTX itself.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from codegen.verify.model import KernelModel, Op

HOST_FUNCTIONS = frozenset({"gemm", "compile_args", "compile_tvm_ffi", "launcher", "run"})

# source call name -> op kind the model records for it
SOURCE_KINDS: dict[str, str] = {
    "mbarrier_init": "init",
    "mbarrier_wait": "wait",
    "mbarrier_wait_parity": "wait",
    "mbarrier_try_wait": "wait",
    "mbarrier_arrive": "arrive",
    "mbarrier_arrive_and_expect_tx": "arrive_expect_tx",
    "commit": "umma_commit",
    "issue_clc_query": "clc_query",
    "cluster_arrive": "cluster_arrive",
    "cluster_arrive_relaxed": "cluster_arrive",
    "cluster_wait": "cluster_wait",
    "fence_view_async_tmem_load": "tmem_wait_ld",
    "cp_async_bulk_wait_group": "bulk_wait",
}


def source_calls(text: str) -> dict[str, int]:
    """Barrier-primitive call sites in the device code of a kernel file, by op kind."""
    tree = ast.parse(text)
    counts: dict[str, int] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name in HOST_FUNCTIONS:
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name = node.func.attr
            kind = SOURCE_KINDS.get(name)
            if name == "commit" and not _is_attr(node.func.value, "tcgen05"):
                kind = None
            first = node.args[0] if node.args else None
            if name == "copy" and isinstance(first, ast.Name) and first.id.startswith("tma_"):
                kind = "tma_copy"
            if kind:
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def _is_attr(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _source_kind(op: Op) -> str | None:
    if op.kind == "arrive":
        return "arrive_expect_tx" if op.args[2] else "arrive"
    if op.kind in ("tma_load", "tma_store"):
        return "tma_copy"
    if op.kind in set(SOURCE_KINDS.values()):
        return op.kind
    return None


def model_lines(models: Iterable[KernelModel]) -> dict[str, int]:
    """Distinct source lines of the recorded ops, by the kinds `source_calls` counts."""
    seen: dict[str, set[tuple[str, int]]] = {}
    for model in models:
        for launch in model.launches:
            for actor in launch.actors:
                for op in actor.ops:
                    kind = _source_kind(op)
                    if kind:
                        seen.setdefault(kind, set()).add((launch.kernel, op.line))
    return {k: len(v) for k, v in seen.items()}


# PTX instruction class (codegen/build.py PATTERNS) -> which recorded ops are one of it
PTX_CLASSES: dict[str, Callable[[Op], bool]] = {
    "mbarrier.init": lambda op: op.kind == "init",
    "mbarrier.try_wait": lambda op: op.kind == "wait",
    "tcgen05.commit": lambda op: op.kind == "umma_commit",
    "tcgen05.mma": lambda op: op.kind == "umma",
    "mma.sync": lambda op: op.kind == "mma_sync",
    "tcgen05.ld": lambda op: op.kind == "tmem_ld",
    "barrier.cluster": lambda op: op.kind in ("cluster_arrive", "cluster_wait"),
    "flag release.gpu": lambda op: op.kind == "gstore" and op.args[2] == "release",
    "flag acquire.gpu": lambda op: op.kind == "await" and op.args[3] == "acquire",
    "clc try_cancel": lambda op: op.kind == "clc_query",
}


def model_sites(models: Iterable[KernelModel]) -> dict[str, int]:
    """Unrolled sites of each PTX instruction class the model recorded (all sizes, all CTAs:
    every CTA runs the same code, so a site is counted once)."""
    seen: dict[str, set] = {key: set() for key in PTX_CLASSES}
    for model in models:
        for launch in model.launches:
            for actor in launch.actors:
                for op in actor.ops:
                    for key, match in PTX_CLASSES.items():
                        if match(op):
                            seen[key].add((launch.kernel, op.site))
    return {k: len(v) for k, v in seen.items()}
