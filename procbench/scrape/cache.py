"""Raw HTTP responses kept under ``STORE/cache/http/`` so a re-run or a re-parse never fetches a URL twice."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procbench.store.atomic import atomic_write_bytes

__all__ = ["CachedResponse", "ResponseCache", "cache_key"]


def cache_key(url: str) -> str:
    """The cache key of a canonical URL (sha256 hex)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A response as fetched: ``url`` asked for, ``final_url`` after redirects (both canonical).

    ``status`` is the HTTP status; ``error`` is set for a remembered permanent failure (404, too large, ...),
    whose ``body`` is empty.
    """

    url: str
    final_url: str
    status: int
    content_type: str
    body: bytes
    fetched_at: str
    error: str | None = None

    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


class ResponseCache:
    """One file pair per URL: ``ab/<key>.body`` then ``ab/<key>.json`` (written last: its presence marks a
    complete entry). Writes are atomic, so a killed process never leaves a half entry behind; an entry whose body
    is not the size its metadata records (a power cut during a :func:`~procbench.store.atomic.batched_sync`
    block) is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _paths(self, url: str) -> tuple[Path, Path]:
        key = cache_key(url)
        folder = self.root / key[:2]
        return folder / f"{key}.json", folder / f"{key}.body"

    def get(self, url: str) -> CachedResponse | None:
        """The cached response for ``url``, or None."""
        meta_path, body_path = self._paths(url)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            body = body_path.read_bytes() if meta.get("error") is None else b""
        except (OSError, ValueError):
            return None
        if meta.get("error") is None and len(body) != meta.get("size", len(body)):
            return None  # a body cut short (written in a batch a power cut caught unflushed): fetch it again
        return CachedResponse(
            url=meta["url"],
            final_url=meta["final_url"],
            status=int(meta["status"]),
            content_type=meta.get("content_type", ""),
            body=body,
            fetched_at=meta.get("fetched_at", ""),
            error=meta.get("error"),
        )

    def drop(self, url: str) -> None:
        """Forget ``url`` (its metadata first: without it the entry does not exist)."""
        for path in self._paths(url):
            path.unlink(missing_ok=True)

    def put(self, response: CachedResponse) -> None:
        """Store ``response`` under its requested URL."""
        meta_path, body_path = self._paths(response.url)
        if response.error is None:
            atomic_write_bytes(body_path, response.body)
        meta = {
            "url": response.url,
            "final_url": response.final_url,
            "status": response.status,
            "content_type": response.content_type,
            "fetched_at": response.fetched_at,
            "size": len(response.body),
            "error": response.error,
        }
        atomic_write_bytes(meta_path, json.dumps(meta).encode("utf-8"))
