"""The protocol model a kernel file is turned into: per-actor linear op traces.

An *actor* is a group of threads of one CTA that execute the same op sequence: one warp, or, where
a warp's lanes take different paths (``if lane < 2``, ``if ctidx == 0``), one class of its lanes.
``threads`` is how many threads the actor stands for: an ``mbarrier.arrive`` outside
``elect_one`` arrives once per thread, a named barrier counts threads.

Everything an op names is concrete: barriers are ``Bar(cta, name, index)``, buffers are
``Res(cta, space, root, slot)`` (``slot`` None = the whole buffer), global flag words are
``Word(root, byte_offset)``. CTA ids are launch-wide linear block indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Bar(NamedTuple):
    """An mbarrier: ``name[index]`` in the shared memory of CTA ``cta``."""

    cta: int
    name: str
    index: int

    def show(self, here: int | None = None) -> str:
        where = "" if here == self.cta else f"@cta{self.cta}"
        return f"{self.name}[{self.index}]{where}"


class Res(NamedTuple):
    """A buffer: ``root`` (an SMEM allocation, TMEM, or a global workspace) of CTA ``cta``
    (-1 for global memory), restricted to ``slot`` (a ring stage, accumulator slot, workspace
    slot) or the whole of it when ``slot`` is None."""

    cta: int
    space: str  # "smem" | "tmem" | "gmem"
    root: str
    slot: int | None
    piece: int | None = None  # the slice one CTA of a multicast loads (None: all of it)
    # a thread-partitioned view: (how it is partitioned, the thread coordinates of this actor);
    # generic accesses of one partitioning by disjoint threads touch disjoint elements
    part: tuple | None = None

    def overlaps(self, other: Res) -> bool:
        return (
            self.cta == other.cta
            and self.space == other.space
            and self.root == other.root
            and (self.slot is None or other.slot is None or self.slot == other.slot)
            and (self.piece is None or other.piece is None or self.piece == other.piece)
        )

    def show(self, here: int | None = None) -> str:
        where = "" if here == self.cta or self.cta < 0 else f"@cta{self.cta}"
        slot = "" if self.slot is None else f"[{self.slot}]"
        piece = "" if self.piece is None else f".slice{self.piece}"
        return f"{self.root}{slot}{piece}{where}"


class Word(NamedTuple):
    """A 32-bit word of global memory (a flag): ``root`` + ``offset`` bytes."""

    root: str
    offset: int

    def show(self) -> str:
        return f"{self.root}+{self.offset}"


# Op kinds and their args (all tuples of concrete values):
#   init (bar, count)                       mbarrier.init
#   arrive (bar, count, tx, scope)          mbarrier.arrive[.expect_tx]: count arrivals, tx bytes;
#                                           scope "cta" (the PTX default) or "cluster"
#   expect_tx (bar, tx)                     mbarrier.expect_tx
#   wait (bar, parity)                      mbarrier.try_wait.parity loop (blocking)
#   tma_load (dests, bars, bytes)           bulk tensor copy global -> shared; dests[i] lands on
#                                           bars[i] (complete_tx of `bytes` there)
#   tma_store (res,)                        bulk tensor copy shared -> global (async read of res)
#   bulk_commit ()  bulk_wait (n,)          cp.async.bulk commit_group / wait_group.read n
#   umma (reads, writes)                    tcgen05.mma (async until a later commit completes)
#   umma_commit (bars,)                     tcgen05.commit: one arrive on each bar once every
#                                           earlier MMA of this thread has completed
#   wgmma (reads,) wgmma_commit () wgmma_wait (n,)
#   tmem_ld (res,)  tmem_wait_ld ()         tcgen05.ld / tcgen05.wait::ld
#   read (res,)  write (res,)               generic-proxy (thread) loads / stores
#   fence_proxy (kind,)                     fence.proxy.<kind>
#   nbar (cta, id, threads_expected, wait)  bar.sync (wait) / bar.arrive on a named barrier
#   cluster_arrive (cluster,) cluster_wait (cluster,)
#   warp_sync (cta, warp)                   elect.sync / __syncwarp of a split warp
#   gstore (word, value, sem)               st[.release] of a global flag word
#   await (word, op, value, sem)            spin on ld[.acquire] until `word op value`
#   clc_query (bar, res)                    clusterlaunchcontrol.try_cancel -> res, 16 tx bytes
#   clc_read (res,)                         reading the answer
#   tmem_alloc (cta,)  tmem_dealloc (cta,)
#   fence (name,)                           a fence verify does not model (listed in notes)
#   gdc_wait ()                             griddepcontrol.wait (PDL: the previous grid is done)
# warps of a warpgroup: a wgmma group is one operation of its 4 warps (it runs once every one
# of them has committed it, and a wait_group in any of them retires it for all)
WARPGROUP_WARPS = 4
SYNC_KINDS = frozenset(
    {
        "init",
        "arrive",
        "expect_tx",
        "wait",
        "tma_load",
        "tma_store",
        "bulk_commit",
        "bulk_wait",
        "umma",
        "umma_commit",
        "wgmma",
        "wgmma_commit",
        "wgmma_wait",
        "tmem_ld",
        "tmem_wait_ld",
        "fence_proxy",
        "nbar",
        "cluster_arrive",
        "cluster_wait",
        "warp_sync",
        "gstore",
        "await",
        "clc_query",
        "clc_read",
        "tmem_alloc",
        "tmem_dealloc",
    }
)


class Op(NamedTuple):
    kind: str
    args: tuple
    threads: int  # threads executing it (arrive counts and named barriers count threads)
    line: int  # source line of the op in the kernel file
    site: tuple  # unrolled site: (call-stack lines, constexpr loop indices)


@dataclass
class Actor:
    """One warp (or lane class of a warp) of one CTA, and its op trace."""

    name: str
    cta: int
    warp: int
    lanes: tuple[int, ...]
    ops: list[Op] = field(default_factory=list)

    @property
    def threads(self) -> int:
        return len(self.lanes)


@dataclass
class LaunchModel:
    """One kernel launch: the modelled CTAs and their actors."""

    kernel: str
    grid: tuple[int, int, int]
    block: int
    cluster: tuple[int, int, int]
    ctas: list[int]  # modelled CTA ids
    actors: list[Actor]
    clamped: bool = False  # the grid was capped (a device with fewer SMs)
    full_grid: bool = True  # every CTA of the grid is modelled
    pdl: bool = False  # programmatic dependent launch: global accesses wait on griddepcontrol

    def cluster_of(self, cta: int) -> int:
        x, y, z = coords(cta, self.grid)
        cx, cy, cz = self.cluster
        gx, gy = self.grid[0] // cx, self.grid[1] // cy
        return x // cx + gx * (y // cy + gy * (z // cz))

    def rank_of(self, cta: int) -> int:
        x, y, z = coords(cta, self.grid)
        cx, cy, cz = self.cluster
        return x % cx + cx * (y % cy + cy * (z % cz))

    def cta_of_rank(self, cta: int, rank: int) -> int:
        """The CTA of cluster rank `rank` in `cta`'s cluster."""
        x, y, z = coords(cta, self.grid)
        cx, cy, cz = self.cluster
        rx, ry, rz = rank % cx, (rank // cx) % cy, rank // (cx * cy)
        return linear((x - x % cx + rx, y - y % cy + ry, z - z % cz + rz), self.grid)


def coords(cta: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    gx, gy, _ = grid
    return cta % gx, (cta // gx) % gy, cta // (gx * gy)


def linear(xyz: tuple[int, int, int], grid: tuple[int, int, int]) -> int:
    gx, gy, _ = grid
    return xyz[0] + gx * (xyz[1] + gy * xyz[2])


@dataclass
class KernelModel:
    """Every launch of one call of the host `gemm` function, in stream order."""

    launches: list[LaunchModel]
    notes: list[str] = field(default_factory=list)
