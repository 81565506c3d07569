"""The sm_100a features of the seed's ladder, steps 5-8: TMA-store epilogue, 2x2 TMA multicast,
cta_group::2 (a CTA pair) and the persistent scheduler with two TMEM accumulator slots.

Three parts: the rules each feature brings (one violation per broken condition, naming its field
and what is legal); the numbers the planner derives (masks, arrive counts, bytes, TMEM columns),
pinned against the hand-written prototypes' compile_check table (their notes are not in the
repository); and a cross-compile of the ladder's generated files whose PTX must show each
feature. The last part is marked ``build`` (about 10 s on two cores).
"""

from __future__ import annotations

import pytest
from conftest import SPECS, build_named, kernel_file

from codegen import loader, plan, rules
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.spec import Spec

KIB = 1024
LADDER = [
    "sm100_f16_128x256x64_s4_sw128_ws_tma_grid",
    "sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid",
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid",
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm",
]


def make(tile: tuple[int, int, int] = (128, 256, 64), **knobs: object) -> Spec:
    knobs.setdefault("swizzle", "128B")
    return rules.resolve(Spec.model_validate({"tile": list(tile), **knobs}))


def violations(
    tile: tuple[int, int, int] = (128, 256, 64), **knobs: object
) -> list[tuple[str, str]]:
    knobs.setdefault("stages", 2)
    return [(v.field, v.message) for v in rules.check(make(tile, **knobs))]


PAIR = {"cta_group": 2, "cluster": [2, 1]}


@pytest.fixture(scope="module")
def ladder() -> dict[str, Spec]:
    loaded = loader.load([SPECS / "sm100" / "ladder.toml"])
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loaded}


# ---- rules: each new condition, one violation naming its field and what is legal ----------------


def test_the_ladder_steps_are_legal(ladder: dict[str, Spec]) -> None:
    assert set(LADDER) <= set(ladder)
    for name in LADDER:
        assert rules.check(ladder[name]) == [], name


def test_cta_pair_needs_an_even_cluster_m() -> None:
    got = violations((256, 256, 64), cta_group=2, cluster=[1, 2])
    assert [f for f, _ in got] == ["cluster"]
    assert "cluster M must be a multiple of 2" in got[0][1] and got[0][1].endswith("legal: [2, 1]")


def test_cta_pair_beyond_one_pair_is_not_implemented() -> None:
    ((field, message),) = violations((256, 256, 64), cta_group=2, cluster=[4, 1])
    assert field == "cluster"
    assert "not implemented for sm_100a yet" in message and message.endswith("legal: [2, 1]")


def test_cta_pair_needs_warp_specialization_and_the_pair_tile() -> None:
    got = violations((256, 256, 64), warp_specialized=False, **PAIR)
    legal = (
        "cta_group=2 is implemented for the warp-specialized mainloop only (both CTAs load, "
        "the leader's MMA warp multiplies); legal: true"
    )
    assert got == [("warp_specialized", legal)]
    ((field, message),) = violations((128, 256, 64), **PAIR)
    assert field == "tile" and message.startswith("tile M=128 with cta_group=2 is not implemented")
    assert message.endswith("legal: 256, the pair's tile")
    ((field, message),) = violations((256, 8, 64), **PAIR)
    assert field == "tile" and "not a tcgen05 kind::f16 shape for a CTA pair" in message


def test_two_accumulators_need_the_persistent_scheduler() -> None:
    ((field, message),) = violations(accumulators=2)
    assert field == "accumulators"
    assert 'needs scheduler = "persistent"' in message and "legal: 1" in message
    assert violations(accumulators=2, scheduler="persistent") == []


def test_accumulator_slots_need_their_tmem_columns() -> None:
    assert rules_sm100.spec_tmem_columns(make(accumulators=2)) == 512  # 2 x 256: all of TMEM
    assert rules_sm100.spec_tmem_columns(make((128, 128, 64), accumulators=2)) == 256
    assert rules_sm100.spec_tmem_columns(make((128, 192, 64), accumulators=2)) == 512  # 384 -> 512
    # no legal MMA shape overflows TMEM; the rule stands on its own
    wide = Spec.model_validate({"tile": [128, 272, 64], "accumulators": 2, "stages": 1})
    (v,) = rules_sm100.tmem_violations(wide)
    assert v.field == "tile" and "needs 1024 TMEM columns; at most 512" in v.message


def test_multicast_needs_whole_8_row_slices() -> None:
    # a 2x2 cluster splits A (128 rows) and B (256 rows) in two: fine
    assert violations(cluster=[2, 2]) == []
    # B's 16 rows among the 4 CTAs of a cluster column: 4-row slices
    ((field, message),) = violations((128, 16, 64), cluster=[4, 1])
    assert field == "cluster"
    assert "multicasts each B tile (16 rows) to the 4 CTAs along the cluster's M" in message
    assert message.endswith("legal: cluster M at most 2")
    assert violations((128, 16, 64), cluster=[2, 1]) == []


