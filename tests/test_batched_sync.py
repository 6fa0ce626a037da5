"""Atomic writes flushed once per batch (``procbench.store.atomic.batched_sync``), and the readers that notice a
file a power cut left short: the response cache and ``Store.put_image``."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from procbench.scrape.cache import CachedResponse, ResponseCache
from procbench.store import Store, atomic
from procbench.store.atomic import atomic_write_bytes, batched_sync
from procbench.store.images import normalise_image


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"fsync": 0, "syncfs": 0}
    real_fsync, real_syncfs = os.fsync, atomic._syncfs

    def fsync(fd: int) -> None:
        calls["fsync"] += 1
        real_fsync(fd)

    def syncfs(folder: Path) -> bool:
        calls["syncfs"] += 1
        return real_syncfs(folder)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(atomic, "_syncfs", syncfs)
    return calls


def test_writes_in_a_batch_are_in_place_at_once_and_flushed_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_calls(monkeypatch)
    atomic_write_bytes(tmp_path / "alone.bin", b"x")
    assert calls == {"fsync": 2, "syncfs": 0}  # outside a batch: the file, then its folder
    calls["fsync"] = 0
    with batched_sync() as sync:
        for i in range(20):
            atomic_write_bytes(tmp_path / f"f{i % 3}" / f"{i}.bin", bytes([i]) * (i + 1))
            assert (tmp_path / f"f{i % 3}" / f"{i}.bin").read_bytes() == bytes([i]) * (i + 1)  # readable at once
        assert calls == {"fsync": 0, "syncfs": 0}
        sync()
        assert calls["syncfs"] == 1  # one file system, one flush for all 20 files and 3 folders
        sync()  # nothing new: nothing to flush
        assert calls["syncfs"] == 1
        atomic_write_bytes(tmp_path / "last.bin", b"y")
    assert calls["syncfs"] == 2 and calls["fsync"] == 0  # the end of the block flushes what is left
    atomic_write_bytes(tmp_path / "after.bin", b"z")
    assert calls["fsync"] == 2  # and the writes after it are flushed one by one again
    assert not list(tmp_path.rglob("*.tmp"))


def test_without_syncfs_each_file_and_folder_is_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_calls(monkeypatch)
    monkeypatch.setattr(atomic, "_syncfs", lambda folder: False)
    with batched_sync():
        for i in range(4):
            atomic_write_bytes(tmp_path / f"f{i % 2}" / f"{i}.bin", b"data")
    assert calls["fsync"] == 4 + 2  # four files, two folders


def test_a_short_cached_body_is_a_miss_and_a_short_image_is_rewritten(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    url = "https://example.org/page"
    cache.put(CachedResponse(url, url, 200, "text/html", b"<html>complete</html>", "2026-01-01T00:00:00Z"))
    assert cache.get(url) is not None
    body = next((tmp_path / "cache").rglob("*.body"))
    body.write_bytes(b"<html>comp")  # what a power cut can leave of a write that was never flushed
    assert cache.get(url) is None

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buffer, format="PNG")
    image = normalise_image(buffer.getvalue(), max_side=512)
    store = Store.open(tmp_path / "store", create=True)
    path = store.put_image(image)
    assert path.read_bytes() == image.data
    path.write_bytes(b"")
    assert store.put_image(image).read_bytes() == image.data
