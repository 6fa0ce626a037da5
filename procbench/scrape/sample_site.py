"""A local wikiHow-like site serving the bundled sample corpus, for the demo (and anyone trying scrape).

Pages follow wikiHow's 2020 responsive markup as ``shared/notes/site-facts.md`` §A5-A7 describe it:
``div.section.steps`` > ``ol.steps_list_2`` > ``li`` with ``div.step_num``, a lazy-loaded ``div.mwimg``
(``data-src`` plus a ``noscript`` copy), ``div.step`` starting with ``b.whb``; tips, warnings, ads and
scripts around it; JSON-LD ``HowTo`` and ``BreadcrumbList``; category pages with ``?pg=N`` and the
MediaWiki API's ``categorymembers``. It binds to 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from procbench.corpus import load_sample, step_image
from procbench.errors import BadInput

__all__ = ["CANONICAL_BASE", "SampleSite", "render_article", "serve_sample_site"]

#: The canonical (never resolving, RFC 2606) address of the sample site; the demo mirrors it locally.
CANONICAL_BASE = "https://sample.procbench.invalid"
_PAGE_SIZE = 10


def _slug(name: str) -> str:
    return name.strip().replace(" ", "-")


def _image_path(slug: str, index: int) -> str:
    name = f"{slug}-Step-{index + 1}.jpg"
    digest = hashlib.md5(name.encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"/images/thumb/{digest[0]}/{digest[:2]}/{name}/aid0-v4-460px-{name}"


def render_article(record: dict[str, Any], *, base: str = CANONICAL_BASE) -> str:
    """The article page of one sample record (an import record of DESIGN §4)."""
    slug = record["id"]
    url = f"{base}/{quote(slug)}"
    title = record["title"]
    esc = html.escape
    crumbs = "".join(f'<li><a href="/Category:{quote(_slug(c))}">{esc(c)}</a></li>' for c in record["category"])
    items = []
    howto_steps = []
    for index, step in enumerate(record["steps"]):
        src = _image_path(slug, index)
        alt = f"Image titled {esc(slug)} Step {index + 1}"
        items.append(
            f'<li id="step-id-0{index}"><a name="step_1_{index + 1}" class="stepanchor"></a>'
            f'<div class="step_num" aria-label="Step {index + 1}">{index + 1}</div>'
            f'<div class="mwimg largeimage floatcenter" style="max-width:460px"><a href="#/Image:{esc(slug)}'
            f'-Step-{index + 1}.jpg" class="image lightbox"><div class="content-spacer">'
            f'<img class="whcdn content-fill" data-src="{src}" alt="{alt}" data-width="460" data-height="345">'
            f'</div></a><noscript><img src="{src}" alt="{alt}"></noscript>'
            f'<script>WH.shared.addScrollLoadItem("img_{index}")</script></div>'
            f'<div class="step"><b class="whb">{esc(step["title"])}</b> {esc(step["text"])}'
            f'<sup class="reference" id="_ref-{index}"><a href="#_note-{index}">[{index + 1}]</a></sup></div>'
            f'<div class="clearall"></div></li>'
        )
        howto_steps.append(
            {
                "@type": "HowToStep",
                "text": f"{step['title']} {step['text']}",
                "image": f"{base}{src}",
                "url": f"{url}#step-id-0{index}",
            }
        )
    ld_howto = {
        "@context": "http://schema.org",
        "@type": "HowTo",
        "name": title.removeprefix("How to "),
        "headline": title.removeprefix("How to "),
        "step": howto_steps,
        "author": {"@type": "Organization", "name": "wikiHow"},
    }
    ld_crumbs = {
        "@context": "http://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": [
            {"@type": "ListItem", "position": 1, "item": {"@id": base, "name": "wikiHow"}},
            *(
                {"@type": "ListItem", "position": i + 2, "item": {"@id": f"{base}/Category:{_slug(c)}", "name": c}}
                for i, c in enumerate(record["category"])
            ),
            {"@type": "ListItem", "position": len(record["category"]) + 2, "item": {"@id": url, "name": title}},
        ],
    }
    license_url = (
        "https://creativecommons.org/publicdomain/zero/1.0/"
        if record.get("license") == "CC0-1.0"
        else f"{base}/wikiHow:Creative-Commons"
    )
    size = "title_lg" if len(title) <= 20 else "title_md" if len(title) <= 40 else "title_sm"
    return f"""<!DOCTYPE html>
