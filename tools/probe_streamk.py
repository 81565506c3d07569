"""Time a stream-K kernel against a persistent one with the same tile, the stream-K kernel
compiled for several CTA counts (its `sm_count`), to tell where stream-K's time goes:

    python tools/probe_streamk.py MxNxK[,MxNxK...] PERSISTENT STREAM_K [CTAS,...]

Per shape it prints µs per launch and the ratio to the persistent kernel, for the stream-K kernel
at each CTA count: the GPU's SMs, equal groups per band (no group one CTA larger than another),
one CTA per tile (no tile split, no fix-up) and any counts given. Each side is timed over
back-to-back launches between two CUDA events (a launcher binds the stream it is made on, so a
graph would capture none), cycling input sets larger than L2, the sides in turn (interleaved),
torch.mm beside them; every launch's output is checked against a float32 reference first.
A kernel of bands = "weights" (e.g. sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_wb) runs
its bands along the weights; its host rounds every CTA count down to equal groups. A kernel of
data_parallel = true (e.g. sm90_bf16_128x192x64_s4_sw128_ws_wg2_tma_streamk_dp) times the same
way: at each CTA count P it runs the full waves of P tiles but the last data-parallel in the
persistent order and the rest stream-K. bf16 only.
Needs a GPU, torch, the CuTe DSL and generated/ on the path.
"""

import importlib
import importlib.util
import sys

import torch

from codegen.gpu import Shape, input_sets, time_interleaved


def _cuts(m: int, n: int, mod, sms: int) -> dict[str, int]:
    """Stream-K CTA counts worth timing: the GPU's, equal groups per band, one CTA per tile."""
    tm, tn = mod.TILER[0], mod.TILER[1]
    swap = mod.SPEC["swap_ab"]
    # tiles along the activations (A's rows; B^T's columns with swap AB) and along the weights: a
    # band is one tile of the activations, or with bands = "weights" one of the weights
    act, wts = -(-m // (tn if swap else tm)), -(-n // (tm if swap else tn))
    weight_bands = mod.SPEC["scheduler"].get("bands") == "weights"
    bands, across = (wts, act) if weight_bands else (act, wts)
    tiles = bands * across
    out = {f"sk {sms}": sms}
    if bands < sms:
        out[f"sk {sms // bands * bands} (equal groups)"] = sms // bands * bands
    if tiles < sms:
        out[f"sk {tiles} (a CTA per tile)"] = tiles
    return out


def _launches(mod, sets, ctas: int | None = None):
    """The kernel's launch function per input set (made on the current stream); the output
    checked first."""
    if ctas is not None:
        mod.device_sm_count = lambda device=None, n=ctas: n
    a, b, c = sets[0]
    c.fill_(float("nan"))
    mod.launcher(a, b, c)()
    ref = a.float() @ b.float().T
    err = ((c.float() - ref).norm() / ref.norm()).item()
    return [mod.launcher(a, b, c) for a, b, c in sets], err


_COPIES: dict[int, object] = {}


def _copy(name: str, ctas: int):
    """A copy of the kernel module of its own per CTA count (a compiled kernel each, kept)."""
    if ctas not in _COPIES:
        path = importlib.import_module(f"cutegemm.sm90.{name}").__file__
        spec = importlib.util.spec_from_file_location(f"_probe_{name}_{ctas}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _COPIES[ctas] = mod
    return _COPIES[ctas]


def main() -> None:
    args = sys.argv
    shapes = [tuple(int(x) for x in s.split("x")) for s in args[1].split(",")]
    pers = importlib.import_module(f"cutegemm.sm90.{args[2]}")
    sk_name = args[3]
    extra = [int(x) for x in args[4].split(",")] if len(args) > 4 else []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    reps, rounds = 10, 15
    print(f"{torch.cuda.get_device_name(0)}, {sms} SMs; {pers.SPEC['name']} vs {sk_name}")
    for m, n, k in shapes:
        sets = input_sets(Shape("probe", m, n, k), torch.bfloat16)
        fns, errs = {}, {}
        fns["torch"] = [lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c) for a, b, c in sets]
        fns["persistent"], errs["persistent"] = _launches(pers, sets)
        cuts = _cuts(m, n, importlib.import_module(f"cutegemm.sm90.{sk_name}"), sms)
        cuts.update({f"sk {x}": x for x in extra})
        for label, ctas in cuts.items():
            fns[label], errs[label] = _launches(_copy(sk_name, ctas), sets, ctas)
        us = time_interleaved(fns, rounds, reps)
        tflops = 2 * m * n * k / 1e6
        print(f"M={m} N={n} K={k}: torch {us['torch']:.1f} µs")
        for key in fns:
            if key == "torch":
                continue
            print(
                f"  {key:28s} {us[key]:8.1f} µs {tflops / us[key]:6.0f} TFLOP/s "
                f"persistent/this {us['persistent'] / us[key]:.3f} "
                f"torch/this {us['torch'] / us[key]:.3f} rel_err {errs[key]:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
