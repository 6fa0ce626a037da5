"""Crash-safe file writes: write beside the target, flush to disk, then rename over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from procbench.errors import BadInput

__all__ = ["atomic_path", "atomic_write_bytes", "check_writable_folder", "fsync_dir"]


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
        _fsync_file(tmp_path)
        os.replace(tmp_path, target)
        fsync_dir(target.parent)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_bytes(target: Path, data: bytes, *, scratch: Path | None = None) -> None:
    """Write ``data`` to ``target`` atomically (the temporary file in ``scratch`` when given)."""
    with atomic_path(target, scratch=scratch) as tmp:
        tmp.write_bytes(data)
