"""``procbench embed``: text and image encoders, memory-mapped embedding files and FAISS indexes.

>>> from procbench.embed import embed_store, load_embeddings, load_index, neighbors_of
>>> embed_store("store", text_encoder="minilm-offline", image_encoder="colour-layout")  # doctest: +SKIP
>>> titles = load_embeddings("store", "step_title")  # memory-mapped; titles.vectors is (N, D)  # doctest: +SKIP
>>> index = load_index("store", "step_title")  # the persisted FAISS index, not rebuilt  # doctest: +SKIP
>>> hits = neighbors_of(index, ["wikihow:Make-Tea#2"], 100)  # other procedures only  # doctest: +SKIP
>>> hits.distances, hits.keys  # (1, 100) Euclidean distances and keys  # doctest: +SKIP

Nothing heavy (torch, faiss, sentence-transformers, scikit-learn) is imported until it is used.
"""

from __future__ import annotations

from procbench.embed.base import Encoder, EncoderUnavailable, Modality, l2_normalise
from procbench.embed.fields import FIELDS, TEXT_FIELDS, field_table
from procbench.embed.index import (
    IndexConfig,
    NeighborIndex,
    Neighbors,
    build_faiss_index,
    exact_knn,
    load_index,
    neighbors,
    neighbors_of,
)
from procbench.embed.pipeline import EmbedReport, FieldReport, embed_store
from procbench.embed.registry import (
    DEFAULT_IMAGE_ENCODER,
    DEFAULT_TEXT_ENCODER,
    EncoderSpec,
    available_encoders,
    resolve_encoder,
)
from procbench.embed.storage import Embeddings, embedding_name, list_embeddings, load_embeddings

__all__ = [
    "DEFAULT_IMAGE_ENCODER",
    "DEFAULT_TEXT_ENCODER",
    "FIELDS",
    "TEXT_FIELDS",
    "EmbedReport",
    "Embeddings",
    "Encoder",
    "EncoderSpec",
    "EncoderUnavailable",
    "FieldReport",
    "IndexConfig",
    "NeighborIndex",
    "Neighbors",
    "available_encoders",
    "build_faiss_index",
    "embed_store",
    "embedding_name",
    "exact_knn",
    "field_table",
    "l2_normalise",
    "list_embeddings",
    "load_embeddings",
    "load_encoder",
    "load_index",
    "neighbors",
    "neighbors_of",
    "resolve_encoder",
]


def load_encoder(name: str, modality: Modality, *, store: object = None, seed: int = 0) -> Encoder:
    """Resolve and load an encoder by name (``modality`` is ``text`` or ``image``); ``hashed`` needs a store."""
    from procbench.store import Store

    if modality not in ("text", "image"):
        raise ValueError(f"modality must be 'text' or 'image', not {modality!r}")
    spec = resolve_encoder(name, modality)
    return spec.load(store=store if isinstance(store, Store) else None, seed=seed)
