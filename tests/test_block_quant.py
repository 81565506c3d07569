"""block_quant (epilogue.block_quant) on the CPU: the spec knob and its name, what is refused
(spec and rules), the rendered kernels and the package's registry, the PTX counts the build
asserts, the launcher's and the package's refusals, and the GPU test's reference and check. The
spec-file errors as a user sees them are tests/snapshots/block_quant.txt (test_errors.py); the
numbers are the GPU test's (`codegen test --only '*bq*'`: D * scale and the scales against a
float32 reference, poisoned outputs, a second launch bitwise the same)."""

from __future__ import annotations

import sys

import pytest
from conftest import GENERATED, kernel_glob

from codegen import rules
from codegen.build import read_spec
from codegen.plan import expected_counts
from codegen.spec import Spec

BQ = kernel_glob("*_bq128_*.py")
EPI = {"style": "direct", "out_dtype": "e4m3", "block_quant": 128}
# the sm_100a knobs over _spec's sm_90a base
SM100 = {"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2, "warp_specialized": True}
SCALE_ROWWISE = {"ref": "f.py:scale_rowwise", "digest": "0",
                 "args": [["acc", "acc"], ["a", "row"], ["b", "col"]]}  # fmt: skip


def _spec(**knobs: object) -> Spec:
    base: dict = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "tile": [128, 128, 64],
        "consumer_warpgroups": 2,
        "stages": 4,
        "swizzle": "128B",
        "epilogue": EPI,
    }
    return Spec.model_validate({**base, **knobs})


def _cutegemm():
    sys.path.insert(0, str(GENERATED))
    try:
        import cutegemm
    finally:
        sys.path.remove(str(GENERATED))
    return cutegemm


def test_the_knob_names_the_kernel_and_leaves_other_hashes_alone() -> None:
    spec = _spec()
    assert spec.canonical_name().endswith("_direct_e4m3_bq128_grid")
    assert spec.knobs()["epilogue"]["block_quant"] == 128
    plain = Spec.model_validate({"tile": [128, 128, 64]})
    # a kernel without it keeps its SPEC dict (and hash) as before: no "block_quant" key
    assert "block_quant" not in plain.knobs()["epilogue"]
    assert Spec.model_validate(spec.knobs()).spec_hash() == spec.spec_hash()


