"""CUTEGEMM_AUTOTUNE=1 as a user meets it: the first eager call of an untuned product tunes it
(a line on stderr) and stores it; run again in a new process, the same call finds it in the cache
and tunes nothing. Prints the first call's wall time and the cached ranking.

    CUTEGEMM_AUTOTUNE=1 python tools/check_autotune.py M N K   (on a GPU, repository root)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

import cutegemm
import torch
from cutegemm import _tune


def main() -> None:
    m, n, k = (int(x) for x in sys.argv[1:4])
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    before = _tune.cached_order(torch.cuda.get_device_name(), "bf16", "bf16", m, n, k)
    t0 = time.perf_counter()
    c = cutegemm.gemm(a, b)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    ref = a.float() @ b.float().T
    err = ((c.float() - ref).norm() / ref.norm()).item()
    after = _tune.cached_order(torch.cuda.get_device_name(), "bf16", "bf16", m, n, k)
    pick = cutegemm.kernel_for(m, n, k).name
    print(f"M={m} N={n} K={k}: cached before {bool(before)}, first call {first:.2f} s, "
          f"rel_err {err:.1e}, pick {pick}, cached first {after[0] if after else None}")  # fmt: skip


if __name__ == "__main__":
    main()
