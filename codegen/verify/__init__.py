"""`codegen verify`: check each generated kernel's mbarrier protocol for every interleaving.

The model is extracted from the generated file itself (`trace`: its Python runs against a
recording stand-in for the DSL), checked by `check` for several small problem sizes (`sizes`),
and summarized per kernel here. `mutations` seeds protocol bugs into the templates to show the
checker catches them.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from codegen.verify import dsl, numeric
from codegen.verify.check import Violation, check
from codegen.verify.model import Actor, KernelModel
from codegen.verify.sizes import Case, cases, family
from codegen.verify.trace import KernelSource

__all__ = [
    "CaseResult",
    "KernelReport",
    "cached_report",
    "verify_and_cache",
    "verify_file",
    "verify_text",
]


@dataclass
class CaseResult:
    case: Case
    events: int = 0
    actors: int = 0
    ctas: int = 0
    violations: list[Violation] = field(default_factory=list)
    not_modelled: str | None = None
    notes: list[str] = field(default_factory=list)
    model: KernelModel | None = None
    stores: int = 0  # distinct stores to C the numeric emulation checked
    numeric_unknown: str | None = None  # why the emulation could not follow a stored value
    # stores the emulation saw and explicitly does not follow (row_sumsq's row partials), while
    # it does check every store to C
    numeric_unfollowed: str | None = None


@dataclass
class KernelReport:
    name: str
    arch: str
    family: str
    cases: list[CaseResult] = field(default_factory=list)
    roles: str = ""
    error: str | None = None  # the file could not be traced at all
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if any(c.violations for c in self.cases) or self.error and self.error.startswith("host"):
            return "FAIL"
        if self.error or any(c.not_modelled for c in self.cases):
            return "NOT MODELLED"
        return "pass"

    @property
    def events(self) -> int:
        return sum(c.events for c in self.cases)

    @property
    def first_failure(self) -> CaseResult | None:
        return next((c for c in self.cases if c.violations), None)

    @property
    def reason(self) -> str:
        if self.error:
            return self.error
        c = next((c for c in self.cases if c.not_modelled), None)
        return c.not_modelled or "" if c else ""

    def properties(self) -> list[str]:
        """Distinct violated properties, most frequent first."""
        counts = Counter(v.prop for c in self.cases for v in c.violations)
        return [p for p, _ in counts.most_common()]


def role_of(actor: Actor) -> str:
    kinds = {op.kind for op in actor.ops}
    if "tma_load" in kinds and ("umma" in kinds or "wgmma" in kinds):
        return "tma+mma"
    if "clc_query" in kinds:
        return "tma+clc" if "tma_load" in kinds else "clc"
    if "tma_load" in kinds and not kinds & {"tmem_ld", "tma_store", "write", "read"}:
        return "tma"
    if "umma" in kinds:
        return "mma" if "tmem_ld" not in kinds else "mma+epi"
    if "wgmma" in kinds:
        return "wgmma"
    if "mma_sync" in kinds:  # a light kernel's warp: its own MMAs and its part of the epilogue
        return "mma+epi"
    if kinds & {"tmem_ld", "tma_store", "write", "read", "gstore", "await"}:
        return "epi"
    if "tma_load" in kinds:
        return "tma+epi"
    return "idle"


def roles(model: KernelModel) -> str:
    """The modelled CTAs of the first launch and the roles of its busiest CTA's actors."""
    launch = model.launches[0]
    best: Counter[str] = Counter()
    for cta in launch.ctas:
        counts = Counter(role_of(a) for a in launch.actors if a.cta == cta)
        counts.pop("idle", None)
        if (
            len(counts) > len(best)
            or len(counts) == len(best)
            and sum(counts.values()) > sum(best.values())
        ):
            best = counts
    per_cta = ", ".join(f"{n} {r}" if n > 1 else r for r, n in sorted(best.items()))
    return f"{len(launch.ctas)} CTA x [{per_cta}]"


LIGHT_NUMERIC = (
    "light kernel: operands and partials move per lane (global -> registers -> mma.sync -> SMEM), "
    "below the tile level the numeric cross-check follows; its numerics are the GPU test's"
)


def expectation(ks: KernelSource, case: Case) -> numeric.Expect:
    """The GEMM the kernel file claims (its SPEC's epilogue), at the case's sizes."""
    epi = ks.spec.get("epilogue", {})
    epi = epi if isinstance(epi, dict) else {}
    p = case.problem
    return numeric.Expect(
        p.m,
        p.n,
        p.k,
        beta=bool(epi.get("beta") or 0.0),
        bias=epi.get("bias") or None,
        gated=ks.gated,
    )


