"""``procbench fetch-images``: download the image URLs a store only records, through the scraper's HTTP layer.

``ingest`` (and ``scrape --no-images``) record URL images as ``url:<sha256 of the URL>`` rows with
``stored=false``. This fetches them politely (robots.txt, one rate limiter per host, retries with backoff
only on 429/5xx/timeouts, a size cap; :mod:`procbench.scrape.http`), verifies and normalises each with
Pillow (:func:`~procbench.store.images.normalise_image`), stores it by content hash under ``images/``, and
replaces the URL id by the content id in ``images.parquet`` (``stored=true``, width, height) and in every
``steps.image_ids`` list that held it.

Resumable: the tables are rewritten in batches, one transaction each, and every response is kept in the
HTTP cache (``STORE/cache/http/``) as soon as it arrives, so after an interruption (even ``kill -9``) a
re-run commits what was fetched without asking any host again and continues with the rest. Permanent
failures (404, too large) are remembered by the cache and not retried; an image Pillow rejects fails the
same way again from the cached bytes.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import requests

from procbench.errors import BadInput, Blocked, Disallowed, FetchError, RateLimited
from procbench.progress import SILENT, Progress
from procbench.scrape.cache import ResponseCache
from procbench.scrape.http import (
    Clock,
    HostUnresponsive,
    HttpClient,
    HttpConfig,
    NotAnImage,
    is_loopback_url,
    without_credentials,
)
from procbench.store import Store
from procbench.store.images import BadImage, normalise_image

__all__ = ["FetchImagesReport", "HostReport", "fetch_images", "pending_images"]

log = logging.getLogger(__name__)

_MAX_LISTED = 50


@dataclass
class HostReport:
    """What happened with one host's images."""

    host: str
    stored: int = 0
    from_cache: int = 0
    failed: int = 0
    disallowed: int = 0
    not_attempted: int = 0
    stopped: str | None = None
    errors: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "host": self.host,
            "stored": self.stored,
            "from_cache": self.from_cache,
            "failed": self.failed,
            "disallowed": self.disallowed,
            "not_attempted": self.not_attempted,
            "stopped": self.stopped,
            "errors": dict(self.errors.most_common()),
        }


