"""``hashed``: a model-free text encoder fitted on the store's own texts (the papers' dataset-trained Word2Vec
analogue, without downloads).

Word uni- and bigrams are hashed (scikit-learn's ``HashingVectorizer``, English stop words removed), the
most frequent hashed features get sublinear TF-IDF weights, and a truncated SVD (LSA) maps them to at most
``dim`` dimensions. The fit uses a sample of at most ``sample_size`` distinct texts chosen by a seeded
hash (so it does not depend on row order) and is deterministic under the seed. It is saved in the store
(``embeddings/models/hashed.npz``) and reused by later runs, so new texts land in the same space and
only they are embedded; ``refit=True`` (``procbench embed --refit``) fits again on the current texts.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from procbench.embed.base import Encoder, Modality, l2_normalise
from procbench.errors import BadInput

if TYPE_CHECKING:
    from procbench.embed.registry import EncoderSpec
    from procbench.store import Store, Transaction

__all__ = ["MODEL_PATH", "HashedParams", "HashedTextEncoder", "load"]

#: Where the fitted model lives inside a store.
MODEL_PATH = "embeddings/models/hashed.npz"
_FORMAT = "procbench-hashed/1"


@dataclass(frozen=True)
class HashedParams:
    """Everything that determines a hashed fit besides the texts."""

    dim: int = 256
    n_features: int = 2**20
    max_features: int = 32768
    sample_size: int = 100_000
    seed: int = 0


def _vectorizer(params: HashedParams) -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        n_features=params.n_features,
        alternate_sign=False,
        norm=None,
        ngram_range=(1, 2),
        stop_words="english",
        dtype=np.float32,
    )


def _select_columns(matrix: Any, columns: np.ndarray, n_features: int) -> Any:
    """``matrix[:, columns]`` for a CSR matrix and sorted ``columns``, in O(nnz)."""
    from scipy import sparse

    remap = np.full(n_features, -1, dtype=np.int64)
    remap[columns] = np.arange(len(columns))
    new = remap[matrix.indices]
    keep = new >= 0
    row_of = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))[keep]
    indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=matrix.shape[0]), out=indptr[1:])
    return sparse.csr_matrix((matrix.data[keep], new[keep], indptr), shape=(matrix.shape[0], len(columns)))


def _sample_texts(texts: Iterable[str], size: int, seed: int) -> list[str]:
    """The ``size`` distinct non-empty texts with the smallest seeded hashes (independent of order)."""
    salt = seed.to_bytes(8, "little", signed=True)
    best: dict[int, str] = {}
    threshold = None
    for text in texts:
        if not text or not text.strip():
            continue
        key = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, salt=salt[:8]).digest(), "big")
        if key in best or (threshold is not None and key >= threshold):
            continue
        best[key] = text
        if len(best) > 2 * size:
            kept = sorted(best)[:size]
            best = {k: best[k] for k in kept}
            threshold = kept[-1]
    return [best[k] for k in sorted(best)[:size]]


class HashedTextEncoder(Encoder):
    """A fitted hashed TF-IDF + SVD text encoder (see the module docstring)."""

    modality: ClassVar[Modality] = "text"
    default_batch_size = 4096

    def __init__(
        self, params: HashedParams, columns: np.ndarray, idf: np.ndarray, components: np.ndarray, *, n_fit: int
    ) -> None:
        self.params = params
        self.columns = np.asarray(columns, dtype=np.int64)
        self.idf = np.asarray(idf, dtype=np.float32)
        self.components = np.ascontiguousarray(components, dtype=np.float32)
        self.n_fit = n_fit
        self.name = "hashed"
        self.slug = "hashed"
        self.dim = int(self.components.shape[0])
        self.packages = ("scikit-learn", "scipy")
        digest = hashlib.sha256(json.dumps(asdict(params), sort_keys=True).encode("utf-8"))
        for array in (self.columns, self.idf, self.components):
            digest.update(array.tobytes())
        self.revision = digest.hexdigest()[:16]
        self.description = (
            f"hashed word 1-2-grams, TF-IDF over {len(self.columns)} features, SVD to {self.dim}-d, "
            f"fitted on {n_fit} texts (seed {params.seed})"
        )
        self._pending_save = False
        self._hv: Any = None

    # -- fitting -----------------------------------------------------------------------------------------
    @classmethod
    def fit(cls, texts: Iterable[str], *, params: HashedParams | None = None) -> HashedTextEncoder:
        """Fit on (a seeded sample of the distinct texts of) ``texts``.

        Raises:
            BadInput: fewer than 3 distinct texts with words to fit on.
        """
        from sklearn.decomposition import TruncatedSVD
        from sklearn.preprocessing import normalize
        from threadpoolctl import threadpool_limits

        params = params or HashedParams()
        sample = _sample_texts(texts, params.sample_size, params.seed)
        matrix = _vectorizer(params).transform(sample).tocsr()
        df = np.bincount(matrix.indices, minlength=params.n_features)
        min_df = 2 if len(sample) >= 1000 else 1
        candidates = np.flatnonzero(df >= min_df)
        if len(candidates) > params.max_features:
            order = np.lexsort((candidates, -df[candidates]))  # most frequent first, ties by column
            candidates = np.sort(candidates[order[: params.max_features]])
        n_components = min(params.dim, len(candidates) - 1, len(sample) - 1)
        if n_components < 2:
            raise BadInput(
                f"the hashed text encoder needs at least 3 distinct texts with words to fit on; "
                f"this store has {len(sample)}"
            )
        selected = _select_columns(matrix, candidates, params.n_features)
        selected.data = 1.0 + np.log(selected.data)
        idf = (np.log((1.0 + len(sample)) / (1.0 + df[candidates])) + 1.0).astype(np.float32)
        weighted = normalize(selected.multiply(idf[None, :]).tocsr())
        svd = TruncatedSVD(n_components=n_components, algorithm="randomized", n_iter=7, random_state=params.seed)
        # one BLAS thread: the same bytes on any machine, and no threads spinning against each other on a busy one
        # (3 fits: 22 s with two threads at load 4.5, 2.4 s with one)
        with threadpool_limits(limits=1):
            svd.fit(weighted)
        return cls(params, candidates, idf, svd.components_, n_fit=len(sample))

    # -- encoding ----------------------------------------------------------------------------------------
    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Hash, weight and project ``inputs``; texts with no known feature get an all-zero vector."""
        if self._hv is None:
            self._hv = _vectorizer(self.params)
        out = np.empty((len(inputs), self.dim), dtype=np.float32)
        for start in range(0, len(inputs), max(1, batch_size)):
            chunk = [str(t) for t in inputs[start : start + batch_size]]
            matrix = _select_columns(self._hv.transform(chunk).tocsr(), self.columns, self.params.n_features)
            matrix.data = 1.0 + np.log(matrix.data)
            weighted = matrix.multiply(self.idf[None, :]).tocsr()
            out[start : start + len(chunk)] = np.asarray(weighted @ self.components.T, dtype=np.float32)
        return l2_normalise(out)

    # -- persistence -------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The fitted model as ``.npz`` bytes (no pickles)."""
        meta = json.dumps({"format": _FORMAT, "params": asdict(self.params), "n_fit": self.n_fit}, sort_keys=True)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            meta=np.frombuffer(meta.encode("utf-8"), dtype=np.uint8),
            columns=self.columns,
            idf=self.idf,
            components=self.components,
        )
        return buffer.getvalue()

    @classmethod
    def load(cls, path: str | Path) -> HashedTextEncoder:
        """Read a model written by :meth:`to_bytes`."""
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode("utf-8"))
            if meta.get("format") != _FORMAT:
                raise BadInput(f"{path} is not a procbench hashed-encoder model")
            return cls(
                HashedParams(**meta["params"]),
                data["columns"],
                data["idf"],
                data["components"],
                n_fit=int(meta["n_fit"]),
            )

    def stage_artifacts(self, store: Store, txn: Transaction) -> list[str]:
        """Write a newly fitted model into the store with the embeddings that use it."""
        if not self._pending_save:
            return []
        txn.stage(MODEL_PATH).write_bytes(self.to_bytes())
        return [MODEL_PATH]


def load(
    spec: EncoderSpec,
    *,
    store: Store | None = None,
    seed: int = 0,
    refit: bool = False,
    params: HashedParams | None = None,
) -> Encoder:
    """The store's fitted hashed encoder, fitting it on the store's texts first when needed.

    The saved fit is reused unless ``refit`` is set or it was made with other parameters (e.g. another seed).
    """
    if store is None:
        raise BadInput("the hashed text encoder is fitted on a store's texts; pass a store")
    wanted = params or HashedParams(seed=seed)
    path = store.root / MODEL_PATH
    if path.is_file() and not refit:
        existing = HashedTextEncoder.load(path)
        if existing.params == wanted:
            return existing
    from procbench.embed.fields import corpus_texts

    encoder = HashedTextEncoder.fit(corpus_texts(store), params=wanted)
    encoder._pending_save = True
    return encoder
