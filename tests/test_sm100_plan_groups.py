"""The sm_100a plan as a model: each optional value is a frozen group of required fields, present
exactly when the variant has that feature (a bias, a TMA-store epilogue, persistent warp roles,
a static tile order, cluster launch control, split-K over a cluster, stream-K, a CTA pair, a
multicast cluster), never a None scattered among the plan's own fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from conftest import SPECS
from test_plan_fields import group_types

from codegen import loader
from codegen.arch import shared
from codegen.arch.sm100 import rules as rules_sm100
from codegen.arch.sm100 import values as values_sm100
from codegen.spec import PersistentScheduler, Spec, SplitKScheduler

# group -> whether a spec has its feature
FEATURES: dict[str, Callable[[Spec], bool]] = {
    "bias_view": lambda s: s.epilogue.bias != "none",
    "epi_tma": rules_sm100.is_tma_store,
    "roles": rules_sm100.is_persistent,
    "order": lambda s: isinstance(s.scheduler, PersistentScheduler | SplitKScheduler),
    "clc": rules_sm100.is_dynamic,
    "splitk": shared.is_split_k_cluster,
    "sk": shared.is_stream_k,
    "pair": lambda s: rules_sm100.cluster_kind(s) == "pair",
    "mcast": lambda s: rules_sm100.cluster_kind(s) == "multicast",
}


@pytest.fixture(scope="module")
def shipped() -> list[Spec]:
    return [s.spec for s in loader.load(sorted((SPECS / "sm100").glob("*.toml")))]


def test_every_optional_own_value_is_a_group() -> None:
    inherited = {f.name for f in dataclasses.fields(shared.SeparateReduceValues)}
    own = [f for f in dataclasses.fields(values_sm100.Sm100Values) if f.name not in inherited]
    optional = {f.name for f in own if f.default is None}
    assert optional == set(FEATURES) <= set(group_types(values_sm100.Sm100Values))


def test_a_group_is_present_exactly_with_its_feature(shipped: list[Spec]) -> None:
    seen = dict.fromkeys(FEATURES, 0)
    for spec in shipped:
        values = values_sm100.values(spec)
        for group, has in FEATURES.items():
            assert (getattr(values, group) is not None) == has(spec), (spec.name, group)
            seen[group] += has(spec)
    assert all(seen.values()), seen  # the shipped specs have every feature
