"""Blinded reader packets: a sample of questions that people or language-model readers answer.

A packet is a folder:

- ``packet.md``: the answer sheet for people and language-model readers (instructions, how to answer, the
  questions under neutral ids ``Q01``, ``Q02``, ... with their choices lettered A, B, ...);
- ``packet.json``: the same sheet as JSON (no answers);
- ``images/``: the images of visual questions under neutral names (``Q03-1.png`` for the question's first
  item, ``Q03-B.png`` for choice B), re-encoded as PNG: one format every viewer opens, and no metadata (an
  EXIF time stamp would give the steps' order away);
- ``key.json``: each neutral id -> the set, its qid and the answer letter. Keep it away from readers;
  ``procbench score-packet`` reads it.
- ``.procbench-export.json``: the marker naming the files written (``--overwrite`` replaces only a folder holding
  one of the same kind, and of it only the files it lists: :mod:`procbench.export.target`).

Every packet has an id (:func:`packet_id`, 12 hex digits of its key) shown on the sheet and asked for in the
answers, so that answers to one packet are not scored against another (their neutral ids are alike).

Blinding (what the sheet never shows): the set's setting, source, procedure id or title, url, qid and answer.
Questions are drawn with at most one question per procedure over the whole packet (a second question about
the same procedure would give the first one's answer away), shown in a shuffled order, and their choices are
reshuffled so that the answer letters are as uniform as possible over the packet (:func:`balanced_letters`).
Everything is deterministic by the seed: same sets + same seed = same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.errors import BadInput
from procbench.export.inline import Inliner
from procbench.export.sets import resolve_sets
from procbench.export.target import EXPORT_MARKER, ExportFormat, prepare_target, read_marker
from procbench.progress import SILENT, Progress
from procbench.qsets.files import QuestionSet
from procbench.qsets.splits import SPLITS
from procbench.store import Store, is_image_id
from procbench.store.images import BadImage
from procbench.tasks import TASKS

__all__ = [
    "BLANK",
    "CONTEXT_MODES",
    "DEFAULT_N",
    "ITEMS_TO_ORDER",
    "KEY_FILE",
    "LETTERS",
    "PACKET_FILE",
    "PACKET_OUTPUT",
    "SHEET_FILE",
    "Packet",
    "PacketResult",
    "balanced_letters",
    "build_packet",
    "check_out",
    "context_label",
    "lone_blank",
    "make_packet",
    "packet_id",
    "packet_files",
    "packet_markdown",
    "planned_files",
    "question_fingerprints",
    "write_packet",
]

#: Choice letters, in order.
LETTERS = "ABCDEFGH"
#: What the items of a question whose choices are orders are called (visual ordering).
ITEMS_TO_ORDER = "Items (numbered; each choice lists them from first to last)"
#: How the blank of a cloze question is shown.
BLANK = "____"
#: ``--context``: show the procedure's context, or the question alone.
CONTEXT_MODES = ("with", "without")
SHEET_FILE = "packet.md"
PACKET_FILE = "packet.json"
KEY_FILE = "key.json"
KEY_FORMAT = "procbench-reader-key/1"
PACKET_FORMAT = "procbench-reader-packet/1"
#: ``--split``: the split questions are drawn from (``all``: every split).
SPLIT_CHOICES = (*SPLITS, "all")
#: Questions of each set drawn when ``--n`` is not given (fewer when the split holds fewer from distinct
#: procedures): the size of the blinded samples the reader checks use (benchmarks/reader_checks.md).
DEFAULT_N = 40
#: A neutral image name in a packet: ``images/Q03-1.png`` (item 1) or ``images/Q03-B.png`` (choice B).
_IMAGE_NAME = re.compile(r"images/Q[0-9]{1,9}-(?:[0-9]{1,3}|[A-H])\.png")
_PACKET_NAMES = (SHEET_FILE, PACKET_FILE, KEY_FILE)


def packet_files(rel: str) -> bool:
    """Whether ``rel`` (relative to the packet's folder) is a file ``procbench packet`` writes."""
    return rel in _PACKET_NAMES or _IMAGE_NAME.fullmatch(rel) is not None


#: A reader packet (its folder's marker; ``--overwrite`` replaces only such a folder's listed files).
PACKET_OUTPUT = ExportFormat("procbench-reader-packet", "reader packet by procbench packet", packet_files)

_HOW_TO_ANSWER = (
    "Answer every question with the letter of one choice. Give your answers as one JSON object that maps each "
    'question id to its letter, with the packet id beside them, for example `{"packet_id": "...", "Q01": "B", '
    '"Q02": "D"}`. If no choice, or more than one '
    'choice, seems right, still pick the best one and add "?" after its letter (`"B?"`): the question is then '
    "counted as marked ambiguous. Answer each question on its own: the questions come from different "
    "procedures and do not help each other."
)
_WITH_CONTEXT = (
    "Each question comes with its context: the steps of the procedure it is taken from (for questions about "
    "step titles, only the steps' texts). Read the context before you answer."
)
_WITHOUT_CONTEXT = "No context is given: answer from the question and its choices alone."
_HOW_TO_CHOOSE = (
    "Pick one choice for every question. If no choice, or more than one choice, seems right, still pick the best "
    "one and mark the question ambiguous. Answer each question on its own: the questions come from different "
    "procedures and do not help each other."
)


def instructions(context: str, *, form: bool = False) -> str:
    """The sheet's instructions for ``context`` (``with`` or ``without``); ``form``: for a page or a labeling
    tool where readers click their answers, rather than write them as JSON."""
    return " ".join(
        [_WITH_CONTEXT if context == "with" else _WITHOUT_CONTEXT, _HOW_TO_CHOOSE if form else _HOW_TO_ANSWER]
    )


@dataclass
class Packet:
    """A packet in memory: the sheet's questions (no answers), the key and the images to copy."""

    context: str
    questions: list[dict[str, Any]]
    key: dict[str, Any]
    #: neutral file name (``images/Q03-B.png``) -> the stored image's bytes (read and checked through the store)
    images: dict[str, bytes] = field(default_factory=dict)
    #: why fewer than :data:`DEFAULT_N` questions of a set were taken (``--n`` not given), else None
    note: str | None = None

    @property
    def id(self) -> str:
        """The packet id (in the sheet, the key and the answers)."""
        return str(self.key["packet_id"])

    def sheet(self) -> dict[str, Any]:
        """``packet.json``: the sheet as data."""
        return {
            "format": PACKET_FORMAT,
            "packet_id": self.id,
            "context": self.context,
            "instructions": instructions(self.context),
            "questions": self.questions,
        }


@dataclass
class PacketResult:
    """What ``make_packet`` wrote."""

    out: Path
    questions: int
    per_set: dict[str, int]
    images: int
    context: str
    seed: int
    packet_id: str = ""
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "out": str(self.out),
            "packet_id": self.packet_id,
            "note": self.note,
            "sheet": str(self.out / SHEET_FILE),
            "packet": str(self.out / PACKET_FILE),
            "key": str(self.out / KEY_FILE),
            "questions": self.questions,
            "per_set": self.per_set,
            "images": self.images,
            "context": self.context,
            "seed": self.seed,
        }


