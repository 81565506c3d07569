"""Split-K with a separate reduce kernel (sm_90a, scheduler split_k, reduce = "separate").

The GEMM kernel runs one CTA per (tile, K share), no cluster, and stores f32 partials to a global
workspace of MAX_TILES tiles per split; a second kernel in the same file sums them in split order,
applies the epilogue and stores C. Rules, plan numbers, the generated files, the launcher's and
the AOT shim's capacity check, and (marked build) the PTX of the shipped variants.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from conftest import kernel_file

from codegen import build as b
from codegen import loader, render, rules
from codegen.arch import shared
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.counts import expected_counts as expected_counts_sm90
from codegen.export import render_shim
from codegen.plan import plan
from codegen.spec import Spec, SplitKScheduler

# shipped variants: name -> (canonical-name tail, splits, stages, ld.global, st.global)
SHIPPED = {
    "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk4_sep": (
        "swap_direct_splitk4_sep",
        4,
        18,
        4,
        16 + 1,
    ),
    "sm90_bf16_128x64x64_s9_sw128_ws_wg1_direct_f32_a0p5_b1p5_biasrow_gelu_tanh_splitk3_sep_mt1024": (
        "direct_f32_a0p5_b1p5_biasrow_gelu_tanh_splitk3_sep_mt1024",
        3,
        9,
        3 + 1 + 1,  # the splits, C (beta), the bias
        32 + 1,
    ),
    "sm90_bf16_64x16x64_s22_sw128_ws_wg1_swap_direct_a2_biascol_relu_splitk2_sep": (
        "swap_direct_a2_biascol_relu_splitk2_sep",
        2,
        22,
        2 + 1,
        8 + 1,
    ),
}


def separate(tile: tuple[int, int, int] = (64, 32, 64), **knobs: object) -> Spec:
    """A resolved sm_90a swap-AB decode spec with split_k reduce = "separate"."""
    sched = {"kind": "split_k", "splits": 4, "reduce": "separate"} | knobs.pop("sched", {})
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "swizzle": "128B",
        "tile": list(tile),
        "consumer_warpgroups": 1,
        "swap_ab": True,
        "epilogue": "direct",
        "scheduler": sched,
    }
    return rules.resolve(Spec.model_validate(base | knobs))


def violations(spec: Spec) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(spec)]


# ---- spec ---------------------------------------------------------------------------------------


def test_defaults_leave_the_dump_and_hash_alone() -> None:
    """reduce = "cluster" and max_tiles = None are left out of the dump: the split-K kernels
    shipped before the knob keep their SPEC dicts and spec hashes."""
    cluster = Spec.model_validate({"tile": [64, 16, 64], "scheduler": "split_k"})
    assert cluster.model_dump()["scheduler"] == {
        "kind": "split_k",
        "splits": 2,
        "max_clusters": None,
    }
    assert cluster.scheduler.reduce == "cluster"
    old = Spec.model_validate(cluster.model_dump())  # validation restores the defaults
    assert old == cluster and old.spec_hash() == cluster.spec_hash()
    sep = separate(sched={"max_tiles": 64})
    assert sep.model_dump()["scheduler"] == {
        "kind": "split_k",
        "splits": 4,
        "max_clusters": None,
        "reduce": "separate",
        "max_tiles": 64,
    }
    assert sep.spec_hash() != separate().spec_hash()


def test_canonical_names() -> None:
    assert (
        separate().canonical_name() == "sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk4_sep"
    )
    assert separate(sched={"max_tiles": 64}).canonical_name().endswith("_splitk4_sep_mt64")


# ---- rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize("splits", [2, 3, 5, 16])
def test_any_split_count_up_to_16(splits: int) -> None:
    assert violations(separate(sched={"splits": splits})) == []


def test_too_many_splits() -> None:
    ((field, message),) = violations(separate(sched={"splits": 17}))
    assert field == "scheduler"
    assert message == (
        'split_k splits=17 with reduce = "separate": the reduce kernel unrolls its sum over the '
        "splits; legal: 2 to 16"
    )


def test_cluster_reduce_keeps_its_power_of_two_rule() -> None:
    ((field, message),) = violations(separate(sched={"splits": 3, "reduce": "cluster"}))
    assert field == "scheduler" and message.endswith("legal: 2, 4, 8")


def test_max_tiles_belongs_to_the_separate_reduce() -> None:
    ((field, message),) = violations(separate(sched={"reduce": "cluster", "max_tiles": 8}))
    assert field == "scheduler"
    assert message.startswith("split_k max_tiles=8 sizes the workspace of reduce")


def test_max_clusters_belongs_to_the_cluster_reduce() -> None:
    ((field, message),) = violations(separate(sched={"max_clusters": 8}))
    assert field == "scheduler"
    assert message.startswith("split_k max_clusters=8 caps the persistent clusters")
    assert message.endswith("remove max_clusters")


def test_workspace_offsets_stay_32_bit() -> None:
    # 4 splits x 2048 f32 per tile: 262143 tiles is the most under 2^31 words
    assert violations(separate(sched={"max_tiles": 262143})) == []
    ((field, message),) = violations(separate(sched={"max_tiles": 262144}))
    assert field == "scheduler"
    assert message.endswith("legal: max_tiles 1 to 262143")


def test_separate_needs_no_cluster_and_the_direct_epilogue() -> None:
    ((field, message),) = violations(separate(cluster=[2, 1]))
    assert field == "cluster"
    assert message.startswith('cluster 2x1 with split_k reduce = "separate" is not implemented')
    ((field, message),) = violations(separate((64, 64, 64), swap_ab=False, epilogue="tma"))
    assert field == "epilogue"
    assert message == (
        "epilogue 'tma' with split_k reduce = \"separate\" is not implemented (the reduce kernel "
        "stores C with direct, predicated stores); legal: direct"
    )


def test_sm100_cluster_reduce_takes_no_max_tiles() -> None:
    # sm_100a implements reduce = "separate" too (tests/test_sm100_splitk_separate.py)
    base = {"tile": [128, 128, 64]}
    s = rules.resolve(
        Spec.model_validate(base | {"scheduler": {"kind": "split_k", "max_tiles": 8}})
    )
    ((field, message),) = violations(s)
    assert field == "scheduler" and message.endswith("remove max_tiles")


# ---- SMEM and workspace -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tile", "cluster_stages", "stages"), [((64, 16, 64), 22, 22), ((64, 64, 64), 13, 14)]
)
def test_no_staging_buffer(tile: tuple[int, int, int], cluster_stages: int, stages: int) -> None:
    """No DSMEM staging and no handshake barriers: the ring may be as deep as without split-K."""
    s = separate(tile)
    assert rules_sm90.splitk_staging_bytes(s) == 0
    assert rules_sm90.barrier_bytes(s, 4) == 8 * 8
    assert s.stages == stages
    assert separate(tile, sched={"reduce": "cluster", "splits": 2}).stages == cluster_stages


@pytest.mark.parametrize(
    ("tile", "splits", "max_tiles", "tiles", "elems"),
    [
        ((64, 32, 64), 4, None, 4096, 4 * 4096 * 2048),  # 2^23 / (64 x 32)
        ((64, 16, 64), 2, None, 8192, 2 * 8192 * 1024),
        ((128, 64, 64), 3, 1024, 1024, 3 * 1024 * 8192),
    ],
)
def test_workspace_size(
    tile: tuple[int, int, int], splits: int, max_tiles: int | None, tiles: int, elems: int
) -> None:
    s = separate(tile, sched={"splits": splits, "max_tiles": max_tiles})
    assert shared.splitk_max_tiles(s) == tiles
    assert shared.separate_workspace_elems(s) == elems
    v = plan(s).values
    assert v.tensors.workspace_elems == elems
    assert v.tensors.host == ["workspace"] and v.tensors.launch == ["workspace"]


# ---- plan ----------------------------------------------------------------------------------------


def test_slots_are_laid_out_like_c() -> None:
    """Row-major slots for C, column-major for C^T (swap AB): the reduce kernel's 16-byte vectors
    run along C's contiguous direction in both the slot and C."""
    swap = plan(separate()).values
    assert swap.separate.slot_shape == (64, 32, 4096, 4)
    assert swap.separate.slot_stride == (1, 64, 2048, 4096 * 2048)
    assert swap.separate.vec_slot_shape == (4, 512, 4096, 4)
    assert swap.separate.vec_slot_stride == (1, 4, 2048, 4096 * 2048)
    assert (swap.separate.vec_tiler, swap.separate.vecs_along, swap.separate.vec_axis) == (
        (4, 1),
        16,
        "row",
    )
    assert swap.separate.c_tile == (32, 64)  # rows and columns of the user's C
    assert (swap.partial.vec, swap.partial.bits) == (1, 32)
    assert swap.separate.vecs_per_thread == 4  # 2048 / (4 x 128)
    plain = plan(separate((128, 64, 64), swap_ab=False, sched={"splits": 3})).values
    assert plain.separate.slot_stride == (64, 1, 8192, 1024 * 8192)
    assert (plain.separate.vec_tiler, plain.separate.vecs_along, plain.separate.vec_axis) == (
        (1, 4),
        16,
        "column",
    )
    assert plain.separate.c_tile == (128, 64)
    assert (plain.partial.vec, plain.partial.bits) == (2, 64)
    assert plain.separate.vecs_per_thread == 16


