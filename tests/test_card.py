from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
import yaml

from procbench.card import (
    SET_FIELDS,
    CardSet,
    DatasetCard,
    SettingReport,
    dataset_card,
    set_parameters,
    spdx_license,
    summarise_set,
)


@pytest.mark.parametrize(
    ("text", "spdx"),
    [
        ("https://creativecommons.org/licenses/by-nc-sa/3.0/", "CC-BY-NC-SA-3.0"),
        ("https://creativecommons.org/licenses/by/4.0/deed.en", "CC-BY-4.0"),
        ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
        ("CC BY-NC-SA 3.0", "CC-BY-NC-SA-3.0"),
        ("CC BY-NC-SA 3.0 (wikiHow content)", "CC-BY-NC-SA-3.0"),  # as the wikiHow data records it
        ("CC BY-SA 4.0 International", "CC-BY-SA-4.0"),
        ("CC0 1.0 Universal (public domain)", "CC0-1.0"),
        ("cc-by-sa-4.0", "CC-BY-SA-4.0"),
        ("Creative Commons Attribution-ShareAlike 4.0", "CC-BY-SA-4.0"),
        ("CC0-1.0", "CC0-1.0"),
        ("MIT", "MIT"),
        ("CC BY-NC-SA (Instructables authors; RecipeQA)", None),  # no version: cannot be named exactly
        (None, None),
    ],
)
def test_spdx_license(text: str | None, spdx: str | None) -> None:
    assert spdx_license(text) == spdx


def _table(setting: str, meta: list[dict[str, object]]) -> pa.Table:
    n = len(meta)
    return pa.table(
        {
            "procedure_id": [f"p{i % 3}" for i in range(n)],
            "split": ["train", "train", "test", "val"][:n],
            "answer": [i % 4 for i in range(n)],
            "meta": meta,
        }
    )


def test_set_parameters_are_the_values_shared_by_every_question() -> None:
    meta = [{"setting": "x", "k1": 0, "budget": None, "d": 0.1 * i, "keys": ["a"]} for i in range(4)]
    assert set_parameters(pa.array(meta)) == {"setting": "x", "k1": 0}


def test_card_header_is_what_the_hub_reads() -> None:
    first = summarise_set("textual-cloze", "debias-b10", _table("debias-b10", [{"budget": 10}] * 4))
    first.data_files, first.config_name = {"train": "data/debias-b10/train-*.parquet"}, "debias-b10"
    licenses = Counter({"https://creativecommons.org/licenses/by-nc-sa/3.0/": 3, "CC BY-NC-SA (no version)": 1})
    card = DatasetCard(
        title="t",
        sets=[first],
        fields=SET_FIELDS,
        procedures={"sources": Counter({"wikihow": 4}), "licenses": licenses, "languages": Counter({"en": 4})},
        generation={"textual-cloze": {"seed": 3, "args": {"budget": 10}, "counts": {}}},
        build={"encoders": {"step_title": {"encoder": "hashed", "revision": "abc", "dim": 8}}},
    )
    text = dataset_card(card)
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == ["cc-by-nc-sa-3.0", "other"]
    assert header["license_name"] == "cc-by-nc-sa-no-version"  # an id, as the Hub asks
    assert header["license_details"] == "CC BY-NC-SA (no version)"
    assert header["task_categories"] == ["multiple-choice"] and header["size_categories"] == ["n<1K"]
    assert header["configs"] == [
        {
            "config_name": "debias-b10",
            "data_files": [{"split": "train", "path": "data/debias-b10/train-*.parquet"}],
            "default": True,
        }
    ]
    assert "| `debias-b10` | textual-cloze | 2 | 1 | 1 | 3 | budget=10 |" in text
    assert "| step_title | hashed | abc | 8 |" in text and "seed 3" in text
    assert "Not audited yet" in text and "@article{sahu2021towards" in text


