"""sm_100a schedulers (specs/sm100/schedulers.toml): the persistent tile swizzle (group), persistent
multicast clusters, the dynamic scheduler (cluster launch control), split-K over a cluster.

Three parts: the rules (what became legal, what each new rule rejects, naming its field and what is
legal); the tile order, run from the generated kernels' own lines against the Python reference
``codegen.plan_common.tile_order``; and a cross-compile of the shipped variants whose PTX must show
what each scheduler implies (marked ``build``).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from conftest import SPECS, build_named, kernel_file

from codegen import build, loader, plan, render, rules
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.plan_common import tile_order
from codegen.spec import DynamicScheduler, Spec

SHIPPED = [
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8",
    "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4",
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm",
    "sm100_f16_128x128x64_s7_sw128_ws_acc2_c2x1_direct_persistent_rm_g8",
    "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic",
    "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2",
    "sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32",
]
STATIC = SHIPPED[:4]  # neither dynamic nor split-K
PAIR = {"cta_group": 2, "cluster": [2, 1]}


def make(tile: tuple[int, int, int] = (128, 256, 64), **knobs: object) -> Spec:
    knobs.setdefault("swizzle", "128B")
    return rules.resolve(Spec.model_validate({"tile": list(tile), **knobs}))


def violations(
    tile: tuple[int, int, int] = (128, 256, 64), **knobs: object
) -> list[tuple[str, str]]:
    knobs.setdefault("stages", 2)
    return [(v.field, v.message) for v in rules.check(make(tile, **knobs))]


@pytest.fixture(scope="module")
def shipped() -> dict[str, Spec]:
    loaded = loader.load([SPECS / "sm100" / "schedulers.toml"])
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loaded}


# ---- rules ---------------------------------------------------------------------------------------


def test_the_shipped_variants_are_legal(shipped: dict[str, Spec]) -> None:
    assert set(SHIPPED) <= set(shipped)
    for name, spec in shipped.items():
        assert rules.check(spec) == [], name


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"tile": (256, 256, 64), **PAIR},
        {"cluster": [2, 2]},
        {"cluster": [4, 1], "tile": (128, 128, 64)},
    ],
)
@pytest.mark.parametrize("raster", ["m", "n"])
def test_tile_swizzle_is_legal_with_every_worker(knobs: dict, raster: str) -> None:
    knobs = dict(knobs)
    tile = knobs.pop("tile", (128, 256, 64))
    sched = {"kind": "persistent", "raster": raster, "group": 8}
    assert violations(tile, scheduler=sched, **knobs) == []


def test_persistent_multicast_is_legal_and_keeps_the_multicast_rules() -> None:
    assert violations(cluster=[2, 2], scheduler="persistent") == []
    assert violations(cluster=[1, 4], scheduler="persistent", epilogue="tma") == []
    # the 8-row slice rule and the warp-specialization rule still hold
    ((field, message),) = violations((128, 16, 64), cluster=[4, 1], scheduler="persistent")
    assert field == "cluster" and message.endswith("legal: cluster M at most 2")
    got = violations(cluster=[2, 2], scheduler="persistent", warp_specialized=False)
    assert sorted(f for f, _ in got) == ["scheduler", "warp_specialized"]


def test_sm_count_must_hold_one_cluster() -> None:
    sched = {"kind": "persistent", "sm_count": 2}
    assert violations(cluster=[2, 1], scheduler=sched) == []
    ((field, message),) = violations(cluster=[2, 2], scheduler=sched)
    assert field == "scheduler"
    assert message == (
        "scheduler sm_count=2 is fewer than the 4 SMs one cluster occupies; legal: at least 4"
    )
    ((field, message),) = violations((256, 256, 64), scheduler={**sched, "sm_count": 1}, **PAIR)
    assert message.endswith("SMs one CTA pair occupies; legal: at least 2")


def test_persistent_workers_and_shape_multiples() -> None:
    assert rules_sm100.max_workers(make(scheduler="persistent")) == 148
    assert rules_sm100.max_workers(make((256, 256, 64), scheduler="persistent", **PAIR)) == 74
    mcast = make(cluster=[2, 2], scheduler="persistent")
    assert rules_sm100.max_workers(mcast) == 37  # 148 SMs / 4 CTAs per cluster
    # direct stores cover whole cluster tiles, as in the grid multicast kernel
    assert rules_sm100.shape_multiples(mcast) == {"M": 256, "N": 512, "K": 8}
    assert rules_sm100.shape_multiples(make(cluster=[2, 2])) == {"M": 256, "N": 512, "K": 8}
    tma = make(cluster=[2, 2], scheduler="persistent", epilogue="tma")
    assert rules_sm100.shape_multiples(tma) == {"M": 1, "N": 8, "K": 8}  # TMA clips


def test_persistent_multicast_plan(shipped: dict[str, Spec]) -> None:
    v = plan.plan(shipped["sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm"]).values
    assert (v.mcast.a_mask, v.mcast.b_mask, v.mcast.empty_arrives) == ("0b0101", "0b0011", 3)
    assert v.ring.tx_bytes == 48 * 1024  # the whole stage lands in each CTA
    assert (v.workers.expr, v.roles.acc_empty_arrives, v.order.cluster_tiles) == (
        "sm_count // 4",
        4,
        True,
    )
    assert v.order.tile_unit == "cluster tiles"
    single = plan.plan(shipped["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8"]).values
    assert (single.order.cluster_tiles, single.order.tile_unit, single.order.group) == (
        False,
        "tiles",
        8,
    )


# ---- the dynamic scheduler: rules and numbers ----------------------------------------------------


def test_dynamic_scheduler_spec() -> None:
    s = make(scheduler="dynamic", accumulators=2, epilogue="tma")
    assert s.scheduler == DynamicScheduler()
    assert s.canonical_name() == "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"
    assert violations(scheduler="dynamic") == []
    assert violations(scheduler="dynamic", accumulators=2) == []


def test_dynamic_scheduler_needs_sm100() -> None:
    spec = rules.resolve(
        Spec.model_validate(
            {
                "arch": "sm_90a",
                "tile": [128, 128, 64],
                "swizzle": "128B",
                "consumer_warpgroups": 1,
                "scheduler": "dynamic",
            }
        )
    )
    assert [(v.field, v.message) for v in rules.check(spec)] == [
        (
            "scheduler",
            (
                "scheduler 'dynamic' needs sm_100a (cluster launch control); legal on sm_90a: grid, "
                "persistent, split_k"
            ),
        )
    ]


def test_dynamic_scheduler_rules() -> None:
    got = violations(scheduler="dynamic", warp_specialized=False)
    assert got == [
        (
            "scheduler",
            (
                "scheduler 'dynamic' needs warp_specialized = true (dedicated epilogue warps drain "
                "one tile while the MMA warp runs the next); legal: grid"
            ),
        )
    ]
    # one TMA-store sub-tile per tile: legal (the tile waits for its store), but not with beta
    assert violations((128, 64, 64), scheduler="dynamic", epilogue="tma") == []
    beta = {"style": "tma", "beta": 1.0}
    ((field, message),) = violations((128, 64, 64), scheduler="dynamic", epilogue=beta)
    assert field == "scheduler" and message.startswith("scheduler 'dynamic' with beta through")
    for knobs in ({"cluster": [2, 1]}, {"cluster": [1, 2]}):
        ((field, message),) = violations(scheduler="dynamic", **knobs)
        assert field == "cluster" and "with scheduler 'dynamic' is not implemented" in message
        assert message.endswith("legal: cluster [1, 1] with cta_group = 1")
    got = violations((256, 256, 64), scheduler="dynamic", **PAIR)
    assert got == [
        (
            "cluster",
            (
                "cluster 2x1 with scheduler 'dynamic' is not implemented for sm_100a yet (the "
                "cancelled cluster's tile would have to reach every CTA); legal: cluster [1, 1] with "
                "cta_group = 1"
            ),
        )
    ]


def test_dynamic_scheduler_barriers_and_answer_bytes(shipped: dict[str, Spec]) -> None:
    spec = shipped["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"]
    stages = spec.stages
    assert stages == 4
    # full/empty per stage, acc_full/acc_empty per slot, clc_full, clc_empty
    assert rules_sm100.barrier_count(spec, stages) == 2 * 4 + 2 * 2 + 2
    # 14 barriers (112 B, already 16-aligned) + the 16-byte answer + the TMEM address slot
    assert rules_sm100.barrier_bytes(spec, stages) == 112 + 16 + 4
    for stages in (1, 2, 3):  # an even count of 8-byte barriers: the answer needs no padding
        one = make(scheduler="dynamic", stages=stages)
        assert rules_sm100.barrier_bytes(one, stages) == (2 * stages + 2 + 2) * 8 + 16 + 4
    persistent = make(scheduler="persistent", accumulators=2)
    assert rules_sm100.barrier_bytes(persistent, 4) == 12 * 8 + 4
    assert rules_sm100.clc_readers(spec) == 6 and rules_sm100.clc_readers(persistent) == 0
    v = plan.plan(spec).values
    assert (v.clc.response_bytes, v.clc.readers, v.warps.threads) == (16, 6, 192)
    assert v.workers is None and v.order is None
    table = "\n".join(v.docs.pipeline_table)
    assert "tile answer  try_cancel (warp 0) -> every warp" in table
    assert "1 + 16 tx bytes" in table and "6 (one per reading warp)" in table


# ---- split-K: rules, the staging in the SMEM budget, the numbers ---------------------------------


def split(tile: tuple[int, int, int] = (128, 128, 64), **knobs: object) -> Spec:
    knobs.setdefault("scheduler", "split_k")
    return make(tile, **knobs)


@pytest.mark.parametrize("splits", [2, 4, 8])
def test_split_k_splits(splits: int) -> None:
    assert violations((128, 64, 64), scheduler={"kind": "split_k", "splits": splits}) == []


@pytest.mark.parametrize("splits", [3, 6, 16])
def test_split_k_bad_splits(splits: int) -> None:
    ((field, message),) = violations(scheduler={"kind": "split_k", "splits": splits})
    assert (field, message) == (
        "scheduler",
        (
            f"split_k splits={splits}: the K range is split over the CTAs of one cluster, so splits "
            "must be a power of two in [2, 8]; legal: 2, 4, 8"
        ),
    )


def test_split_k_rules() -> None:
    got = violations((256, 128, 64), scheduler="split_k", cta_group=2, cluster=[2, 1])
    assert got == [
        (
            "cta_group",
            (
                "cta_group=2 with scheduler split_k is not implemented for sm_100a (split-K's "
                "cluster is the K split; each CTA runs 1-CTA MMAs); legal: 1"
            ),
        )
    ]
    ((field, message),) = violations((128, 128, 64), scheduler="split_k", cluster=[2, 1])
    assert field == "cluster" and "split-K uses the cluster itself" in message
    assert message.endswith("legal: [1, 1]")
    ((field, message),) = violations((128, 128, 64), scheduler="split_k", epilogue="tma")
    assert field == "epilogue" and message == (
        "epilogue 'tma' with scheduler split_k is not implemented for sm_100a yet (rank 0 stores "
        "the reduced tile with the direct epilogue); legal: direct"
    )
    got = violations((128, 128, 64), scheduler="split_k", warp_specialized=False)
    assert got == [
        (
            "scheduler",
            (
                "scheduler 'split_k' needs warp_specialized = true (dedicated epilogue warps drain "
                "one tile while the MMA warp runs the next); legal: grid"
            ),
        )
    ]


def test_split_k_staging_is_in_the_smem_budget(shipped: dict[str, Spec]) -> None:
    s = shipped["sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2"]
    assert rules_sm100.splitk_staging_bytes(s) == 128 * 128 * 4 == 64 * 1024
    assert rules_sm100.epilogue_smem_bytes(s) == 64 * 1024
    # full/empty x 5, acc_full/acc_empty, staged/consumed: 1 KiB with the TMEM slot
    assert rules_sm100.barrier_count(s, 5) == 10 + 2 + 2
    assert s.stages == 5  # 1 KiB + 5 x 32 KiB + 64 KiB = 225 KiB; 6 stages need 257 KiB
    assert rules.smem_bytes(s, 5) == 1024 + 5 * 32 * 1024 + 64 * 1024 == 230400
    assert make((128, 128, 64), scheduler="persistent").stages == 7  # no staging: 2 more stages
    ((field, message),) = violations((128, 128, 64), scheduler="split_k", stages=6)
    assert field == "stages" and message.endswith("at most 5 stages fit in 227 KiB")


def test_split_k_plan(shipped: dict[str, Spec]) -> None:
    v2 = plan.plan(shipped["sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2"]).values
    assert (v2.splits, v2.splitk.staged_arrives, v2.splitk.consumed_arrives) == (2, 4, 4)
    assert (v2.workers.expr, v2.cluster.shape, v2.splitk.stage_vec) == (
        "sm_count // 2",
        (2, 1, 1),
        4,
    )
    v4 = plan.plan(shipped["sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32"]).values
    assert (v4.splits, v4.splitk.staged_arrives, v4.splitk.consumed_arrives) == (4, 12, 4)
    assert v4.workers.expr == "min(sm_count // 4, 32)"  # the spec's max_clusters
    assert "at most 32 (the spec's max_clusters)" in v4.workers.doc
    assert (v4.roles.acc_slots, v4.mma.tmem_cols) == (2, 128)
    table = "\n".join(v4.docs.pipeline_table)
    assert "staged       ranks 1..3 epilogue -> rank 0 epilogue" in table
    assert "12 (3 peer CTAs x 4 epilogue warps)" in table and "32768 " in table  # 128 x 64 f32
    docs = render.environment().get_template("sm100/_docs.py.j2")
    pipeline = docs.make_module(
        {"plan": plan.plan(shipped["sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32"])}
    ).pipeline()
    assert "Fixed summation order: deterministic." in " ".join(pipeline.split())
    c = plan.expected_counts(shipped["sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32"])
    # 3 peers: one mapa per peer staging chunk (1 chunk), per peer consumed, and rank 0's staged
    assert (c["mapa"], c["ld.shared::cluster"], c["tcgen05.ld"]) == (3 + 3 + 1, 3 * 16, 2)
    assert (c["mbarrier acquire.cluster"], c["mbarrier release.cluster"]) == (3, 4)


# ---- the tile order: the reference, and the generated kernels' own lines -------------------------


@pytest.mark.parametrize("raster", ["m", "n"])
@pytest.mark.parametrize("group", [1, 2, 3, 8])
@pytest.mark.parametrize("counts", [(1, 1), (5, 3), (8, 8), (13, 7), (3, 17)])
def test_tile_order_visits_every_tile_once(
    raster: str, group: int, counts: tuple[int, int]
) -> None:
    seen = [tile_order(t, counts, raster, group) for t in range(counts[0] * counts[1])]
    assert sorted(seen) == list(itertools.product(range(counts[0]), range(counts[1])))


def test_tile_order_walks_bands() -> None:
    # group 2 over 5 x 3 tiles along M: bands of rows {0, 1}, {2, 3}, {4} walked along N
    order = [tile_order(t, (5, 3), "m", 2) for t in range(15)]
    assert order[:6] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert order[12:] == [(4, 0), (4, 1), (4, 2)]  # the last band is one row wide
    assert [tile_order(t, (5, 3), "n", 2) for t in range(4)] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert [tile_order(t, (5, 3), "m") for t in range(6)] == [
        (0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (0, 1)
    ]  # fmt: skip


def _producer_tile_lines(path: Path) -> list[ast.stmt]:
    """The assignments of the kernel's tile_coords helper (every role's tile index ->
    coordinates), run with the helper's parameters as names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "tile_coords":
            return [stmt for stmt in node.body if isinstance(stmt, ast.Assign)]
    raise AssertionError(f"{path.name}: no tile_coords helper")


