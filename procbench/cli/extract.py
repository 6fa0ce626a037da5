from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "extract"


def command(
    lexicon: Annotated[
        Path | None,
        typer.Option("--lexicon", help="Action verbs, one per line, instead of the lexicon built from the store."),
    ] = None,
    min_verb_count: Annotated[
        int, typer.Option("--min-verb-count", min=1, help="Lexicon: sentence-initial verbs seen at least this often.")
    ] = 5,
    model: Annotated[
        str | None,
        typer.Option("--model", help="spaCy pipeline package (default: the first installed English one)."),
    ] = None,
    wordnet: Annotated[
        Path | None,
        typer.Option("--wordnet", help="WordNet database folder with index.verb (default: found automatically)."),
    ] = None,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Extract verb-argument tuples from every kept step (paper 002) into STORE/actions.parquet.

    Sentences are parsed with spaCy's English pipeline; each action verb (particles kept: "cut off") gets its
    objects and prepositional phrases, without subjects, modals, negation, causes, purposes or discourse
    words. Key sentences (stage 1) have a verb of the domain lexicon: sentence-initial words seen at least
    --min-verb-count times that WordNet knows as verbs, minus too-general verbs.
    """
    from procbench.cli._console import console, print_json, progress_bar
    from procbench.extract import extract_store
    from procbench.store import Store

    opened = Store.open(store)
    with progress_bar() as progress:
        result = extract_store(
            opened,
            lexicon_file=lexicon,
            min_verb_count=min_verb_count,
            model=model,
            wordnet=str(wordnet) if wordnet else None,
            progress=progress,
        )
    if json:
        print_json({"store": str(opened.root), **result.to_dict()})
        return
    _render(console, str(opened.root), result.to_dict())


def _render(console: Any, where: str, data: dict[str, Any]) -> None:
    from rich.markup import escape

    counts, lexicon = data["counts"], data["lexicon"]
    console.print(
        f"[bold green]extracted[/] {where}/actions.parquet: {counts['tuples']} tuples "
        f"({counts['tuples_in_lexicon']} in the lexicon) from {counts['sentences']} sentences of "
        f"{counts['steps']} steps; {counts['key_sentences']} key sentences",
        highlight=False,
    )
    verbs = ", ".join(data["lexicon_verbs"][:30]) + (" ..." if len(data["lexicon_verbs"]) > 30 else "")
    console.print(f"lexicon ({lexicon['size']} verbs, {lexicon['source']}): {escape(verbs)}", highlight=False)
    if lexicon["note"]:
        console.print(f"[yellow]note:[/] {escape(lexicon['note'])}", highlight=False)
    for example in data["examples"][:3]:
        tuples = "; ".join("(" + ", ".join(t) + ")" for t in example["tuples"])
        console.print(f"  {escape(example['sentence'])} -> {escape(tuples)}", highlight=False)
