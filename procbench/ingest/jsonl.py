"""The JSONL import format (DESIGN §4): one procedure per line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from procbench.ingest.records import MAX_ID_CHARS, MAX_LINE_BYTES, MAX_STEPS, Problem, unstorable_text
from procbench.procedure import Procedure, Step, procedure_id
from procbench.qsets.splits import SPLITS

__all__ = ["DEFAULT_SOURCE", "parse_procedure", "read_jsonl"]

#: Source name given to records that do not name one.
DEFAULT_SOURCE = "local"


class _Malformed(ValueError):
    pass


def _optional_str(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Malformed(f"{key!r} must be a string")
    return value.strip() or None


def _split(record: dict[str, Any]) -> str | None:
    """The record's ``split``: one of the store's (:data:`~procbench.qsets.splits.SPLITS`) or none."""
    value = _optional_str(record, "split")
    if value is not None and value not in SPLITS:
        raise _Malformed(f"'split' must be one of {', '.join(SPLITS)} (or left out), not {value[:40]!r}")
    return value


def _category(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(">") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise _Malformed("'category' must be a list of strings, root first")


def _fetched_at(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise _Malformed(f"'fetched_at' is not an ISO-8601 time: {str(value)[:40]!r}") from exc
    try:
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except (OverflowError, ValueError) as exc:
        raise _Malformed(f"'fetched_at' is out of range: {str(value)[:40]!r}") from exc


def _step(raw: Any, number: int) -> Step:
    # Exact type checks on purpose: this runs once per step of every import (hot path).
    if type(raw) is not dict:
        raise _Malformed(f"step {number} is not an object")
    text = raw.get("text")
    if text is None:
        text = ""
    elif type(text) is not str:
        raise _Malformed(f"step {number}: 'text' must be a string or null")
    text = text.strip()
    title = raw.get("title")
    if title is not None:
        if type(title) is not str:
            raise _Malformed(f"step {number}: 'title' must be a string or null")
        title = title.strip() or None
    images: list[str] = []
    raw_images = raw.get("images")
    if raw_images:
        if type(raw_images) is not list:
            raise _Malformed(f"step {number}: 'images' must be a list of URLs or paths")
        for ref in raw_images:
            if type(ref) is not str:
                raise _Malformed(f"step {number}: 'images' must be a list of URLs or paths")
            if ref := ref.strip():
                images.append(ref)
    if not (text or title or images):
        raise _Malformed(f"step {number} has no text, title or image")
    return Step(text=text, title=title, images=images)


def parse_procedure(record: Any, *, default_source: str = DEFAULT_SOURCE) -> Procedure:
    """Validate one decoded import record and build its :class:`Procedure`.

    Raises:
        ValueError: the record misses ``title`` or steps, a step has none of text, title and images, or a
            field has the wrong type. A step with a title or an image and empty text is kept (text ``""``):
            ``clean`` decides what the tasks can use.
    """
    if not isinstance(record, dict):
        raise _Malformed("not a JSON object")
    title = _optional_str(record, "title")
    if not title:
        raise _Malformed("missing 'title'")
    raw_steps = record.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise _Malformed("procedure without steps")
    if len(raw_steps) > MAX_STEPS:
        raise _Malformed(f"{len(raw_steps):,} steps, more than the {MAX_STEPS:,} a procedure may have")
    steps = [_step(raw, number) for number, raw in enumerate(raw_steps, 1)]
    source = _optional_str(record, "source") or default_source
    url = _optional_str(record, "url")
    raw_id = record.get("id")
    if raw_id is not None and (not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool)):
        raise _Malformed("'id' must be a string")
    if raw_id is not None and len(str(raw_id)) > MAX_ID_CHARS:
        raise _Malformed(f"'id' is longer than {MAX_ID_CHARS} characters")
    return Procedure(
        id=procedure_id(source, slug=str(raw_id) if raw_id is not None else None, url=url, title=title),
        source=source,
        title=title,
        steps=steps,
        url=url,
        category=_category(record.get("category")),
        author=_optional_str(record, "author"),
        license=_optional_str(record, "license"),
        language=_optional_str(record, "language"),
        fetched_at=_fetched_at(record.get("fetched_at")),
        split=_split(record),
    )


def _lines(fh: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes | None, int]]:
    """``(number, line, size)`` per line of ``fh``; ``line`` is None for one longer than ``max_bytes`` (read in
    chunks of at most ``max_bytes`` and dropped, so memory stays bounded by the cap whatever the line)."""
    number = 0
    while True:
        line = fh.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) <= max_bytes:
            yield number, line, len(line)
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = fh.readline(max_bytes + 1)
            if not line:
                break
            size += len(line)
        yield number, None, size


def read_jsonl(
    path: Path, *, on_bytes: Callable[[int], None] | None = None, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[str, Procedure | Problem]]:
    """Yield ``(where, record)``: a :class:`Procedure` per valid line of ``path``, a :class:`Problem` per bad one.

    Blank lines are ignored. ``on_bytes`` is told how many bytes each line took (for progress). A line longer
    than ``max_line_bytes`` is a problem, skipped without being held in memory whole.
    """
    with open(path, "rb") as fh:
        for number, line, size in _lines(fh, max_line_bytes):
            if on_bytes:
                on_bytes(size)
            where = f"line {number}"
            if line is None:
                yield where, Problem(where, f"line of {size:,} bytes, longer than the {max_line_bytes:,} allowed")
                continue
            if not line.strip():
                continue
            try:
                procedure = parse_procedure(json.loads(line))
                # a lone surrogate can only come from a \u escape or surrogate bytes (0xED 0xA0-0xBF ...)
                if (b"\\u" in line or b"\xed" in line) and (field := unstorable_text(procedure)):
                    raise _Malformed(f"{field} holds a lone UTF-16 surrogate (not valid Unicode)")
                yield where, procedure
            except UnicodeDecodeError:
                yield where, Problem(where, "not valid UTF-8")
            except json.JSONDecodeError as exc:
                yield where, Problem(where, f"invalid JSON ({exc.msg} at column {exc.colno})")
            except _Malformed as exc:
                yield where, Problem(where, str(exc))
            except RecursionError:
                yield where, Problem(where, "JSON nested too deeply")
            except ValueError as exc:  # e.g. an integer of thousands of digits
                yield where, Problem(where, f"unreadable JSON value ({str(exc)[:80]})")
