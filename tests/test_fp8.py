"""fp8 (e4m3) inputs on sm_90a: rules, plan numbers, and the generated launcher's tensor handling
on CPU tensors. Not yet run on a GPU."""

from __future__ import annotations

import pytest
from conftest import kernel_glob

from codegen import rules, rules_common
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm90.counts import expected_counts as expected_counts_sm90
from codegen.plan import plan
from codegen.spec import Spec

# the sm_90a e4m3 kernels
FP8_FILES = kernel_glob("sm90_e4m3*.py")


def fp8(tile: tuple[int, int, int] = (128, 256, 128), **knobs: object) -> Spec:
    """A resolved sm_90a e4m3 spec with a bf16 TMA-store epilogue."""
    base: dict[str, object] = {
        "arch": "sm_90a",
        "dtype": "e4m3",
        "tile": list(tile),
        "consumer_warpgroups": 2,
        "epilogue": {"style": "tma", "out_dtype": "bf16"},
        "scheduler": {"kind": "persistent", "group": 8},
    }
    return rules.resolve(Spec.model_validate(base | knobs))


def violations(spec: Spec) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(spec)]


def test_legal_fp8_specs() -> None:
    assert violations(fp8()) == []
    direct = fp8(
        (64, 128, 128),
        consumer_warpgroups=1,
        epilogue={"style": "direct", "out_dtype": "bf16"},
        scheduler="grid",
    )
    assert violations(direct) == []
    for out in ("f16", "f32"):
        assert violations(fp8(epilogue={"style": "direct", "out_dtype": out})) == []


def test_fp8_needs_an_out_dtype() -> None:
    got = violations(fp8(epilogue="tma"))
    assert got == [
        (
            "epilogue",
            (
                "dtype=e4m3 needs epilogue.out_dtype (the kernel does not write float8): "
                "legal: bf16, f16, f32"
            ),
        )
    ]


def test_fp8_k_rows_are_128_bytes_at_tile_k_128() -> None:
    assert rules_common.k_row_bytes(fp8()) == 128
    assert rules_common.mma_k("e4m3") == 32 and rules_common.mma_k("bf16") == 16
    assert rules_common.auto_swizzle(rules_common.k_row_bytes(fp8())) == "128B"
    # tile K=64 is 64-byte rows in e4m3: the swizzle rule names K=128 as the e4m3 SW128 choice
    got = violations(fp8((128, 256, 64), swizzle="128B"))
    assert (
        "swizzle",
        (
            "the sm_90a templates take K rows of one swizzle atom: 32 B with swizzle 32B, 64 B "
            "with 64B, 128 B with 128B (tile K = 16, 32, 64 for f16/bf16, 32, 64, 128 for "
            "e4m3); got tile K=64 (64 B rows) with swizzle=128B"
        ),
    ) in got
    assert violations(fp8((128, 256, 64), swizzle="64B")) == []


def test_fp8_tile_k_must_hold_whole_mmas() -> None:
    got = violations(fp8((128, 256, 48), swizzle="none"))
    assert ("tile", "tile K=48 must be a multiple of 32 (one MMA is 32 deep)") in got


def test_sm100_takes_fp8() -> None:
    # sm_100a e4m3 rules and kernels: tests/test_sm100_smallm.py
    spec = rules.resolve(
        Spec.model_validate(
            {
                "arch": "sm_100a",
                "dtype": "e4m3",
                "tile": [128, 128, 128],
                "epilogue": {"style": "direct", "out_dtype": "bf16"},
            }
        )
    )
    assert violations(spec) == []


