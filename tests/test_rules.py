"""Unit tests of the legality rules and budget arithmetic in :mod:`codegen.rules` (pure functions).

The numbers are worked out by hand in the comments, from the seed chapter's section 4 and the
227 KiB per-block shared-memory limit, so a change to a rule shows up as a changed number here.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegen import plan, rules, rules_common
from codegen.arch.sm90 import counts as counts_sm90
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm100 import counts as counts_sm100
from codegen.arch.sm100 import rules as rules_sm100
from codegen.spec import Spec

KIB = 1024
LIMIT = 227 * KIB


def make(tile: tuple[int, int, int] = (128, 256, 64), **knobs: object) -> Spec:
    return Spec.model_validate({"tile": list(tile), **knobs})


# ---- small helpers ------------------------------------------------------------------------------


def test_limits_are_the_hardware_numbers() -> None:
    assert rules_common.SMEM_LIMIT_BYTES == 232448  # 227 KiB
    assert rules_common.SMEM_ALIGN == 1024
    assert rules_sm100.TMEM_COLUMNS == 512


@pytest.mark.parametrize(
    ("nbytes", "text"), [(0, "0"), (1024, "1"), (1536, "1.5"), (295936, "289"), (1100, "1.1")]
)
def test_kib(nbytes: int, text: str) -> None:
    assert rules_common.kib(nbytes) == text


@pytest.mark.parametrize(
    ("value", "alignment", "up"),
    [(0, 1024, 0), (1, 1024, 1024), (1024, 1024, 1024), (1025, 1024, 2048)],
)
def test_align_up(value: int, alignment: int, up: int) -> None:
    assert rules_common.align_up(value, alignment) == up


@pytest.mark.parametrize(
    ("value", "ok"),
    [(0, False), (1, True), (2, True), (3, False), (64, True), (96, False), (-4, False)],
)
def test_is_power_of_two(value: int, ok: bool) -> None:
    assert rules_common.is_power_of_two(value) is ok


# ---- stage and shared-memory bytes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("tile", "dtype", "nbytes"),
    [
        ((128, 256, 64), "f16", 48 * KIB),  # (128 + 256) rows x 64 x 2 B
        ((128, 256, 16), "f16", 12 * KIB),  # the seed's 16-deep stage
        ((128, 256, 64), "bf16", 48 * KIB),
        ((128, 64, 64), "f16", 24 * KIB),
        ((64, 8, 16), "f16", 72 * 32),
    ],
)
def test_stage_bytes(tile: tuple[int, int, int], dtype: str, nbytes: int) -> None:
    spec = make(tile, dtype=dtype)
    assert rules.stage_bytes(spec) == nbytes
    assert rules.tx_bytes(spec) == nbytes  # the full barrier expects exactly one stage


def test_k_row_bytes_and_mmas_per_stage() -> None:
    assert rules_common.k_row_bytes(make((128, 256, 64))) == 128
    assert rules_common.k_row_bytes(make((128, 256, 16))) == 32
    assert rules_common.mmas_per_stage(make((128, 256, 64))) == 4  # one MMA is 16 deep
    assert rules_common.mmas_per_stage(make((128, 256, 16))) == 1
    assert rules_common.mmas_per_stage(make((128, 256, 128))) == 8


@pytest.mark.parametrize("stages", [1, 2, 4, 7])
def test_barrier_bytes(stages: int) -> None:
    # full[s] + empty[s]: 8 B each per stage, on both architectures
    sm100, sm90 = make(), make(arch="sm_90a")
    assert rules_sm90.barrier_bytes(sm90, stages) == 2 * stages * 8
    step = rules_sm100.barrier_bytes(sm100, stages + 1) - rules_sm100.barrier_bytes(sm100, stages)
    assert step == 2 * 8
    # sm_100a adds accumulator mbarriers (8 B each) and the 4-byte TMEM address slot
    extra = rules_sm100.barrier_bytes(sm100, stages) - 2 * stages * 8
    assert extra >= 8 + 4 and extra % 8 == 4


def test_a_cta_pair_splits_each_stage() -> None:
    """cta_group=2: each CTA of the pair loads half of A's rows and half of B's."""
    assert rules_sm100.operand_rows_per_cta(make(cta_group=2)) == (64, 128)
    assert rules.stage_bytes(make(cta_group=2)) == 24 * KIB
    # both CTAs' loads complete on the leader's full barrier: the pair's whole stage
    assert rules.tx_bytes(make(cta_group=2)) == 48 * KIB
    assert rules.tx_bytes(make(arch="sm_90a", cluster=[2, 1])) == 48 * KIB
    assert rules_sm90.operand_rows_per_cta(make(arch="sm_90a", cluster=[2, 1])) == (128, 256)


@pytest.mark.parametrize(
    ("tile", "stages", "knobs", "nbytes"),
    [
        # 1024 (barriers, aligned) + 4 x 16 KiB of A + 4 x 32 KiB of B: the generated docstrings'
        # "SMEM 197632 B"
        ((128, 256, 64), 4, {}, 1024 + 4 * 48 * KIB),
        ((128, 256, 64), 6, {}, 1024 + 6 * 48 * KIB),  # 289 KiB: over the limit
        ((128, 256, 16), 1, {}, 1024 + 12 * KIB),  # the ladder's step 1: 13312
        ((128, 256, 16), 4, {}, 1024 + 48 * KIB),  # 50176
        # 64 stages of barriers are 1044 B: the A ring starts at the next 1024 B boundary
        ((64, 8, 16), 64, {}, 2048 + 64 * 64 * 32 + 64 * 8 * 32),
        # an 8-row A ring is 256 B: the B ring still starts on a 1024 B boundary
        ((8, 8, 16), 1, {}, 2048 + 256),
        # a TMA-store epilogue keeps two 128x64 output sub-tiles in SMEM after the rings
        ((128, 256, 64), 1, {"epilogue": "tma"}, 1024 + 48 * KIB + 2 * 128 * 64 * 2),
        (
            (128, 256, 64),
            1,
            {"epilogue": {"style": "tma", "out_dtype": "f32"}},
            1024 + 48 * KIB + 2 * 128 * 64 * 4,
        ),
        # N = 8 is off the 64-column grid: 16-column sub-tiles (the rules refuse N = 8 anyway)
        ((8, 8, 16), 1, {"epilogue": "tma"}, 2048 + 1024 + 2 * 128 * 16 * 2),
        # sm_90a's TMA-store epilogue: 4 buffers of (64 x warpgroups) x 32
        (
            (128, 256, 64),
            2,
            {"arch": "sm_90a", "epilogue": "tma", "consumer_warpgroups": 2},
            1024 + 2 * 48 * KIB + 4 * 128 * 32 * 2,
        ),
        # sm_90a has no acc_full / TMEM slot, but the barrier block still rounds up to 1024
        ((128, 256, 64), 4, {"arch": "sm_90a"}, 1024 + 4 * 48 * KIB),
    ],
)
def test_smem_bytes(tile: tuple[int, int, int], stages: int, knobs: dict, nbytes: int) -> None:
    assert rules.smem_bytes(make(tile, **knobs), stages) == nbytes


def test_epilogue_smem_bytes() -> None:
    assert rules_sm100.epilogue_smem_bytes(make()) == 0  # the direct epilogue stages nothing
    assert rules_sm100.epilogue_smem_bytes(make(epilogue="tma")) == 2 * 128 * 64 * 2
    tma_f32 = make(epilogue={"style": "tma", "out_dtype": "f32"})
    assert rules_sm100.epilogue_smem_bytes(tma_f32) == 2 * 128 * 64 * 4
    assert rules_sm90.epilogue_smem_bytes(make(arch="sm_90a")) == 0
    assert rules_sm90.epilogue_smem_bytes(make(arch="sm_90a", epilogue="tma")) == 4 * 64 * 32 * 2


@pytest.mark.parametrize(
    ("tile", "knobs", "stages"),
    [
        ((128, 256, 64), {}, 4),  # 4 x 48 KiB + 1 KiB = 193 KiB; 5 would be 241 KiB
        ((128, 256, 64), {"dtype": "bf16"}, 4),
        ((128, 256, 16), {}, 18),  # 1 KiB + 18 x 12 KiB = 217 KiB; 19 would be 229 KiB
        ((128, 128, 64), {}, 7),  # 1 KiB + 7 x 32 KiB = 225 KiB
        ((128, 64, 64), {}, 9),  # 1 KiB + 9 x 24 KiB = 217 KiB; 10 would be 241 KiB
        ((128, 128, 128), {}, 3),
        ((128, 256, 256), {}, 1),  # one 192 KiB stage
        ((256, 256, 512), {}, 0),  # one stage is 512 KiB: nothing fits
        ((128, 256, 64), {"epilogue": "tma"}, 4),  # 4 stages + 32 KiB of sub-tiles = 225 KiB
        ((128, 256, 64), {"epilogue": {"style": "tma", "out_dtype": "f32"}}, 3),
        ((128, 256, 64), {"cta_group": 2}, 9),  # 24 KiB per CTA and stage
    ],
)
def test_max_stages(tile: tuple[int, int, int], knobs: dict, stages: int) -> None:
    assert rules.max_stages(make(tile, **knobs)) == stages


specs_for_budget = st.builds(
    lambda m, n, k, dtype, arch, epi: make((m, n, k), dtype=dtype, arch=arch, epilogue=epi),
    st.sampled_from([8, 64, 128, 192, 256]),
    st.integers(1, 32).map(lambda x: 8 * x),
    st.integers(1, 16).map(lambda x: 16 * x),
    st.sampled_from(["f16", "bf16"]),
    st.sampled_from(["sm_100a", "sm_90a"]),
    st.sampled_from(["direct", "tma", {"style": "tma", "out_dtype": "f32"}]),
)


@given(specs_for_budget)
def test_max_stages_is_the_most_that_fit(spec: Spec) -> None:
    fit = rules.max_stages(spec)
    if fit:
        assert rules.smem_bytes(spec, fit) <= LIMIT
    assert rules.smem_bytes(spec, fit + 1) > LIMIT


@given(specs_for_budget, st.integers(1, 40))
def test_smem_bytes_grows_with_stages_and_covers_the_rings(spec: Spec, stages: int) -> None:
    now, more = rules.smem_bytes(spec, stages), rules.smem_bytes(spec, stages + 1)
    assert more >= now  # so max_stages can stop at the first stage count that does not fit
    arch = rules.arch_rules(spec)
    floor = stages * rules.stage_bytes(spec) + arch.barrier_bytes(spec, stages)
    assert now >= floor + arch.epilogue_smem_bytes(spec)


# ---- swizzle and TMA boxes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row_bytes", "swizzle", "fits"),
    [
        (128, "128B", True),  # tile_k 64 in f16: one whole SW128 atom
        (256, "128B", True),
        (32, "128B", False),  # tile_k 16 in f16: the seed's illegal configuration
        (64, "128B", False),
        (192, "128B", False),
        (64, "64B", True),
        (96, "64B", False),
        (96, "32B", True),
        (48, "32B", False),
        (16, "none", True),
        (48, "none", True),
    ],
)
def test_swizzle_fits(row_bytes: int, swizzle: str, fits: bool) -> None:
    assert rules_common.swizzle_fits(row_bytes, swizzle) is fits


@pytest.mark.parametrize(
    ("row_bytes", "swizzle"),
    [
        (128, "128B"),
        (256, "128B"),
        (384, "128B"),
        (64, "64B"),
        (192, "64B"),
        (32, "32B"),
        (96, "32B"),
        (48, "none"),
        (16, "none"),
    ],
)
def test_auto_swizzle_picks_the_widest_that_fits(row_bytes: int, swizzle: str) -> None:
    assert rules_common.auto_swizzle(row_bytes) == swizzle


@given(st.integers(1, 4096))
def test_auto_swizzle_fits_and_nothing_wider_does(row_bytes: int) -> None:
    chosen = rules_common.auto_swizzle(row_bytes)
    assert rules_common.swizzle_fits(row_bytes, chosen)
    widths = ["none", "32B", "64B", "128B"]
    for wider in widths[widths.index(chosen) + 1 :]:
        assert not rules_common.swizzle_fits(row_bytes, wider)


@pytest.mark.parametrize(
    ("row_bytes", "swizzle", "boxes"),
    [
        (128, "128B", 1),  # SW128 at tile_k 64: one box per operand, 2 per stage
        (128, "none", 8),  # unswizzled at tile_k 64: eight 16-byte boxes per operand
        (32, "none", 2),  # unswizzled at tile_k 16
        (256, "128B", 2),
        (64, "64B", 1),
        (96, "32B", 3),
    ],
)
def test_tma_boxes_per_operand(row_bytes: int, swizzle: str, boxes: int) -> None:
    assert rules_common.tma_boxes_per_operand(row_bytes, swizzle) == boxes


def test_tma_loads_per_stage_match_the_seed() -> None:
    """Seed section 4: cp.async.bulk.tensor per stage is 4, 16 and 2 for its three configs."""

    def per_stage(tile_k: int, swizzle: str) -> int:
        return 2 * rules_common.tma_boxes_per_operand(
            rules_common.k_row_bytes(make((128, 256, tile_k))), swizzle
        )

    assert per_stage(16, "none") == 4
    assert per_stage(64, "none") == 16
    assert per_stage(64, "128B") == 2


# ---- MMA shapes and TMEM ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "ok"),
    [
        (128, 256, True),
        (128, 16, True),
        (128, 48, True),
        (128, 8, False),  # M=128 needs N % 16
        (128, 24, False),
        (128, 250, False),
        (128, 272, False),  # N at most 256
        (64, 8, True),
        (64, 24, True),
        (64, 256, True),
        (64, 4, False),
        (64, 12, False),
        (64, 264, False),
        (256, 128, False),  # 2-CTA shapes are not one CTA's
        (32, 64, False),
        (192, 64, False),
    ],
)
def test_tcgen05_f16_shape_ok(m: int, n: int, ok: bool) -> None:
    assert rules_sm100.tcgen05_f16_shape_ok(m, n) is ok


@pytest.mark.parametrize(
    ("m", "n", "wgs", "ok"),
    [
        (128, 256, 1, True),
        (128, 256, 2, True),  # 64 rows each
        (64, 128, 1, True),
        (64, 128, 2, False),  # 32 rows each
        (192, 128, 2, False),  # 96 rows each
        (256, 128, 1, True),
        (512, 128, 1, False),
        (128, 12, 1, False),
        (128, 264, 1, False),  # above 256: two atoms of N / 2, each a multiple of 16
        (128, 272, 2, False),  # 136-wide atoms: an epilogue sub-tile would straddle them
        (128, 288, 2, True),  # two 144-wide atoms
        (128, 512, 2, True),
        (128, 544, 2, False),  # at most two atoms
    ],
)
def test_wgmma_shape_ok(m: int, n: int, wgs: int, ok: bool) -> None:
    assert rules_sm90.wgmma_shape_ok(m, n, wgs) is ok


@pytest.mark.parametrize(
    ("n", "slots", "cols"),
    [
        (1, 1, 32),
        (16, 1, 32),
        (32, 1, 32),
        (33, 1, 64),
        (64, 1, 64),
        (80, 1, 128),
        (256, 1, 256),
        (257, 1, 512),
        (512, 1, 512),
        (513, 1, 1024),
        (128, 2, 256),
        (48, 3, 256),
    ],
)
def test_tmem_columns(n: int, slots: int, cols: int) -> None:
    assert rules_sm100.tmem_columns(n, slots) == cols


@given(st.integers(1, 2048), st.integers(1, 4))
def test_tmem_columns_is_the_smallest_power_of_two_that_holds_the_tile(n: int, slots: int) -> None:
    cols = rules_sm100.tmem_columns(n, slots)
    assert rules_common.is_power_of_two(cols)
    assert cols >= max(32, n * slots)
    assert cols == 32 or cols // 2 < n * slots  # no smaller legal allocation holds it


@given(st.integers(1, 256).map(lambda x: 8 * x))
def test_legal_sm100_tiles_fit_in_tmem(n: int) -> None:
    if rules_sm100.tcgen05_f16_shape_ok(128, n) or rules_sm100.tcgen05_f16_shape_ok(64, n):
        assert 32 <= rules_sm100.tmem_columns(n) <= rules_sm100.TMEM_COLUMNS


# ---- resolve ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tile", "dtype", "swizzle", "stages"),
    [
        ((128, 256, 64), "f16", "128B", 4),
        ((128, 256, 64), "bf16", "128B", 4),
        ((128, 256, 16), "f16", "32B", 18),
        ((128, 256, 32), "f16", "64B", 9),
        ((128, 128, 48), "f16", "32B", 9),
        ((128, 128, 24), "f16", "none", 18),
        ((256, 256, 512), "f16", "128B", 1),  # nothing fits: resolve says 1 and check objects
    ],
)
def test_resolve_auto(tile: tuple[int, int, int], dtype: str, swizzle: str, stages: int) -> None:
    spec = make(tile, dtype=dtype)
    assert (spec.stages, spec.swizzle) == ("auto", "auto")
    got = rules.resolve(spec)
    assert (got.swizzle, got.stages) == (swizzle, stages)
    assert got.tile == spec.tile and got.dtype == spec.dtype


def test_resolve_keeps_explicit_knobs() -> None:
    spec = make((128, 256, 16), stages=2, swizzle="128B")  # illegal, but resolve does not judge
    assert rules.resolve(spec) is spec
    partly = rules.resolve(make((128, 256, 64), stages=2))
    assert (partly.stages, partly.swizzle) == (2, "128B")
    partly = rules.resolve(make((128, 256, 64), swizzle="none"))
    assert (partly.stages, partly.swizzle) == (4, "none")


def test_resolved_auto_specs_are_legal() -> None:
    for tile in [(128, 256, 64), (128, 256, 16), (128, 64, 64), (128, 128, 32), (128, 128, 128)]:
        assert rules.check(rules.resolve(make(tile))) == []


# ---- check --------------------------------------------------------------------------------------


def violations(
    tile: tuple[int, int, int] = (128, 256, 64), **knobs: object
) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(rules.resolve(make(tile, **knobs)))]


@pytest.mark.parametrize(
    ("tile", "stages", "swizzle"),
    [
        ((128, 256, 16), 1, "none"),
        ((128, 256, 16), 4, "none"),
        ((128, 256, 64), 4, "none"),
        ((128, 256, 64), 4, "128B"),
    ],
)
def test_the_seeds_legal_configurations_pass(
    tile: tuple[int, int, int], stages: int, swizzle: str
) -> None:
    assert violations(tile, stages=stages, swizzle=swizzle) == []


def test_sw128_at_tile_k_16_is_rejected() -> None:
    assert violations((128, 256, 16), stages=1, swizzle="128B") == [
        (
            "swizzle",
            (
                "swizzle=128B needs tile K x 2 B to be a multiple of 128 B, but tile K=16 gives "
                "32 B rows; legal: none, 32B"
            ),
        )
    ]


def test_six_48_kib_stages_are_rejected() -> None:
    assert violations((128, 256, 64), stages=6, swizzle="128B") == [
        (
            "stages",
            (
                "stages=6 needs 289 KiB of shared memory (48 KiB per stage); at most 4 stages fit "
                "in 227 KiB"
            ),
        )
    ]


def test_stage_count_message_is_singular_for_one_stage() -> None:
    ((field, message),) = violations((128, 256, 256), stages=2)
    assert field == "stages"
    assert message.endswith("at most 1 stage fit in 227 KiB")


def test_tile_k_must_be_a_multiple_of_16() -> None:
    got = violations((128, 256, 24), swizzle="none", stages=2)
    assert got == [("tile", "tile K=24 must be a multiple of 16 (one MMA is 16 deep)")]


def test_sm100_rejections_name_their_fields() -> None:
    got = violations((128, 250, 64), stages=2, consumer_warpgroups=2, cluster=[3, 1])
    assert sorted({f for f, _ in got}) == ["cluster", "consumer_warpgroups", "tile"]
    (tile,) = [m for f, m in got if f == "tile"]
    assert tile.startswith("tile 128x250 is not a tcgen05 kind::f16 shape for one CTA; legal: ")
    (cwg,) = [m for f, m in got if f == "consumer_warpgroups"]
    assert cwg.startswith("consumer_warpgroups is a Hopper (sm_90a) knob")
    assert "cluster 3x1 has 3 CTAs; it must be a power of two, at most 16" in [m for _, m in got]


def test_sm100_tile_m_64_is_a_legal_mma() -> None:
    # the M=64 rules and kernels: tests/test_sm100_smallm.py
    assert rules_sm100.tcgen05_f16_shape_ok(64, 128)
    assert violations((64, 128, 64)) == []


def test_tmem_overflow_is_rejected() -> None:
    # not reachable through a legal MMA shape, but the rule exists on its own
    got = violations((128, 1024, 16), stages=1)
    assert [m for f, m in got if f == "tile" and "needs 1024 TMEM columns" in m]
    # 2 x 256 = 512: fits
    got = violations((128, 256, 64), stages=1, accumulators=2, scheduler="persistent")
    assert not [m for f, m in got if "TMEM" in m]
    got = violations((128, 272, 64), stages=1, accumulators=2)
    assert [m for f, m in got if f == "tile" and "needs 1024 TMEM columns" in m]


@pytest.mark.parametrize(
    ("cluster", "ok"),
    [
        ([1, 1], True),
        ([2, 1], True),
        ([2, 2], True),
        ([4, 4], True),
        ([3, 1], False),
        ([8, 4], False),
    ],
)
def test_cluster_size_rule(cluster: list[int], ok: bool) -> None:
    got = [f for f, m in violations((128, 128, 64), arch="sm_90a", stages=2, cluster=cluster)]
    assert ("cluster" not in got) is ok


def test_sm100_only_knobs_are_rejected_on_sm90() -> None:
    got = violations((128, 128, 64), arch="sm_90a", stages=2, cta_group=2, accumulators=2)
    assert [f for f, _ in got] == ["cta_group", "accumulators"]  # no such thing on Hopper


def test_sm90_rules() -> None:
    assert violations((128, 128, 64), arch="sm_90a", stages=3) == []
    assert violations((128, 256, 64), arch="sm_90a", stages=3, consumer_warpgroups=2) == []
    # one warpgroup holding a 128x256 f32 accumulator is 256 registers a thread: it would spill
    ((field, message),) = violations((128, 256, 64), arch="sm_90a", stages=3)
    assert field == "tile" and "256 f32 accumulator registers per thread" in message
    # a stage's K row is one swizzle atom: 64-byte rows take the 64B swizzle (auto picks it)
    assert violations((128, 128, 32), arch="sm_90a", stages=2) == []
    got = violations((128, 128, 32), arch="sm_90a", stages=2, swizzle="32B")
    assert [f for f, _ in got] == ["swizzle"]
    # 256-byte rows (two atoms) are not taken
    assert [f for f, _ in violations((128, 128, 128), arch="sm_90a", stages=2)] == ["swizzle"]
    got = violations(
        (192, 128, 64), arch="sm_90a", stages=2, consumer_warpgroups=2, warp_specialized=False
    )
    assert [f for f, _ in got] == ["tile", "warp_specialized"]
    assert "with 2 consumer warpgroups is not a wgmma layout" in got[0][1]


# ---- what the plan derives from the rules --------------------------------------------------------


@pytest.mark.parametrize(
    ("tile", "swizzle", "counts"),
    [
        # the seed's compile_check table: tcgen05.mma, cp.async.bulk.tensor, try_wait, tcgen05.ld;
        # one try_wait more than the seed: the producer's tail over the ring
        ((128, 256, 16), "none", (1, 4, 4, 4)),
        ((128, 256, 64), "none", (4, 16, 4, 4)),
        ((128, 256, 64), "128B", (4, 2, 4, 4)),
        ((128, 64, 64), "128B", (4, 2, 4, 1)),
    ],
)
def test_expected_instruction_counts(
    tile: tuple[int, int, int], swizzle: str, counts: tuple
) -> None:
    spec = rules.resolve(make(tile, swizzle=swizzle, stages=1))
    got = counts_sm100.expected_counts(spec)
    keys = ("tcgen05.mma", "cp.async.bulk.tensor", "mbarrier.try_wait", "tcgen05.ld")
    assert tuple(got[k] for k in keys) == counts
    assert got["tcgen05.alloc"] == 1 and got["tcgen05.commit"] == 2


def _direct_epilogue_covers(n: int) -> tuple[int, int, str]:
    values = plan.plan(rules.resolve(make((128, n, 64)))).values
    return values.epilogue.cols, values.epilogue.chunks, values.epilogue.ld_repetition


@pytest.mark.parametrize(
    "n, cols", [(16, 16), (32, 32), (64, 64), (128, 64), (192, 64), (256, 64), (48, 16),
                (80, 16), (96, 32), (112, 16), (160, 32), (208, 16), (240, 16)]
)  # fmt: skip
def test_direct_epilogue_covers_every_output_column(n: int, cols: int) -> None:
    """The widest power-of-two chunk (at most 64 columns) that divides N, so N = 112 or 208 (the
    mid-M swap tiles) reads TMEM in 16-column loads."""
    got, chunks, rep = _direct_epilogue_covers(n)
    assert (got, got * chunks) == (cols, n)
    assert rules_common.is_power_of_two(got) and rep == f"x{got}"


@pytest.mark.parametrize("n", [24, 40, 56, 72])
def test_direct_epilogue_rejects_n_it_cannot_cover(n: int) -> None:
    """Legal MMA shapes whose N the direct epilogue's TMEM chunks cannot cover (an 8-column
    chunk below 16 columns of N) are rejected."""
    assert rules_sm100.tcgen05_f16_shape_ok(64, n)  # the MMA itself takes this tile
    assert not rules_sm100.direct_epilogue_covers(n)
    spec = rules.resolve(
        Spec(arch="sm_100a", dtype="f16", tile=(64, n, 64), stages=2, swizzle="128B")
    )
    messages = [v.message for v in rules.check(spec) if v.field == "tile"]
    assert any(f"tile N={n} does not split" in m for m in messages), messages


@pytest.mark.parametrize(
    ("tile", "cluster", "atoms", "epi_n", "loads"),
    [
        ((128, 256, 64), (1, 1), 1, 32, 2),
        ((128, 288, 64), (1, 1), 2, 16, 3),  # 144-wide atoms: 16-column sub-tiles; B in two boxes
        ((128, 320, 64), (1, 1), 2, 32, 3),
        ((128, 288, 64), (2, 1), 2, 16, 2),  # B multicast in 144-row slices: one box each
    ],
)
def test_wide_tile_n(tile: tuple, cluster: tuple, atoms: int, epi_n: int, loads: int) -> None:
    """A tile N above 256 is two wgmma atoms side by side; sub-tiles never straddle them, and an
    operand tile of more than 256 rows loads as two TMA boxes."""
    spec = Spec.model_validate(
        {"arch": "sm_90a", "dtype": "bf16", "tile": list(tile), "stages": 3,
         "consumer_warpgroups": 2, "epilogue": "tma", "swap_ab": True,
         "cluster": list(cluster), "scheduler": {"kind": "persistent"}}
    )  # fmt: skip
    assert rules_sm90.wgmma_n_atoms(spec.tile.n) == atoms
    assert rules_sm90.epi_n(spec) == epi_n
    assert counts_sm90.tma_load_boxes(spec) == loads
    assert counts_sm90.expected_counts(spec)["wgmma.mma_async"] == 4 * atoms
