"""Manifests: versioned TOML files (``manifests/``) that say what a benchmark is built from, one section per stage.

```toml
version = 2
name = "woodworkqa"                     # bump when the contents change what the manifest builds
description = "..."

[scrape]
source = "instructables"                # or "wikihow"
categories = ["workshop/furniture"]     # Instructables: category[/channel]; wikiHow: category names
urls = []                               # single pages (optional)
sort = "popular"                        # where the site offers sorting
limit = 2000                            # procedures added by this manifest, over all runs
limit_per_category = 500
images = true
max_image_side = 512
batch_size = 10

[scrape.filters]                        # which scraped procedures are kept (these are the defaults)
min_steps = 3
max_steps = 25
language = "en"                         # "any" keeps every language; wikiHow lists on this edition
require_images = false

[scrape.http]                           # may slow requests down or lower limits, never the reverse
min_interval = 1.0

[clean]                                 # any option of procbench.clean.CleanOptions
languages = ["en"]

[generate.textual-cloze]                # one table per task: any option of its class in procbench.generate.options
setting = "adversarial"                 # a setting folder name (default, recipeqa, adversarial, needs-context,
                                        # needs-context-c2, knobs-011, debias-b10, debias-auto), or
                                        # knobs = "0,1,1", or sweep = true
seed = 3
split_by = "procedure"
min_yield = 0.9

[generate.visual-cloze]
sweep = true
policy = "demo"
```

Every section is optional; a stage asked to run from a manifest without its section says so
(``procbench generate --manifest FILE`` runs every ``[generate.TASK]`` section, ``--task T`` only T's). Version-1
manifests (scrape keys at the top level with ``[filters]`` and ``[http]``) are still read. Every type is
checked when the file is loaded, before any request is made; an unknown key is reported with its section.
"""

from __future__ import annotations

import math
import re
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procbench.clean.options import CleanOptions
from procbench.errors import BadInput, InputFileNotFound
from procbench.nesting import nesting_depth
from procbench.scrape.filters import Filters

if TYPE_CHECKING:
    from procbench.generate.options import GenerateOptions
    from procbench.generate.settings import Setting
    from procbench.scrape.http import HttpConfig
    from procbench.scrape.web import ScrapeOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["MANIFEST_VERSION", "SECTIONS", "GenerateSection", "Manifest", "ScrapeSection", "load_manifest"]

#: The manifest format this procbench writes and reads (and every older one).
MANIFEST_VERSION = 2
#: The stages a manifest may configure, one table each.
SECTIONS = ("scrape", "clean", "generate")
#: The largest response body a manifest may allow (the HTTP layer's default cap: a manifest may only lower it).
MAX_BYTES_CEILING = 20 * 2**20

