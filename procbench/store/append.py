"""Turn :class:`~procbench.procedure.Procedure` objects into store rows and add them atomically."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from procbench.procedure import Procedure
from procbench.store._store import Store
from procbench.store.images import BadImage, normalise_image, remote_image_id
from procbench.store.schema import IMAGES, PROCEDURES, STEPS
from procbench.store.transaction import Transaction

__all__ = [
    "MAX_IMAGE_BYTES",
    "UNUSABLE_LOCAL_IMAGE",
    "ImageLoader",
    "UnusableLocalImage",
    "ProcedureBatch",
    "add_procedures",
    "append_tables",
    "local_image_loader",
    "read_image_file",
]

log = logging.getLogger(__name__)

#: Returns the bytes behind an image reference, or None when the reference is remote (not fetched here).
#: Raises OSError or BadImage when the reference should resolve but cannot.
ImageLoader = Callable[[str], "bytes | None"]


#: Largest local image file read (the same cap as a downloaded body).
MAX_IMAGE_BYTES = 20 * 2**20


#: What a local image reference that cannot be used gives, whatever the reason (missing, not a regular file,
#: too large, not an image): one message, so an import cannot probe which files exist.
UNUSABLE_LOCAL_IMAGE = "no usable image file at this path (missing, unreadable or not an image)"


class UnusableLocalImage(BadImage):
    """A local image reference that names no usable image file (the one message of every such case)."""

    def __init__(self) -> None:
        super().__init__(UNUSABLE_LOCAL_IMAGE)


def local_image_loader(
    base_dir: Path, *, missing_ok: bool = False, confine: bool = False, roots: Sequence[Path] | None = None
) -> ImageLoader:
    """Load local image files (relative paths against ``base_dir``); URLs are left remote.

    Only regular files of at most :data:`MAX_IMAGE_BYTES` are read (never a device such as ``/dev/zero``
    or a FIFO). With ``confine`` a reference must stay inside ``base_dir`` or one of ``roots`` (``../x.jpg``,
    absolute paths and links elsewhere fail, before the file is looked at). With ``missing_ok`` a file that
    does not exist is kept as a reference instead of failing. Every other failure to read a local file is
    :class:`UnusableLocalImage`, one message whether the file is missing or is not an image.
    """
    allowed = [base_dir.resolve(), *(Path(r).resolve() for r in roots or ())]

    def load(ref: str) -> bytes | None:
        if "://" in ref and not ref.startswith("file://"):
            return None
        path = Path(ref.removeprefix("file://"))
        path = path if path.is_absolute() else base_dir / path
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # a link loop
            raise UnusableLocalImage() from None
        if confine and not any(resolved.is_relative_to(root) for root in allowed):
            raise BadImage("lies outside the file's folder and --images (pass --allow-outside to read it)")
        if missing_ok and not path.exists():
            return None
        try:
            return read_image_file(path)
        except (OSError, BadImage):
            raise UnusableLocalImage() from None

    return load


def read_image_file(path: Path, max_bytes: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (OSError or BadImage otherwise)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadImage(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise BadImage(f"{path} is larger than {max_bytes} bytes")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise BadImage(f"{path} is larger than {max_bytes} bytes")
    return data


@dataclass
class ProcedureBatch:
    """Column buffers for procedures, steps and images, with duplicate ids skipped.

    ``known_ids`` are ids already in the store: procedures with those ids are counted, not added.
    """

    store: Store
    known_ids: set[str]
    image_loader: ImageLoader | None = None
    max_image_side: int = 512
    #: Report every unusable image as :data:`UNUSABLE_LOCAL_IMAGE` (local files: nothing tells whether one exists).
    opaque_image_errors: bool = False
    added: int = 0
    already_present: int = 0
    images_stored: int = 0
    images_remote: int = 0
    image_failures: list[tuple[str, str]] = field(default_factory=list)
    _procedures: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n in PROCEDURES.names})
    _steps: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n in STEPS.names})
    _images: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n in IMAGES.names})
    _image_ids: set[str] = field(default_factory=set)

    def add(self, procedure: Procedure) -> bool:
        """Buffer ``procedure``; False (and counted) when its id is already known."""
        if procedure.id in self.known_ids:
            self.already_present += 1
            return False
        self.known_ids.add(procedure.id)
        p = self._procedures
        p["id"].append(procedure.id)
        p["source"].append(procedure.source)
        p["url"].append(procedure.url)
        p["title"].append(procedure.title)
        p["category"].append(procedure.category)
        p["author"].append(procedure.author)
        p["license"].append(procedure.license)
        p["language"].append(procedure.language)
        p["n_steps"].append(len(procedure.steps))
        p["fetched_at"].append(procedure.fetched_at)
        p["split"].append(procedure.split)
        s = self._steps
        for index, step in enumerate(procedure.steps):
            s["procedure_id"].append(procedure.id)
            s["index"].append(index)
            s["title"].append(step.title)
            s["text"].append(step.text)
            s["image_ids"].append([i for ref in step.images if (i := self._image(ref, procedure.id, index))])
            s["part"].append(step.part)
            s["kind"].append(step.kind)
        self.added += 1
        return True

    def _image(self, ref: str, procedure_id: str, step_index: int) -> str | None:
        try:
            data = self.image_loader(ref) if self.image_loader else None
            if data is None:
                image_id, width, height, stored = remote_image_id(ref), None, None, False
                self.images_remote += 1
            else:
                try:
                    image = normalise_image(data, max_side=self.max_image_side)
                except BadImage:
                    if self.opaque_image_errors:  # a local file's bytes: the same message as a missing file
                        raise UnusableLocalImage() from None
                    raise
                self.store.put_image(image)
                image_id, width, height, stored = image.id, image.width, image.height, True
                self.images_stored += 1
        except (OSError, BadImage) as exc:
            self.image_failures.append((ref, str(exc)))
            log.warning("image %s of %s skipped: %s", ref, procedure_id, exc)
            return None
        if image_id not in self._image_ids:
            self._image_ids.add(image_id)
            row = self._images
            row["id"].append(image_id)
            row["procedure_id"].append(procedure_id)
            row["step_index"].append(step_index)
            row["url"].append(ref)
            row["width"].append(width)
            row["height"].append(height)
            row["stored"].append(stored)
        return image_id

    def tables(self) -> dict[str, pa.Table]:
        """The buffered rows as Arrow tables with the store schemas."""
        return {
            "procedures": pa.table(self._procedures, schema=PROCEDURES),
            "steps": pa.table(self._steps, schema=STEPS),
            "images": pa.table(self._images, schema=IMAGES),
        }


def append_tables(store: Store, txn: Transaction, new: dict[str, pa.Table]) -> None:
    """Stage ``new`` rows after each table's rows (images already in the store are not repeated).

    A part-layout table gains one part; a one-file table is rewritten (:meth:`Transaction.append_table`).
    """
    for name, table in new.items():
        if table.num_rows == 0 and store.has_table(name):
            continue
        if name == "images" and table.num_rows and store.has_table(name):
            known = store.table(name, ["id"])["id"]
            table = table.filter(pc.invert(pc.is_in(table["id"], value_set=known)))
            if table.num_rows == 0:
                continue
        txn.append_table(name, table)


def add_procedures(
    store: Store, txn: Transaction, procedures: Iterable[Procedure], **batch_options: Any
) -> ProcedureBatch:
    """Add ``procedures`` whose ids are new to the store, within ``txn``; returns the batch with its counts."""
    batch = ProcedureBatch(store, set(store.table("procedures", ["id"])["id"].to_pylist()), **batch_options)
    for procedure in procedures:
        batch.add(procedure)
    append_tables(store, txn, batch.tables())
    return batch
