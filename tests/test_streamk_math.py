"""Stream-K's partition math at the sizes that broke it on the H200 (both architectures).

The generated kernels' own partition lines (each CTA's MAC-iteration range, each unit's k-tile
range, the finisher's last peer) are run in Python with the DSL's integer semantics emulated:
Int32 and Int64 wrap at their width, an operation on both widths is done in the wider one, and a
Python literal takes the other operand's type. Both H200 failures have 2^25 MAC iterations
(16384^3 in 64x32x64 tiles hung, 32768^3 in 128x128x64 tiles hit an illegal address): with
32-bit products, CTAs 63 and up of 132 computed wrapped (negative) ranges. The 64-bit lines must
match exact integer arithmetic there and past 2^31 iterations. The PTX side: every stream-K
kernel's plan expects its 64-bit divisions (div.s64), which `codegen build` checks. The
data-parallel + stream-K hybrid (`data_parallel = true`) runs its own hybrid_share
(stream_k_share over the tiles after its data-parallel waves) in the same lines, against
codegen.plan_common.stream_k_hybrid_share.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import kernel_glob

from codegen import build, plan
from codegen.arch.shared import STREAMK_WIDE_DIVS
from codegen.plan_common import stream_k_hybrid_share, stream_k_last_cta, stream_k_share

STREAMK = [p for p in kernel_glob() if "stream_k" in build.read_spec(p).scheduler.kind]
SK_NAMES = [p.stem for p in STREAMK]


class _Int:
    """A DSL integer of `width` bits: every result wraps like the hardware's."""

    width = 32

    def __init__(self, value: int | _Int) -> None:
        v = int(value) & ((1 << self.width) - 1)
        self.v = v - (1 << self.width) if v >> (self.width - 1) else v

    def __int__(self) -> int:
        return self.v

    __index__ = __int__

    def _op(self, other: int | _Int, op: Callable[[int, int], int], flip: bool = False) -> _Int:
        kind = type(self)
        if isinstance(other, _Int) and other.width > self.width:
            kind = type(other)
        a, b = (int(other), self.v) if flip else (self.v, int(other))
        return kind(op(a, b))

    def __add__(self, o):
        return self._op(o, operator.add)

    def __radd__(self, o):
        return self._op(o, operator.add, True)

    def __sub__(self, o):
        return self._op(o, operator.sub)

    def __rsub__(self, o):
        return self._op(o, operator.sub, True)

    def __mul__(self, o):
        return self._op(o, operator.mul)

    def __rmul__(self, o):
        return self._op(o, operator.mul, True)

    def __floordiv__(self, o):  # arith.floordivsi: rounds toward minus infinity, like Python
        return self._op(o, operator.floordiv)

    def __mod__(self, o):
        return self._op(o, operator.mod)

    def __lt__(self, o):
        return self.v < int(o)

    def __le__(self, o):
        return self.v <= int(o)

    def __gt__(self, o):
        return self.v > int(o)

    def __ge__(self, o):
        return self.v >= int(o)

    def __eq__(self, o):
        return self.v == int(o)

    __hash__ = None  # type: ignore[assignment]


class Int32(_Int):
    width = 32


class Int64(_Int):
    width = 64


class _Cutlass:
    """The part of `cutlass` the partition lines use."""

    Int32, Int64 = Int32, Int64

    max, min = max, min  # they return one of their operands, as the DSL's do


PER_CTA = ("first_tile", "last_tile")
PER_UNIT = ("tile_iter0", "k_begin", "k_end")


