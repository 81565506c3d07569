"""K = 0 through a generated file's own entry points, on both arches and every scheduler.

`cutegemm.gemm` refuses K = 0; so do every file's `launcher` and `run` (a ValueError naming it,
before anything is compiled or launched): the checks run on CPU tensors, so no GPU is needed.
The file's `gemm` itself is traced by `codegen verify` at K = 0 (codegen/verify/sizes.py): its
protocol must hold with no k-tile, and a stream-K host must not launch an empty grid.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
from conftest import kernel_glob

from codegen.verify import verify_file

FILES = kernel_glob("*.py")
DTYPES = {"f16": "float16", "bf16": "bfloat16", "e4m3": "float8_e4m3fn", "f32": "float32"}


def _load(path):
    spec = importlib.util.spec_from_file_location(f"_k0_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _call(mod, k: int, entry: str):
    """Call `entry` (launcher or run) with CPU tensors of M = 64, N = 64 and this K; return the
    ValueError it raised."""
    torch = pytest.importorskip("torch")
    spec = mod.SPEC
    io = getattr(torch, DTYPES[spec["dtype"]])
    epi = spec.get("epilogue", {})
    out = getattr(torch, DTYPES[epi.get("out_dtype") or spec["dtype"]])
    m = n = 64
    a, b = torch.empty(m, k, dtype=io), torch.empty(n, k, dtype=io)
    # a gated pair (Gate and Up) stores one value per pair: C has N / 2 columns
    gated = any(kind == "gate" for _, kind in (epi.get("fn") or {}).get("args", ()))
    c = torch.empty(m, n // 2 if gated else n, dtype=out)
    bias = None
    if epi.get("bias"):
        bias = torch.empty(m if epi["bias"] == "row" else n, dtype=out)
    # alpha and beta a kernel takes at launch (epilogue "runtime"): keyword arguments of both
    scalars = {x: 1.0 for x in ("alpha", "beta") if epi.get(x) == "runtime"}
    # an epilogue function's arguments (codegen/epilogue_fn.py kinds), also keyword arguments
    fn_args = {
        "scalar": lambda: 1.0,
        "device_scalar": lambda: torch.ones((), dtype=torch.float32),
        "row": lambda: torch.empty(m, dtype=torch.float32),
        "col": lambda: torch.empty(n, dtype=torch.float32),
        "tile": lambda: torch.empty(m, n, dtype=out),
    }
    for arg, kind in (epi.get("fn") or {}).get("args", ()):
        if kind in fn_args:
            scalars[arg] = fn_args[kind]()
    if epi.get("row_sumsq"):
        # row_sumsq: the row partials, (row_partial_count(N), M) float32, by keyword too
        scalars["row_partials"] = torch.empty(mod.row_partial_count(n), m, dtype=torch.float32)
    if epi.get("block_quant"):
        # block_quant: the scales, (M, scale_block_count(N)) float32, strides (1, M), by keyword
        scalars["scales"] = torch.empty(mod.scale_block_count(n), m, dtype=torch.float32).t()
    with pytest.raises(ValueError) as err:
        if entry == "launcher":
            mod.launcher(a, b, c, *([bias] if bias is not None else []), **scalars)
        else:
            mod.run(a, b, c, **({"bias": bias} if bias is not None else {}), **scalars)
    return str(err.value)


@pytest.fixture(scope="module")
def modules():
    pytest.importorskip("torch")
    pytest.importorskip("cutlass")
    return {p.stem: _load(p) for p in FILES}


@pytest.mark.parametrize("entry", ["launcher", "run"])
def test_launcher_and_run_refuse_k_zero(modules, entry: str) -> None:
    """Every file, both arches: K = 0 is refused with the reason, nothing launched; K = 64 on
    the same CPU tensors fails only for the device (so the K = 0 message is not a blanket one)."""
    wrong = []
    for name, mod in modules.items():
        text = _call(mod, 0, entry)
        refused = re.search(r"K=0: a \(64, 0\) and b \(64, 0\) have nothing to reduce", text)
        if not refused or "nothing was launched" not in text:
            wrong.append(f"{name}: {text}")
        control = _call(mod, 64, entry)
        if "K=0" in control or "CUDA device" not in control:
            wrong.append(f"{name} (K=64): {control}")
    assert {m.SPEC["arch"] for m in modules.values()} == {"sm_90a", "sm_100a"}
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "name",
    [
        "sm90_bf16_128x128x64_s6_sw128_ws_wg1_tma_streamk",
        "sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk",
        "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk",
        # the data-parallel + stream-K hybrid: one CTA, whose tiles are all data-parallel
        "sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_dp",
        "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk_dp",
    ],
)
def test_stream_k_never_launches_an_empty_grid(name: str) -> None:
    """The file's own gemm at K = 0: one CTA that finds no work (CUDA rejects a (0, 1, 1)
    grid); verify reports an empty grid as a host-check failure."""
    (path,) = kernel_glob(f"{name}.py")
    report = verify_file(path)
    zero = [c for c in report.cases if c.case.k_tiles == 0]
    assert zero, "verify traced no K = 0 case"
    for case in zero:
        assert not case.violations, [v.render() for v in case.violations]
        assert case.ctas == 1