@pytest.mark.parametrize(
    ("swap", "bias", "along"), [(True, "col", True), (True, "row", False), (False, "col", True)]
)
def test_bias_vector_or_scalar(swap: bool, bias: str, along: bool) -> None:
    """A bias along the reduce vector's axis is one vector load; across it, one value."""
    tile = (64, 32, 64) if swap else (128, 64, 64)
    s = separate(tile, swap_ab=swap, epilogue={"style": "direct", "bias": bias})
    assert plan(s).values.separate.bias_along_vec is along


def test_expected_counts() -> None:
    got = expected_counts_sm90(separate())
    assert got["ld.global"] == 4  # one 16-byte partial vector per split
    assert got["st.global"] == 16 + 1  # 16 scalar partial stores (swap AB) + one C vector
    for key in ("barrier.cluster", "mapa", "ld.shared::cluster", "mbarrier acquire.cluster"):
        assert got[key] == 0, key
    fused = separate(
        (128, 64, 64),
        swap_ab=False,
        epilogue={"style": "direct", "beta": 1.0, "bias": "row", "activation": "silu"},
        sched={"splits": 3},
    )
    got = expected_counts_sm90(fused)
    assert got["ld.global"] == 3 + 1 + 1
    assert got["st.global"] == 64 // 2 + 1
    assert got["ex2"] == 4 and got["max.f32"] == 0


