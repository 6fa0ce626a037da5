"""Procedure licenses as SPDX ids (``CC-BY-NC-SA-3.0``) and as the Hub's lowercase license ids.

Sources record licenses as URLs (``https://creativecommons.org/licenses/by-nc-sa/3.0/``) or names
(``CC BY-NC-SA 3.0``, ``CC0-1.0``). A license whose version is not stated cannot be named exactly: it maps
to ``None`` and the card lists it under ``other`` with its recorded text.
"""

from __future__ import annotations

import re

__all__ = ["hub_license", "spdx_license"]

#: What may follow a license's name and version: a port (``International``) and a note in parentheses
#: (``CC BY-NC-SA 3.0 (wikiHow content)``).
_NOTE = r"(?:[\s_-]*(?:international|unported|generic|universal))?(?:\s*\([^)]*\))?$"
_CC_URL = re.compile(r"creativecommons\.org/licenses/([a-z-]+)/(\d\.\d)")
_CC_ZERO_URL = re.compile(r"creativecommons\.org/publicdomain/zero/1\.0")
_CC_NAME = re.compile(
    r"^(?:cc|creative\s*commons)[\s_-]*((?:by|attribution)(?:[\s_-]*(?:nc|sa|nd|non-?commercial|share-?alike|"
    r"no-?derivatives?))*)[\s_-]*v?(\d\.\d)" + _NOTE
)
_CC_ZERO_NAME = re.compile(r"^(?:cc[\s_-]*0|cc[\s_-]*zero)(?:[\s_-]*(?:v?1\.0|universal))*" + _NOTE)
_PARTS = {
    "by": "BY",
    "attribution": "BY",
    "nc": "NC",
    "noncommercial": "NC",
    "non-commercial": "NC",
    "sa": "SA",
    "sharealike": "SA",
    "share-alike": "SA",
    "nd": "ND",
    "noderivatives": "ND",
    "no-derivatives": "ND",
    "noderivative": "ND",
    "no-derivative": "ND",
}
_OTHER = {
    "mit": "MIT",
    "apache-2.0": "Apache-2.0",
    "apache 2.0": "Apache-2.0",
    "apache license 2.0": "Apache-2.0",
    "gfdl-1.3": "GFDL-1.3",
    "odc-by-1.0": "ODC-By-1.0",
    "pddl-1.0": "PDDL-1.0",
}


def spdx_license(text: str | None) -> str | None:
    """The SPDX id of a recorded license (URL or name), or None when it cannot be named exactly.

    >>> spdx_license("https://creativecommons.org/licenses/by-nc-sa/3.0/")
    'CC-BY-NC-SA-3.0'
    >>> spdx_license("CC BY-NC-SA (Instructables authors)") is None
    True
    """
    if not text:
        return None
    raw = text.strip()
    lowered = raw.lower()
    if _CC_ZERO_URL.search(lowered) or _CC_ZERO_NAME.match(lowered):
        return "CC0-1.0"
    url = _CC_URL.search(lowered)
    if url:
        parts = [_PARTS.get(p) for p in url.group(1).split("-")]
        return "CC-" + "-".join(p for p in parts if p) + "-" + url.group(2) if all(parts) else None
    name = _CC_NAME.match(lowered)
    if name:
        words = re.findall(r"by|attribution|nc|sa|nd|non-?commercial|share-?alike|no-?derivatives?", name.group(1))
        elements = list(dict.fromkeys(p for w in words if (p := _PARTS[w])))
        return "CC-" + "-".join(elements) + "-" + name.group(2)
    return _OTHER.get(lowered)


def hub_license(spdx: str | None) -> str:
    """The Hugging Face Hub's license id for an SPDX id (lowercase; ``other`` when unknown)."""
    return spdx.lower() if spdx else "other"