@dataclass
class FetchImagesReport:
    """What one ``fetch_images`` run did.

    ``pending`` URL images were recorded but not stored when the run began; ``stored`` of them are stored
    now (``merged`` of those had the same content as an image already in the store, so their rows were
    merged into it); ``failed`` could not be fetched or were not images; ``remaining`` are still pending
    (past ``limit``, or on a host that stopped us). ``not_fetchable`` rows are unstored references that are
    not http(s) URLs (e.g. local files that were missing at import).
    """

    store: str
    pending: int = 0
    attempted: int = 0
    stored: int = 0
    merged: int = 0
    failed: int = 0
    remaining: int = 0
    not_fetchable: int = 0
    batches: int = 0
    steps_updated: int = 0
    hosts: dict[str, HostReport] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)
    http: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        """The numbers of this run (what the provenance log records)."""
        return {
            "pending": self.pending,
            "attempted": self.attempted,
            "stored": self.stored,
            "merged": self.merged,
            "failed": self.failed,
            "remaining": self.remaining,
            "not_fetchable": self.not_fetchable,
            "steps_updated": self.steps_updated,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what ``--json`` prints)."""
        return {
            "store": self.store,
            **self.counts(),
            "batches": self.batches,
            "hosts": [h.to_dict() for h in sorted(self.hosts.values(), key=lambda h: h.host)],
            "failures": [{"url": u, "error": e} for u, e in self.failures[:_MAX_LISTED]],
            "http": self.http,
        }


def _is_http(url: str | None) -> bool:
    if not url:
        return False
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def pending_images(store: Store) -> tuple[list[tuple[str, str]], int]:
    """``([(image id, url), ...], not_fetchable)``: the unstored http(s) images in fetch order.

    The order is deterministic: by procedure, step and id within each host, hosts taken in turn (round
    robin), so one slow host's rate limit does not hold up the others.
    """
    images = store.table("images", ["id", "procedure_id", "step_index", "url", "stored"])
    unstored = images.filter(pc.invert(pc.fill_null(images["stored"], False)))
    by_host: dict[str, list[tuple[str, str]]] = defaultdict(list)
    not_fetchable = 0
    rows = unstored.sort_by([("procedure_id", "ascending"), ("step_index", "ascending"), ("id", "ascending")])
    for image_id, url in zip(rows["id"].to_pylist(), rows["url"].to_pylist(), strict=True):
        if _is_http(url):
            by_host[_host(url)].append((image_id, url))
        else:
            not_fetchable += 1
    order: list[tuple[str, str]] = []
    queues = [by_host[h] for h in sorted(by_host)]
    for turn in range(max((len(q) for q in queues), default=0)):
        order.extend(q[turn] for q in queues if turn < len(q))
    return order, not_fetchable


def _domains(urls: list[str]) -> tuple[str, ...]:
    """Redirects may stay within the registrable-looking domain (last two labels) of the image hosts."""
    out = set()
    for url in urls:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        labels = host.split(".")
        out.add(host if host.replace(".", "").isdigit() or len(labels) <= 2 else ".".join(labels[-2:]))
    return tuple(sorted(out))


def _validate(urls: list[str], config: HttpConfig) -> None:
    public = [u for u in urls if not is_loopback_url(u)]
    if not public:
        return
    if not config.contact and not config.user_agent:
        raise BadInput(
            f"fetching from public hosts ({urlsplit(public[0]).netloc} ...) needs a contact so their operators "
            "can reach you: pass --contact EMAIL_OR_URL (or set PROCBENCH_CONTACT)"
        )
    if config.min_interval < 1.0:
        raise BadInput("public hosts get at most one request per second each: --delay must be >= 1")


def fetch_images(
    store: Store | str | Path,
    *,
    limit: int | None = None,
    http: HttpConfig | None = None,
    max_image_side: int = 512,
    batch_size: int = 200,
    clock: Clock | None = None,
    session: requests.Session | None = None,
    progress: Progress = SILENT,
) -> FetchImagesReport:
    """Fetch up to ``limit`` of the store's recorded image URLs and store them (see the module docstring).

    Args:
        http: politeness settings (contact, ``min_interval`` per host, ``max_bytes`` size cap, retries).
        max_image_side: longest side of the stored (normalised) images.
        batch_size: images committed per transaction (what an interruption can cost, never what it loses:
            fetched bytes stay in the HTTP cache).

    Raises:
        BadInput: no contact or a delay under 1 s while public hosts are involved; bad ``limit``/``batch_size``.
    """
    config = http or HttpConfig()
    if limit is not None and limit < 1:
        raise BadInput("--limit must be at least 1")
    if batch_size < 1:
        raise BadInput("--batch-size must be at least 1")
    if not isinstance(store, Store):
        store = Store.open(store)
    order, not_fetchable = pending_images(store)
    report = FetchImagesReport(store=str(store.root), pending=len(order), not_fetchable=not_fetchable)
    todo = order[:limit] if limit is not None else order
    _validate([u for _, u in todo], config)
    for _, url in order[len(todo) :]:
        report.hosts.setdefault(_host(url), HostReport(_host(url))).not_attempted += 1
    if not todo:
        report.remaining = len(order)
        return report
    client = HttpClient(
        config,
        domains=_domains([u for _, u in todo]),
        cache=ResponseCache(store.root / "cache" / "http"),
        clock=clock,
        session=session,
        same_origin=True,  # an image URL's redirect stays on its host and port
        strict_images=True,  # an HTML or SVG answer is a failure, and its body is not kept in the cache
    )
    mapping: dict[str, tuple[str, int, int]] = {}
    progress.start("fetch images", total=len(todo))
    try:
        for image_id, url in todo:
            host = report.hosts.setdefault(_host(url), HostReport(_host(url)))
            if host.stopped:
                host.not_attempted += 1
                progress.advance()
                continue
            report.attempted += 1
            outcome = _fetch_one(client, url, host, max_image_side=max_image_side, store=store)
            if isinstance(outcome, str):
                report.failed += 1
                report.failures.append((without_credentials(url), outcome))
            else:
                mapping[image_id] = outcome
                host.stored += 1
            progress.advance()
            if len(mapping) >= batch_size:
                _commit(store, mapping, report, config)
                mapping = {}
        if mapping:
            _commit(store, mapping, report, config)
    finally:
        report.http = client.stats.to_dict()
        client.close()
    report.remaining = len(order) - report.stored - report.failed
    return report


def _host(url: str) -> str:
    """``host[:port]`` of ``url``, without any ``user:password@`` (never printed)."""
    return urlsplit(without_credentials(url)).netloc.lower()


def _fetch_one(
    client: HttpClient, url: str, host: HostReport, *, max_image_side: int, store: Store
) -> tuple[str, int, int] | str:
    """``(content id, width, height)`` of the stored image, or why it failed."""
    cached_before = client.stats.from_cache
    url = without_credentials(url)
    try:
        body = client.get(url, kind="image").body
    except NotAnImage as exc:
        host.failed += 1
        host.errors["not an image"] += 1
        return str(exc)
    except HostUnresponsive as exc:
        host.failed += 1
        host.stopped = f"{type(exc).__name__}: {exc}"
        host.errors["timeouts"] += 1
        log.warning("stopping requests to %s for this run: %s", host.host, exc)
        return str(exc)
    except Disallowed as exc:
        host.disallowed += 1
        host.errors["disallowed by robots.txt" if "robots" in str(exc) else "redirect refused"] += 1
        return str(exc)
    except (Blocked, RateLimited) as exc:
        # The host refuses us or keeps asking us to slow down: leave it alone for the rest of this run.
        host.failed += 1
        host.stopped = f"{type(exc).__name__}: {exc}"
        host.errors[type(exc).__name__] += 1
        log.warning("stopping requests to %s for this run: %s", host.host, exc)
        return str(exc)
    except FetchError as exc:
        host.failed += 1
        host.errors[f"HTTP {exc.status}" if exc.status else type(exc).__name__] += 1
        return str(exc)
    if client.stats.from_cache > cached_before:
        host.from_cache += 1
    try:
        image = normalise_image(body, max_side=max_image_side)
    except BadImage as exc:
        host.failed += 1
        host.errors["not an image"] += 1
        client.remember_failure(url, FetchError(f"{url}: {exc}", url=url, status=200))  # not its bytes
        return str(exc)
    store.put_image(image)
    return image.id, image.width, image.height


def _commit(
    store: Store, mapping: dict[str, tuple[str, int, int]], report: FetchImagesReport, config: HttpConfig
) -> None:
    """Replace each URL id of ``mapping`` by its content id in images.parquet and steps.image_ids, atomically."""
    args = {"max_bytes": config.max_bytes, "min_interval": config.min_interval, "batch": len(mapping)}
    with store.transaction("fetch-images", args=args) as txn:
        images, merged = _updated_images(store.table("images"), mapping)
        steps, changed = _updated_steps(store.table("steps"), mapping)
        txn.write_table("images", images)
        txn.write_table("steps", steps)
        txn.counts.update({"stored": len(mapping), "merged": merged, "steps_updated": changed})
    report.stored += len(mapping)
    report.merged += merged
    report.steps_updated += changed
    report.batches += 1


def _lookup(ids: pa.ChunkedArray | pa.Array, mapping: dict[str, tuple[str, int, int]]) -> tuple[pa.Array, np.ndarray]:
    """For each of ``ids``: its position in ``mapping`` (null when absent), and a hit mask."""
    keys = pa.array(list(mapping), pa.string())
    where = pc.index_in(ids, value_set=keys)
    if isinstance(where, pa.ChunkedArray):
        where = where.combine_chunks()
    return where, np.asarray(pc.is_valid(where), dtype=bool)


def _updated_images(images: pa.Table, mapping: dict[str, tuple[str, int, int]]) -> tuple[pa.Table, int]:
    """``images`` with the mapped rows re-keyed and stored; a row whose new id is already present is dropped."""
    where, hit = _lookup(images["id"], mapping)
    values = list(mapping.values())
    new_ids = pa.array([v[0] for v in values], pa.string())
    widths = pa.array([v[1] for v in values], pa.int32())
    heights = pa.array([v[2] for v in values], pa.int32())
    mask = pa.array(hit)

    def replaced(name: str, new: pa.Array) -> pa.Array:
        return pc.if_else(mask, new.take(pc.fill_null(where, 0)), images[name].combine_chunks())

    table = images
    for name, new in (("id", new_ids), ("width", widths), ("height", heights)):
        table = table.set_column(table.schema.get_field_index(name), table.schema.field(name), replaced(name, new))
    stored_col = pc.or_(mask, pc.fill_null(images["stored"].combine_chunks(), False))
    table = table.set_column(table.schema.get_field_index("stored"), table.schema.field("stored"), stored_col)
    # One row per image id: the first row of an id wins (an image stored earlier, or the first URL of it).
    first = (
        table.select(["id"])
        .append_column("_row", pa.array(np.arange(table.num_rows)))
        .group_by("id", use_threads=False)
        .aggregate([("_row", "min")])["_row_min"]
    )
    keep = np.sort(np.asarray(first))
    return table.take(pa.array(keep)), table.num_rows - len(keep)


def _updated_steps(steps: pa.Table, mapping: dict[str, tuple[str, int, int]]) -> tuple[pa.Table, int]:
    """``steps`` with every mapped id in ``image_ids`` replaced (an id a step then holds twice kept once)."""
    column = steps["image_ids"].combine_chunks()
    values = pc.list_flatten(column)
    where, hit = _lookup(values, mapping)
    if not hit.any():
        return steps, 0
    new_ids = pa.array([v[0] for v in mapping.values()], pa.string())
    flat = pc.if_else(pa.array(hit), new_ids.take(pc.fill_null(where, 0)), values)
    lengths = np.asarray(pc.fill_null(pc.list_value_length(column), 0), dtype=np.int32)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths, dtype=np.int32)]), pa.int32())
    lists = pa.ListArray.from_arrays(offsets, flat, type=column.type)
    changed_rows = np.unique(np.repeat(np.arange(len(lengths)), lengths)[hit])
    changed = lists.take(pa.array(changed_rows)).to_pylist()
    if any(len(set(ids)) < len(ids) for ids in changed):  # rare: two URLs of one step were the same image
        python = lists.to_pylist()
        for row in changed_rows.tolist():
            python[row] = list(dict.fromkeys(python[row]))
        lists = pa.array(python, column.type)
    index = steps.schema.get_field_index("image_ids")
    return steps.set_column(index, steps.schema.field("image_ids"), lists), len(changed_rows)
