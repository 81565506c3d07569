"""Epilogue functions after a K reduction on sm_90a (CPU): which reductions take which argument
kinds, where the generated kernels call the function (after the peers' partials are added, in the
CTA that stores the tile, or in the separate reduce kernel), the launch arguments' order (the
workspace before the function's), the reduce kernel's expected loads, and the decode picks of
gemm(a, b, scale_a=, scale_b=) and gemm(a, b, alpha=<tensor>): the twins of the plain picks.
Numerics are the GPU test's (codegen test --only '*_fn_*_split*,*_fn_*_streamk*')."""

from __future__ import annotations

import re
import sys
import types

import pytest
from conftest import GENERATED, ROOT, kernel_file

from codegen import epilogue_fn
from codegen.arch import shared
from codegen.arch.sm90 import rules as rules_sm90
from codegen.arch.sm100 import rules as rules_sm100
from codegen.spec import Spec


def _spec(arch: str = "sm_90a", fn: str = "scale_rowwise", swap_ab: bool = True, **kw) -> Spec:
    got = epilogue_fn.resolve(f"specs/epilogues/library.py:{fn}", ROOT)
    ref = {"ref": got.ref, "args": got.args, "digest": got.digest, "source": got.source}
    return Spec.model_validate(
        {
            "arch": arch,
            "dtype": "e4m3",
            "tile": [64, 32, 128] if arch == "sm_90a" else [128, 32, 128],
            "swap_ab": swap_ab,
            "swizzle": "128B",
            "stages": 4,
            "epilogue": {"style": "direct", "out_dtype": "bf16", "fn": ref},
            **kw,
        }
    )


SPLIT2 = {"kind": "split_k", "splits": 2}
SEPARATE = {"kind": "split_k", "splits": 2, "reduce": "separate"}


@pytest.mark.parametrize("scheduler", [SPLIT2, SEPARATE, "stream_k"])
def test_sm90_runs_a_function_after_each_reduction(scheduler) -> None:
    assert rules_sm90.check(_spec(scheduler=scheduler)) == []


def test_the_separate_reduce_kernel_gives_no_tile_and_sm100_the_cluster_reduction_only() -> None:
    (v,) = rules_sm90.check(_spec(fn="residual_add", scheduler=SEPARATE))
    assert "'residual' (Tile) is not given by split-K's separate reduce kernel" in v.message
    assert rules_sm90.check(_spec(fn="residual_add", scheduler=SPLIT2)) == []

    def sm100(scheduler):
        return shared.epilogue_fn_violations(
            _spec("sm_100a", scheduler=scheduler),
            rules_sm100.EPILOGUE_FN_KINDS,
            rules_sm100.EPILOGUE_FN_AFTER_REDUCE,
        )

    assert sm100(SPLIT2) == []
    for scheduler in (SEPARATE, "stream_k"):
        got = sm100(scheduler)
        assert len(got) == 1 and "not implemented with scheduler" in got[0].message


def test_reduce_kernel_loads_one_per_element_along_its_vectors() -> None:
    base = shared.splits(_spec(scheduler=SEPARATE))
    vec = shared.REDUCE_VEC
    # swap AB: vectors run down C^T's columns; scale_b (user's N) is per kernel row: per element
    swapped = shared.reduce_kernel_counts(_spec(scheduler=SEPARATE))
    assert swapped["ld.global"] == base + 1 + vec
    plain = shared.reduce_kernel_counts(
        _spec(scheduler=SEPARATE, swap_ab=False, tile=[128, 64, 128])
    )
    assert plain["ld.global"] == base + 1 + vec
    tensor = shared.reduce_kernel_counts(_spec(fn="scale_per_tensor", scheduler=SEPARATE))
    assert tensor["ld.global"] == base + 2  # the device scalars, once per thread


def _body(text: str, fn: str) -> str:
    start = text.index(f"\ndef {fn}(")
    end = text.index("\n@cute.", start)
    return text[start:end]