# -- sampling ---------------------------------------------------------------------------------------------


def balanced_letters(choice_counts: Sequence[int], rng: np.random.Generator) -> list[int]:
    """A target answer position for each question, uniform over the packet as exactly as possible.

    Questions are grouped by their number of choices ``k``; within a group of ``m`` questions each position
    ``0..k-1`` is the target of ``floor(m/k)`` or ``ceil(m/k)`` of them (positions ``i mod k``, shuffled).
    """
    targets = [0] * len(choice_counts)
    for k in sorted(set(choice_counts)):
        members = [i for i, c in enumerate(choice_counts) if c == k]
        cycle = np.array([j % k for j in range(len(members))], dtype=np.int64)
        rng.shuffle(cycle)
        for i, target in zip(members, cycle.tolist(), strict=True):
            targets[i] = target
    return targets


def _reorder(n_choices: int, answer: int, target: int, rng: np.random.Generator) -> list[int]:
    """An order of the original choices (``order[position] = original index``) with the answer at ``target``."""
    others = [i for i in range(n_choices) if i != answer]
    rng.shuffle(others)
    return [*others[:target], answer, *others[target:]]


def _fixed_order(task: str) -> bool:
    """Tasks whose choices' order is part of the question (visual coherence: a sequence of images)."""
    spec = TASKS.find(task)
    return spec is not None and spec.kind.coherence


