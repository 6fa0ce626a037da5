"""``procbench scrape wikihow|instructables``: options in, a resumable polite crawl into the store."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests

from procbench.errors import BadInput
from procbench.progress import SILENT, Progress
from procbench.registry import Registry
from procbench.scrape.cache import ResponseCache
from procbench.scrape.crawl import Job, ScrapeReport, Source, run_job
from procbench.scrape.filters import Filters
from procbench.scrape.http import Clock, HttpClient, HttpConfig, Mirror, is_loopback_url
from procbench.store import Store

__all__ = ["SOURCES", "ScrapeOptions", "make_source", "scrape"]

#: Web sources by name: a source class (``Source`` made with its defaults), imported when asked for.
SOURCES: Registry[Callable[[], Source]] = Registry("source")
SOURCES.add("wikihow", "procbench.scrape.wikihow:WikiHowSource")
SOURCES.add("instructables", "procbench.scrape.instructables:InstructablesSource")


@dataclass(frozen=True)
class ScrapeOptions:
    """One scrape: a source, what to read from it (categories and/or URLs), how much, and how politely.

    ``limit`` counts procedures added by this job over all its runs; ``limit_per_category`` the same per
    category. ``base_url`` sends every request for the source's hosts to a mirror. ``sort`` is the
    listing order where the site offers one (Instructables: ``popular`` by views, ``recent``,
    ``favorites``; wikiHow lists in category order only).
    """

    source: str
    categories: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    limit: int | None = None
    limit_per_category: int | None = None
    sort: str | None = None
    images: bool = True
    max_image_side: int = 512
    base_url: str | None = None
    filters: Filters = field(default_factory=Filters)
    batch_size: int = 10
    http: HttpConfig = field(default_factory=HttpConfig)
    manifest: str | None = None


def make_source(name: str, *, language: str | None = None) -> Source:
    """The web source called ``name``; for wikiHow, its ``language`` edition (None: English) lists categories.

    Raises:
        BadInput: an unknown source, or a language wikiHow has no edition in.
    """
    if name not in SOURCES:
        raise BadInput(f"{SOURCES.unknown(name)}; or zim (procbench scrape zim FILE.zim)")
    if name == "wikihow":
        from procbench.scrape.wikihow import WikiHowSource, edition_base

        return WikiHowSource(edition_base(language))
    return SOURCES.get(name)()


def _validate(options: ScrapeOptions, source: Source) -> None:
    if not options.categories and not options.urls:
        raise BadInput(f"nothing to scrape: give --category or --url for {options.source} (or a manifest)")
    if options.sort is not None and options.sort not in source.sorts:
        raise BadInput(f"{options.source} offers the sort orders {', '.join(source.sorts)}, not {options.sort!r}")
    if options.limit is not None and options.limit < 1:
        raise BadInput("--limit must be at least 1")
    if options.batch_size < 1:
        raise BadInput("batch size must be at least 1")
    if options.http.min_interval < 0:
        raise BadInput("the request interval cannot be negative")
    local = options.base_url is not None and is_loopback_url(options.base_url)
    if not local and not options.http.contact and not options.http.user_agent:
        raise BadInput(
            "scraping a public site needs a contact so its operators can reach you: pass --contact "
            "EMAIL_OR_URL (or set PROCBENCH_CONTACT)"
        )
    if not local and options.http.min_interval < 1.0:
        raise BadInput("public sites get at most one request per second per host: --delay must be >= 1")


def scrape(
    store: Store | str | os.PathLike[str],
    options: ScrapeOptions,
    *,
    clock: Clock | None = None,
    session: requests.Session | None = None,
    source: Source | None = None,
    progress: Progress = SILENT,
) -> ScrapeReport:
    """Scrape ``options.source`` into ``store`` (created if needed); re-running the same call continues it.

    ``source`` replaces the named source (e.g. a :class:`~procbench.scrape.wikihow.WikiHowSource` for a site
    with wikiHow's markup under another domain, as the demo serves).

    Raises:
        BadInput: unknown source or sort, nothing to scrape, no contact for a public site.
        RateLimited, Blocked, FetchError: the site stopped us; what was done so far is committed.
    """
    source = source or make_source(options.source, language=options.filters.language)
    _validate(options, source)
    if not isinstance(store, Store):
        store = Store.open(Path(store), create=True)
    mirror = Mirror(options.base_url, source.domains) if options.base_url else None
    client = HttpClient(
        options.http,
        domains=source.domains,
        cache=ResponseCache(store.root / "cache" / "http"),
        mirror=mirror,
        clock=clock,
        session=session,
        soft_block=source.soft_block,
    )
    sort = options.sort or source.sorts[0]
    urls = tuple(dict.fromkeys(source.normalise_url(u) for u in options.urls))
    targets: list[tuple[str | None, Any]] = []
    if urls:
        targets.append((None, lambda: iter(urls)))
    for category in options.categories:
        targets.append((category, _lister(source, client, category, sort)))

    def load_image(ref: str) -> bytes | None:
        if not ref.startswith(("http://", "https://")) or (mirror is not None and not mirror.covers(ref)):
            return None
        host = (ref.split("/", 3)[2].split(":")[0]).lower()
        if not any(host == d or host.endswith("." + d) for d in source.domains):
            return None  # only the source's own image hosts are fetched
        return client.get(ref, kind="image").body

    identity = {
        "source": options.source,
        "categories": list(options.categories),
        "urls": list(urls),
        "sort": sort,
        "filters": asdict(options.filters),
    }  # a mirror is transport, not identity
    args = {k: v for k, v in asdict(options).items() if k != "http"}
    args["http"] = {k: v for k, v in asdict(options.http).items() if k != "contact"}
    args["filters"] = asdict(options.filters)
    job = Job(
        source=options.source,
        identity=identity,
        targets=targets,
        fetch=lambda url: source.fetch(client, url),
        args=args,
        filters=options.filters,
        image_loader=load_image if options.images else None,
        max_image_side=options.max_image_side,
        limit=options.limit,
        limit_per_category=options.limit_per_category,
        batch_size=options.batch_size,
        http_stats=client.stats.to_dict,
    )
    try:
        return run_job(store, job, progress=progress)
    finally:
        client.close()


def _lister(source: Source, client: HttpClient, category: str, sort: str) -> Any:
    def urls() -> Iterator[str]:
        return source.listing(client, category, sort=sort)

    return urls
