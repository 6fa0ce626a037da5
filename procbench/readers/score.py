"""Score readers' answers to a packet, and record the scores with each set (``readers.json``).

Answers are read from:

- a JSON object ``{"Q01": "B", ...}``; a value may be ``"B?"`` or ``{"answer": "B", "ambiguous": true}``
  (the reader marked the question ambiguous) — what ``packet.md`` asks for and the report's answer page
  downloads;
- a Label Studio annotation export (a JSON list of tasks, each with ``data.question_id`` and
  ``annotations[].result[].value.choices``): one reader per annotator.

A missing answer counts as wrong and is reported. Accuracy comes with its 95% Wilson score interval
(Wilson 1927, "Probable inference, the law of succession, and statistical inference", JASA 22:209-212), per
set: a packet may mix sets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procbench.errors import BadInput, InputFileNotFound
from procbench.qsets.files import QuestionSet
from procbench.readers.packet import KEY_FILE, KEY_FORMAT, LETTERS, question_fingerprints
from procbench.readers.views import READERS_FILE, read_records
from procbench.store import Store
from procbench.store.provenance import utc_now

__all__ = [
    "READERS_FILE",
    "Answers",
    "ReaderScore",
    "ScoreResult",
    "load_key",
    "read_answers",
    "score_packet",
    "wilson_interval",
]

#: Confidence level of the intervals.
CONFIDENCE = 0.95
_ANSWER = re.compile(r"^\s*([A-Za-z])\s*(\?)?\s*$")


def wilson_interval(correct: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``correct`` successes in ``n`` trials (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(correct, n).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


@dataclass
class Answers:
    """One reader's answers: neutral id -> letter, and the ids marked ambiguous."""

    reader: str
    letters: dict[str, str]
    ambiguous: set[str] = field(default_factory=set)


def _parse_value(qid: str, value: Any, source: str) -> tuple[str | None, bool]:
    ambiguous = False
    if isinstance(value, dict):
        ambiguous = bool(value.get("ambiguous", False))
        value = value.get("answer")
    if value is None or value == "":
        return None, ambiguous
    if not isinstance(value, str):
        raise BadInput(f"{source}: the answer to {qid} is not a letter: {value!r}")
    match = _ANSWER.match(value)
    if match is None:
        raise BadInput(f"{source}: the answer to {qid} is not a letter (A, B, ... or 'B?'): {value!r}")
    return match.group(1).upper(), ambiguous or match.group(2) is not None


def _from_mapping(data: dict[str, Any], reader: str, source: str) -> Answers:
    answers = Answers(reader, {})
    for qid, value in data.items():
        letter, ambiguous = _parse_value(str(qid), value, source)
        if letter is not None:
            answers.letters[str(qid)] = letter
        if ambiguous:
            answers.ambiguous.add(str(qid))
    return answers


def _label_studio(tasks: list[Any], reader: str, source: str) -> list[Answers]:
    """One :class:`Answers` per annotator of a Label Studio export (the latest annotation of each task)."""
    by_reader: dict[str, Answers] = {}
    for task in tasks:
        if not isinstance(task, dict):
            raise BadInput(f"{source}: not a Label Studio export (a list of tasks)")
        data = task.get("data") or {}
        qid = data.get("question_id")
        if not isinstance(qid, str):
            raise BadInput(f"{source}: a task has no data.question_id (was it imported from procbench's export?)")
        for annotation in task.get("annotations") or []:
            if annotation.get("was_cancelled"):
                continue
            who = annotation.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("id")
            name = reader if who is None else f"{reader}/{who}"
            answers = by_reader.setdefault(name, Answers(name, {}))
            answers.letters.pop(qid, None)
            answers.ambiguous.discard(qid)
            for result in annotation.get("result") or []:
                choices = (result.get("value") or {}).get("choices") or []
                if result.get("from_name") == "flags":
                    if "ambiguous" in choices:
                        answers.ambiguous.add(qid)
                elif choices:
                    letter, _ = _parse_value(qid, str(choices[0]), source)
                    if letter is not None:
                        answers.letters[qid] = letter
    if not by_reader:
        raise BadInput(f"{source}: the Label Studio export holds no annotations")
    return list(by_reader.values())


