"""Every partial of a template family keeps its family's macro contract.

A family is a folder `templates/<arch>/<family>/` with a `_contract.py.j2`: it defines each macro
the arch skeleton may call on a partial of that family, empty, with the argument list every
partial must use. The template loader (codegen/render.py) puts those empty macros first in every
partial of the folder (a `.j2` file whose name does not start with `_`), so a partial defines only
the contract macros that print something for it, with the same arguments, never one empty (that
is the default) and no other public macro (a helper a partial keeps to itself starts with `_`);
the skeleton calls only contract macros on a family's module.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from jinja2 import nodes

from codegen import render

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
CONTRACT = "_contract.py.j2"


def _signature(macro: nodes.Macro) -> tuple[tuple[str, ...], int]:
    """A macro's argument names and how many of them have defaults."""
    return tuple(a.name for a in macro.args), len(macro.defaults)


def macros(env: jinja2.Environment, source: str) -> dict[str, tuple[tuple[str, ...], int]]:
    """The top-level macros a template source defines, by name."""
    return {m.name: _signature(m) for m in env.parse(source).find_all(nodes.Macro)}


def empty_macros(env: jinja2.Environment, source: str) -> set[str]:
    """The top-level macros of a template source whose body prints nothing."""
    return {m.name for m in env.parse(source).find_all(nodes.Macro) if not m.body}


def contract_macros(
    env: jinja2.Environment, path: str, sources: dict[str, str]
) -> dict[str, tuple[tuple[str, ...], int]]:
    """A contract's macros; a contract that only extends another (a Jinja extends tag) keeps
    that one's."""
    parent = next(env.parse(sources[path]).find_all(nodes.Extends), None)
    if parent is not None and isinstance(parent.template, nodes.Const):
        return contract_macros(env, parent.template.value, sources)
    return macros(env, sources[path])


def contract_violations(
    env: jinja2.Environment, sources: dict[str, str], tree: dict[str, str] | None = None
) -> list[str]:
    """What breaks a contract in `sources` (template path -> text), one line per problem.

    Families are the folders holding a _contract.py.j2; their partials are the other .j2 files
    there whose names do not start with `_`. A contract that extends another is looked up in
    `tree` (all templates; default `sources`).
    """
    problems = []
    for contract_path in sorted(p for p in sources if p.endswith("/" + CONTRACT)):
        folder = contract_path.rsplit("/", 1)[0]
        contract = contract_macros(env, contract_path, tree or sources)
        if not contract:
            problems.append(f"{contract_path}: defines no macro")
        partials = sorted(
            p
            for p in sources
            if p.rsplit("/", 1)[0] == folder
            and p.endswith(".j2")
            and not p.rsplit("/", 1)[1].startswith("_")
        )
        if not partials:
            problems.append(f"{folder}: a contract without partials")
        for path in partials:
            defined = macros(env, sources[path])
            empty = empty_macros(env, sources[path])
            for name, sig in contract.items():
                if name not in defined:
                    continue  # the contract's empty macro, which the loader puts first
                if defined[name] != sig:
                    problems.append(
                        f"{path}: macro {name}{defined[name][0]} (defaults {defined[name][1]}),"
                        f" the contract has {name}{sig[0]} (defaults {sig[1]})"
                    )
                elif name in empty:
                    problems.append(f"{path}: macro {name} is empty, the contract's own: drop it")
            for name in sorted(set(defined) - set(contract)):
                if not name.startswith("_"):
                    problems.append(f"{path}: public macro {name} is not in {contract_path}")
    return problems


def _family_of(template: nodes.Expr, arch: str) -> str | None:
    """The family folder an import's template expression names: a literal path under
    `<arch>/<family>/` (possibly concatenated), or a `<family>_partial` context variable."""
    if isinstance(template, nodes.Name) and template.name.endswith("_partial"):
        return f"{arch}/{template.name[: -len('_partial')]}"
    for const in template.find_all(nodes.Const):
        if isinstance(const.value, str) and const.value.startswith(f"{arch}/"):
            parts = const.value.split("/")
            if len(parts) >= 3:
                return "/".join(parts[:2])
    if isinstance(template, nodes.Const) and isinstance(template.value, str):
        parts = template.value.split("/")
        return "/".join(parts[:2]) if len(parts) >= 3 else None
    return None


def skeleton_violations(
    env: jinja2.Environment, sources: dict[str, str], skeleton: str
) -> list[str]:
    """Calls the skeleton makes on a family module that its contract does not define."""
    arch = skeleton.split("/", 1)[0]
    tree = env.parse(sources[skeleton])
    families = {}
    for imp in tree.find_all(nodes.Import):
        family = _family_of(imp.template, arch)
        if family and f"{family}/{CONTRACT}" in sources:
            families[imp.target] = family
    problems = []
    for call in tree.find_all(nodes.Call):
        node = call.node
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
            family = families.get(node.node.name)
            if family is None:
                continue
            contract = contract_macros(env, f"{family}/{CONTRACT}", sources)
            if node.attr not in contract:
                problems.append(f"{skeleton}: calls {node.node.name}.{node.attr}, not in {family}")
    return problems


def _env() -> jinja2.Environment:
    return jinja2.Environment(trim_blocks=True, lstrip_blocks=True)


def _tree_sources() -> dict[str, str]:
    return {p.relative_to(TEMPLATES).as_posix(): p.read_text() for p in TEMPLATES.rglob("*.j2")}


CONTRACTS = sorted(p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.glob(f"*/*/{CONTRACT}"))


