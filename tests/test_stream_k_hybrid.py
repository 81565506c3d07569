"""The data-parallel + stream-K hybrid (scheduler ``data_parallel = true``, name suffix ``_dp``).

The Python reference (``codegen.plan_common.stream_k_hybrid_share`` and
``stream_k_hybrid_units``) runs every k-tile of every tile exactly once and stores every tile
once, whole tiles in the persistent order first, over many (tiles, CTAs, k-tiles); and the
generated kernels of both architectures run the same integer arithmetic: their own
``hybrid_share``, ``hybrid_unit``, ``stream_k_share``, ``unit_k_range`` and ``tile_coords`` helpers,
their per-CTA lines and the finisher's ``last_cta`` line, executed here on Python integers. The
64-bit behaviour of the same lines past 2^31 MAC iterations is tests/test_streamk_math.py's.
"""

from __future__ import annotations

import ast
import itertools

import pytest
from conftest import SPECS, kernel_file

from codegen import loader
from codegen.plan_common import (
    stream_k_dp_units,
    stream_k_hybrid_share,
    stream_k_hybrid_units,
    stream_k_last_cta,
    tile_order,
)
from codegen.spec import Spec

SM90 = [
    "sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_dp",
    "sm90_bf16_128x208x64_s5_sw128_ws_wg2_swap_tma_streamk_dp",
    "sm90_bf16_128x160x64_s5_sw128_ws_wg2_swap_tma_streamk_dp",
    "sm90_e4m3_128x208x128_s5_sw128_ws_wg2_swap_tma_bf16_streamk_dp_pdl",
]
SM100 = ["sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk_dp"]
SHIPPED = SM90 + SM100

# (tiles, CTAs, k-tiles) the host can launch: no more CTAs than MAC iterations (K = 0: one CTA);
# T < P, T = P, T a multiple of P, one to three waves with a partial one, K = 0 and one k-tile
CASES = [
    (tiles, ctas, k)
    for tiles, ctas, k in itertools.product(
        [0, 1, 2, 3, 5, 7, 8, 12, 13, 24, 25, 131, 132, 133, 264, 265, 300, 396, 397],
        [1, 2, 3, 4, 7, 132],
        [0, 1, 2, 3, 7, 64],
    )
    if (ctas <= tiles * k) or (k == 0 or tiles == 0) and ctas == 1
]


def test_data_parallel_waves() -> None:
    # every wave when the CTAs divide the tiles (no stream-K part), else all but the last
    assert stream_k_dp_units(264, 132) == 2  # T = 2P
    assert stream_k_dp_units(132, 132) == 1  # T = P
    assert stream_k_dp_units(0, 1) == 0  # no tile
    assert stream_k_dp_units(100, 132) == 0  # T < P: all stream-K
    assert stream_k_dp_units(133, 132) == 0  # one full wave and one tile: both stream-K
    assert stream_k_dp_units(397, 132) == 2  # 3 full waves + 1: 2 data-parallel, 133 stream-K
    for tiles, ctas in itertools.product(range(60), range(1, 13)):
        waves = stream_k_dp_units(tiles, ctas)
        rest = tiles - waves * ctas
        if tiles % ctas == 0:
            assert rest == 0
        elif tiles > ctas:
            assert ctas < rest < 2 * ctas, (tiles, ctas)
        else:
            assert rest == tiles


