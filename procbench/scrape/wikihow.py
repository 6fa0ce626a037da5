"""wikiHow: pure parsers (article HTML, JSON-LD, MediaWiki API answers) and the crawling source.

Markup and APIs follow ``shared/notes/site-facts.md`` §A (wikiHow's own 2020 rendering code, confirmed by
2020-2024 scrapers). Route (facts §A10): enumerate categories through the MediaWiki API
(``list=categorymembers``), falling back to ``/Category:<Name>?pg=N`` pages; fetch each article page (an
allowed path) and read its ``div.section.steps`` blocks, cross-checked against and completed from the
page's JSON-LD ``HowTo``, which is also the fallback when the step markup is missing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlencode, urljoin, urlsplit

from lxml import etree

from procbench.errors import BadInput, FetchError, ParseError
from procbench.procedure import Procedure, Step, procedure_id
from procbench.scrape.html import (
    cls,
    drop,
    fetched_at,
    first_sentence,
    jsonld_objects,
    jsonld_types,
    parse_html,
    squash,
    text_of,
)

if TYPE_CHECKING:
    from procbench.scrape.http import HttpClient

__all__ = [
    "BASE_URL",
    "DOMAINS",
    "EDITIONS",
    "SOFT_BLOCK_MARKERS",
    "WikiHowSource",
    "article_url",
    "edition_base",
    "edition_language",
    "parse_article_html",
    "parse_category_page",
    "parse_categorymembers",
    "parse_howto_jsonld",
]

log = logging.getLogger(__name__)

SOURCE = "wikihow"
BASE_URL = "https://www.wikihow.com"
#: wikiHow's language editions (ISO 639-1 code -> site; facts §A1): most are ``<code>.wikihow.com``.
EDITIONS = {
    "en": BASE_URL,
    **{code: f"https://{code}.wikihow.com" for code in ("ar", "de", "es", "fr", "hi", "id", "ko", "nl", "pt")},
    **{code: f"https://{code}.wikihow.com" for code in ("ru", "th", "zh")},
    "cs": "https://www.wikihow.cz",
    "fa": "https://www.wikihowfarsi.com",
    "it": "https://www.wikihow.it",
    "ja": "https://www.wikihow.jp",
    "tr": "https://www.wikihow.com.tr",
    "vi": "https://www.wikihow.vn",
}
DOMAINS: tuple[str, ...] = (
    "wikihow.com",
    "wikihow.cz",
    "wikihowfarsi.com",
    "wikihow.it",
    "wikihow.jp",
    "wikihow.com.tr",
    "wikihow.vn",
)
#: The soft-block page wikiHow serves to bots with status 200 (facts §A9): treated like a 429.
SOFT_BLOCK_MARKERS = (b"If you are a web crawler or bot", b"0100100001100101011011000110110001101111")
# URL prefixes that are not articles (facts §A1).
_NOT_ARTICLE = (
    "Special:",
    "Template:",
    "User:",
    "User_talk:",
    "User-talk:",
    "wikiHow:",
    "wikiHow_talk:",
    "wikiHow-talk:",
    "Author/",
    "Course/",
    "Questions/",
    "Relationships/",
    "Sample/",
    "Watch/",
    "Games/",
    "index.php",
    "wikiHowTo",
    "Category:",
    "File:",
    "Image:",
    "api.php",
)
_METHOD_PREFIX = re.compile(
    r"^\s*(?:(?:Method|Part|Option)\s+(?:\d+|[A-Za-z]+)(?:\s+of\s+(?:\d+|[A-Za-z]+))?\s*[:.]\s*)", re.IGNORECASE
)
_PART = re.compile(r"^\s*part\b", re.IGNORECASE)
_NOISE = ("script", "style", "noscript", "sup", "video", "iframe")
_NOISE_CLASSES = (
    "reference",
    "mwimg",
    "step_num",
    "stepanchor",
    "clearall",
    "video-player",
    "embedvideocontainer",
    "wh_ad_inner",
    "wh_ad_active",
    "wh_ad_spacing",
    "image_details",
    "qz_container",
    "m-video-controls",
    "content-spacer",
)
_NOISE_XPATH = " | ".join(
    [f".//{tag}" for tag in _NOISE] + [f".//*[{cls(c)}]" for c in _NOISE_CLASSES] + [".//*[@data-service='adsense']"]
)


def article_url(title: str, base: str = BASE_URL) -> str:
    """The canonical URL of an article title (spaces become ``-``; facts §A1)."""
    return f"{base}/{quote(title.strip().replace(' ', '-'), safe='/:-')}"


def edition_base(language: str | None) -> str:
    """The site of wikiHow's ``language`` edition (None, ``en``: the English one).

    Raises:
        BadInput: wikiHow has no edition in that language.
    """
    if language is None:
        return BASE_URL
    try:
        return EDITIONS[language]
    except KeyError:
        raise BadInput(
            f"wikiHow has no {language!r} edition; editions: {', '.join(sorted(EDITIONS))} (or --language any)"
        ) from None


def edition_language(url: str) -> str | None:
    """The language of the wikiHow edition ``url`` is on (``ja`` for www.wikihow.jp and ja.wikihow.com)."""
    host = (urlsplit(url).hostname or "").lower()
    for code, base in EDITIONS.items():
        if host == urlsplit(base).hostname:
            return code
    first = host.split(".", 1)[0]
    return first if host.endswith(".wikihow.com") and first in EDITIONS else None


def is_article_path(path: str) -> bool:
    """Whether a site path (without the leading ``/``) names an article."""
    path = unquote(path)
    return bool(path) and not path.startswith(_NOT_ARTICLE) and "?" not in path


def _slug(url: str) -> str:
    return unquote(urlsplit(url).path.lstrip("/"))


# -- article page -----------------------------------------------------------------------------------------
def parse_article_html(html: str | bytes, url: str, *, source: str = SOURCE) -> Procedure:
    """A :class:`Procedure` from a rendered wikiHow article page; ``url`` is its canonical URL.

    Steps come from the ``div.section.steps`` blocks (``.sample`` skipped) in page order, one per direct
    ``li`` of ``ol.steps_list_2``; the headline is the first top-level ``b.whb`` (else the first sentence,
    by wikiHow's own bolding rule); the body is the rest of ``div.step`` without citations, scripts,
    images, videos and ads. Tips, warnings, Q&A and every other section are never read. Several methods
    or parts keep their order; each step records its part name and ``kind`` ``part`` or ``method``.

    Raises:
        ParseError: a block page, an article in review, or a page with no steps at all.
    """
    root = parse_html(html)
    raw = html if isinstance(html, bytes) else html.encode("utf-8", errors="replace")
    if any(marker in raw for marker in SOFT_BLOCK_MARKERS):
        raise ParseError(f"{url}: wikiHow served its bot block page, not the article")
    if b'"wgIsRestricted":true' in raw:
        raise ParseError(f"{url}: article is in review (wgIsRestricted)")
    ld = list(jsonld_objects(root))
    howto = next((o for o in ld if "HowTo" in jsonld_types(o)), None)
    steps = _html_steps(root, url)
    if howto is not None:
        ld_steps = parse_howto_jsonld(howto, url)
        if not steps:
            steps = ld_steps
        else:
            _fill_images(steps, ld_steps)
    if not steps:
        raise ParseError(f"{url}: no steps found (neither div.section.steps nor a JSON-LD HowTo)")
    edition = edition_language(url)
    lang = (root.get("lang") or "").split("-")[0].lower() or edition
    slug = _slug(url) if edition in (None, "en") else f"{edition}/{_slug(url)}"  # editions share slugs
    return Procedure(
        id=procedure_id(source, slug=slug),
        source=source,
        title=_title(root, howto),
        steps=steps,
        url=url,
        category=_categories(root, ld),
        author=_author(root, ld),
        license=_license(root, url),
        language=lang,
    )


def _title(root: etree._Element, howto: dict[str, Any] | None) -> str:
    for xpath in (f"//div[{cls('pre-content')}]//h1", "//h1[@id='section_0']", "//h1"):
        nodes = root.xpath(xpath)
        if nodes:
            title = squash(text_of(nodes[0]))
            if title:
                return title
    if howto and isinstance(howto.get("name"), str):
        name = howto["name"].strip()
        return name if name.lower().startswith("how to") else f"How to {name}"
    page_title = root.xpath("string(//title)")
    return re.sub(r"\s*[-|]\s*wikiHow.*$", "", squash(page_title)) or "untitled"


def _html_steps(root: etree._Element, url: str) -> list[Step]:
    sections = root.xpath(f"//div[{cls('section')} and {cls('steps')} and not({cls('sample')})]")
    blocks: list[tuple[str | None, str, list[etree._Element]]] = []
    for section in sections:
        if section.xpath(f"ancestor::div[{cls('section')} and {cls('steps')}]"):
            continue  # a nested wrapper; its lists belong to the outer section
        items = section.xpath(f".//div[{cls('section_text')}]/ol/li")
        if not items:
            continue
        headline = section.xpath(f".//h3//span[{cls('mw-headline')}]")
        altblock = section.xpath(f".//h3//div[{cls('altblock')}]")
        name = squash(text_of(headline[0])) if headline else None
        label = squash(text_of(altblock[0])) if altblock else ""
        kind = "part" if label.lower().startswith("part") or (name and _PART.match(name)) else "method"
        if name:
            name = _METHOD_PREFIX.sub("", name).strip() or name
        blocks.append((name, kind, items))
    multi = len(blocks) > 1
    steps = []
    for name, kind, items in blocks:
        for li in items:
            step = _li_step(li, url)
            if step is None:
                continue
            step.part, step.kind = (name, kind) if multi else (None, "step")
            steps.append(step)
    return steps


def _li_step(li: etree._Element, url: str) -> Step | None:
    images = _li_images(li, url)
    body = li.xpath(f"./div[{cls('step')}]") or li.xpath(f".//div[{cls('step')}]")
    node = body[0] if body else li
    drop(node, _NOISE_XPATH)
    bold = node.xpath(f".//b[{cls('whb')} and not(ancestor::b[{cls('whb')}])]")
    title: str | None = None
    if bold:
        title = squash(text_of(bold[0])) or None
        bold[0].drop_tree()
        text = text_of(node)
    else:
        title, text = first_sentence(text_of(node))
        title = squash(title) if title else None
    if title is None and not text:
        return None
    return Step(text=text, title=title, images=images)


def _li_images(li: etree._Element, url: str) -> list[str]:
    found: list[str] = []
    for box in li.xpath(f".//div[{cls('mwimg')}]"):
        ref = _img_ref(box, url)
        if ref and ref not in found:
            found.append(ref)
    if not found:  # a step whose picture is a video: its poster shows the step
        for video in li.xpath(".//video"):
            poster = video.get("poster") or video.get("data-poster")
            if poster:
                found.append(urljoin(url, poster))
                break
    return found


def _img_ref(box: etree._Element, url: str) -> str | None:
    for img in box.xpath(".//img[not(ancestor::noscript)]"):
        src = img.get("data-src") or (img.get("src") if not _placeholder(img.get("src")) else None)
        if src:
            return urljoin(url, src)
    for noscript in box.xpath(".//noscript"):
        inner = noscript.xpath(".//img/@src")
        if inner:
            return urljoin(url, inner[0])
        match = re.search(r"""src\s*=\s*["']([^"']+)["']""", noscript.text or "")
        if match:
            return urljoin(url, match.group(1))
    return None


def _placeholder(src: str | None) -> bool:
    return not src or src.startswith("data:") or "pixel" in src.rsplit("/", 1)[-1]


def _fill_images(steps: list[Step], ld_steps: list[Step]) -> None:
    """Give image-less HTML steps the JSON-LD step image, only when both list the same steps in order."""
    if len(steps) != len(ld_steps):
        log.debug("HTML has %d steps, JSON-LD HowTo %d: not merging images", len(steps), len(ld_steps))
        return
    for step, ld in zip(steps, ld_steps, strict=True):
        if not step.images and ld.images:
            step.images = list(ld.images)


def parse_howto_jsonld(howto: dict[str, Any], url: str) -> list[Step]:
    """Steps of a schema.org ``HowTo`` object (facts §A7): ``HowToStep``s, or ``HowToSection``s of them.

    The JSON-LD has no headline per step, so it is split off the text by wikiHow's bolding rule.
    """
    entries = howto.get("step") or []
    entries = entries if isinstance(entries, list) else [entries]
    sections = [e for e in entries if isinstance(e, dict) and "HowToSection" in jsonld_types(e)]
    steps: list[Step] = []
    if sections:
        names = [str(s.get("name") or "").strip() for s in sections]
        kind = "part" if any(_PART.match(n) for n in names) else "method"
        for section, name in zip(sections, names, strict=True):
            items = section.get("itemListElement") or []
            for item in items if isinstance(items, list) else [items]:
                step = _ld_step(item, url)
                if step is not None:
                    step.part = (_METHOD_PREFIX.sub("", name).strip() or name) if len(sections) > 1 else None
                    step.kind = kind if len(sections) > 1 else "step"
                    steps.append(step)
        return steps
    for item in entries:
        step = _ld_step(item, url)
        if step is not None:
            step.kind = "step"
            steps.append(step)
    return steps


def _ld_step(item: Any, url: str) -> Step | None:
    if not isinstance(item, dict):
        return None
    text = squash(str(item.get("text") or ""))
    if not text:
        return None
    title, body = first_sentence(text)
    image = item.get("image")
    if isinstance(image, dict):
        image = image.get("url")
    images = [urljoin(url, image)] if isinstance(image, str) and image else []
    return Step(text=body, title=title, images=images)


def _categories(root: etree._Element, ld: list[dict[str, Any]]) -> list[str]:
    crumbs = next((o for o in ld if "BreadcrumbList" in jsonld_types(o)), None)
    if crumbs is not None:
        items = [i for i in crumbs.get("itemListElement") or [] if isinstance(i, dict)]
        items.sort(key=lambda i: int(i.get("position") or 0))
        names = []
        for item in items:
            target = item.get("item")
            target_url = target.get("@id") if isinstance(target, dict) else target
            name = item.get("name") or (target.get("name") if isinstance(target, dict) else None)
            if isinstance(target_url, str) and "Category:" in unquote(target_url) and name:
                names.append(squash(str(name)))
        if names:
            return names
    for xpath in (
        "//ul[@id='breadcrumb']//a",
        f"//div[@id='footer_crumbs']//ul[{cls('breadcrumbs')}]//a",
        f"//ul[{cls('breadcrumbs')}]//a",
    ):
        links = [a for a in root.xpath(xpath) if "Category:" in unquote(a.get("href") or "")]
        if links:
            return [squash(text_of(a)) for a in links if squash(text_of(a))]
    return []


def _author(root: etree._Element, ld: list[dict[str, Any]]) -> str | None:
    for info in root.xpath("//*[@id='byline_info']") or root.xpath("//*[@id='coauthor_byline']"):
        links = info.xpath(".//a")
        if links and squash(text_of(links[0])):
            return squash(text_of(links[0]))
        match = re.search(
            r"Co-authored by\s+(.+?)(?:\s+(?:Last Updated|Updated|Reviewed)\b|$)", squash(text_of(info)), re.IGNORECASE
        )
        if match:
            return match.group(1).strip(" |\u00b7-\u2013,") or None
    for obj in ld:
        author = obj.get("author")
        author = author[0] if isinstance(author, list) and author else author
        if isinstance(author, dict) and isinstance(author.get("name"), str):
            return author["name"].strip()
    return None


def _license(root: etree._Element, url: str) -> str | None:
    for href in root.xpath("//link[@rel='license']/@href | //a[@rel='license']/@href"):
        return urljoin(url, href)
    for href in root.xpath("//a[contains(@href, 'creativecommons.org/licenses')]/@href"):
        return urljoin(url, href)
    for href in root.xpath("//a[contains(@href, 'Creative-Commons')]/@href"):
        return urljoin(url, href)
    return None


# -- listings ---------------------------------------------------------------------------------------------
def parse_categorymembers(data: dict[str, Any], base: str = BASE_URL) -> tuple[list[str], list[str], dict[str, str]]:
    """An ``action=query`` answer: (article URLs, sub-category names, ``continue`` parameters).

    Handles ``list=categorymembers`` (sub-categories, ``ns`` 14) and ``generator=categorymembers`` with
    ``prop=info&inprop=url`` (articles, ``ns`` 0), in ``formatversion`` 1 (dict) or 2 (list).

    Raises:
        ParseError: an API error answer (e.g. ``ratelimited``) or an unexpected shape.
    """
    if not isinstance(data, dict):
        raise ParseError("API answer is not a JSON object")
    if "error" in data:
        error = data["error"]
        code = error.get("code") if isinstance(error, dict) else error
        raise ParseError(f"MediaWiki API error: {code}")
    query = data.get("query") or {}
    pages = query.get("pages") or []
    if isinstance(pages, dict):
        pages = sorted(pages.values(), key=lambda p: str(p.get("title", "")))
    articles = []
    for page in pages:
        if int(page.get("ns", 0)) != 0 or "missing" in page:
            continue
        full = page.get("fullurl")
        url = full if isinstance(full, str) and _on_site(full) else article_url(str(page.get("title", "")), base)
        if is_article_path(urlsplit(url).path.lstrip("/")):
            articles.append(url)
    subcats = []
    for member in query.get("categorymembers") or []:
        title = str(member.get("title", ""))
        if int(member.get("ns", 14)) == 14 and ":" in title:
            subcats.append(title.split(":", 1)[1].replace(" ", "-"))
        elif int(member.get("ns", 0)) == 0 and title:
            articles.append(article_url(title, base))
    cont = data.get("continue") or {}
    return articles, subcats, {str(k): str(v) for k, v in cont.items()} if isinstance(cont, dict) else {}


#: At most this many API pages per category listing (5,000 members each: far beyond any wikiHow category).
MAX_LISTING_PAGES = 1000


def _more(cont: dict[str, str], asked: set[str], title: str) -> bool:
    """Whether to ask for the next page of a listing; a ``continue`` seen before (or too many pages) is an
    error, never a loop."""
    if not cont:
        return False
    key = urlencode(sorted(cont.items()))
    if key in asked:
        raise ParseError(f"the API listing of {title} repeats its continue token {key!r}")
    if len(asked) >= MAX_LISTING_PAGES:
        raise ParseError(f"the API listing of {title} is longer than {MAX_LISTING_PAGES} pages")
    asked.add(key)
    return True


def _on_site(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return any(host == d or host.endswith("." + d) for d in DOMAINS)


def parse_category_page(html: str | bytes, url: str) -> tuple[list[str], list[str], int]:
    """A ``/Category:<Name>`` page: (article URLs, sub-category names, number of ``?pg=`` pages)."""
    root = parse_html(html)
    articles: list[str] = []
    for href in root.xpath(
        f"//*[@id='cat_all']//div[{cls('responsive_thumb')}]/a/@href"
        f" | //div[{cls('cat_grid')}]//div[{cls('responsive_thumb')}]//a/@href"
    ):
        parts = urlsplit(urljoin(url, href))
        path = parts.path.lstrip("/")
        if is_article_path(path):
            clean = f"{parts.scheme}://{parts.netloc}/{path}"
            if clean not in articles:
                articles.append(clean)
    subcats = []
    for href in root.xpath("//*[@id='subcats']//a/@href"):
        path = unquote(urlsplit(urljoin(url, href)).path.lstrip("/"))
        if ":" in path:
            name = path.split(":", 1)[1]
            if name and name not in subcats:
                subcats.append(name)
    pages = len(root.xpath("//*[@id='large_pagination']//ul/li"))
    return articles, subcats, max(1, pages)


class WikiHowSource:
    """wikiHow over HTTP: category listings (API first, HTML fallback) and article pages."""

    name = SOURCE
    domains: tuple[str, ...] = DOMAINS
    soft_block: tuple[bytes, ...] = SOFT_BLOCK_MARKERS
    sorts: tuple[str, ...] = ("default",)

    def __init__(self, base: str = BASE_URL, *, name: str = SOURCE, domains: tuple[str, ...] = DOMAINS) -> None:
        self.base = base.rstrip("/")
        self.name = name
        self.domains = domains

    def normalise_url(self, url: str) -> str:
        """Canonical article URL for a user-given URL or title (fragment and query dropped)."""
        if "://" not in url:
            return article_url(url.lstrip("/"), self.base)
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}{parts.path}"

    def listing(self, client: HttpClient, category: str, *, sort: str = "default") -> Iterator[str]:
        """Article URLs of ``category`` and, depth first, its sub-categories (each visited once)."""
        visited: set[str] = set()
        seen: set[str] = set()
        stack = [category.replace(" ", "-").removeprefix("Category:")]
        while stack:
            name = stack.pop(0)
            if name.lower() in visited:
                continue
            visited.add(name.lower())
            try:
                articles, subcats = self._api_category(client, name)
            except (FetchError, ParseError, ValueError) as exc:
                log.info("API listing of Category:%s failed (%s); reading the category pages", name, exc)
                articles, subcats = [], []
                for url in self._html_category(client, name, subcats):
                    if url not in seen:
                        seen.add(url)
                        yield url
            for url in articles:
                if url not in seen:
                    seen.add(url)
                    yield url
            stack[0:0] = [s for s in subcats if s.lower() not in visited]

    def _api(self, client: HttpClient, params: dict[str, str]) -> tuple[list[str], list[str], dict[str, str]]:
        """One API listing page, checked: (article URLs, sub-categories, continue parameters)."""
        url = f"{self.base}/api.php?" + urlencode({**params, "format": "json", "formatversion": "2"})
        return client.get_json(url, lambda data: parse_categorymembers(data, self.base))

    def _api_category(self, client: HttpClient, name: str) -> tuple[list[str], list[str]]:
        title = f"Category:{name}"
        articles: list[str] = []
        cont: dict[str, str] = {}
        asked: set[str] = set()
        while True:
            found, _, cont = self._api(
                client,
                {
                    "action": "query",
                    "generator": "categorymembers",
                    "gcmtitle": title,
                    "gcmtype": "page",
                    "gcmlimit": "max",
                    "prop": "info",
                    "inprop": "url",
                    **cont,
                },
            )
            articles.extend(found)
            if not _more(cont, asked, title):
                break
        subcats: list[str] = []
        cont = {}
        while True:
            _, found_subcats, cont = self._api(
                client,
                {
                    "action": "query",
                    "list": "categorymembers",
                    "cmtitle": title,
                    "cmtype": "subcat",
                    "cmlimit": "max",
                    **cont,
                },
            )
            subcats.extend(found_subcats)
            if not _more(cont, asked, title):
                break
        return articles, subcats

    def _html_category(self, client: HttpClient, name: str, subcats_out: list[str]) -> Iterator[str]:
        url = f"{self.base}/Category:{quote(name, safe='-/')}"
        page, pages = 1, 1
        while page <= pages:
            page_url = url if page == 1 else f"{url}?pg={page}"
            response = client.get(page_url, kind="page")
            articles, subcats, count = parse_category_page(response.body, response.final_url)
            if page == 1:
                pages = count
                subcats_out.extend(subcats)
            yield from (self._canonical(a) for a in articles)
            page += 1

    def _canonical(self, url: str) -> str:
        return f"{self.base}{urlsplit(url).path}"

    def fetch(self, client: HttpClient, url: str) -> Procedure:
        """Fetch and parse one article page."""
        response = client.get(url, kind="page")
        procedure = parse_article_html(response.body, response.final_url, source=self.name)
        procedure.fetched_at = fetched_at(response.fetched_at)
        return procedure
