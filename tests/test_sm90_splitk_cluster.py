"""Split-K over a cluster (sm_90a scheduler "split_k"): rules, plan numbers, generated files, PTX.

The numbers are the GPU-verified prototype's (its notes are not in the repository): with
SPLITS=2 the 64x16, 64x32 and 64x64 decode tiles get 22, 18 and 13 stages beside the f32 staging
buffer, 230400 B of SMEM each, and their PTX holds the start-up cluster barrier only (2
barrier.cluster), 3 mapa and 2 / 4 / 8 ld.shared::cluster.v4 (the DSMEM reduction), 3
acquire.cluster waits and 2 release.cluster arrives. The build tests cross-compile on the CPU;
deselect with -m "not build".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import kernel_file, kernel_glob
from pydantic import ValidationError

from codegen import build as b
from codegen import loader, rules
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.counts import expected_counts as expected_counts_sm90
from codegen.plan import plan
from codegen.spec import Spec, SplitKScheduler

KIB = 1024

# the shipped split-K decode variants: name -> (stages, ld.shared::cluster.v4 per CTA)
SHIPPED = {
    "sm90_bf16_64x16x64_s22_sw128_ws_wg1_swap_direct_splitk2": (22, 2),
    "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk2": (18, 4),
    "sm90_bf16_64x64x64_s13_sw128_ws_wg1_swap_direct_splitk2": (13, 8),
    "sm90_bf16_64x128x64_s8_sw128_ws_wg1_swap_direct_splitk2": (8, 16),
    "sm90_bf16_64x256x64_s4_sw128_ws_wg1_swap_direct_splitk2": (4, 32),
}


def split(tile: tuple[int, int, int] = (64, 16, 64), **knobs: object) -> Spec:
    """A resolved sm_90a split-K decode spec (swap AB, direct epilogue, 1 consumer warpgroup)."""
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "swizzle": "128B",
        "tile": list(tile),
        "consumer_warpgroups": 1,
        "swap_ab": True,
        "epilogue": "direct",
        "scheduler": {"kind": "split_k"},
    }
    return rules.resolve(Spec.model_validate(base | knobs))


def violations(spec: Spec) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(spec)]


# ---- spec ---------------------------------------------------------------------------------------


def test_split_k_spec_defaults_and_short_form() -> None:
    s = split(scheduler="split_k")
    assert s.scheduler == SplitKScheduler(splits=2, max_clusters=None)
    assert s.canonical_name() == "sm90_bf16_64x16x64_s22_sw128_ws_wg1_swap_direct_splitk2"
    capped = split(scheduler={"kind": "split_k", "splits": 4, "max_clusters": 32})
    assert capped.canonical_name().endswith("_direct_splitk4_mc32")


@pytest.mark.parametrize("bad", [{"splits": 1}, {"splits": 0}, {"max_clusters": 0}])
def test_split_k_spec_rejects_nonsense(bad: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        Spec.model_validate({"tile": [64, 16, 64], "scheduler": {"kind": "split_k", **bad}})


# ---- rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize("splits", [2, 4, 8])
def test_legal_splits(splits: int) -> None:
    assert violations(split(scheduler={"kind": "split_k", "splits": splits})) == []


@pytest.mark.parametrize("splits", [3, 6, 16])
def test_bad_splits(splits: int) -> None:
    ((field, message),) = violations(split(scheduler={"kind": "split_k", "splits": splits}))
    assert field == "scheduler"
    assert message == (
        f"split_k splits={splits}: the K range is split over the CTAs of one cluster, so splits "
        "must be a power of two in [2, 8]; legal: 2, 4, 8"
    )


@pytest.mark.parametrize("cluster", [[2, 1], [1, 2]])
def test_split_k_takes_the_cluster(cluster: list[int]) -> None:
    ((field, message),) = violations(split(cluster=cluster))
    assert field == "cluster"
    assert "split-K uses the cluster itself" in message and message.endswith("legal: [1, 1]")


def test_split_k_needs_the_direct_epilogue() -> None:
    ((field, message),) = violations(split((64, 64, 64), swap_ab=False, epilogue="tma"))
    assert field == "epilogue"
    assert message.startswith("epilogue 'tma' with scheduler split_k is not implemented")
    assert message.endswith("legal: direct")


def test_split_k_is_implemented_on_sm100() -> None:
    # sm_100a split-K (TMEM accumulators, the same DSMEM protocol): tests/test_sm100_schedulers.py
    s = rules.resolve(Spec.model_validate({"tile": [128, 128, 64], "scheduler": "split_k"}))
    assert violations(s) == []


# ---- SMEM: the f32 staging buffer is in the budget -----------------------------------------------


@pytest.mark.parametrize(
    ("tile", "stages", "persistent_stages"),
    [((64, 16, 64), 22, 22), ((64, 32, 64), 18, 18), ((64, 64, 64), 13, 14)],
)
def test_staging_is_in_the_smem_budget(
    tile: tuple[int, int, int], stages: int, persistent_stages: int
) -> None:
    s = split(tile)
    staging = tile[0] * tile[1] * 4
    assert rules_sm90.splitk_staging_bytes(s) == staging
    assert rules_sm90.epilogue_smem_bytes(s) == staging  # what rules.smem_bytes adds after B
    # staged + consumed beside the ring's full/empty; the block still rounds up to 1024
    assert rules_sm90.barrier_bytes(s, stages) == (2 * stages + 2) * 8
    # 1024 (barriers) + stages x (A + B) + staging, as the prototype's SharedStorage measured
    assert s.stages == stages
    assert rules.smem_bytes(s, stages) == 1024 + stages * rules.stage_bytes(s) + staging == 230400
    # the same tile without split-K has no staging, so "auto" may pick a deeper ring
    persistent = split(tile, scheduler="persistent")
    assert persistent.stages == persistent_stages
    assert rules.smem_bytes(persistent, stages) == rules.smem_bytes(s, stages) - staging


def test_staging_can_break_the_smem_budget() -> None:
    # 14 stages of 64x64 fit alone (230400 B) but not beside 16 KiB of staging
    assert violations(split((64, 64, 64), scheduler="persistent", stages=14)) == []
    ((field, message),) = violations(split((64, 64, 64), stages=14))
    assert field == "stages"
    assert message.startswith("stages=14 needs 241 KiB of shared memory")
    assert message.endswith("at most 13 stages fit in 227 KiB")


# ---- plan: every number the template prints ------------------------------------------------------


@pytest.mark.parametrize(
    ("splits", "wgs", "staged", "consumed", "max_clusters"),
    [(2, 1, 4, 4, 66), (4, 1, 12, 4, 33), (8, 1, 28, 4, 16), (2, 2, 8, 8, 66)],
)
def test_handshake_arrive_counts(
    splits: int, wgs: int, staged: int, consumed: int, max_clusters: int
) -> None:
    tile = (64 * wgs, 64, 64)
    s = split(tile, consumer_warpgroups=wgs, scheduler={"kind": "split_k", "splits": splits})
    # staged: one elected lane per consumer warp (4 per warpgroup) of each of the splits - 1 peers
    assert rules_sm90.staged_arrives(s) == staged == 4 * wgs * (splits - 1)
    # consumed: one elected lane per consumer warp of rank 0
    assert rules_sm90.consumed_arrives(s) == consumed == 4 * wgs
    assert rules_sm90.splitk_max_clusters(s) == max_clusters == 132 // splits
    v = plan(s).values
    assert (v.splits, v.splitk.staged_arrives, v.splitk.consumed_arrives) == (
        splits,
        staged,
        consumed,
    )
    # one wave of clusters on the GPU the kernel runs on (max_clusters of them on an H200)
    assert v.workers.expr == f"sm_count // {splits}"
    assert v.splitk.staging_elems == tile[0] * tile[1]
    assert v.cluster.launch and v.mcast is None  # a hardware cluster without multicast


def test_max_clusters_cap() -> None:
    s = split(scheduler={"kind": "split_k", "splits": 2, "max_clusters": 64})
    assert plan(s).values.workers.expr == "min(sm_count // 2, 64)"


def test_pipeline_table_has_the_handshake() -> None:
    lines = plan(split()).values.docs.pipeline_table
    # a ring: the line that names it and the full (and empty) arrives under it
    staged = lines.index(next(line for line in lines if line.startswith("staged")))
    consumed = lines.index(next(line for line in lines if line.startswith("consumed")))
    assert "1 buffer x 4096 bytes" in lines[staged]
    assert lines[staged + 1].strip() == "full arrives: 4 (1 peer CTA x 4 consumer warps)"
    assert lines[consumed + 1].strip() == "full arrives: 4 (rank 0's 4 consumer warps)"


@pytest.mark.parametrize(
    ("splits", "tile", "mapa", "loads"),
    [
        (2, (64, 16, 64), 3, 2),
        (2, (64, 64, 64), 3, 8),
        (4, (64, 16, 64), 7, 6),
        (4, (64, 64, 64), 7, 24),
    ],
)
def test_expected_dsmem_counts(
    splits: int, tile: tuple[int, int, int], mapa: int, loads: int
) -> None:
    """The prototype's compile_check table: (splits - 1) x 2 + 1 mapa; (splits - 1) x TM x TN / 128
    f32 per thread, read as 16-byte vectors."""
    got = expected_counts_sm90(split(tile, scheduler={"kind": "split_k", "splits": splits}))
    assert got["barrier.cluster"] == 2
    assert got["mapa"] == mapa
    assert got["ld.shared::cluster"] == loads
    assert got["mbarrier acquire.cluster"] == 3
    assert got["mbarrier release.cluster"] == splits
    assert "ld.shared::cluster" not in expected_counts_sm90(split(scheduler="persistent"))


# ---- generated files ----------------------------------------------------------------------------


def test_split_k_variants_are_shipped() -> None:
    specs = {s.name: s for s in loader.load([Path(__file__).parent.parent / "specs"])}
    for name, (stages, _) in SHIPPED.items():
        assert name in specs, name
        s = specs[name].spec
        assert isinstance(s.scheduler, SplitKScheduler) and s.scheduler.splits == 2
        assert s.stages == stages and s.swap_ab and s.epilogue.style == "direct"
        assert (kernel_file(name)).is_file(), f"{name}.py: run `codegen render specs/`"


def test_only_split_k_files_carry_the_reduction() -> None:
    """Only what a variant needs: the split-K hooks print nothing into the other sm90 files."""
    for path in kernel_glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "\n# template: sm90/" not in text:
            continue
        sched = b.read_spec(path).scheduler
        is_split = isinstance(sched, SplitKScheduler) and sched.reduce == "cluster"
        for needle in ("wait_cluster_acquire", "STAGED_ARRIVES", "k_begin", "rank == 0"):
            if needle == "k_begin" and sched.kind in ("stream_k", "split_k") and not is_split:
                continue  # stream-K and the separate split-K reduce have k ranges of their own
            assert (needle in text) is is_split, (path.name, needle)
        if is_split:
            assert "cluster=(SPLITS, 1, 1)" in text and "grid=(clusters * SPLITS, 1, 1)" in text


@pytest.mark.build
def test_split_k_build_counts_include_the_dsmem_reduction(tmp_path: Path) -> None:
    files = [kernel_file(name) for name in sorted(SHIPPED)]
    results = {r.name: r for r in b.build(files, tmp_path / "build", jobs=2)}
    for name, (_, loads) in SHIPPED.items():
        r = results[name]
        assert r.passed, r.error or r.mismatches
        assert r.smem_bytes == 230400
        assert r.spill_bytes == 0
        c = r.counts
        assert c["barrier.cluster"] == 2  # start-up only: no cluster-wide barrier per tile
        assert c["mapa"] == 3 and c["ld.shared::cluster"] == loads
        assert c["mbarrier acquire.cluster"] == 3 and c["mbarrier release.cluster"] == 2
        assert c["mbarrier.try_wait"] == 5  # the ring's 2 waits + the 3 handshake waits
        assert c["wgmma.mma_async"] == 4 and c["TMA multicast"] == 0
