"""``procbench scrape``: polite, resumable wikiHow and Instructables scrapers and ZIM archives (manifests:
:mod:`procbench.manifest`).

Manifests are read by :mod:`procbench.manifest`.

>>> from procbench.scrape import ScrapeOptions, scrape
>>> report = scrape("store", ScrapeOptions("wikihow", categories=("Woodworking",), limit=50,
...                                        http=HttpConfig(contact="me@example.org")))   # doctest: +SKIP

Parsers are pure functions in :mod:`procbench.scrape.wikihow` and :mod:`procbench.scrape.instructables`;
every request goes through :class:`procbench.scrape.http.HttpClient`.
"""

from __future__ import annotations

from procbench.scrape.crawl import ScrapeReport
from procbench.scrape.filters import Filters
from procbench.scrape.http import HttpClient, HttpConfig, Mirror
from procbench.scrape.web import SOURCES, ScrapeOptions, scrape
from procbench.scrape.zim import ZimOptions, scrape_zim

__all__ = [
    "SOURCES",
    "Filters",
    "HttpClient",
    "HttpConfig",
    "Mirror",
    "ScrapeOptions",
    "ScrapeReport",
    "ZimOptions",
    "scrape",
    "scrape_zim",
]
