"""Golden files: a small fixed set of specs rendered byte for byte.

``tests/golden/specs/*.toml`` covers both architectures (sm_100a, sm_90a), both sm_100a mainloops
(K-loop, warp-specialized), unswizzled and swizzled (32B, 64B, 128B) stages, f16 and bf16, both
epilogues and schedulers, named and swept variants, and "auto" knobs. Their
rendering, plus the MANIFEST, must equal ``tests/golden/expected/`` exactly. Specs are loaded from
the ``tests/`` folder, so each header reads ``# spec: golden/specs/...``.

After a deliberate template or planner change, regenerate the expected files with one command and
review the diff like any other code change:

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden.py
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TESTS

from codegen import loader, render
from codegen.spec import Spec

GOLDEN = TESTS / "golden"
EXPECTED = GOLDEN / "expected"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def golden_specs() -> Iterator[list[loader.LoadedSpec]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(TESTS)
        yield loader.load([Path("golden/specs")])


@pytest.fixture(scope="module")
def golden_files(golden_specs: list[loader.LoadedSpec]) -> dict[str, str]:
    """File name -> text of everything the golden specs render (kernels and MANIFEST)."""
    env = render.environment()
    return render.expected_files([render.render_one(s, env) for s in golden_specs])


def test_golden_files_match(golden_files: dict[str, str]) -> None:
    if UPDATE:
        EXPECTED.mkdir(parents=True, exist_ok=True)
        for stale in EXPECTED.iterdir():
            if stale.name not in golden_files:
                stale.unlink()
        for name, text in golden_files.items():
            path = EXPECTED / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8", newline="\n")

    present = sorted(p.name for p in EXPECTED.iterdir())
    assert present == sorted(golden_files), "run UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    diffs = []
    for name, text in sorted(golden_files.items()):
        want = (EXPECTED / name).read_bytes()
        if want != text.encode("utf-8"):
            diff = difflib.unified_diff(
                want.decode("utf-8").splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"expected/{name}",
                f"rendered/{name}",
            )
            diffs.append("".join(list(diff)[:60]))
    assert not diffs, (
        f"{len(diffs)} golden file(s) differ; if intended, run "
        "UPDATE_GOLDEN=1 pytest tests/test_golden.py\n" + "\n".join(diffs)
    )


def test_golden_set_covers_the_knobs(golden_specs: list[loader.LoadedSpec]) -> None:
    """Guard against the golden set shrinking below what it is meant to pin."""
    specs = [s.spec for s in golden_specs]
    assert {s.warp_specialized for s in specs} == {True, False}
    assert {s.swizzle for s in specs} >= {"none", "32B", "64B", "128B"}
    assert {s.dtype for s in specs} == {"f16", "bf16"}
    assert {s.arch for s in specs} == {"sm_100a", "sm_90a"}
    assert {s.epilogue.style for s in specs} == {"direct", "tma"}
    assert {s.scheduler.kind for s in specs} == {"grid", "persistent"}
    assert any(s.spec.name is None for s in golden_specs), "a swept (canonically named) variant"


def test_golden_expected_files_carry_their_spec(golden_specs: list[loader.LoadedSpec]) -> None:
    """Each expected file's header and SPEC agree with the spec that renders it."""
    import ast

    for s in golden_specs:
        text = (EXPECTED / f"{s.name}.py").read_text(encoding="utf-8")
        lines = text.splitlines()
        # the variant is left out where the file's name says it (always, for a loaded spec)
        assert lines[1] == f"# spec: {s.path}" and s.variant == s.name
        assert lines[3] == f"# spec hash: {s.spec.spec_hash()}"
        tree = ast.parse(text)
        (spec_dict,) = [
            ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign)
            and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["SPEC"]
        ]
        assert Spec.model_validate(spec_dict) == s.spec.model_copy(update={"name": s.name})


def test_render_one_is_repeatable(
    golden_specs: list[loader.LoadedSpec], golden_files: dict[str, str]
) -> None:
    """A second render in the same process, with a fresh environment, gives the same bytes."""
    again = render.render_one(golden_specs[0], render.environment())
    assert again.text == golden_files[f"{golden_specs[0].name}.py"]
