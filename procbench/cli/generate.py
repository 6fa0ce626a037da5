from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from procbench.cli._options import (
    DEFAULT_STORE,
    MAX_SEED,
    EngineOption,
    JsonOption,
    RayAddressOption,
    RayWorkersOption,
    StoreOption,
)
from procbench.tasks import TASKS  # names only: nothing heavy is imported

if TYPE_CHECKING:
    from procbench.generate import GenerateOptions, GenerateResult, Setting

NAME = "generate"


def command(
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            "-t",
            help=f"Task to generate: {', '.join(TASKS.names())}. With --manifest: only its \\[generate.TASK] section.",
            show_default=False,
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            "-m",
            help="Manifest (TOML) whose \\[generate.TASK] sections set the setting and options (the options given "
            "here win); without --task every such section is generated.",
            show_default=False,
        ),
    ] = None,
    knobs: Annotated[
        str | None,
        typer.Option(
            "--knobs",
            help="Control-Knobs K1,K2,K3 (K1, K2: 0/1; K3: 0, 1, 2 = rank-uniform; visual-ordering: K3 0 or 2), "
            "e.g. 0,1,2.",
        ),
    ] = None,
    style: Annotated[
        str | None,
        typer.Option(
            "--style",
            help="'recipeqa' (the biased original), 'default', or 'needs-context' (textual cloze, visual cloze and "
            "coherence, recommended: four titles or photos of one procedure, the answer uniform among them, so "
            "only reading the context answers).",
        ),
    ] = None,
    closeness: Annotated[
        int | None,
        typer.Option(
            "--closeness",
            help="--style needs-context, textual-cloze: difficulty level. 0 = any readable set of four titles; 1 and "
            "2 keep sets whose step texts fit rival titles nearly as well as their own (harder with the context, "
            "still chance without it). Level L writes the setting needs-context-cL [0].",
            min=0,
            show_default=False,
        ),
    ] = None,
    debias: Annotated[bool, typer.Option("--debias", help="Budgeted debiasing (Algorithm 1 of paper 004).")] = False,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Per-cluster budget for --debias: a number, or 'auto' (the smallest budget, from an even share "
            "per cluster, that keeps nearly every question) [auto].",
        ),
    ] = None,
    adversarial: Annotated[
        bool,
        typer.Option(
            "--adversarial",
            help="Adversarial negatives: replace the negatives that context-free probes reject until the probes "
            "are at chance (setting 'adversarial').",
        ),
    ] = False,
    rounds: Annotated[
        int | None, typer.Option("--rounds", help="--adversarial: round limit of the filtering [15].", min=0)
    ] = None,
    ceiling: Annotated[
        float | None,
        typer.Option(
            "--ceiling",
            help="--adversarial: a negative's cosine similarity to the answer and the question items stays below "
            "this (no paraphrases) [0.8; visual tasks 0.95].",
        ),
    ] = None,
    min_yield: Annotated[
        float | None,
        typer.Option(
            "--min-yield",
            help="--adversarial: when the probes still beat chance after the rounds, drop the questions they solve "
            "(most confident first) while this share of the drafted questions stays; 1 drops none [0.85; visual tasks "
            "0.8].",
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="--adversarial: the filter's size: 'standard', or 'demo' (4 rounds of one "
            "3-fold ensemble: a small sample in seconds, weaker; the card names it) [standard].",
        ),
    ] = None,
    items: Annotated[
        str | None,
        typer.Option(
            "--items",
            help="textual-cloze: what questions and choices show: 'title' (step headlines), 'text' (step texts, "
            "for corpora without headlines), 'first-sentence' (each step text's first sentence; run `procbench "
            "embed --fields step_first_sentence` first) or 'action' (step action tuples of `procbench extract`) "
            "[title].",
        ),
    ] = None,
    clusters: Annotated[
        int | None,
        typer.Option(
            "--clusters",
            help="textual-cloze --debias: KMeans clusters (default: about the square root of the titles, max 100).",
            min=1,
        ),
    ] = None,
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep",
            help="Write every setting of the task in one run (textual-cloze: recipeqa, default, debias-auto, "
            "adversarial, needs-context; visual tasks: the paper's knob settings, the rank-uniform K3=2 ones, "
            "adversarial, and needs-context but for ordering).",
        ),
    ] = False,
    split_by: Annotated[
        str | None,
        typer.Option(
            help="'procedure', or 'category:LEVEL' for unseen test categories [procedure].", show_default=False
        ),
    ] = None,
    split_ratios: Annotated[
        str | None, typer.Option(help="train,val,test shares [0.8,0.1,0.1].", show_default=False)
    ] = None,
    pairs_per_procedure: Annotated[int | None, typer.Option(help="pair-order: pairs drawn per procedure [2].")] = None,
    questions_per_procedure: Annotated[
        int | None, typer.Option(help="textual-cloze: questions drawn per procedure [1].", min=1)
    ] = None,
    adjacent: Annotated[bool | None, typer.Option("--adjacent", help="pair-order: only consecutive steps.")] = None,
    kc: Annotated[
        int | None, typer.Option("--kc", help="visual cloze/coherence: K_C, the K2 band neighbours [100].", min=1)
    ] = None,
    min_distance: Annotated[
        float | None,
        typer.Option(help="--style recipeqa: fixed negative distance [median distance of random item pairs]."),
    ] = None,
    references: Annotated[
        Path | None, typer.Option(help="sequencing: JSONL of alternative orders {procedure_id, orders}.")
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Replace a set of the same setting made with other options (refused otherwise)."
        ),
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (writing nothing) when a split with a non-zero ratio is empty.")
    ] = False,
    engine: EngineOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    store: StoreOption = DEFAULT_STORE,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            min=0,
            max=MAX_SEED,
            help="Random seed (0 to 2^32-1): same inputs + same seed = same outputs [0, or the manifest's].",
            show_default=False,
        ),
    ] = None,
    json: JsonOption = False,
) -> None:
    """Generate a question set (or a whole sweep) from the store.

    Choose one way of sampling: --style recipeqa, --knobs K1,K2,K3, --debias [--budget B|auto], --adversarial,
    or --sweep.

    textual-cloze: --style recipeqa (the biased original), the default paper-004 sampler (far kNN negatives),
    --debias --budget B|auto [--clusters C] (Algorithm 1), or --adversarial [--rounds R] [--ceiling S]
    [--min-yield Y] (negatives the context-free probes cannot tell from the answer), or --style needs-context
    (recommended: four titles of one procedure, the answer uniform among them; its step text is the context;
    --closeness 1 or 2 for harder levels, written as needs-context-c1, needs-context-c2);
    --sweep writes recipeqa, default, debias-auto, adversarial and needs-context. Corpora without step
    headlines: --items text or --items first-sentence (no needs-context there).

    visual tasks: --knobs K1,K2,K3 (paper 001; K3=2: answer ranks dealt uniform), --style recipeqa, or
    --adversarial; visual-cloze and visual-coherence also --style needs-context (recommended: four photos of the
    procedure; the context is the blank's step, or for coherence three of the four photos' steps, the answer the
    photo of none of them).

    next-action: the same samplers over step action tuples (run `procbench extract`, then
    `procbench embed --fields action` first): the actions of up to three steps, then pick the next one.

    Output: STORE/questions/TASK/SETTING/ with train/val/test parquet, recipeqa.json, card.md and options.json
    (every option that changes the questions). A set made with other options is not overwritten without
    --overwrite. An empty split is a warning (an error with --strict). So is a filtered set (adversarial,
    K3=2) whose context-free probes still read far above chance (never an error: run procbench audit).
    --engine ray runs the neighbour searches as Ray tasks (the same files).
    """
    from procbench.cli._console import err_console, print_json, progress_bar
    from procbench.engine import Engine
    from procbench.errors import BadInput
    from procbench.generate import generate
    from procbench.generate.sequencing import read_references
    from procbench.manifest import GenerateSection, load_manifest
    from procbench.qsets.splits import parse_ratios
    from procbench.store import Store

    chosen = _chosen_setting(knobs, style, debias, budget, adversarial, sweep, closeness)
    if manifest is not None:
        sections = load_manifest(manifest).generate_sections(task)
    elif task is None:
        raise BadInput("--task is required (or --manifest FILE with [generate.TASK] sections)")
    else:
        sections = [GenerateSection(task, _default_options(task))]
    options = {
        "clusters": clusters,
        "questions_per_procedure": questions_per_procedure,
        "pairs_per_procedure": pairs_per_procedure,
        "adjacent": adjacent,
        "kc": kc,
        "min_distance": min_distance,
        "items": items,
        "rounds": rounds,
        "ceiling": ceiling,
        "min_yield": min_yield,
        "policy": policy,
        "references": read_references(references) if references else None,
    }
    ratios = parse_ratios(split_ratios) if split_ratios is not None else None
    where = Engine.parse(engine, address=ray_address, workers=ray_workers)
    target = Store.open(store)
    results: list[GenerateResult] = []
    for section in sections:
        setting, every = chosen if chosen is not None else (section.setting, section.sweep)
        with progress_bar() as progress:
            results.append(
                generate(
                    target,
                    section.task,
                    setting,
                    sweep=every,
                    options=section.options,
                    seed=seed,
                    split_by=split_by,
                    split_ratios=ratios,
                    overwrite=overwrite,
                    strict=strict,
                    progress=progress,
                    engine=where,
                    **{k: v for k, v in options.items() if v is not None},
                )
            )
    for result in results:
        for warning in result.warnings:
            err_console.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if json:
        print_json(results[0].to_dict() if task is not None else [r.to_dict() for r in results])
        return
    for result in results:
        _render(result)