class _Cutlass:
    min = staticmethod(min)


def _run_tile_lines(stmts: list[ast.stmt], names: dict[str, int], out: tuple[str, str]):
    code = compile(ast.Module(body=stmts, type_ignores=[]), "<tile lines>", "exec")
    scope = {"cutlass": _Cutlass, **names}
    exec(code, scope)  # noqa: S102 - the generated kernel's own integer arithmetic
    return scope[out[0]], scope[out[1]]


@pytest.mark.parametrize(
    ("name", "counts_names", "out"),
    [
        (
            "sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8",
            ("tiles_m", "tiles_n"),
            ("tm", "tn"),
        ),
        (
            "sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4",
            ("tiles_m", "tiles_n"),
            ("tm", "tn"),
        ),
        (
            "sm100_f16_128x128x64_s7_sw128_ws_acc2_c2x1_direct_persistent_rm_g8",
            ("clusters_m", "clusters_n"),
            ("ctm", "ctn"),
        ),
        (
            "sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm",
            ("clusters_m", "clusters_n"),
            ("ctm", "ctn"),
        ),
        # the sm_90a swizzle prints the same shared lines (templates/common/tile_order.py.j2)
        (
            "sm90_bf16_128x256x64_s4_sw128_ws_wg2_tma_persistent_rm_g8",
            ("clusters_m", "clusters_n"),
            ("tile_m", "tile_n"),
        ),
    ],
)
def test_generated_tile_order_is_the_reference(
    name: str, counts_names: tuple[str, str], out: tuple[str, str]
) -> None:
    path = kernel_file(name)
    stmts = _producer_tile_lines(path)
    sched = build.read_spec(path).scheduler
    idx = "t" if name.startswith("sm100_") else "ct"
    for counts in [(5, 3), (8, 8), (13, 7), (1, 9)]:
        for t in range(counts[0] * counts[1]):
            names = {idx: t, counts_names[0]: counts[0], counts_names[1]: counts[1]}
            names["GROUP"] = sched.group
            # a cluster's CTA (cm, cn) adds its place; rank (0, 0) computes the cluster tile
            names |= {"cm": 0, "cn": 0, "cx": 0, "cy": 0, "CLUSTER": (2, 2, 1)}
            got = _run_tile_lines(stmts, names, out)
            assert got == tile_order(t, counts, sched.raster, sched.group), (name, t, counts)


