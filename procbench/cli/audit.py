from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, SeedOption, StoreOption

NAME = "audit"

_VERDICT_STYLE = {"above": "bold red", "below": "bold red", "chance": "green"}
#: Marks a flagged value in words as well as in red, so piped output (no colour) still shows the bias.
_BIAS_MARK = {"above": " BIAS+", "below": " BIAS-"}


def command(
    qsets: Annotated[
        list[str],
        typer.Argument(
            help="Question sets: set folders, TASK/SETTING in --store, or RecipeQA JSON files (--format recipeqa).",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="'procbench' (set folders) or 'recipeqa' (RecipeQA JSON files).")
    ] = "procbench",
    probes: Annotated[
        str | None, typer.Option("--probes", help="Comma-separated probes to run (default: all).")
    ] = None,
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Write PNG plots (distance histograms, answer positions) here.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where to write audit.json (default: inside the set folder, or the sets' common folder)."
        ),
    ] = None,
    images: Annotated[
        Path | None, typer.Option("--images", help="recipeqa: the folder image names are relative to.")
    ] = None,
    per_question: Annotated[
        bool,
        typer.Option(
            "--per-question",
            help="Also write shortcut_scores.parquet in each set folder: per question, the cross-fitted probability"
            " that the context-free probes pick the answer.",
        ),
    ] = False,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates per interval.", min=10)] = 1000,
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds (grouped by procedure).", min=2)] = 5,
    store: StoreOption = DEFAULT_STORE,
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Audit question sets for biases, side by side: shortcut probes with chance levels and 95% intervals.

    Probes: choice_only (a classifier seeing only the choices), question_distance (SVM on choice-to-question
    distances and their ranks, paper 001 Fig. 2), hubness (the most or least central or dense choice in the set's
    embedding space: negatives drawn from an answer's neighbours are hubs), partial_input (gradient-boosted trees
    on context-free per-choice features), answer_position, length and lexical_overlap (text choices),
    cluster_balance (correct vs wrong choices over KMeans clusters) and question_overlap (answers revealed by
    another question of the same procedure); context_reference (what the context gives: each choice's similarity to
    the context's steps) and context_overlap (text choices: the choice sharing most words with the context) are
    references: what reading gives, never flagged. A shortcut probe whose interval lies above or below chance is
    flagged. Writes audit.json; --plots DIR adds PNG plots; --per-question adds shortcut_scores.parquet.
    """
    from procbench.audit import PROBES, run_audit
    from procbench.cli._console import console, print_json, progress_bar

    with progress_bar() as progress:
        run = run_audit(
            qsets,
            format=fmt,
            store=store,
            images=images,
            out=out,
            plots=plots,
            seed=seed,
            n_boot=n_boot,
            n_folds=folds,
            probes=probes,
            per_question=per_question,
            progress=progress,
        )
    if json:
        summary = run.report.to_dict()
        if per_question:
            summary["shortcut_scores"] = {name: str(path) for name, path in run.scores.items()}
            summary["shortcut_scores_not_written"] = run.scores_notes
        print_json(summary)
        return
    _render(console, run, {name: spec.kind for name, spec in PROBES.items()})


def _fmt(kind: str, x: float, unit: bool = True) -> str:
    """A probe's number: a percentage for accuracies, shares and rates, else three decimals."""
    if kind in ("accuracy", "share", "rate"):
        return f"{x:.1%}" if unit else f"{100 * x:.1f}"
    return f"{x:.3f}"


def _cell(result: Any, kind: str) -> str:
    """``value [lo-hi]`` (coloured by verdict, and ``BIAS+``/``BIAS-`` when flagged) over ``chance c``; ``n/a``
    when the probe does not apply."""
    if result.value is None:
        return "[dim]n/a[/]"

    def fmt(x: float, unit: bool = True) -> str:
        return _fmt(kind, x, unit)

    if result.reference:
        style = "bold blue" if result.verdict == "above" else ""
    else:
        style = _VERDICT_STYLE.get(result.verdict or "", "")
    value = fmt(result.value) + (_BIAS_MARK.get(result.verdict or "", "") if result.flagged else "")
    text = f"[{style}]{value}[/]" if style else value
    if result.ci is not None:
        text += f" [{fmt(result.ci[0], False)}-{fmt(result.ci[1], False)}]"
    text += f"\n[dim]chance {fmt(result.chance)}[/]" if result.chance is not None else "\n[dim]no chance level[/]"
    return text


def _render(console: Any, run: Any, kinds: dict[str, str]) -> None:
    from rich.markup import escape
    from rich.table import Table

    report = run.report
    table = Table(
        title=(
            "Bias audit: value \\[95% interval] and chance level; red and BIAS+ = a bias (interval above chance;"
            " BIAS-: below it, a shortcut with the sign flipped); blue = what the context gives (reference)"
        ),
        title_justify="left",
        show_lines=True,
    )
    table.add_column("probe", no_wrap=True)
    for name, audit in report.sets.items():
        table.add_column(f"{escape(name)}\n[dim]{audit.n_questions} questions[/]", overflow="fold")
    reasons: dict[str, int] = {}
    for probe in report.probe_names:
        cells = []
        for audit in report.sets.values():
            result = audit.probes.get(probe)
            if result is None:
                cells.append("")
                continue
            cell = _cell(result, kinds.get(probe, ""))
            if result.reason:
                number = reasons.setdefault(result.reason, len(reasons) + 1)
                cell += f" [dim]({number})[/]"
            cells.append(cell)
        table.add_row(probe, *cells)
    console.print(table)
    for reason, number in reasons.items():
        console.print(f"[dim]({number}) {escape(reason)}[/]", highlight=False)
    for name, audit in report.sets.items():
        console.print(verdict_line(name, audit, kinds), highlight=False, soft_wrap=True)
        repeated = audit.probes.get("repeated_items")
        if repeated is not None and repeated.value:  # a broken question, whatever the shortcut probes say
            details = repeated.details or {}
            console.print(
                f"[bold red]{escape(name)}: {details.get('questions')} questions show one item twice[/] "
                f"(repeated_items; e.g. {escape(', '.join(details.get('examples', [])))})",
                highlight=False,
                soft_wrap=True,
            )
    console.print(f"audit.json -> {run.report_path}", highlight=False)
    if run.plots:
        console.print(f"{len(run.plots)} plots -> {run.plots[0].parent}", highlight=False)
    for name, path in run.scores.items():
        console.print(f"shortcut scores of {escape(name)} -> {path}", highlight=False)
    for name, note in run.scores_notes.items():
        console.print(f"[yellow]no shortcut scores for {escape(name)}:[/] {escape(note)}", highlight=False)


def verdict_line(name: str, audit: Any, kinds: dict[str, str]) -> str:
    """One line per set: ``NAME: BIASED (2 of 9 shortcut probes off chance): length 61.0% BIAS+ (chance 25.0%),
    ...`` or ``NAME: no bias found (9 shortcut probes at chance)``; readable without colour."""
    from rich.markup import escape

    shortcuts = {p: r for p, r in audit.probes.items() if not r.reference and r.verdict is not None}
    flagged = {p: r for p, r in shortcuts.items() if r.flagged}
    skipped = sum(1 for r in audit.probes.values() if r.value is None)
    tail = f"; {skipped} did not apply" if skipped else ""
    if not shortcuts:
        return f"[bold]{escape(name)}[/]: no verdict (no shortcut probe with a chance level applies{tail})"
    if not flagged:
        return f"[bold]{escape(name)}[/]: [green]no bias found[/] ({len(shortcuts)} shortcut probes at chance{tail})"
    found = ", ".join(
        f"{p} {_fmt(kinds.get(p, ''), r.value)}{_BIAS_MARK[r.verdict]} (chance {_fmt(kinds.get(p, ''), r.chance)})"
        for p, r in flagged.items()
    )
    return (
        f"[bold]{escape(name)}[/]: [bold red]BIASED[/] ({len(flagged)} of {len(shortcuts)} shortcut probes off "
        f"chance{tail}): {found}"
    )
