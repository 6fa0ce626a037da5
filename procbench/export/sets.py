"""Which question sets an export or a report is about: ``TASK``, ``TASK/SETTING`` or set folders."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procbench.errors import BadInput
from procbench.qsets.files import QuestionSet
from procbench.store import Store

__all__ = ["ResolvedSets", "find_audit", "resolve_sets", "shortcut_scores"]


@dataclass
class ResolvedSets:
    """The store the sets come from, and the sets (in the order asked, settings sorted within a task)."""

    store: Store
    sets: list[QuestionSet]


_SPLITS = ("train", "val", "test")


def _is_set(path: Path) -> bool:
    return path.is_dir() and any((path / f"{s}.parquet").is_file() for s in _SPLITS)


def _store_of(folder: Path) -> Path | None:
    """``STORE`` for a folder ``STORE/questions/TASK[/SETTING]``."""
    for parent in folder.resolve().parents:
        if (parent / "store.json").is_file():
            return parent
    return None


def resolve_sets(targets: list[str], store: str | Path) -> ResolvedSets:
    """Resolve each target: a set folder, a task folder (every setting), or ``TASK[/SETTING]`` inside ``store``.

    Set folders carry their store (``STORE/questions/TASK/SETTING``), which wins over ``store``.
    """
    if not targets:
        raise BadInput("name at least one question set: TASK, TASK/SETTING or a set folder")
    store_path = Path(store)
    folders: list[Path] = []
    for target in targets:
        path = Path(target)
        if not path.is_dir():
            path = store_path / "questions" / target
        if _is_set(path):
            folders.append(path)
        elif path.is_dir() and any(_is_set(p) for p in path.iterdir()):
            folders.extend(sorted(p for p in path.iterdir() if _is_set(p)))
        else:
            raise BadInput(f"no question set at {target!r} (looked for it as a folder and in {store_path}/questions)")
    roots = {_store_of(f) for f in folders}
    if len(roots) > 1:
        raise BadInput("the sets come from different stores; export or report one store at a time")
    root = roots.pop() or store_path
    sets = [QuestionSet(f) for f in dict.fromkeys(folders)]
    names = [s.name for s in sets]
    if len(set(names)) != len(names):
        raise BadInput("two sets share the name TASK/SETTING; name each once")
    return ResolvedSets(Store.open(root), sets)


#: Seconds an ``audit.json`` may predate a set's files and still be its audit (copies reorder mtimes a little).
STALE_AFTER = 2.0


def _written(qset: QuestionSet) -> float:
    """When the set's split files were last written."""
    times = [(qset.path / f"{s}.parquet").stat().st_mtime for s in _SPLITS if (qset.path / f"{s}.parquet").is_file()]
    return max(times, default=0.0)


def find_audit(qset: QuestionSet) -> dict[str, Any] | None:
    """The audit of a set (``{"n_questions", "probes": ...}``) from the nearest ``audit.json`` that has it:
    the set's folder, its task's folder, then ``questions/``. An ``audit.json`` older than the set's files
    audited an earlier version of the set (``generate --overwrite`` since): it is not the set's audit."""
    written = _written(qset)
    for folder in (qset.path, qset.path.parent, qset.path.parent.parent):
        path = folder / "audit.json"
        if not path.is_file() or path.stat().st_mtime + STALE_AFTER < written:
            continue
        try:
            sets = json.loads(path.read_text(encoding="utf-8")).get("sets", {})
        except (OSError, ValueError):
            continue
        for name in (qset.name, qset.setting):
            if isinstance(sets.get(name), dict):
                return dict(sets[name])
    return None


def shortcut_scores(qset: QuestionSet) -> dict[str, float] | None:
    """Per-question shortcut scores that ``procbench audit --per-question`` wrote in the set folder
    (``shortcut_scores.parquet``, its ``shortcut_score`` column: the cross-fitted probability that the
    context-free probes pick the answer). ``{qid: score}`` for the questions it scored, or None when the set
    has no such file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from procbench.audit.scores import SCORES_FILE

    path = qset.path / SCORES_FILE
    try:
        table = pq.read_table(path, columns=["qid", "shortcut_score"])
    except (OSError, pa.ArrowInvalid, KeyError):
        return None
    return {
        q: float(v)
        for q, v in zip(table["qid"].to_pylist(), table["shortcut_score"].to_pylist(), strict=True)
        if q is not None and v is not None
    }