def _chosen_setting(
    knobs: str | None,
    style: str | None,
    debias: bool,
    budget: str | None,
    adversarial: bool,
    sweep: bool,
    closeness: int | None = None,
) -> tuple[Setting | None, bool] | None:
    """The setting the options choose and whether to sweep (None: none chosen here)."""
    from procbench.errors import BadInput
    from procbench.generate import Setting, parse_knobs
    from procbench.generate.settings import parse_budget

    chosen = [
        name
        for name, on in (
            ("--knobs", knobs),
            ("--style", style),
            ("--debias", debias),
            ("--adversarial", adversarial),
            ("--sweep", sweep),
        )
        if on
    ]
    if len(chosen) > 1:
        raise BadInput(f"choose one of {', '.join(chosen)}")
    if budget is not None and not debias:
        raise BadInput("--budget applies only with --debias")
    if closeness is not None and style != "needs-context":
        raise BadInput("--closeness applies only with --style needs-context")
    if style not in (None, "recipeqa", "default", "needs-context"):
        raise BadInput(f"--style takes 'recipeqa', 'default' or 'needs-context', not {style!r}")
    if not chosen:
        return None
    if sweep:
        return None, True
    if knobs:
        return Setting("knobs", parse_knobs(knobs)), False
    if debias:
        return Setting("debias", budget=parse_budget(budget or "auto")), False
    if adversarial:
        return Setting("adversarial"), False
    return Setting(style or "default", closeness=closeness or 0), False


def _default_options(task: str) -> GenerateOptions:
    from procbench.generate.options import options_class

    return options_class(task)()


def _render(result: GenerateResult) -> None:
    from procbench.cli._console import console

    for name, path in result.paths.items():
        sizes = ", ".join(f"{s} {n}" for s, n in result.split_sizes.get(name, {}).items())
        console.print(
            f"[bold green]{result.task}/{name}[/]: {result.questions[name]} questions ({sizes}) -> {path}",
            highlight=False,
        )
    for name, report in result.reports.items():
        console.print(f"{result.task}/{name}: " + "\n  ".join(report.summary()), highlight=False, markup=False)
    for key, value in result.counts.items():
        if key != "per_setting":  # the reports above (--json: every count)
            console.print(f"{key}: {value}", highlight=False, markup=False)