def test_multicast_is_implemented_for_the_warp_specialized_kernel() -> None:
    got = violations(cluster=[2, 2], warp_specialized=False)
    assert [f for f, _ in got] == ["warp_specialized"] and "legal: true" in got[0][1]
    # persistent multicast clusters: tests/test_sm100_schedulers.py
    assert violations(cluster=[2, 2], scheduler="persistent") == []


def test_persistent_scheduler_rules() -> None:
    got = violations(scheduler="persistent", warp_specialized=False)
    assert [f for f, _ in got] == ["scheduler"] and "warp_specialized = true" in got[0][1]
    # one 64-column TMA-store sub-tile per tile: legal, the tile ends waiting for its store
    # (tests/test_narrow_subtiles.py)
    assert violations((128, 64, 64), scheduler="persistent", epilogue="tma") == []
    assert violations((128, 64, 64), scheduler="persistent") == []  # direct stores: fine
    # the tile swizzle: tests/test_sm100_schedulers.py
    assert violations(scheduler={"kind": "persistent", "group": 8}) == []
    got = violations((256, 256, 64), scheduler={"kind": "persistent", "sm_count": 1}, **PAIR)
    assert [f for f, _ in got] == ["scheduler"] and "legal: at least 2" in got[0][1]


def test_tma_store_epilogue_needs_16_column_sub_tiles() -> None:
    ((field, message),) = violations((64, 40, 64), epilogue="tma")
    assert field == "epilogue"
    assert "tile N=40 is not a multiple of 16" in message and "or epilogue 'direct'" in message


def test_every_new_violation_names_a_field_and_what_is_legal() -> None:
    cases = [
        {"tile": (256, 256, 64), "cta_group": 2, "cluster": [1, 1]},
        {"tile": (256, 256, 64), "cta_group": 2, "cluster": [2, 2]},
        {"tile": (128, 256, 64), "accumulators": 2},
        {"tile": (128, 16, 64), "cluster": [4, 1], "warp_specialized": False},
        {
            "tile": (128, 64, 64),
            "scheduler": "persistent",
            "epilogue": {"style": "tma", "beta": 1.0},
        },
        {"tile": (64, 40, 64), "epilogue": "tma"},
    ]
    for case in cases:
        knobs = dict(case)
        tile = knobs.pop("tile")
        got = violations(tile, **knobs)
        assert got, case
        for field, message in got:
            assert field in Spec.model_fields, (field, message)
            assert "legal:" in message, message


# ---- shared memory and the derived numbers -------------------------------------------------------


def test_a_cta_pair_stage_is_32_kib_per_cta_and_7_fit() -> None:
    pair = make((256, 256, 64), **PAIR)
    assert rules_sm100.operand_rows_per_cta(pair) == (128, 128)
    assert rules.stage_bytes(pair) == 32 * KIB
    assert rules_sm100.full_tx_bytes(pair) == 64 * KIB  # the leader's barrier counts both CTAs
    assert rules.max_stages(pair) == 7  # 1 KiB + 7 x 32 KiB = 225 KiB
    assert rules.max_stages(make((256, 256, 64), epilogue="tma", **PAIR)) == 6  # + 32 KiB of C


def test_smem_of_the_tma_epilogue_steps_is_what_the_kernel_allocates(
    ladder: dict[str, Spec],
) -> None:
    # measured by the prototypes' compile_check (launch shared memory in the host IR): 230400 B
    for name in LADDER:
        spec = ladder[name]
        assert rules.smem_bytes(spec, spec.stages) == 230400, name


@pytest.mark.parametrize(
    ("knobs", "stages", "barriers"),
    [
        ({}, 4, 2 * 4 + 1),  # full, empty; acc_full
        ({"cluster": [2, 2]}, 4, 2 * 4 + 1),
        ({"tile": (256, 256, 64), **PAIR}, 6, 2 * 6 + 1 + 1),  # + the TMEM-dealloc handshake
        ({"scheduler": "persistent"}, 3, 2 * 3 + 2),  # acc_full + acc_empty for the one slot
        (
            {"tile": (256, 256, 64), "accumulators": 2, "scheduler": "persistent", **PAIR},
            6,
            2 * 6 + 2 * 2 + 1,
        ),
    ],
)
def test_barrier_bytes_are_the_barriers_struct(knobs: dict, stages: int, barriers: int) -> None:
    knobs = dict(knobs)
    tile = knobs.pop("tile", (128, 256, 64))
    spec = make(tile, **knobs)
    assert rules_sm100.barrier_count(spec, stages) == barriers
    assert rules_sm100.barrier_bytes(spec, stages) == 8 * barriers + 4  # + the TMEM address slot


