"""Low-level image statistics a shortcut can read off photos without understanding them.

Two families, computed from the image files themselves (not from an encoder's embedding):

* **Colour and layout statistics** (:func:`colour_layout_stats`): per-channel mean and standard deviation of
  the RGB pixels, a per-channel intensity histogram (:data:`HIST_BINS` bins) and the mean of each channel in a
  coarse :data:`GRID` x :data:`GRID` layout grid. Two photos taken under the same light or on the same desk
  share these even when they show different things (Swain & Ballard 1991, "Color indexing", for the
  histogram; the grid means are the "tiny image" layout of Torralba et al. 2008, "80 million tiny images").
* **Near-duplicate signatures** (:func:`near_duplicate_signature`): a difference hash (dHash: the sign of
  horizontal gradients of an ``(HASH_SIDE) x (HASH_SIDE + 1)`` greyscale thumbnail, Krawetz 2013, "Kind of
  like that") and a mean-centred, unit-norm :data:`THUMB_SIDE` x :data:`THUMB_SIDE` greyscale thumbnail.
  A re-crop or re-encode of a photo keeps a small dHash Hamming distance and a high thumbnail correlation.

:class:`ImageStats` reads a set of image files once and serves both, by key; :func:`near_duplicate_similarity`
compares signatures. Constants live here, in one place.

The two image probes (:data:`IMAGE_PROBES`: ``colour_layout`` and ``near_duplicate``) are defined here once, for
the audit (:mod:`procbench.audit.probes.image`) and the visual adversarial filter
(:mod:`procbench.generate.visual.probes`) alike: each choice's :data:`RELATIONS` to its reference images
(:func:`choice_relations`), the probe's per-choice features of them (:func:`probe_features`) and its model
(:func:`probe_model`, a linear SVM; the highest-scoring choice is the probe's answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "GRID",
    "HASH_SIDE",
    "HIST_BINS",
    "IMAGE_PROBES",
    "RELATIONS",
    "STATS_SIDE",
    "THUMB_SIDE",
    "ImageStats",
    "choice_relations",
    "colour_layout_stats",
    "near_duplicate_signature",
    "near_duplicate_similarity",
    "probe_features",
    "probe_model",
    "stats_names",
]

#: Side (pixels) an image is resized to before its colour and layout statistics are taken.
STATS_SIDE = 64
#: Bins of each channel's intensity histogram.
HIST_BINS = 8
#: Cells per side of the coarse layout grid (each cell: the mean of each channel).
GRID = 3
#: dHash thumbnail height; its width is one more (HASH_SIDE**2 bits).
HASH_SIDE = 8
#: Side of the greyscale thumbnail compared by correlation.
THUMB_SIDE = 16

#: A choice's relations to its reference images (:func:`choice_relations`): its distance, in standardised colour
#: and layout statistics, to the reference images' mean and to the nearest one; its highest dHash agreement and
#: highest thumbnail correlation with any of them.
RELATIONS = ("colour_mean_distance", "colour_nearest_distance", "hash_agreement", "thumb_correlation")
#: The image probes: name -> the relations its model reads, each with the sign of its one-relation rule (+1: "the
#: answer is the choice with the highest value"; -1: the lowest).
IMAGE_PROBES: dict[str, dict[str, int]] = {
    "colour_layout": {"colour_mean_distance": -1, "colour_nearest_distance": -1},
    "near_duplicate": {"hash_agreement": 1, "thumb_correlation": 1},
}
#: The image probes' linear SVM's regularisation.
PROBE_C = 1.0


def stats_names() -> list[str]:
    """Names of the :func:`colour_layout_stats` features, in order."""
    channels = "rgb"
    names = [f"mean_{c}" for c in channels] + [f"std_{c}" for c in channels]
    names += [f"hist_{c}_{b}" for c in channels for b in range(HIST_BINS)]
    names += [f"grid_{r}{q}_{c}" for r in range(GRID) for q in range(GRID) for c in channels]
    return names


def _rgb(image: object) -> np.ndarray:
    from PIL import Image

    assert isinstance(image, Image.Image)
    small = image.convert("RGB").resize((STATS_SIDE, STATS_SIDE), Image.Resampling.BILINEAR)
    return np.asarray(small, dtype=np.float64) / 255.0


def colour_layout_stats(image: object) -> np.ndarray:
    """``(6 + 3*HIST_BINS + 3*GRID**2,)`` float64 colour and layout statistics of a PIL image, in [0, 1]:
    channel means, channel standard deviations, per-channel histograms (shares) and the grid's channel means
    (see :func:`stats_names`)."""
    pixels = _rgb(image)  # (S, S, 3)
    flat = pixels.reshape(-1, 3)
    hist = [np.histogram(flat[:, c], bins=HIST_BINS, range=(0.0, 1.0))[0] / len(flat) for c in range(3)]
    edges = np.linspace(0, STATS_SIDE, GRID + 1).astype(int)
    grid = [
        pixels[edges[r] : edges[r + 1], edges[q] : edges[q + 1]].reshape(-1, 3).mean(axis=0)
        for r in range(GRID)
        for q in range(GRID)
    ]
    return np.concatenate([flat.mean(axis=0), flat.std(axis=0), *hist, *grid])


def near_duplicate_signature(image: object) -> tuple[np.ndarray, np.ndarray]:
    """``(bits (HASH_SIDE**2,) bool, thumb (THUMB_SIDE**2,) float64)``: the dHash bits and the mean-centred
    unit-norm greyscale thumbnail of a PIL image."""
    from PIL import Image

    assert isinstance(image, Image.Image)
    grey = image.convert("L")
    small = np.asarray(grey.resize((HASH_SIDE + 1, HASH_SIDE), Image.Resampling.BILINEAR), dtype=np.float64)
    bits = (small[:, 1:] > small[:, :-1]).reshape(-1)
    thumb = np.asarray(grey.resize((THUMB_SIDE, THUMB_SIDE), Image.Resampling.BILINEAR), dtype=np.float64)
    thumb = thumb.reshape(-1) - thumb.mean()
    norm = float(np.linalg.norm(thumb))
    return bits, thumb / norm if norm > 1e-9 else thumb


def near_duplicate_similarity(
    bits_a: np.ndarray, thumb_a: np.ndarray, bits_b: np.ndarray, thumb_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise similarities of two signature batches ``(a, ...)`` and ``(b, ...)``: ``(a, b)`` dHash
    agreement (1 - Hamming distance / bits: 1 for identical hashes, ~0.5 for unrelated photos) and ``(a, b)``
    thumbnail correlation (in [-1, 1])."""
    a = bits_a.astype(np.float64)
    b = bits_b.astype(np.float64)
    agree = (a @ b.T + (1 - a) @ (1 - b).T) / max(a.shape[1], 1)
    return agree, thumb_a @ thumb_b.T