def test_a_cluster_cta_computes_its_own_tile_of_the_cluster_tile() -> None:
    stmts = _producer_tile_lines(
        kernel_file("sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm")
    )
    for cm, cn in itertools.product(range(2), range(2)):
        names = {"t": 4, "clusters_m": 3, "clusters_n": 2, "cm": cm, "cn": cn, "CLUSTER": (2, 2, 1)}
        ctm, ctn = tile_order(4, (3, 2))
        assert _run_tile_lines(stmts, names, ("tm", "tn")) == (2 * ctm + cm, 2 * ctn + cn)


# ---- generated files hold what their scheduler needs ---------------------------------------------


def test_generated_files_hold_only_what_their_variant_needs() -> None:
    text = {n: (kernel_file(n)).read_text(encoding="utf-8") for n in SHIPPED}
    assert (
        "GROUP = 8" in text["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8"]
        and "mcast_mask" not in text["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8"]
    )
    assert (
        "GROUP = 4" in text["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4"]
        and "group_tiles = GROUP * tiles_m"
        in text["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4"]
    )
    mc = text["sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm"]
    assert "GROUP" not in mc and "group_tiles" not in mc
    assert "grid=(CLUSTER[0] * workers, CLUSTER[1], 1)" in mc
    assert "worker, workers = bm // CLUSTER[0], cute.arch.grid_dim()[0] // CLUSTER[0]" in mc
    # this CTA's own accumulator: no peer rank
    assert "cute.arch.mbarrier_arrive(acc_empty + slot)\n" in mc
    # the grid multicast kernel did not change: no worker, no accumulator release
    dyn = text["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"]
    assert dyn.count("cute.arch.issue_clc_query(clc_full, clc_response, multicast=False)") == 1
    assert dyn.count("wait_and_release_next_tile(") == 4  # its definition and three calls
    assert "grid=cute.ceil_div((*c.layout.shape, 1), TILER[:2])" in dyn  # the whole tile grid
    assert "sm_count" not in dyn and "num_tiles" not in dyn and "worker" not in dyn
    for name in STATIC + ["sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2"]:
        assert "clc" not in text[name] and "next_tile" not in text[name]
    for name in (
        "sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2",
        "sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32",
    ):
        sk = text[name]
        assert "k_begin = rank * k_tiles // SPLITS" in sk and "map_dsmem_ptr" in sk
        assert "for k in cutlass.range(k_begin, k_end, unroll=1):" in sk
        assert "grid=(CLUSTER[0] * workers, 1, 1)" in sk and "cluster=CLUSTER," in sk
        assert "mcast_mask" not in sk and "producer_tail" not in sk
    for name in STATIC + ["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"]:
        assert "SPLITS" not in text[name] and "nvvm" not in text[name]
    ladder6 = (kernel_file("sm100_f16_128x256x64_s4_sw128_ws_c2x2_tma_grid")).read_text(
        encoding="utf-8"
    )
    assert "worker" not in ladder6 and "acc_empty" not in ladder6


