"""Writing files: atomically, with the permissions the umask gives (render, build and the render
cache write through here).

A render changes many files at once: it stages every one (:func:`stage`, a temporary file beside
its target, which is where a full disk or a read-only folder shows) before it commits any
(:func:`commit`, one rename each, which needs no space), so a failure while staging leaves every
target as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def stage(path: Path, text: str) -> Path:
    """`text` written to a temporary file in `path`'s folder (made if missing), with the
    permissions the umask gives; the caller renames it over `path` or removes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; a written file follows the umask
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file."""
    tmp = stage(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def sigint_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C back while the body runs (a handful of renames that must all happen); the
    list it yields holds the signals that arrived meanwhile. Only the main thread has signal
    handlers: elsewhere this holds nothing back."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    got: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)
