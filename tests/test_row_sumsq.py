"""row_sumsq (epilogue.row_sumsq) on the CPU: the spec knob and its name, what each architecture
refuses, P (row_partial_count) as the generated files, the rules and the package compute it, the
PTX counts the build asserts, and the launcher's refusals. The spec-file errors as a user sees
them are tests/snapshots/row_sumsq.txt (test_errors.py); the numbers are the GPU test's
(`codegen test --only '*sumsq*'`: the combined sums against a float32 reference, a second launch
bitwise the same)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from conftest import GENERATED, kernel_glob

from codegen import registry, rules
from codegen.build import read_spec
from codegen.plan import expected_counts
from codegen.spec import Spec

SUMSQ = kernel_glob("*sumsq*.py")


def _spec(**knobs: object) -> Spec:
    base: dict = {
        "arch": "sm_90a",
        "dtype": "bf16",
        "tile": [128, 128, 64],
        "consumer_warpgroups": 2,
        "stages": 4,
        "swizzle": "128B",
        "epilogue": {"style": "direct", "row_sumsq": True},
    }
    return Spec.model_validate({**base, **knobs})


def test_the_knob_names_the_kernel_and_leaves_other_hashes_alone() -> None:
    spec = _spec()
    assert spec.canonical_name().endswith("_direct_sumsq_grid")
    assert spec.knobs()["epilogue"]["row_sumsq"] is True
    plain = Spec.model_validate({"tile": [128, 128, 64]})
    # a kernel without it keeps its SPEC dict (and hash) as before: no "row_sumsq" key
    assert "row_sumsq" not in plain.knobs()["epilogue"]
    assert Spec.model_validate(spec.knobs()).spec_hash() == spec.spec_hash()


@pytest.mark.parametrize(
    ("epilogue", "message"),
    [
        ({"alpha": 2.0}, "row_sumsq with alpha is not implemented"),
        ({"bias": "col", "beta": 1.0}, "row_sumsq with beta, bias is not implemented"),
        ({"row_sumsq": "yes"}, "valid boolean"),
    ],
)
def test_the_spec_refuses(epilogue: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(epilogue={"style": "direct", "row_sumsq": True, **epilogue})


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"scheduler": {"kind": "split_k", "splits": 2}}, "with scheduler split_k (splits=2)"),
        ({"scheduler": "stream_k"}, "with scheduler stream_k"),
        (
            {"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2,
             "epilogue": {"style": "tma", "row_sumsq": True}},
            'in the tma epilogue on sm_100a; legal with row_sumsq: style "direct"',
        ),
        (
            {"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2,
             "tile": [64, 128, 64]},
            "needs a whole accumulator row per thread",
        ),
    ],
)  # fmt: skip
def test_the_rules_refuse(knobs: dict, message: str) -> None:
    found = [v for v in rules.check(_spec(**knobs)) if v.field == "epilogue.row_sumsq"]
    assert len(found) == 1 and message in found[0].message, found


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"epilogue": {"style": "tma", "row_sumsq": True}, "scheduler": {"kind": "persistent"}},
        {"swap_ab": True, "tile": [128, 16, 64]},
        {"consumer_mode": "pingpong", "tile": [64, 128, 64], "scheduler": "persistent"},
        {"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2},
        {"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2, "swap_ab": True,
         "tile": [128, 16, 64]},
    ],
)  # fmt: skip
def test_what_is_implemented_passes_the_rules(knobs: dict) -> None:
    assert rules.check(_spec(**knobs)) == []


def _row_partial_count(path: Path):
    """The generated file's own row_partial_count, run without the DSL: its constants TILER and
    ROW_PARTIALS_PER_TILE and the function, taken from the file's text."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keep = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") in ("TILER", "ROW_PARTIALS_PER_TILE") for t in node.targets)
        or isinstance(node, ast.FunctionDef)
        and node.name == "row_partial_count"
    ]
    namespace: dict = {}
    exec(compile(ast.Module(keep, []), str(path), "exec"), namespace)  # noqa: S102
    return namespace["row_partial_count"]


@pytest.mark.parametrize("path", SUMSQ, ids=lambda p: p.stem)
def test_p_is_the_same_in_the_file_the_rules_and_the_package(path: Path) -> None:
    spec = read_spec(path)
    arch_rules = registry.for_spec(spec).rules
    in_file = _row_partial_count(path)
    sys.path.insert(0, str(GENERATED))
    try:
        import cutegemm
    finally:
        sys.path.remove(str(GENERATED))
    (kern,) = [k for k in cutegemm.KERNELS if k.name == path.stem]
    assert kern.row_partials is not None and kern.fn is None or kern.fn == spec.epilogue.fn.name
    for n in (8, 16, 120, 128, 136, 1000, 4096, 8200):
        want = arch_rules.row_partial_count(spec, n)
        assert in_file(n) == want == cutegemm.row_partial_count(path.stem, n), n
    tile = spec.tile.m if spec.swap_ab else spec.tile.n
    per_tile = arch_rules.row_partials_per_tile(spec)
    assert kern.row_partials == (tile, per_tile)
    # one partial per tile without swap AB; with it, one per warp along the kernel's M
    assert per_tile == (
        1 if not spec.swap_ab else spec.tile.m // (16 if spec.arch == "sm_90a" else 32)
    )