def test_multicast_masks_and_arrive_counts() -> None:
    spec = make(cluster=[2, 2])
    assert rules_sm100.multicast_ctas(spec) == (2, 2)
    assert rules_sm100.multicast_masks(spec) == (0b0101, 0b0011)
    assert rules_sm100.empty_arrives(spec) == 3  # self, the row peer, the column peer
    big = make((128, 128, 64), cluster=[4, 4])
    assert rules_sm100.multicast_masks(big) == (0x1111, 0x000F)
    assert rules_sm100.empty_arrives(big) == 7
    # a pair shares nothing by multicast: one commit (with both CTAs in its mask) frees a slot
    pair = make((256, 256, 64), **PAIR)
    assert rules_sm100.multicast_ctas(pair) == (1, 1) and rules_sm100.empty_arrives(pair) == 1
    assert rules_sm100.acc_empty_arrives(pair) == 8  # 4 epilogue warps x 2 CTAs
    assert rules_sm100.acc_empty_arrives(make(scheduler="persistent")) == 4


def test_plan_of_each_ladder_step(ladder: dict[str, Spec]) -> None:
    v5, v6, v7, v8 = (plan.plan(ladder[n]).values for n in LADDER)
    assert v5.epi_tma.subtiles == 4 and v5.epi_tma.bufs == 2 and v5.ring.tx_bytes == 48 * KIB
    assert v5.tile.shape_multiples == {"M": 1, "N": 8, "K": 8}  # TMA clips partial tiles
    assert (v6.mcast.a_mask, v6.mcast.b_mask, v6.mcast.empty_arrives) == ("0b0101", "0b0011", 3)
    assert v6.cluster.shape == (2, 2, 1)
    assert v7.mma.cta_group == "TWO" and v7.pair.mask == "0b11"
    assert (v7.ring.tx_bytes, v7.mma.tmem_cols, v7.warps.threads) == (64 * KIB, 256, 128)
    assert (v8.roles.acc_slots, v8.mma.tmem_cols, v8.warps.threads) == (2, 512, 192)
    # one pair per 2 SMs of the GPU: 74 of a B200's 148
    assert (v8.roles.acc_empty_arrives, v8.workers.expr) == (8, "sm_count // 2")
    assert (
        rules_sm100.max_workers(
            ladder["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm"]
        )
        == 74
    )


def test_pipeline_tables_list_every_ring(ladder: dict[str, Spec]) -> None:
    for name in LADDER:
        lines = plan.plan(ladder[name]).values.docs.pipeline_table
        rings: dict[str, str] = {}  # a ring: its name's line and the indented lines under it
        for line in lines:
            if not line.startswith(" "):
                ring = line.split("  ")[0]
            rings[ring] = rings.get(ring, "") + " " + line.strip()
        assert {"A/B SMEM", "accumulator", "C sub-tiles"} <= set(rings), name
        assert "tx bytes" in rings["A/B SMEM"]
    table8 = "\n".join(
        plan.plan(
            ladder["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm"]
        ).values.docs.pipeline_table
    )
    assert "2 slots x 256 TMEM columns" in table8
    assert "8 (one per epilogue warp x 2 CTAs)" in table8
    assert "1 + 65536 tx bytes (leader's)" in table8
    assert "3 (tcgen05.commit of each CTA sharing the slot)" in "\n".join(
        plan.plan(
            ladder["sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid"]
        ).values.docs.pipeline_table
    )


# Hand-written prototypes' compile_check table (their notes are not in the repository): mma::1,
# mma::2, multicast TMA loads, barrier.cluster, TMA store, st.global, commit, commit .multicast,
# try_wait, alloc columns. Ladder step 5 waits once more than its prototype: the producer's tail
# over the ring (the prototype let the last tcgen05.commit arrives land after the CTA could exit).
PROTOTYPE_TABLE = {
    "sm100_f16_128x256x64_s4_sw128_ws_tma_grid": (4, 0, 0, 0, 4, 0, 2, 0, 4, 256),
    "sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid": (4, 0, 2, 2, 4, 0, 2, 1, 4, 256),
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid": (0, 4, 0, 2, 4, 0, 2, 2, 5, 256),
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm": (
        0,
        4,
        0,
        2,
        4,
        0,
        2,
        2,
        7,
        512,
    ),
}
TABLE_KEYS = (
    "mma cta_group::1",
    "mma cta_group::2",
    "TMA multicast",
    "barrier.cluster",
    "TMA store",
    "st.global",
    "tcgen05.commit",
    "tcgen05.commit multicast",
    "mbarrier.try_wait",
)


