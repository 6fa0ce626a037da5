"""``procbench export``: question sets as a self-contained Hugging Face dataset (parquet with inlined texts and
embedded images, a dataset card and Croissant metadata), optionally pushed to the Hub."""

from __future__ import annotations

from procbench.export.hf import EXPORT_FIELDS, ExportResult, export_sets, features, push_to_hub

__all__ = ["EXPORT_FIELDS", "ExportResult", "export_sets", "features", "push_to_hub"]
