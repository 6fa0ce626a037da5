"""Recorded reader results as the dataset card and the HTML report show them, beside the audit's probes.

Paper 000 reports human performance on sampled questions beside the models; here each scored packet
(``procbench score-packet``) is a row: reader, context (with or without), questions, accuracy with its 95%
Wilson interval, the share marked ambiguous.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

__all__ = [
    "READERS_FILE",
    "Headroom",
    "headroom",
    "headroom_card_lines",
    "headroom_html",
    "read_limited",
    "read_records",
    "readers_card_lines",
    "readers_html",
    "recorded_readers",
]

#: The file beside a set's parquet files that records the packets scored on it.
READERS_FILE = "readers.json"
#: Seconds ``readers.json`` may predate the set's files and still be about them (as for ``audit.json``,
#: ``procbench.export.sets.STALE_AFTER``: copies reorder mtimes a little).
STALE_AFTER = 2.0


#: Largest ``readers.json`` read (a larger one reads as empty).
MAX_READERS_BYTES = 16 * 2**20


def read_limited(path: Path, max_bytes: int, *, follow: bool = False) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``, opened without following a
    symbolic link unless ``follow`` (None when it is a link, not a regular file, or larger).

    Raises:
        OSError: it cannot be opened or read (e.g. it is missing).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last part of the path is a symbolic link
            return None
        raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        data = fh.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The entries of a ``readers.json`` (empty when it is missing, unreadable, too large or a symbolic link:
    a link could copy an outside file's entries into the store)."""
    try:
        raw = read_limited(path, MAX_READERS_BYTES)
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (OSError, ValueError, RecursionError):
        return []
    results = data.get("results") if isinstance(data, dict) else None
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []


def recorded_readers(qset_path: str | Path) -> list[dict[str, Any]]:
    """The scored packets recorded with the set at ``qset_path`` (empty when none, or when the set was
    rewritten after they were recorded: they scored an earlier version of it)."""
    path = Path(qset_path)
    target = path / READERS_FILE
    if target.is_symlink() or not target.is_file():
        return []
    splits = [path / f"{s}.parquet" for s in ("train", "val", "test")]
    written = max((f.stat().st_mtime for f in splits if f.is_file()), default=0.0)
    if target.stat().st_mtime + STALE_AFTER < written:
        return []
    return read_records(target)


_EXPLAIN = (
    "Blinded readers (`procbench packet`, scored by `procbench score-packet`): people or language-model readers "
    "answered a sample of questions under neutral ids, at most one per procedure, with the context or without "
    "it. Accuracy [95% Wilson interval]; ambiguous: share of the questions the reader marked ambiguous. A reader "
    "without the context far above chance means the questions can be answered without reading the procedure."
)


def _rows(results: Iterable[tuple[str, list[dict[str, Any]]]]) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for name, records in results:
        for r in sorted(records, key=lambda r: (str(r.get("context")), str(r.get("date")), str(r.get("reader")))):
            rows.append((name, r))
    return rows


def _accuracy(r: dict[str, Any]) -> str:
    ci = r.get("ci") or [None, None]
    text = f"{100 * float(r.get('accuracy', 0.0)):.1f}%"
    if ci[0] is not None:
        text += f" [{100 * float(ci[0]):.0f}, {100 * float(ci[1]):.0f}]"
    return text


