"""Answer sheets for people: the report's answer mode (a static page) and a Label Studio project.

Both hold the same blinded sample as ``procbench packet`` with the same options and seed
(:func:`procbench.readers.packet.build_packet`), and write its ``key.json`` beside them, so
``procbench score-packet DIR ANSWERS.json`` scores what people answered:

- :func:`write_answer_page`: ``DIR/index.html`` shows one question at a time (neutral ids, reshuffled
  choices, the context or not) and downloads the answers as JSON in the format ``score-packet`` reads. It
  works offline from the folder (no network; stylesheet, script and images beside it). The page holds the
  questions and their neutral ids only: no answer, no qid, no set name.
- :func:`write_label_studio`: ``DIR/tasks.json`` (a Label Studio import: one task per question, the question
  as HTML with its images inlined) and ``DIR/labeling_config.xml`` (a single-choice answer and an
  "ambiguous" flag); ``score-packet`` reads Label Studio's JSON export of the annotations. Each task's data
  carries ``packet_id`` (Label Studio keeps it in its export), so ``score-packet`` refuses another packet's
  annotations.

Each writer marks its folder (:mod:`procbench.export.target`): ``--overwrite`` replaces only a folder the same
writer marked, and of it only the files its marker lists.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from procbench import __version__
from procbench.export.target import ExportFormat, prepare_target
from procbench.progress import SILENT, Progress
from procbench.readers.packet import (
    BLANK,
    ITEMS_TO_ORDER,
    KEY_FILE,
    LETTERS,
    Packet,
    build_packet,
    check_out,
    context_label,
    instructions,
    lone_blank,
    packet_files,
    write_packet,
)
from procbench.report.html import script_json

__all__ = [
    "ANSWER_PAGE_OUTPUT",
    "LABEL_CONFIG_FILE",
    "LABEL_STUDIO_OUTPUT",
    "PAGE_FILE",
    "TASKS_FILE",
    "SheetResult",
    "labeling_config",
    "question_html",
    "write_answer_page",
    "write_label_studio",
]

PAGE_FILE = "index.html"
TASKS_FILE = "tasks.json"
LABEL_CONFIG_FILE = "labeling_config.xml"
_ASSETS = ("report.css", "answer.css", "answer.js")
_PAGE_FILES = re.compile(r"index\.html|assets/(?:report\.css|answer\.css|answer\.js)")
#: An answer page (``report --answer-sheet``): the packet's files, the page and its assets.
ANSWER_PAGE_OUTPUT = ExportFormat(
    "procbench-answer-page",
    "answer sheet by procbench report --answer-sheet",
    lambda rel: packet_files(rel) or _PAGE_FILES.fullmatch(rel) is not None,
)
#: A Label Studio project (``export --format label-studio``): tasks, labeling config and the key.
LABEL_STUDIO_OUTPUT = ExportFormat(
    "procbench-label-studio-export",
    "Label Studio export by procbench export",
    lambda rel: rel in (TASKS_FILE, LABEL_CONFIG_FILE, KEY_FILE),
)
_CSP = (
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self';\">"
)


@dataclass
class SheetResult:
    """What an answer page or a Label Studio export wrote."""

    out: Path
    main: Path
    questions: int
    per_set: dict[str, int]
    images: int
    context: str
    packet_id: str = ""
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "out": str(self.out),
            "packet_id": self.packet_id,
            "note": self.note,
            "file": str(self.main),
            "key": str(self.out / KEY_FILE),
            "questions": self.questions,
            "per_set": self.per_set,
            "images": self.images,
            "context": self.context,
        }


def _result(packet: Packet, out: Path, main: Path) -> SheetResult:
    per_set = {name: int(info["questions"]) for name, info in packet.key["sets"].items()}
    return SheetResult(
        out, main, len(packet.questions), per_set, len(packet.images), packet.context, packet.id, packet.note
    )


def _sheet_id(sheet: dict[str, Any]) -> str:
    """An id of the sheet as readers see it (where the page keeps unfinished answers in the browser)."""
    return hashlib.sha256(json.dumps(sheet, sort_keys=True).encode()).hexdigest()[:12]


def answer_page(packet: Packet) -> str:
    """The answer page's HTML (the questions are JSON inside the page; ``answer.js`` renders them)."""
    sheet = packet.sheet()
    sheet["instructions"] = instructions(packet.context, form=True)
    sheet["sheet_id"] = _sheet_id(sheet)
    payload = script_json(sheet)  # every <, >, & escaped: no title can end or comment out the block (issue 34)
    title = "Reading check"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{_CSP}\n<title>{title}</title>\n"
        '<link rel="stylesheet" href="assets/report.css">\n<link rel="stylesheet" href="assets/answer.css">\n'
        "</head>\n<body>\n"
        f'<header><h1>{title}</h1><div class="muted">procbench {__version__} answer sheet</div></header>\n'
        "<main>\n"
        f'<p id="instructions">{escape(instructions(packet.context, form=True))}</p>\n'
        '<p class="muted">Click a choice to answer; your answers stay in this browser until you download them. '
        "Download them when you are done and send the file back.</p>\n"
        '<div class="controls"><span class="pager"><button id="prev">previous</button>'
        '<button id="next">next</button></span><span id="position"></span>'
        '<label>your name (optional) <input id="reader" type="text" size="14"></label>'
        '<button id="download">download answers</button><span id="status" class="muted"></span></div>\n'
        '<div id="sheet"></div>\n</main>\n'
        f'<script id="sheet-data" type="application/json">{payload}</script>\n'
        '<script src="assets/answer.js"></script>\n</body>\n</html>\n'
    )


