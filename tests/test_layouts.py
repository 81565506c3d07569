"""Operand major modes (a_major, b_major): the knob, its rules on each architecture, the plan's
layouts group, the expected TMA counts, the kernels' SPEC and the package's dispatch and refusals
(on the CPU; `codegen test --only '*_amn_*,*_bmn_*'` checks the numbers on a GPU)."""

from __future__ import annotations

import ast

import pytest
from conftest import kernel_file, kernel_glob, shipped

from codegen import plan_common, registry, rules
from codegen.arch.sm90 import counts as counts_sm90
from codegen.arch.sm100 import counts as counts_sm100
from codegen.spec import Spec


def spec(**knobs) -> Spec:
    base = {"arch": "sm_90a", "dtype": "bf16", "tile": [128, 128, 64], "swizzle": "128B"}
    base |= {"consumer_warpgroups": 1} if knobs.get("arch", "sm_90a") == "sm_90a" else {}
    return rules.resolve(Spec.model_validate(base | knobs))


def fields(violations) -> list[str]:
    return [v.field for v in violations]


# ---- the knob ------------------------------------------------------------------------------------


def test_the_default_is_left_out_of_spec_and_the_hash() -> None:
    plain = spec()
    assert "a_major" not in plain.knobs() and "b_major" not in plain.knobs()
    assert spec(a_major="k", b_major="k").spec_hash() == plain.spec_hash()
    mn = spec(b_major="mn")
    assert mn.knobs()["b_major"] == "mn" and "a_major" not in mn.knobs()
    assert mn.spec_hash() != plain.spec_hash()
    assert mn.canonical_name().endswith("_bmn_direct_grid")
    assert "_amn_bmn_" in spec(a_major="mn", b_major="mn").canonical_name()


def test_every_shipped_k_major_kernel_prints_no_major_mode() -> None:
    for path in kernel_glob():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        spec_dict = next(
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SPEC"
        )
        for knob in ("a_major", "b_major"):
            assert spec_dict.get(knob, "mn") == "mn", (path.name, knob)


# ---- rules ---------------------------------------------------------------------------------------


def test_hopper_takes_mn_major_16_bit_operands() -> None:
    for dtype in ("bf16", "f16"):
        for a, b in (("k", "mn"), ("mn", "k"), ("mn", "mn")):
            assert rules.check(spec(dtype=dtype, a_major=a, b_major=b)) == [], (dtype, a, b)


def test_hopper_refuses_mn_major_e4m3_naming_the_fix() -> None:
    s = spec(
        dtype="e4m3",
        tile=[128, 128, 128],
        b_major="mn",
        epilogue={"style": "direct", "out_dtype": "bf16"},
    )
    (v,) = rules.check(s)
    assert v.field == "b_major"
    assert "16-bit types" in v.message and "pass K-major operands" in v.message


def test_an_mn_major_operand_needs_whole_128_byte_atoms() -> None:
    (v,) = rules.check(spec(tile=[128, 96, 64], b_major="mn"))
    assert v.field == "b_major" and "multiple of 64, got 96" in v.message
    # swap AB: the user's A is the kernel's B (tile N); its B the kernel's A (tile M)
    (v,) = rules.check(spec(tile=[64, 32, 64], swap_ab=True, a_major="mn"))
    assert v.field == "a_major" and "the kernel's B" in v.message
    assert rules.check(spec(tile=[64, 32, 64], swap_ab=True, b_major="mn")) == []
    # two wgmma atoms along N: each atom's N holds whole atoms
    assert rules.check(spec(tile=[128, 384, 64], consumer_warpgroups=2, b_major="mn")) == []


def test_blackwell_takes_mn_major_e4m3_but_no_multicast() -> None:
    fp8 = spec(
        arch="sm_100a",
        dtype="e4m3",
        tile=[128, 128, 128],
        b_major="mn",
        epilogue={"style": "tma", "out_dtype": "bf16"},
    )
    assert rules.check(fp8) == []
    pair = spec(arch="sm_100a", tile=[256, 256, 64], cta_group=2, cluster=[2, 1], a_major="mn")
    assert rules.check(pair) == []
    mcast = spec(arch="sm_100a", tile=[128, 256, 64], cluster=[2, 1], b_major="mn")
    assert "cluster" in fields(rules.check(mcast))


