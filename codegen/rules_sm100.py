"""Blackwell (sm_100a) rules: tcgen05 MMA shapes, TMEM, clusters, and what the templates implement.

Each legality condition lives in one function here; :func:`check` collects them. The planner
(:mod:`codegen.plan_sm100`) takes every derived number (masks, arrive counts, TMEM columns) from
the helpers above the rules, so the docstrings, the kernel and the build's expected counts agree.
"""

from __future__ import annotations

from typing import Literal

from codegen.rules import (
    DTYPE_BYTES,
    MBARRIER_BYTES,
    SWIZZLE_BYTES,
    Violation,
    auto_swizzle,
    is_power_of_two,
    stage_bytes,
)
from codegen.spec import PersistentScheduler, Spec, TmaStoreEpilogue

TMEM_COLUMNS = 512
TMEM_LANES = 128  # one CTA's accumulator rows: the epilogue maps 4 warps x 32 lanes onto them
SM_COUNT = 148  # B200
EPILOGUE_WARPS = 4  # one per 32-lane quarter of TMEM
EPI_TILE = (128, 64)  # TMA-store sub-tile: 128 rows x 64 columns (128-byte rows in f16/bf16)
EPI_BUFS = 2  # SMEM sub-tile buffers: the TMA store of one overlaps filling the next
MULTICAST_MIN_ROWS = 8  # a multicast slice of an operand tile holds whole 8-row swizzle atoms
CLUSTER_MAX = 16  # CTAs in a portable cluster (the cluster-size rule lives in rules.check)

ClusterKind = Literal["single", "multicast", "pair"]


# ---- MMA shape and TMEM -------------------------------------------------------------------------


def tcgen05_f16_shape_ok(m: int, n: int, cta_group: int = 1) -> bool:
    """Legal tcgen05.mma kind::f16 shapes. One CTA: M 64 with N % 8, or M 128 with N % 16.
    A CTA pair (cta_group 2): M 128 or 256 with N a multiple of 16 in [16, 256]."""
    if cta_group == 2:
        return m in (128, 256) and n % 16 == 0 and 16 <= n <= 256
    if m == 64:
        return n % 8 == 0 and 8 <= n <= 256
    if m == 128:
        return n % 16 == 0 and 16 <= n <= 256
    return False


def tmem_columns(tile_n: int, slots: int = 1) -> int:
    """tcgen05.alloc takes a power of two >= 32 columns; one f32 column per output column."""
    need = tile_n * slots
    cols = 32
    while cols < need:
        cols *= 2
    return cols


def spec_tmem_columns(spec: Spec) -> int:
    """TMEM columns one CTA allocates: N f32 columns per accumulator slot (a CTA pair allocates
    the same columns in both CTAs, each holding its 128 rows)."""
    return tmem_columns(spec.tile.n, spec.accumulators)


# ---- how the CTAs of a cluster cooperate --------------------------------------------------------


def cluster_kind(spec: Spec) -> ClusterKind:
    """How the CTAs of a cluster cooperate. "pair": the two CTAs of a cta_group::2 MMA;
    "multicast": 1-CTA MMAs whose cluster shares operand tiles by TMA multicast; "single": a CTA
    on its own."""
    if spec.cta_group == 2:
        return "pair"
    return "multicast" if spec.cluster.size > 1 else "single"


def is_persistent(spec: Spec) -> bool:
    return isinstance(spec.scheduler, PersistentScheduler)


def multicast_ctas(spec: Spec) -> tuple[int, int]:
    """CTAs each A tile and each B tile is multicast to (1: loaded by its CTA alone).

    Multicast happens along a cluster dimension > 1: the CTAs of one cluster row (same M
    coordinate, cluster.n of them) need the same A tile, those of one column (cluster.m) the same
    B tile. Each loads a 1/cluster.n slice of A and a 1/cluster.m slice of B and multicasts it.
    """
    if cluster_kind(spec) != "multicast":
        return 1, 1
    return spec.cluster.n, spec.cluster.m