def read_answers(path: str | Path, reader: str | None = None) -> list[Answers]:
    """The answers in ``path`` (a JSON object of answers, or a Label Studio export: one per annotator).

    ``reader`` labels them (default: the file's name without its extension).

    Raises:
        BadInput: the file is not JSON, or not in either format.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFound(f"no answers file at {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: not a JSON file ({exc})") from None
    label = reader or path.stem
    if isinstance(data, dict):
        if isinstance(data.get("answers"), dict):  # {"reader": ..., "answers": {...}} also reads
            label = reader or str(data.get("reader") or label)
            data = data["answers"]
        return [_from_mapping(data, label, str(path))]
    if isinstance(data, list):
        return _label_studio(data, label, str(path))
    raise BadInput(f'{path}: expected a JSON object {{"Q01": "B", ...}} or a Label Studio export (a list)')


def load_key(folder: str | Path) -> dict[str, Any]:
    """The key of the packet in ``folder``.

    Raises:
        BadInput: no key, or not a procbench packet key.
    """
    path = Path(folder) / KEY_FILE
    if not path.is_file():
        raise InputFileNotFound(f"no packet key at {path} (procbench packet writes it)")
    try:
        key = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BadInput(f"{path}: not JSON ({exc})") from None
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT:
        raise BadInput(f"{path}: not a procbench packet key")
    return key


@dataclass
class ReaderScore:
    """One reader on one set of a packet."""

    reader: str
    set: str
    n: int
    correct: int
    answered: int
    ambiguous: int
    unanswered: list[str]

    @property
    def accuracy(self) -> float:
        """Share of the set's questions answered right (unanswered count as wrong)."""
        return self.correct / self.n if self.n else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        """95% Wilson interval of the accuracy."""
        return wilson_interval(self.correct, self.n)

    @property
    def ambiguous_share(self) -> float:
        """Share of the set's questions the reader marked ambiguous."""
        return self.ambiguous / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        lo, hi = self.ci
        return {
            "reader": self.reader,
            "set": self.set,
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci": [lo, hi],
            "answered": self.answered,
            "unanswered": self.unanswered,
            "ambiguous": self.ambiguous,
            "ambiguous_share": self.ambiguous_share,
        }


@dataclass
class ScoreResult:
    """What ``score_packet`` measured and where it recorded it."""

    packet: Path
    packet_id: str
    context: str
    seed: int
    scores: list[ReaderScore]
    unknown: dict[str, list[str]] = field(default_factory=dict)
    recorded: dict[str, Path] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "packet": str(self.packet),
            "packet_id": self.packet_id,
            "context": self.context,
            "seed": self.seed,
            "scores": [s.to_dict() for s in self.scores],
            "unknown_ids": self.unknown,
            "recorded": {k: str(v) for k, v in self.recorded.items()},
        }


def _score(key: dict[str, Any], answers: Answers) -> list[ReaderScore]:
    out: dict[str, ReaderScore] = {}
    for neutral, entry in key["questions"].items():
        name = entry["set"]
        score = out.setdefault(name, ReaderScore(answers.reader, name, 0, 0, 0, 0, []))
        score.n += 1
        letter = answers.letters.get(neutral)
        if letter is None:
            score.unanswered.append(neutral)
        else:
            score.answered += 1
            score.correct += int(letter == entry["answer"])
        score.ambiguous += int(neutral in answers.ambiguous)
    return [out[name] for name in sorted(out)]


