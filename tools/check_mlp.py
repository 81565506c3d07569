"""A small MLP trained through cutegemm.nn.Linear under torch.compile, on a GPU, beside the same
model on torch.nn.Linear (same initial weights, same batches): the loss curves side by side, the
first step's gradients of both against a float32 reference, and the kernels one compiled
training step launches (torch profiler).

    python tools/check_mlp.py   (on a GPU, from the repository root; PYTHONPATH as .ci/gpu sets)
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import cutegemm.nn
import torch

STEPS, BATCH, WIDTH, HIDDEN = 30, 512, 1024, 4096
GRAD_TOL = 1e-2  # rel_err of each parameter's gradient against float32 (bf16 operands)
LOSS_TOL = 2e-2  # largest relative difference of the two loss curves


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(WIDTH, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.GELU(), torch.nn.Linear(HIDDEN, WIDTH),
    )  # fmt: skip


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()


def main() -> None:
    torch.manual_seed(0)
    ref32 = mlp().cuda()
    theirs = copy.deepcopy(ref32).to(torch.bfloat16)
    ours = cutegemm.nn.swap_linears(copy.deepcopy(theirs))
    target = torch.nn.Linear(WIDTH, WIDTH).cuda()  # a fixed random map the MLPs learn
    xs = [torch.randn(BATCH, WIDTH, device="cuda") for _ in range(STEPS)]
    ys = [target(x).detach() for x in xs]

    # first step's gradients of both bf16 models against the float32 model's
    for model in (ref32, theirs, ours):
        x = xs[0].to(next(model.parameters()).dtype)
        torch.nn.functional.mse_loss(model(x).float(), ys[0]).backward()
    worst = 0.0
    print("| parameter | torch bf16 rel_err | cutegemm rel_err |")
    print("|---|---:|---:|")
    for (name, p32), pt, po in zip(
        ref32.named_parameters(), theirs.parameters(), ours.parameters()
    ):
        et, eo = rel(pt.grad, p32.grad), rel(po.grad, p32.grad)
        worst = max(worst, eo)
        print(f"| {name} | {et:.2e} | {eo:.2e} |")
    for model in (theirs, ours):
        model.zero_grad(set_to_none=True)

    def trainer(model):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        @torch.compile
        def step(x, y):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
            loss.backward()
            return loss

        def run(x, y):
            loss = step(x.to(torch.bfloat16), y)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.item()

        return run

    run_t, run_o = trainer(theirs), trainer(ours)
    print("\n| step | torch loss | cutegemm loss | rel diff |")
    print("|---:|---:|---:|---:|")
    gap = 0.0
    for i, (x, y) in enumerate(zip(xs, ys)):
        lt, lo = run_t(x, y), run_o(x, y)
        gap = max(gap, abs(lo - lt) / lt)
        if i % 5 == 0 or i == STEPS - 1:
            print(f"| {i} | {lt:.5f} | {lo:.5f} | {abs(lo - lt) / lt:.2e} |")

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_o(xs[0], ys[0])
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    names = sorted({e.name for e in prof.events() if e.device_type == cuda})
    gemms = [n for n in names if "gemm" in n.lower() or "nvjet" in n or "cutlass" in n.lower()]
    print(f"\nGEMM kernels of one compiled training step ({len(gemms)} distinct):")
    for n in gemms:
        print("  ", n[:100])
    ok = worst <= GRAD_TOL and gap <= LOSS_TOL
    print(f"\nworst gradient rel_err {worst:.2e} (tol {GRAD_TOL:.0e}); largest loss difference "
          f"{gap:.2e} (tol {LOSS_TOL:.0e}): {'PASS' if ok else 'FAIL'}")  # fmt: skip
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
