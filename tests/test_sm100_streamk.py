"""sm_100a stream-K (specs/sm100/streamk.toml): the rules (what is legal, what each rejection
names), the workspace, the expected PTX counts per shipped variant, and the generated kernels' own
unit lines run in Python over many problem shapes: every MAC iteration is run exactly once, each
tile is finished by the CTA of its first k-tile, and that CTA waits only on later CTAs' first
units (no chains). A cross-compile (marked ``build``) checks the PTX of the hand-over.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from conftest import SPECS, build_named, kernel_file

from codegen import loader, plan, rules
from codegen.arch import shared
from codegen.arch.sm100 import rules as rules_sm100
from codegen.build import BuildResult
from codegen.spec import Spec

SHIPPED = [
    "sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk",
    "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk",
    "sm100_bf16_128x32x64_s11_sw128_ws_acc2_direct_streamk",
]
SM100 = {"arch": "sm_100a", "dtype": "bf16", "swizzle": "128B", "stages": 2}

# (tcgen05.ld, st.global, ld.global, TMA store) per shipped variant. Each epilogue thread holds one
# row of the tile: N f32, N / 4 16-byte vectors handed over (st.global) and taken (ld.global).
# Direct stores add N bf16 / 16 B; one more st.global clears a peer's flag. Both epilogue
# branches (hand-over, finisher) load every chunk from TMEM: 2 x chunks.
COUNTS = {
    "sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk": (
        2 * 2,
        128 * 2 // 16 + 128 // 4 + 1,
        128 // 4,
        0,
    ),
    "sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk": (2 * 4, 256 // 4 + 1, 256 // 4, 4),
    "sm100_bf16_128x32x64_s11_sw128_ws_acc2_direct_streamk": (
        2 * 1,
        32 * 2 // 16 + 32 // 4 + 1,
        32 // 4,
        0,
    ),
}


def make(**knobs: object) -> Spec:
    return Spec.model_validate(SM100 | {"tile": [128, 128, 64], "scheduler": "stream_k"} | knobs)


def violations(**knobs: object) -> list[tuple[str, str]]:
    return [(v.field, v.message) for v in rules.check(make(**knobs))]


@pytest.fixture(scope="module")
def shipped() -> dict[str, Spec]:
    loaded = loader.load([SPECS / "sm100" / "streamk.toml"])
    return {s.name: s.spec.model_copy(update={"name": s.name}) for s in loaded}


# ---- rules --------------------------------------------------------------------------------------


def test_the_shipped_variants_are_legal(shipped: dict[str, Spec]) -> None:
    assert set(shipped) == set(SHIPPED)
    for name, spec in shipped.items():
        assert rules.check(spec) == [], name
        assert rules_sm100.is_persistent(spec) and shared.is_stream_k(spec)


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"accumulators": 2},
        {"epilogue": "tma", "tile": [128, 256, 64], "accumulators": 2},
        {"tile": [64, 64, 64]},  # M=64: half a row per thread, the same hand-over
        {
            "dtype": "e4m3",
            "tile": [128, 128, 128],
            "epilogue": {"style": "direct", "out_dtype": "bf16"},
        },
        {"scheduler": {"kind": "stream_k", "sm_count": 8}},
    ],
)
def test_stream_k_is_legal_for_single_ctas(knobs: dict) -> None:
    assert violations(**knobs) == []


def test_a_cta_pair_is_rejected() -> None:
    got = violations(tile=[256, 128, 64], cta_group=2, cluster=[2, 1])
    assert [f for f, _ in got] == ["cta_group"]
    assert "cta_group=2 with scheduler stream_k is not implemented" in got[0][1]
    assert got[0][1].endswith("legal: 1")


def test_a_multicast_cluster_is_rejected() -> None:
    got = violations(cluster=[2, 1])
    assert [f for f, _ in got] == ["cluster"]
    assert "cluster 2x1 with scheduler stream_k" in got[0][1] and got[0][1].endswith("[1, 1]")


def test_fused_epilogues_and_swap_ab_are_rejected() -> None:
    got = violations(epilogue={"style": "direct", "alpha": 2.0})
    assert [f for f, _ in got] == ["epilogue"]
    assert "fused epilogue" in got[0][1] and "stream_k" in got[0][1]
    got = violations(swap_ab=True)
    assert [f for f, _ in got] == ["swap_ab"]
    assert "swap_ab with scheduler stream_k" in got[0][1]


def test_the_persistent_rules_apply() -> None:
    # dedicated epilogue warps: warp specialization; an odd number of TMA-store sub-tiles is
    # legal (the tile waits for its last store) but not with beta (its C-load barrier parity)
    fields = [f for f, _ in violations(warp_specialized=False)]
    assert "scheduler" in fields
    assert not any("even number" in m for _, m in violations(tile=[128, 192, 64], epilogue="tma"))
    got = violations(tile=[128, 192, 64], epilogue={"style": "tma", "beta": 1.0})
    assert any("even number" in m for _, m in got)


def test_the_old_not_implemented_violation_is_gone() -> None:
    assert all("not implemented for sm_100a yet" not in m for _, m in violations())


# ---- the workspace ------------------------------------------------------------------------------


def test_workspace_is_a_slot_per_cta_then_flags() -> None:
    s = make()
    assert rules_sm100.streamk_ctas(s) == rules_sm100.SM_COUNT == 148
    assert shared.streamk_tile_elems(s) == 128 * 128
    assert rules_sm100.streamk_workspace_elems(s) == 148 * (128 * 128 + 1)
    small = make(tile=[64, 64, 64], scheduler={"kind": "stream_k", "sm_count": 8})
    assert rules_sm100.streamk_workspace_elems(small) == 8 * (64 * 64 + 1)
    grid = make(scheduler="grid")
    assert rules_sm100.streamk_workspace_elems(grid) == 0


def test_workspace_reaches_the_file_and_the_entry_points(shipped: dict[str, Spec]) -> None:
    for name, spec in shipped.items():
        text = (kernel_file(name)).read_text(encoding="utf-8")
        elems = rules_sm100.streamk_workspace_elems(spec)
        assert f"\nWORKSPACE_ELEMS = {elems}\n" in text  # a module constant: export.py reads it
        gemm = next(
            n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "gemm"
        )
        # the workspace after C, then the stream and the GPU's SM count (compile-time)
        assert [a.arg for a in gemm.args.args] == ["a", "b", "c", "workspace", "stream", "sm_count"]
        assert "    mWork: cute.Tensor,  # (WORKSPACE_ELEMS,) f32" in text
        # the kernel takes the workspace last, and the host passes it last
        kernel = _kernel(kernel_file(name))
        assert kernel.args.args[-1].arg == "mWork"
        launch = next(
            n
            for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.Call) and ast.unparse(n.func) == "gemm_kernel"
        )
        assert ast.unparse(launch.args[-1]) == "workspace"
        assert "workspace = torch.zeros(WORKSPACE_ELEMS" in text
        p = plan.plan(spec)
        assert p.tensors.host == ["workspace"] and p.tensors.launch == ["workspace"]
    plain = plan.plan(make(scheduler="grid"))
    assert plain.tensors.host == [] and plain.tensors.kernel == [] and plain.tensors.launch == []


# ---- expected PTX counts ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_expected_counts(shipped: dict[str, Spec], name: str) -> None:
    c = plan.expected_counts(shipped[name])
    ld, st, ldg, tma = COUNTS[name]
    assert (c["tcgen05.ld"], c["st.global"], c["ld.global"], c["TMA store"]) == (ld, st, ldg, tma)
    assert c["flag release.gpu"] == c["flag acquire.gpu"] == 1
    # ring empty + full and the producer's tail, acc_full, acc_empty and its tail: the
    # persistent scheduler's waits
    assert c["mbarrier.try_wait"] == 6
    assert c["mma cta_group::1"] == 4 and c["mma cta_group::2"] == 0
    assert c["barrier.cluster"] == 0 and c["TMA multicast"] == 0


def test_m64_hands_over_half_rows() -> None:
    c = plan.expected_counts(make(tile=[64, 64, 64]))
    # tcgen05.ld 16x32bx2: 32 f32 per thread, 8 vectors each way
    assert c["ld.global"] == 8 and c["st.global"] == 32 * 2 // 16 + 8 + 1


# ---- the generated kernel's units, run in Python ------------------------------------------------

UNIT_NAMES = ("it_begin", "first_tile", "last_tile")  # it_begin: the stream_k_share call


def _kernel(path: Path) -> ast.FunctionDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "gemm_kernel")


def _first_assignments(fn: ast.FunctionDef, names: tuple[str, ...]) -> dict[str, str]:
    """Source of the first assignment to each name in the kernel (walked in source order)."""
    found: dict[str, str] = {}
    for node in sorted(ast.walk(fn), key=lambda n: (getattr(n, "lineno", 0), 0)):
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            targets += [
                e.id
                for t in node.targets
                if isinstance(t, ast.Tuple)
                for e in t.elts
                if isinstance(e, ast.Name)
            ]
            for name in targets:
                if name in names and name not in found:
                    found[name] = ast.unparse(node)
    return found


def _unit_code(name: str) -> tuple[str, str, str]:
    """The kernel's per-CTA range lines (after its stream_k_share helper), per-unit k-range lines
    and the finisher's last_cta line, with cutlass.max / min as Python's."""
    fn = _kernel(kernel_file(name))
    # the per-unit k range is the unit_k_range helper every role calls
    tree = ast.parse(kernel_file(name).read_text(encoding="utf-8"))
    helper = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "unit_k_range"
    )
    got = _first_assignments(helper, ("tile_iter0", "k_begin", "k_end"))
    got |= _first_assignments(fn, UNIT_NAMES)
    # the finisher's last_cta: the epilogue warps' role helper
    epilogue = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "epilogue")
    got |= _first_assignments(epilogue, ("last_cta",))
    assert set(got) == {*UNIT_NAMES, "tile_iter0", "k_begin", "k_end", "last_cta"}, got
    # Python's integers: the widths are tests/test_streamk_math.py's
    fix = {
        "cutlass.max": "max",
        "cutlass.min": "min",
        "cutlass.Int64": "int",
        "cutlass.Int32": "int",
    }

    def py(src: str) -> str:
        for a, b in fix.items():
            src = src.replace(a, b)
        return src

    share = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "stream_k_share"
    )
    share.decorator_list, share.args.args = [], [ast.arg(a.arg) for a in share.args.args]
    per_cta = "\n".join([py(ast.unparse(share)), *(py(got[n]) for n in UNIT_NAMES)])
    per_unit = "\n".join(py(got[n]) for n in ("tile_iter0", "k_begin", "k_end"))
    return per_cta, per_unit, py(got["last_cta"])


def _simulate(name: str, tiles: tuple[int, int], k_tiles: int, ctas: int) -> dict[int, list[tuple]]:
    per_cta, per_unit, last_cta = _unit_code(name)
    units: dict[int, list[tuple]] = {}
    for bidx in range(ctas):
        env = {"bidx": bidx, "gdimx": ctas, "tiles_m": tiles[0], "tiles_n": tiles[1]}
        env["k_tiles"] = k_tiles
        exec(per_cta, env)  # noqa: S102 - the generated kernel's own integer arithmetic
        units[bidx] = []
        for t in range(env["first_tile"], env["last_tile"] + 1):
            env["t"] = t
            exec(per_unit, env)  # noqa: S102
            exec(last_cta, env)  # noqa: S102
            units[bidx].append((t, env["k_begin"], env["k_end"], env["last_cta"]))
    return units


@pytest.mark.parametrize("name", SHIPPED)
def test_units_cover_every_iteration_and_the_first_k_tile_finishes(name: str) -> None:
    for tiles, k_tiles, sms in itertools.product(
        ((1, 1), (3, 1), (1, 7), (7, 3), (5, 8)), (1, 2, 5, 64), (1, 4, 148)
    ):
        num_tiles = tiles[0] * tiles[1]
        ctas = min(num_tiles * k_tiles, sms)  # what the host launches
        units = _simulate(name, tiles, k_tiles, ctas)
        owner: dict[tuple[int, int], int] = {}
        for bidx, us in units.items():
            assert us, (name, bidx)  # no empty share
            for t, kb, ke, _ in us:
                assert kb < ke, (name, bidx, t)
                for k in range(kb, ke):
                    assert (t, k) not in owner
                    owner[(t, k)] = bidx
        assert len(owner) == num_tiles * k_tiles  # every MAC iteration, exactly once
        for bidx, us in units.items():
            for i, (t, kb, ke, last) in enumerate(us):
                if kb > 0:
                    # a hand-over: only ever the CTA's first unit (one workspace slot suffices),
                    # and an earlier CTA runs the tile's first k-tile
                    assert i == 0 and owner[(t, 0)] < bidx
                    continue
                # the finisher runs the tile's first k-tile; last_cta runs its last one
                assert owner[(t, 0)] == bidx and last == owner[(t, k_tiles - 1)]
                peers = {owner[(t, k)] for k in range(ke, k_tiles)}
                assert peers == set(range(bidx + 1, last + 1))
                if ke < k_tiles:
                    # it waits at the end of its share, on the peers' first units: no chains
                    assert i == len(us) - 1
                    assert all(units[p][0][0] == t for p in peers)


def test_the_epilogue_branches_on_the_first_k_tile(shipped: dict[str, Spec]) -> None:
    for name in SHIPPED:
        tree = ast.parse(kernel_file(name).read_text(encoding="utf-8"))
        # the epilogue warps' role helper
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "epilogue")
        branch = next(
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.If) and ast.unparse(n.test) == "k_begin > 0"
        )
        handover, finisher = (
            ast.unparse(branch.body[-1]),
            "\n".join(ast.unparse(s) for s in branch.orelse),
        )
        body = "\n".join(ast.unparse(s) for s in branch.body)
        assert "work[None, etidx, j, i, bidx]" in body
        assert "flags + bidx, cutlass.Int32(1), sem='release', scope='gpu'" in handover
        # the finisher waits on the later CTAs in order, adds them, and alone stores C
        assert (
            "last_cta = sk_cta0 + cutlass.Int32(((cutlass.Int64(t + 1) * k_tiles - sk_iter0) * "
            "sk_ctas - 1) // sk_iters)" in finisher
        )
        assert finisher.count("cutlass.range(bidx + 1, last_cta + 1, unroll=1)") == 2
        assert "wait_flag_acquire(flags + peer)" in finisher
        assert "work[None, etidx, j, i, peer]" in finisher
        store = "tma_c, tDsC" if shipped[name].epilogue.style == "tma" else "autovec_copy(r_out"
        assert store in finisher and store not in body
        # the TMEM slot goes back to the MMA warp in both branches
        assert body.count("mbarrier_arrive(acc_empty + slot)") == 1
        assert finisher.count("mbarrier_arrive(acc_empty + slot)") == 1


# ---- cross-compiled -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuildResult]:
    return build_named(SHIPPED, tmp_path_factory.mktemp("build"), jobs=1)


@pytest.mark.build
def test_shipped_variants_compile_with_their_counts(built: dict[str, BuildResult]) -> None:
    for name in SHIPPED:
        r = built[name]
        assert r.passed, (name, r.error or r.mismatches)
        assert r.spill_bytes == 0 and r.registers is not None and r.registers <= 255
        ld, st, ldg, tma = COUNTS[name]
        c = r.counts
        assert (c["tcgen05.ld"], c["st.global"], c["ld.global"], c["TMA store"]) == (
            ld,
            st,
            ldg,
            tma,
        )
        assert c["flag release.gpu"] == c["flag acquire.gpu"] == 1
        assert c["div.s64"] == 5  # the 64-bit partition math