<html lang="en" dir="ltr"><head><meta charset="utf-8"><title>{esc(title)} - wikiHow</title>
<link rel="canonical" href="{url}">
<script type="application/ld+json">{json.dumps(ld_howto)}</script>
<script type="application/ld+json">{json.dumps(ld_crumbs)}</script>
<script>var wgIsRestricted = false; window.WH = window.WH || {{}};</script></head>
<body class="mediawiki ltr ns-0 skin-minervawh"><div id="mw-mf-viewport"><div id="mw-mf-page-center">
<div id="actionbar"><ul id="breadcrumb" class="breadcrumbs"><li class="home"><a href="/Main-Page">Home</a></li>
{crumbs}</ul></div>
<div id="content_wrapper" role="main"><div id="content_inner">
<div class="pre-content"><h1 id="section_0" class="{size}"><a href="{url}">{esc(title)}</a></h1>
<div id="coauthor_byline"><div id="byline_info"><span>Co-authored by <a href="/User:Sample">{
        esc(record.get("author") or "wikiHow Staff")
    }</a></span> <span>Last Updated: January 1, 2024</span></div></div></div>
<div id="bodycontents"><div id="intro" class="section"><p>This sample article shows {esc(title.lower())}.</p>
<div class="wh_ad_inner" data-service="adsense"><ins>Advertisement</ins></div></div>
<div class="section steps steps_first"><h2><span class="mw-headline" id="Steps">Steps</span></h2>
<div id="steps" class="section_text"><ol class="steps_list_2">{"".join(items)}</ol></div></div>
<div class="section tips"><h2><span class="mw-headline" id="Tips">Tips</span></h2><div id="tips" class="section_text">
<ul><li><div>Take your time; a sample tip is not a step.</div></li></ul></div></div>
<div class="section warnings"><h2><span class="mw-headline" id="Warnings">Warnings</span></h2>
<div id="warnings" class="section_text"><ul><li><div>Sample warnings are not steps either.</div></li></ul></div></div>
</div></div></div>
<div id="footer"><div id="footer_crumbs"><ul class="breadcrumbs">{crumbs}</ul></div>
<p>All text shared under a <a rel="license" href="{license_url}">Creative Commons License</a>.</p></div>
</div></div></body></html>"""


class _Tree:
    """The sample's category tree: name -> (sub-categories, article slugs), in corpus order."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = {r["id"]: r for r in records}
        self.subcats: dict[str, list[str]] = {}
        self.articles: dict[str, list[str]] = {}
        self.top: list[str] = []
        for record in records:
            path = [_slug(c) for c in record["category"]]
            if path and path[0] not in self.top:
                self.top.append(path[0])
            for parent, child in zip(path, path[1:], strict=False):
                self.subcats.setdefault(parent, [])
                if child not in self.subcats[parent]:
                    self.subcats[parent].append(child)
            self.articles.setdefault(path[-1] if path else "Uncategorized", []).append(record["id"])


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        site = self.server.site
        if path == "/robots.txt":
            self._send(
                200,
                "text/plain",
                b"User-agent: *\nDisallow: /index.php\nDisallow: /Special:\nDisallow: /*action=history\n",
            )
        elif path == "/api.php":
            self._send(200, "application/json", json.dumps(site.api(query)).encode("utf-8"))
        elif path.startswith("/Category:"):
            page = site.category_page(path.removeprefix("/Category:"), int(query.get("pg", "1") or 1))
            self._send(200 if page else 404, "text/html; charset=utf-8", (page or "not found").encode("utf-8"))
        elif path.startswith("/images/"):
            data = site.image(path)
            self._send(200 if data else 404, "image/jpeg", data or b"")
        elif path.lstrip("/") in site.tree.records:
            self._send(
                200,
                "text/html; charset=utf-8",
                render_article(site.tree.records[path.lstrip("/")], base=site.canonical).encode("utf-8"),
            )
        else:
            self._send(404, "text/html", b"<html><body>Not found</body></html>")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: SampleSite


