"""Every `plan.NAME` a template reads is a field of its architecture's plan values type.

Each architecture's templates (``templates/<short>/``, and the shared ones they import or include
by name, ``templates/common/``) are parsed with jinja2's parser; every attribute read on the name
`plan` must be a field of that architecture's frozen values dataclass (or an attribute of Plan
itself: template, partials). A value a template reads but no planner declares
fails here, not when a variant that reaches that line is rendered. A field that is a group of
values (a frozen dataclass, `plan.GROUP.NAME`) is checked the same way, one level down.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import jinja2
import pytest
from jinja2 import nodes

from codegen import registry
from codegen.plan_common import Plan, Values

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
PLAN_OWN = frozenset(f.name for f in dataclasses.fields(Plan))


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES))


def plan_reads(source: str, env: jinja2.Environment) -> set[str]:
    """Names read as `plan.NAME` (or `plan["NAME"]`) in one template's source."""
    tree = env.parse(source)
    out = {n.attr for n in tree.find_all(nodes.Getattr) if _is_plan(n.node)}
    for n in tree.find_all(nodes.Getitem):
        if _is_plan(n.node) and isinstance(n.arg, nodes.Const) and isinstance(n.arg.value, str):
            out.add(n.arg.value)
    return out


def plan_group_reads(source: str, env: jinja2.Environment) -> set[tuple[str, str]]:
    """(GROUP, NAME) for each `plan.GROUP.NAME` read in one template's source."""
    tree = env.parse(source)
    return {
        (n.node.attr, n.attr)
        for n in tree.find_all(nodes.Getattr)
        if isinstance(n.node, nodes.Getattr) and _is_plan(n.node.node)
    }


def group_types(values_type: type) -> dict[str, type]:
    """field -> its dataclass type, for each field of `values_type` that is a group of values
    (typed `SomeGroup` or `SomeGroup | None`)."""
    out = {}
    for name, hint in typing.get_type_hints(values_type).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        groups = [a for a in args if dataclasses.is_dataclass(a)]
        if groups:
            out[name] = groups[0]
    return out


def _is_plan(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "plan"


def named_templates(source: str, env: jinja2.Environment) -> set[str]:
    """Templates this one imports, includes or extends by a constant name."""
    tree = env.parse(source)
    out = set()
    for kind in (nodes.Import, nodes.FromImport, nodes.Include, nodes.Extends):
        for n in tree.find_all(kind):
            if isinstance(n.template, nodes.Const) and isinstance(n.template.value, str):
                out.add(n.template.value)
    return out


def arch_templates(root: str, env: jinja2.Environment) -> set[str]:
    """The architecture's own templates and every template they name, transitively."""
    todo = [p.relative_to(TEMPLATES).as_posix() for p in (TEMPLATES / root).rglob("*.j2")]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += named_templates((TEMPLATES / name).read_text(encoding="utf-8"), env)
    return seen


def unknown_reads(root: str, values_type: type) -> dict[str, set[str]]:
    """template -> the `plan.NAME` reads that are not fields of `values_type` nor Plan's own."""
    env = _env()
    known = {f.name for f in dataclasses.fields(values_type)} | PLAN_OWN
    groups = group_types(values_type)
    out = {}
    for name in sorted(arch_templates(root, env)):
        source = (TEMPLATES / name).read_text(encoding="utf-8")
        bad = plan_reads(source, env) - known
        for group, attr in plan_group_reads(source, env):
            if group in groups and attr not in {f.name for f in dataclasses.fields(groups[group])}:
                bad.add(f"{group}.{attr}")
        if bad:
            out[name] = bad
    return out


@pytest.mark.parametrize("arch", sorted(registry.ARCHES))
def test_every_plan_read_is_a_field(arch: str) -> None:
    a = registry.get(arch)
    assert dataclasses.is_dataclass(a.values_type) and issubclass(a.values_type, Values)
    templates = arch_templates(a.template_root, _env())
    assert a.template in templates and any(t.startswith("common/") for t in templates)
    assert unknown_reads(a.template_root, a.values_type) == {}


def test_every_light_plan_read_is_a_field() -> None:
    """The light kernel's templates (and the common ones they include) read only LightValues."""
    from codegen.light import LightValues

    assert unknown_reads("light", LightValues) == {}


@pytest.mark.parametrize("arch", sorted(registry.ARCHES))
def test_the_values_are_frozen_and_built_by_keyword(arch: str) -> None:
    values_type = registry.get(arch).values_type
    params = values_type.__dataclass_params__
    assert params.frozen
    with pytest.raises(TypeError):
        values_type(1)  # keyword only
    assert all(f.kw_only for f in dataclasses.fields(values_type))
    for group in group_types(values_type).values():
        assert group.__dataclass_params__.frozen, group
        assert all(
            f.kw_only and f.default is dataclasses.MISSING for f in dataclasses.fields(group)
        )


def defined_tests(source: str, env: jinja2.Environment) -> set[str]:
    """`plan.NAME` (or `plan.GROUP.NAME`) tested with `is defined` in one template's source."""
    tree = env.parse(source)
    out = set()
    for n in tree.find_all(nodes.Test):
        target = n.node
        names = []
        while isinstance(target, nodes.Getattr):
            names.append(target.attr)
            target = target.node
        if n.name == "defined" and _is_plan(target):
            out.add(".".join(reversed(names)))
    return out


def test_no_template_tests_a_plan_value_with_is_defined() -> None:
    """A group a variant lacks is None, not undefined: `plan.GROUP is defined` is always true, so
    templates test `plan.GROUP` itself."""
    env = _env()
    found = {
        name: tests
        for name in sorted(arch_templates("sm90", env) | arch_templates("sm100", env))
        if (tests := defined_tests((TEMPLATES / name).read_text(encoding="utf-8"), env))
    }
    assert found == {}
    assert defined_tests("{% if plan.order is defined and x is defined %}{% endif %}", env) == {
        "order"
    }


def test_a_read_of_no_field_is_caught(tmp_path: Path) -> None:
    source = "{% import 'common/x.j2' as x %}{{ plan.ring }}{{ plan.no_such_value }}"
    env = _env()
    assert plan_reads(source, env) == {"ring", "no_such_value"}
    assert named_templates(source, env) == {"common/x.j2"}
    known = {f.name for f in dataclasses.fields(registry.get("sm_90a").values_type)}
    assert plan_reads(source, env) - known == {"no_such_value"}


def test_a_read_of_no_field_of_a_group_is_caught() -> None:
    source = "{{ plan.bias_view.note }}{{ plan.bias_view.no_such_value }}{{ plan.swap_ab }}"
    reads = plan_group_reads(source, _env())
    assert reads == {("bias_view", "note"), ("bias_view", "no_such_value")}
    group = group_types(registry.get("sm_100a").values_type)["bias_view"]
    assert {a for _, a in reads} - {f.name for f in dataclasses.fields(group)} == {"no_such_value"}