# ---- cross-compiled: the PTX shows each scheduler ------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    return build_named(SHIPPED, tmp_path_factory.mktemp("build"), jobs=2)


@pytest.mark.build
def test_shipped_variants_compile_with_their_expected_counts(
    built: dict[str, BuildResult],
) -> None:
    for name in SHIPPED:
        r = built[name]
        assert r.passed, (name, r.error or r.mismatches)
        assert r.spill_bytes == 0 and r.registers is not None and r.registers <= 255


@pytest.mark.build
def test_persistent_multicast_ptx(built: dict[str, BuildResult]) -> None:
    for name, ctas in (
        ("sm100_f16_128x256x64_s4_sw128_ws_acc2_c2x2_tma_persistent_rm", 4),
        ("sm100_f16_128x128x64_s7_sw128_ws_acc2_c2x1_direct_persistent_rm_g8", 2),
    ):
        c = built[name].counts
        assert c["TMA multicast"] == 2  # A's and B's slice, each box multicast
        assert c["barrier.cluster"] == 2  # arrive + wait once, after the barriers are initialized
        assert c["tcgen05.commit multicast"] == 1  # the stage release reaches every sharer
        assert c["mma cta_group::1"] == 4 and c["mma cta_group::2"] == 0
        # ring empty + full, acc_full, the producer tail over peers' commits, acc_empty + its tail
        assert c["mbarrier.try_wait"] == 6, name
        assert built[name].alloc_cols == [256 if ctas == 2 else 512]


