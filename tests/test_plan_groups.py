"""Each architecture's plan as a model: every optional value is a frozen group of required fields,
present exactly when the variant has that feature (a multicast cluster, ping-pong consumers, a
TMA-store epilogue, stream-K, ...), never a None scattered among the plan's own fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from conftest import SPECS
from test_plan_fields import group_types

from codegen import loader
from codegen.arch import shared
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90 import values as values_sm90
from codegen.arch.sm100 import rules as rules_sm100
from codegen.arch.sm100 import values as values_sm100
from codegen.spec import PersistentScheduler, Spec, SplitKScheduler, TmaStoreEpilogue

Features = dict[str, Callable[[Spec], bool]]

# group -> whether a spec has its feature: both architectures' ...
SHARED: Features = {
    "bias": lambda s: s.epilogue.bias != "none",
    "epifn": lambda s: s.epilogue.fn is not None,
    "row_sumsq": lambda s: s.epilogue.row_sumsq,
    "block_quant": lambda s: s.epilogue.block_quant is not None,
    # a persistent grid sized by the GPU's SMs
    "workers": lambda s: (
        isinstance(s.scheduler, PersistentScheduler)
        or shared.is_split_k_cluster(s)
        or shared.is_stream_k(s)
    ),
    "separate": shared.is_split_k_separate,
}
# ... and each one's own
SM90: Features = {
    "mcast": lambda s: s.cluster.size > 1,
    "pingpong": rules_sm90.is_pingpong,
    "epi_tma": lambda s: isinstance(s.epilogue, TmaStoreEpilogue),
    "direct": lambda s: (
        not isinstance(s.epilogue, TmaStoreEpilogue) and not shared.is_split_k_separate(s)
    ),
    "partial": shared.is_split_k_separate,
    # the persistent order: persistent, and the data-parallel + stream-K hybrid's tiles
    "order": lambda s: (
        isinstance(s.scheduler, PersistentScheduler) or shared.streamk_data_parallel(s)
    ),
    "splitk": shared.is_split_k_cluster,
    "sk": shared.is_stream_k,
}
SM100: Features = {
    "bias_view": lambda s: s.epilogue.bias != "none",
    "epi_tma": rules_sm100.is_tma_store,
    "roles": rules_sm100.is_persistent,
    "order": lambda s: (
        isinstance(s.scheduler, PersistentScheduler | SplitKScheduler)
        or shared.streamk_data_parallel(s)
    ),
    "clc": rules_sm100.is_dynamic,
    "splitk": shared.is_split_k_cluster,
    "sk": shared.is_stream_k,
    "pair": lambda s: rules_sm100.cluster_kind(s) == "pair",
    "mcast": lambda s: rules_sm100.cluster_kind(s) == "multicast",
}
# (arch, group) that no shipped spec of the arch can have: a feature the arch refuses so far
NOT_SHIPPED: set[tuple[str, str]] = set()
ARCHES = {
    "sm90": (values_sm90.Sm90Values, values_sm90.values, SHARED | SM90),
    "sm100": (values_sm100.Sm100Values, values_sm100.values, SHARED | SM100),
}


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[Spec]]:
    # the arch planners' specs: a light kernel has its own planner (codegen/light.py)
    return {
        arch: [
            s.spec
            for s in loader.load(sorted((SPECS / arch).glob("*.toml")))
            if s.spec.mainloop == "tma"
        ]
        for arch in ARCHES
    }


@pytest.mark.parametrize("arch", ARCHES)
def test_every_optional_value_is_a_group(arch: str) -> None:
    values_type, _, features = ARCHES[arch]
    optional = {f.name for f in dataclasses.fields(values_type) if f.default is None}
    assert optional == set(features) <= set(group_types(values_type))
    # every other field is required: no value is None by default
    assert all(
        f.default is dataclasses.MISSING
        for f in dataclasses.fields(values_type)
        if f.name not in optional
    )


@pytest.mark.parametrize("arch", ARCHES)
def test_a_group_is_present_exactly_with_its_feature(
    arch: str, shipped: dict[str, list[Spec]]
) -> None:
    _, build, features = ARCHES[arch]
    seen = dict.fromkeys(features, 0)
    for spec in shipped[arch]:
        values = build(spec)
        for group, has in features.items():
            assert (getattr(values, group) is not None) == has(spec), (spec.name, group)
            seen[group] += has(spec)
    # the shipped specs have every feature the arch implements
    assert all(n for group, n in seen.items() if (arch, group) not in NOT_SHIPPED), seen