def multicast_masks(spec: Spec) -> tuple[int, int]:
    """Cluster-rank masks of the CTAs that share A (and B) with the CTA at (0, 0), where the rank
    of CTA (cm, cn) is cm + cluster.m * cn. CTA (cm, cn) shifts the A mask by cm and the B mask
    by cluster.m * cn."""
    cm, cn = spec.cluster.m, spec.cluster.n
    return sum(1 << (cm * j) for j in range(cn)), (1 << cm) - 1


def empty_arrives(spec: Spec) -> int:
    """Arrivals that free one ring slot: a tcgen05.commit from every CTA whose MMAs read what this
    CTA's producer wrote (itself, its A sharers and its B sharers); 1 for a single CTA and for a
    pair, whose leader commits once to both CTAs."""
    a, b = multicast_ctas(spec)
    return a + b - 1


def full_tx_bytes(spec: Spec) -> int:
    """Bytes the full barrier the MMA waits on expects per stage: everything landing in one CTA
    (its own slices plus its peers' multicast ones), or, for a pair, both CTAs' stages: the
    follower's cta_group::2 loads complete_tx on the leader's barrier."""
    return stage_bytes(spec) * spec.cta_group


def acc_empty_arrives(spec: Spec) -> int:
    """Arrivals that free an accumulator slot (persistent): one elected thread per epilogue warp
    of every CTA holding part of the accumulator, all on the barrier the MMA issuer waits on."""
    return EPILOGUE_WARPS * spec.cta_group


def max_workers(spec: Spec) -> int:
    """Persistent grid size in workers (CTAs, or CTA pairs): one per SM (or pair of SMs)."""
    sm_count = getattr(spec.scheduler, "sm_count", None) or SM_COUNT
    return sm_count // spec.cta_group


# ---- shared memory ------------------------------------------------------------------------------


def operand_rows_per_cta(spec: Spec) -> tuple[int, int]:
    """Rows of A and B one CTA holds per stage (a CTA pair splits both in half)."""
    return spec.tile.m // spec.cta_group, spec.tile.n // spec.cta_group


def loads_c_by_tma(spec: Spec) -> bool:
    """beta != 0 reads C; the TMA-store epilogue TMA-loads each C sub-tile into the SMEM buffer it
    then stores from (the direct epilogue reads C from global memory into registers)."""
    return isinstance(spec.epilogue, TmaStoreEpilogue) and spec.epilogue.beta != 0.0


def c_load_bytes(spec: Spec) -> int:
    """Bytes one C sub-tile TMA load delivers (the c_full barrier's tx count), 0 without one: the
    whole 128 x 64 box, zero-filled past M and N."""
    if not loads_c_by_tma(spec):
        return 0
    return EPI_TILE[0] * EPI_TILE[1] * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]


def barrier_count(spec: Spec, stages: int) -> int:
    """mbarriers in the kernel's Barriers struct: full and empty per stage; acc_full (grid) or
    acc_full and acc_empty per accumulator slot (persistent); a pair's TMEM-dealloc handshake;
    c_full when the TMA-store epilogue loads C (beta)."""
    acc = 2 * spec.accumulators if is_persistent(spec) else 1
    pair = 1 if spec.cta_group == 2 else 0
    return 2 * stages + acc + pair + (1 if loads_c_by_tma(spec) else 0)


def barrier_bytes(spec: Spec, stages: int) -> int:
    """The Barriers struct: its mbarriers and the 4-byte TMEM address slot."""
    return barrier_count(spec, stages) * MBARRIER_BYTES + 4


def epi_subtiles(spec: Spec) -> int:
    """TMA-store sub-tiles per output tile: one per 64 columns."""
    return spec.tile.n // EPI_TILE[1]


def epi_row_bytes(spec: Spec) -> int:
    """Bytes of one TMA-store sub-tile row in the output dtype (128 for f16/bf16, 256 for f32)."""
    return EPI_TILE[1] * DTYPE_BYTES[spec.epilogue.out_dtype or spec.dtype]