class SampleSite:
    """The sample corpus as a wikiHow-like site (``url`` is where it listens once started)."""

    def __init__(
        self, records: list[dict[str, Any]] | None = None, *, seed: int = 0, canonical: str = CANONICAL_BASE
    ) -> None:
        self.tree = _Tree(records if records is not None else load_sample())
        self.seed = seed
        self.canonical = canonical
        self._images = {
            _image_path(slug, i): (slug, i) for slug, r in self.tree.records.items() for i in range(len(r["steps"]))
        }
        self.url = ""

    @property
    def top_categories(self) -> list[str]:
        """The top-level category names (hyphenated, as in ``Category:`` titles)."""
        return list(self.tree.top)

    def api(self, query: dict[str, str]) -> dict[str, Any]:
        """A MediaWiki ``action=query`` answer for ``categorymembers`` (formatversion 2, no continuation)."""
        if query.get("action") != "query":
            return {"error": {"code": "badvalue", "info": "only action=query"}}
        if query.get("generator") == "categorymembers":
            name = query.get("gcmtitle", "").removeprefix("Category:").replace(" ", "-")
            pages = [
                {
                    "ns": 0,
                    "title": slug.replace("-", " "),
                    "pageid": i + 1,
                    "fullurl": f"{self.canonical}/{quote(slug)}",
                }
                for i, slug in enumerate(self.tree.articles.get(name, []))
            ]
            return {"batchcomplete": True, "query": {"pages": pages}} if pages else {"batchcomplete": True}
        if query.get("list") == "categorymembers":
            name = query.get("cmtitle", "").removeprefix("Category:").replace(" ", "-")
            members = [{"ns": 14, "title": f"Category:{c.replace('-', ' ')}"} for c in self.tree.subcats.get(name, [])]
            return {"batchcomplete": True, "query": {"categorymembers": members}}
        return {"error": {"code": "badvalue", "info": "unsupported query"}}

    def category_page(self, name: str, page: int) -> str | None:
        """A ``Category:`` page with the article grid, sub-categories and pagination."""
        if name not in self.tree.subcats and name not in self.tree.articles:
            return None
        articles = self.tree.articles.get(name, [])
        pages = max(1, -(-len(articles) // _PAGE_SIZE))
        chunk = articles[(page - 1) * _PAGE_SIZE : page * _PAGE_SIZE]
        grid = "".join(
            f'<div class="responsive_thumb"><a href="/{quote(s)}"><p>{html.escape(s)}</p></a></div>' for s in chunk
        )
        subcats = "".join(
            f'<li><a href="/Category:{quote(c)}">{html.escape(c)}</a></li>' for c in self.tree.subcats.get(name, [])
        )
        pagination = "".join(f'<li><a href="/Category:{quote(name)}?pg={i}">{i}</a></li>' for i in range(1, pages + 1))
        return (
            f"<!DOCTYPE html><html lang='en'><head><title>{html.escape(name)} - wikiHow</title></head><body>"
            f"<div id='content_wrapper'><div id='subcats'><ul>{subcats}</ul></div>"
            f"<div id='cat_all'><div class='cat_grid'>{grid}</div></div>"
            f"<div id='large_pagination'><ul>{pagination if pages > 1 else ''}</ul></div></div></body></html>"
        )

    def image(self, path: str) -> bytes | None:
        """The JPEG of a step image path, drawn from the corpus."""
        found = self._images.get(path)
        if found is None:
            return None
        slug, index = found
        out = io.BytesIO()
        step_image(self.tree.records[slug], index, seed=self.seed).save(out, format="JPEG", quality=92)
        return out.getvalue()


@contextmanager
def serve_sample_site(
    records: list[dict[str, Any]] | None = None, *, seed: int = 0, port: int = 0
) -> Iterator[SampleSite]:
    """Serve the sample site on 127.0.0.1 (``port``; 0: a free one) for the duration of the block
    (``procbench sample-site`` serves it until stopped)."""
    site = SampleSite(records, seed=seed)
    try:
        server = _Server(("127.0.0.1", port), _Handler)
    except OSError as exc:
        raise BadInput(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pass another --port, or 0") from None
    server.site = site
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="procbench-sample-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
