"""Score readers' answers to a packet, and record the scores with each set (``readers.json``).

Answers are read from:

- a JSON object ``{"packet_id": "...", "Q01": "B", ...}`` or ``{"packet_id": "...", "reader": "...", "answers":
  {"Q01": "B", ...}}``; a value may be ``"B?"`` or ``{"answer": "B", "ambiguous": true}`` (the reader marked the
  question ambiguous) — what ``packet.md`` asks for and the report's answer page downloads;
- a Label Studio annotation export (a JSON list of tasks, each with ``data.question_id``, ``data.packet_id`` and
  ``annotations[].result[].value.choices``): one reader per annotator.

Answers carrying another packet's id are refused; answers carrying none whose ids differ from the packet's are
scored with a warning. Answer files and keys are checked against their shape, with caps on size and depth
(:data:`MAX_ANSWER_BYTES`, :data:`MAX_DEPTH`), before anything is scored.

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
from procbench.nesting import nesting_depth
from procbench.qsets.files import QuestionSet
from procbench.readers.packet import KEY_FILE, KEY_FORMAT, LETTERS, question_fingerprints
from procbench.readers.views import READERS_FILE, read_limited, read_records
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
#: Largest answers file read (a Label Studio export carries each task's HTML with its images inlined).
MAX_ANSWER_BYTES = 256 * 2**20
#: Largest key.json read.
MAX_KEY_BYTES = 64 * 2**20
#: Deepest nesting of JSON arrays and objects read (a Label Studio export needs 6).
MAX_DEPTH = 16
#: Most answers (or Label Studio tasks, or annotations of a task) one file may hold.
MAX_ENTRIES = 100_000
#: Longest question id, packet id, reader name or answer value read.
MAX_NAME = 200
#: Ids listed in a message (the rest counted).
SHOW_IDS = 10


def _load_json(path: Path, max_bytes: int, what: str) -> Any:
    """``path`` parsed as JSON: a regular file of at most ``max_bytes``, nested at most
    :data:`MAX_DEPTH` deep.

    Raises:
        InputFileNotFound: no such file. BadInput: anything else.
    """
    if not path.exists():
        raise InputFileNotFound(f"no {what} at {path}")
    try:
        raw = read_limited(path, max_bytes, follow=True)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if raw is None:
        raise BadInput(f"{path}: the {what} must be a regular file of at most {max_bytes:,} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise BadInput(f"{path}: the {what} is nested more than {MAX_DEPTH} levels deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: the {what} is not JSON ({str(exc)[:120]})") from None
    if nesting_depth(data, cap=MAX_DEPTH) > MAX_DEPTH:
        raise BadInput(f"{path}: the {what} is nested more than {MAX_DEPTH} levels deep")
    return data


def _name(value: Any, what: str, source: str, *, optional: bool = False) -> str | None:
    """A short string (an id or a name), or None when ``optional`` and absent."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise BadInput(f"{source}: {what} must be a string of 1 to {MAX_NAME} characters")
    return value


def _show(ids: list[str]) -> str:
    """At most :data:`SHOW_IDS` ids, the rest counted."""
    shown = ", ".join(ids[:SHOW_IDS])
    return shown + (f" and {len(ids) - SHOW_IDS:,} more" if len(ids) > SHOW_IDS else "")


def wilson_interval(correct: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``correct`` successes in ``n`` trials (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(correct, n).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


@dataclass
class Answers:
    """One reader's answers: neutral id -> letter, the ids marked ambiguous, the ids given (answered or not) and
    the packet id the answers carry (None: none)."""

    reader: str
    letters: dict[str, str]
    ambiguous: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    packet_id: str | None = None


def _parse_value(qid: str, value: Any, source: str) -> tuple[str | None, bool]:
    ambiguous = False
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"answer", "ambiguous"})
        if unknown:
            raise BadInput(f"{source}: the answer to {qid} has unknown fields (answer and ambiguous only)")
        flag = value.get("ambiguous", False)
        if not isinstance(flag, bool):
            raise BadInput(f"{source}: the answer to {qid} has an ambiguous flag that is not true or false")
        ambiguous = flag
        value = value.get("answer")
    if value is None or value == "":
        return None, ambiguous
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise BadInput(f"{source}: the answer to {qid} is not a letter (A, B, ... or 'B?')")
    match = _ANSWER.match(value)
    if match is None:
        raise BadInput(f"{source}: the answer to {qid} is not a letter (A, B, ... or 'B?'): {value!r}")
    return match.group(1).upper(), ambiguous or match.group(2) is not None