@pytest.mark.parametrize(("tiles", "ctas", "k_tiles"), CASES)
def test_every_k_tile_once_every_tile_stored_once(tiles: int, ctas: int, k_tiles: int) -> None:
    units = {b: stream_k_hybrid_units(b, ctas, tiles, k_tiles) for b in range(ctas)}
    owner: dict[tuple[int, int], int] = {}
    stored: dict[int, int] = {}
    for bidx, us in units.items():
        waves = stream_k_dp_units(tiles, ctas)
        # the data-parallel units first: tiles b, b + P, ... whole
        assert us[:waves] == [(bidx + u * ctas, 0, k_tiles) for u in range(waves)]
        for t, kb, ke in us:
            assert 0 <= t < tiles and 0 <= kb <= ke <= k_tiles
            if kb == 0:  # the CTA of the tile's first k-tile stores it
                assert t not in stored, (bidx, t)
                stored[t] = bidx
            for k in range(kb, ke):
                assert (t, k) not in owner, (bidx, t, k)
                owner[(t, k)] = bidx
        if k_tiles and tiles:
            # the host launches no more CTAs than MAC iterations: no CTA is idle
            assert us, bidx
    assert len(owner) == tiles * k_tiles  # every MAC iteration, exactly once
    if k_tiles or ctas == 1:
        # every tile stored once (K = 0: the one CTA the host launches stores zero tiles whole)
        assert sorted(stored) == list(range(tiles))


@pytest.mark.parametrize(("tiles", "ctas", "k_tiles"), [c for c in CASES if c[2]][::3])
def test_hand_overs_and_finishers_make_no_chains(tiles: int, ctas: int, k_tiles: int) -> None:
    """A split tile: the CTA of its first k-tile finishes it, waiting on CTAs bidx + 1 ..
    last_cta (stream_k_last_cta of the hybrid's share), each of which handed it over as its
    first stream-K unit, after as many data-parallel tiles as the finisher's."""
    shares = {b: stream_k_hybrid_share(b, ctas, tiles, k_tiles) for b in range(ctas)}
    units = {b: stream_k_hybrid_units(b, ctas, tiles, k_tiles) for b in range(ctas)}
    owner = {(t, k): b for b, us in units.items() for t, kb, ke in us for k in range(kb, ke)}
    for bidx, us in units.items():
        waves, cta0, group_ctas, iter0, iters, _, _ = shares[bidx]
        for i, (t, kb, ke) in enumerate(us):
            if kb > 0:
                # a hand-over: only the first stream-K unit (one workspace slot per CTA)
                assert i == waves and owner[(t, 0)] < bidx
                continue
            last = stream_k_last_cta(t, cta0, group_ctas, iter0, iters, k_tiles)
            peers = {owner[(t, k)] for k in range(ke, k_tiles)}
            if i < waves:
                # a whole data-parallel tile: nobody to wait for (last_cta below bidx)
                assert ke == k_tiles and last < bidx and not peers
                continue
            assert last == owner[(t, k_tiles - 1)]
            assert peers == set(range(bidx + 1, last + 1))
            if ke < k_tiles:
                # the finisher waits at the end of its share, on the peers' first stream-K units
                assert i == len(us) - 1
                assert all(units[p][waves][0] == t for p in peers)


def test_the_waves_keep_the_persistent_order() -> None:
    # 3 x 5 tiles on 4 CTAs, raster along M: waves 0 and 1 (tiles 0-7) data-parallel, CTA b
    # computing the persistent kernel's tiles b and b + 4; tiles 8-14 stream-K
    units = [stream_k_hybrid_units(b, 4, 15, 2) for b in range(4)]
    assert [u[:2] for u in units] == [[(b, 0, 2), (b + 4, 0, 2)] for b in range(4)]
    assert {t for us in units for t, _, _ in us[2:]} == set(range(8, 15))
    assert [tile_order(t, (3, 5)) for t in (0, 1, 2, 3, 8)] == [
        (0, 0), (1, 0), (2, 0), (0, 1), (2, 2)
    ]  # fmt: skip


# ---- the generated kernels ----------------------------------------------------------------------


class _Cutlass:
    min = staticmethod(min)
    max = staticmethod(max)
    Int64 = Int32 = int


def _tree(name: str) -> ast.Module:
    return ast.parse(kernel_file(name).read_text(encoding="utf-8"))