def _audit(**probes: dict[str, object]) -> dict[str, object]:
    return {"n_questions": 4, "probes": probes}


def test_card_records_adversarial_and_debias_runs_and_every_probe() -> None:
    adversarial = summarise_set(
        "textual-cloze",
        "adversarial",
        _table("adversarial", [{"replacements": r, "ceiling": 0.8} for r in (0, 2, 1, 0)]),
    )
    adversarial.generation = SettingReport(
        questions=80,
        drafted=81,
        kept_share=0.9876,
        adversarial={
            "rounds": 10,
            "ceiling": 0.8,
            "rounds_run": 3,
            "stopped": "chance",
            "replacements": 3,
            "final_accuracy": {"choice_only": 0.25, "partial_input": 0.3},
            "chance_bound": 0.36,
            "rules": ["no negative nearer the answer's own step text than the answer"],
        },
    )
    adversarial.audit = _audit(
        choice_only={"value": 0.1, "chance": 0.25, "ci": [0.05, 0.2], "verdict": "below", "flagged": True},
        context_reference={"value": 0.9, "chance": 0.25, "ci": [0.8, 1.0], "verdict": "above", "reference": True},
        length={"value": None, "chance": None, "ci": None, "reason": "choices are images"},
    )
    debias = summarise_set("textual-cloze", "debias-auto", _table("debias-auto", [{"budget": 8}] * 4))
    debias.generation = SettingReport.from_dict(  # as a provenance log holds it
        {
            "questions": 49,
            "skipped_questions": {"budget_exhausted": 1},
            "drafted": 50,
            "yield": 0.98,
            "auto_budget": {
                "chosen": 8,
                "even_share": 6,
                "tried": [{"budget": 6, "yield": 0.9}, {"budget": 8, "yield": 0.98}],
            },
        }
    )
    recipeqa = summarise_set("textual-cloze", "recipeqa", _table("recipeqa", [{"min_distance": 1.2}] * 4))
    card = DatasetCard(
        title="t",
        sets=[adversarial, debias, recipeqa],
        fields=SET_FIELDS,
        procedures={
            "sources": Counter({"x": 3}),
            "licenses": Counter({"CC0-1.0": 3}),
            "languages": Counter({"en": 3}),
        },
        generation={"textual-cloze": {"seed": 0, "args": {}, "counts": {}}},
        build={},
    )
    text = dataset_card(card)
    assert adversarial.totals == {"replacements": 3, "replacements_questions": 2}
    assert "adversarial filtering: at most 10 rounds, 3 run (stopped: chance)" in text
    assert "similarity ceiling 0.8" in text and "3 negatives replaced in 2 of 4 questions" in text
    assert "questions; no negative nearer the answer's own step text than the answer;" in text
    assert "held-out probe accuracy on the final set choice_only 0.25, partial_input 0.3 (stop bound 0.36)" in text
    assert "yield 98.8%" in text and "budget auto: 8 per cluster (even share 6" in text and "8 → 98.0%" in text
    assert "skipped questions: budget_exhausted 1" in text and "(49 kept of 50 drafted)" in text
    # the audit: a below-chance shortcut is bold, the reference probe is marked and never bold
    assert "| choice_only | **0.100 [0.050, 0.200] (0.250)** ↓ |" in text
    assert "| context_reference (*reference*) | 0.900 [0.800, 1.000] (0.250) |" in text
    assert "Not applicable to any textual-cloze set: length (choices are images)." in text
    assert "Not audited: `debias-auto`, `recipeqa`." in text


def test_a_config_named_default_is_the_only_default() -> None:
    sets = []
    for name in ("adversarial", "default", "recipeqa"):
        s = summarise_set("textual-cloze", name, _table(name, [{"setting": name}] * 4))
        s.config_name, s.data_files = name, {"train": f"data/{name}/train-*.parquet"}
        sets.append(s)
    card = DatasetCard(
        title="t",
        sets=sets,
        fields=SET_FIELDS,
        procedures={"sources": Counter(), "licenses": Counter(), "languages": Counter()},
        generation={},
        build={},
    )
    header = yaml.safe_load(dataset_card(card).split("---\n")[1])
    # datasets takes a config named "default" as the default: a second default would not load
    assert [c["config_name"] for c in header["configs"] if c.get("default")] == ["default"]