def readers_card_lines(results: Iterable[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The card's "Readers" section for ``(set name, recorded results)`` pairs; nothing when none are recorded."""
    from procbench.card.escape import md_code, md_text  # here: procbench.card imports this module

    rows = _rows(results)
    if not rows:
        return []
    lines = ["## Readers", "", _EXPLAIN, ""]
    lines += [
        "| set | reader | context | questions | accuracy [95% CI] | ambiguous | date |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rows:  # the reader's name (and all a readers.json holds) is anyone's text: kept in its cell
        lines.append(
            f"| `{md_code(name)}` | {md_text(r.get('reader', ''))} | {md_text(r.get('context', ''))} | "
            f"{md_text(r.get('n', ''))} | {_accuracy(r)} | "
            f"{100 * float(r.get('ambiguous_share', 0.0)):.0f}% | {md_text(r.get('date', ''))} |"
        )
    lines.append("")
    return lines


def readers_html(results: Iterable[tuple[str, list[dict[str, Any]]]]) -> str:
    """The report's readers table for ``(set name, recorded results)`` pairs; empty when none are recorded."""
    rows = _rows(results)
    if not rows:
        return ""
    out = [
        "<h2>Readers: blinded answer sheets</h2>",
        f'<p class="muted">{escape(_EXPLAIN.replace("`", ""))}</p>',
        "<table><tr><th>set</th><th>reader</th><th>context</th><th>questions</th><th>accuracy [95% CI]</th>"
        "<th>ambiguous</th><th>date</th></tr>",
    ]
    for name, r in rows:
        out.append(
            f"<tr><td>{escape(name)}</td><td>{escape(str(r.get('reader', '')))}</td>"
            f'<td>{escape(str(r.get("context", "")))}</td><td class="num">{escape(str(r.get("n", "")))}</td>'
            f'<td class="num">{escape(_accuracy(r))}</td>'
            f'<td class="num">{100 * float(r.get("ambiguous_share", 0.0)):.0f}%</td>'
            f"<td>{escape(str(r.get('date', '')))}</td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


@dataclass(frozen=True)
class Headroom:
    """What people with the context score on a set minus the best model scored on it (issue 55)."""

    name: str
    readers: float  # pooled accuracy of every packet read with the context
    answers: int  # the answers pooled
    model: str
    model_accuracy: float

    @property
    def points(self) -> float:
        return 100.0 * (self.readers - self.model_accuracy)


def headroom(name: str, readers: list[dict[str, Any]], models: dict[str, dict[str, Any]]) -> Headroom | None:
    """The set's headroom from its recorded readers and model rows (``models.json``: label -> metric -> entry;
    accuracy); None unless both packets read with the context and an accuracy of some model are recorded."""
    read = [r for r in readers if r.get("context") == "with" and r.get("n")]
    scored = {
        label: float(m["accuracy"]["value"])
        for label, m in models.items()
        if isinstance(m.get("accuracy"), dict) and m["accuracy"].get("value") is not None
    }
    if not read or not scored:
        return None
    answers = sum(int(r["n"]) for r in read)
    correct = sum(float(r.get("correct", float(r.get("accuracy", 0.0)) * int(r["n"]))) for r in read)
    best = max(scored, key=lambda label: (scored[label], label))
    return Headroom(name, correct / answers, answers, best, scored[best])


def headroom_card_lines(rows: Iterable[Headroom | None]) -> list[str]:
    """The card's "Headroom" section: readers with the context, the best model scored, the difference."""
    from procbench.card.escape import md_code, md_text  # here: procbench.card imports this module

    kept = [h for h in rows if h is not None]
    if not kept:
        return []
    lines = ["## Headroom", "", _HEADROOM, "", "| set | readers with the context | best model | headroom |"]
    lines.append("|---|---|---|---|")
    for h in kept:
        lines.append(
            f"| `{md_code(h.name)}` | {100 * h.readers:.1f}% ({h.answers} answers) | {md_text(h.model)} "
            f"{100 * h.model_accuracy:.1f}% | {h.points:+.1f} points |"
        )
    return [*lines, ""]


def headroom_html(rows: Iterable[Headroom | None]) -> str:
    """The report's headroom table (empty when no set has both rows)."""
    kept = [h for h in rows if h is not None]
    if not kept:
        return ""
    out = [
        "<h2>Headroom: people with the context minus the best model</h2>",
        f'<p class="muted">{escape(_HEADROOM)}</p>',
        "<table><tr><th>set</th><th>readers with the context</th><th>best model</th><th>headroom</th></tr>",
    ]
    for h in kept:
        out.append(
            f'<tr><td>{escape(h.name)}</td><td class="num">{100 * h.readers:.1f}% ({h.answers})</td>'
            f'<td>{escape(h.model)} {100 * h.model_accuracy:.1f}%</td><td class="num">{h.points:+.1f}</td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


_HEADROOM = (
    "Blinded readers' accuracy with the context (every packet pooled) minus the best model `procbench evaluate` "
    "recorded on the test split (e.g. `--model context-tfidf`, `--model context-embedding`, `--model context-ridge` "
    "for photo choices, trained runs): how "
    "much the set still measures above the models scored so far."
)
