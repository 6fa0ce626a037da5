"""What gets embedded: the rows of each field, read from the clean columns of kept procedures.

Every field is a table ``key, procedure_id, payload`` in a fixed order. Keys follow DESIGN §6: a step is
``PROCEDURE_ID#INDEX``, a procedure its id, an image its id. ``payload`` is the text to embed, or the
image id for images. Empty texts (e.g. steps without a headline), images whose bytes are not stored and
images under :data:`MIN_IMAGE_SIDE` pixels on a side (icons, bullets, spacers: :func:`small_images` says
which, and ``embed`` reports them) are left out; a step whose only image is left out has no image in the
visual tasks' sequences. ``step_first_sentence`` is the first sentence of each step text (:mod:`procbench.sentences`),
what ``generate --task textual-cloze --items first-sentence`` shows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.errors import BadInput
from procbench.sentences import first_sentence
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps

__all__ = [
    "DEFAULT_FIELDS",
    "FIELDS",
    "FIELD_MODALITY",
    "MIN_IMAGE_SIDE",
    "TEXT_FIELDS",
    "content_hashes",
    "corpus_texts",
    "field_table",
    "parse_fields",
    "small_images",
]

#: Stored images narrower or lower than this (pixels) are not embedded: at the report's thumbnail size
#: (about 200 px) they show nothing, and real pages hold such icons, bullets and spacer pixels among photos.
MIN_IMAGE_SIDE = 24

FIELDS = ("step_title", "step_text", "step_first_sentence", "procedure_title", "image", "action")
#: What ``embed`` embeds without ``--fields`` (plus the other fields the store already has embeddings of):
#: ``step_first_sentence`` and ``action`` (``procbench extract``'s tuples) only when asked.
DEFAULT_FIELDS = ("step_title", "step_text", "procedure_title", "image")
TEXT_FIELDS = ("step_title", "step_text", "step_first_sentence", "procedure_title", "action")
#: The fields the ``hashed`` encoder is fitted on (actions are words of the step texts).
_CORPUS_FIELDS = ("step_title", "step_text", "procedure_title")
FIELD_MODALITY: dict[str, Literal["text", "image"]] = {
    "step_title": "text",
    "step_text": "text",
    "step_first_sentence": "text",
    "procedure_title": "text",
    "image": "image",
    "action": "text",
}
HASH_BYTES = 16


def parse_fields(fields: str | Sequence[str] | None) -> tuple[str, ...]:
    """Fields from ``"a,b"`` or ``["a", "b,c"]`` in canonical order; None means :data:`DEFAULT_FIELDS`.

    Raises:
        BadInput: an unknown field name.
    """
    if fields is None:
        return DEFAULT_FIELDS
    items = [fields] if isinstance(fields, str) else list(fields)
    names = {part.strip().replace("-", "_") for item in items for part in item.split(",") if part.strip()}
    unknown = sorted(names - set(FIELDS))
    if unknown:
        raise BadInput(f"unknown field(s) {', '.join(unknown)}; choose from {', '.join(FIELDS)}")
    if not names:
        raise BadInput(f"no field to embed; choose from {', '.join(FIELDS)}")
    return tuple(f for f in FIELDS if f in names)


def _non_empty(table: pa.Table) -> pa.Table:
    payload = table["payload"]
    mask = pc.and_(pc.is_valid(payload), pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(payload)), 0))
    return table.filter(pc.fill_null(mask, False))


def field_table(store: Store, field: str) -> pa.Table:
    """The rows of ``field``: ``key`` (string), ``procedure_id`` (string), ``payload`` (string)."""
    if field in ("step_title", "step_text", "step_first_sentence"):
        column = "title" if field == "step_title" else "text"
        steps = kept_steps(store, ["procedure_id", "index", column])
        keys = pc.binary_join_element_wise(steps["procedure_id"], pc.cast(steps["index"], pa.string()), "#")
        payload = steps[column]
        if field == "step_first_sentence":
            payload = pa.array([first_sentence(text) for text in payload.to_pylist()], pa.string())
        table = pa.table({"key": keys, "procedure_id": steps["procedure_id"], "payload": payload})
        return _non_empty(table)
    if field == "procedure_title":
        column = "title_clean" if "title_clean" in store.columns("procedures") else "title"
        procs = kept_procedures(store, ["id", column]).sort_by("id")
        return _non_empty(pa.table({"key": procs["id"], "procedure_id": procs["id"], "payload": procs[column]}))
    if field == "action":  # a step's action tuple as text (after `procbench extract`; empty before)
        from procbench.extract.pipeline import step_actions

        return _non_empty(step_actions(store).select(["key", "procedure_id", "payload"]))
    if field == "image":
        images = _stored_images(store)
        images = images.filter(pc.invert(_small(images)))
        grouped = images.group_by("id").aggregate([("procedure_id", "min")]).sort_by("id")
        ids = grouped["id"].cast(pa.string())
        return pa.table({"key": ids, "procedure_id": grouped["procedure_id_min"].cast(pa.string()), "payload": ids})
    raise BadInput(f"unknown field {field!r}; choose from {', '.join(FIELDS)}")


def _stored_images(store: Store) -> pa.Table:
    """The stored images of kept procedures: ``id``, ``procedure_id``, ``width``, ``height``."""
    kept = kept_procedures(store, ["id"])["id"]
    images = store.table("images", ["id", "procedure_id", "stored", "width", "height"])
    return images.filter(
        pc.and_(pc.fill_null(images["stored"], False), pc.is_in(images["procedure_id"], value_set=kept))
    )


def _small(images: pa.Table) -> pa.ChunkedArray:
    side = pc.min_element_wise(images["width"], images["height"])
    return pc.fill_null(pc.less(side, MIN_IMAGE_SIDE), False)  # a size not recorded: kept


def small_images(store: Store) -> list[tuple[str, str]]:
    """``(image id, why)`` of the stored images of kept procedures that the image field leaves out: under
    :data:`MIN_IMAGE_SIDE` pixels on a side."""
    images = _stored_images(store)
    small = images.filter(_small(images)).group_by(["id", "width", "height"]).aggregate([]).sort_by("id")
    return [
        (row["id"], f"{row['width']}x{row['height']} pixels, under {MIN_IMAGE_SIDE} on a side (an icon or spacer, "
         "not a photo): left out of the visual tasks")
        for row in small.to_pylist()
    ]  # fmt: skip


def content_hashes(payload: pa.ChunkedArray | pa.Array, field: str, *, chunk: int = 65536) -> np.ndarray:
    """``(n,)`` ``S16`` array: the first 16 bytes of the sha256 of each text (utf-8), or of each image id's bytes."""
    out = np.empty(len(payload), dtype=f"S{HASH_BYTES}")
    position = 0
    for start in range(0, len(payload), chunk):
        values = payload.slice(start, chunk).to_pylist()
        if field == "image":
            digests = [bytes.fromhex(v)[:HASH_BYTES] for v in values]
        else:
            digests = [hashlib.sha256(v.encode("utf-8")).digest()[:HASH_BYTES] for v in values]
        out[position : position + len(digests)] = digests
        position += len(digests)
    return out


def corpus_texts(store: Store) -> Iterator[str]:
    """Every text of the text fields (what the ``hashed`` encoder is fitted on)."""
    for field in _CORPUS_FIELDS:
        payload = field_table(store, field)["payload"]
        for start in range(0, len(payload), 65536):
            yield from payload.slice(start, 65536).to_pylist()
