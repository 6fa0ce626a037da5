"""The procbench store: Parquet tables, content-addressed images, a provenance log (DESIGN §3).

>>> from procbench.store import Store
>>> store = Store.open("procbench-store", create=True)      # doctest: +SKIP
>>> steps = store.table("steps", ["procedure_id", "text"])    # doctest: +SKIP
"""

from __future__ import annotations

from procbench.store._store import FORMAT_VERSION, Store, is_image_id
from procbench.store.images import BadImage, NormalisedImage, normalise_image
from procbench.store.schema import IMAGES, PROCEDURES, SCHEMA_VERSION, STEPS, conform
from procbench.store.transaction import Transaction

__all__ = [
    "FORMAT_VERSION",
    "IMAGES",
    "PROCEDURES",
    "SCHEMA_VERSION",
    "STEPS",
    "BadImage",
    "NormalisedImage",
    "Store",
    "Transaction",
    "conform",
    "is_image_id",
    "normalise_image",
]