def _check_task(qset: QuestionSet) -> None:
    spec = TASKS.find(qset.task)
    if spec is None:
        raise BadInput(f"{qset.name}: unknown task {qset.task!r}")
    if spec.family == "sequencing":
        raise BadInput(
            f"{qset.name}: {qset.task} questions have no choices to pick from (the answer is an order); "
            "packets hold multiple-choice questions"
        )


def _candidates(qset: QuestionSet, split: str) -> pa.Table:
    splits = SPLITS if split == "all" else (split,)
    tables = [qset.split(s).select(["qid", "procedure_id"]) for s in splits if (qset.path / f"{s}.parquet").is_file()]
    if not tables:
        return pa.table({"qid": pa.array([], pa.string()), "procedure_id": pa.array([], pa.string())})
    table = pa.concat_tables(tables)
    return table.take(pc.sort_indices(table, [("qid", "ascending")]))


def question_fingerprints(qset: QuestionSet, qids: set[str]) -> dict[str, str]:
    """``qid -> sha256`` (16 hex digits) of each question's items, choices and answer, for ``qids`` of ``qset``:
    a question rewritten under the same qid (``generate --overwrite``) gets another fingerprint."""
    wanted = pa.array(sorted(qids), pa.string())
    out: dict[str, str] = {}
    for s in SPLITS:
        if not (qset.path / f"{s}.parquet").is_file():
            continue
        table = qset.split(s).select(["qid", "question", "choices", "answer"])
        table = table.filter(pc.is_in(table["qid"], value_set=wanted))
        for row in table.to_pylist():
            basis = json.dumps([row["question"], row["choices"], row["answer"]], sort_keys=True, default=str)
            out[row["qid"]] = hashlib.sha256(basis.encode()).hexdigest()[:16]
    return out


def _where(split: str) -> str:
    return "all splits" if split == "all" else f"the {split} split"


def _too_few(qset: QuestionSet, found: int, n: int, split: str) -> BadInput:
    wider = "" if split == "all" else ", pass --split all"
    return BadInput(
        f"{qset.name}: only {found} questions from distinct procedures in {_where(split)} (asked --n {n}); "
        f"lower --n, leave it out (at most 40, as many as there are){wider}, or give fewer sets "
        "(sets share procedures)"
    )


def _sample(
    sets: list[QuestionSet], n: int | None, split: str, rng: np.random.Generator
) -> list[tuple[QuestionSet, str, str]]:
    """``n`` questions of each set (``None``: up to :data:`DEFAULT_N`, as many as there are), at most one per
    procedure over all sets: ``(set, qid, procedure_id)``.

    Each set's questions are visited in a random order; the sets take turns (one question each per round),
    so sets sharing procedures share them fairly. ``n`` is checked against each set's distinct procedures
    before anything is drawn.
    """
    queues = []
    for qset in sets:
        table = _candidates(qset, split)
        if n is not None:
            distinct = pc.count_distinct(table["procedure_id"]).as_py() if table.num_rows else 0
            if n > distinct:
                raise _too_few(qset, int(distinct), n, split)
        order = rng.permutation(table.num_rows)
        qids, procs = table["qid"].to_pylist(), table["procedure_id"].to_pylist()
        queues.append([(qids[i], procs[i]) for i in order.tolist()])
    used: set[str] = set()
    cursor = [0] * len(sets)
    chosen: list[list[tuple[QuestionSet, str, str]]] = [[] for _ in sets]
    rounds = DEFAULT_N if n is None else n  # n is at most a set's questions here: the loop is bounded
    for _ in range(rounds):
        if all(cursor[s] >= len(queue) for s, queue in enumerate(queues)):
            break
        for s, qset in enumerate(sets):
            queue = queues[s]
            while cursor[s] < len(queue) and queue[cursor[s]][1] in used:
                cursor[s] += 1
            if cursor[s] < len(queue):
                qid, proc = queue[cursor[s]]
                used.add(proc)
                chosen[s].append((qset, qid, proc))
                cursor[s] += 1
    for qset, picks in zip(sets, chosen, strict=True):
        if n is not None and len(picks) < n:
            raise _too_few(qset, len(picks), n, split)
        if not picks:
            raise BadInput(f"{qset.name}: no questions in {_where(split)}; pass --split all or another --split")
    return [pick for picks in chosen for pick in picks]


