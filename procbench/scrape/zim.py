"""``procbench scrape zim FILE.zim``: wikiHow procedures from a Kiwix/openZIM archive, with no network.

wikihow2zim (openZIM's scraper, facts §A) stores each article under its wikiHow path with the page's
``#content_wrapper`` (scripts, tips and ``noscript`` images removed, ``data-src`` copied to ``src`` and
rewritten to in-archive ``images/<digest>.webp``) and the footer breadcrumbs. The wikiHow HTML parser
reads those pages as it reads live ones; images are read from the archive itself.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from procbench.errors import InputFileNotFound, MissingDependency, ParseError
from procbench.procedure import Procedure
from procbench.progress import SILENT, Progress
from procbench.scrape.crawl import Job, ScrapeReport, run_job
from procbench.scrape.filters import Filters
from procbench.scrape.wikihow import BASE_URL, is_article_path, parse_article_html
from procbench.store import Store

__all__ = ["ZimOptions", "scrape_zim"]

_ARTICLE_MARKERS = (b"steps_list_2", b"section steps", b"HowToStep")


@dataclass(frozen=True)
class ZimOptions:
    """What to read from a wikiHow ZIM: categories (any level of the breadcrumb; all when empty), limits."""

    categories: tuple[str, ...] = ()
    limit: int | None = None
    images: bool = True
    max_image_side: int = 512
    filters: Filters = field(default_factory=Filters)
    batch_size: int = 25


def _norm(name: str) -> str:
    return name.replace("-", " ").strip().lower()


class _ZimReader:
    def __init__(self, path: Path) -> None:
        if importlib.util.find_spec("libzim") is None:
            raise MissingDependency("reading ZIM archives needs python-libzim: pip install 'procbench[zim]'")
        from libzim.reader import Archive

        self.archive = Archive(str(path))
        self.site = self._metadata("Source") or BASE_URL
        if "://" not in self.site:
            self.site = f"https://{self.site}"
        self.site = self.site.rstrip("/")
        date = self._metadata("Date")
        try:
            self.date = datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=timezone.utc) if date else None
        except ValueError:
            self.date = None

    def _metadata(self, key: str) -> str | None:
        try:
            return bytes(self.archive.get_metadata(key)).decode("utf-8").strip() or None
        except (KeyError, RuntimeError):
            return None

    def article_paths(self) -> Iterator[str]:
        for index in range(self.archive.entry_count):
            entry = self.archive._get_entry_by_id(index)
            if entry.is_redirect or not is_article_path(entry.path):
                continue
            item = entry.get_item()
            if not item.mimetype.startswith("text/html"):
                continue
            content = bytes(item.content)
            if any(marker in content for marker in _ARTICLE_MARKERS):
                yield entry.path

    def read(self, path: str) -> bytes:
        entry = self.archive.get_entry_by_path(path)
        for _ in range(10):
            if not entry.is_redirect:
                break
            entry = entry.get_redirect_entry()
        return bytes(entry.get_item().content)

    def procedure(self, path: str) -> Procedure:
        url = f"{self.site}/{path}"
        procedure = parse_article_html(self.read(path), url)
        procedure.fetched_at = self.date
        for step in procedure.steps:
            step.images = [self._image_ref(ref) for ref in step.images]
        return procedure

    def _image_ref(self, ref: str) -> str:
        """``zim:<path>`` for an image inside the archive; other references are left as they are."""
        if ref.startswith(self.site + "/"):
            inner = unquote(urlsplit(ref).path.lstrip("/"))
            if self.archive.has_entry_by_path(inner):
                return f"zim:{inner}"
        return ref

    def load_image(self, ref: str) -> bytes | None:
        if not ref.startswith("zim:"):
            return None
        try:
            return self.read(ref.removeprefix("zim:"))
        except KeyError as exc:
            raise OSError(f"{ref} is not in the archive") from exc


def scrape_zim(
    store: Store | str | os.PathLike[str],
    path: str | os.PathLike[str],
    options: ZimOptions | None = None,
    *,
    progress: Progress = SILENT,
) -> ScrapeReport:
    """Read the wikiHow articles of a ZIM archive into ``store`` (resumable, like a web scrape).

    Raises:
        InputFileNotFound: no such file.
        MissingDependency: python-libzim is not installed.
    """
    options = options or ZimOptions()
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFound(f"no such ZIM file: {path}")
    reader = _ZimReader(path)
    if not isinstance(store, Store):
        store = Store.open(Path(store), create=True)
    wanted = {_norm(c) for c in options.categories}

    def fetch(path_in_zim: str) -> Procedure:
        procedure = reader.procedure(path_in_zim)
        if wanted and not wanted & {_norm(c) for c in procedure.category}:
            raise _OtherCategory(f"{path_in_zim}: not in {', '.join(sorted(wanted))}")
        return procedure

    stat = path.stat()
    identity: dict[str, Any] = {
        "file": str(path.resolve()),
        "size": stat.st_size,
        "categories": sorted(wanted),
        "filters": asdict(options.filters),
    }
    args = {"file": str(path), **{k: v for k, v in asdict(options).items()}}
    job = Job(
        source="zim",
        identity=identity,
        targets=[(None, reader.article_paths)],
        fetch=fetch,
        args=args,
        filters=options.filters,
        image_loader=reader.load_image if options.images else None,
        max_image_side=options.max_image_side,
        limit=options.limit,
        batch_size=options.batch_size,
    )
    return run_job(store, job, progress=progress)


class _OtherCategory(ParseError):
    """An article outside the requested categories."""

    outcome = "filtered_category"