def epi_tma_boxes(spec: Spec) -> int:
    """TMA boxes per C sub-tile, each way (store, and load for beta): a swizzled box row spans at
    most one swizzle atom, so an f32 sub-tile (256-byte rows) is two 128 x 32 boxes."""
    row = epi_row_bytes(spec)
    return row // SWIZZLE_BYTES[auto_swizzle(row)]


def epilogue_smem_bytes(spec: Spec) -> int:
    """SMEM the TMA-store epilogue stages sub-tiles through (none for direct stores)."""
    if not isinstance(spec.epilogue, TmaStoreEpilogue):
        return 0
    out = spec.epilogue.out_dtype or spec.dtype
    return EPI_BUFS * EPI_TILE[0] * EPI_TILE[1] * DTYPE_BYTES[out]


def shape_multiples(spec: Spec) -> dict[str, int]:
    """What M, N and K must be multiples of. TMA needs 16-byte row strides (K, and N for a TMA
    store); TMA loads zero-fill and TMA stores clip partial tiles. The direct epilogue stores
    whole tiles unpredicated, and a cluster's grid is rounded up to whole clusters: M and N must
    then cover whole clusters of tiles."""
    if isinstance(spec.epilogue, TmaStoreEpilogue):
        return {"M": 1, "N": 8, "K": 8}
    clusters_m = 1 if is_persistent(spec) else spec.cluster.m // spec.cta_group
    clusters_n = 1 if is_persistent(spec) else spec.cluster.n
    return {"M": spec.tile.m * clusters_m, "N": spec.tile.n * clusters_n, "K": 8}


# ---- rules: each returns the violations of one condition ----------------------------------------


def shape_violations(spec: Spec) -> list[Violation]:
    """The tile must be a tcgen05 shape, and give each CTA the 128 TMEM lanes the epilogue maps."""
    t, pair = spec.tile, spec.cta_group == 2
    if not tcgen05_f16_shape_ok(t.m, t.n, spec.cta_group):
        if pair:
            legal = "M=128 or 256 with N a multiple of 16 in [16, 256]"
            return [
                Violation(
                    "tile",
                    f"tile {t.m}x{t.n} is not a tcgen05 kind::f16 shape for a CTA pair "
                    f"(cta_group=2); legal: {legal}",
                )
            ]
        return [
            Violation(
                "tile",
                f"tile {t.m}x{t.n} is not a tcgen05 kind::f16 shape for one CTA; legal: "
                "M=64 with N a multiple of 8 in [8, 256], or M=128 with N a multiple of 16 "
                "in [16, 256]",
            )
        ]
    if t.m != TMEM_LANES * spec.cta_group:
        if pair:
            return [
                Violation(
                    "tile",
                    f"tile M={t.m} with cta_group=2 is not implemented for sm_100a yet (each CTA "
                    f"of the pair maps 4 warps to 128 TMEM lanes); legal: {2 * TMEM_LANES}, the "
                    "pair's tile",
                )
            ]
        return [
            Violation(
                "tile",
                f"tile M={t.m} is not implemented for sm_100a yet (the epilogue maps 4 warps to "
                f"128 TMEM lanes); legal: {TMEM_LANES}",
            )
        ]
    return []


def tmem_violations(spec: Spec) -> list[Violation]:
    """Every accumulator slot needs N f32 columns; TMEM has 512 (2 slots: N <= 256)."""
    cols = spec_tmem_columns(spec)
    if cols <= TMEM_COLUMNS:
        return []
    return [
        Violation(
            "tile",
            f"tile N={spec.tile.n} x {spec.accumulators} accumulator slot(s) needs {cols} TMEM "
            f"columns; at most {TMEM_COLUMNS}",
        )
    ]


