from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from procbench.cli._options import JsonOption, SeedOption

if TYPE_CHECKING:
    from rich.table import Table

NAME = "demo"


def command(
    store: Annotated[Path, typer.Option("--store", help="Where to build the demo store.")] = Path("procbench-demo"),
    seed: SeedOption = 0,
    json: JsonOption = False,
) -> None:
    """Run the whole working pipeline offline on the bundled sample corpus and show each task's recommended set.

    Builds a store from 45 team-written How-To procedures (woodworking, decoration, cooking) with
    generated step images (coloured shapes, not photos), generates every task (the recommended setting of each,
    visual needs-context included, beside the RecipeQA-style reference, the knobs all off and all on, and
    adversarial filtering), audits, trains two quick baselines, writes a static HTML report in STORE/report and
    a blinded reader packet of each recommended set in STORE/packets. It ends with a table: task, recommended
    setting, questions, the audit's verdict, the report page and reader packet, and the next command. Safe to
    re-run: stages skip what is already done.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.demo import run_demo

    with progress_bar() as progress:
        result = run_demo(store, seed=seed, progress=progress)
    if json:
        print_json(result)
        return
    for line in stage_lines(result):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(recommended_table(result, launcher()))


def stage_lines(result: dict[str, Any]) -> list[str]:
    """One line per stage (what it made, in numbers), then where the store and the report are."""
    stages = result["stages"]
    generated = stages["generate"]
    audit = stages["audit"]
    lines = [
        f"[bold]built[/]  {result['procedures']} procedures, {result['steps']} steps, {result['images']} images "
        f"(scraped from the sample site, cleaned, embedded with {stages['embed']['text_encoder']} and "
        f"{stages['embed']['image_encoder']})",
        f"[bold]sets[/]   {len(generated)} question sets of {len({k.split('/')[0] for k in generated})} tasks, "
        f"{sum(generated.values())} questions",
        f"[bold]audit[/]  {audit.get('probes_run', 0)} probe results, {audit.get('flagged', 0)} flagged "
        f"({audit.get('folds')} folds, {audit.get('bootstrap')} bootstrap replicates: the demo's size)",
        f"[bold]store[/]  {result['store']}",
        f"[bold]report[/] {result['report']} (open it in a browser)",
    ]
    skipped = stages.get("next-action", {}).get("skipped")
    if skipped:
        lines.append(f"[yellow]next-action left out[/]: {skipped}")
    return lines


def next_command(row: dict[str, Any], store: str, command: str) -> str:
    """What to try next with a recommended set: score a reader's answers to its packet, else (no packet) export
    it as a Hugging Face dataset."""
    import shlex

    if row["packet"] is not None:
        packet = shlex.quote(str(Path(store) / Path(row["packet"]).parent))
        return f"{command} score-packet {packet} ANSWERS.json"
    name = f"{row['task']}/{row['setting']}"
    return f"{command} export {name} --to {shlex.quote(row['task'] + '-hf')} --store {shlex.quote(store)}"


def recommended_table(result: dict[str, Any], command: str) -> Table:
    """The demo's last screen: each task's recommended set, its audit verdict, where to read it and what next
    (borders kept light so that it reads at 80 columns too)."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="The recommended set of every task",
        caption=f"Paths under {result['store']}. Answer a packet.md (keep its key.json hidden), save the answers as "
        '{"Q01": "B", ...} in ANSWERS.json, then run the next command.',
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        show_lines=True,
    )
    table.add_column("task\nrecommended setting", no_wrap=True)
    table.add_column("questions", no_wrap=True, justify="right")
    table.add_column("audit", overflow="fold", ratio=2)
    table.add_column("report page\nreader packet", overflow="fold", ratio=3)
    table.add_column("next command", overflow="fold", ratio=3)
    for row in result["recommended"]:
        where = f"{row['report'] or '-'}\n{row['packet'] or 'no packet: ' + (row['note'] or 'not built')}"
        table.add_row(
            f"{row['task']}\n{row['setting']}",
            str(row["questions"]),
            row["verdict"],
            where,
            next_command(row, result["store"], command) if row["questions"] else row["note"] or "-",
        )
    return table


def launcher() -> str:
    """How to run procbench from here: ``procbench`` when it is on PATH, else the path this run was started
    with (``.venv/bin/procbench`` after ``make demo``), else ``python -m procbench``."""
    import shlex
    import shutil
    import sys

    if shutil.which("procbench"):
        return "procbench"
    started = Path(sys.argv[0])
    if started.name == "procbench" and started.is_file():
        return shlex.quote(os.path.relpath(started) if not started.is_absolute() else str(started))
    return f"{shlex.quote(sys.executable)} -m procbench"
