"""The resumable crawl: listings in, procedures out, committed to the store in small batches.

Each batch is one store transaction holding the new procedures, steps and images *and* the job's state
file (``STORE/scrape/jobs/<job>.json``: every URL already handled and how). Killed at any moment (kill -9
included), a re-run of the same command finds the last committed state: handled URLs are skipped,
listings and pages fetched before the kill are replayed from ``STORE/cache/http/`` and nothing is asked
of the site twice; procedure ids are unique in the store, so nothing is duplicated either.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from procbench.errors import BadInput, Blocked, Disallowed, FetchError, ParseError, RateLimited
from procbench.procedure import Procedure
from procbench.progress import SILENT, Progress
from procbench.scrape.filters import Filters
from procbench.store import Store
from procbench.store.append import ImageLoader, add_procedures
from procbench.store.atomic import batched_sync

__all__ = ["Job", "ScrapeReport", "SiteDown", "Source", "job_args", "run_job"]

log = logging.getLogger(__name__)

_STATE_DIR = "scrape/jobs"
_MAX_LISTED = 100


class SiteDown(FetchError):
    """Several pages in a row failed with timeouts or server errors."""


class Source(Protocol):
    """What a web source offers the crawler (see :mod:`procbench.scrape.wikihow`)."""

    name: str
    domains: tuple[str, ...]
    soft_block: tuple[bytes, ...]
    sorts: tuple[str, ...]

    def normalise_url(self, url: str) -> str:
        """Canonical URL for a user-given URL or slug."""

    def listing(self, client: Any, category: str, *, sort: str) -> Iterator[str]:
        """Procedure URLs of a category, in the order to scrape them."""

    def fetch(self, client: Any, url: str) -> Procedure:
        """Fetch and parse one procedure."""


@dataclass
class ScrapeReport:
    """What one scrape run did (``counts()`` goes to the provenance log, ``to_dict()`` to ``--json``)."""

    source: str
    job: str
    resumed: bool = False
    added: int = 0
    already_present: int = 0
    skipped_done: int = 0
    batches: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str]] = field(default_factory=list)
    listing_errors: list[tuple[str, str]] = field(default_factory=list)
    images_stored: int = 0
    images_remote: int = 0
    image_failures: list[tuple[str, str]] = field(default_factory=list)
    http: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None

    def counts(self) -> dict[str, Any]:
        """The numbers of this report."""
        return {
            "added": self.added,
            "already_present": self.already_present,
            "skipped_done": self.skipped_done,
            "outcomes": dict(sorted(self.outcomes.items())),
            "failed": len(self.failures),
            "listing_errors": len(self.listing_errors),
            "images_stored": self.images_stored,
            "images_remote": self.images_remote,
            "images_failed": len(self.image_failures),
            "batches": self.batches,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (failures listed up to 100 each)."""
        return {
            "source": self.source,
            "job": self.job,
            "resumed": self.resumed,
            **self.counts(),
            "stopped": self.stopped,
            "http": self.http,
            "failures": [{"url": u, "error": e} for u, e in self.failures[:_MAX_LISTED]],
            "listing_errors": [{"category": c, "error": e} for c, e in self.listing_errors[:_MAX_LISTED]],
            "image_failures": [{"image": u, "error": e} for u, e in self.image_failures[:_MAX_LISTED]],
        }


@dataclass
class Job:
    """One resumable crawl.

    ``identity`` names the job (same identity = same state file, so a re-run continues it); ``targets``
    are (category or None, URL iterator factory) pairs visited in order; ``fetch`` turns a URL into a
    procedure; ``args`` go to the provenance log.
    """

    source: str
    identity: dict[str, Any]
    targets: list[tuple[str | None, Callable[[], Iterator[str]]]]
    fetch: Callable[[str], Procedure]
    args: dict[str, Any]
    filters: Filters = field(default_factory=Filters)
    image_loader: ImageLoader | None = None
    max_image_side: int = 512
    limit: int | None = None
    limit_per_category: int | None = None
    batch_size: int = 10
    http_stats: Callable[[], dict[str, Any]] | None = None

    @property
    def key(self) -> str:
        """The job id: a hash of its identity."""
        blob = json.dumps(self.identity, sort_keys=True, default=str).encode("utf-8")
        return f"{self.source}-{hashlib.sha256(blob).hexdigest()[:16]}"


def _load_state(store: Store, job: Job) -> dict[str, Any] | None:
    path = store.root / _STATE_DIR / f"{job.key}.json"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BadInput(f"unreadable scrape state {path}: {exc}; delete it to start the job over") from exc
    return state if isinstance(state, dict) else None


def run_job(store: Store, job: Job, *, progress: Progress = SILENT) -> ScrapeReport:
    """Run (or continue) ``job`` against ``store``; returns what it did.

    Raises:
        RateLimited, Blocked: the site asks us to stop; everything handled so far is committed first.
        FetchError: too many transient failures in a row (the site looks down); same.
    """
    # Responses and images are flushed to disk once per batch, before the batch commits (not one file at a
    # time: 6 fsyncs per image took ~11 of the demo's seconds); each write stays atomic, so a kill -9 leaves
    # the last committed state and complete cache entries, as before.
    with batched_sync() as sync:
        return _run_job(store, job, progress, sync)