def cta_pair_violations(spec: Spec) -> list[Violation]:
    """cta_group=2 runs one MMA on two CTAs adjacent along M: cluster M must be even. The
    templates implement exactly the pair, [2, 1], with the warp-specialized mainloop."""
    if spec.cta_group != 2:
        return []
    out: list[Violation] = []
    m, n = spec.cluster.m, spec.cluster.n
    if m % 2:
        out.append(
            Violation(
                "cluster",
                f"cluster {m}x{n}: cta_group=2 runs each MMA on a CTA pair adjacent along M, so "
                "cluster M must be a multiple of 2; legal: [2, 1]",
            )
        )
    elif (m, n) != (2, 1):
        out.append(
            Violation(
                "cluster",
                f"cluster {m}x{n} with cta_group=2 (TMA multicast between CTA pairs) is not "
                "implemented for sm_100a yet; legal: [2, 1]",
            )
        )
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "cta_group=2 is implemented for the warp-specialized mainloop only (both CTAs "
                "load, the leader's MMA warp multiplies); legal: true",
            )
        )
    return out


def _largest_split(rows: int) -> int:
    """The most CTAs (a power of two, at most a cluster) a tile of `rows` splits among in whole
    8-row slices."""
    ctas = 1
    while ctas < CLUSTER_MAX and rows % (2 * ctas * MULTICAST_MIN_ROWS) == 0:
        ctas *= 2
    return ctas


def multicast_violations(spec: Spec) -> list[Violation]:
    """TMA multicast (cta_group 1 in a cluster > 1x1) splits a tile among the CTAs of a cluster
    dimension > 1; each slice must hold whole 8-row swizzle atoms. The templates implement it
    with the warp-specialized mainloop and the grid scheduler."""
    if cluster_kind(spec) != "multicast":
        return []
    out: list[Violation] = []
    a_ctas, b_ctas = multicast_ctas(spec)
    for operand, rows, ctas, dim in (
        ("A", spec.tile.m, a_ctas, "N"),
        ("B", spec.tile.n, b_ctas, "M"),
    ):
        # a cluster size that is not a power of two is reported by rules.check
        if ctas > 1 and is_power_of_two(ctas) and rows % (ctas * MULTICAST_MIN_ROWS):
            out.append(
                Violation(
                    "cluster",
                    f"cluster {spec.cluster.m}x{spec.cluster.n} multicasts each {operand} tile "
                    f"({rows} rows) to the {ctas} CTAs along the cluster's {dim}, in slices of "
                    f"{rows // ctas} rows, but a slice must be a multiple of "
                    f"{MULTICAST_MIN_ROWS} rows; legal: cluster {dim} at most {_largest_split(rows)}",
                )
            )
    if not spec.warp_specialized:
        out.append(
            Violation(
                "warp_specialized",
                "a cluster with TMA multicast is implemented for the warp-specialized mainloop "
                "only; legal: true (or cluster [1, 1])",
            )
        )
    if is_persistent(spec):
        out.append(
            Violation(
                "scheduler",
                "scheduler 'persistent' with a multicast cluster is not implemented for sm_100a "
                "yet; legal: grid (or cluster [1, 1], or cta_group=2 with cluster [2, 1])",
            )
        )
    return out


def direct_epilogue_covers(n: int) -> bool:
    """Whether N columns split into whole chunks of min(64, N), each a tcgen05.ld repetition."""
    cols = min(64, n)
    return n % cols == 0 and cols & (cols - 1) == 0


def epilogue_violations(spec: Spec) -> list[Violation]:
    """The direct epilogue reads TMEM in power-of-two chunks; the TMA-store epilogue stores 128x64
    sub-tiles. Both fuse alpha, beta, a row or column bias and relu / gelu_tanh / silu, and write
    f16, bf16 or f32 (templates/common/fusion.py.j2)."""
    out: list[Violation] = []
    n = spec.tile.n
    direct = not isinstance(spec.epilogue, TmaStoreEpilogue)
    # (an illegal MMA shape is reported once, by the tile rule)
    if direct and tcgen05_f16_shape_ok(spec.tile.m, n) and not direct_epilogue_covers(n):
        out.append(
            Violation(
                "tile",
                f"the direct epilogue reads TMEM in chunks of min(64, N) columns with one "
                f"power-of-two tcgen05.ld; tile N={n} does not split into such chunks; legal: N a "
                "power of two up to 64, or a multiple of 64",
            )
        )
    if isinstance(spec.epilogue, TmaStoreEpilogue) and spec.tile.n % EPI_TILE[1]:
        out.append(
            Violation(
                "epilogue",
                f"the TMA-store epilogue stores {EPI_TILE[0]}x{EPI_TILE[1]} sub-tiles; tile "
                f"N={spec.tile.n} is not a multiple of {EPI_TILE[1]}; legal: N a multiple of "
                f"{EPI_TILE[1]}, or epilogue 'direct'",
            )
        )
    return out