def _helpers(tree: ast.Module, *names: str) -> dict:
    """The kernel file's @cute.jit helpers as plain Python functions on ints, defined together
    (hybrid_unit calls unit_k_range, hybrid_share calls stream_k_share)."""
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in nodes} == set(names)
    for n in nodes:
        n.decorator_list = []
    scope: dict = {"cutlass": _Cutlass}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "helpers", "exec"), scope)  # noqa: S102
    return scope


def _statements(tree: ast.Module, fn: str, first: str, last: str) -> list[ast.stmt]:
    """The statements of helper `fn` from the assignment to `first` to the one to `last`."""
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn)
    body = [s for s in node.body if isinstance(s, ast.Assign)]
    targets = [{n.id for n in ast.walk(s.targets[0]) if isinstance(n, ast.Name)} for s in body]
    i = next(i for i, t in enumerate(targets) if first in t)
    j = next(i for i, t in enumerate(targets) if last in t)
    return body[i : j + 1]


def _last_cta(tree: ast.Module) -> ast.stmt:
    return next(
        n
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef)
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "last_cta"
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_generated_units_are_the_reference(name: str) -> None:
    """Each CTA's per-CTA lines (the kernel's hybrid_share call and its stream-K tile range), its
    units through hybrid_unit and their tiles through tile_coords, executed on ints, are the
    reference's (the persistent order's coordinates)."""
    tree = _tree(name)
    sm100 = name in SM100
    scope = _helpers(tree, "stream_k_share", "unit_k_range", "hybrid_share", "hybrid_unit")
    coords = _helpers(tree, "tile_coords")["tile_coords"]
    # sm_90a: tile_schedule's lines (CTA cluster_id of num_clusters); sm_100a: the kernel's
    fn, cta, count, tiles = (
        ("gemm_kernel", "bidx", "gdimx", "num_tiles")
        if sm100
        else ("tile_schedule", "cluster_id", "num_clusters", "num_cluster_tiles")
    )
    per_cta = _statements(tree, fn, "dp_units", "units")
    code = compile(ast.Module(body=per_cta, type_ignores=[]), "per_cta", "exec")
    for (tm, tn), ctas, k_tiles in itertools.product(
        [(1, 1), (3, 1), (1, 7), (3, 5), (7, 3), (12, 11)], [1, 2, 3, 4, 7, 132], [1, 2, 5, 64]
    ):
        if ctas > tm * tn * k_tiles:
            continue
        owner: dict[tuple[int, int], int] = {}
        for bidx in range(ctas):
            env = dict(scope) | {cta: bidx, count: ctas, tiles: tm * tn, "k_tiles": k_tiles}
            exec(code, env)  # noqa: S102 - the generated kernel's own integer arithmetic
            got = []
            for unit in range(env["units"]):
                t, kb, ke = env["hybrid_unit"](
                    unit, bidx, ctas, env["dp_units"], env["first_tile"], env["it_begin"],
                    env["it_end"], k_tiles,
                )  # fmt: skip
                got.append((t, kb, ke))
                assert coords(t, tm, tn) == tile_order(t, (tm, tn)), (name, t)
                for k in range(kb, ke):
                    owner[(t, k)] = bidx
            assert got == stream_k_hybrid_units(bidx, ctas, tm * tn, k_tiles), (name, bidx)
            share = stream_k_hybrid_share(bidx, ctas, tm * tn, k_tiles)
            names = ("dp_units", "sk_cta0", "sk_ctas", "sk_iter0", "sk_iters", "it_begin", "it_end")
            assert tuple(env[n] for n in names) == share, (name, bidx)
        assert len(owner) == tm * tn * k_tiles


