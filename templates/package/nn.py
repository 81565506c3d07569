"""Torch modules whose products run on this package's kernels: `Linear`, a drop-in for
torch.nn.Linear (`Linear(4096, 14336, device="cuda", dtype=torch.bfloat16)`; its forward is
gemm(x, weight, bias=bias), and so are the products of its backward), and `swap_linears(model)`,
which turns the torch.nn.Linear layers of an existing model into it in place.
"""

from __future__ import annotations

import torch

from ._runtime import gemm

__all__ = ["Linear", "swap_linears"]


class Linear(torch.nn.Linear):
    """torch.nn.Linear with its product (and, under autograd, the products of its backward) by
    cutegemm.gemm. Inputs (..., in_features) as torch.nn.Linear takes them; float16 or bfloat16
    weights (the dtypes the kernels take; a float32 layer raises cutegemm.GemmError on its first
    call: convert the model with .to(torch.bfloat16)); in_features a multiple of 16 and
    out_features of 8 (the kernels' TMA row alignment)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gemm(x, self.weight, bias=self.bias)


def swap_linears(module: torch.nn.Module) -> torch.nn.Module:
    """Turn every torch.nn.Linear inside `module` into a cutegemm Linear, in place (the same
    parameters, no copy); returns `module`."""
    for child in module.modules():
        if type(child) is torch.nn.Linear:
            child.__class__ = Linear
    return module