@pytest.mark.parametrize(
    ("epilogue", "message"),
    [
        ({"block_quant": 64}, "block_quant=64 is not implemented.*legal: block_quant = 128"),
        ({"out_dtype": "bf16"}, 'needs out_dtype = "e4m3", got bf16'),
        ({"block_quant": None}, 'out_dtype = "e4m3" needs block_quant = 128'),
        ({"alpha": 2.0}, "block_quant with alpha is not implemented"),
        ({"bias": "col", "activation": "relu"}, "block_quant with activation, bias is not"),
        ({"row_sumsq": True}, "block_quant with row_sumsq is not implemented"),
        ({"fn": {"ref": "f.py:swiglu", "args": [["g", "gate"], ["u", "up"]], "digest": "0"}},
         "gated pair swiglu"),
    ],
)  # fmt: skip
def test_the_spec_refuses(epilogue: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(epilogue={**EPI, **epilogue})


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"scheduler": {"kind": "split_k", "splits": 2}}, "with scheduler split_k (splits=2)"),
        ({"scheduler": "stream_k"}, "with scheduler stream_k"),
        ({"epilogue": {**EPI, "style": "tma"}},
         'in the tma epilogue on sm_90a; legal with block_quant: style "direct"'),
        ({"swap_ab": True}, "not implemented with swap_ab"),
        ({"tile": [128, 64, 64]}, "tile N=64 is not a multiple of 128"),
        ({"tile": [128, 192, 64]}, "tile N=192 is not a multiple of 128"),
        # sm_100a: the direct epilogue only, a whole accumulator row per thread, whole tiles
        ({**SM100, "epilogue": {**EPI, "style": "tma"}},
         'in the tma epilogue on sm_100a; legal with block_quant: style "direct"'),
        ({**SM100, "tile": [64, 128, 64]},
         "tile M=64 with cta_group 1 gives half rows (16x32bx2); legal: 128 rows per CTA"),
        ({**SM100, "scheduler": "stream_k"}, "with scheduler stream_k"),
        ({**SM100, "swap_ab": True}, "not implemented with swap_ab"),
        ({**SM100, "tile": [128, 64, 64]}, "tile N=64 is not a multiple of 128"),
    ],
)  # fmt: skip
def test_the_rules_refuse(knobs: dict, message: str) -> None:
    found = [v for v in rules.check(_spec(**knobs)) if v.field == "epilogue.block_quant"]
    assert len(found) == 1 and message in found[0].message, found


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"tile": [128, 256, 64]},
        {"tile": [128, 384, 64], "consumer_warpgroups": 2, "stages": 2},
        {"consumer_mode": "pingpong", "tile": [64, 128, 64], "scheduler": "persistent"},
        {"dtype": "e4m3", "tile": [128, 128, 128], "epilogue": {**EPI, "fn": SCALE_ROWWISE}},
        # sm_100a: one whole accumulator row per epilogue thread (128 rows per CTA)
        {**SM100},
        {**SM100, "tile": [128, 256, 64], "scheduler": "persistent", "accumulators": 2},
        {**SM100, "tile": [128, 256, 64], "scheduler": "dynamic"},
        {**SM100, "tile": [256, 256, 64], "cta_group": 2, "cluster": [2, 1]},
        {**SM100, "dtype": "e4m3", "tile": [128, 128, 128],
         "epilogue": {**EPI, "fn": SCALE_ROWWISE}},
    ],
)  # fmt: skip
def test_what_is_implemented_passes_the_rules(knobs: dict) -> None:
    assert rules.check(_spec(**knobs)) == []


@pytest.mark.parametrize(
    ("knobs", "shfl", "stores", "cvt", "div"),
    [
        # 128x128, two warpgroups: 2 rows per thread, one block, 2 butterfly steps; 32 pair
        # stores of D and 2 scales; one conversion per pair; a scale and its inverse per row
        ({}, 4, 32 + 2, 32, 4),
        # 128x256: two blocks per row
        ({"tile": [128, 256, 64]}, 8, 64 + 4, 64, 8),
        # ping-pong 64x128: each warpgroup a whole tile, 2 rows per thread
        ({"consumer_mode": "pingpong", "tile": [64, 128, 64], "scheduler": "persistent"},
         4, 32 + 2, 32, 4),
        # sm_100a 128x128: a thread holds a whole row, no shuffles; 8 16-byte vectors of D
        # and one scale; 64 conversions of its 128 values; a scale and its inverse
        ({**SM100}, 0, 8 + 1, 64, 2),
        # 128x256: two blocks of the row, each its scale and two divisions
        ({**SM100, "tile": [128, 256, 64]}, 0, 16 + 2, 128, 4),
        # a CTA pair 256x256: each CTA's thread a row of 256 columns, as 128x256
        ({**SM100, "tile": [256, 256, 64], "cta_group": 2, "cluster": [2, 1]},
         0, 16 + 2, 128, 4),
    ],
)  # fmt: skip
def test_the_build_asserts_the_quantization(
    knobs: dict, shfl: int, stores: int, cvt: int, div: int
) -> None:
    counts = expected_counts(_spec(**knobs))
    got = (
        counts["shfl.sync.bfly"],
        counts["st.global"],
        counts["cvt e4m3x2"],
        counts["div.rn.f32"],
    )
    assert got == (shfl, stores, cvt, div)