@pytest.mark.parametrize("name", SHIPPED)
def test_generated_finisher_line_is_the_reference(name: str) -> None:
    tree = _tree(name)
    line = compile(ast.Module(body=[_last_cta(tree)], type_ignores=[]), "last_cta", "exec")
    for tiles, ctas, k_tiles in [c for c in CASES if c[2]][::5]:
        for bidx in range(ctas):
            share = stream_k_hybrid_share(bidx, ctas, tiles, k_tiles)
            names = dict(zip(("sk_cta0", "sk_ctas", "sk_iter0", "sk_iters"), share[1:5]))
            for t, kb, _ in stream_k_hybrid_units(bidx, ctas, tiles, k_tiles):
                if kb:
                    continue
                scope = {"cutlass": _Cutlass, "k_tiles": k_tiles, "ct": t, "t": t, **names}
                exec(line, scope)  # noqa: S102
                assert scope["last_cta"] == stream_k_last_cta(t, *share[1:5], k_tiles)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_role_walks_the_units(name: str) -> None:
    """One loop per role over the units, each mapping its unit through hybrid_unit (sm_90a: the
    producer and the consumers; sm_100a: the producer, the MMA warp and the epilogue warps), and
    the host launches stream-K's CTA count (no equal-group rounding: one group)."""
    text = kernel_file(name).read_text(encoding="utf-8")
    roles = ("producer", "consumers") if name in SM90 else ("producer", "mma", "epilogue")
    tree = ast.parse(text)
    for role in roles:
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == role)
        src = ast.unparse(fn)
        loops = [
            n for n in ast.walk(fn) if isinstance(n, ast.For) and ast.unparse(n.target) == "unit"
        ]
        assert len(loops) == 1, role
        assert ast.unparse(loops[0].body[0]).count("hybrid_unit(unit,") == 1, role
        assert "unit_k_range(" not in src, role  # the k range comes with the unit
    assert "sk_groups" not in text and "stream_k_share(bidx" not in text


def test_the_spec_knob() -> None:
    base = {"arch": "sm_90a", "dtype": "bf16", "tile": [128, 192, 64], "stages": 4}
    base |= {"swizzle": "128B", "consumer_warpgroups": 2, "epilogue": "tma"}
    hybrid = Spec.model_validate(base | {"scheduler": {"kind": "stream_k", "data_parallel": True}})
    plain = Spec.model_validate(base | {"scheduler": "stream_k"})
    assert hybrid.canonical_name().endswith("_tma_streamk_dp")
    # the default is left out of SPEC and the spec hash: existing kernels keep theirs
    assert "data_parallel" not in plain.knobs()["scheduler"]
    assert hybrid.knobs()["scheduler"]["data_parallel"] is True
    with pytest.raises(ValueError, match=r'true with bands = "weights" is not implemented'):
        Spec.model_validate(
            base | {"scheduler": {"kind": "stream_k", "bands": "weights", "data_parallel": True}}
        )


def test_the_shipped_specs() -> None:
    loaded = loader.load([SPECS / "sm90" / "sk_hybrid.toml", SPECS / "sm100" / "sk_hybrid.toml"])
    assert sorted(s.name for s in loaded) == sorted(SHIPPED)
    for s in loaded:
        assert s.spec.scheduler.kind == "stream_k" and s.spec.scheduler.data_parallel
        assert kernel_file(s.name).exists(), s.name


# ---- cross-compiled -----------------------------------------------------------------------------


@pytest.mark.build
def test_the_hybrids_compile_with_their_counts(tmp_path) -> None:
    """The five _dp kernels alone (tests/test_build.py builds every kernel): each compiles with
    no spill and the instruction counts its plan expects (stream-K's: the same hand-over, flags
    and 64-bit partition divisions; the waves add none)."""
    from codegen import build

    results = build.build([kernel_file(n) for n in SHIPPED], tmp_path, jobs=2)
    assert {r.name for r in results} == set(SHIPPED)
    for r in results:
        assert r.ok, (r.name, r.error, r.mismatches)
        assert r.spill_bytes == 0, r.name
        assert r.counts["flag release.gpu"] == r.counts["flag acquire.gpu"] == 1, r.name
        assert r.counts["div.s64"] == 5, r.name
