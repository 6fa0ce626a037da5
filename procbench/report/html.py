"""HTML of the report: the index (sets, audit intervals, distance histograms, sweep tables) and one page per set.

Everything is generated here or copied beside the pages (CSS, JS, images): the pages load nothing from the
network. Charts are inline SVG.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

import numpy as np

from procbench import __version__
from procbench.card.glossary import explain, glossary_for, knob_values
from procbench.readers.views import headroom, headroom_html, readers_html
from procbench.report.data import SetView
from procbench.tasks import TASKS

__all__ = ["histogram_svg", "index_page", "interval_svg", "script_json", "set_page"]

#: Settings per audit table: a task with more gets several tables, so every table fits a 1400 px window.
AUDIT_COLUMNS = 7

_SYNTHETIC = (
    '<div class="banner" role="note"><strong>Synthetic images.</strong> The images in this report are shapes '
    "procbench draws for its bundled sample corpus (a palette and motif per procedure and step), not photographs: "
    "visual questions and scores here show how the pipeline works, not how models do on real images.</div>"
)

_CSP = (
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self';\">"
)


def _page(title: str, body: str, *, depth: int, script: str = "") -> str:
    prefix = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{_CSP}\n<title>{escape(title)}</title>\n"
        f'<link rel="stylesheet" href="{prefix}assets/report.css">\n</head>\n<body>\n'
        f'<header><h1>{escape(title)}</h1><div class="muted">procbench {__version__} report · '
        f'<a href="{prefix}index.html">overview</a></div></header>\n'
        f"<main>\n{body}\n</main>\n{script}</body>\n</html>\n"
    )


#: What JSON inside ``<script>`` must not contain as is: ``<`` (``</script>``, ``<!--``, ``<script`` change how the
#: HTML parser ends the block), ``>`` and ``&``; the line separators break older JavaScript parsers.
_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: every ``<``, ``>``, ``&`` written as a
    ``\\u`` escape (JSON.parse reads the same value), so no title can end or comment out the block."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_SCRIPT_ESCAPES)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def interval_svg(result: dict[str, Any], upper: float, *, width: int = 100) -> str:
    """A probe's value (dot), 95% interval (bar) and chance (tick) on ``[0, upper]``."""
    value = result.get("value")
    if value is None:
        return f'<span class="muted" title="{escape(str(result.get("reason", "")))}">n/a</span>'
    ci = result.get("ci") or [value, value]
    chance = result.get("chance")

    def x(v: float) -> float:
        return 4 + (width - 8) * min(max(v / upper, 0.0), 1.0) if upper > 0 else 4

    verdict = result.get("verdict") or ""
    flagged = result.get("flagged", verdict in ("above", "below") and not result.get("reference"))
    if result.get("reference"):
        verdict, colour = "reference", "#1f6f8b"
    elif flagged:
        colour = {"above": "#c0362c", "below": "#b54708"}.get(verdict, "#344054")
    else:
        verdict, colour = "", "#344054"
    parts = [
        f'<svg width="{width}" height="22" role="img" aria-label="value {value:.3f}">',
        f'<line x1="4" y1="11" x2="{width - 4}" y2="11" stroke="#eaecf0" stroke-width="2"/>',
        f'<line x1="{x(ci[0]):.1f}" y1="11" x2="{x(ci[1]):.1f}" y2="11" stroke="{colour}" stroke-width="4"/>',
        f'<circle cx="{x(value):.1f}" cy="11" r="4" fill="{colour}"/>',
    ]
    if chance is not None:
        parts.append(f'<line x1="{x(chance):.1f}" y1="2" x2="{x(chance):.1f}" y2="20" stroke="#101828"/>')
    parts.append("</svg>")
    label = f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" + (f", chance {chance:.3f}" if chance is not None else "")
    text = f'{value:.2f} <span class="ci">[{ci[0]:.2f}, {ci[1]:.2f}]</span>'  # 3 decimals in the tooltip
    return "".join(parts) + f'<div class="cell {escape(verdict)}" title="{escape(label)}">{text}</div>'