def test_docstring_explains_the_workspace() -> None:
    docs = render.environment().get_template("sm90/_docs.py.j2")
    text = docs.make_module({"plan": plan(separate())}).pipeline()
    assert "Workspace: 4 splits x MAX_TILES = 4096 x 8 KiB slots" in text
    assert "rejected by launcher() and by the AOT shim" in text


# ---- generated files -----------------------------------------------------------------------------


def test_variants_are_shipped() -> None:
    specs = {s.name: s for s in loader.load([Path(__file__).parent.parent / "specs"])}
    for name, (tail, splits, stages, _, _) in SHIPPED.items():
        s = specs[name].spec
        assert isinstance(s.scheduler, SplitKScheduler)
        assert s.scheduler.reduce == "separate" and s.scheduler.splits == splits
        assert s.stages == stages and s.canonical_name().endswith(tail), s.canonical_name()
        assert (kernel_file(name)).is_file(), f"{name}.py: run `codegen render specs/`"


def test_generated_file_launches_both_kernels_in_order() -> None:
    for name in SHIPPED:
        text = (kernel_file(name)).read_text(encoding="utf-8")
        host = text[text.index("\ndef gemm(") :]
        assert host.index("gemm_kernel(") < host.index("reduce_kernel(")
        assert "grid=(clusters * SPLITS, 1, 1)" in host and "cluster=" not in host
        assert "clusters = cutlass.min(cluster_tiles, MAX_TILES)" in host
        # only what the variant needs: no DSMEM reduction, no cluster barrier
        for needle in ("wait_cluster_acquire", "map_dsmem_ptr", "cluster_arrive", "nvvm"):
            assert needle not in text, (name, needle)
        assert "torch.empty(WORKSPACE_ELEMS" in text and "tiles > MAX_TILES" in text


