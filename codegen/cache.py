"""Incremental render: what the last render into an output folder produced, so a kernel whose
inputs did not change is neither rendered nor formatted again.

The cache (``OUT/.render-cache.json``, git-ignored) maps each kernel file to the key of its
inputs (spec hash, name, source, and a digest of every template, every codegen module, ruff's
version and the DSL pin) and to the hash of the bytes that render wrote. A kernel is reused only
when both match: the key says its inputs are the same, the bytes say nobody edited the file.
Anything else (no cache, a corrupt cache, an edited file, a changed template) renders again.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

CACHE = ".render-cache.json"
_DIGEST: str | None = None


def inputs_digest(templates: Path) -> str:
    """One hash over everything besides the spec that shapes a rendered file."""
    global _DIGEST
    if _DIGEST is None:
        from codegen import package

        h = hashlib.sha256()
        code = Path(__file__).resolve().parent
        # templates/ holds the package's plain modules (.py) beside the templates
        for folder, patterns in ((templates, ("*.j2", "*.py")), (code, ("*.py",))):
            for p in sorted(p for pattern in patterns for p in folder.rglob(pattern)):
                h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
        try:
            ruff = metadata.version("ruff")
        except metadata.PackageNotFoundError:
            ruff = "?"
        h.update(f"ruff {ruff}|{package.dsl_requirement()}".encode())
        _DIGEST = h.hexdigest()[:20]
    return _DIGEST


def key(digest: str, *parts: str) -> str:
    return hashlib.sha256("\0".join((digest, *parts)).encode()).hexdigest()[:20]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def load(out_dir: Path) -> dict:
    """The cache of `out_dir`, or an empty one when absent or unreadable."""
    try:
        data = json.loads((out_dir / CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def reusable(out_dir: Path, relpath: str, want: str, cached: dict) -> str | None:
    """The file's text when the cache entry has key `want` and the file holds the bytes that
    render wrote; else None."""
    entry = cached.get(relpath)
    if not isinstance(entry, dict) or entry.get("key") != want:
        return None
    try:
        text = (out_dir / relpath).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if content_hash(text) == entry.get("sha") else None


def save(out_dir: Path, data: dict) -> None:
    """Record `data`; a cache that cannot be written (a full disk) is left as it was: it is only
    a shortcut, and a stale one is never trusted (`reusable` checks the bytes)."""
    from codegen.files import write_atomic

    text = json.dumps(data, sort_keys=True, indent=0) + "\n"
    path = out_dir / CACHE
    try:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
    except (OSError, UnicodeDecodeError):
        pass