def write_answer_page(
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
) -> SheetResult:
    """The report's answer mode: the packet of ``targets`` (as ``procbench packet`` samples it) as a static page
    ``out/index.html`` that people answer in a browser, offline; the key is ``out/key.json``. The answers it
    downloads carry the packet id."""
    check_out(Path(out), ANSWER_PAGE_OUTPUT, overwrite=overwrite)
    packet = build_packet(targets, store=store, n=n, context=context, seed=seed, split=split, progress=progress)
    out = Path(out)
    extra = [PAGE_FILE, *(f"assets/{name}" for name in _ASSETS)]
    write_packet(packet, out, overwrite=overwrite, kind=ANSWER_PAGE_OUTPUT, extra=extra)
    (out / "assets").mkdir(parents=True, exist_ok=True)
    for name in _ASSETS:
        source = resources.files("procbench.report").joinpath("assets", name)
        (out / "assets" / name).write_bytes(source.read_bytes())
    page = out / PAGE_FILE
    page.write_text(answer_page(packet), encoding="utf-8")
    return _result(packet, out, page)


# -- Label Studio -----------------------------------------------------------------------------------------


def _img(src: str, alt: str) -> str:
    return f'<img src="{escape(src)}" alt="{escape(alt)}" style="max-width:220px;display:block">'


def _item_html(item: dict[str, Any], alt: str, image_src: dict[str, str]) -> str:
    if item.get("blank"):
        return f"<b>{BLANK}</b>"
    parts = []
    if item.get("image") and item["image"] in image_src:
        parts.append(_img(image_src[item["image"]], alt))
    if item.get("title"):
        parts.append(f"<b>{escape(item['title'])}</b>")
    if item.get("text"):
        parts.append(escape(item["text"]))
    return " ".join(parts)


def question_html(question: dict[str, Any], image_src: dict[str, str]) -> str:
    """One sheet question as HTML (``image_src``: the sheet's image names -> what ``src`` to use)."""
    qid = question["id"]
    out = [f"<h3>{escape(qid)}</h3>", f"<p>{escape(question['instruction'])}</p>"]
    if question.get("context"):
        steps = question["context"]
        numbered = all("step" in step for step in steps)  # a part of the procedure is a list, not numbered from 1
        out.append(f"<p><b>Context</b> ({escape(context_label(steps))}):</p>{'<ol>' if numbered else '<ul>'}")
        for step in steps:
            value = f' value="{int(step["step"])}"' if numbered else ""
            out.append(f"<li{value}>{_item_html(step, 'step image', image_src)}</li>")
        out.append("</ol>" if numbered else "</ul>")
    if lone_blank(question["question"]):
        out.append(f"<p><b>Question:</b> <b>{BLANK}</b></p>")
    elif question["question"]:
        label = ITEMS_TO_ORDER if question.get("choices_are") else "Question"
        out.append(f"<p><b>{label}:</b></p><ol>")
        out += [
            f"<li>{_item_html(item, f'{qid} item {i + 1}', image_src)}</li>"
            for i, item in enumerate(question["question"])
        ]
        out.append("</ol>")
    out.append("<p><b>Choices:</b></p><ul>")
    for c in question["choices"]:
        if "order" in c:
            body = ", ".join(str(p) for p in c["order"])
        else:
            body = _item_html(c, f"{qid} choice {c['letter']}", image_src)
        out.append(f"<li><b>{c['letter']}.</b> {body}</li>")
    out.append("</ul>")
    return "".join(out)


def labeling_config(letters: int, context: str) -> str:
    """Label Studio's labeling config: the question (HTML), one answer letter, an optional ambiguity flag."""
    choices = "".join(f'<Choice value="{LETTERS[i]}"/>' for i in range(letters))
    return (
        "<View>\n"
        f'  <Header value="{escape(instructions(context, form=True))}"/>\n'
        '  <HyperText name="question" value="$html"/>\n'
        '  <Header value="Answer (the letter of one choice)"/>\n'
        '  <Choices name="answer" toName="question" choice="single-radio" required="true" showInline="true">'
        f"{choices}</Choices>\n"
        '  <Choices name="flags" toName="question" choice="multiple" showInline="true">'
        '<Choice value="ambiguous" hint="no choice, or more than one, seems right"/></Choices>\n'
        "</View>\n"
    )


def write_label_studio(
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
) -> SheetResult:
    """A Label Studio project for the packet of ``targets`` (the sample ``procbench packet`` draws with the same
    options): ``tasks.json`` to import, ``labeling_config.xml`` to paste as the labeling interface, and
    ``key.json`` for ``score-packet`` (which reads Label Studio's JSON export of the annotations)."""
    out = Path(out)
    check_out(out, LABEL_STUDIO_OUTPUT, overwrite=overwrite)
    packet = build_packet(targets, store=store, n=n, context=context, seed=seed, split=split, progress=progress)
    image_src = {  # the store's images are JPEGs, read and checked through its accessor (build_packet)
        name: "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")
        for name, data in sorted(packet.images.items())
    }
    tasks = [
        {"data": {"question_id": q["id"], "packet_id": packet.id, "html": question_html(q, image_src)}}
        for q in packet.questions
    ]
    letters = max((len(q["choices"]) for q in packet.questions), default=2)
    prepare_target(out, [TASKS_FILE, LABEL_CONFIG_FILE, KEY_FILE], LABEL_STUDIO_OUTPUT, overwrite=overwrite)
    (out / TASKS_FILE).write_text(json.dumps(tasks, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (out / LABEL_CONFIG_FILE).write_text(labeling_config(letters, packet.context), encoding="utf-8")
    (out / KEY_FILE).write_text(json.dumps(packet.key, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return _result(packet, out, out / TASKS_FILE)