def verify_text(text: str, name: str, arch: str = "", keep_models: bool = False) -> KernelReport:
    """Trace and check one kernel file's text for each of its problem sizes."""
    t0 = time.process_time()
    report = KernelReport(name, arch, "?")
    try:
        ks = KernelSource(text, name)
        report.family = family(ks)
        todo = cases(ks)
    except dsl.HostCheckFailed as e:
        report.error = str(e)
        report.seconds = time.process_time() - t0
        return report
    except (dsl.NotModelled, KeyError, TypeError, ValueError) as e:
        report.error = str(e)
        report.seconds = time.process_time() - t0
        return report
    biggest = 0
    for case in todo:
        cr = CaseResult(case)
        try:
            model = ks.trace(case.problem)
        except dsl.HostCheckFailed as e:
            cr.violations.append(Violation("host-check", str(e)))
            report.cases.append(cr)
            continue
        except dsl.NotModelled as e:
            cr.not_modelled = str(e)
            report.cases.append(cr)
            continue
        cr.actors = sum(len(lch.actors) for lch in model.launches)
        if cr.actors > biggest:
            biggest, report.roles = cr.actors, roles(model)
        cr.ctas = sum(len(lch.ctas) for lch in model.launches)
        cr.notes = model.notes
        try:
            result = check(model)
        except RuntimeError as e:
            cr.not_modelled = str(e)
            report.cases.append(cr)
            continue
        cr.events = result.events
        for v in result.violations:
            if v.prop == "not-modelled":
                cr.not_modelled = v.message
            else:
                cr.violations.append(v)
        if ks.spec.get("mainloop") == "light":
            # a light kernel moves its operands lane by lane from global memory into registers
            # and its partials through SMEM: below the tile level the emulation follows. Its
            # protocol (one CTA barrier between the partials' writes and reads) is checked
            # above; its numerics only by the GPU test (`codegen test`)
            cr.numeric_unknown = LIGHT_NUMERIC
        elif not result.violations and case.problem.k > 0 and case.problem.numeric:
            # the data the protocol moved, against the GEMM the kernel claims (K = 0 is
            # refused by every entry point: nothing to compare); a gated pair (epilogue.fn with
            # Gate and Up) stores one value per gate and up pair into C (M, N / 2) through a
            # view that aliases each up column with its gate column (dsl.gate_image): each
            # store to C's columns [o0, o1) is checked against A B^T's [2 o0, 2 o1)
            num = numeric.emulate(model, result.data_order, expectation(ks, case))
            cr.violations.extend(num.violations)
            cr.stores = num.stores
            cr.numeric_unfollowed = num.unfollowed
            if num.unknown:
                cr.numeric_unknown = num.unknown
        if keep_models:
            cr.model = model
        report.cases.append(cr)
    report.seconds = time.process_time() - t0
    return report


def verify_file(path: Path, keep_models: bool = False) -> KernelReport:
    return verify_text(path.read_text(), path.stem, path.parent.name, keep_models)


# ---- results cached by file content (like `codegen build`) ---------------------------------------

CACHE_FORMAT = "2"  # bump when what a cached report holds changes
_CODE_DIGEST: str | None = None


def _code_digest() -> str:
    """One hash over every codegen module (the checker, its DSL stand-in, and what they use)."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        import hashlib

        h = hashlib.sha256(CACHE_FORMAT.encode())
        code = Path(__file__).resolve().parent.parent
        for p in sorted(code.rglob("*.py")):
            h.update(p.relative_to(code).as_posix().encode() + b"\0" + p.read_bytes())
        _CODE_DIGEST = h.hexdigest()
    return _CODE_DIGEST


def cache_key(text: str) -> str:
    import hashlib

    return hashlib.sha256((_code_digest() + "\0" + text).encode("utf-8")).hexdigest()[:24]


def cached_report(path: Path, cache_dir: Path) -> KernelReport | None:
    """The report of the last verify of this file's exact content by this codegen, or None."""
    import pickle

    try:
        key, report = pickle.loads((cache_dir / f"{path.stem}.pickle").read_bytes())
    except Exception:  # noqa: BLE001 - absent, truncated or from another version: verify again
        return None
    if key != cache_key(path.read_text(encoding="utf-8")) or not isinstance(report, KernelReport):
        return None
    return report


def verify_and_cache(path: Path, cache_dir: Path) -> KernelReport:
    """verify_file, recording the report under `cache_dir` (keyed by the file's content)."""
    import pickle

    text = path.read_text(encoding="utf-8")
    report = verify_text(text, path.stem, path.parent.name)
    data = pickle.dumps((cache_key(text), report))
    target = cache_dir / f"{path.stem}.pickle"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        pass  # a cache that cannot be written only costs the next run its time
    return report