def _check_sets(key: dict[str, Any]) -> dict[str, QuestionSet]:
    """The key's sets, as they are now; each keyed question must still be in its set."""
    sets: dict[str, QuestionSet] = {}
    for name, info in key["sets"].items():
        path = Path(info["path"])
        qset = QuestionSet(path)
        files = [path / f"{s}.parquet" for s in ("train", "val", "test")]
        if not any(f.is_file() for f in files):
            raise BadInput(f"the packet's set {name} is gone from {path}; nothing was recorded (pass --no-record)")
        entries = [e for e in key["questions"].values() if e["set"] == name]
        now = question_fingerprints(qset, {e["qid"] for e in entries})
        changed = [e["qid"] for e in entries if now.get(e["qid"]) != e.get("fingerprint")]
        if changed:
            raise BadInput(
                f"{name} changed since the packet was made ({len(changed)} of its questions are gone or "
                f"rewritten, e.g. {changed[0]}); nothing was recorded (pass --no-record to score anyway)"
            )
        sets[name] = qset
    return sets


def _entry(key: dict[str, Any], score: ReaderScore, when: str) -> dict[str, Any]:
    lo, hi = score.ci
    return {
        "reader": score.reader,
        "packet_id": key["packet_id"],
        "context": key["context"],
        "n": score.n,
        "correct": score.correct,
        "accuracy": score.accuracy,
        "ci": [lo, hi],
        "confidence": CONFIDENCE,
        "ambiguous_share": score.ambiguous_share,
        "unanswered": len(score.unanswered),
        "seed": key["seed"],
        "split": key.get("split"),
        "date": when,
    }


def _record(key: dict[str, Any], scores: list[ReaderScore], when: str) -> dict[str, Path]:
    """Add the scores to each set's ``readers.json`` in one store transaction (a re-scored reader replaces
    its earlier entry for the same packet)."""
    sets = _check_sets(key)
    store = Store.open(key["store"])
    root = store.root.resolve()
    written: dict[str, Path] = {}
    with store.transaction("score-packet", args={"packet_id": key["packet_id"], "context": key["context"]}) as txn:
        for name, qset in sets.items():
            mine = [s for s in scores if s.set == name]
            if not mine:
                continue
            target = qset.path.resolve() / READERS_FILE
            if not target.is_relative_to(root):
                raise BadInput(f"{qset.path} is not inside the store {root}; nothing was recorded")
            records = read_records(target)
            new = [_entry(key, s, when) for s in mine]
            replaced = {(e["packet_id"], e["reader"]) for e in new}
            records = [r for r in records if (r.get("packet_id"), r.get("reader")) not in replaced] + new
            staged = txn.stage(str(target.relative_to(root)))
            staged.write_text(json.dumps({"results": records}, indent=1) + "\n", encoding="utf-8")
            written[name] = target
        txn.counts = {"readers": len({s.reader for s in scores}), "sets": len(written)}
    return written


def score_packet(
    folder: str | Path,
    answer_files: list[str | Path],
    *,
    reader: str | None = None,
    record: bool = True,
    today: str | None = None,
) -> ScoreResult:
    """Score each answers file against the packet's key in ``folder``; with ``record``, add the scores to each
    set's ``readers.json`` (through the store's transaction, under its write lock).

    ``reader`` labels the readers (default: each file's name); with several files it prefixes their names.

    Raises:
        BadInput: no key, an unreadable answers file, or (recording) a set changed since the packet was made.
    """
    if not answer_files:
        raise BadInput("give at least one answers file")
    key = load_key(folder)
    every: list[Answers] = []
    for path in answer_files:
        label = reader if reader is not None and len(answer_files) == 1 else None
        if reader is not None and len(answer_files) > 1:
            label = f"{reader}/{Path(path).stem}"
        every += read_answers(path, label)
    scores: list[ReaderScore] = []
    unknown: dict[str, list[str]] = {}
    known = set(key["questions"])
    for answers in every:
        scores += _score(key, answers)
        extra = sorted(set(answers.letters) - known)
        if extra:
            unknown[answers.reader] = extra
        bad = sorted(q for q, letter in answers.letters.items() if q in known and letter not in LETTERS)
        if bad:
            raise BadInput(f"{answers.reader}: answers outside A-{LETTERS[-1]} for {', '.join(bad[:5])}")
    result = ScoreResult(Path(folder), key["packet_id"], key["context"], int(key["seed"]), scores, unknown)
    if record:
        result.recorded = _record(key, scores, today or utc_now()[:10])
    return result
