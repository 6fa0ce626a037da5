"""Scrape manifests: versioned TOML files in ``manifests/`` that say what a benchmark is built from.

```toml
version = 1
name = "woodworkqa"
source = "instructables"              # or "wikihow"
categories = ["workshop/furniture"]   # Instructables: category[/channel]; wikiHow: category names
sort = "popular"                      # optional; where the site offers sorting
limit = 2000                          # procedures added by this manifest, over all runs
limit_per_category = 500              # optional
images = true                         # optional (default true)
max_image_side = 512                  # optional

[filters]                             # optional; these are the defaults
min_steps = 3
max_steps = 25
language = "en"
require_images = false

[http]                                # optional politeness overrides (never below 1 s for public sites)
min_interval = 1.0
```
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from procbench.errors import BadInput, InputFileNotFound
from procbench.scrape.filters import Filters
from procbench.scrape.http import HttpConfig
from procbench.scrape.web import SOURCES, ScrapeOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["MANIFEST_VERSION", "Manifest", "load_manifest"]

#: The manifest format this procbench reads.
MANIFEST_VERSION = 1
_TOP = {
    "version",
    "name",
    "description",
    "source",
    "categories",
    "urls",
    "sort",
    "limit",
    "limit_per_category",
    "images",
    "max_image_side",
    "batch_size",
    "filters",
    "http",
}
_HTTP = {"min_interval", "connect_timeout", "read_timeout", "max_bytes", "max_retries", "pause_seconds"}


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest; :meth:`options` turns it into :class:`ScrapeOptions`."""

    name: str
    source: str
    path: str
    version: int = MANIFEST_VERSION
    description: str = ""
    categories: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    sort: str | None = None
    limit: int | None = None
    limit_per_category: int | None = None
    images: bool = True
    max_image_side: int = 512
    batch_size: int = 10
    filters: Filters = field(default_factory=Filters)
    http: dict[str, Any] = field(default_factory=dict)

    def options(self, *, http: HttpConfig | None = None, **overrides: Any) -> ScrapeOptions:
        """Scrape options for this manifest; ``overrides`` (e.g. ``limit``, ``base_url``) win over the file."""
        base_http = http or HttpConfig()
        http_overrides = dict(self.http)
        if "min_interval" in http_overrides:  # a manifest may slow requests down, never speed them up
            http_overrides["min_interval"] = max(float(http_overrides["min_interval"]), base_http.min_interval)
        options = ScrapeOptions(
            source=self.source,
            categories=self.categories,
            urls=self.urls,
            sort=self.sort,
            limit=self.limit,
            limit_per_category=self.limit_per_category,
            images=self.images,
            max_image_side=self.max_image_side,
            filters=self.filters,
            batch_size=self.batch_size,
            http=replace(base_http, **http_overrides),
            manifest=self.name,
        )
        return replace(options, **{k: v for k, v in overrides.items() if v is not None})


def _expect(value: Any, kind: type | tuple[type, ...], where: str, path: Path) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadInput(f"{path}: {where} has the wrong type ({type(value).__name__})")
    return value


def load_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest.

    Raises:
        InputFileNotFound: no such file.
        BadInput: not TOML, a newer version, an unknown key or source, a value of the wrong type.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFound(f"no such manifest: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} is not valid TOML: {exc}") from exc
    unknown = set(data) - _TOP
    if unknown:
        raise BadInput(f"{path}: unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(_TOP))})")
    version = _expect(data.get("version", MANIFEST_VERSION), int, "version", path)
    if version > MANIFEST_VERSION:
        raise BadInput(f"{path} is manifest version {version}; this procbench reads up to {MANIFEST_VERSION}")
    source = _expect(data.get("source"), str, "source", path)
    if source not in SOURCES:
        raise BadInput(f"{path}: unknown source {source!r}; choose one of: {', '.join(SOURCES)}")
    filters_data = _expect(data.get("filters", {}), dict, "[filters]", path)
    known_filters = {f.name for f in fields(Filters)}
    if set(filters_data) - known_filters:
        raise BadInput(f"{path}: unknown [filters] keys {', '.join(sorted(set(filters_data) - known_filters))}")
    http = _expect(data.get("http", {}), dict, "[http]", path)
    if set(http) - _HTTP:
        raise BadInput(f"{path}: unknown [http] keys {', '.join(sorted(set(http) - _HTTP))}")
    categories = tuple(
        _expect(c, str, "categories[]", path) for c in _expect(data.get("categories", []), list, "categories", path)
    )
    urls = tuple(_expect(u, str, "urls[]", path) for u in _expect(data.get("urls", []), list, "urls", path))
    if not categories and not urls:
        raise BadInput(f"{path}: give categories or urls")
    optional_int = {k: _expect(data[k], int, k, path) for k in ("limit", "limit_per_category") if k in data}
    try:
        filters = Filters(**filters_data)
    except TypeError as exc:
        raise BadInput(f"{path}: bad [filters]: {exc}") from exc
    return Manifest(
        name=_expect(data.get("name", path.stem), str, "name", path),
        source=source,
        path=str(path),
        version=version,
        description=_expect(data.get("description", ""), str, "description", path),
        categories=categories,
        urls=urls,
        sort=_expect(data["sort"], str, "sort", path) if "sort" in data else None,
        images=_expect(data.get("images", True), bool, "images", path),
        max_image_side=_expect(data.get("max_image_side", 512), int, "max_image_side", path),
        batch_size=_expect(data.get("batch_size", 10), int, "batch_size", path),
        filters=filters,
        http=http,
        **optional_int,
    )
