"""Crash-safe file writes: write beside the target, flush to disk, then rename over it."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from procbench.errors import BadInput

__all__ = ["atomic_path", "atomic_write_bytes", "batched_sync", "check_writable_folder", "fsync_dir"]


def check_writable_folder(folder: str | Path, what: str) -> Path:
    """Create ``folder`` if needed and prove a file can be written in it (before any work is done).

    Raises:
        BadInput: the folder cannot be made or written (a file in the way, no permission, a read-only or
            special file system), naming ``what`` (e.g. ``"--out report.json"``).
    """
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".procbench-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BadInput(f"{what}: cannot write in {path} ({exc.strerror or exc})") from exc
    return path


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The process umask, read once: temporary files (mode 0600) get the mode a plain ``open`` would give.
_UMASK = _read_umask()


def fsync_dir(directory: Path) -> None:
    """Flush a directory entry (a rename) to disk where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


#: The files written by :func:`atomic_path` inside the current :func:`batched_sync` block, not yet flushed.
_BATCH: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar("procbench_atomic_batch", default=None)


def _syncfs(folder: Path) -> bool:
    """Flush the whole file system ``folder`` is on (Linux ``syncfs(2)``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
    except (OSError, AttributeError):
        return False
    try:
        return bool(libc.syncfs(fd) == 0)
    except AttributeError:
        return False
    finally:
        os.close(fd)


def _flush(paths: list[Path]) -> None:
    """Flush ``paths`` (and their folders) to disk: one ``syncfs`` per file system they are on, else one
    ``fsync`` per file and folder."""
    folders: dict[int, Path] = {}
    for directory in dict.fromkeys(p.parent for p in paths):
        with contextlib.suppress(OSError):
            folders.setdefault(os.stat(directory).st_dev, directory)
    if not all(_syncfs(folder) for folder in folders.values()):
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                _fsync_file(path)
        for directory in dict.fromkeys(p.parent for p in paths):
            fsync_dir(directory)
    paths.clear()


@contextlib.contextmanager
def batched_sync() -> Iterator[Callable[[], None]]:
    """Atomic writes (:func:`atomic_path`) inside the block are renamed into place at once but flushed to disk
    together: by one ``syncfs`` of each file system written to (one ``fsync`` per file and folder where there
    is no ``syncfs``) when the yielded ``sync()`` is called and when the block ends.

    Call ``sync()`` before committing anything that relies on those files being on disk (a store transaction
    listing the images just written). Each write stays all-or-nothing for a reader and for a killed process
    (the rename is atomic, and what was written is in the kernel's cache). A power cut before the next
    ``sync()`` can leave the files written since empty or short, so their readers check sizes (the response
    cache, :meth:`procbench.store.Store.put_image`); nothing committed refers to them yet. On this machine's
    ext4, 6 ``fsync`` calls per image scraped (~20 ms) become one ``syncfs`` of ~15 ms per batch.
    """
    pending: list[Path] = []
    token = _BATCH.set(pending)
    try:
        yield lambda: _flush(pending)
    finally:
        _BATCH.reset(token)
        _flush(pending)


@contextlib.contextmanager
def atomic_path(target: Path, *, scratch: Path | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``target`` (or in ``scratch``, a folder on the same file system);
    on success it replaces ``target`` atomically.

    If the block raises, the temporary file is removed and ``target`` is untouched.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=scratch or target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are meant to be shared
        batch = _BATCH.get()
        if batch is None:
            _fsync_file(tmp_path)
        os.replace(tmp_path, target)
        if batch is None:
            fsync_dir(target.parent)
        else:
            batch.append(target)  # flushed with the batch (batched_sync)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_bytes(target: Path, data: bytes, *, scratch: Path | None = None) -> None:
    """Write ``data`` to ``target`` atomically (the temporary file in ``scratch`` when given)."""
    with atomic_path(target, scratch=scratch) as tmp:
        tmp.write_bytes(data)