def _load(name: str):
    path = kernel_file(name)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launcher_rejects_more_tiles_than_the_workspace_holds() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("cutlass")
    mod = _load("sm90_bf16_64x32x64_s18_sw128_ws_wg1_swap_direct_splitk4_sep")
    assert mod.MAX_TILES == 4096 and mod.C_TILE == (32, 64)
    m, k = 256, 64
    a = torch.empty(m, k, dtype=torch.bfloat16)
    # 8 x 512 = 4096 tiles of 32 x 64 fit; a transposed `a` makes this call fail before any
    # launch, with every other problem listed (the checks run on CPU tensors)
    ok_b = torch.empty(32768, k, dtype=torch.bfloat16)
    a_t = torch.empty(k, m, dtype=torch.bfloat16).T
    with pytest.raises(ValueError) as fits:
        mod.launcher(a_t, ok_b, torch.empty(m, 32768, dtype=torch.bfloat16))
    assert "a must have last stride 1" in str(fits.value) and "MAX_TILES" not in str(fits.value)
    b = torch.empty(32768 + 8, k, dtype=torch.bfloat16)  # one more column of tiles: 4104
    with pytest.raises(ValueError, match=r"make 4104 output tiles of 32x64; the split-K "):
        mod.launcher(a, b, torch.empty(m, 32768 + 8, dtype=torch.bfloat16))


def test_shim_checks_the_capacity() -> None:
    from codegen.export import Header, TensorStruct

    args = ("a", "b", "c", "workspace")
    header = Header(
        prefix="k",
        error_macro="ERR",
        module_type="M",
        module_load="load",
        wrapper="w",
        wrapper_return="int32_t",
        wrapper_args=[(f"k_Tensor_{t}_t *", t) for t in args] + [("cudaStream_t", "stream")],
        structs={t: TensorStruct(arg=t, type_name=f"k_Tensor_{t}_t") for t in args},
    )
    slots = {t: {"shapes": [], "strides": []} for t in args}
    shim = render_shim("k", header, slots, {}, None, 4 * 1024, (32, 64, 4096))
    assert "(long long)((m - 1) / 32 + 1) * ((n - 1) / 64 + 1) > 4096" in shim
    assert "split-K workspace (4096 bytes: f32 partial tiles of at most 4096 tiles)" in shim
    # the shim owns the workspace: allocated on the first call (the first GPU run of the AOT
    # library crashed with an illegal address because only stream-K's branch allocated it)
    assert "shim_load_error = cudaMalloc(&shim_workspace, 4096u);" in shim
    assert "> 4096" not in render_shim("k", header, slots, {}, None, 4 * 1024)


@pytest.mark.build
def test_build_counts(tmp_path: Path) -> None:
    files = [kernel_file(name) for name in sorted(SHIPPED)]
    results = {r.name: r for r in b.build(files, tmp_path / "build", jobs=1)}
    for name, (_, _, _, loads, stores) in SHIPPED.items():
        r = results[name]
        assert r.passed, r.error or r.mismatches
        assert r.spill_bytes == 0
        c = r.counts
        assert c["ld.global"] == loads and c["st.global"] == stores
        assert c["barrier.cluster"] == 0 and c["mapa"] == 0 and c["ld.shared::cluster"] == 0
        assert c["cp.async.bulk.tensor"] == 2 and c["TMA multicast"] == 0