def _run_job(store: Store, job: Job, progress: Progress, sync: Callable[[], None]) -> ScrapeReport:
    report = ScrapeReport(source=job.source, job=job.key)
    state = _load_state(store, job)
    report.resumed = state is not None
    state = state or {"identity": job.identity, "done": {}, "added": 0, "per_category": {}}
    done: dict[str, str] = state["done"]
    per_category: Counter[str] = Counter(state["per_category"])
    known = set(store.table("procedures", ["id"])["id"].to_pylist())
    pending: list[Procedure] = []
    pending_done: dict[str, str] = {}
    pending_categories: Counter[str] = Counter()
    progress.start(f"scrape {job.source}", total=job.limit)
    if job.limit is not None:
        progress.advance(min(state["added"], job.limit))

    def flush() -> None:
        if not pending and not pending_done:
            return
        with store.transaction("scrape", args={**job.args, "job": job.key, "batch": report.batches + 1}) as txn:
            batch = add_procedures(
                store, txn, list(pending), image_loader=job.image_loader, max_image_side=job.max_image_side
            )
            sync()  # the images (and cached responses) this batch wrote are on disk before it commits
            done.update(pending_done)
            state["added"] += batch.added
            per_category.update(pending_categories)
            state["per_category"] = dict(per_category)
            txn.stage(f"{_STATE_DIR}/{job.key}.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
            counts: dict[str, Any] = {
                "added": batch.added,
                "already_present": batch.already_present,
                "images_stored": batch.images_stored,
                "images_remote": batch.images_remote,
                "images_failed": len(batch.image_failures),
                "urls_handled": len(pending_done),
            }
            if job.http_stats is not None:
                counts["http"] = job.http_stats()
            txn.counts.update(counts)
        report.batches += 1
        report.added += batch.added
        report.already_present += batch.already_present
        report.images_stored += batch.images_stored
        report.images_remote += batch.images_remote
        report.image_failures.extend(batch.image_failures)
        pending.clear()
        pending_done.clear()
        pending_categories.clear()

    def added_so_far() -> int:
        return int(state["added"]) + len(pending)

    transient_in_a_row = 0
    try:
        for category, urls in job.targets:
            if job.limit is not None and added_so_far() >= job.limit:
                break
            label = category or ""
            try:
                for url in urls():
                    if job.limit is not None and added_so_far() >= job.limit:
                        break
                    if (
                        category
                        and job.limit_per_category is not None
                        and per_category[label] + pending_categories[label] >= job.limit_per_category
                    ):
                        break
                    if url in done or url in pending_done:
                        report.skipped_done += 1
                        continue
                    outcome = _handle(job, url, report, known, pending)
                    if outcome is None:  # transient failure: not marked done, retried by the next run
                        transient_in_a_row += 1
                        if transient_in_a_row >= 5:
                            raise SiteDown(
                                "5 pages in a row failed with timeouts or server errors; the site "
                                "looks down: re-run later to continue",
                                permanent=False,
                            )
                        continue
                    transient_in_a_row = 0
                    pending_done[url] = outcome
                    report.outcomes[outcome] += 1
                    if outcome == "added":
                        pending_categories[label] += 1
                        progress.advance()
                    if len(pending) >= job.batch_size or len(pending_done) >= 5 * job.batch_size:
                        flush()
            except (RateLimited, Blocked, SiteDown):
                raise
            except (FetchError, ParseError) as exc:
                report.listing_errors.append((label, str(exc)))
                log.warning("listing of %s failed: %s", label or "URLs", exc)
    except (RateLimited, Blocked, FetchError) as exc:
        report.stopped = str(exc)
        flush()
        raise
    flush()
    if job.http_stats is not None:
        report.http = job.http_stats()
    return report


def _handle(job: Job, url: str, report: ScrapeReport, known: set[str], pending: list[Procedure]) -> str | None:
    """Fetch, parse and filter one URL; the outcome to record, or None after a transient failure."""
    try:
        procedure = job.fetch(url)
    except Disallowed as exc:
        report.failures.append((url, str(exc)))
        return "robots" if "robots" in str(exc) else "redirect_refused"
    except (RateLimited, Blocked):
        raise
    except FetchError as exc:
        report.failures.append((url, str(exc)))
        if not exc.permanent:
            return None
        return f"http_{exc.status}" if exc.status else "fetch_error"
    except ParseError as exc:
        outcome = getattr(exc, "outcome", "parse_error")  # subclasses name expected skips (collections, ...)
        if outcome == "parse_error":
            report.failures.append((url, str(exc)))
        return str(outcome)
    reason = job.filters.reason(procedure)
    if reason is not None:
        return f"filtered_{reason}"
    if procedure.language is None and job.filters.language is not None:
        procedure.language = job.filters.language  # the language filter just checked the text
    if procedure.id in known:
        report.already_present += 1
        return "already_present"
    known.add(procedure.id)
    pending.append(procedure)
    return "added"


def job_args(options: Any) -> dict[str, Any]:
    """Provenance arguments of a dataclass of options (JSON-safe)."""
    return json.loads(json.dumps(asdict(options), default=str))