def _from_mapping(data: dict[str, Any], reader: str, source: str, packet: str | None) -> Answers:
    if len(data) > MAX_ENTRIES:
        raise BadInput(f"{source}: {len(data):,} answers, more than the {MAX_ENTRIES:,} a file may hold")
    answers = Answers(reader, {}, packet_id=packet)
    for qid, value in data.items():
        _name(qid, "a question id", source)
        letter, ambiguous = _parse_value(qid, value, source)
        answers.ids.add(qid)
        if letter is not None:
            answers.letters[qid] = letter
        if ambiguous:
            answers.ambiguous.add(qid)
    return answers


def _fields(value: Any, what: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInput(f"{source}: not a Label Studio export of a procbench project ({what} is not an object)")
    return value


def _items(value: Any, what: str, source: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ENTRIES:
        raise BadInput(f"{source}: not a Label Studio export of a procbench project ({what} is not a list)")
    return value


def _label_studio(tasks: list[Any], reader: str, source: str) -> list[Answers]:
    """One :class:`Answers` per annotator of a Label Studio export (the latest annotation of each task).

    Raises:
        BadInput: not the shape of such an export, or tasks carrying different packet ids.
    """
    by_reader: dict[str, Answers] = {}
    packets: set[str | None] = set()
    ids: set[str] = set()
    for task in _items(tasks, "the file", source):
        data = _fields(_fields(task, "a task", source).get("data"), "a task's data", source)
        qid = data.get("question_id")
        if not isinstance(qid, str):
            raise BadInput(f"{source}: a task has no data.question_id (was it imported from procbench's export?)")
        _name(qid, "data.question_id", source)
        packets.add(_name(data.get("packet_id"), "data.packet_id", source, optional=True))
        ids.add(qid)
        for annotation in _items(task.get("annotations"), "a task's annotations", source):
            annotation = _fields(annotation, "an annotation", source)
            if annotation.get("was_cancelled"):
                continue
            who = annotation.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("id")
            if who is not None and (isinstance(who, (dict, list)) or len(str(who)) > MAX_NAME):
                raise BadInput(f"{source}: an annotation's completed_by is not a name or an id")
            name = reader if who is None else f"{reader}/{who}"
            answers = by_reader.setdefault(name, Answers(name, {}))
            answers.letters.pop(qid, None)
            answers.ambiguous.discard(qid)
            for result in _items(annotation.get("result"), "an annotation's result", source):
                result = _fields(result, "a result", source)
                choices = _items(
                    _fields(result.get("value") or {}, "a result's value", source).get("choices"),
                    "a result's choices",
                    source,
                )
                if not all(isinstance(c, str) for c in choices):
                    raise BadInput(f"{source}: a result's choices are not strings")
                if result.get("from_name") == "flags":
                    if "ambiguous" in choices:
                        answers.ambiguous.add(qid)
                elif choices:
                    letter, _ = _parse_value(qid, choices[0], source)
                    if letter is not None:
                        answers.letters[qid] = letter
    if len(packets) > 1:
        named = sorted(p for p in packets if p is not None)
        raise BadInput(f"{source}: the tasks carry {len(named)} packet ids (or none), not one: {_show(named)}")
    if not by_reader:
        raise BadInput(f"{source}: the Label Studio export holds no annotations")
    packet = next(iter(packets))
    for answers in by_reader.values():
        answers.ids, answers.packet_id = set(ids), packet
    return list(by_reader.values())


def read_answers(path: str | Path, reader: str | None = None) -> list[Answers]:
    """The answers in ``path`` (a JSON object of answers, or a Label Studio export: one per annotator).

    ``reader`` labels them (default: the file's name without its extension).

    Raises:
        BadInput: the file is not JSON, too large or deep, or not in either format.
    """
    path = Path(path)
    data = _load_json(path, MAX_ANSWER_BYTES, "answers file")
    label = reader or path.stem
    source = str(path)
    if isinstance(data, dict):
        packet = _name(data.get("packet_id"), "packet_id", source, optional=True)
        if "answers" in data:  # {"packet_id": ..., "reader": ..., "answers": {...}}
            unknown = sorted(set(data) - {"packet_id", "reader", "answers"})
            if unknown or not isinstance(data["answers"], dict):
                raise BadInput(
                    f'{source}: expected {{"packet_id": ..., "reader": ..., "answers": {{"Q01": "B", ...}}}}'
                )
            label = reader or _name(data.get("reader"), "reader", source, optional=True) or label
            data = data["answers"]
        else:
            data = {k: v for k, v in data.items() if k != "packet_id"}
        return [_from_mapping(data, label, source, packet)]
    if isinstance(data, list):
        return _label_studio(data, label, source)
    raise BadInput(f'{source}: expected a JSON object {{"packet_id": ..., "Q01": "B", ...}} or a Label Studio export')


def _check_key(key: Any, source: str) -> dict[str, Any]:
    """``key`` if it has the shape :func:`procbench.readers.packet.build_packet` writes.

    Raises:
        BadInput: anything else (one line naming the first field that is wrong).
    """

    def bad(what: str) -> BadInput:
        return BadInput(f"{source}: not a procbench packet key ({what})")

    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT:
        raise bad(f"format is not {KEY_FORMAT}")
    for name, kind in (("packet_id", str), ("context", str), ("store", str), ("sets", dict), ("questions", dict)):
        if not isinstance(key.get(name), kind):
            raise bad(f"{name} is missing or not a {'string' if kind is str else 'JSON object'}")
    if isinstance(key.get("seed"), bool) or not isinstance(key.get("seed"), int):
        raise bad("seed is not an integer")
    for name, info in key["sets"].items():
        if not isinstance(info, dict) or not isinstance(info.get("path"), str):
            raise bad(f"set {name[:MAX_NAME]} has no path")
    if not key["questions"] or len(key["questions"]) > MAX_ENTRIES:
        raise bad("no questions, or too many")
    for neutral, entry in key["questions"].items():
        if not (
            isinstance(entry, dict)
            and entry.get("set") in key["sets"]
            and isinstance(entry.get("qid"), str)
            and isinstance(entry.get("answer"), str)
            and entry["answer"] in LETTERS
            and isinstance(entry.get("fingerprint"), (str, type(None)))
        ):
            raise bad(f"question {neutral[:MAX_NAME]} lacks its set, qid or answer letter")
    return key


def load_key(folder: str | Path) -> dict[str, Any]:
    """The key of the packet in ``folder``, checked against its shape.

    Raises:
        BadInput: no key, or not a procbench packet key.
    """
    path = Path(folder) / KEY_FILE
    if not path.exists():
        raise InputFileNotFound(f"no packet key at {path} (procbench packet writes it)")
    return _check_key(_load_json(path, MAX_KEY_BYTES, "packet key"), str(path))


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
    warnings: list[str] = field(default_factory=list)

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
            "warnings": self.warnings,
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

    Answers carrying another packet's id are refused; answers carrying none whose question ids are not exactly
    the packet's are scored with a warning (:attr:`ScoreResult.warnings`).

    Raises:
        BadInput: no key, an unreadable answers file, answers carrying another packet's id, or (recording) a set
            changed since the packet was made.
    """
    if not answer_files:
        raise BadInput("give at least one answers file")
    key = load_key(folder)
    every: list[tuple[Path, Answers]] = []
    for path in answer_files:
        label = reader if reader is not None and len(answer_files) == 1 else None
        if reader is not None and len(answer_files) > 1:
            label = f"{reader}/{Path(path).stem}"
        every += [(Path(path), answers) for answers in read_answers(path, label)]
    scores: list[ReaderScore] = []
    unknown: dict[str, list[str]] = {}
    warnings: list[str] = []
    warned: set[Path] = set()
    known = set(key["questions"])
    for path, answers in every:
        if answers.packet_id is not None and answers.packet_id != key["packet_id"]:
            raise BadInput(
                f"{path}: the answers are to packet {answers.packet_id}, not to this packet ({key['packet_id']}); "
                "nothing was scored"
            )
        if answers.packet_id is None and answers.ids != known and path not in warned:
            warned.add(path)
            warnings.append(
                f"{path}: the answers carry no packet id and their question ids are not this packet's "
                f"({len(answers.ids & known)} of {len(known)} match, {len(answers.ids - known)} unknown): are they "
                f"answers to packet {key['packet_id']}?"
            )
        scores += _score(key, answers)
        extra = sorted(set(answers.letters) - known)
        if extra:
            unknown[answers.reader] = extra
        bad = sorted(q for q, letter in answers.letters.items() if q in known and letter not in LETTERS)
        if bad:
            raise BadInput(f"{answers.reader}: answers outside A-{LETTERS[-1]} for {_show(bad)}")
    result = ScoreResult(
        Path(folder), key["packet_id"], key["context"], int(key["seed"]), scores, unknown, warnings=warnings
    )
    if record:
        result.recorded = _record(key, scores, today or utc_now()[:10])
    return result