_TOP = {"version", "name", "description", *SECTIONS}
_SCRAPE_KEYS = {
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
# [scrape.http]: name -> (type, smallest allowed value, largest allowed value or None)
_HTTP: dict[str, tuple[type, float, float | None]] = {
    "min_interval": (float, 0.0, 86_400.0),
    "connect_timeout": (float, 0.1, 600.0),
    "read_timeout": (float, 0.1, 600.0),
    "max_seconds": (float, 1.0, 3_600.0),
    "max_bytes": (int, 1, MAX_BYTES_CEILING),
    "max_retries": (int, 0, 20),
    "pause_seconds": (float, 0.0, 86_400.0),
}
_FILTERS: dict[str, type] = {"min_steps": int, "max_steps": int, "language": str, "require_images": bool}
#: ``[generate.TASK]`` keys that choose the settings (the others are the task's options).
_SETTING_KEYS = ("setting", "knobs", "sweep")


@dataclass(frozen=True)
class GenerateSection:
    """A ``[generate.TASK]`` section: which settings of the task to write, and the task's options.

    Attributes:
        task: the task (its canonical name).
        options: the task's options (:mod:`procbench.generate.options`).
        setting: the setting to write (None: the task's default setting).
        sweep: write every setting of the task.
    """

    task: str
    options: GenerateOptions
    setting: Setting | None = None
    sweep: bool = False


@dataclass(frozen=True)
class ScrapeSection:
    """The ``[scrape]`` section: what to read from which source, which procedures to keep, how politely."""

    source: str
    categories: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    sort: str | None = None
    limit: int | None = None
    limit_per_category: int | None = None
    images: bool = True
    max_image_side: int = 512
    batch_size: int = 10
    filters: Filters = field(default_factory=Filters)
    http: tuple[tuple[str, float | int], ...] = ()


@dataclass(frozen=True)
class Manifest:
    """A parsed, checked manifest. ``scrape`` / ``clean`` are None when the file has no such section."""

    name: str
    path: str
    version: int = MANIFEST_VERSION
    description: str = ""
    scrape: ScrapeSection | None = None
    clean: CleanOptions | None = None
    #: ``[generate.TASK]`` sections, by task, in the file's order.
    generate: dict[str, GenerateSection] = field(default_factory=dict)

    def scrape_options(self, *, http: HttpConfig | None = None, **overrides: Any) -> ScrapeOptions:
        """Scrape options for the ``[scrape]`` section; ``overrides`` that are not None win over the file.

        ``http`` is the command line's HTTP configuration: the manifest may slow it down or lower its
        limits, never speed it up.
        """
        from procbench.scrape.http import HttpConfig
        from procbench.scrape.web import ScrapeOptions

        section = self.scrape
        if section is None:
            raise BadInput(f"{self.path} has no [scrape] section: nothing to scrape")
        base_http = http or HttpConfig()
        settings: dict[str, Any] = dict(section.http)
        if "min_interval" in settings:
            settings["min_interval"] = max(float(settings["min_interval"]), base_http.min_interval)
        if "max_bytes" in settings:
            settings["max_bytes"] = min(int(settings["max_bytes"]), base_http.max_bytes)
        options = ScrapeOptions(
            source=section.source,
            categories=section.categories,
            urls=section.urls,
            sort=section.sort,
            limit=section.limit,
            limit_per_category=section.limit_per_category,
            images=section.images,
            max_image_side=section.max_image_side,
            filters=section.filters,
            batch_size=section.batch_size,
            http=replace(base_http, **settings),
            manifest=self.name,
        )
        return replace(options, **{k: v for k, v in overrides.items() if v is not None})

    def clean_options(self) -> CleanOptions:
        """Options of ``clean``: the ``[clean]`` section over the defaults (the defaults without one)."""
        return self.clean or CleanOptions()

    def generate_sections(self, task: str | None = None) -> list[GenerateSection]:
        """The ``[generate.TASK]`` sections (``task``: only its own, in any spelling the task takes).

        Raises:
            BadInput: no such section (none at all without ``task``).
        """
        if task is None:
            if not self.generate:
                raise BadInput(f"{self.path} has no [generate.TASK] section: nothing to generate")
            return list(self.generate.values())
        from procbench.tasks import get_task

        name = get_task(task).name
        if name not in self.generate:
            raise BadInput(f"{self.path} has no [generate.{name}] section")
        return [self.generate[name]]


class _Reader:
    """Type checks that name the file and the section of a bad value."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, message: str) -> BadInput:
        return BadInput(f"{self.path}: {message}")

    def table(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{where} must be a table, not {_kind(value)}")
        return value

    def known(self, table: Mapping[str, Any], known: set[str] | Mapping[str, Any], where: str) -> None:
        unknown = sorted(set(table) - set(known))
        if unknown:
            raise self.fail(f"unknown key(s) {', '.join(unknown)} in {where} (known: {', '.join(sorted(known))})")

    def value(self, table: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
        value = table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.fail(f"{where} {key} must be {_TYPE_NAMES[kind]}, not {_kind(value)}")
        if kind is float and isinstance(value, float) and not math.isfinite(value):
            raise self.fail(f"{where} {key} must be a finite number, not {value}")
        return value

    def count(self, table: Mapping[str, Any], key: str, where: str, *, least: int = 0) -> int:
        value: int = self.value(table, key, int, where)
        if value < least:
            raise self.fail(f"{where} {key} must be at least {least}, not {value}")
        return value

    def strings(self, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        values = table[key]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise self.fail(f"{where} {key} must be a list of strings, not {_kind(values)}")
        return tuple(values)


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a table"
    return {int: "an integer", float: "a number", str: "a string", list: "a list"}.get(
        type(value), type(value).__name__
    )


def _scrape(read: _Reader, data: dict[str, Any], where: str) -> ScrapeSection:
    from procbench.scrape.web import SOURCES

    read.known(data, _SCRAPE_KEYS, where)
    if "source" not in data:
        raise read.fail(f"{where} needs a source ({', '.join(SOURCES)})")
    source = read.value(data, "source", str, where)
    if source not in SOURCES:
        raise read.fail(f"{SOURCES.unknown(source)} in {where}")
    source = SOURCES.canonical(source) or source
    categories = read.strings(data, "categories", where) if "categories" in data else ()
    urls = read.strings(data, "urls", where) if "urls" in data else ()
    if not categories and not urls:
        raise read.fail(f"{where} needs categories or urls")
    section = ScrapeSection(
        source=source,
        categories=categories,
        urls=urls,
        sort=read.value(data, "sort", str, where) if "sort" in data else None,
        limit=read.count(data, "limit", where, least=1) if "limit" in data else None,
        limit_per_category=read.count(data, "limit_per_category", where, least=1)
        if "limit_per_category" in data
        else None,
        images=read.value(data, "images", bool, where) if "images" in data else True,
        max_image_side=read.count(data, "max_image_side", where, least=16) if "max_image_side" in data else 512,
        batch_size=read.count(data, "batch_size", where, least=1) if "batch_size" in data else 10,
    )
    filters_where = "[filters]" if where == "the top level" else f"[{where.strip('[]')}.filters]"
    http_where = "[http]" if where == "the top level" else f"[{where.strip('[]')}.http]"
    filters = read.table(data.get("filters", {}), filters_where)
    read.known(filters, _FILTERS, filters_where)
    settings = {key: read.value(filters, key, kind, filters_where) for key, kind in _FILTERS.items() if key in filters}
    for key in ("min_steps", "max_steps"):
        if key in settings:
            read.count(filters, key, filters_where)
    if settings.get("min_steps", 3) > settings.get("max_steps", 25):
        raise read.fail(f"{filters_where} min_steps is larger than max_steps")
    if "language" in settings:
        language = settings["language"].strip().lower()
        settings["language"] = None if language in ("", "any") else language
    http = read.table(data.get("http", {}), http_where)
    read.known(http, _HTTP, http_where)
    limits: list[tuple[str, float | int]] = []
    for key, (kind, low, high) in _HTTP.items():
        if key not in http:
            continue
        value = read.value(http, key, kind, http_where)
        if value < low or (high is not None and value > high):
            raise read.fail(f"{http_where} {key} must be between {low} and {high}, not {value}")
        limits.append((key, value))
    return replace(section, filters=Filters(**settings), http=tuple(limits))


def _clean(read: _Reader, data: dict[str, Any]) -> CleanOptions:
    read.known(data, {f.name for f in fields(CleanOptions)}, "[clean]")
    try:
        return CleanOptions().replace(**data)
    except BadInput as exc:
        raise read.fail(f"[clean]: {exc}") from exc


def _generate(read: _Reader, data: dict[str, Any]) -> dict[str, GenerateSection]:
    from procbench.tasks import TASKS

    sections = {}
    for name, table in data.items():
        if name not in TASKS:
            raise read.fail(f"{TASKS.unknown(name)} in [generate] (one table per task: [generate.TASK])")
        task = TASKS.canonical(name) or name
        if task in sections:
            raise read.fail(f"[generate.{task}] given twice")
        sections[task] = _generate_task(read, task, read.table(table, f"[generate.{name}]"), f"[generate.{name}]")
    return sections


def _generate_task(read: _Reader, task: str, data: dict[str, Any], where: str) -> GenerateSection:
    from procbench.generate.options import options_class
    from procbench.generate.sequencing import read_references
    from procbench.generate.settings import Setting, parse_knobs, parse_setting

    cls = options_class(task)
    hints = typing.get_type_hints(cls)
    read.known(data, {*cls.names(), *_SETTING_KEYS}, where)
    values: dict[str, Any] = {}
    try:
        for key in cls.names():
            if key not in data:
                continue
            kind = _option_kind(hints[key])
            if kind is tuple:  # split_ratios
                values[key] = tuple(_number(read, v, f"{where} {key}") for v in _list(read, data[key], where, key))
            elif kind is Mapping:  # references: a JSONL file of alternative orders, relative to the manifest
                path = Path(read.value(data, key, str, where))
                values[key] = read_references(path if path.is_absolute() else read.path.parent / path)
            else:
                values[key] = read.value(data, key, kind, where)
        options = cls.of(**values)
        chosen = [key for key in _SETTING_KEYS if key in data]
        if len(chosen) > 1:
            raise read.fail(f"{where} takes one of setting, knobs and sweep, not {' and '.join(chosen)}")
        setting = None
        if "setting" in data:
            setting = parse_setting(read.value(data, "setting", str, where))
        elif "knobs" in data:
            knobs = data["knobs"]
            text = ",".join(map(str, knobs)) if isinstance(knobs, list) else read.value(data, "knobs", str, where)
            setting = Setting("knobs", parse_knobs(text))
        sweep = read.value(data, "sweep", bool, where) if "sweep" in data else False
    except BadInput as exc:
        if str(exc).startswith(f"{read.path}:"):
            raise
        raise read.fail(f"{where}: {exc}") from exc
    return GenerateSection(task, options, setting=setting, sweep=sweep)


def _option_kind(hint: Any) -> type:
    """The type a manifest gives an option of type ``hint`` in (``int | None``: int; ``tuple[...]``: tuple)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    origin = typing.get_origin(hint) or hint
    return Mapping if isinstance(origin, type) and issubclass(origin, Mapping) else origin


def _list(read: _Reader, value: Any, where: str, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise read.fail(f"{where} {key} must be a list, not {_kind(value)}")
    return value


def _number(read: _Reader, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise read.fail(f"{where} must hold numbers, not {_kind(value)}")
    return float(value)


#: Largest manifest read (manifests are a few kilobytes).
MAX_MANIFEST_BYTES = 1 << 20
#: Deepest nesting of arrays, inline tables and dotted keys read (manifests use three or four).
MAX_NESTING = 32
#: What opens or closes a level in TOML text, and what to skip over: strings (basic, literal, multi-line)
#: and comments, whose brackets count for nothing.
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]',
    re.DOTALL,
)


def _nesting(text: str) -> int:
    """How deeply ``text`` nests brackets and braces outside strings and comments (without parsing it)."""
    depth = deepest = 0
    for match in _TOML_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def load_manifest(path: str | Path) -> Manifest:
    """Read and check a manifest (every section, every type) without making any request.

    Raises:
        InputFileNotFound: no such file.
        BadInput: not TOML, a newer version, an unknown key (named with its section), a bad source or value.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFound(f"no such manifest: {path}")
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise BadInput(f"{path} is larger than {MAX_MANIFEST_BYTES:,} bytes: not a manifest")
        text = path.read_text(encoding="utf-8")
        if _nesting(text) > MAX_NESTING:
            raise BadInput(f"{path} nests arrays or tables more than {MAX_NESTING} levels deep: not a manifest")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} is not valid TOML: {' '.join(str(exc).split())[:200]}") from None
    except RecursionError:
        raise BadInput(f"{path} nests arrays or tables too deeply: not a manifest") from None
    except OSError as exc:
        raise BadInput(f"cannot read manifest {path}: {exc.strerror or exc}") from exc
    if nesting_depth(data, cap=MAX_NESTING) > MAX_NESTING:  # dotted keys (a.b.c...) nest without brackets
        raise BadInput(f"{path} nests keys more than {MAX_NESTING} levels deep: not a manifest")
    read = _Reader(path)
    version = read.value(data, "version", int, "the top level") if "version" in data else MANIFEST_VERSION
    if version > MANIFEST_VERSION or version < 1:
        raise read.fail(f"manifest version {version}; this procbench reads versions 1 to {MANIFEST_VERSION}")
    scrape_data: dict[str, Any] | None
    if version == 1 or _SCRAPE_KEYS & (set(data) - set(SECTIONS)):
        # version 1: the scrape keys at the top level, with [filters] and [http]
        scrape_data = {k: data.pop(k) for k in list(data) if k in _SCRAPE_KEYS}
        read.known(data, _TOP, "the top level")
        if "scrape" in data:
            raise read.fail("scrape keys both at the top level (version 1) and in [scrape]")
        scrape = _scrape(read, scrape_data, "the top level") if scrape_data else None
    else:
        read.known(data, _TOP, "the top level")
        scrape = _scrape(read, read.table(data["scrape"], "[scrape]"), "[scrape]") if "scrape" in data else None
    return Manifest(
        name=read.value(data, "name", str, "the top level") if "name" in data else path.stem,
        path=str(path),
        version=version,
        description=read.value(data, "description", str, "the top level") if "description" in data else "",
        scrape=scrape,
        clean=_clean(read, read.table(data["clean"], "[clean]")) if "clean" in data else None,
        generate=_generate(read, read.table(data["generate"], "[generate]")) if "generate" in data else {},
    )
