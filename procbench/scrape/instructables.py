"""Instructables: pure parsers (project JSON API, project HTML, search API) and the crawling source.

Markup and APIs follow ``shared/notes/site-facts.md`` §B. Route (facts §B2-B4): list projects through
the site's Typesense search proxy (the key is read from the homepage), sorted by views for "popular";
read each project from ``/json-api/showInstructableModel`` and fall back to the server HTML (generations
B and A, then C's hashed classes) when the API is missing or unusable. ``steps[0]`` is the Introduction
and ``supplies`` is a separate field: both are kept, marked ``kind="intro"`` / ``"supplies"``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode, urljoin, urlsplit

from lxml import etree

from procbench.errors import Blocked, Disallowed, FetchError, ParseError
from procbench.procedure import Procedure, Step, procedure_id
from procbench.scrape.html import cls, drop, fetched_at, jsonld_objects, jsonld_types, parse_html, squash, text_of

if TYPE_CHECKING:
    from procbench.scrape.http import HttpClient

__all__ = [
    "BASE_URL",
    "DOMAINS",
    "InstructablesSource",
    "NotAProject",
    "parse_model_json",
    "parse_project_html",
    "parse_search_json",
    "project_slug",
]

log = logging.getLogger(__name__)

SOURCE = "instructables"
BASE_URL = "https://www.instructables.com"
DOMAINS = ("instructables.com",)
_STEP_PREFIX = re.compile(r"^\s*(?:Step\s+\d+\s*[:.\-]\s*|Introduction\s*:\s*|Intro\s*:\s*)", re.IGNORECASE)
_SUPPLIES = re.compile(
    r"^\s*(?:supplies|materials|tools|parts|ingredients|what you(?:'|’)?ll need|what you need|"
    r"things you(?:'|’)?ll need|bill of materials|(?:materials|tools|supplies),? (?:and|&) "
    r"(?:tools|materials|supplies))\b",
    re.IGNORECASE,
)
_SKIP_SECTIONS = re.compile(
    r"^\s*(?:\d+\s+People Made This Project!?|Recommendations|Be the First to Share|"
    r"Did you make this project)",
    re.IGNORECASE,
)
_BODY_NOISE = (
    f".//*[{cls('step-toolbar')}] | .//*[{cls('author-promo')}] | .//script | .//style | .//iframe"
    f" | .//*[{cls('mediaset')}] | .//*[{cls('no-js-photoset')}]"
)
_SEARCH_FIELDS = (
    "title,urlString,coverImageUrl,screenName,favorites,views,primaryClassification,featureFlag,"
    "prizeLevel,IMadeItCount"
)
SORTS = {"popular": "views:desc", "recent": "publishDate:desc", "favorites": "favorites:desc"}
#: At most this many search pages per channel (a listing that never ends is cut, never looped).
MAX_SEARCH_PAGES = 2000


class NotAProject(ParseError):
    """The URL is a collection ("guide") or a project pending review, not a published project."""

    outcome = "not_a_project"


def project_slug(url: str) -> str:
    """The ``urlString`` of a project URL (``/<Slug>/`` now, ``/id/<Slug>/`` before 2020)."""
    parts = [p for p in unquote(urlsplit(url).path).split("/") if p]
    if len(parts) >= 2 and parts[0] == "id":
        return parts[1]
    if not parts:
        raise ParseError(f"{url} names no project")
    return parts[0]


def _project_url(slug: str, base: str = BASE_URL) -> str:
    return f"{base}/{slug}/"


def _image_url(url: str, base: str) -> str | None:
    """An image URL without its query (the original file; facts §B5), or None for placeholders."""
    full = urljoin(base, url.strip())
    parts = urlsplit(full)
    if parts.scheme not in ("http", "https") or parts.path.endswith("/pixel.png") or "/assets/img/" in parts.path:
        return None
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _add(images: list[str], url: str | None) -> None:
    if url and url not in images:
        images.append(url)


def _html_text(fragment: str | None) -> str:
    if not fragment or not fragment.strip():
        return ""
    root = parse_html(f"<html><body><div>{fragment}</div></body></html>")
    drop(root, ".//script | .//style | .//iframe")
    return text_of(root)


def _step_kind(index: int, title: str) -> str:
    if index == 0:
        return "intro"
    return "supplies" if _SUPPLIES.match(title) else "step"


# -- JSON API ---------------------------------------------------------------------------------------------
def parse_model_json(data: Any, *, base: str = BASE_URL) -> Procedure:
    """A :class:`Procedure` from a ``showInstructableModel`` answer (facts §B3).

    Raises:
        NotAProject: a collection (``instructables[]`` and no ``steps``).
        ParseError: anything else that is not a project.
    """
    if not isinstance(data, dict):
        raise ParseError("showInstructableModel answer is not a JSON object")
    if not isinstance(data.get("steps"), list):
        if isinstance(data.get("instructables"), list):
            raise NotAProject(f"{data.get('title')!r} is a collection, not a project")
        raise ParseError("showInstructableModel answer has no steps")
    slug = data.get("urlString") or (project_slug(str(data["showUrl"])) if data.get("showUrl") else None)
    if not slug:
        raise ParseError("showInstructableModel answer has neither urlString nor showUrl")
    title = squash(str(data.get("title") or ""))
    steps: list[Step] = []
    for index, raw in enumerate(data["steps"]):
        if not isinstance(raw, dict):
            continue
        name = _STEP_PREFIX.sub("", squash(str(raw.get("title") or ""))).strip()
        images = _json_images(raw, base)
        for ref in _inline_images(raw.get("body"), base):
            _add(images, ref)
        steps.append(
            Step(text=_html_text(raw.get("body")), title=name or None, images=images, kind=_step_kind(index, name))
        )
    supplies = data.get("supplies")
    if isinstance(supplies, str) and _html_text(supplies):
        files = {"files": data.get("suppliesFiles") or []}
        steps.insert(
            1 if steps else 0,
            Step(text=_html_text(supplies), title="Supplies", images=_json_images(files, base), kind="supplies"),
        )
    if not steps:
        raise ParseError(f"{slug}: project has no steps")
    author = data.get("author")
    return Procedure(
        id=procedure_id(SOURCE, slug=slug),
        source=SOURCE,
        title=title or slug.replace("-", " "),
        steps=steps,
        url=_project_url(slug, base),
        category=_json_category(data),
        author=author.get("screenName") if isinstance(author, dict) else None,
        license=_json_license(data.get("license")),
        language=data.get("language") if isinstance(data.get("language"), str) else None,
    )


def _json_images(step: dict[str, Any], base: str) -> list[str]:
    images: list[str] = []
    for file in step.get("files") or []:
        if not isinstance(file, dict) or not file.get("image") or file.get("embedType"):
            continue
        for key in ("downloadUrl", "originalUrl", "largeUrl", "mediumUrl", "smallUrl"):
            if isinstance(file.get(key), str) and file[key]:
                _add(images, _image_url(file[key], base))
                break
    return images


def _inline_images(fragment: Any, base: str) -> list[str]:
    """Images the step body shows inline (on the site's own hosts only)."""
    if not isinstance(fragment, str) or "<img" not in fragment:
        return []
    root = parse_html(f"<html><body><div>{fragment}</div></body></html>")
    found: list[str] = []
    for img in root.xpath("//img"):
        src = img.get("data-src") or img.get("src") or ""
        if (urlsplit(urljoin(base, src)).hostname or "").endswith(DOMAINS):
            _add(found, _image_url(src, base))
    return found


def _json_category(data: dict[str, Any]) -> list[str]:
    classes = data.get("classifications")
    if isinstance(classes, list) and classes and isinstance(classes[0], dict):
        first = classes[0]
        path = [str(first.get("title") or first.get("name") or "").strip()]
        channels = first.get("channels")
        if isinstance(channels, list) and channels and isinstance(channels[0], dict):
            path.append(str(channels[0].get("title") or channels[0].get("name") or "").strip())
        return [p for p in path if p]
    path = [str(data.get(k) or "").strip() for k in ("displayCategory", "displayChannel")]
    return [p for p in path if p]


def _json_license(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("url") or value.get("fullName") or None
    return value if isinstance(value, str) and value else None


def parse_search_json(data: Any, *, base: str = BASE_URL) -> tuple[list[str], int]:
    """A Typesense search answer: (project URLs in rank order, ``found``)."""
    if not isinstance(data, dict) or not isinstance(data.get("hits"), list):
        raise ParseError("search answer has no hits list")
    urls = []
    for hit in data["hits"]:
        doc = hit.get("document") if isinstance(hit, dict) else None
        if isinstance(doc, dict) and isinstance(doc.get("urlString"), str) and doc["urlString"].strip("/"):
            urls.append(_project_url(doc["urlString"].strip("/"), base))
    return urls, int(data.get("found") or 0)


# -- HTML -------------------------------------------------------------------------------------------------
def parse_project_html(html: str | bytes, url: str) -> Procedure:
    """A :class:`Procedure` from a project page's server HTML (generations B, A and C of facts §B4).

    Steps are the ``section.step`` elements in order (``#intro`` kept as ``intro``, ``#stepsupplies`` or a
    "Supplies"-like first step as ``supplies``); images come from the ``noscript`` photo sets with their
    broken queries stripped; bodies are ``div.step-body`` without toolbars and promos.

    Raises:
        NotAProject: a collection or a project pending review.
        ParseError: no steps.
    """
    root = parse_html(html)
    page_title = squash(root.xpath("string(//title)"))
    if "Pending Review" in page_title:
        raise NotAProject(f"{url}: project pending review")
    if root.xpath("//ul[@id='thumbnails-list']"):
        raise NotAProject(f"{url}: a collection, not a project")
    base = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
    sections = root.xpath(f"//section[{cls('step')}]") or root.xpath("//section[contains(@class, '_step_')]")
    steps: list[Step] = []
    for section in sections:
        step = _html_step(section, base, first=not steps)
        if step is not None:
            steps.append(step)
    if not steps:
        raise ParseError(f"{url}: no step sections found")
    ld = list(jsonld_objects(root))
    slug = project_slug(url)
    license_url = root.xpath(f"string(//button[{cls('license-btn')}]/@data-url)") or None
    return Procedure(
        id=procedure_id(SOURCE, slug=slug),
        source=SOURCE,
        title=_html_title(root, page_title, slug),
        steps=steps,
        url=_project_url(slug, base),
        category=_html_category(root, ld),
        author=_html_author(root, ld),
        license=license_url,
        language=(root.get("lang") or "").split("-")[0].lower() or None,
    )


def _html_step(section: etree._Element, base: str, *, first: bool) -> Step | None:
    heading = section.xpath(".//h2")
    raw_title = squash(text_of(heading[0])) if heading else ""
    if _SKIP_SECTIONS.match(raw_title):
        return None
    section_id = section.get("id") or ""
    title = _STEP_PREFIX.sub("", raw_title).strip()
    if section_id == "intro":
        kind = "intro"
    elif section_id == "stepsupplies" or _SUPPLIES.match(title):
        kind = "supplies"
    elif first and not section_id.startswith("step") and not re.match(r"^\s*step\s*\d", raw_title, re.IGNORECASE):
        kind = "intro"  # generation C: the first section, without a "Step N" heading
    else:
        kind = "step"
    images = _html_images(section, base)
    bodies = section.xpath(f".//div[{cls('step-body')}]") or section.xpath(".//*[contains(@class, '_stepBody_')]")
    text = ""
    if bodies:
        body = bodies[0]
        drop(body, _BODY_NOISE)
        text = text_of(body)
    if not text and not images and not title:
        return None
    return Step(text=text, title=title or None, images=images, kind=kind)


def _html_images(section: etree._Element, base: str) -> list[str]:
    images: list[str] = []
    promo = f"ancestor::*[{cls('author-promo')}]"
    for noscript in section.xpath(f".//noscript[not({promo})]"):
        srcs = noscript.xpath(".//img/@src") or re.findall(
            r"""<img[^>]*?\ssrc\s*=\s*["']([^"']+)["']""", noscript.text or ""
        )
        for src in srcs:
            _add(images, _image_url(src, base))
    for img in section.xpath(f".//*[contains(@class, '_mobilePhotoset_') or {cls('mediaset')}]//img"):
        _add(images, _image_url(img.get("data-src") or img.get("src") or "", base))
    for img in section.xpath(f".//div[{cls('step-body')}]//img[not(ancestor::noscript)]"):
        src = img.get("data-src") or img.get("src") or ""
        host = urlsplit(urljoin(base, src)).hostname or ""
        if host.endswith(DOMAINS):
            _add(images, _image_url(src, base))
    return images


def _html_title(root: etree._Element, page_title: str, slug: str) -> str:
    for xpath in (f"//h1[{cls('header-title')}]", "//h1"):
        nodes = root.xpath(xpath)
        if nodes and squash(text_of(nodes[0])):
            return squash(text_of(nodes[0]))
    og = root.xpath("string(//meta[@property='og:title']/@content)")
    if og:
        return squash(og)
    cleaned = re.sub(r"\s*:\s*\d+\s+Steps.*$|\s*-\s*Instructables\s*$", "", page_title)
    return cleaned or slug.replace("-", " ")


def _html_author(root: etree._Element, ld: list[dict[str, Any]]) -> str | None:
    for xpath in (
        f"//*[{cls('header-byline')}]//a[@rel='author']",
        "//header//a[@rel='author']",
        "//a[@rel='author']",
    ):
        for link in root.xpath(xpath):
            name = squash(text_of(link))
            if name:
                return name
    for obj in ld:
        for key in ("contributor", "author"):
            person = obj.get(key)
            person = person[0] if isinstance(person, list) and person else person
            if isinstance(person, dict) and "Person" in jsonld_types(person) and person.get("name"):
                return str(person["name"]).strip()
    return None


def _html_category(root: etree._Element, ld: list[dict[str, Any]]) -> list[str]:
    byline_names: list[str] = []
    byline = root.xpath(f"//*[{cls('header-byline')}]")
    if byline:
        links = byline[0].xpath(f".//a[{cls('category')} or {cls('channel')}]")
        byline_names = [n for n in (squash(text_of(a)) for a in links) if n]
        if len(byline_names) >= 2:
            return byline_names
    crumbs = next((o for o in ld if "BreadcrumbList" in jsonld_types(o)), None)
    if crumbs is not None:
        items = sorted(
            (i for i in crumbs.get("itemListElement") or [] if isinstance(i, dict)),
            key=lambda i: int(i.get("position") or 0),
        )
        names = []
        for item in items[:-1]:  # the last crumb is the project itself
            target = item.get("item")
            name = item.get("name") or (target.get("name") if isinstance(target, dict) else None)
            if isinstance(name, str) and name.strip():
                name = squash(name)
                names.append(name.replace("-", " ").title() if name.islower() else name)
        if names:
            return names
    if byline_names:
        return byline_names
    article = root.xpath("//article[contains(@class, 'category-content-')]/@class")
    if article:
        match = re.search(r"category-content-([\w-]+)", article[0])
        if match:
            return [match.group(1).title()]
    return []


class InstructablesSource:
    """Instructables over HTTP: search-API listings (landing-page fallback), JSON API projects."""

    name = SOURCE
    domains: tuple[str, ...] = DOMAINS
    soft_block: tuple[bytes, ...] = ()
    sorts: tuple[str, ...] = tuple(SORTS)

    def __init__(self, base: str = BASE_URL, *, per_page: int = 50) -> None:
        self.base = base.rstrip("/")
        self.per_page = per_page
        self._key: tuple[str, str] | None = None

    def normalise_url(self, url: str) -> str:
        """Canonical project URL for a user-given URL or slug."""
        if "://" not in url:
            return _project_url(url.strip("/"), self.base)
        parts = urlsplit(url)
        return _project_url(project_slug(url), f"{parts.scheme}://{parts.netloc}")

    # -- listing -----------------------------------------------------------------------------------------
    def listing(self, client: HttpClient, category: str, *, sort: str = "popular") -> Iterator[str]:
        """Project URLs of ``category`` (``workshop`` or ``workshop/furniture``), best first by ``sort``."""
        if sort not in SORTS:
            raise ParseError(f"unknown sort {sort!r} for instructables; choose one of: {', '.join(SORTS)}")
        cat, _, channel = category.strip("/").lower().partition("/")
        try:
            yield from self._search(client, cat, channel, sort)
        except (Disallowed, ParseError, ValueError) as exc:
            log.info("search API unusable for %s (%s); reading the category landing page", category, exc)
            yield from self._landing(client, cat, channel)
        except FetchError as exc:
            if not exc.permanent:
                raise
            log.info("search API unusable for %s (%s); reading the category landing page", category, exc)
            yield from self._landing(client, cat, channel)

    def _search_key(self, client: HttpClient, *, fresh: bool = False) -> tuple[str, str]:
        if self._key is None or fresh:
            page = client.get(f"{self.base}/", kind="page", use_cache=not fresh).text()
            key = re.search(r'"typesenseApiKey"\s*:\s*"([^"]+)"', page)
            if key is None:
                raise ParseError("no typesenseApiKey in the homepage")
            proxy = re.search(r'"typesenseProxy"\s*:\s*"([^"]+)"', page)
            path = proxy.group(1) if proxy else "/api_proxy/search"
            self._key = (key.group(1), urlsplit(urljoin(self.base + "/", path)).path.rstrip("/"))
        return self._key

    def _search(self, client: HttpClient, cat: str, channel: str, sort: str) -> Iterator[str]:
        names = _channel_names(channel) if channel else [""]
        seen: set[str] = set()
        for name in names:
            found_any = False
            page = 1
            while page <= MAX_SEARCH_PAGES:
                filters = [f"category:={cat.title()}"] + ([f"channel:={name}"] if name else [])
                params = {
                    "q": "*",
                    "query_by": "title,stepBody,screenName",
                    "filter_by": " && ".join(filters),
                    "sort_by": SORTS[sort],
                    "page": str(page),
                    "per_page": str(self.per_page),
                    "include_fields": _SEARCH_FIELDS,
                }
                urls, found = self._search_page(client, params)
                new = [u for u in urls if u not in seen]
                if not new:  # an empty page, or one repeating earlier ones: the listing ends (never loops)
                    break
                seen.update(new)
                found_any = True
                yield from new
                if page * self.per_page >= found:
                    break
                page += 1
            if found_any:
                return

    def _search_page(self, client: HttpClient, params: dict[str, str]) -> tuple[list[str], int]:
        key, path = self._search_key(client)
        url = f"{self.base}{path}/collections/projects/documents/search?{urlencode(params)}"

        def parse(data: Any) -> tuple[list[str], int]:
            return parse_search_json(data, base=self.base)

        try:
            return client.get_json(url, parse, headers={"x-typesense-api-key": key})
        except Blocked:  # the key rotated: read it again once (facts §B8)
            key, path = self._search_key(client, fresh=True)
            url = f"{self.base}{path}/collections/projects/documents/search?{urlencode(params)}"
            return client.get_json(url, parse, headers={"x-typesense-api-key": key})

    def _landing(self, client: HttpClient, cat: str, channel: str) -> Iterator[str]:
        url = f"{self.base}/{cat}/" + (f"{channel}/" if channel else "")
        page = client.get(url, kind="page")
        root = parse_html(page.body)
        seen: list[str] = []
        for href in root.xpath(
            f"//div[{cls('category-landing-projects-list')}]//a[{cls('ible-title')}]/@href"
            f" | //a[{cls('ible-title')}]/@href"
        ):
            project = self.normalise_url(urljoin(page.final_url, href))
            if project not in seen:
                seen.append(project)
                yield project

    # -- projects ----------------------------------------------------------------------------------------
    def fetch(self, client: HttpClient, url: str) -> Procedure:
        """Fetch one project: the JSON API first, the page HTML when the API fails permanently.

        When the API answer carries no license, the page's license button is read (facts §B6).
        """
        slug = project_slug(url)
        page_url = _project_url(slug, self.base)
        api_url = f"{self.base}/json-api/showInstructableModel?" + urlencode({"urlString": slug})
        try:
            answer = client.get(api_url, kind="api")
            procedure = client.parse_json(answer, lambda data: parse_model_json(data, base=self.base))
            procedure.fetched_at = fetched_at(answer.fetched_at)
        except NotAProject:
            raise
        except (ParseError, ValueError) as exc:
            log.info("JSON API unusable for %s (%s); parsing the page", slug, exc)
            return self._fetch_html(client, page_url)
        except FetchError as exc:
            if not exc.permanent:
                raise
            log.info("JSON API unusable for %s (%s); parsing the page", slug, exc)
            return self._fetch_html(client, page_url)
        if procedure.license is None:
            try:
                page = client.get(page_url, kind="page")
                root = parse_html(page.body)
                procedure.license = root.xpath(f"string(//button[{cls('license-btn')}]/@data-url)") or None
            except FetchError as exc:
                if not exc.permanent:
                    raise
                log.info("no license for %s: %s", slug, exc)
        return procedure

    def _fetch_html(self, client: HttpClient, page_url: str) -> Procedure:
        page = client.get(page_url, kind="page")
        procedure = parse_project_html(page.body, page.final_url)
        procedure.fetched_at = fetched_at(page.fetched_at)
        return procedure


def _channel_names(slug: str) -> list[str]:
    """Typesense channel values to try for a channel slug (title-cased; "and" also as "&")."""
    words = slug.replace("-", " ").strip()
    names = [words.title()]
    if " and " in f" {words} ":
        names.append(re.sub(r"\bAnd\b", "&", names[0]))
    return names