@pytest.mark.build
def test_tile_swizzle_adds_no_synchronization(built: dict[str, BuildResult]) -> None:
    single, pair = (
        built["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8"].counts,
        built["sm100_f16_256x256x64_s6_sw128_ws_cta2_acc2_c2x1_tma_persistent_rn_g4"].counts,
    )
    # ring empty + full + the producer's tail, acc_full, acc_empty + its tail
    assert single["mbarrier.try_wait"] == 6 and single["barrier.cluster"] == 0
    assert pair["mbarrier.try_wait"] == 7 and pair["barrier.cluster"] == 2  # as ladder step 8
    assert pair["mma cta_group::2"] == 4 and single["TMA multicast"] == 0


@pytest.mark.build
def test_dynamic_scheduler_ptx(built: dict[str, BuildResult]) -> None:
    c = built["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"].counts
    assert c["clc try_cancel"] == 1  # one request site: the producer, once per tile
    assert c["clc is_canceled"] == 3  # the answer is read by the producer, the MMA, the epilogue
    assert c["clc first_ctaid"] == 4  # x and y, by the producer and the epilogue
    # persistent (6) + the producer's clc_empty wait + clc_full at the three reading sites
    assert c["mbarrier.try_wait"] == 6 + 1 + 3
    # the answer's read is fenced before its release, at the three reading sites
    assert c["fence.proxy.async"] == 3 + 4  # + the TMA-store epilogue's, one per sub-tile
    assert c["barrier.cluster"] == 0 and c["TMA multicast"] == 0
    # mbarrier.init: 2 x 4 ring + 2 x 2 accumulator + clc_full, clc_empty
    assert c["mbarrier.init"] == 8 + 4 + 2
    for name in STATIC + ["sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2"]:
        assert built[name].counts["clc try_cancel"] == 0, name
        assert built[name].counts["clc is_canceled"] == 0, name