def test_sm90_families_have_contracts() -> None:
    have = {c.rsplit("/", 1)[0] for c in CONTRACTS}
    assert {
        "sm90/cluster",
        "sm90/consumer",
        "sm90/scheduler",
        "sm90/reduce",
        "sm90/epilogue",
    } <= have


def test_both_arches_cut_the_same_families() -> None:
    """scheduler, reduce, cluster and epilogue are families on both arches; the MMA side is
    consumer/ (sm_90a) and mainloop/ + mma/ (sm_100a), README.md's "Template families"."""
    have = {c.rsplit("/", 1)[0] for c in CONTRACTS}
    for family in ("scheduler", "reduce", "cluster", "epilogue"):
        assert {f"sm90/{family}", f"sm100/{family}"} <= have, family
    assert {"sm90/consumer", "sm100/mainloop", "sm100/mma"} <= have


def test_sm100_reduce_keeps_the_scheduler_contract() -> None:
    """An sm_100a reduce partial is imported in the scheduler's place: the same hooks (its
    contract extends the scheduler's)."""
    env, sources = _env(), _tree_sources()
    reduce = contract_macros(env, "sm100/reduce/" + CONTRACT, sources)
    assert reduce and reduce == macros(env, sources["sm100/scheduler/" + CONTRACT])


@pytest.mark.parametrize("contract", CONTRACTS)
def test_family_keeps_its_contract(contract: str) -> None:
    folder = contract.rsplit("/", 1)[0]
    tree = _tree_sources()
    sources = {p: s for p, s in tree.items() if p.rsplit("/", 1)[0] == folder}
    problems = contract_violations(_env(), sources, tree)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("contract", CONTRACTS)
def test_the_loader_gives_every_partial_its_contracts_macros(contract: str) -> None:
    """What a skeleton imports is the partial with its contract's empty macros first (every
    contract macro an empty one-liner), its own definitions last, on the partial's line numbers."""
    env, tree = _env(), _tree_sources()
    folder = contract.rsplit("/", 1)[0]
    hooks = contract_macros(env, contract, tree)
    partials = [
        p for p in tree if p.rsplit("/", 1)[0] == folder and not p.rsplit("/", 1)[1].startswith("_")
    ]
    for path in partials:
        loaded = render.environment().loader.get_source(env, path)[0]
        assert macros(env, loaded).keys() >= hooks.keys(), path
        assert loaded.count("\n") == tree[path].count("\n"), path


@pytest.mark.parametrize(
    "skeleton",
    sorted(
        p.relative_to(TEMPLATES).as_posix()
        for p in TEMPLATES.glob("*/gemm.py.j2")
        if any(c.startswith(p.parent.name + "/") for c in CONTRACTS)
    ),
)
def test_skeleton_calls_only_contract_macros(skeleton: str) -> None:
    problems = skeleton_violations(_env(), _tree_sources(), skeleton)
    assert not problems, "\n".join(problems)


# A small family in memory: the checks must report what breaks the contract.
FAKE_CONTRACT = """{# one hook #}
{% macro setup(cluster) %}{% endmacro %}
{% macro helpers() %}{% endmacro %}
"""
FAKE_GOOD = """{% macro setup(cluster) %}x = 1
{% endmacro %}
{% macro _private() %}{% endmacro %}
"""
FAKE_EMPTY = """{% macro setup(cluster) %}{% endmacro %}
"""
FAKE_OTHER_ARGS = """{% macro setup() %}{% endmacro %}
{% macro helpers(extra=1) %}{% endmacro %}
"""
FAKE_EXTRA = """{% macro setup(cluster) %}x = 1
{% endmacro %}
{% macro teardown() %}y = 2
{% endmacro %}
"""
FAKE_SKELETON = """{% import "arch/fam/" ~ "good.py.j2" as fam %}
{% import fam_partial as other %}
{{ fam.setup(x) }}{{ fam.helpers() }}{{ fam.teardown() }}{{ other.launch() }}
"""


def _fake(**partials: str) -> dict[str, str]:
    return {
        "arch/fam/_contract.py.j2": FAKE_CONTRACT,
        **{f"arch/fam/{k}.py.j2": v for k, v in partials.items()},
    }


def test_checker_accepts_a_partial_that_keeps_the_contract() -> None:
    assert contract_violations(_env(), _fake(good=FAKE_GOOD)) == []


def test_checker_reports_an_empty_contract_macro() -> None:
    problems = contract_violations(_env(), _fake(good=FAKE_GOOD, empty=FAKE_EMPTY))
    assert problems == ["arch/fam/empty.py.j2: macro setup is empty, the contract's own: drop it"]


def test_checker_reports_different_arguments() -> None:
    problems = contract_violations(_env(), _fake(other=FAKE_OTHER_ARGS))
    assert len(problems) == 2 and all("arch/fam/other.py.j2: macro" in p for p in problems)
    assert any("setup()" in p and "setup('cluster',)" in p for p in problems)
    assert any("helpers('extra',) (defaults 1)" in p for p in problems)


def test_checker_reports_an_extra_public_macro() -> None:
    problems = contract_violations(_env(), _fake(extra=FAKE_EXTRA))
    assert problems == [
        "arch/fam/extra.py.j2: public macro teardown is not in arch/fam/_contract.py.j2"
    ]


def test_checker_reports_a_skeleton_call_outside_the_contract() -> None:
    sources = {**_fake(good=FAKE_GOOD), "arch/gemm.py.j2": FAKE_SKELETON}
    problems = skeleton_violations(_env(), sources, "arch/gemm.py.j2")
    assert problems == [
        "arch/gemm.py.j2: calls fam.teardown, not in arch/fam",
        "arch/gemm.py.j2: calls other.launch, not in arch/fam",
    ]
