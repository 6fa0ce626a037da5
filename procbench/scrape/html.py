"""Small lxml helpers shared by the parsers: class selectors, readable text, JSON-LD, first sentences."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import lxml.html
from lxml import etree

__all__ = ["cls", "drop", "fetched_at", "first_sentence", "jsonld_objects", "parse_html", "squash", "text_of"]

_BLOCK = frozenset(
    {
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "br",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "tr",
        "section",
        "blockquote",
        "pre",
        "dd",
        "dt",
        "dl",
        "figure",
        "figcaption",
        "hr",
        "article",
    }
)
_SKIP = frozenset({"script", "style", "noscript", "template", "iframe", "video", "audio", "svg", "button"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0\u2009\u200b\u202f]+")


def cls(name: str) -> str:
    """An XPath predicate body matching elements whose class list holds ``name``."""
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


def parse_html(html: str | bytes) -> lxml.html.HtmlElement:
    """Parse a page (bytes keep the page's own charset declaration)."""
    if isinstance(html, str):
        html = html.encode("utf-8")
    if not html.strip():
        html = b"<html></html>"
    parser = lxml.html.HTMLParser(encoding=None if b"charset" in html[:2048].lower() else "utf-8")
    return lxml.html.fromstring(html, parser=parser)


def drop(root: etree._Element, xpath: str) -> None:
    """Remove every element matching ``xpath`` under ``root`` (their tail text is kept)."""
    for node in root.xpath(xpath):
        if node.getparent() is not None:
            node.drop_tree()


def squash(text: str) -> str:
    """Collapse runs of whitespace to one space and strip."""
    return _SPACES.sub(" ", text.replace("\n", " ")).strip()


def text_of(node: etree._Element) -> str:
    """Readable text of ``node``: block elements start new lines, whitespace collapsed, empty lines dropped.

    Scripts, styles, ``noscript``, media and buttons contribute nothing.
    """
    parts: list[str] = []
    _walk(node, parts)
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _walk(node: etree._Element, parts: list[str]) -> None:
    tag = node.tag if isinstance(node.tag, str) else None
    if tag is None or tag in _SKIP:
        return
    block = tag in _BLOCK
    if block:
        parts.append("\n")
    if node.text:
        parts.append(node.text)
    for child in node:
        _walk(child, parts)
        if child.tail:
            parts.append(child.tail)
    if block:
        parts.append("\n")


def jsonld_objects(root: etree._Element) -> Iterator[dict[str, Any]]:
    """Every JSON-LD object of the page (lists and ``@graph`` flattened); unparsable blocks are skipped."""
    for script in root.xpath("//script[@type='application/ld+json']"):
        try:
            data = json.loads(script.text or "")
        except ValueError:
            continue
        stack = data if isinstance(data, list) else [data]
        for item in stack:
            if isinstance(item, dict):
                graph = item.get("@graph")
                if isinstance(graph, list):
                    yield from (g for g in graph if isinstance(g, dict))
                else:
                    yield item


def jsonld_types(obj: dict[str, Any]) -> set[str]:
    """The ``@type`` of a JSON-LD object as a set."""
    kind = obj.get("@type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


# wikiHow bolds a step's first sentence: up to the first . : ! ? followed by whitespace, a non-word
# character or the end (WikihowArticle::boldFirstSentence). The same rule splits text without bold.
_SENTENCE_END = re.compile(r"[.:!?](?=\s|[^\w]|$)")


def first_sentence(text: str) -> tuple[str | None, str]:
    """Split ``text`` into (first sentence, rest) by wikiHow's bolding rule; (None, text) if it has no end."""
    text = text.strip()
    match = _SENTENCE_END.search(text)
    if match is None or match.end() >= len(text):
        return None, text
    return text[: match.end()].strip(), text[match.end() :].strip()


def fetched_at(stamp: str) -> datetime | None:
    """A cached response's ISO-8601 fetch time as a datetime (None when missing or malformed)."""
    try:
        return datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None