def partition_lines(path: Path) -> tuple[str, str, str, str, str]:
    """(the stream_k_share helper, the kernel's per-CTA lines from its call on, per-unit lines,
    the finisher's last_cta line, the tile variable): the first assignment to each name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    # the hybrid's hybrid_share calls stream_k_share: both
    shares = [fns[n] for n in ("stream_k_share", "hybrid_share") if n in fns]
    for share in shares:
        share.decorator_list = []
    # the per-unit k range is the unit_k_range helper every role calls; the rest is the kernel's
    # (sm_90a: of its tile_schedule and consumers helpers; sm_100a: of its epilogue helper)
    kernel = [fns[n] for n in ("tile_schedule", "gemm_kernel", "consumers", "epilogue") if n in fns]
    found: dict[str, str] = {}
    for node in [
        n
        for fn in (fns["unit_k_range"], *kernel)
        for n in sorted(
            (n for n in ast.walk(fn) if isinstance(n, ast.Assign)), key=lambda n: n.lineno
        )
    ]:
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in names:
                if isinstance(t, ast.Name) and t.id not in found:
                    found[t.id] = ast.unparse(node)
    wanted = ("it_begin", *PER_CTA, *PER_UNIT, "last_cta")
    assert set(wanted) <= set(found), (path.name, set(wanted) - set(found))
    assert "stream_k_share(" in found["it_begin"] or "hybrid_share(" in found["it_begin"], path.name
    tile = "ct" if "Int64(ct)" in found["tile_iter0"] else "t"
    return (
        "\n\n".join(ast.unparse(share) for share in shares),
        "\n".join(found[n] for n in ("it_begin", *PER_CTA)),
        "\n".join(found[n] for n in PER_UNIT),
        found["last_cta"],
        tile,
    )


def run_partition(
    lines: tuple[str, str, str, str, str],
    tiles: tuple[int, int],
    k_tiles: int,
    ctas: int,
    bidx: int,
) -> dict[str, int]:
    """One CTA's range, and its first and last unit, as the kernel computes them."""
    share, per_cta, per_unit, last_cta, tile = lines
    prefix = "clusters" if "clusters_m" in per_cta else "tiles"
    env: dict = {
        "cutlass": _Cutlass,
        "bidx": Int32(bidx),
        "gdimx": Int32(ctas),
        f"{prefix}_m": Int32(tiles[0]),
        f"{prefix}_n": Int32(tiles[1]),
        "k_tiles": Int32(k_tiles),
        # the hybrid's position and tile count (sm_90a's tile_schedule names, sm_100a's kernel's)
        "cluster_id": Int32(bidx),
        "num_clusters": Int32(ctas),
        "num_cluster_tiles": Int32(tiles[0] * tiles[1]),
        "num_tiles": Int32(tiles[0] * tiles[1]),
    }
    exec(share, env)  # noqa: S102 - the generated kernel's own integer arithmetic
    exec(per_cta, env)  # noqa: S102
    out = {n: int(env[n]) for n in ("it_begin", "it_end", "first_tile", "last_tile")}
    for which in ("first_tile", "last_tile"):
        env[tile] = Int32(out[which])
        exec(per_unit, env)  # noqa: S102
        exec(last_cta, env)  # noqa: S102
        out[f"{which}.k"] = (int(env["k_begin"]), int(env["k_end"]), int(env["last_cta"]))
    return out


