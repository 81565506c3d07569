"""The README's numbers about the tree: every count of kernels or variants it states is the
tree's (generated/), or is marked as a measurement of an earlier tree ("when the tree had N")."""

from __future__ import annotations

import re

from conftest import ROOT, kernel_glob

README = (ROOT / "README.md").read_text(encoding="utf-8")
COUNT = re.compile(r"\b(\d+) (?:(sm_90a|sm_100a) )?(?:kernels\b|variants\b|variant\(s\))")


def counts() -> dict[str | None, int]:
    files = kernel_glob()
    return {
        None: len(files),
        "sm_90a": sum(p.parent.name == "sm90" for p in files),
        "sm_100a": sum(p.parent.name == "sm100" for p in files),
    }


def test_every_kernel_count_in_the_readme_is_the_trees_or_marked_as_earlier() -> None:
    want = counts()
    text = " ".join(README.split())  # a sentence may wrap anywhere
    stale = []
    for m in COUNT.finditer(text):
        before = text[max(0, m.start() - 30) : m.start()]
        if before.endswith(("when the tree had ", "the tree had ")):
            continue  # a measurement of an earlier tree, said so
        if before.endswith("(") and text[m.end()] == ":":
            continue  # "(19 kernels: the persistent ones ...)": a subset, described
        if int(m[1]) != want[m[2]]:
            stale.append(f"{m[0]!r} (the tree has {want[m[2]]}): ...{before}{m[0]}...")
    assert stale == []
    assert f"passes all {want[None]} kernels" in text