def test_fp8_plan_numbers() -> None:
    spec = fp8()
    assert spec.stages == 4 and spec.swizzle == "128B"
    assert rules_common.mmas_per_stage(spec) == 4  # 128 bytes of K / 32 bytes per wgmma
    assert rules.tx_bytes(spec) == (128 + 256) * 128  # one byte per element
    assert rules.smem_bytes(spec, 4) == 230400 <= rules_common.SMEM_LIMIT_BYTES
    assert rules_sm90.shape_multiples(spec) == {"M": 1, "N": 8, "K": 16}
    # 2 cooperative warpgroups own one 64-row atom each: 4 wgmma per warpgroup per stage
    assert expected_counts_sm90(spec)["wgmma.mma_async"] == 4
    p = plan(spec)
    assert p.dtypes.io == "cutlass.Float8E4M3FN"
    assert p.dtypes.out == "cutlass.BFloat16"
    assert p.dtypes.torch == "torch.float8_e4m3fn"
    assert p.tile.mma_k == 32
    # the docstring's MMA: wgmma.mma_async m64n256k32, 1 per warpgroup per k-block
    assert (p.wgmma.m, p.wgmma.n, p.wgmma.atoms) == (64, 256, 1)
    small = fp8((64, 128, 128), consumer_warpgroups=1, epilogue="direct")
    assert expected_counts_sm90(small)["wgmma.mma_async"] == 4


def test_bf16_plan_unchanged_by_fp8() -> None:
    bf16 = fp8((128, 256, 64), dtype="bf16", epilogue="tma")
    assert rules_common.mmas_per_stage(bf16) == 4
    assert rules_sm90.shape_multiples(bf16) == {"M": 1, "N": 8, "K": 8}
    assert plan(bf16).tile.mma_k == 16


# ---- the generated launcher on CPU tensors -----------------------------------------------------


@pytest.fixture(scope="module")
def fp8_module():
    pytest.importorskip("cutlass")
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("this torch has no float8_e4m3fn")
    from codegen.build import load_module

    assert FP8_FILES, "no generated e4m3 kernel: run codegen render specs/"
    # a plain kernel (no workspace argument): the grid-scheduled 64x128 one
    name = "sm90_e4m3_64x128x128_s9_sw128_ws_wg1_direct_bf16_grid_pdl"
    plain = [f for f in FP8_FILES if f.stem == name]
    assert plain, f"{name} is not generated: run codegen render specs/"
    return load_module(plain[0])


def test_generated_fp8_constants(fp8_module) -> None:
    import cutlass

    assert fp8_module.IO_DTYPE is cutlass.Float8E4M3FN
    assert fp8_module.OUT_DTYPE is cutlass.BFloat16
    assert fp8_module.SHAPE_MULTIPLES["K"] == 16


def test_compile_args_are_fp8(fp8_module) -> None:
    import cutlass

    a, b, c, _ = fp8_module.compile_args()
    assert a.element_type is cutlass.Float8E4M3FN and b.element_type is cutlass.Float8E4M3FN
    assert c.element_type is cutlass.BFloat16


def test_from_dlpack_takes_torch_fp8(fp8_module) -> None:
    """The launcher passes float8_e4m3fn tensors to from_dlpack as they are: the CuTe tensor
    comes back typed Float8E4M3FN (no uint8 view needed with this DSL and torch)."""
    import cutlass
    import torch
    from cutlass.cute.runtime import from_dlpack

    a = torch.randn(64, 128).to(torch.float8_e4m3fn)
    t = from_dlpack(a, assumed_align=16).mark_layout_dynamic(leading_dim=1)
    assert t.element_type is cutlass.Float8E4M3FN


def test_launcher_checks_fp8_dtypes_and_k(fp8_module) -> None:
    import torch

    a = torch.zeros(64, 128, dtype=torch.bfloat16)
    b = torch.zeros(128, 128, dtype=torch.bfloat16)
    c = torch.zeros(64, 128, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="torch.float8_e4m3fn a and b and torch.bfloat16 c"):
        fp8_module.launcher(a, b, c)
    a8 = torch.zeros(64, 24, dtype=torch.float8_e4m3fn)
    b8 = torch.zeros(128, 24, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="K=24 is not a multiple of 16"):
        fp8_module.launcher(a8, b8, c)