# -- rendering --------------------------------------------------------------------------------------------


def _sheet_item(item: dict[str, Any], image_name: str, images: dict[str, bytes], store: Store) -> dict[str, Any]:
    """An item as the sheet shows it: ``{"blank": true}`` or some of ``title``, ``text``, ``image``.

    Raises:
        BadImage: the item's image is missing from the store, a link, or not an image.
    """
    if item["key"] == "@placeholder":
        return {"blank": True}
    out: dict[str, Any] = {}
    image = item["image"] or (item["key"] if is_image_id(item["key"]) else None)  # an image item: never its id
    if image:
        images[image_name] = store.read_image(image)
        out["image"] = image_name
    if item["title"]:
        out["title"] = item["title"]
    if item["text"]:
        out["text"] = item["text"]
    return out


def _sheet_question(
    neutral: str,
    record: dict[str, Any],
    order: list[int],
    *,
    context: str,
    whole: bool,
    store: Store,
    images: dict[str, bytes],
) -> dict[str, Any]:
    question = [
        _sheet_item(item, f"images/{neutral}-{i + 1}.png", images, store) for i, item in enumerate(record["question"])
    ]
    choices: list[dict[str, Any]] = []
    for position, original in enumerate(order):
        letter = LETTERS[position]
        if record["choice_orders"]:
            choice: dict[str, Any] = {"order": [p + 1 for p in record["choice_orders"][original]]}
        else:
            choice = _sheet_item(record["choices"][original], f"images/{neutral}-{letter}.png", images, store)
        choices.append({"letter": letter, **choice})
    out: dict[str, Any] = {"id": neutral, "instruction": record["instruction"]}
    if context == "with" and record["context"]:
        # numbered only when the context is the whole procedure (``whole``): a part of it (needs-context: the
        # blank's step alone) numbered by its position would tell a reader where the blank lies
        out["context"] = [
            {
                k: v
                for k, v in (("step", c["index"] + 1 if whole else None), ("title", c["title"]), ("text", c["text"]))
                if v
            }
            for c in record["context"]
            if c["title"] or c["text"]
        ]
    out["question"] = question
    out["choices"] = choices
    if record["choice_orders"]:
        out["choices_are"] = "orders"
    return out