def exact(
    tiles: tuple[int, int],
    k_tiles: int,
    ctas: int,
    bidx: int,
    swapped: bool = False,
    weights: bool = False,
    hybrid: bool = False,
) -> dict[str, int]:
    """The same quantities in Python's unbounded integers (codegen.plan_common's reference); the
    bands are columns of tiles with swap AB or (not both) with bands along the weights; the
    hybrid's stream-K share follows its data-parallel waves."""
    bands, band_tiles = (tiles[1], tiles[0]) if swapped != weights else tiles
    if hybrid:
        _, cta0, n, iter0, iters, begin, end = stream_k_hybrid_share(
            bidx, ctas, tiles[0] * tiles[1], k_tiles
        )
    else:
        cta0, n, iter0, iters, begin, end = stream_k_share(bidx, ctas, bands, band_tiles, k_tiles)
    out = {"it_begin": begin, "it_end": end, "first_tile": begin // k_tiles}
    out["last_tile"] = (end - 1) // k_tiles
    for which in ("first_tile", "last_tile"):
        t = out[which]
        last = stream_k_last_cta(t, cta0, n, iter0, iters, k_tiles)
        out[f"{which}.k"] = (max(begin - t * k_tiles, 0), min(end - t * k_tiles, k_tiles), last)
    return out


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ((tiles along M, along N), k_tiles): the H200 failures, a problem past 2^31 iterations (65536^3
# in 64x16x64), and one band (decode: one row of tiles) past 2^31
PROBLEMS = {
    "16384^3, 64x32x64 (hung)": ((cdiv(16384, 64), cdiv(16384, 32)), cdiv(16384, 64)),
    "32768^3, 128x128x64 (illegal address)": ((cdiv(32768, 128),) * 2, cdiv(32768, 64)),
    "65536^3, 64x16x64 (2^32 iterations)": ((cdiv(65536, 64), cdiv(65536, 16)), cdiv(65536, 64)),
    "1 band of 65536 x 65536, 64x16x64": ((1, cdiv(65536, 16) * 1024), cdiv(65536, 64)),
}
CTAS = (132, 148)


def test_the_family_is_every_stream_k_kernel() -> None:
    assert {p.parent.name for p in STREAMK} == {"sm90", "sm100"}
    assert len(STREAMK) >= 7


@pytest.mark.parametrize("name", SK_NAMES)
@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_partition_is_exact_past_2_31(name: str, problem: str) -> None:
    path = next(p for p in STREAMK if p.stem == name)
    lines = partition_lines(path)
    spec = build.read_spec(path)
    swapped, weights = spec.swap_ab, spec.scheduler.bands == "weights"
    hybrid = spec.scheduler.data_parallel
    tiles, k_tiles = PROBLEMS[problem]
    for ctas in CTAS:
        for bidx in (0, 1, 62, 63, 64, ctas // 2, ctas - 1):
            got = run_partition(lines, tiles, k_tiles, ctas, bidx)
            want = exact(tiles, k_tiles, ctas, bidx, swapped, weights, hybrid)
            assert got == want, (name, problem, ctas, bidx)


def test_the_emulation_catches_the_32_bit_lines() -> None:
    """The lines the kernels had before: the emulation reproduces the H200 failures."""
    share = """
def stream_k_share(bidx, ctas, bands, band_tiles, k_tiles):
    total_iters = bands * band_tiles * k_tiles
    it_begin = bidx * total_iters // ctas
    it_end = (bidx + 1) * total_iters // ctas
    return 0, ctas, 0, total_iters, it_begin, it_end
"""
    per_cta = [
        (
            "sk_cta0, sk_ctas, sk_iter0, sk_iters, it_begin, it_end = stream_k_share("
            "bidx, gdimx, tiles_m, tiles_n, k_tiles)"
        ),
        "first_tile, last_tile = (it_begin // k_tiles, (it_end - 1) // k_tiles)",
    ]
    per_unit = [
        "tile_iter0 = 0",
        "k_begin = cutlass.max(it_begin - t * k_tiles, 0)",
        "k_end = cutlass.min(it_end - t * k_tiles, k_tiles)",
    ]
    last_cta = "last_cta = ((t + 1) * k_tiles * gdimx - 1) // sk_iters"
    old = (share, "\n".join(per_cta), "\n".join(per_unit), last_cta, "t")
    for problem in list(PROBLEMS)[:2]:
        (tm, tn), k_tiles = PROBLEMS[problem]
        assert tm * tn * k_tiles == 2**25
        # one band, as one share of all tiles was: CTA 62's products stay under 2^31; CTA 63's
        # range ends wrapped, CTA 64's begins so
        one_band = (1, tm * tn)
        assert run_partition(old, one_band, k_tiles, 132, 62) == exact(one_band, k_tiles, 132, 62)
        got = run_partition(old, one_band, k_tiles, 132, 63)
        assert got["it_end"] < 0 and got != exact(one_band, k_tiles, 132, 63), problem
        assert run_partition(old, one_band, k_tiles, 132, 64)["it_begin"] < 0, problem


@pytest.mark.parametrize("name", SK_NAMES)
def test_host_counts_iterations_in_64_bits(name: str) -> None:
    """The host's CTA count (min(iterations, one per SM, SK_CTAS), at least 1) must not wrap
    either."""
    src = next(p for p in STREAMK if p.stem == name).read_text(encoding="utf-8")
    host = src[src.index("\ndef gemm(") :]
    assert "k_iters = cutlass.Int64(" in host
    # at least one CTA: K = 0 makes no iteration, and CUDA rejects an empty grid
    assert "cutlass.Int32(cutlass.max(cutlass.min(k_iters, max_workers(sm_count)), 1))" in host
    # one CTA per SM of the GPU, never more than the workspace's slots
    assert "    return min(sm_count, SK_CTAS)\n" in src


@pytest.mark.parametrize("name", SK_NAMES)
def test_plan_expects_the_64_bit_divisions(name: str) -> None:
    spec = build.read_spec(next(p for p in STREAMK if p.stem == name))
    assert plan.expected_counts(spec)["div.s64"] == STREAMK_WIDE_DIVS == 5


def test_other_kernels_expect_no_64_bit_division() -> None:
    others = [p for p in kernel_glob() if p not in STREAMK]
    assert others
    for path in others:
        assert plan.expected_counts(build.read_spec(path)).get("div.s64") == 0, path.name


def test_nothing_refuses_stream_k_for_its_size() -> None:
    """The launcher and the package's dispatcher no longer refuse big stream-K problems."""
    for path in STREAMK:
        assert "partition math" not in path.read_text(encoding="utf-8")
    runtime = (STREAMK[0].parent.parent / "_runtime.py").read_text(encoding="utf-8")
    assert "partition math" not in runtime and "sk_ctas" not in runtime


@pytest.mark.build
def test_stream_k_ptx_has_64_bit_division(tmp_path: Path) -> None:
    """One kernel per arch, cross-compiled: its PTX divides in 64 bits (div.s64) where the plan
    says; the other counts are checked by `codegen build` (tests/test_build.py)."""
    picks = [next(p for p in STREAMK if p.parent.name == arch) for arch in ("sm90", "sm100")]
    for r in build.build(picks, tmp_path, jobs=1):
        assert r.passed, (r.name, r.error or r.mismatches)
        assert r.counts["div.s64"] == STREAMK_WIDE_DIVS
