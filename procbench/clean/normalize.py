"""Text normalisation: markup remnants, unicode noise, whitespace and bullets, optional ASCII folding.

Each function is one rule of the cleaning report and is idempotent on its own; :func:`normalize_text`
chains them (markup, then unicode, then ASCII when asked, then whitespace). Strings that cannot hold a
rule's noise are returned untouched by a cheap test first, so clean text costs little.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["fix_unicode", "normalize_text", "normalize_whitespace", "strip_markup", "to_ascii"]

# -- markup: HTML/XML tags, entities, comments, CSS and script remnants ---------------------------------
_TAG_NAMES = (
    "a|abbr|acronym|address|area|article|aside|audio|b|base|bdi|bdo|big|blockquote|body|br|button|canvas|"
    "caption|center|cite|code|col|colgroup|data|dd|del|details|dfn|div|dl|dt|em|embed|fieldset|figcaption|"
    "figure|font|footer|form|h[1-6]|head|header|hr|html|i|iframe|img|input|ins|kbd|label|legend|li|link|main|"
    "map|mark|meta|nav|nobr|noscript|object|ol|optgroup|option|p|param|path|picture|pre|q|s|samp|script|"
    "section|select|small|source|span|strike|strong|style|sub|summary|sup|svg|table|tbody|td|textarea|tfoot|"
    "th|thead|time|title|tr|track|tt|u|ul|var|video|wbr"
)
_BLOCK_TAG = re.compile(
    r"</?(?:br|p|div|li|ul|ol|h[1-6]|tr|table|blockquote|section|article|hr|dd|dt|pre)"
    r"\b[^<>]*>",
    re.IGNORECASE,
)
_TAG = re.compile(
    rf"</?(?:(?:{_TAG_NAMES})|[a-z][\w-]*:[\w-]+)\b(?:[^<>\"']|\"[^\"]*\"|'[^']*')*/?\s*>", re.IGNORECASE
)
_SCRIPT_BLOCK = re.compile(r"<(script|style|noscript)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_COMMENT = re.compile(
    r"<!--.*?-->|<!--.*\Z|(?://\s*)?<!\[CDATA\[|(?://\s*)?\]\]>|//\s*<!-*\s*(?=\s|\Z)|"
    r"/\*.*?\*/",
    re.DOTALL,
)
_ENTITY = re.compile(
    r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});|&(?:nbsp|amp|quot|lt|gt)(?![\w;])"
)
_CSS_SELECTOR = r"[@.#]?[A-Za-z_][\w-]*(?:[.#:]{1,2}[\w-]+)*"
_CSS_BODY = re.compile(r"\{[^{}]*\}")
# Declarations only, each after a ";" (linear: no way to split the same text in two)
_CSS_DECLARATIONS = re.compile(r"\A\s*[\w-]+\s*:[^;:{}]*(?:;\s*[\w-]+\s*:[^;:{}]*)*;?\s*\Z")
_CSS_SELECTORS_AT_END = re.compile(rf"(?:{_CSS_SELECTOR}(?:[ \t]*[,>+~][ \t]*{_CSS_SELECTOR})*)[ \t]*\Z")
_CSS_PROPERTIES = frozenset(
    [
        "font",
        "font-family",
        "font-size",
        "font-weight",
        "font-style",
        "font-variant",
        "line-height",
        "text-align",
        "text-indent",
        "text-decoration",
        "text-transform",
        "margin",
        "margin-top",
        "margin-bottom",
        "margin-left",
        "margin-right",
        "padding",
        "padding-top",
        "padding-bottom",
        "padding-left",
        "padding-right",
        "background",
        "background-color",
        "background-image",
        "border",
        "border-top",
        "border-bottom",
        "border-left",
        "border-right",
        "border-collapse",
        "border-color",
        "border-width",
        "border-style",
        "color",
        "width",
        "height",
        "min-width",
        "max-width",
        "display",
        "float",
        "position",
        "vertical-align",
        "letter-spacing",
        "white-space",
        "tab-stops",
        "page-break-before",
        "page-break-after",
        "layout-grid-mode",
    ]
)
_CSS_DECL = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z-]{1,40})\s*:\s*([^;:{}\n]{1,80});")
_CSS_VALUE = re.compile(r"\d(?:px|pt|em|rem)\b|!important|#[0-9a-fA-F]{3,6}\b|rgba?\(", re.IGNORECASE)
_JS_CALLEE = re.compile(r"(?<![\w$.])(?!www\.)[A-Za-z_$][\w$]*(?:\.[a-z_$][\w$]*)+\Z")
_JS_IF = re.compile(r"\bif\s*\((?:[^()]|\([^()]*\))*\)\s*\Z")
_NOT_JS_SUFFIX = (".com", ".org", ".net", ".edu", ".gov", ".html", ".htm", ".php")
_JS_MISC = re.compile(
    r"\(\s*adsbygoogle\s*=\s*window\.adsbygoogle\s*\|\|\s*\[\]\s*\)\s*\.push\(\s*\{\s*\}\s*\);?|"
    r"\bvar\s+[A-Za-z_$][\w$]*\s*=\s*[^;\n]{0,200};|"
    r"\bfunction\s*[\w$]*\s*\([^()]*\)\s*\{[^{}]*\}"
)
_CITATION = re.compile(r"\[(?:\d{1,3}|citation needed|edit)\]", re.IGNORECASE)


def strip_markup(text: str) -> str:
    """Remove HTML/XML tags, comments, CDATA, entities, CSS rules and declarations, script remnants and
    wiki citation markers (``[3]``); block-level tags become line breaks."""
    for _ in range(4):  # escaped markup (``&lt;b&gt;``, ``&amp;nbsp;``) needs another round
        before = text
        if "<" in text:
            text = _SCRIPT_BLOCK.sub(" ", text)
        if "<!" in text or "/*" in text or "]]>" in text:
            text = _COMMENT.sub(" ", text)
        if "<" in text:
            text = _TAG.sub(" ", _BLOCK_TAG.sub("\n", text))
        if "&" in text:
            text = _ENTITY.sub(_unescape_entity, text)
        if "{" in text:
            text = _strip_css_blocks(text)
        if ":" in text and ";" in text:
            text = _strip_css_declarations(text)
        if "var " in text or "function" in text or "adsbygoogle" in text:
            text = _JS_MISC.sub(" ", text)
        if "(" in text and "." in text:
            text = _strip_js_calls(text)
        if "[" in text:
            text = _CITATION.sub("", text)
        if text == before:
            break
    return text


def _strip_css_blocks(text: str) -> str:
    """Remove ``selector { prop: value; ... }`` rules (the selector is optional)."""
    out, last = [], 0
    for m in _CSS_BODY.finditer(text):
        if not _CSS_DECLARATIONS.match(m.group()[1:-1]):
            continue
        head = text[last : m.start()]
        sel = _CSS_SELECTORS_AT_END.search(head[-200:])
        out.append(head[: len(head) - len(sel.group())] if sel else head)
        out.append(" ")
        last = m.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _strip_css_declarations(text: str) -> str:
    """Remove runs of CSS declarations (``font-size: 12px; color: red;``): two or more in a row, or one
    whose value only CSS would have (units, ``!important``, hex colours)."""
    decls = [
        m
        for m in _CSS_DECL.finditer(text)
        if m.group(1).lower() in _CSS_PROPERTIES or m.group(1).lower().startswith("mso-")
    ]
    if not decls:
        return text
    runs: list[list[re.Match[str]]] = []
    for m in decls:
        if runs and not text[runs[-1][-1].end() : m.start()].strip():
            runs[-1].append(m)
        else:
            runs.append([m])
    spans = [(run[0].start(), run[-1].end()) for run in runs if len(run) >= 2 or _CSS_VALUE.search(run[0].group(2))]
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(" ")
        last = end
    out.append(text[last:])
    return "".join(out)


def _strip_js_calls(text: str) -> str:
    """Remove dotted script calls (``WH.shared.addScrollLoadItem('img_1')``, ``if(x)document.write(y);``)."""
    out, last, pos = [], 0, 0
    while True:
        i = text.find("(", pos)
        if i < 0:
            break
        pos = i + 1
        if i < last or i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$"):
            continue
        callee = _JS_CALLEE.search(text, max(last, i - 120), i)
        if callee is None or callee.group().endswith(_NOT_JS_SUFFIX):
            continue
        end = _matching_paren(text, i)
        if end < 0:
            continue
        start = callee.start()
        cond = _JS_IF.search(text, max(last, start - 200), start)
        if cond is not None:
            start = cond.start()
        if end < len(text) and text[end] == ";":
            end += 1
        out.append(text[last:start])
        out.append(" ")
        last = pos = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _matching_paren(text: str, open_at: int) -> int:
    """Index after the parenthesis closing the one at ``open_at`` (-1 if unbalanced within 400 chars)."""
    depth = 0
    for j in range(open_at, min(len(text), open_at + 400)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _unescape_entity(match: re.Match[str]) -> str:
    out = html.unescape(match.group())
    return " " if out == "\xa0" else out


# -- unicode: mojibake, NFC, ligatures, quotes, invisible and control characters ------------------------
# UTF-8 read as cp1252/latin-1: a lead byte (Â-ô) followed by a continuation byte shown as a cp1252 char.
_MOJIBAKE_HINT = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6"
    "\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
)
# The fi ligature (EF AC 81) read as cp1252 loses its last byte (0x81 is undefined there): "ï¬rst".
_BROKEN_FI = re.compile("\u00ef\u00ac(?=[a-z])")
_CHAR_MAP = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "ft",
        "\ufb06": "st",
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,
        "\u00ad": None,
        "\ufffd": None,
    }
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def fix_unicode(text: str) -> str:
    """Repair mojibake (UTF-8 decoded as cp1252/latin-1, the ``ï¬`` ligature garbage), apply NFC, expand
    Latin ligatures, straighten curly quotes, drop invisible, replacement and control characters."""
    if text.isascii():
        if text.isprintable() or not _CONTROL.search(text):
            return text
        return _CONTROL.sub("", text)
    if _MOJIBAKE_HINT.search(text):
        import ftfy

        text = _BROKEN_FI.sub("fi", text)
        text = ftfy.fix_text(text, normalization="NFC", unescape_html=False)
    text = unicodedata.normalize("NFC", text).translate(_CHAR_MAP)
    return _CONTROL.sub("", text)


# -- ASCII folding (paper 004 removes non-ASCII characters; off by default) ----------------------------
_ASCII_MAP = str.maketrans(
    {
        "\u2013": "-",
        "\u2014": "-",
        "\u2012": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
        "\u00d7": "x",
        "\u2044": "/",
        "\u2022": "-",
        "\u00b7": "-",
        "\u00a0": " ",
        "\u00bd": "1/2",
        "\u00bc": "1/4",
        "\u00be": "3/4",
        "\u2153": "1/3",
        "\u2154": "2/3",
        "\u00df": "ss",
        "\u00e6": "ae",
        "\u00c6": "AE",
        "\u0153": "oe",
        "\u0152": "OE",
        "\u00f8": "o",
        "\u00d8": "O",
        "\u0142": "l",
        "\u0141": "L",
        "\u00f0": "d",
        "\u00fe": "th",
    }
)


_GLUED_FRACTION = re.compile("(?<=\\d)(?=[\u00bc-\u00be\u2150-\u215e])")


def to_ascii(text: str) -> str:
    """Fold accents (``café`` -> ``cafe``), map common punctuation to ASCII, drop other non-ASCII characters."""
    if text.isascii():
        return text
    text = _GLUED_FRACTION.sub(" ", text)
    text = unicodedata.normalize("NFKD", text.translate(_ASCII_MAP)).replace("\u2044", "/")
    return text.encode("ascii", "ignore").decode("ascii")


# -- whitespace, bullets, separator runs, missing spaces ----------------------------------------------
_SPACES = re.compile(r"[ \t\f\v\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
_SEPARATOR_RUN = re.compile(r"(?:#{3,}|={3,}|\*{3,}|_{3,}|~{3,}|-{4,})")
_BULLETS = (
    "\u2022\u25e6\u25aa\u25ab\u25a0\u25a1\u25cf\u25cb\u25c6\u25c7\u25ba\u25b8\u25b9"
    "\u27a2\u27a4\u2713\u2714\u2717\u2718\u2610\u2611\u2023\u2043\u00b7"
)
_LINE_BULLET = re.compile(rf"^(?:(?:[{_BULLETS}]+|[*+\-](?=\s|$))\s*)+", re.MULTILINE)
_INLINE_BULLET = re.compile(rf"\s+[{_BULLETS}]+\s+")
_MISSING_SPACE = re.compile(r"(?<=[a-z]{2}[.!?])(?=[A-Z][a-z])|(?<=[A-Za-z]),(?=[A-Za-z]{2})")
_GLUE_GATE = re.compile(r"[.!?,][A-Za-z]")
_SPACE_BEFORE_PUNCT = re.compile(r"(?<=[\w)\"']) +(?=[,.;:!?](?:\s|$))", re.MULTILINE)
_UNICODE_WS_HINT = re.compile(rf"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000{_BULLETS}]")
# Anything whitespace normalisation could change starts with one of these pairs (a superset, cheap to scan).
_WS_GATE = re.compile(r"[\s#=*_~+-][\s,.;:!?#=*_~+-]|[\t\r\f\v]")


def _needs_whitespace(text: str, single_line: bool) -> bool:
    if not text:
        return False
    if text[0].isspace() or text[-1].isspace() or (single_line and "\n" in text) or _WS_GATE.search(text):
        return True
    if not text.isascii() and _UNICODE_WS_HINT.search(text):
        return True
    return _GLUE_GATE.search(text) is not None and _MISSING_SPACE.search(text) is not None


def normalize_whitespace(text: str, *, single_line: bool = False) -> str:
    """Collapse spaces, drop empty lines, bullet glyphs and separator runs (``#####``), put a space after
    sentence punctuation glued to the next word (``bowl.Then``) and none before it.

    With ``single_line`` (titles) lines are joined with spaces.
    """
    if not _needs_whitespace(text, single_line):
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SEPARATOR_RUN.sub("\n", text)
    if not text.isascii():
        text = _INLINE_BULLET.sub("\n", text)
    text = _SPACES.sub(" ", text)
    lines = [_LINE_BULLET.sub("", line.strip()).strip() for line in text.split("\n")]
    text = (" " if single_line else "\n").join(line for line in lines if line)
    text = _MISSING_SPACE.sub(lambda m: ", " if m.group() == "," else " ", text)
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    return text


def normalize_text(text: str, *, ascii_only: bool = False, single_line: bool = False) -> str:
    """Markup, unicode and whitespace normalisation (plus ASCII folding with ``ascii_only``), to a fixed point."""
    for _ in range(4):
        before = text
        text = fix_unicode(strip_markup(text))
        if ascii_only:
            text = to_ascii(text)
        text = normalize_whitespace(text, single_line=single_line)
        if text == before:
            break
    return text