def scheduler_violations(spec: Spec) -> list[Violation]:
    """The persistent scheduler needs dedicated epilogue warps (warp specialization), an even
    number of TMA-store sub-tiles per tile (the two SMEM buffers alternate across tiles), and at
    least one worker's worth of SMs."""
    if not is_persistent(spec):
        return []
    out: list[Violation] = []
    if not spec.warp_specialized:
        out.append(
            Violation(
                "scheduler",
                "scheduler 'persistent' needs warp_specialized = true (dedicated epilogue warps "
                "drain one tile while the MMA warp runs the next); legal: grid",
            )
        )
    subtiles = epi_subtiles(spec)
    if isinstance(spec.epilogue, TmaStoreEpilogue) and subtiles and subtiles % EPI_BUFS:
        out.append(
            Violation(
                "scheduler",
                f"scheduler 'persistent' with the TMA-store epilogue needs an even number of "
                f"{EPI_TILE[1]}-column sub-tiles per tile (its {EPI_BUFS} SMEM buffers alternate "
                f"across tiles); tile N={spec.tile.n} gives {subtiles}; legal: N a multiple of "
                f"{EPI_BUFS * EPI_TILE[1]}",
            )
        )
    if spec.scheduler.group > 1:
        out.append(
            Violation(
                "scheduler",
                f"scheduler group={spec.scheduler.group} (tile swizzle) is not implemented for "
                "sm_100a yet; legal: 1",
            )
        )
    if max_workers(spec) < 1:
        out.append(
            Violation(
                "scheduler",
                f"scheduler sm_count={spec.scheduler.sm_count} is fewer than the {spec.cta_group} "
                f"SMs one CTA pair occupies; legal: at least {spec.cta_group}",
            )
        )
    return out


def accumulator_violations(spec: Spec) -> list[Violation]:
    """Two TMEM accumulator slots overlap one tile's epilogue with the next tile's MMAs: only a
    persistent CTA has a next tile."""
    if spec.accumulators == 1 or is_persistent(spec):
        return []
    return [
        Violation(
            "accumulators",
            f"accumulators={spec.accumulators} double-buffers the TMEM accumulator across the "
            'tiles of a persistent CTA: it needs scheduler = "persistent"; legal: 1 with the '
            "grid scheduler",
        )
    ]


def check(spec: Spec) -> list[Violation]:
    """Every sm_100a rule the spec breaks, in the order of the spec's fields."""
    out = shape_violations(spec) + tmem_violations(spec)
    if spec.dtype == "e4m3":
        out.append(Violation("dtype", "e4m3 is not implemented for sm_100a yet; legal: f16, bf16"))
    if spec.consumer_warpgroups is not None:
        out.append(
            Violation(
                "consumer_warpgroups",
                "consumer_warpgroups is a Hopper (sm_90a) knob; on sm_100a one thread issues "
                "the MMA: remove it",
            )
        )
    if spec.swap_ab:
        out.append(
            Violation("swap_ab", "swap_ab=True is not implemented for sm_100a yet; legal: False")
        )
    out += cta_pair_violations(spec)
    out += accumulator_violations(spec)
    out += multicast_violations(spec)
    out += epilogue_violations(spec)
    out += scheduler_violations(spec)
    if spec.scheduler.kind == "split_k":
        out.append(Violation("scheduler", "split_k is not implemented for sm_100a yet"))
    if spec.consumer_mode != "cooperative":
        out.append(Violation("consumer_mode", "consumer_mode=pingpong is a Hopper (sm_90a) knob"))
    return out