def test_light_kernels_refuse_mn_major() -> None:
    light = spec(
        tile=[64, 8, 32],
        stages=2,
        swizzle="none",
        consumer_warpgroups=None,
        mainloop="light",
        warps=4,
        swap_ab=True,
        a_major="mn",
    )
    (v,) = rules.check(light)
    assert v.field == "a_major" and "K-major operands only" in v.message


# ---- the plan ------------------------------------------------------------------------------------


def test_swap_ab_exchanges_the_kernels_major_modes() -> None:
    plain = plan_common.layouts(spec(b_major="mn"))
    assert (plain.mma_a, plain.mma_b) == ("K", "MN")
    assert (plain.smem_a, plain.smem_b) == ("ROW_MAJOR", "COL_MAJOR")
    assert (plain.a_leading, plain.b_leading) == (1, 0) and plain.b_order == (0, 1)
    swapped = plan_common.layouts(spec(tile=[64, 64, 64], swap_ab=True, b_major="mn"))
    assert (swapped.mma_a, swapped.mma_b) == ("MN", "K")
    # the user's tensors are as they were: b N-major
    assert (swapped.a_leading, swapped.b_leading) == (1, 0)
    assert plan_common.layouts(spec()).default and not plain.default


def test_an_m_major_a_needs_m_a_multiple_of_16_bytes() -> None:
    values = registry.for_spec(spec(a_major="mn")).plan(spec(a_major="mn")).values
    assert values.tile.shape_multiples == {"M": 8, "N": 8, "K": 8}
    assert values.layouts.m_divisibility == 8
    fp8 = spec(
        arch="sm_100a",
        dtype="e4m3",
        tile=[128, 128, 128],
        a_major="mn",
        b_major="mn",
        epilogue={"style": "tma", "out_dtype": "bf16"},
    )
    values = registry.for_spec(fp8).plan(fp8).values
    assert values.tile.shape_multiples["M"] == 16 and values.layouts.n_divisibility == 16


# ---- expected counts -----------------------------------------------------------------------------


def test_an_mn_major_operand_loads_one_tma_box_per_atom() -> None:
    # sm_90a: A K-major (one box), B N-major 256 columns (four 64-column boxes)
    s = spec(tile=[128, 256, 64], consumer_warpgroups=2, b_major="mn")
    assert counts_sm90.operand_sites(s) == (1, 4)
    assert counts_sm90.expected_counts(s)["cp.async.bulk.tensor"] == 5
    # multicast along M: B's slice is a K band of every atom, each its own multicast site
    mc = spec(tile=[128, 256, 64], consumer_warpgroups=2, cluster=[2, 1], b_major="mn")
    assert counts_sm90.expected_counts(mc)["TMA multicast"] == 4
    # K-major operands: as before
    assert counts_sm90.operand_sites(spec()) == (1, 1)
    # sm_100a CTA pair: each CTA holds 128 rows of B, two atoms
    pair = spec(arch="sm_100a", tile=[256, 256, 64], cta_group=2, cluster=[2, 1], b_major="mn")
    assert counts_sm100.operand_loads(pair) == (1, 2)


@pytest.mark.parametrize(
    "name",
    [
        "sm90_bf16_128x128x64_s7_sw128_ws_wg1_bmn_direct_grid",
        "sm90_bf16_128x256x64_s4_sw128_ws_wg2_amn_bmn_tma_persistent_rm",
        "sm100_bf16_128x128x64_s6_sw128_ws_amn_tma_grid",
    ],
)
def test_a_shipped_kernel_states_its_operands_layouts(name: str) -> None:
    text = kernel_file(name).read_text(encoding="utf-8")
    assert "operands: a (M, K)" in text  # the docstring's Parameters
    assert "OperandMajorMode.MN" in text
    assert "stride_order=order" in text and "(0, 1)" in text  # compile_args' fakes


# ---- the package ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime():
    return shipped("_runtime")


PLAIN = ("bf16", "bf16", 1.0, 0.0, None, None)


def test_the_registry_lists_each_kernels_major_modes(runtime) -> None:
    from cutegemm import KERNELS

    majors = {k.name: (k.a_major, k.b_major) for k in KERNELS}
    assert majors["sm90_bf16_128x128x64_s7_sw128_ws_wg1_bmn_direct_grid"] == ("k", "mn")
    assert majors["sm90_bf16_128x256x64_s4_sw128_ws_wg2_amn_bmn_tma_persistent_rm"] == ("mn", "mn")
    assert majors["sm90_bf16_128x128x64_s7_sw128_ws_wg1_direct_grid"] == ("k", "k")
    # K-major calls never reach an MN-major kernel
    for kernels in runtime._BY_CLASS.values():
        assert all(k.a_major == k.b_major == "k" for k in kernels)