def test_the_kernels_and_the_registry() -> None:
    cutegemm = _cutegemm()
    assert len(BQ) >= 3
    assert {read_spec(p).arch for p in BQ} == {"sm_90a", "sm_100a"}
    names = {k.name for k in cutegemm.KERNELS if k.block_quant is not None}
    assert names == {p.stem for p in BQ}
    for path in BQ:
        spec = read_spec(path)
        kern = cutegemm.kernel(path.stem)
        assert (kern.block_quant, kern.out_dtype) == (128, "e4m3")
        # float8 rows of C are 16-byte aligned with N a multiple of 16 (sm_100a: whole tiles)
        assert kern.shape_multiples[1] == (16 if spec.arch == "sm_90a" else spec.tile.n)
        # ... and the compiled function's N symbol says so: C's stores are 16-byte vectors
        assert "m, n, k = cute.sym_int32(), cute.sym_int32(divisibility=16)," in path.read_text(
            encoding="utf-8"
        )
        assert spec.epilogue.block_quant == 128
        for n, blocks in ((16, 1), (128, 1), (144, 2), (1000, 8), (4096, 32)):
            assert cutegemm.scale_block_count(path.stem, n) == blocks
        text = path.read_text(encoding="utf-8")
        assert "scale_block_count" in text and "BLOCK = 128" in text
    source = (GENERATED / "cutegemm" / "_runtime.py").read_text(encoding="utf-8")
    # never dispatched to, never an FP8-scale pick: gemm_fn / gemm_block_quant call them
    assert "_k.block_quant is not None" in source
    assert "and _k.block_quant is None  # block_quant kernels take scales" in source
    with pytest.raises(ValueError, match="not a block_quant kernel"):
        cutegemm.scale_block_count(cutegemm.KERNELS[0].name, 128)


def test_the_launcher_refuses_bad_scales_before_compiling() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("cutlass")
    from codegen.build import load_module

    (path,) = [p for p in BQ if p.stem.startswith("sm90_bf16_128x128x64")]
    module = load_module(path)
    a = torch.zeros(200, 64, dtype=torch.bfloat16)
    b = torch.zeros(272, 64, dtype=torch.bfloat16)
    c = torch.zeros(200, 272, dtype=torch.float8_e4m3fn)
    assert module.scale_block_count(272) == 3
    with pytest.raises(TypeError, match="scales"):
        module.launcher(a, b, c)  # a keyword without a default: required
    for bad, words in (
        (torch.zeros(3, 200).t()[:, :2], r"\(M, scale_block_count\(N\)\) = \(200, 3\)"),
        (torch.zeros(200, 3), r"strides \(1, M\)"),  # row-major: the wrong layout
        (torch.zeros(3, 200, dtype=torch.float64).t(), "got torch.float64"),
    ):
        with pytest.raises(ValueError, match=words):
            module.launcher(a, b, c, scales=bad)
    # the right layout passes the scales' checks (it then stops at the CPU tensors)
    with pytest.raises(ValueError) as info:
        module.launcher(a, b, c, scales=torch.zeros(3, 200).t())
    assert "scales must be a float32" not in str(info.value) and "CUDA" in str(info.value)
    with pytest.raises(TypeError, match="float8_e4m3fn c"):
        module.launcher(a, b, c.to(torch.bfloat16), scales=torch.zeros(3, 200).t())