def test_the_dispatcher_never_picks_them() -> None:
    sys.path.insert(0, str(GENERATED))
    try:
        import cutegemm
    finally:
        sys.path.remove(str(GENERATED))
    names = {k.name for k in cutegemm.KERNELS if k.row_partials is not None}
    assert {p.stem for p in SUMSQ} == names
    source = (GENERATED / "cutegemm" / "_runtime.py").read_text(encoding="utf-8")
    # the plain classes and the FP8-scale picks skip them (gemm_fn / gemm_sumsq call them)
    assert "if _k.fn is not None or _k.row_partials is not None or _k.block_quant" in source
    assert "and _k.row_partials is None  # row_sumsq kernels take row_partials" in source


@pytest.mark.parametrize(
    ("knobs", "shfl", "stores"),
    [
        # two rows per thread (one 64-row atom per warpgroup), two butterfly steps each; 32
        # 2-element stores of C
        ({}, 4, 32 + 2),
        # swap AB 128x16: 4 columns of C^T per thread, three steps each; 8 one-element C stores
        ({"swap_ab": True, "tile": [128, 16, 64]}, 12, 8 + 4),
        # the TMA-store epilogue: only the partials are st.global
        ({"epilogue": {"style": "tma", "row_sumsq": True}}, 4, 2),
        # sm_100a: a thread's row, one store; swap AB: 16 values, five steps and a store each
        ({"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2, "tile": [128, 256, 64]},
         0, 32 + 1),
        ({"arch": "sm_100a", "consumer_warpgroups": None, "stages": 2, "swap_ab": True,
          "tile": [128, 16, 64]}, 80, 16 + 16),
    ],
)  # fmt: skip
def test_the_build_asserts_the_shuffles_and_stores(knobs: dict, shfl: int, stores: int) -> None:
    counts = expected_counts(_spec(**knobs))
    assert (counts["shfl.sync.bfly"], counts["st.global"]) == (shfl, stores)


def test_the_launcher_refuses_bad_row_partials_before_compiling() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("cutlass")
    from codegen.build import load_module

    (path,) = [
        p
        for p in SUMSQ
        if p.stem == "sm90_bf16_128x128x64_s7_sw128_ws_wg2_direct_sumsq_persistent_rm_pdl"
    ]
    module = load_module(path)
    a = torch.zeros(200, 64, dtype=torch.bfloat16)
    b = torch.zeros(300, 64, dtype=torch.bfloat16)
    c = torch.zeros(200, 300, dtype=torch.bfloat16)
    assert module.row_partial_count(300) == 3
    with pytest.raises(TypeError, match="row_partials"):
        module.launcher(a, b, c)  # a keyword without a default: required
    for bad, words in (
        (torch.zeros(2, 200), r"shape \(row_partial_count\(N\), M\) = \(3, 200\), got "),
        (torch.zeros(3, 200, dtype=torch.float64), "got torch.float64"),
        (torch.zeros(200, 3).t(), "contiguous float32"),
    ):
        with pytest.raises(ValueError, match=words):
            module.launcher(a, b, c, row_partials=bad)


def test_the_gpu_check_of_the_row_partials(monkeypatch: pytest.MonkeyPatch) -> None:
    """codegen test's row_sumsq check (codegen.gpu.check_row_sumsq), on the CPU with a stand-in
    launch: right partials pass; an unwritten one, a store past the end, a wrong sum and a
    second launch that writes other bits each fail, with the reason."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from codegen import gpu

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    module = SimpleNamespace(SPEC={"dtype": "bf16", "epilogue": {"row_sumsq": True}})
    ref = torch.randn(5, 40, dtype=torch.float32)
    halves = torch.stack([(ref[:, :24] ** 2).sum(1), (ref[:, 24:] ** 2).sum(1)])  # P = 2

    def check(first, launch, guard=None):
        parts = first.clone()
        return gpu.check_row_sumsq(
            module, launch, parts, torch.full((8,), float("nan")) if guard is None else guard, ref
        )

    def good(t):
        t.copy_(halves)

    note, ok = check(halves, good)
    assert ok and "sumsq rel_err=" in note and "tol=1e-03" in note
    unwritten = halves.clone()
    unwritten[1, 3] = float("nan")
    assert check(unwritten, good) == ("row_partials: 1 NaN (unwritten)", False)
    assert check(halves, good, guard=torch.zeros(8))[1] is False
    assert check(halves * 1.01, good)[1] is False  # 1% off: past the tolerance

    def other_bits(t):
        t.copy_(halves.flip(0).flip(0) + 1e-3)

    note, ok = check(halves, other_bits)
    assert not ok and "NOT bitwise-reproducible" in note
