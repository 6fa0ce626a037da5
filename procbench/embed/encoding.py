"""Encoding one chunk of a field: what a local run and every Ray actor call (``pipeline``, ``distributed``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from procbench.embed.base import Encoder, Modality
from procbench.store import Store

__all__ = ["chunk_rows", "encode_inputs"]


def encode_inputs(
    store: Store, encoder: Encoder, inputs: list[str], *, batch_size: int
) -> tuple[np.ndarray, list[str | None]]:
    """Encode one chunk of payloads (texts, or stored image ids for an image encoder).

    Returns the vectors of the inputs that could be read, in order, and per input ``None`` or why it was
    skipped (an image whose stored bytes cannot be read). The local run and every Ray actor call this.
    """
    errors: list[str | None] = [None] * len(inputs)
    batch: list[Any] = list(inputs)
    if encoder.modality == "image":
        batch = []
        for i, image_id in enumerate(inputs):
            path = store.image_file(image_id)  # None: not an image id, or not a regular file in the store
            if path is None:
                errors[i] = "cannot read stored image: no image file of that id in the store"
                continue
            try:
                with Image.open(path) as im:
                    batch.append(im.convert("RGB"))
            except (OSError, ValueError, Image.DecompressionBombError) as exc:
                errors[i] = f"cannot read stored image: {exc}"
    if not batch:
        return np.zeros((0, encoder.dim), dtype=np.float32), errors
    return encoder.encode(batch, batch_size=batch_size), errors


def chunk_rows(modality: Modality, batch_size: int) -> int:
    """Inputs per chunk: the unit of encoding, of resuming, and of a Ray actor call (so both engines
    hand the encoder exactly the same batches, and produce the same bytes)."""
    return max(4096, batch_size * 16) if modality == "text" else max(64, batch_size * 4)