def build_packet(
    targets: Sequence[str | Path],
    *,
    store: str | Path = "procbench-store",
    n: int | None = None,
    context: str = "without",
    seed: int = 0,
    split: str = "test",
    progress: Progress = SILENT,
) -> Packet:
    """Sample and blind ``n`` questions of each set of ``targets`` (``TASK``, ``TASK/SETTING`` or set folders);
    ``n`` None: up to :data:`DEFAULT_N` of each set, fewer when the split holds fewer from distinct procedures
    (:attr:`Packet.note` says so). Every image is read and checked through the store before anything is written.

    Raises:
        BadInput: an unknown context mode or split, a task without choices (sequencing), a set with fewer
            than ``n`` questions from procedures no other question of the packet uses, or (BadImage) an image
            missing from the store, a link or not an image.
    """
    if context not in CONTEXT_MODES:
        raise BadInput(f"--context must be one of {', '.join(CONTEXT_MODES)}, not {context!r}")
    if split not in SPLIT_CHOICES:
        raise BadInput(f"--split must be one of {', '.join(SPLIT_CHOICES)}, not {split!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise BadInput(f"--n must be an integer of at least 1, not {n!r}")
    resolved = resolve_sets([str(t) for t in targets], store)
    for qset in resolved.sets:
        _check_task(qset)
    rng = np.random.default_rng(seed)
    picks = _sample(resolved.sets, n, split, rng)
    width = max(2, len(str(len(picks))))
    shown = rng.permutation(len(picks)).tolist()  # shown[k]: the pick shown as the k-th question
    neutral_of = {shown[k]: f"Q{k + 1:0{width}d}" for k in range(len(picks))}
    wanted: dict[str, dict[str, int]] = {}
    for i, (qset, qid, _) in enumerate(picks):
        wanted.setdefault(qset.name, {})[qid] = i
    inliner = Inliner(resolved.store, {proc for _, _, proc in picks})
    records: list[dict[str, Any] | None] = [None] * len(picks)
    progress.start("packet", total=len(picks))  # progress counts the questions found
    for qset in resolved.sets:
        mine = wanted.get(qset.name, {})
        for s in SPLITS:
            for record in inliner.records(qset, s):
                at = mine.get(record["qid"])
                if at is not None and records[at] is None:
                    records[at] = record
                    progress.advance()
    counts = [len(r["choice_orders"] or r["choices"]) if r is not None else 0 for r in records]
    shuffled = [not _fixed_order(qset.task) for qset, _, _ in picks]
    # balance the letters over the questions shown in sheet order (the order does not change the counts)
    sheet_order = [shown[k] for k in range(len(picks))]
    free = [i for i in sheet_order if shuffled[i]]
    targets_of = dict(zip(free, balanced_letters([counts[i] for i in free], rng), strict=True))
    questions: list[dict[str, Any]] = []
    images: dict[str, bytes] = {}
    key_questions: dict[str, dict[str, Any]] = {}
    fingerprints = {q.name: question_fingerprints(q, set(wanted.get(q.name, {}))) for q in resolved.sets}
    for i in sheet_order:
        qset, qid, _ = picks[i]
        record = records[i]
        if record is None:
            raise BadInput(f"{qset.name}: question {qid} vanished while the packet was made; run it again")
        answer = int(record["answer"])
        if i in targets_of:
            order = _reorder(counts[i], answer, targets_of[i], rng)
        else:
            order = list(range(counts[i]))
        neutral = neutral_of[i]
        whole = inliner.whole_context(record)
        try:
            questions.append(
                _sheet_question(
                    neutral, record, order, context=context, whole=whole, store=resolved.store, images=images
                )
            )
        except BadImage as exc:
            raise BadImage(f"{qset.name} question {qid}: {exc}; nothing was written") from None
        key_questions[neutral] = {
            "set": qset.name,
            "task": qset.task,
            "setting": qset.setting,
            "qid": qid,
            "split": record["split"],
            "answer": LETTERS[order.index(answer)],
            "choices": counts[i],
            "order": order,
            "fingerprint": fingerprints[qset.name].get(qid),
        }
    key: dict[str, Any] = {
        "format": KEY_FORMAT,
        "store": str(resolved.store.root.resolve()),
        "context": context,
        "n": n,
        "seed": seed,
        "split": split,
        "sets": {
            q.name: {
                "path": str(q.path.resolve()),
                "task": q.task,
                "setting": q.setting,
                "questions": len(wanted.get(q.name, {})),
            }
            for q in resolved.sets
        },
        "questions": key_questions,
    }
    per_set = {name: int(info["questions"]) for name, info in key["sets"].items()}
    key["packet_id"] = packet_id(key)
    note = None
    short = {name: count for name, count in per_set.items() if count < DEFAULT_N}
    if n is None and short:
        note = (
            f"{', '.join(f'{name}: {count}' for name, count in short.items())} questions "
            f"(--n not given: at most {DEFAULT_N} of each set, and {_where(split)} holds no more from distinct "
            "procedures)"
        )
    return Packet(context=context, questions=questions, key=key, images=images, note=note)


def packet_id(key: dict[str, Any]) -> str:
    """A short id of a packet: sha256 of its key's questions, context and seed (12 hex digits)."""
    basis = {k: key.get(k) for k in ("questions", "context", "seed", "split")}
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:12]