#: Per image file (path, modification time, size): its row of :class:`ImageStats` (:meth:`ImageStats.read_cached`).
_ROWS: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_ROWS_KEPT = 50_000


@dataclass
class ImageStats:
    """Statistics of the images of ``keys`` (``(u, ...)`` arrays in key order; ``found[i]`` False where the
    file could not be read, with zero rows).

    Attributes:
        keys: image keys (store image ids or file paths).
        stats: ``(u, F)`` :func:`colour_layout_stats`.
        bits: ``(u, HASH_SIDE**2)`` dHash bits.
        thumbs: ``(u, THUMB_SIDE**2)`` normalised thumbnails.
        found: ``(u,)`` which images were read.
    """

    keys: list[str]
    stats: np.ndarray
    bits: np.ndarray
    thumbs: np.ndarray
    found: np.ndarray

    @classmethod
    def read(cls, keys: Sequence[str], locate: Callable[[str], Path | None]) -> ImageStats:
        """Read every image ``locate(key)`` points at (None, a missing or an unreadable file: not found)."""
        from PIL import Image, UnidentifiedImageError

        n_stats = len(stats_names())
        stats = np.zeros((len(keys), n_stats))
        bits = np.zeros((len(keys), HASH_SIDE * HASH_SIDE), dtype=bool)
        thumbs = np.zeros((len(keys), THUMB_SIDE * THUMB_SIDE))
        found = np.zeros(len(keys), dtype=bool)
        for i, key in enumerate(keys):
            path = locate(key)
            if path is None or not path.is_file():
                continue
            try:
                with Image.open(path) as image:
                    image.load()
                    stats[i] = colour_layout_stats(image)
                    bits[i], thumbs[i] = near_duplicate_signature(image)
            except (OSError, UnidentifiedImageError, ValueError):
                continue
            found[i] = True
        return cls(list(keys), stats, bits, thumbs, found)

    @classmethod
    def read_cached(cls, keys: Sequence[str], locate: Callable[[str], Path | None]) -> ImageStats:
        """:meth:`read`, reading only the image files not read before in this process (unchanged since: same
        path, modification time and size). An audit of a sweep, or a sweep's settings, read the same photos."""
        paths = [locate(key) for key in keys]
        ids: list[tuple[str, int, int] | None] = []
        for path in paths:
            try:
                info = path.stat() if path is not None else None
            except OSError:
                info = None
            ids.append((str(path), info.st_mtime_ns, info.st_size) if info is not None else None)
        todo = [i for i, key in enumerate(ids) if key is None or key not in _ROWS]
        fresh = cls.read([str(i) for i in todo], lambda i: paths[int(i)])
        out = cls(
            list(keys),
            np.zeros((len(keys), fresh.stats.shape[1])),
            np.zeros((len(keys), fresh.bits.shape[1]), dtype=bool),
            np.zeros((len(keys), fresh.thumbs.shape[1])),
            np.zeros(len(keys), dtype=bool),
        )
        out.stats[todo], out.bits[todo], out.thumbs[todo], out.found[todo] = (
            fresh.stats, fresh.bits, fresh.thumbs, fresh.found,
        )  # fmt: skip
        fresh_rows = set(todo)
        for i, key in enumerate(ids):
            if i not in fresh_rows and key is not None:
                out.stats[i], out.bits[i], out.thumbs[i] = _ROWS[key]
                out.found[i] = True
        if len(_ROWS) + len(todo) > _ROWS_KEPT:
            _ROWS.clear()
        for j, i in enumerate(todo):
            key = ids[i]
            if key is not None and fresh.found[j]:
                _ROWS[key] = (fresh.stats[j].copy(), fresh.bits[j].copy(), fresh.thumbs[j].copy())
        return out

    def standardised(self) -> np.ndarray:
        """``(u, F)`` :attr:`stats` standardised over the found images (unit variance per feature), so no
        feature family dominates a Euclidean distance by its scale."""
        out = np.zeros_like(self.stats)
        if self.found.any():
            rows = self.stats[self.found]
            out[self.found] = (rows - rows.mean(axis=0)) / (rows.std(axis=0) + 1e-6)
        return out


