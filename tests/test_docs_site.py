"""The documentation site builds with ``mkdocs build --strict``, and in headless Chromium (the site served on
127.0.0.1, as ``mkdocs serve`` or any static host serves it) every page loads without an error or a request
elsewhere, every image decodes, and every link within the site leads to a page (and anchor) that exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_publish import _browser, _Chromium  # the DevTools-over-a-pipe driver of the report's browser test

ROOT = Path(__file__).resolve().parents[1]

#: Every link, image and anchor of a loaded page, as the browser resolved them.
_PAGE = (
    "JSON.stringify({links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),"
    " images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src,"
    " ok: i.complete && i.naturalWidth > 0})), title: document.title})"
)


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(v for k, v in attrs if k in ("id", "name") and v)


def _ids(page: Path) -> set[str]:
    parser = _Ids()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.ids


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@contextmanager
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1 (a free port): its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def build_site(out: Path) -> Path:
    """``mkdocs build --strict`` of the repository's site into ``out``."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return out


@pytest.mark.slow  # builds the site (the CLI reference runs the Typer app) and opens ~30 pages in Chromium
@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_every_page_of_the_site_loads_with_its_images_and_no_broken_link(tmp_path: Path) -> None:
    site = build_site(tmp_path / "site")
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    assert {"index.html", "tutorial.html", "reference/cli.html", "reference/api.html", "changelog.html"} <= {
        p.relative_to(site).as_posix() for p in pages
    }
    # the generated pages hold what they are generated from
    assert "procbench score-packet" in (site / "reference" / "cli.html").read_text()
    assert "draw_version 8" in (site / "changelog.html").read_text()
    assert "run_demo" in (site / "reference" / "api.html").read_text()

    browser = _Chromium(str(_browser()), tmp_path / "profile")
    problems: list[str] = []
    images = 0
    try:
        with served(site) as base:
            for page in pages:
                name = page.relative_to(site).as_posix()
                state = json.loads(browser.evaluate(browser.open(base + name), _PAGE))
                for image in state["images"]:
                    images += 1
                    if not image["ok"]:
                        problems.append(f"{name}: image {image['src']} does not load")
                for link in state["links"]:
                    if not link.startswith(base):
                        continue  # links out of the site are not followed (no network here)
                    parts = urlsplit(link)
                    target = site / unquote(parts.path).lstrip("/")
                    if target.is_dir():
                        target = target / "index.html"
                    if not target.is_file():
                        problems.append(f"{name}: link to {link} leads nowhere")
                    elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
                        problems.append(f"{name}: link to {link}: no such anchor")
            errors = browser.errors()
            elsewhere = [url for url in browser.requested() if not url.startswith((base, "data:"))]
    finally:
        browser.close()
    assert problems == []
    assert errors == []
    assert elsewhere == []  # nothing from the network: the site reads offline
    assert images >= 1  # the home page's screenshot of the report
