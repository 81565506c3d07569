"""Does compute-sanitizer's racecheck understand a cross-CTA hand-off through an mbarrier?

A 2-CTA cluster, 128 threads per CTA. CTA rank 1 writes 128 floats into its own shared memory;
CTA rank 0 reads them through distributed shared memory (ld.shared::cluster) and stores them to
global memory. The hand-off is synchronized three ways (MODE):

  mbarrier  what the split-K kernels do: each rank-1 warp, after its stores and a __syncwarp,
            arrives (release, cluster scope) on an mbarrier in rank 0's shared memory, the
            same `cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=...)` call the DSL's
            own PipelineAsync makes for a remote consumer release; rank 0 waits on it with
            mbarrier.try_wait.parity.acquire.cluster before reading
  cluster   barrier.cluster.arrive.release / barrier.cluster.wait.acquire between the write and
            the read
  none      no synchronization between the write and the read (a real race: the control)

Every mode ends with a cluster barrier, so rank 1 outlives rank 0's reads. Run each mode under
`compute-sanitizer --tool racecheck python tools/probe_dsmem_racecheck.py MODE`; it prints the
values rank 0 read against the values rank 1 wrote. With `--compile-only` it compiles the three
modes for sm_90a on a CPU (no GPU).
"""


import sys

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import nvvm

THREADS = 128
WARPS = THREADS // 32
MODES = ("mbarrier", "cluster", "none")


@cute.struct
class Storage:
    staged: cute.struct.MemRange[cutlass.Int64, 1]  # rank 0: rank 1's values are staged
    values: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, THREADS], 128]


@cute.jit
def wait_cluster_acquire(bar: cute.Pointer, parity: cutlass.Int32):
    done = cutlass.Boolean(False)
    while not done:
        done = cutlass.Boolean(
            nvvm.mbarrier_wait_parity(
                bar.llvm_ptr,
                cutlass.Int32(parity).ir_value(),
                nvvm.MBarrierWaitKind.TRY,
                scope=nvvm.MBarrierScopeKind.CLUSTER,
                order=nvvm.MemOrderKind.ACQUIRE,
            )
        )


@cute.kernel
def handoff_kernel(out: cute.Tensor, mode: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    rank = bidx % 2
    smem = cutlass.memory.SmemAllocator()
    storage = smem.allocate(Storage)
    staged = storage.staged.data_ptr()
    values = storage.values.get_tensor(cute.make_layout(THREADS))
    if warp_idx == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(staged, WARPS)  # one arrive per rank-1 warp
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()  # every barrier is initialized before any remote arrive

    if rank == 1:
        values[tidx] = cutlass.Float32(tidx) + cutlass.Float32(0.5)
        if cutlass.const_expr(mode == "mbarrier"):
            cute.arch.sync_warp()
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(
                    staged, peer_cta_rank_in_cluster=0, scope=nvvm.MemScopeKind.CLUSTER
                )
    if cutlass.const_expr(mode == "cluster"):
        cute.arch.cluster_arrive()  # release
        cute.arch.cluster_wait()  # acquire
    if rank == 0:
        if cutlass.const_expr(mode == "mbarrier"):
            wait_cluster_acquire(staged, 0)
        mine = cute.make_layout(1)
        peer = cute.make_tensor(cute.arch.map_dsmem_ptr(values.iterator + tidx, 1), mine)
        got = cute.make_rmem_tensor(mine, cutlass.Float32)
        cute.autovec_copy(peer, got)  # ld.shared::cluster of rank 1's value
        out[tidx] = got[0]
    # rank 1 must not exit while rank 0 may still read its shared memory
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def handoff(out: cute.Tensor, mode: cutlass.Constexpr):
    handoff_kernel(out, mode).launch(grid=(2, 1, 1), block=(THREADS, 1, 1), cluster=(2, 1, 1))


def main() -> None:
    if sys.argv[1:] == ["--compile-only"]:
        from cutlass.cute.runtime import make_fake_compact_tensor

        for mode in MODES:
            fake = make_fake_compact_tensor(cutlass.Float32, (THREADS,))
            cute.compile(handoff, fake, mode, options="--gpu-arch sm_90a")
            print(f"{mode}: compiled for sm_90a")
        return
    import torch
    from cutlass.cute.runtime import from_dlpack

    mode = sys.argv[1]
    out = torch.full((THREADS,), float("nan"), device="cuda", dtype=torch.float32)
    want = torch.arange(THREADS, device="cuda", dtype=torch.float32) + 0.5
    handoff(from_dlpack(out), mode)
    torch.cuda.synchronize()
    wrong = int((out != want).sum())
    print(f"PROBE {mode}: {THREADS - wrong}/{THREADS} values read correctly")


if __name__ == "__main__":
    main()