def choice_relations(
    z: np.ndarray, bits: np.ndarray, thumbs: np.ndarray, choices: np.ndarray, refs: np.ndarray | None
) -> np.ndarray:
    """``(Q, C, len(RELATIONS))`` each choice's :data:`RELATIONS` to its reference images.

    Args:
        z: ``(u, F)`` standardised colour and layout statistics (:meth:`ImageStats.standardised`).
        bits: ``(u, B)`` dHash bits (bool or 0/1 floats); thumbs: ``(u, T)`` normalised thumbnails.
        choices: ``(Q, C)`` rows of ``z`` (-1: no image, or an unread one).
        refs: ``(Q, L)`` rows of each question's reference images (-1: none); None: each choice's reference
            images are the question's other choices (a question that shows no image, visual coherence).

    NaN where the choice has no image or no reference image.
    """
    ok_c = choices >= 0
    ci = np.maximum(choices, 0)
    if refs is None:
        ri, ok_r = ci, ok_c
    else:
        ri, ok_r = np.maximum(refs, 0), refs >= 0
    pair = ok_c[:, :, None] & ok_r[:, None, :]  # (Q, C, L)
    if refs is None:
        pair &= ~np.eye(choices.shape[1], dtype=bool)[None]
    zc, zr = z[ci], z[ri]  # (Q, C, F), (Q, L, F)
    dist = np.linalg.norm(zc[:, :, None, :] - zr[:, None, :, :], axis=3)
    n_ref = pair.sum(axis=2)
    ref_mean = np.einsum("qcl,qlf->qcf", pair.astype(np.float64), zr) / np.maximum(n_ref, 1)[:, :, None]
    b = np.asarray(bits, dtype=np.float64)
    bc, br = b[ci], b[ri]
    agree = (np.einsum("qcb,qlb->qcl", bc, br) + np.einsum("qcb,qlb->qcl", 1 - bc, 1 - br)) / max(b.shape[1], 1)
    corr = np.einsum("qcb,qlb->qcl", thumbs[ci], thumbs[ri])
    if refs is None:  # exactly symmetric: two choices that are each other's nearest copy tie, whatever the sum order
        corr = (corr + corr.transpose(0, 2, 1)) / 2
    out = np.stack(
        [
            np.linalg.norm(zc - ref_mean, axis=2),
            np.where(pair, dist, np.inf).min(axis=2, initial=np.inf),
            np.where(pair, agree, -np.inf).max(axis=2, initial=-np.inf),
            np.where(pair, corr, -np.inf).max(axis=2, initial=-np.inf),
        ],
        axis=2,
    )
    return np.where((n_ref > 0)[:, :, None], out, np.nan)


def probe_features(relations: np.ndarray, valid: np.ndarray, probe: str) -> np.ndarray:
    """``(Q, C, F)`` image probe ``probe``'s (:data:`IMAGE_PROBES`) per-choice features of ``relations (Q, C,
    len(RELATIONS))``: for each relation it reads, the audit's distance features (the value minus the question's
    mean, its square, its within-question z-score and its within-question rank one-hot;
    :func:`procbench.audit.probes.distance.distance_features`). NaN values count as missing."""
    from procbench.audit.probes.distance import distance_features

    return np.concatenate(
        [distance_features(relations[:, :, RELATIONS.index(name)], valid) for name in IMAGE_PROBES[probe]], axis=2
    )


def probe_model(seed: int) -> object:
    """A fresh image-probe model: standardised features, linear SVM (a binary "answer or not" per choice; the
    choice with the highest decision value is the probe's answer)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return make_pipeline(StandardScaler(), LinearSVC(C=PROBE_C, dual=False, random_state=seed))
