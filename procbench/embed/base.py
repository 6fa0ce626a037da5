"""What every encoder is: a named, versioned function from inputs to L2-normalised float32 vectors."""

from __future__ import annotations

import abc
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from procbench.errors import BadInput

if TYPE_CHECKING:
    from procbench.store import Store, Transaction

__all__ = ["Encoder", "EncoderUnavailable", "Modality", "l2_normalise", "slugify"]

Modality = Literal["text", "image"]


class EncoderUnavailable(BadInput):
    """An encoder that cannot be loaded here; the message names what to pass instead."""


class Encoder(abc.ABC):
    """A loaded encoder.

    Attributes:
        name: canonical name, recorded as ``encoder`` in the embedding files' metadata.
        slug: the encoder part of embedding file names (``embeddings/FIELD.SLUG.arrow``).
        revision: what exactly was loaded (weights fingerprint, commit, fitted-model hash).
        dim: length of the vectors.
        description: one line for humans (recorded as ``model``).
        packages: distributions whose versions go to the provenance log.
        default_batch_size: batch size when the caller does not choose one.
    """

    modality: ClassVar[Modality]
    name: str
    slug: str
    revision: str
    dim: int
    description: str = ""
    packages: tuple[str, ...] = ()
    default_batch_size: int = 32

    @abc.abstractmethod
    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Encode ``inputs`` (strings, or RGB PIL images) into an ``(n, dim)`` float32 array, L2-normalised."""

    def to_device(self, device: str) -> None:  # noqa: B027 - model-free encoders have nothing to move
        """Run on ``device`` (``cuda`` on a GPU worker of a Ray cluster); model-free encoders ignore it."""

    def for_workers(self) -> Encoder:
        """What a Ray encode actor is handed: this encoder, or one that computes the same bytes with fewer
        imports (its start-up is part of every Ray run)."""
        return self

    def stage_artifacts(self, store: Store, txn: Transaction) -> list[str]:
        """Stage files the embeddings depend on (e.g. a fitted model); returns their store paths."""
        return []


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (all-zero rows stay zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected an (n, d) array, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def slugify(text: str) -> str:
    """A file-name-safe, lower-case form of an encoder name (``org/Model-X`` → ``org--model-x``)."""
    slug = text.strip().lower().replace("/", "--")
    slug = re.sub(r"[^a-z0-9._-]+", "-", slug).strip("-.")
    if not slug:
        raise BadInput(f"cannot make a file name from encoder name {text!r}")
    return slug


def fingerprint_files(directory: Path, *, skip: tuple[str, ...] = ("README.md",)) -> str:
    """A short sha256 over the names and bytes of every file under ``directory`` (what a local model is)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name not in skip):
        digest.update(path.relative_to(directory).as_posix().encode("utf-8") + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]