@pytest.mark.build
def test_split_k_ptx(built: dict[str, BuildResult]) -> None:
    for name, peers, chunks in (
        ("sm100_f16_128x128x64_s5_sw128_ws_direct_splitk2", 1, 2),
        ("sm100_f16_128x64x64_s8_sw128_ws_acc2_direct_splitk4_mc32", 3, 1),
    ):
        c = built[name].counts
        # the start-up cluster barrier only: the per-tile handshake is two mbarriers
        assert c["barrier.cluster"] == 2, name
        # rank 0 reads each peer's 128 x N f32 partial: N / 4 16-byte DSMEM loads per thread
        assert c["ld.shared::cluster"] == peers * 64 * chunks // 4, name
        assert c["mapa"] == peers * chunks + peers + 1, name
        assert c["mbarrier acquire.cluster"] == 3 and c["mbarrier release.cluster"] == 1 + peers
        assert c["mma cta_group::1"] == 4 and c["mma cta_group::2"] == 0
        assert c["TMA multicast"] == 0 and c["tcgen05.commit multicast"] == 0
        assert c["tcgen05.ld"] == 2 * chunks  # a peer's and rank 0's epilogue branches
        assert c["st.global"] == 8 * chunks  # rank 0 alone stores: 64 f16 columns = 8 x 16 B
    assert built["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_persistent_rm_g8"].counts["mapa"] == 0
    assert (
        built["sm100_f16_128x256x64_s4_sw128_ws_acc2_tma_dynamic"].counts["ld.shared::cluster"] == 0
    )