@pytest.mark.parametrize("name", LADDER)
def test_expected_counts_match_the_prototypes(name: str, ladder: dict[str, Spec]) -> None:
    p, counts = plan.plan(ladder[name]), plan.expected_counts(ladder[name])
    want = PROTOTYPE_TABLE[name]
    assert tuple(counts[k] for k in TABLE_KEYS) == want[:-1]
    assert p.values.mma.tmem_cols == want[-1]


def test_generated_files_hold_only_what_their_variant_needs() -> None:
    text = {n: (kernel_file(n)).read_text(encoding="utf-8") for n in LADDER}
    assert "st.global" not in text["sm100_f16_128x256x64_s4_sw128_ws_tma_grid"]
    for n in (
        "sm100_f16_128x256x64_s4_sw128_ws_tma_grid",
        "sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid",
    ):
        assert "is_leader" not in text[n] and "CtaGroup.TWO" not in text[n]
    assert "cluster_arrive" not in text["sm100_f16_128x256x64_s4_sw128_ws_tma_grid"]
    assert "mcast_mask" in text["sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid"]
    for n in (
        "sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid",
        "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm",
    ):
        assert "mcast_mask" not in text[n] and "CtaGroup.ONE" not in text[n]
        assert "is_two_cta=True" in text[n] and "PAIR_MASK" in text[n]
    for n in LADDER[:3]:
        assert "acc_empty" not in text[n] and "ACC_SLOTS" not in text[n]
    assert "acc_empty: cute.struct.MemRange[cutlass.Int64, ACC_SLOTS]" in text[LADDER[3]]


# ---- cross-compiled: the PTX shows each feature --------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    return build_named(LADDER, tmp_path_factory.mktemp("build"), jobs=2)


@pytest.mark.build
def test_ladder_steps_compile_with_their_expected_counts(built: dict[str, BuildResult]) -> None:
    for name in LADDER:
        r = built[name]
        assert r.passed, (name, r.error or r.mismatches)
        assert r.spill_bytes == 0 and r.registers is not None and r.registers <= 255


@pytest.mark.build
def test_ladder_5_stores_by_tma(built: dict[str, BuildResult]) -> None:
    c = built["sm100_f16_128x256x64_s4_sw128_ws_tma_grid"].counts
    assert c["TMA store"] == 4 and c["st.global"] == 0  # four 128x64 sub-tiles, no st.global
    assert c["mma cta_group::1"] == 4 and c["mma cta_group::2"] == 0
    assert c["TMA multicast"] == 0 and c["barrier.cluster"] == 0


@pytest.mark.build
def test_ladder_6_multicasts_in_a_cluster(built: dict[str, BuildResult]) -> None:
    c = built["sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid"].counts
    assert c["TMA multicast"] == 2  # A's slice and B's slice, one box each
    assert c["barrier.cluster"] == 2  # arrive + wait after the barriers are initialized
    assert c["tcgen05.commit multicast"] == 1  # the stage release reaches every sharer
    assert c["TMA store"] > 0 and c["st.global"] == 0


@pytest.mark.build
def test_ladder_7_is_a_cta_pair(built: dict[str, BuildResult]) -> None:
    r = built["sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid"]
    c = r.counts
    assert c["mma cta_group::2"] == 4 and c["mma cta_group::1"] == 0  # only pair MMAs
    # every commit carries the pair's multicast mask: without it the follower hangs
    assert c["tcgen05.commit"] == c["tcgen05.commit multicast"] == 2
    assert c["barrier.cluster"] == 2 and c["TMA multicast"] == 0
    assert r.alloc_cols == [256]


@pytest.mark.build
def test_ladder_8_has_two_accumulator_slots(built: dict[str, BuildResult]) -> None:
    r, stages = built["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rm"], 6
    assert r.alloc_cols == [512]  # 2 slots x 256 columns: all of TMEM
    # mbarrier.init: full + empty per stage, the TMEM-dealloc handshake, and two
    # acc_full/acc_empty pairs (ladder 7 has one acc_full)
    inits = r.counts["mbarrier.init"] - 2 * stages - 1
    assert inits == 2 * 2
    assert (
        built["sm100_f16_256x256x64_s6_sw128_ws_cta2_c2x1_tma_grid"].counts["mbarrier.init"]
        - 2 * stages
        - 1
        == 1
    )
    assert r.counts["mbarrier.try_wait"] == 7
    assert r.counts["mma cta_group::2"] == 4 and r.counts["mma cta_group::1"] == 0
    assert r.smem_bytes == 230400