# -- a card a stranger understands (issue 38) -----------------------------------------------------------------


def _sets(task: str, names: list[str], audit: bool = False) -> list[CardSet]:
    out = []
    for name in names:
        s = summarise_set(task, name, _table(name, [{"setting": name}] * 4))
        s.config_name, s.data_files = name, {"train": f"data/{name}/train-*.parquet"}
        if audit:
            s.audit = _audit(choice_only={"value": 0.3, "chance": 0.25, "ci": [0.2, 0.4], "verdict": "chance"})
        out.append(s)
    return out


_EXAMPLE = {
    "qid": "wikihow:Make-Wood-Signs#0",
    "task": "textual-cloze",
    "setting": "adversarial",
    "procedure_id": "wikihow:Make-Wood-Signs",
    "procedure_title": "How to Make Wood Signs",
    "category": ["Hobbies and Crafts", "Woodworking"],
    "instruction": "Choose the best title for the missing blank to correctly complete the procedure.",
    "context": [{"index": 0, "title": None, "text": "Choose a piece of pine."}],
    "question": [
        {"key": "Purchase a block of wood.", "title": "Purchase a block of wood.", "text": None, "image": None},
        {"key": "@placeholder", "title": None, "text": None, "image": None},
    ],
    "choices": [
        {"key": "Sand the edges.", "title": "Sand the edges.", "text": None, "image": None},
        {"key": "Preheat the oven.", "title": "Preheat the oven.", "text": None, "image": None},
    ],
    "choice_orders": [],
    "answer": 0,
}


def _card(sets: list[CardSet], **extra: object) -> str:
    card = DatasetCard(
        title="t",
        sets=sets,
        fields=SET_FIELDS,
        procedures={"sources": Counter({"x": 4}), "licenses": Counter({"CC0-1.0": 4}), "languages": Counter()},
        generation={},
        build={},
        **extra,  # type: ignore[arg-type]
    )
    return dataset_card(card)


def test_huggingface_hub_reads_the_card_and_its_default_is_the_recommended_setting() -> None:
    from huggingface_hub import DatasetCard as HubCard
    from huggingface_hub import DatasetCardData

    sets = _sets("textual-cloze", ["adversarial", "debias-auto", "recipeqa"])
    text = _card(sets, example=_EXAMPLE, usage="```python\nload_dataset('hf/x', 'adversarial')\n```")
    hub = HubCard(text)
    assert isinstance(hub.data, DatasetCardData)
    assert hub.data.license == "cc0-1.0" and hub.data.pretty_name == "t"
    configs = {c["config_name"]: c for c in hub.data.to_dict()["configs"]}
    assert [name for name, c in configs.items() if c.get("default")] == ["adversarial"]  # the recommended one
    body = hub.text
    for heading in ("## Usage", "## Intended uses", "## Out-of-scope uses", "## Example", "## Settings", "## Contact"):
        assert heading in body
    assert "**Recommended configuration: `adversarial`** (the default when no configuration is named)" in body
    # the example: the instruction, the blank, the answer marked, the context
    assert "> **Choose the best title for the missing blank to correctly complete the procedure.**" in body
    assert "> 2. **[the blank]**" in body and "> - A. **Sand the edges.** ✅ (answer)" in body
    assert "> - B. **Preheat the oven.**\n" in body and "step 1: Choose a piece of pine." in body
    # the glossary explains exactly the settings present
    assert "| `debias-auto` |" in body and "| `recipeqa` |" in body and "| `knobs-K1K2K3` |" not in body
    # no contact given and not pushed: it says so rather than leaving a placeholder
    assert "None given: this copy was exported without `--contact`" in body
    # numbers map to papers
    assert "| 004 | Pritish Sahu, Karan Sikka, Ajay Divakaran. Towards Solving Multimodal Comprehension." in body


