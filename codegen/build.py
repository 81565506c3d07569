"""Cross-compile generated kernels on the CPU and report what the compiler produced.

Each file is imported in a worker process (one pool per architecture, since the DSL reads the
target architecture once per process), compiled against fake tensors with dynamic M, N, K, and its
PTX scanned for the instructions its spec implies. PTX and cubin are kept under ``build/NAME/``;
a file whose content, architecture and DSL version are unchanged is not compiled again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from codegen import registry, rules
from codegen.files import write_atomic
from codegen.plan import expected_counts
from codegen.render import ignore_sigint, sigint_blocked, stop_pool
from codegen.spec import Spec

BUILD_FORMAT = "16"  # bump when what a build records changes, to invalidate the cache

# PTX patterns, each counted over the whole module: those of more than one architecture here, then
# each architecture's own (codegen/arch/<name>/counts.py PATTERNS); every kernel counts them all.
SHARED_PATTERNS: dict[str, str] = {
    "cp.async.bulk.tensor": r"cp\.async\.bulk\.tensor\.\dd\.shared",
    "TMA multicast": r"cp\.async\.bulk\.tensor[^;]*multicast",
    "TMA store": r"cp\.async\.bulk\.tensor\.\dd\.global\.shared",
    # programmatic dependent launch: the TMA warp's L2 prefetch of its first k-blocks
    "TMA prefetch": r"cp\.async\.bulk\.prefetch\.tensor",
    # the light kernels' (no TMA): a plain L2 prefetch of a lane's first rows of B
    "prefetch.global.L2": r"\bprefetch\.global\.L2\b",
    "griddepcontrol.wait": r"\bgriddepcontrol\.wait\b",
    "mbarrier.try_wait": r"mbarrier\.try_wait",
    "mbarrier.init": r"mbarrier\.init\.",
    "barrier.cluster": r"barrier\.cluster\.",
    "st.global": r"\bst\.global\.",
    # the epilogue's own loads: C when beta != 0, the bias vector
    "ld.global": r"\bld\.global\.",
    # fused epilogues' activations: relu's max, silu's and gelu's exp
    "max.f32": r"\bmax(\.ftz)?\.f32\b",
    "ex2": r"\bex2\.approx\.",
    # stream-K's hand-over of a partial tile: a flag released by one CTA, acquired by another
    "flag release.gpu": r"\bst\.release\.gpu\.global\.",
    "flag acquire.gpu": r"\bld\.acquire\.gpu\.global\.",
    # stream-K's 64-bit partition math (iteration counts pass 2^31 on big problems)
    "div.s64": r"\bdiv\.s64\b",
    # split-K's DSMEM reduction: peer addresses, remote loads and the cluster-scoped handshake
    "mapa": r"\bmapa\.",
    "ld.shared::cluster": r"\bld\.shared::cluster\.",
    "mbarrier acquire.cluster": r"mbarrier\.try_wait[^;]*\.acquire\.cluster",
    "mbarrier release.cluster": r"mbarrier\.arrive[^;]*\.release\.cluster",
    # the light decode kernels (codegen/light.py): warp-level MMAs fed by 16-byte register loads
    "mma.sync": r"\bmma\.sync\.",
    "ld.global.v4": r"\bld\.global(\.[\w:]+)*\.v4\.",
    # warp butterflies (row_sumsq: a row's partial sums of squares added across lanes)
    "shfl.sync.bfly": r"\bshfl\.sync\.bfly\.",
    # block_quant: f32 pairs to float8 (round to nearest, saturated), and the IEEE divisions of a
    # block's scale and its inverse
    "cvt e4m3x2": r"\bcvt\.rn\.satfinite\.e4m3x2\.f32\b",
    "div.rn.f32": r"\bdiv\.rn\.f32\b",
    # generic-proxy SMEM accesses ordered before async-proxy ones (TMA store, try_cancel)
    "fence.proxy.async": r"\bfence\.proxy\.async\.shared::cta\b",
}
PATTERNS: dict[str, str] = SHARED_PATTERNS | registry.patterns()


class BuildFailure(Exception):
    pass


@dataclass
class BuildResult:
    name: str
    arch: str
    ok: bool
    cached: bool = False
    error: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    alloc_cols: list[int] = field(default_factory=list)
    registers: int | None = None
    spill_bytes: int | None = None
    smem_bytes: int = 0
    mismatches: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.ok and not self.mismatches


def dsl_version() -> str:
    from importlib.metadata import version

    return version("nvidia-cutlass-dsl")


def load_module(path: Path):
    """Import a generated file by path, under a private module name."""
    spec = importlib.util.spec_from_file_location(f"_codegen_build_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise BuildFailure(f"{path}: cannot import")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fake_args(module) -> list:
    """The fake (a, b, c, stream) the generated file itself compiles with."""
    return list(module.compile_args())


def find_ptxas() -> str | None:
    """The ptxas of the `nvidia-cuda-nvcc` wheel (new enough for the DSL's PTX), else PATH's."""
    try:
        import nvidia

        for root in nvidia.__path__:
            exe = Path(root) / "cu13" / "bin" / "ptxas"
            if exe.exists():
                return str(exe)
    except ImportError:
        pass
    return shutil.which("ptxas")


def _ptxas(ptx: Path, arch: str) -> tuple[int | None, int | None]:
    """Registers and spill bytes (stores + loads) from `ptxas -v`, or None where no ptxas."""
    exe = find_ptxas()
    if exe is None:
        return None, None
    proc = subprocess.run(
        [exe, f"-arch={arch}", "-v", str(ptx), "-o", os.devnull],
        capture_output=True,
        text=True,
        check=False,
    )
    text = proc.stdout + proc.stderr
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", text)]
    spills = [
        int(a) + int(b)
        for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    ]
    return (max(regs) if regs else None), (sum(spills) if spills else None)


def compile_file(path: str, out_dir: str) -> dict:
    """Worker: compile one generated file; return counts (runs in a process of its arch)."""
    import time

    from cutlass import cute

    start = time.perf_counter()
    module = load_module(Path(path))
    arch = module.SPEC["arch"]
    dump = Path(out_dir)
    if dump.exists():
        shutil.rmtree(dump)
    dump.mkdir(parents=True)
    options = f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {dump}"
    try:
        cute.compile(module.gemm, *fake_args(module), options=options)
    except Exception as e:  # noqa: BLE001 - the compiler's verdict, whatever it is
        lines = [ln.strip() for ln in str(e).splitlines() if "error" in ln.lower()]
        return {"ok": False, "error": (lines or [str(e).strip()])[0][:300]}
    ptxs = sorted(dump.rglob("*.ptx"))
    if not ptxs:
        return {"ok": False, "error": "the compiler wrote no PTX"}
    ptx_text = "\n".join(p.read_text() for p in ptxs)
    counts = {key: len(re.findall(pat, ptx_text)) for key, pat in PATTERNS.items()}
    regs, spills = _ptxas(ptxs[0], arch)
    return {
        "ok": True,
        "counts": counts,
        "alloc_cols": alloc_columns(ptx_text),
        "registers": regs,
        "spill_bytes": spills,
        "seconds": round(time.perf_counter() - start, 2),
    }


def alloc_columns(ptx: str) -> list[int]:
    """The column count of each tcgen05.alloc: an immediate, or a register set by a mov."""
    cols = []
    for operand in re.findall(r"tcgen05\.alloc\.[^;]*\],\s*([^;\s]+)\s*;", ptx):
        if operand.isdigit():
            cols.append(int(operand))
            continue
        mov = re.search(rf"mov\.[bus]32\s+{re.escape(operand)},\s*(\d+)\s*;", ptx)
        cols.append(int(mov.group(1)) if mov else -1)
    return cols


def _init_worker(arch: str) -> None:
    """A compile process: Ctrl-C is the main process's to handle (render.ignore_sigint)."""
    os.environ["CUTE_DSL_ARCH"] = arch
    ignore_sigint()


def check_counts(spec: Spec, result: BuildResult) -> list[str]:
    """Mismatches between the PTX and what the spec implies, plus any spill."""
    out = [
        f"{key}: expected {want}, PTX has {result.counts.get(key)}"
        for key, want in expected_counts(spec).items()
        if result.counts.get(key) != want
    ]
    want_cols = registry.for_spec(spec).alloc_columns(spec)
    if want_cols is not None and result.alloc_cols and set(result.alloc_cols) != {want_cols}:
        out.append(f"tcgen05.alloc columns: expected {want_cols}, PTX has {result.alloc_cols}")
    if result.spill_bytes:
        out.append(f"register spills: {result.spill_bytes} bytes")
    return out


def cache_key(path: Path, arch: str) -> str:
    h = hashlib.sha256()
    for part in (BUILD_FORMAT, arch, dsl_version(), path.read_text(encoding="utf-8")):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def read_spec(path: Path) -> Spec:
    """The SPEC dict of a generated file, read without importing the DSL."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "SPEC" for t in node.targets
        ):
            return _with_fn_source(Spec.model_validate(ast.literal_eval(node.value)), tree, path)
    raise BuildFailure(f"{path}: no SPEC in this file; is it a generated kernel?")


def _with_fn_source(spec: Spec, tree, path: Path) -> Spec:
    """The spec with its epilogue function's source (which SPEC leaves out) from the copy the
    file holds, for counts that read the function's body (sm_100a: its exp and tanh)."""
    import ast

    fn = spec.epilogue.fn
    if fn is None or fn.source:
        return spec
    name = fn.ref.rsplit(":", 1)[-1]
    text = path.read_text(encoding="utf-8")
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not defs:
        return spec
    source = ast.get_source_segment(text, defs[-1]) or ""
    fn = fn.model_copy(update={"source": source})
    return spec.model_copy(update={"epilogue": spec.epilogue.model_copy(update={"fn": fn})})


def build(
    files: list[Path],
    build_dir: Path,
    jobs: int,
    on_done: Callable[[BuildResult], None] | None = None,
) -> list[BuildResult]:
    """Compile `files` (cached), check their counts, and return one result per file."""
    results: list[BuildResult] = []
    todo: dict[str, list[tuple[Path, Spec, str]]] = {}
    for path in files:
        spec = read_spec(path)
        key = cache_key(path, spec.arch)
        record = build_dir / path.stem / "result.json"
        if record.exists():
            saved = json.loads(record.read_text())
            if saved.get("key") == key:
                r = BuildResult(**saved["result"])
                r.cached = True
                if r.ok:
                    # the compile is cached, the check is not: expected counts come from the
                    # generator, which may have changed since
                    r.mismatches = check_counts(spec, r)
                results.append(r)
                if on_done:
                    on_done(r)
                continue
        todo.setdefault(spec.arch, []).append((path, spec, key))

    ctx = multiprocessing.get_context("spawn")

    def finish(path: Path, spec: Spec, key: str, arch: str, raw: dict) -> None:
        r = BuildResult(
            name=path.stem,
            arch=arch,
            ok=raw["ok"],
            error=raw.get("error", ""),
            counts=raw.get("counts", {}),
            alloc_cols=raw.get("alloc_cols", []),
            registers=raw.get("registers"),
            spill_bytes=raw.get("spill_bytes"),
            smem_bytes=rules.smem_bytes(spec, int(spec.stages)),
            seconds=raw.get("seconds", 0.0),
        )
        if r.ok:
            r.mismatches = check_counts(spec, r)
            record = build_dir / path.stem / "result.json"
            record.parent.mkdir(parents=True, exist_ok=True)
            data = {k: v for k, v in r.__dict__.items() if k != "cached"}
            write_atomic(record, json.dumps({"key": key, "result": data}, indent=1))
        results.append(r)
        if on_done:
            on_done(r)

    for arch, items in sorted(todo.items()):
        pool = ProcessPoolExecutor(
            max_workers=max(1, min(jobs, len(items))),
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(arch,),
        )
        broken: list[tuple[Path, Spec, str]] = []
        try:
            # the workers are spawned here: a Ctrl-C waits until they ignore it
            with sigint_blocked():
                futures = {
                    pool.submit(compile_file, str(path), str(build_dir / path.stem / arch)): (
                        path,
                        spec,
                        key,
                    )
                    for path, spec, key in items
                }
            for fut in as_completed(futures):
                path, spec, key = futures[fut]
                try:
                    raw = fut.result()
                except BrokenProcessPool:
                    # a worker died (the compiler aborted): every compile not finished is lost
                    # with it, whichever killed it; each runs again in a process of its own
                    broken.append((path, spec, key))
                    continue
                except Exception as e:  # noqa: BLE001 - a worker's failure is reported, not raised
                    raw = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                finish(path, spec, key, arch, raw)
        except BaseException:  # Ctrl-C: stop within a second; finished records stay valid
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        if broken:
            _build_isolated(broken, build_dir, arch, jobs, ctx, finish)
    return sorted(results, key=lambda r: r.name)


def _build_isolated(
    items: list[tuple[Path, Spec, str]],
    build_dir: Path,
    arch: str,
    jobs: int,
    ctx,
    finish: Callable[[Path, Spec, str, str, dict], None],
) -> None:
    """Compile each of `items` in a process of its own, `jobs` at a time: one that crashes is
    reported as that kernel's failure (with the signal that ended it), the others as usual."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    live: set = set()
    lock = threading.Lock()

    def one(item: tuple[Path, Spec, str]) -> tuple[tuple[Path, Spec, str], dict]:
        path, _, _ = item
        receiver, sender = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_compile_alone,
            args=(sender, arch, str(path), str(build_dir / path.stem / arch)),
            daemon=True,
        )
        with lock:
            live.add(proc)
        with sigint_blocked():  # in this thread, so the child starts with it blocked
            proc.start()
        sender.close()
        try:
            raw = receiver.recv()
        except EOFError:
            raw = None
        proc.join()
        with lock:
            live.discard(proc)
        if raw is None:
            code = proc.exitcode or 0
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            raw = {"ok": False, "error": f"the compiler crashed ({how}) on this kernel"}
        return item, raw

    threads = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(items))))
    try:
        for (path, spec, key), raw in threads.map(one, items):
            finish(path, spec, key, arch, raw)
    except BaseException:  # Ctrl-C: end the compiles now
        with lock:
            for proc in live:
                proc.terminate()
        raise
    finally:
        threads.shutdown(wait=True, cancel_futures=True)


def _compile_alone(conn, arch: str, path: str, out_dir: str) -> None:
    """A process of its own: compile one file and send back what compile_file returns."""
    _init_worker(arch)
    try:
        raw = compile_file(path, out_dir)
    except Exception as e:  # noqa: BLE001 - reported as this kernel's failure
        raw = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    conn.send(raw)
    conn.close()
