"""Stream-K in bands (templates/common/stream_k.py.j2): the Python reference
``codegen.plan_common.stream_k_share`` splits every MAC iteration exactly once, each group on whole
bands, and the generated kernels of both architectures run the same integer arithmetic (their own
``stream_k_share`` helper, the finisher's ``last_cta`` line and the tile order, executed here),
with bands along the activations (the default) or along the weights (``bands = "weights"``: the
other tile axis, and the host's equal groups, ``stream_k_launch_ctas``)."""

from __future__ import annotations

import ast
import itertools

import pytest
from conftest import kernel_file

from codegen.plan_common import (
    stream_k_last_cta,
    stream_k_launch_ctas,
    stream_k_share,
    stream_k_tile,
)

CASES = [
    (ctas, bands, band_tiles, k_tiles)
    for ctas, bands, band_tiles, k_tiles in itertools.product(
        [1, 2, 3, 4, 7, 18, 132], [1, 2, 3, 7, 24, 200], [1, 2, 5, 28], [1, 3, 64]
    )
    if ctas <= bands * band_tiles * k_tiles  # the host launches no more CTAs than iterations
]


@pytest.mark.parametrize(("ctas", "bands", "band_tiles", "k_tiles"), CASES[::7])
def test_shares_cover_every_iteration_once_inside_whole_bands(
    ctas: int, bands: int, band_tiles: int, k_tiles: int
) -> None:
    shares = [stream_k_share(b, ctas, bands, band_tiles, k_tiles) for b in range(ctas)]
    begins_ends = sorted((s[4], s[5]) for s in shares)
    # contiguous, non-empty, every iteration of every tile once
    assert begins_ends[0][0] == 0 and begins_ends[-1][1] == bands * band_tiles * k_tiles
    assert all(e > b for b, e in begins_ends)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(begins_ends))
    band_iters = band_tiles * k_tiles
    for cta0, group_ctas, iter0, iters, it_begin, it_end in shares:
        # a group starts and ends on a band boundary and holds its share
        assert iter0 % band_iters == 0 and iters % band_iters == 0 and iters > 0
        assert iter0 <= it_begin < it_end <= iter0 + iters
        assert 1 <= group_ctas and 0 <= cta0 < ctas
    # groups: min(bands, ctas), sizes differing by at most one
    groups = {(s[0], s[1]) for s in shares}
    assert len(groups) == min(bands, ctas)
    assert max(g[1] for g in groups) - min(g[1] for g in groups) <= 1


