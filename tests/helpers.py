"""Helper functions shared by test modules (``from helpers import ...``; fixtures live in ``conftest.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["make_record", "write_jsonl"]


def make_record(slug: str, n_steps: int = 5, **extra: Any) -> dict[str, Any]:
    """An import record (DESIGN §4) with distinct, recognisable step texts."""
    record: dict[str, Any] = {
        "source": "test",
        "id": slug,
        "title": f"How to {slug.replace('-', ' ')}",
        "category": ["Hobbies and Crafts", "Woodworking"],
        "url": f"https://example.org/{slug}",
        "license": "CC0-1.0",
        "steps": [{"title": f"{slug} step {i}.", "text": f"Do part {i} of {slug} carefully."} for i in range(n_steps)],
    }
    record.update(extra)
    return record


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Write records (dicts are JSON-encoded, strings written as they are) one per line."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
