"""What the report shows, gathered from the store: questions as people read them, audits, distances, sweeps."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from procbench.card.models import read_model_rows
from procbench.errors import BadInput, ProcbenchError
from procbench.export.inline import Inliner
from procbench.export.sets import find_audit, shortcut_scores
from procbench.qsets.files import QuestionSet
from procbench.readers.views import recorded_readers
from procbench.store import Store, is_image_id

__all__ = [
    "SYNTHETIC_SOURCES",
    "SetView",
    "choice_distances_of",
    "generation_notes",
    "real_url",
    "set_view",
    "sweep_tables",
]

log = logging.getLogger(__name__)

#: Splits in the order the report shows them (test first: what models are scored on).
ORDER = ("test", "val", "train")

#: Sources whose step images procbench draws itself (the bundled sample corpus, :mod:`procbench.corpus`): the
#: report says its images are synthetic.
SYNTHETIC_SOURCES = frozenset({"sample"})

#: Host names reserved by RFC 2606 / RFC 6761 that never lead to a real page (the demo's
#: ``sample.procbench.invalid``, the sample corpus's ``example.org``).
_RESERVED_TLDS = (".invalid", ".test", ".example", ".localhost")
_RESERVED_HOSTS = frozenset({"example.com", "example.org", "example.net", "localhost"})


def real_url(url: str | None) -> str | None:
    """``url`` when it can lead to a real page: ``http(s)`` with a host that is not reserved (RFC 2606:
    ``.invalid``, ``.test``, ``.example``, ``.localhost``, ``example.com/.org/.net``); else None."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme not in ("http", "https") or not host:
        return None
    if host.endswith(_RESERVED_TLDS) or any(host == h or host.endswith("." + h) for h in _RESERVED_HOSTS):
        return None
    return url


@dataclass
class SetView:
    """One question set as the report shows it."""

    name: str
    task: str
    setting: str
    slug: str
    splits: dict[str, int]
    questions: list[dict[str, Any]]
    total: int
    audit: dict[str, Any] | None
    has_scores: bool
    distances: dict[str, Any] | None = None
    images: set[str] = field(default_factory=set)
    #: Scored reader packets recorded with the set (``procbench score-packet``).
    readers: list[dict[str, Any]] = field(default_factory=list)
    #: Model rows ``procbench evaluate`` recorded for the set (:func:`procbench.card.models.read_model_rows`).
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Some images shown are drawn by procbench (:data:`SYNTHETIC_SOURCES`), not photographs.
    synthetic_images: bool = False
    #: What the set's generation said (:func:`generation_notes`): why it is empty, what it skipped.
    generation: dict[str, Any] = field(default_factory=dict)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name.replace("/", "--"))


def _image_path(image_id: str | None) -> str | None:
    return None if image_id is None or not is_image_id(image_id) else f"images/{image_id[:2]}/{image_id}.jpg"