def _md_text(text: str) -> str:
    """One paragraph of Markdown: whitespace folded, characters that would start markup escaped."""
    folded = " ".join(str(text).split())
    for ch in ("\\", "`", "*", "_", "[", "]", "<"):  # items never start a line: "#", ">" stay as they are
        folded = folded.replace(ch, "\\" + ch)
    return folded


def context_label(steps: list[dict[str, Any]]) -> str:
    """What a sheet question's context is: the procedure's steps (numbered), or some of them (unnumbered)."""
    return "the procedure's steps" if all("step" in step for step in steps) else "some of the procedure's steps"


def lone_blank(question: list[dict[str, Any]]) -> bool:
    """Whether a sheet question is the blank alone (``needs-context``: the context says which step it is)."""
    return len(question) == 1 and bool(question[0].get("blank"))


def _md_item(item: dict[str, Any], alt: str) -> str:
    if item.get("blank"):
        return BLANK
    parts = []
    if item.get("image"):
        parts.append(f"![{alt}]({item['image']})")
    if item.get("title"):
        parts.append(f"**{_md_text(item['title'])}**" if item.get("text") else _md_text(item["title"]))
    if item.get("text"):
        parts.append(_md_text(item["text"]))
    return " ".join(parts) if parts else "(empty)"


def packet_markdown(packet: Packet) -> str:
    """``packet.md``: the answer sheet for people and language-model readers."""
    lines = ["# Reading check", "", f"Packet id: `{packet.id}`", "", instructions(packet.context), ""]
    letters = sorted({c["letter"] for q in packet.questions for c in q["choices"]})
    if letters:
        lines += [f"There are {len(packet.questions)} questions. Choices are lettered {letters[0]}-{letters[-1]}.", ""]
    for q in packet.questions:
        lines += ["---", "", f"## {q['id']}", "", _md_text(q["instruction"]), ""]
        if q.get("context"):
            lines += [f"**Context** ({context_label(q['context'])}):", ""]
            for step in q["context"]:
                lines.append(f"{step['step']}. " if "step" in step else "- ")
                lines[-1] += _md_item(step, "step image")
            lines.append("")
        if lone_blank(q["question"]):  # no number: "1." would say the blank is the procedure's first step
            lines += [f"**Question:** {BLANK}", ""]
        elif q["question"]:
            label = ITEMS_TO_ORDER if q.get("choices_are") else "Question"
            lines += [f"**{label}:**", ""]
            for i, item in enumerate(q["question"]):
                alt = f"{q['id']} item {i + 1}"
                lines.append(f"{i + 1}. {_md_item(item, alt)}")
            lines.append("")
        lines += ["**Choices:**", ""]
        for c in q["choices"]:
            if "order" in c:
                lines.append(f"- {c['letter']}. " + ", ".join(str(p) for p in c["order"]))
            else:
                alt = f"{q['id']} choice {c['letter']}"
                lines.append(f"- {c['letter']}. {_md_item(c, alt)}")
        lines.append("")
    lines += ["---", "", "Answers (one JSON object: the packet id, and every question id once):", ""]
    example = ", ".join(
        [f'"packet_id": "{packet.id}"'] + [json.dumps(q["id"]) + ': "?"' for q in packet.questions[:3]]
    )
    lines += ["```json", "{" + example + (", ..." if len(packet.questions) > 3 else "") + "}", "```", ""]
    return "\n".join(lines)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def check_out(out: Path, kind: ExportFormat = PACKET_OUTPUT, *, overwrite: bool) -> None:
    """``out`` may receive a ``kind`` of output (checked before the sample is drawn): it is missing or empty, or
    (with ``overwrite``) holds an earlier output of ``kind`` (its :data:`EXPORT_MARKER` says so).
    :func:`procbench.export.target.prepare_target` checks again, and replaces only the files the marker lists.

    Raises:
        BadInput: ``out`` is a file, is not empty and ``overwrite`` is false, or holds no marker of ``kind``.
    """
    if out.is_symlink() and not out.is_dir():
        raise BadInput(f"{out} is a symbolic link to no folder; choose another --out")
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out} is a file; --out takes a folder")
    if out.is_dir() and any(out.iterdir()):
        if read_marker(out, kind) is None:
            raise BadInput(
                f"{out} is not empty and holds no earlier {kind.label} (no {EXPORT_MARKER} of one); "
                "choose an empty or new folder"
            )
        if not overwrite:
            raise BadInput(
                f"{out} holds a {kind.label} already; pass --overwrite to replace it, or choose another folder"
            )
        # an earlier output's folders hold real files only: a link there is someone's trap (issue 34), refused
        entries = list(out.iterdir())
        entries += [c for sub in ("images", "assets") if (out / sub).is_dir() for c in (out / sub).iterdir()]
        linked = [entry for entry in entries if entry.is_symlink()]
        if linked:
            raise BadInput(f"{linked[0]} is a symbolic link; a packet is written only as real files and folders")


