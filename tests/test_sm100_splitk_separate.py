"""sm_100a split-K with a separate reduce kernel (specs/sm100/splitk_separate.toml): the rules
(what is legal, what each rejection names), the plan's expected PTX counts, the generated file's
two kernels (the reduce kernel is shared with sm_90a) and, marked ``build``, a cross-compile of
the shipped variant checking the hand-over stores and the reduce kernel's loads.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SPECS, kernel_file

from codegen import build, loader, rules
from codegen.arch import shared
from codegen.arch.sm100 import counts as counts_sm100
from codegen.arch.sm100 import rules as rules_sm100
from codegen.spec import Spec

SHIPPED = "sm100_bf16_128x64x64_s9_sw128_ws_direct_biascol_splitk4_sep"
SM100 = {"arch": "sm_100a", "dtype": "bf16", "swizzle": "128B", "stages": 2}
SEPARATE = {"kind": "split_k", "splits": 4, "reduce": "separate"}


def make(**knobs: object) -> Spec:
    sched = SEPARATE | knobs.pop("sched", {})
    base = SM100 | {"tile": [128, 64, 64], "warp_specialized": True, "scheduler": sched}
    return Spec.model_validate(base | knobs)


def fields(**knobs: object) -> list[str]:
    return [v.field for v in rules.check(make(**knobs))]


def messages(**knobs: object) -> str:
    return " | ".join(v.message for v in rules.check(make(**knobs)))


@pytest.fixture(scope="module")
def shipped() -> Spec:
    loaded = loader.load([SPECS / "sm100" / "splitk_separate.toml"])
    assert [s.name for s in loaded] == [SHIPPED]
    return rules.resolve(loaded[0].spec)


# ---- rules --------------------------------------------------------------------------------------


def test_the_shipped_variant_is_legal(shipped: Spec) -> None:
    assert rules.check(shipped) == []
    assert shared.is_split_k_separate(shipped) and not shared.is_split_k_cluster(shipped)
    assert rules_sm100.cluster_kind(shipped) == "single"


def test_separate_is_legal_with_fusions_and_max_tiles() -> None:
    assert fields(epilogue={"style": "direct", "beta": 1.0, "activation": "relu"}) == []
    assert fields(sched={"max_tiles": 64, "splits": 3}) == []


@pytest.mark.parametrize(
    ("knobs", "field", "words"),
    [
        ({"cluster": [2, 1]}, "cluster", "cluster [1, 1]"),
        ({"epilogue": "tma"}, "epilogue", "legal: direct"),
        ({"tile": [64, 64, 64]}, "tile", "legal: tile M=128"),
        ({"swap_ab": True}, "swap_ab", "legal: false"),
        ({"sched": {"splits": 17}}, "scheduler", "legal: 2 to 16"),
        ({"sched": {"max_clusters": 8}}, "scheduler", "remove max_clusters"),
        ({"sched": {"max_tiles": 1 << 20}}, "scheduler", "2^31 words"),
    ],
)
def test_separate_rejections(knobs: dict, field: str, words: str) -> None:
    assert field in fields(**knobs)
    assert words in messages(**knobs)


def test_the_cluster_reduce_takes_no_max_tiles() -> None:
    knobs = {"sched": {"reduce": "cluster", "max_tiles": 64}}
    assert "remove max_tiles" in messages(**knobs)
    assert "remove max_tiles" not in messages(sched={"reduce": "cluster"})


# ---- plan ---------------------------------------------------------------------------------------


def test_expected_counts(shipped: Spec) -> None:
    c = counts_sm100.expected_counts(shipped)
    # GEMM: 64 f32 per thread row in 16-byte vectors; reduce: one C vector
    assert c["st.global"] == 64 // 4 + 1
    # reduce: one 16-byte vector per split, one bias vector
    assert c["ld.global"] == 4 + 1
    assert c["barrier.cluster"] == 0 and "mapa" not in c  # no cluster, no DSMEM reduction
    assert c["tcgen05.ld"] == 1 and c["ex2"] == 0 and c["max.f32"] == 0
    relu = rules.resolve(make(epilogue={"style": "direct", "activation": "relu", "beta": 1.0}))
    c = counts_sm100.expected_counts(relu)
    assert c["ld.global"] == 4 + 1 and c["max.f32"] == 4  # C for beta; one max per vector value


def test_the_generated_file() -> None:
    text = (kernel_file(SHIPPED)).read_text()
    assert "def reduce_kernel(" in text and "reduce_kernel(workspace, c, bias).launch(" in text
    assert "grid=(clusters * SPLITS, 1, 1)" in text
    assert "MAX_TILES = 1024" in text and "SPLITS = 4" in text
    assert "k_begin = split * k_tiles // SPLITS" in text
    assert "if empty_share:" in text  # an empty K share stores zeros, not stale TMEM


# ---- cross-compile ------------------------------------------------------------------------------


@pytest.mark.build
def test_the_shipped_variant_compiles_with_its_counts(tmp_path: Path) -> None:
    (r,) = build.build([kernel_file(SHIPPED)], tmp_path / "build", jobs=1)
    assert r.passed, r.error or r.mismatches
    assert r.spill_bytes == 0
    c = r.counts
    assert (c["st.global"], c["ld.global"]) == (64 // 4 + 1, 4 + 1)
    assert c["barrier.cluster"] == 0 and c["mapa"] == 0 and c["cp.async.bulk.tensor"] == 2