def _compact(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if item["key"] == "@placeholder":
        out["ph"] = 1
    if item["title"]:
        out["title"] = item["title"]
    if item["text"]:
        out["text"] = item["text"]
    if item["image"]:
        out["img"] = _image_path(item["image"])
    return out


def generation_notes(store: Store, task: str, setting: str) -> dict[str, Any]:
    """What the store's last ``generate`` of ``task`` that wrote ``setting`` recorded about it in the provenance
    log: ``empty`` (why the set has no question), ``skipped_procedures`` and ``skipped_questions`` (reason ->
    count), each only when present; ``{}`` when the log has no such entry (a set copied from elsewhere)."""
    for entry in reversed(store.provenance):
        if entry.get("command") != "generate" or (entry.get("args") or {}).get("task") != task:
            continue
        per = ((entry.get("counts") or {}).get("per_setting") or {}).get(setting)
        if not isinstance(per, dict):
            continue
        notes: dict[str, Any] = {}
        if per.get("empty"):
            notes["empty"] = str(per["empty"])
        for key in ("skipped_procedures", "skipped_questions"):
            counts = {str(k): v for k, v in (per.get(key) or {}).items() if isinstance(v, int) and v > 0}
            if counts:
                notes[key] = counts
        return notes
    return {}


def set_view(qset: QuestionSet, inliner: Inliner, *, limit: int) -> SetView:
    """The questions of ``qset`` to show (test, then val, then train, at most ``limit``), with their scores."""
    scores = shortcut_scores(qset)
    splits = {s: int(qset.split(s).num_rows) for s in ORDER if (qset.path / f"{s}.parquet").is_file()}
    questions: list[dict[str, Any]] = []
    images: set[str] = set()
    synthetic = False
    for split in ORDER:
        if split not in splits:
            continue
        for record in inliner.records(qset, split):
            if len(questions) >= limit:
                break
            for item in (*record["question"], *record["choices"]):
                if item["image"]:
                    images.add(item["image"])
                    synthetic = synthetic or record["source"] in SYNTHETIC_SOURCES
            questions.append(
                {
                    "qid": record["qid"],
                    "split": split,
                    "score": None if scores is None else scores.get(record["qid"]),
                    "procedure": record["procedure_title"] or record["procedure_id"],
                    "url": real_url(record["url"]),
                    "instruction": record["instruction"],
                    "question": [_compact(i) for i in record["question"]],
                    "choices": [_compact(i) for i in record["choices"]],
                    "orders": record["choice_orders"],
                    "answer": record["answer"],
                    "context": [{"i": c["index"], "title": c["title"], "text": c["text"]} for c in record["context"]],
                    "whole": inliner.whole_context(record),
                }
            )
    return SetView(
        name=qset.name,
        task=qset.task,
        setting=qset.setting,
        slug=_slug(qset.name),
        splits=splits,
        questions=questions,
        total=sum(splits.values()),
        audit=find_audit(qset),
        has_scores=scores is not None,
        images=images,
        readers=recorded_readers(qset.path),
        models=read_model_rows(qset.path),
        synthetic_images=synthetic,
    )


def report_target(out: Path, relpath: str) -> Path:
    """``out / relpath``, a path the report writes, once no part of it below ``out`` is a symbolic link (a link
    planted in a report folder, e.g. the store's own ``STORE/report``, would make the report overwrite a file
    outside it).

    Raises:
        BadInput: a folder or file on the way is a symbolic link.
    """
    path = out
    for part in Path(relpath).parts:
        path = path / part
        if path.is_symlink():
            raise BadInput(f"{path} is a symbolic link; the report writes only real files and folders in {out}")
    return path


def copy_images(store: Store, image_ids: set[str], out: Path) -> int:
    """Copy the stored JPEGs the report shows to ``out/images/ab/ID.jpg``; returns how many were copied.

    Raises:
        BadInput: a folder or file on the way in ``out`` is a symbolic link.
    """
    copied = 0
    for image_id in sorted(image_ids):
        source = store.image_file(image_id)  # None unless a valid id names a regular file in the store
        if source is None:
            continue
        target = report_target(out, f"images/{image_id[:2]}/{image_id}.jpg")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file():
            shutil.copyfile(source, target)
        copied += 1
    return copied


def choice_distances_of(qset: QuestionSet, store: Store) -> dict[str, Any] | None:
    """Distances of correct and wrong choices to the question (paper 001 Fig. 2), as the audit measures them;
    None where they do not apply (no embeddings, not multiple choice)."""
    try:
        from procbench.audit.loaders import load_question_set
        from procbench.audit.probes.distance import choice_distances

        aset = load_question_set(qset.path, store=store)
        matrix, found = aset.item_vectors()
        dist, ok, reference = choice_distances(aset, matrix, found)
    except (ProcbenchError, ImportError, ValueError, KeyError, AttributeError, TypeError) as exc:
        log.info("no distances for %s: %s", qset.name, exc)
        return None
    except Exception as exc:  # the audit's own "does not apply" signal, whatever its class
        if type(exc).__name__ != "NotApplicable":
            raise
        return None
    answers = np.asarray(aset.answers)
    if dist.ndim != 2 or not len(answers):
        return None
    rows = ok & np.isfinite(dist).any(axis=1) & (answers >= 0) & (answers < dist.shape[1])
    if not rows.any():
        return None
    d = dist[rows]
    a = answers[rows]
    correct = d[np.arange(len(a)), a]
    mask = np.ones_like(d, dtype=bool)
    mask[np.arange(len(a)), a] = False
    wrong = d[mask]
    correct = correct[np.isfinite(correct)]
    wrong = wrong[np.isfinite(wrong)]
    if not len(correct) or not len(wrong):
        return None
    return {"correct": correct.tolist(), "wrong": wrong.tolist(), "to": reference}


def discover_runs(store: Store) -> list[Path]:
    """Run folders under ``STORE/runs`` (a ``config.json`` beside ``metrics.json``)."""
    base = store.root / "runs"
    if not base.is_dir():
        return []
    return sorted(p.parent for p in base.rglob("config.json") if (p.parent / "metrics.json").is_file())


def sweep_tables(runs: list[Path], *, seed: int = 0) -> list[dict[str, Any]]:
    """``evaluate``'s sweep tables (models as rows, settings as columns) for ``runs``, with chance."""
    if not runs:
        return []
    from procbench.models import evaluate

    try:
        report = evaluate(runs=[str(r) for r in runs], models=["chance"], splits=["test"], seed=seed, bootstrap=200)
    except ProcbenchError as exc:
        log.warning("no sweep table: %s", exc)
        return []
    return list(report.summary.get("tables", []))