@pytest.mark.parametrize(("ctas", "bands", "band_tiles", "k_tiles"), CASES[::11])
def test_last_cta_is_the_cta_that_runs_the_tiles_last_k_tile(
    ctas: int, bands: int, band_tiles: int, k_tiles: int
) -> None:
    shares = [stream_k_share(b, ctas, bands, band_tiles, k_tiles) for b in range(ctas)]
    for b, (cta0, group_ctas, iter0, iters, it_begin, it_end) in enumerate(shares):
        for tile in range(it_begin // k_tiles, (it_end - 1) // k_tiles + 1):
            last = (tile + 1) * k_tiles - 1
            owner = next(c for c, s in enumerate(shares) if s[4] <= last < s[5])
            assert stream_k_last_cta(tile, cta0, group_ctas, iter0, iters, k_tiles) == owner, b


def test_bands_are_read_at_the_same_pace() -> None:
    # M = 777 in 128-row tiles (7 bands) x 28 tiles x 296 k-tiles on 132 SMs: every group starts
    # its band at its first tile, so the CTA of each band that reads weight tile (n, k) first does
    # so at the same point of its share (what lets L2 serve the other bands)
    shares = [stream_k_share(b, 132, 7, 28, 296) for b in range(132)]
    firsts = {s[0] for s in shares}
    assert len(firsts) == 7
    starts = [s for s in shares if s[4] == s[2]]  # each group's first CTA
    assert len(starts) == 7 and all((s[2] // 296) % 28 == 0 for s in starts)


class _Cutlass:
    min = staticmethod(min)
    max = staticmethod(max)
    Int64 = Int32 = int


def _helper(tree: ast.Module, name: str):
    """The kernel file's @cute.jit helper `name` as a plain Python function on ints."""
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    node.decorator_list = []
    scope: dict[str, object] = {"cutlass": _Cutlass}
    exec(compile(ast.Module(body=[node], type_ignores=[]), name, "exec"), scope)  # noqa: S102
    return scope[name]


def _last_cta(tree: ast.Module, names: dict[str, int]) -> int:
    """The finisher's last_cta line of the kernel (or of the role helper it calls), run on
    `names`."""
    line = next(
        n
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef)
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "last_cta"
    )
    scope: dict[str, object] = {"cutlass": _Cutlass, **names}
    exec(compile(ast.Module(body=[line], type_ignores=[]), "last_cta", "exec"), scope)  # noqa: S102
    return scope["last_cta"]


@pytest.mark.parametrize(
    ("name", "swapped", "weights"),
    [
        ("sm90_bf16_128x128x64_s6_sw128_ws_wg2_tma_streamk", False, False),
        ("sm90_bf16_128x200x64_s5_sw128_ws_wg2_swap_direct_streamk", True, False),
        ("sm100_bf16_128x128x64_s7_sw128_ws_direct_streamk", False, False),  # sm_100a
        # bands along the weights (bands = "weights")
        ("sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_wb", False, True),
        ("sm90_bf16_128x208x64_s5_sw128_ws_wg2_swap_tma_streamk_wb", True, True),
        ("sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk_wb", False, True),  # sm_100a
    ],
)
def test_generated_share_and_finisher_are_the_reference(
    name: str, swapped: bool, weights: bool
) -> None:
    source = kernel_file(name).read_text(encoding="utf-8")
    tree = ast.parse(source)
    share = _helper(tree, "stream_k_share")
    for ctas, bands, band_tiles, k_tiles in CASES[::13]:
        for b in range(ctas):
            ref = stream_k_share(b, ctas, bands, band_tiles, k_tiles)
            assert share(b, ctas, bands, band_tiles, k_tiles) == ref, (name, b, ctas, bands)
            cta0, group_ctas, iter0, iters, it_begin, _ = ref
            tile = it_begin // k_tiles
            names = {"sk_cta0": cta0, "sk_ctas": group_ctas, "sk_iter0": iter0}
            names |= {"sk_iters": iters, "k_tiles": k_tiles, "ct": tile, "t": tile}
            want = stream_k_last_cta(tile, cta0, group_ctas, iter0, iters, k_tiles)
            assert _last_cta(ast.parse(source), names) == want
    # the kernel passes (bands, band tiles) = (activation tiles, weight tiles): rows of tiles, or
    # columns with swap AB, and its tile order walks a band's tiles one after another; with bands
    # along the weights (weight tiles, activation tiles): the other axis
    counts = ("tiles_m", "tiles_n") if name.startswith("sm100_") else ("clusters_m", "clusters_n")
    bands, tiles = (counts[1], counts[0]) if swapped != weights else counts
    assert f"stream_k_share(bidx, gdimx, {bands}, {tiles}, k_tiles)" in ast.unparse(tree)
    coords = _helper(tree, "tile_coords")
    axis = "n" if swapped != weights else "m"
    seen = [coords(t, 3, 4) for t in range(12)]
    assert seen == [stream_k_tile(t, 3, 4, axis) for t in range(12)]
    band = [n if axis == "n" else m for m, n in seen]
    assert band == sorted(band), seen  # band after band
    assert sorted(seen) == list(itertools.product(range(3), range(4)))


def _launch_lines(tree: ast.Module) -> list[ast.stmt]:
    """The host's equal-groups lines: the assignments to sk_bands, sk_groups and the CTA count
    after it."""
    host = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "gemm")
    body = [n for n in ast.walk(host) if isinstance(n, ast.Assign)]
    first = next(i for i, n in enumerate(body) if ast.unparse(n.targets[0]) == "sk_bands")
    return body[first : first + 3]


def test_stream_k_launch_ctas_reference() -> None:
    # activation bands: every CTA; weight bands: a multiple of min(bands, CTAs)
    assert stream_k_launch_ctas(132, 19, weight_bands=False) == 132
    assert stream_k_launch_ctas(132, 19, weight_bands=True) == 114  # 19 groups of 6
    assert stream_k_launch_ctas(132, 200, weight_bands=True) == 132  # one CTA per group
    assert stream_k_launch_ctas(1, 7, weight_bands=True) == 1
    assert stream_k_launch_ctas(1, 0, weight_bands=True) == 1  # M or N = 0: no band
    for ctas, bands in itertools.product([1, 2, 7, 18, 132], [1, 2, 3, 7, 24, 200]):
        got = stream_k_launch_ctas(ctas, bands, weight_bands=True)
        groups = min(bands, ctas)
        assert 1 <= got <= ctas and got % groups == 0 and ctas - got < groups
        # every group the same size
        sizes = {stream_k_share(b, got, bands, 3, 4)[1] for b in range(got)}
        assert len(sizes) == 1, (ctas, bands, sizes)


@pytest.mark.parametrize(
    ("name", "swapped"),
    [
        ("sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_wb", False),
        ("sm90_bf16_128x208x64_s5_sw128_ws_wg2_swap_tma_streamk_wb", True),
        ("sm100_bf16_128x256x64_s4_sw128_ws_acc2_tma_streamk_wb", False),  # sm_100a
    ],
)
def test_generated_launch_is_the_reference(name: str, swapped: bool) -> None:
    """The host's equal-groups lines, run on ints, launch stream_k_launch_ctas's CTA count; the
    band count is the weight tiles' (N tiles; M tiles with swap AB, the kernel's M)."""
    source = kernel_file(name).read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = _launch_lines(tree)
    sm100 = name.startswith("sm100_")
    count = "ctas" if sm100 else "clusters"
    tm, tn = (128, 256) if sm100 else (128, 208 if swapped else 192)

    class _Cute:
        @staticmethod
        def ceil_div(a: int, b: int) -> int:
            return -(-a // b)

    class _Layout:
        def __init__(self, m: int, n: int) -> None:
            self.shape = (m, n)

    for m, n, ctas in itertools.product(
        [0, 100, 777, 8192], [0, 128, 3072, 37888], [1, 7, 114, 132]
    ):
        scope: dict[str, object] = {"cutlass": _Cutlass, "cute": _Cute, count: ctas}
        scope |= {"M": m, "N": n, "CLUSTER_TILE": (tm, tn), "TILER": (tm, tn, 64)}
        scope["c"] = type("C", (), {"layout": _Layout(m, n)})()
        exec(compile(ast.Module(body=lines, type_ignores=[]), name, "exec"), scope)  # noqa: S102
        bands = -(-(m if swapped else n) // (tm if swapped else tn))
        want = stream_k_launch_ctas(ctas, bands, weight_bands=True)
        assert scope[count] == want, (name, m, n, ctas)
