"""What ``train`` and ``evaluate`` are pointed at: runs, question sets and sweeps, by path or by name.

A question set is named by its folder (``STORE/questions/TASK/SETTING``) or, relative to a store, as
``TASK/SETTING``; a sweep by its task folder (``STORE/questions/TASK`` or ``TASK``: every setting in it).
A folder of runs (e.g. one run per setting of a sweep) stands for all the runs in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from procbench.errors import BadInput
from procbench.models.runs import is_run
from procbench.qsets.files import QuestionSet, read_question_set

__all__ = ["is_question_set", "question_sets", "resolve_inputs"]


def is_question_set(path: Path) -> bool:
    """Whether ``path`` holds split files of a question set."""
    return path.is_dir() and any((path / f"{s}.parquet").is_file() for s in ("train", "val", "test"))


def _locate(arg: str | Path, store: Path | None) -> Path:
    path = Path(arg)
    if path.exists():
        return path
    if store is not None:
        candidate = store / "questions" / str(arg)
        if candidate.exists() and candidate.resolve().is_relative_to(store.resolve()):  # links out: not followed
            return candidate
    where = f" or under {store / 'questions'}" if store is not None else ""
    raise BadInput(f"no run, question set or sweep at {arg}{where}")


def question_sets(arg: str | Path, *, store: Path | None = None) -> list[QuestionSet]:
    """The question set ``arg`` names, or every setting of the sweep it names."""
    path = _locate(arg, store)
    if is_question_set(path):
        return [read_question_set(path)]
    settings = [read_question_set(p) for p in sorted(path.iterdir()) if is_question_set(p)] if path.is_dir() else []
    if not settings:
        raise BadInput(f"{path} is not a question set (no train/val/test.parquet) nor a folder of them")
    return settings


def resolve_inputs(args: Sequence[str | Path], *, store: Path | None = None) -> tuple[list[Path], list[QuestionSet]]:
    """Split ``args`` into run directories and question sets (expanding sweeps and folders of runs)."""
    runs: list[Path] = []
    qsets: list[QuestionSet] = []
    for arg in args:
        path = _locate(arg, store)
        if is_run(path):
            runs.append(path)
            continue
        if is_question_set(path):
            qsets.append(read_question_set(path))
            continue
        children = sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []
        found_runs = [p for p in children if is_run(p)]
        found_sets = [read_question_set(p) for p in children if is_question_set(p)]
        if not found_runs and not found_sets:
            raise BadInput(f"{path} is not a run, a question set, a sweep or a folder of runs")
        runs.extend(found_runs)
        qsets.extend(found_sets)
    return runs, qsets
