"""Item vectors for sets: the store's frozen embeddings, or computed for sets that have no store (the
``hashed`` text encoder fitted on the set's own texts, the ``colour-layout`` descriptor for image files).

Each returns ``(lookup, encoder description)`` or raises :class:`NotApplicable` saying why there are none.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from procbench.audit.auditset import ArrayVectors, NotApplicable, VectorLookup
from procbench.errors import BadInput, ProcbenchError
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.store import Store

__all__ = ["fitted_text_vectors", "image_vectors", "store_vectors"]


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (links resolved) lies inside ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def store_vectors(store: Store, fieldname: str) -> tuple[VectorLookup, str]:
    """The store's frozen ``fieldname`` embeddings."""
    from procbench.features import ItemVectors

    vectors = ItemVectors(store, fieldname)
    try:
        encoder = vectors.encoder
    except ProcbenchError as exc:
        raise NotApplicable(f"no {fieldname} embeddings in the store ({exc}); run `procbench embed`") from exc
    return vectors, f"{fieldname}.{encoder}"


def fitted_text_vectors(
    items: Iterable[str],
    corpus: Iterable[str],
    *,
    seed: int,
    keys: Iterable[str | None] | None = None,
    extra: Iterable[str] = (),
) -> tuple[VectorLookup, str]:
    """Vectors of ``items`` from the ``hashed`` encoder fitted on ``corpus`` and the items themselves, looked
    up by ``keys`` (aligned with ``items``; default: the items themselves); ``extra`` texts (context steps)
    are embedded too, looked up by their text."""
    from procbench.embed.hashed import HashedParams, HashedTextEncoder

    texts = [str(t) for t in items]
    by_key: dict[str, str] = {}
    for key, text in zip(texts if keys is None else keys, texts, strict=True):
        if key is not None and text != PLACEHOLDER:
            by_key.setdefault(str(key), text)
    fitted_on = sorted(set(by_key.values()))
    for text in extra:
        by_key.setdefault(str(text), str(text))
    unique = sorted(set(by_key.values()))
    try:
        encoder = HashedTextEncoder.fit(
            [*corpus, *fitted_on], params=HashedParams(dim=128, sample_size=30_000, seed=seed)
        )
    except BadInput as exc:
        raise NotApplicable(f"cannot fit a text encoder on this set: {exc}") from exc
    matrix = encoder.encode(unique, batch_size=4096)
    row = {text: i for i, text in enumerate(unique)}
    rows = np.array([row[text] for text in by_key.values()], dtype=np.int64)
    vectors = ArrayVectors(list(by_key), matrix[rows] if len(rows) else matrix, encoder="hashed")
    return vectors, f"hashed (fitted on the set, {encoder.dim}-d)"


def image_vectors(
    names: list[str], *, store: Store | None, images: Path | None, base: Path
) -> tuple[VectorLookup, str]:
    """Vectors of image names: the store's image embeddings by id (the file stem), else the files themselves."""
    unique = sorted(set(names))
    matrix = np.zeros((0, 0), dtype=np.float32)
    found = np.zeros(len(unique), dtype=bool)
    encoders = []
    if store is not None:
        try:
            lookup, encoder = store_vectors(store, "image")
        except NotApplicable:
            pass
        else:
            matrix = np.asarray(lookup.get([Path(n).stem for n in unique]), dtype=np.float32)
            found = np.linalg.norm(matrix, axis=1) > 0
            encoders.append(encoder)
    roots = [images] if images is not None else [base, base / "images"]
    if store is not None:
        roots.append(store.root / "images")
    todo = [i for i in range(len(unique)) if not found[i]]
    files = {}
    for i in todo:
        for root in roots:
            # a name must stay inside its folder (``../../x.jpg`` is not opened)
            if root is not None and (root / unique[i]).is_file() and _inside(root / unique[i], root):
                files[i] = root / unique[i]
                break
    if files:
        from procbench.embed.colour import ColourLayoutEncoder
        from procbench.store.append import read_image_file
        from procbench.store.images import BadImage, decode_image

        colour = ColourLayoutEncoder()
        if matrix.shape[1] not in (0, colour.dim):
            if not found.any():
                raise NotApplicable("image embeddings and files disagree in dimension")
            return ArrayVectors(unique, matrix, encoder=encoders[0]), encoders[0]
        if matrix.shape[1] == 0:
            matrix = np.zeros((len(unique), colour.dim), dtype=np.float32)
        for i, path in files.items():
            try:  # ingest's checks: regular files under the size cap, decompression bombs refused
                matrix[i] = colour.encode([decode_image(read_image_file(path))], batch_size=1)[0]
            except (OSError, BadImage):
                continue
        encoders.append("colour-layout (image files)")
    if not matrix.size or not np.linalg.norm(matrix, axis=1).any():
        where = str(images) if images is not None else f"{base} or {base / 'images'}"
        raise NotApplicable(
            f"no image embeddings: the images are neither in a store (--store) nor under {where} (--images)"
        )
    return ArrayVectors(unique, matrix, encoder=" + ".join(encoders)), " + ".join(encoders)