def histogram_svg(correct: list[float], wrong: list[float], *, title: str, to: str, bins: int = 30) -> str:
    """Paper 001 Fig. 2: densities of correct and wrong choices' distances to the question."""
    c, w = np.asarray(correct, dtype=float), np.asarray(wrong, dtype=float)
    both = np.concatenate([c, w])
    lo, hi = float(both.min()), float(both.max())
    edges = np.linspace(lo, hi + 1e-9, bins + 1)
    dc, _ = np.histogram(c, bins=edges, density=True)
    dw, _ = np.histogram(w, bins=edges, density=True)
    top = float(max(dc.max(), dw.max(), 1e-9))
    width, height, left, bottom, top_pad = 360, 214, 34, 40, 38  # title and legend above the bars
    plot_w, plot_h = width - left - 8, height - bottom - top_pad
    bar = plot_w / bins
    out = [f'<svg class="hist" width="{width}" height="{height}" role="img" aria-label="{escape(title)}">']
    out.append(f'<text x="{left}" y="12" class="title">{escape(title)}</text>')
    out.append(f'<rect x="{left}" y="19" width="10" height="10" fill="#f28e2b" fill-opacity="0.6"/>')
    out.append(f'<text x="{left + 14}" y="28">correct ({len(c)})</text>')
    out.append(f'<rect x="{left + 120}" y="19" width="10" height="10" fill="#4e79a7" fill-opacity="0.6"/>')
    out.append(f'<text x="{left + 134}" y="28">wrong ({len(w)})</text>')
    for series, colour in ((dw, "#4e79a7"), (dc, "#f28e2b")):
        for i, v in enumerate(series):
            h = plot_h * v / top
            out.append(
                f'<rect x="{left + i * bar:.1f}" y="{top_pad + plot_h - h:.1f}" width="{bar - 1:.1f}" '
                f'height="{h:.1f}" fill="{colour}" fill-opacity="0.6"/>'
            )
    base = top_pad + plot_h
    out.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" stroke="#344054"/>')
    out.append(f'<text x="{left}" y="{base + 14}">{lo:.2f}</text>')
    out.append(f'<text x="{left + plot_w}" y="{base + 14}" text-anchor="end">{hi:.2f}</text>')
    out.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{base + 30}" text-anchor="middle">distance to {escape(to)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


def generation_note(view: SetView) -> str:
    """What the set's generation left out, in words (from :attr:`SetView.generation`): why it has no question,
    else the procedures and drafted questions skipped, by reason; "" when nothing is known or skipped."""
    notes = view.generation
    if notes.get("empty"):
        return f"no questions: {notes['empty']}"
    parts = []
    for key, what in (("skipped_procedures", "procedures"), ("skipped_questions", "drafted questions")):
        counts = notes.get(key) or {}
        if counts:
            reasons = ", ".join(f"{reason.replace('_', ' ')} {n}" for reason, n in counts.items())
            parts.append(f"{sum(counts.values())} {what} skipped ({reasons})")
    return "; ".join(parts)


def _sets_table(views: list[SetView]) -> str:
    rows = [
        "<table><tr><th>set</th><th>test</th><th>val</th><th>train</th><th>shown</th><th>audited</th>"
        "<th>shortcut scores</th><th>left out by generation</th></tr>"
    ]
    for v in views:
        rows.append(
            f'<tr><td><a href="sets/{escape(v.slug)}.html">{escape(v.name)}</a></td>'
            + "".join(f'<td class="num">{v.splits.get(s, 0)}</td>' for s in ("test", "val", "train"))
            + f'<td class="num">{len(v.questions)}</td><td>{"yes" if v.audit else "no"}</td>'
            f"<td>{'yes' if v.has_scores else 'no'}</td>"
            f'<td class="{"warn" if v.generation.get("empty") else "muted"}">{escape(generation_note(v))}</td></tr>'
        )
    rows.append("</table>")
    return "\n".join(rows)