def test_the_package_checks_scales_before_any_launch() -> None:
    """gemm_fn's scales check (the runtime's _check_scales) and its refusals that need no GPU."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tvm_ffi")
    from cutegemm import _runtime  # noqa: F401 - importable: the package on sys.path

    cutegemm = _cutegemm()
    from cutegemm import _runtime as rt

    dev = torch.device("cpu")
    rt._check_scales(torch.zeros(3, 200).t(), 200, 3, dev)  # strides (1, M): accepted
    for bad, words in (
        (torch.zeros(200, 3), r"strides \(1, M\)"),
        (torch.zeros(2, 200).t(), r"\(200, 3\)"),
        (torch.zeros(3, 200, dtype=torch.float16).t(), "float16"),
        ("scales", "got str"),
    ):
        with pytest.raises(cutegemm.GemmError, match=words):
            rt._check_scales(bad, 200, 3, dev)
    (name,) = [p.stem for p in BQ if p.stem.startswith("sm90_bf16_128x128x64")]
    a = torch.zeros(8, 64, dtype=torch.bfloat16)
    b = torch.zeros(128, 64, dtype=torch.bfloat16)
    with pytest.raises(cutegemm.GemmError, match="pass scales="):
        cutegemm.gemm_fn(name, a, b)
    with pytest.raises(cutegemm.GemmError, match="no block_quant kernel"):
        cutegemm.gemm_block_quant(cutegemm.KERNELS[0].name, a, b)
    with pytest.raises(cutegemm.GemmError, match="CUDA"):
        cutegemm.gemm_block_quant(name, a, b)


def test_the_reference_quantization() -> None:
    """codegen.gpu.block_quant_reference: amax / 448 per row block (1 for an all-zero block),
    columns past N left out, D saturated at 448 and D * scale within 2^-4 of each value."""
    torch = pytest.importorskip("torch")
    from codegen import gpu

    gen = torch.Generator().manual_seed(3)
    v = torch.randn(6, 300, generator=gen) * 5
    v[1, 128:256] = 0.0
    v[2, 5] = 1000.0  # the block's amax
    d, s = gpu.block_quant_reference(v, 128)
    assert d.dtype == torch.float8_e4m3fn and d.shape == (6, 300) and s.shape == (6, 3)
    assert s[1, 1].item() == 1.0 and (d[1, 128:256].float() == 0).all()
    assert s[2, 0].item() == pytest.approx(1000.0 / 448.0, rel=1e-7)
    assert d[2, 5].float().item() == 448.0  # the amax maps onto e4m3's largest value
    want = v[:, 256:].abs().amax(1) / 448.0  # the last, partial block: 44 columns
    assert torch.equal(s[:, 2], want)
    assert d.float().abs().max().item() <= 448.0
    deq = gpu.dequantize(d, s, 128)
    assert (
        (deq - v).abs() <= 2.0**-4 * v.abs() + 2.0**-10 * s.repeat_interleave(128, 1)[:, :300]
    ).all()


def test_the_gpu_check_of_the_quantization() -> None:
    """codegen test's check (codegen.gpu.check_block_quant) on the CPU: the reference's own D and
    scales pass; a NaN left in D or in the scales, a scale 1% off and an element off by two
    e4m3 steps each fail, with the reason."""
    torch = pytest.importorskip("torch")
    from codegen import gpu

    gen = torch.Generator().manual_seed(5)
    ref = torch.randn(9, 272, generator=gen) * torch.rand(9, 1, generator=gen) * 30
    d, s = gpu.block_quant_reference(ref, 128)
    note, ok, err = gpu.check_block_quant(d, s, ref, 128, 1e-3)
    assert ok and err < 2.0**-4 and "scale rel_err=0.00e+00 tol=1e-03" in note
    unwritten = d.clone()
    unwritten[3, 7] = float("nan")
    assert gpu.check_block_quant(unwritten, s, ref, 128, 1e-3)[:2] == (
        "1 NaN (unwritten) of 2448 in D",
        False,
    )
    s_nan = s.clone()
    s_nan[0, 2] = float("nan")
    assert gpu.check_block_quant(d, s_nan, ref, 128, 1e-3)[1] is False
    off = s.clone()
    off[4, 1] *= 1.01
    assert gpu.check_block_quant(d, off, ref, 128, 1e-3)[1] is False
    wrong = d.clone()
    big = int(ref[0].abs().argmax())
    wrong[0, big] = (d[0, big].float() * 0.75).to(torch.float8_e4m3fn)  # two steps down
    note, ok, _ = gpu.check_block_quant(wrong, s, ref, 128, 1e-3)
    assert not ok and "1 elements off" in note
    assert gpu.block_quant_gemm_tolerance("e4m3") == 2e-2
    assert gpu.block_quant_gemm_tolerance("bf16") == 1e-3