def test_card_contact_answer_positions_and_audit_tables_split() -> None:
    sets = _sets("visual-cloze", [f"knobs-{a}{b}{c}" for a in "01" for b in "01" for c in "012"], audit=True)
    text = _card(sets, contact="team@example.org", repo_id="me/procbench-visual-cloze")
    assert "Questions, corrections and takedown requests: team@example.org" in text
    assert "https://huggingface.co/datasets/me/procbench-visual-cloze/discussions" in text
    # one summary line for answer positions instead of a bullet per configuration
    assert text.count("answer positions") == 0 and text.count("Answer positions: the most common position") == 1
    # 12 settings: tables of at most 5 settings each
    assert "### visual-cloze (1–5 of 12)" in text and "### visual-cloze (11–12 of 12)" in text
    rows = [line for line in text.splitlines() if line.startswith("| probe |")]
    assert len(rows) == 3 and all(row.count("`knobs-") <= 5 for row in rows)


def test_every_setting_procbench_writes_is_in_the_glossary_and_the_docs() -> None:
    from pathlib import Path

    from procbench.audit.aflite import aflite_setting
    from procbench.card.glossary import GLOSSARY, SUFFIXES, explain
    from procbench.generate import Setting

    names = [s.name for s in Setting.all_knobs()] + ["recipeqa", "default", "adversarial", "debias-b10", "debias-auto"]
    names += [aflite_setting("default"), aflite_setting("recipeqa", 50, "trees")]
    for name in names:
        assert explain(name), name
    assert [t.name for t in explain("adversarial-aflite-trees-n50")] == ["adversarial", "SETTING-aflite"]
    page = (Path(__file__).parent.parent / "docs" / "concepts" / "settings.md").read_text(encoding="utf-8")
    glossary = page.split("# Settings glossary", 1)[1].split("\n## ", 1)[0]
    for term in [*GLOSSARY, *SUFFIXES]:
        assert f"`{term.name}`" in glossary, term.name


def test_instructions_are_worded_per_domain_and_recipeqa_json_keeps_its_words() -> None:
    from procbench.tasks import domain_noun, get_task

    assert domain_noun(["Hobbies and Crafts", "Woodworking"]) == "procedure"
    assert domain_noun(["Food and Entertaining", "Recipes"]) == "recipe"
    assert domain_noun(["dessert"], "recipeqa") == "recipe" and domain_noun(None) == "procedure"
    cloze = get_task("textual-cloze")
    assert (
        cloze.instruction_for() == "Choose the best title for the missing blank to correctly complete the procedure."
    )
    assert cloze.instruction_for(noun="recipe").endswith("complete the recipe.")
    # recipeqa.json: RecipeQA's own words for its tasks, as before
    assert (
        cloze.recipeqa_instruction() == "Choose the best title for the missing blank to correctly complete the recipe."
    )
    assert cloze.recipeqa_instruction("text").endswith("complete the procedure.")
    ordering = get_task("visual-ordering")
    assert ordering.recipeqa_instruction() == "Choose the correct order of the images to make a complete recipe."
    assert get_task("next-action").recipeqa_instruction() == "Choose the action that comes next in the procedure."
    assert cloze.recommended == "needs-context" and get_task("sequencing").recommended == "default"


def test_knob_values_spell_out_the_digits() -> None:
    from procbench.card.glossary import knob_values

    assert knob_values("knobs-011") == (
        "K1=0: at most n/2 questions per procedure; K2=1: negatives from the band (m−s, m+s); "
        "K3=1: one negative nearer the question than the answer."
    )
    assert knob_values("knobs-102-aflite") is not None and knob_values("adversarial") is None