@pytest.mark.parametrize(
    ("name", "after", "scope"),
    [
        (
            "sm90_e4m3_64x8x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_splitk2_pdl",
            "acc_flat.store(acc_flat.load() + peer_vals.load())",
            "if rank == 0:",
        ),
        (
            "sm100_e4m3_128x16x128_s8_sw128_ws_swap_direct_bf16_fn_scale_rowwise_splitk2",
            "r_vec.store(r_vec.load() + peer_vals.load())",
            "# the reduced chunk: rank 0 alone fuses and stores it",
        ),
        (
            "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_streamk_pdl",
            "acc_vec[(None, j)].store(acc_vec[(None, j)].load() + peer_vec.load())",
            "if k_begin == 0:",
        ),
    ],
)
def test_the_function_runs_on_the_reduced_registers_of_the_storing_cta(name, after, scope) -> None:
    text = kernel_file(name).read_text(encoding="utf-8")
    body = _body(text, "epilogue" if name.startswith("sm100_") else "consumers")
    acc = "r_acc[j]" if name.startswith("sm100_") else "acc[i]"
    call = body.index(f"{acc} = scale_rowwise({acc}, fn_scale_a[col], fn_scale_b[row])")
    assert body.index(after) < body.index(scope) < call
    assert body.count(f"= scale_rowwise({acc}") == 1


def test_the_separate_reduce_kernel_applies_it_and_the_gemm_kernel_takes_none() -> None:
    text = kernel_file(
        "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_splitk4_sep_pdl"
    ).read_text()
    assert "fn_scale" not in _body(text, "gemm_kernel") + _body(text, "consumers")
    reduce = _body(text, "reduce_kernel")
    sums = reduce.index("acc.store(acc.load() + part.load())")
    call = reduce.index("acc[e] = scale_rowwise(acc[e], fn_scale_a[col], fn_scale_b[row])")
    assert sums < call < reduce.index("rC.store(d.to(OUT_DTYPE))")
    # swap AB: a vector runs down a column of C^T, its elements are consecutive kernel rows
    assert "row = tile_m * TILER[0] + r + e" in reduce and "col = tile_n * TILER[1] + c\n" in reduce
    assert "reduce_kernel(workspace, c, fn_scale_a, fn_scale_b).launch(" in text


@pytest.mark.parametrize(
    "name",
    [
        "sm90_e4m3_64x32x128_s8_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_splitk4_sep_pdl",
        "sm90_e4m3_64x32x128_s12_sw128_ws_wg1_swap_direct_bf16_fn_scale_rowwise_streamk_pdl",
    ],
)
def test_launcher_and_compile_args_pass_the_workspace_before_the_function(name) -> None:
    text = kernel_file(name).read_text(encoding="utf-8")
    launcher = text[text.index("\ndef launcher(") :]
    assert launcher.index("args.append(from_dlpack(workspace") < launcher.index("args += fn_args")
    gemm = re.search(r"def gemm\(([^)]*)\)", text, re.DOTALL).group(1)
    assert gemm.index("workspace") < gemm.index("fn_scale_a") < gemm.index("stream")


@pytest.fixture(scope="module")
def pkg():
    pytest.importorskip("torch")
    pytest.importorskip("tvm_ffi")
    sys.path.insert(0, str(GENERATED))
    try:
        import cutegemm
    finally:
        sys.path.remove(str(GENERATED))
    return types.SimpleNamespace(cutegemm=cutegemm)


@pytest.mark.parametrize("gpu", ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
def test_decode_picks_a_function_kernel_twin_of_the_plain_pick(pkg, gpu) -> None:
    """On llama3-70b's projections at M = 1, 8, 32 the plain e4m3 pick is split-K or stream-K;
    with row-wise scales the pick is its twin (where one is shipped), never a whole-K kernel."""
    import torch

    kernel_for = pkg.cutegemm.kernel_for
    twins = 0
    for m in (1, 8, 32):
        for n, k in ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)):
            plain = kernel_for(m, n, k, dtype=torch.float8_e4m3fn, gpu=gpu)
            got = kernel_for(m, n, k, dtype=torch.float8_e4m3fn, gpu=gpu, scales="rowwise")
            assert got.swap_ab and got.scheduler in ("split_k", "stream_k"), (m, n, k, got.name)
            twins += got.twin == plain.name
            alpha = kernel_for(m, n, k, dtype=torch.bfloat16, gpu=gpu, alpha="device")
            assert m == 32 or alpha.scheduler == "split_k", (m, n, k, alpha.name)
    assert twins >= 10
