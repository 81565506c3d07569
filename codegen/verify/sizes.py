"""Which problem sizes verify traces for a kernel file.

K is chosen for k-tile counts around the ring: 1, STAGES - 1, STAGES, STAGES + 1 and
2 * STAGES + 1, and K = 0. M and N are whole cluster tiles; for schedulers that walk several
tiles per CTA (persistent, split-K over clusters) the tile count is W * (t - 1) + 1 for W workers
(learnt from the host's own launch of a large problem), so the first worker gets t = 1, 2 or 3
tiles, each with every k-tile count (a ring position after a tile depends on both); a dynamic
(CLC) scheduler gets t - 1 successful answers and then a failed one. Stream-K CTAs share
tiles through global flags, so every CTA is modelled: the grid is capped at 2 to 4 CTAs (a device
with that many SMs: the kernel splits the work by gridDim), besides the host's own grid for a
few iterations; the data-parallel + stream-K hybrid adds grids with whole data-parallel waves and
split stream-K tiles after them, more tiles than twice the CTAs.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.verify.trace import KernelSource, Problem


@dataclass(frozen=True)
class Case:
    label: str  # e.g. "k=5 t=2"
    problem: Problem
    k_tiles: int
    tiles: int  # tiles of the first worker (stream-K: tiles of the problem)


def family(ks: KernelSource) -> str:
    sched = ks.spec.get("scheduler", {})
    kind = sched.get("kind", "grid") if isinstance(sched, dict) else "grid"
    if kind == "split_k" and sched.get("reduce") == "separate":
        return "split_k_separate"
    return str(kind)


def _units(ks: KernelSource) -> tuple[int, int, int]:
    spec = ks.spec
    tile = spec.get("tile", {})
    cluster = spec.get("cluster", {"m": 1, "n": 1})
    group = int(spec.get("cta_group", 1) or 1)
    um = int(tile["m"]) * max(1, int(cluster.get("m", 1)) // group)
    un = int(tile["n"]) * int(cluster.get("n", 1))
    return um, un, int(tile["k"])


def _problem(ks: KernelSource, tiles: int, k_tiles: int, n_tiles: int = 1, **kw: object) -> Problem:
    um, un, uk = _units(ks)
    m, n = tiles * um, n_tiles * un
    if ks.spec.get("swap_ab"):
        m, n = n, m
    return Problem(m, n, k_tiles * uk, **kw)  # type: ignore[arg-type]


def _workers(ks: KernelSource) -> int:
    """Clusters the host launches for a problem far larger than the device."""
    launches = ks.host_launches(_problem(ks, 4096, 1))
    req = launches[0]
    gx, gy, gz = req.grid
    cx, cy, cz = req.cluster
    return max(1, (gx * gy * gz) // (cx * cy * cz))


TILES = (1, 2, 3)  # tiles of the first worker (persistent, split-K clusters, dynamic)


def k_counts(stages: int) -> list[int]:
    return sorted({k for k in (1, stages - 1, stages, stages + 1, 2 * stages + 1) if k >= 1})


def cases(ks: KernelSource) -> list[Case]:
    stages = int(ks.constant("STAGES", 2))
    kinds = family(ks)
    ks_list = k_counts(stages)
    splits = ks.constant("SPLITS")
    if kinds.startswith("split_k") and isinstance(splits, int) and splits > 1:
        # each CTA of a tile runs k / SPLITS k-tiles: scale so that its share goes around the
        # ring the same ways; k = 1 leaves empty shares
        ks_list = sorted({1, *(k * splits for k in ks_list)})
    # K = 0 (last): no k-tile at all, every wait, release and commit of the k-loop skipped; a
    # stream-K host must not launch an empty grid
    ks_list = [*ks_list, 0]
    out: list[Case] = []
    # 2 x 2 tiles (clusters): the numeric emulation sees a load or store at another tile's
    # coordinates (with one tile, or tiles along M only, every N coordinate is 0); grids of
    # at most 8 CTAs are modelled whole (trace.MAX_FULL_GRID), larger ones by the first cluster
    k2 = 2 * splits if kinds.startswith("split_k") and isinstance(splits, int) else 2
    grid2 = Case(f"k={k2} tiles=2x2", _problem(ks, 2, k2, n_tiles=2), k2, 1)
    if kinds == "split_k_separate":
        # (tiles x splits) CTAs: 2 x 1 and 1 x 2 tiles keep the grid whole for 4 splits
        for k in ks_list:
            out.append(Case(f"k={k}", _problem(ks, 1, k), k, 1))
        out.append(Case(f"k={k2} tiles=2x1", _problem(ks, 2, k2), k2, 1))
        out.append(Case(f"k={k2} tiles=1x2", _problem(ks, 1, k2, n_tiles=2), k2, 1))
        return out
    if kinds == "grid":
        for k in ks_list:
            out.append(Case(f"k={k}", _problem(ks, 1, k), k, 1))
        return [*out, grid2]
    if kinds == "stream_k":
        s = stages
        # (tiles, k-tiles, CTAs): the host's own grid for few iterations; uneven splits; CTAs
        # running 3+ units (every TMEM slot reused); shares going around the ring
        plan = [
            (1, 1, None),
            (2, 2, None),
            (1, 3, 2),
            (3, 2, 2),
            (5, 2, 2),
            (7, 1, 2),
            (2, s + 1, 3),
            (3, s, 2),
            (2, 2 * s + 1, 3),
            (4, 3, 3),
            (1, 0, None),
            (3, 0, 2),
        ]
        for tiles, k, cap in plan:
            label = f"k={k} tiles={tiles}" + (f" ctas<={cap}" if cap else "")
            out.append(Case(label, _problem(ks, tiles, k, grid_cap=cap), k, tiles))
        out.append(Case("k=2 tiles=2x2 ctas<=3", _problem(ks, 2, 2, 2, grid_cap=3), 2, 4))
        # two bands (rows of tiles; columns with swap AB; the other way round with bands along
        # the weights) of 3 tiles on 3 CTAs: groups of 1 and 2 CTAs (the cap overrides the host's
        # equal groups), the second splitting a tile, so a share or finisher outside its group
        # shows
        sched = ks.spec.get("scheduler")
        weights = isinstance(sched, dict) and sched.get("bands") == "weights"
        rows, cols = (3, 2) if bool(ks.spec.get("swap_ab")) != weights else (2, 3)
        label = f"k=2 tiles={rows}x{cols} ctas<=3"
        out.append(Case(label, _problem(ks, rows, 2, cols, grid_cap=3), 2, 6))
        if isinstance(sched, dict) and sched.get("data_parallel"):
            # the data-parallel + stream-K hybrid: whole tiles in waves, then stream-K over the
            # last full wave and the partial one (plan_common.stream_k_hybrid_units). Above, 5
            # and 7 tiles on 2 CTAs have 1 and 2 data-parallel waves; here split stream-K tiles
            # after 2 waves and after 1 wave of 3 CTAs, data-parallel alone (6 tiles on 3 CTAs),
            # shares going around the ring, and a 3x3 grid of tiles (the persistent order's
            # coordinates on both axes) with 3 waves of 2
            for tiles, k, cap in ((7, 3, 2), (7, 2, 3), (6, 2, 3), (5, s + 1, 2)):
                label = f"k={k} tiles={tiles} ctas<={cap}"
                out.append(Case(label, _problem(ks, tiles, k, grid_cap=cap), k, tiles))
            out.append(Case("k=2 tiles=3x3 ctas<=2", _problem(ks, 3, 2, 3, grid_cap=2), 2, 9))
        return out
    # every k-tile count with 1, 2 and 3 tiles for the first worker: where a ring position
    # depends on both (a ping-pong warpgroup skipping the other's k_tiles positions after its
    # first tile), only some products wrap the ring differently
    combos = [(k, t) for k in ks_list for t in TILES]
    if kinds == "dynamic":
        for k, t in combos:
            answers = (True,) * (t - 1) + (False,)
            p = _problem(ks, max(9, t), k, clc_answers=answers, numeric=t < 3)
            out.append(Case(f"k={k} t={t}", p, k, t))
        return [*out, grid2]
    # persistent schedulers (and split-K over clusters): W workers, the first gets t tiles
    w = _workers(ks)
    for k, t in combos:
        # the numeric check on 1 and 2 tiles per worker (a third adds no data path; the
        # protocol check needs it for the ring positions)
        p = _problem(ks, w * (t - 1) + 1, k, numeric=t < 3)
        out.append(Case(f"k={k} t={t}", p, k, t))
    if kinds != "split_k":
        # 2 x 2 tiles: a grid of at most 8 CTAs (clusters of up to 2) is modelled whole
        return [*out, grid2]
    # split-K over clusters of SPLITS CTAs: 2 x 2 tiles would be more than 8 CTAs, of which only
    # the first cluster (tile 0) is modelled; with W x 2 tiles the first cluster's second tile
    # is in the second tile column (the tiles are rastered along M): its N coordinate is not 0
    out.append(Case(f"k={k2} tiles={w}x2", _problem(ks, w, k2, n_tiles=2), k2, 2))
    return out
