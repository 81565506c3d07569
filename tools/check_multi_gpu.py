"""cutegemm.gemm on a host of several GPUs, against float32 torch references on fresh random inputs
(outputs poisoned with NaN first):

1. one process: gemm (plain, bias, FP8 row-wise scales) on every device while another device is
   the current one, alternating devices call by call (per-device compiled kernels, workspaces
   and plans), and a CUDA graph captured on each device;
2. a tensor-parallel MLP over two processes (torch.distributed, NCCL): the up projection split
   by columns (each rank holds half of W_up's rows), SiLU, the down projection split by rows
   (each rank holds half of W_down's columns), an all-reduce of the two partial outputs,
   against the whole MLP run in float32 on one GPU.

    python tools/check_multi_gpu.py  (on a host of >= 2 GPUs, from the repository root;
                                      PYTHONPATH as .ci/gpu sets)

Prints a table per part and exits 1 on any error above its tolerance.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

TOL = 1e-2  # bf16 inputs and outputs, f32 accumulation (the package's bf16 tolerance)
TOL_FP8 = 2e-2  # e4m3 inputs with row-wise scales, bf16 out
SHAPES = ((1, 4096, 4096), (128, 1024, 2048), (777, 3072, 1024))
MLP = (256, 2048, 5632)  # tokens, hidden, intermediate (two ranks: 2816 each)


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()


def one(dev: torch.device, m: int, n: int, k: int, mode: str) -> float:
    """One call on `dev` (not necessarily the current device); its relative error."""
    g = torch.Generator(device=dev).manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device=dev, generator=g)
    w = torch.randn(n, k, device=dev, generator=g) / k**0.5
    out = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
    if mode == "plain":
        a16, w16 = a.bfloat16(), w.bfloat16()
        cutegemm.gemm(a16, w16, out=out)
        return rel(out, a16.float() @ w16.float().T)
    if mode == "bias":
        a16, w16 = a.bfloat16(), w.bfloat16()
        bias = torch.randn(n, device=dev, generator=g).bfloat16()
        cutegemm.gemm(a16, w16, bias=bias, out=out)
        return rel(out, a16.float() @ w16.float().T + bias.float())
    # e4m3 with row-wise scales
    sa = a.abs().amax(1).clamp_min(1e-12) / 448
    sb = w.abs().amax(1).clamp_min(1e-12) / 448
    a8 = (a / sa[:, None]).to(torch.float8_e4m3fn)
    w8 = (w / sb[:, None]).to(torch.float8_e4m3fn)
    cutegemm.gemm(a8, w8, scale_a=sa, scale_b=sb, out=out)
    ref = (a8.float() * sa[:, None]) @ (w8.float() * sb[:, None]).T
    return rel(out, ref)


def part1() -> bool:
    n_dev = torch.cuda.device_count()
    print(f"## 1. one process, {n_dev} GPUs ({torch.cuda.get_device_name(0)})\n")
    print("| call | device | current device | M | N | K | rel_err | tol | ok |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ok = True
    for rnd in range(2):  # twice: the second round reuses every device's plans and kernels
        for m, n, k in SHAPES:
            for mode in ("plain", "bias", "fp8 row-wise"):
                for d in range(n_dev):
                    cur = (d + 1) % n_dev  # another device is the current one
                    torch.cuda.set_device(cur)
                    err = one(torch.device("cuda", d), m, n, k, mode)
                    tol = TOL_FP8 if mode.startswith("fp8") else TOL
                    good = err <= tol  # NaN (a poisoned element left) fails
                    ok &= good
                    if rnd == 0 or not good:
                        print(f"| {mode} | {d} | {cur} | {m} | {n} | {k} | {err:.2e} | {tol:g} "
                              f"| {'yes' if good else 'NO'} |")  # fmt: skip
    # a CUDA graph per device, captured and replayed with new inputs
    for d in range(n_dev):
        dev = torch.device("cuda", d)
        torch.cuda.set_device(d)
        a = torch.randn(64, 1024, device=dev).bfloat16()
        w = torch.randn(2048, 1024, device=dev).bfloat16()
        out = torch.empty(64, 2048, device=dev, dtype=torch.bfloat16)
        cutegemm.gemm(a, w, out=out)  # plan and compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            cutegemm.gemm(a, w, out=out)
        a.copy_(torch.randn(64, 1024, device=dev).bfloat16())
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize(dev)
        err = rel(out, a.float() @ w.float().T)
        good = err <= TOL
        ok &= good
        print(f"| CUDA graph replay | {d} | {d} | 64 | 2048 | 1024 | {err:.2e} | {TOL:g} | "
              f"{'yes' if good else 'NO'} |")  # fmt: skip
    return ok


def _rank(rank: int, world: int, port: int, result) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank)
    )
    tokens, hidden, inter = MLP
    g = torch.Generator(device="cuda").manual_seed(0)  # the same full weights on every rank
    x = torch.randn(tokens, hidden, device="cuda", generator=g).bfloat16()
    w_up = (torch.randn(inter, hidden, device="cuda", generator=g) / hidden**0.5).bfloat16()
    w_down = (torch.randn(hidden, inter, device="cuda", generator=g) / inter**0.5).bfloat16()
    share = inter // world
    up = w_up[rank * share : (rank + 1) * share].contiguous()  # column-parallel: rows of W_up
    down = w_down[:, rank * share : (rank + 1) * share].contiguous()  # row-parallel: columns
    h = cutegemm.gemm(x, up)
    y = cutegemm.gemm(F.silu(h.float()).bfloat16(), down, out_dtype=torch.float32)
    dist.all_reduce(y)
    if rank == 0:
        ref = F.silu(x.float() @ w_up.float().T).bfloat16().float() @ w_down.float().T
        result.put(rel(y, ref))
    dist.barrier()
    dist.destroy_process_group()


def part2() -> bool:
    world = 2
    print(f"\n## 2. tensor-parallel MLP over {world} GPUs (NCCL)\n")
    ctx = mp.get_context("spawn")
    result = ctx.SimpleQueue()
    port = 29500 + os.getpid() % 1000
    mp.start_processes(_rank, args=(world, port, result), nprocs=world, start_method="spawn")
    err = result.get()
    good = err <= TOL
    tokens, hidden, inter = MLP
    print("| tokens | hidden | intermediate | ranks | rel_err vs one-GPU f32 | tol | ok |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    print(f"| {tokens} | {hidden} | {inter} | {world} | {err:.2e} | {TOL:g} | "
          f"{'yes' if good else 'NO'} |")  # fmt: skip
    return good


def main() -> None:
    if torch.cuda.device_count() < 2:
        sys.exit(f"needs >= 2 GPUs, this host has {torch.cuda.device_count()}")
    ok = part1()
    ok &= part2()
    print(f"\n{'all passed' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