def planned_files(packet: Packet) -> list[str]:
    """The files (relative paths) :func:`write_packet` writes for ``packet``."""
    return sorted({*_PACKET_NAMES, *packet.images})


def write_packet(
    packet: Packet,
    out: str | Path,
    *,
    overwrite: bool = False,
    kind: ExportFormat = PACKET_OUTPUT,
    extra: Sequence[str] = (),
) -> Path:
    """Write ``packet`` into the folder ``out`` (sheet, JSON twin, key, images) with ``kind``'s marker listing them
    and ``extra`` (files the caller writes next); returns ``out``.

    Raises:
        BadInput: ``out`` is not empty and ``overwrite`` is false, or holds no earlier output of ``kind``, or a
            symbolic link or a file of the user's where the packet writes.
    """
    out = Path(out)
    prepare_target(out, sorted({*planned_files(packet), *extra}), kind, overwrite=overwrite)
    for name, data in sorted(packet.images.items()):
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_png(data, target)
    (out / SHEET_FILE).write_text(packet_markdown(packet), encoding="utf-8")
    (out / PACKET_FILE).write_text(_dump(packet.sheet()), encoding="utf-8")
    (out / KEY_FILE).write_text(_dump(packet.key), encoding="utf-8")
    return out


def _write_png(data: bytes, target: Path) -> None:
    """Image bytes re-encoded as a PNG at ``target``, turned upright by its EXIF orientation, with no metadata."""
    import io

    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as image:
        upright = ImageOps.exif_transpose(image)
        upright.convert("RGBA" if "A" in upright.getbands() else "RGB").save(target, format="PNG")


def make_packet(
    targets: Sequence[str | Path],
    out: str | Path,
    *,
    store: str | Path = "procbench-store",
    n: int | None = None,
    context: str = "without",
    seed: int = 0,
    split: str = "test",
    overwrite: bool = False,
    progress: Progress = SILENT,
) -> PacketResult:
    """Build a blinded packet of ``n`` questions of each set (:func:`build_packet`; ``n`` None: up to
    :data:`DEFAULT_N`) and write it to ``out``."""
    check_out(Path(out), overwrite=overwrite)
    packet = build_packet(targets, store=store, n=n, context=context, seed=seed, split=split, progress=progress)
    write_packet(packet, out, overwrite=overwrite)
    per_set = {name: int(info["questions"]) for name, info in packet.key["sets"].items()}
    return PacketResult(
        Path(out), len(packet.questions), per_set, len(packet.images), context, seed, packet.id, packet.note
    )