def _audit_table(views: list[SetView], probes: list[str]) -> str:
    """One table of ``probes`` (rows) by the settings of ``views`` (columns)."""
    out = [
        '<div class="scroll"><table class="audit"><tr><th>probe</th>'
        + "".join(
            f'<th><span title="{escape(_meaning(v.setting))}">{escape(v.setting)}</span>'
            f"<div class=muted>{v.total} questions</div></th>"
            for v in views
        )
        + "</tr>"
    ]
    for probe in probes:
        results = [(v.audit or {})["probes"].get(probe) or {} for v in views]
        values = [
            x
            for r in results
            for x in [r.get("value"), r.get("chance"), *(r.get("ci") or [])]
            if isinstance(x, (int, float))
        ]
        peak = max(values, default=1.0)
        upper = 1.0 if 0.3 < peak <= 1.0 else max(peak * 1.15, 1e-6)
        cells = "".join(f"<td>{interval_svg(r, upper)}</td>" for r in results)
        label = escape(probe)
        if any(r.get("reference") for r in results):
            label += '<div class="muted">reference: reads the context</div>'
        chances = {r.get("chance") for r in results if r.get("value") is not None}
        chance = chances.pop() if len(chances) == 1 else None
        if chance is not None:
            label += f'<div class="muted">chance {float(chance):.3f}</div>'
        out.append(f"<tr><th>{label}</th>{cells}</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _meaning(setting: str) -> str:
    """What ``setting`` means, in one line (its knob values, then the glossary's terms; empty when it has none)."""
    return " ".join([*filter(None, [knob_values(setting)]), *(term.meaning for term in explain(setting))])


def _glossary(views: list[SetView]) -> str:
    """The settings of the report's sets, explained (:mod:`procbench.card.glossary`)."""
    terms = glossary_for(list(dict.fromkeys(v.setting for v in views)))
    if not terms:
        return ""
    rows = "".join(
        f"<tr><th><code>{escape(t.name)}</code></th><td>{escape(t.tasks)}</td><td>{escape(t.meaning)}</td></tr>"
        for t in terms
    )
    return (
        '<h2 id="settings">Settings</h2>\n<p class="muted">A setting is one way of choosing a question\'s '
        "wrong choices; each set is a task under one setting.</p>\n"
        f'<table class="glossary"><tr><th>setting</th><th>tasks</th><th>what it means</th></tr>{rows}</table>'
    )


def _audit_tables(views: list[SetView]) -> str:
    out: list[str] = []
    for task in dict.fromkeys(v.task for v in views):
        audited = [v for v in views if v.task == task and v.audit and v.audit.get("probes")]
        if not audited:
            continue
        probes = list(dict.fromkeys(p for v in audited for p in (v.audit or {})["probes"]))
        out.append(f"<h3>{escape(task)}</h3>")
        absent: dict[str, list[str]] = {}  # reason -> probes that apply to none of the sets: listed, not n/a rows
        for probe in probes:
            results = [(v.audit or {})["probes"].get(probe) or {} for v in audited]
            if all(r.get("value") is None for r in results):
                reason = "; ".join(sorted({str(r["reason"]) for r in results if r.get("reason")}))
                absent.setdefault(reason, []).append(probe)
        shown = [p for p in probes if not any(p in names for names in absent.values())]
        for start in range(0, len(audited), AUDIT_COLUMNS):
            out.append(_audit_table(audited[start : start + AUDIT_COLUMNS], shown))
        for reason, names in absent.items():
            listed = ", ".join(f"<b>{escape(n)}</b>" for n in names)
            why = f": {escape(reason)}" if reason else ""
            out.append(f'<p class="muted">Not applicable to any {escape(task)} set: {listed}{why}.</p>')
    if not out:
        return '<p class="muted">No audit yet: run <code>procbench audit TASK</code>.</p>'
    legend = (
        '<p class="muted">Value [bootstrap 95% interval over procedures]. Dot: value; bar: the interval; tick: '
        "chance. Red: the interval lies above chance (a shortcut answers better than chance without the "
        "context); amber: below chance (the shortcut inverted); blue: a reference probe that reads the context "
        "(above chance is expected).</p>"
    )
    return legend + _audit_settings(views) + "\n".join(out)


def _audit_settings(views: list[SetView]) -> str:
    """How the sets were audited (folds, bootstrap replicates, the partial-input trees), from the probes' details:
    ``procbench demo`` audits at a smaller size than ``procbench audit``, and the report says so."""
    found: dict[str, set[str]] = {"n_folds": set(), "n_boot": set(), "trees": set()}
    for v in views:
        for result in ((v.audit or {}).get("probes") or {}).values():
            details = (result or {}).get("details") or {}
            for key, values in found.items():
                if details.get(key) is not None:
                    values.add(str(details[key]))
    parts = []
    if found["n_folds"]:
        parts.append(f"{' / '.join(sorted(found['n_folds'], key=int))} procedure-grouped folds")
    if found["n_boot"]:
        parts.append(f"{' / '.join(sorted(found['n_boot'], key=int))} bootstrap replicates per interval")
    if found["trees"]:
        parts.append("partial-input trees of " + " / ".join(sorted(found["trees"])))
    if not parts:
        return ""
    return f'<p class="muted">Audited with {escape("; ".join(parts))}.</p>'


def _histograms(views: list[SetView]) -> str:
    out = []
    for v in views:
        if v.distances:
            out.append(histogram_svg(v.distances["correct"], v.distances["wrong"], title=v.name, to=v.distances["to"]))
    if not out:
        return '<p class="muted">No distances: the sets have no embedded items (run procbench embed).</p>'
    return (
        '<p class="muted">Distances of correct (orange) and wrong (blue) choices to the question, measured with the '
        "store's embeddings as the audit does (paper 001 Fig. 2): where the two differ, distances alone give the "
        "answer away.</p>" + "\n".join(out)
    )


def _sweeps(tables: list[dict[str, Any]]) -> str:
    if not tables:
        return '<p class="muted">No trained runs found (procbench train, then procbench report --runs RUN).</p>'
    out = []
    for table in tables:
        settings = table.get("settings") or []
        out.append(
            f"<h3>{escape(str(table.get('task')))} · {escape(str(table.get('split')))} · "
            f"{escape(str(table.get('metric')))}</h3>"
        )
        out.append(
            "<table><tr><th>model</th>"
            + "".join(f"<th>{escape(s)}</th>" for s in settings)
            + "<th>mean ± std</th></tr>"
        )
        for row in table.get("rows", []):
            cells = []
            for s in settings:
                value = (row.get("values") or {}).get(s)
                ci = (row.get("ci") or {}).get(s)
                text = "" if value is None else f"{100 * value:.1f}"
                if ci:
                    text += f' <span class="muted">[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]</span>'
                cells.append(f'<td class="num">{text}</td>')
            mean, std = row.get("mean"), row.get("std")
            summary = "" if mean is None else f"{100 * mean:.1f} ± {100 * (std or 0):.1f}"
            out.append(f"<tr><th>{escape(str(row.get('model')))}</th>{''.join(cells)}<td>{summary}</td></tr>")
        out.append("</table>")
    return "\n".join(out)


def index_page(views: list[SetView], tables: list[dict[str, Any]], *, title: str) -> str:
    """The overview page."""
    body = "\n".join(
        [
            _SYNTHETIC if any(v.synthetic_images for v in views) else "",
            '<h2 id="sets">Question sets</h2>',
            _sets_table(views),
            _glossary(views),
            '<h2 id="audit">Audit: shortcut probes side by side</h2>',
            _audit_tables(views),
            readers_html((v.name, v.readers) for v in views),
            headroom_html(headroom(v.name, v.readers, v.models) for v in views),
            '<h2 id="distances">Distances of choices to the question</h2>',
            _histograms(views),
            '<h2 id="baselines">Baselines (evaluate\'s sweep table, accuracy %)</h2>',
            _sweeps(tables),
        ]
    )
    return _page(title, body, depth=0)


def _why_no_scores(task: str) -> str:
    """What to do for a set's per-question shortcut scores, or why there are none: the audit scores a choice by
    its own features, which an order of items does not have."""
    spec = TASKS.find(task)
    if spec is not None and spec.kind.ordering:
        return "its choices are orders of items: the audit's probes read orders as a whole set"
    return "procbench audit --per-question"


def set_page(view: SetView, *, instruction: str) -> str:
    """One set's question browser (the questions are JSON inside the page; report.js renders them)."""
    data = {
        "name": view.name,
        "instruction": instruction,
        "total": view.total,
        "has_scores": view.has_scores,
        "questions": view.questions,
    }
    payload = script_json(data)
    splits = "".join(f'<option value="{s}">{s} ({n})</option>' for s, n in view.splits.items() if n)
    score = (
        '<label>shortcut score ≥ <input id="score" type="range" min="0" max="1" step="0.05" value="0"> '
        '<span id="score-value">0.00</span></label>'
        if view.has_scores
        else f'<span class="muted">no per-question shortcut scores ({_why_no_scores(view.task)})</span>'
    )
    controls = (
        '<div class="controls"><label>split <select id="split"><option value="all">all</option>'
        f"{splits}</select></label>{score}"
        '<label><input type="checkbox" id="reveal"> show answers</label>'
        '<span class="pager"><button id="prev">previous</button><button id="next">next</button></span>'
        '<span id="status" class="muted"></span></div>'
    )
    note = (
        f'<p class="muted">{len(view.questions)} of {view.total} questions shown (test first). Click a choice '
        "to see the answer marked in green (or tick show answers); the context is folded under each question.</p>"
    )
    meaning = _meaning(view.setting)
    about = ""
    if meaning:
        about = f"<p><strong>Setting <code>{escape(view.setting)}</code>:</strong> {escape(meaning)}</p>"
    banner = _SYNTHETIC if view.synthetic_images else ""
    left_out = generation_note(view)
    if left_out:  # an empty set says why; a set that skipped procedures or questions says which and why
        cls = "warn" if view.generation.get("empty") else "muted"
        note += f'<p class="{cls}">Generation: {escape(left_out)}.</p>'
    body = f'{banner}\n{about}\n{note}\n{controls}\n<div id="questions"></div>\n'
    script = (
        f'<script id="qset-data" type="application/json">{payload}</script>\n'
        '<script src="../assets/report.js"></script>\n'
    )
    return _page(f"{view.name}", body, depth=1, script=script)