def test_the_dispatcher_picks_a_kernel_of_the_operands_layout(runtime) -> None:
    for layout in (("k", "mn"), ("mn", "mn"), ("mn", "k")):
        for gpu, arch in (("NVIDIA H200", "sm_90a"), ("NVIDIA B200", "sm_100a")):
            kern = runtime._choose(gpu, arch, PLAIN, 4096, 4096, 4096, layout=layout)
            assert (kern.a_major, kern.b_major) == layout and kern.arch == arch
    kern = runtime.kernel_for(16, 4096, 4096, gpu="NVIDIA H200", b_major="mn")
    assert kern.b_major == "mn"


def test_a_layout_no_kernel_takes_is_refused_naming_the_fix(runtime) -> None:
    fp8 = ("e4m3", "bf16", 1.0, 0.0, None, None)
    with pytest.raises(runtime.GemmError, match=r"takes b N-major.*16-bit types only") as err:
        runtime._choose("NVIDIA H200", "sm_90a", fp8, 64, 4096, 4096, layout=("k", "mn"))
    assert "b.contiguous()" in str(err.value) and "nothing was launched" in str(err.value)
    fused = ("bf16", "bf16", 1.0, 0.0, "silu", "col")
    with pytest.raises(runtime.GemmError, match=r"takes a M-major.*a.contiguous\(\)"):
        runtime._choose("NVIDIA H200", "sm_90a", fused, 64, 4096, 4096, layout=("mn", "k"))


def test_the_operands_layout_is_read_from_the_strides(runtime) -> None:
    import torch

    x = torch.empty(256, 64, dtype=torch.bfloat16)  # (K, M) row-major
    w = torch.empty(256, 128, dtype=torch.bfloat16)  # (K, N) row-major: x.t() @ w
    assert runtime._major(x.t()) == "mn" and runtime._major(w.t()) == "mn"
    assert runtime._major(x) == "k"
    assert runtime._major(torch.empty(64, 256, dtype=torch.bfloat16)[:, ::2]) is None
    # the backward's choice from strides alone: dB = dD^T @ A reads dD.t() and A.t()
    assert runtime._natural_major(w.t()) == "mn" and runtime._natural_major(w) == "k"
    padded = runtime._backward_operand(torch.zeros(8, 128, dtype=torch.bfloat16).t(), "mn")
    assert padded.shape == (128, 16) and runtime._natural_major(padded) == "mn"


def test_a_transposed_operand_on_the_cpu_is_still_a_gemm_error(runtime) -> None:
    import torch

    x = torch.randn(64, 256, dtype=torch.bfloat16)
    w = torch.randn(256, 128, dtype=torch.bfloat16)
    with pytest.raises(runtime.GemmError, match=r"one CUDA device"):
        runtime.gemm(x, w.t())


def test_a_kernels_launcher_checks_its_operands_layouts() -> None:
    pytest.importorskip("cutlass")
    import torch

    from codegen import build

    module = build.load_module(
        kernel_file("sm90_bf16_128x256x64_s4_sw128_ws_wg2_amn_bmn_tma_persistent_rm")
    )
    x = torch.zeros(256, 64, dtype=torch.bfloat16)  # (K, M)
    w = torch.zeros(256, 128, dtype=torch.bfloat16)  # (K, N)
    c = torch.zeros(64, 128, dtype=torch.bfloat16)
    # the kernel's layouts on the CPU: refused for the device alone
    with pytest.raises(ValueError, match=r"cannot run this call") as err:
        module.launcher(x.t(), w.t(), c)
    assert "CUDA device" in str(err.value) and "stride" not in str(err.value)
    # K-major operands: refused, naming the layout each needs
    with pytest.raises(ValueError) as err:
        module.launcher(x.t().contiguous(), w.t().contiguous(), c)
    assert "a must have stride 1 along dimension 0" in str(err.value)
    assert "b must have stride 1 along dimension 0" in str(err.value)
    # M-major a: M a multiple of 8
    odd = torch.zeros(256, 66, dtype=torch.bfloat16)[:, :63]
    with pytest.raises(ValueError, match=r"M=63 is not a multiple of 8"):
        module.launcher(odd.t(), w.t(), torch.zeros(63, 128, dtype=torch.bfloat16))
