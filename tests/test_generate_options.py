"""Typed options of ``generate`` (one frozen class per task), the per-setting report, and ``options.json``."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from procbench.card import SettingReport
from procbench.errors import BadInput
from procbench.generate import Setting, generate
from procbench.generate.adversarial import COHERENCE_POLICY, IMAGE_POLICY, TEXTUAL_POLICY
from procbench.generate.options import (
    KC,
    KNN_K,
    MIN_YIELD,
    TASK_OPTIONS,
    GenerateOptions,
    NextActionOptions,
    PairOrderOptions,
    SequencingOptions,
    TextualClozeOptions,
    VisualClozeOptions,
    VisualCoherenceOptions,
    VisualOrderingOptions,
    options_class,
    task_options,
)
from procbench.generate.settings import parse_setting
from procbench.qsets.files import OPTIONS_FILE, options_fingerprint, set_options
from procbench.store import Store
from procbench.tasks import TASKS


def test_every_task_has_an_options_class_with_the_builders_defaults() -> None:
    from procbench.generate.policy import current

    assert set(TASK_OPTIONS) == set(TASKS.names())
    for name, cls in TASK_OPTIONS.items():
        assert cls.task == name and options_class(name.replace("-", "_")) is cls
        made = cls()
        assert (made.seed, made.split_by, made.split_ratios) == (0, "procedure", (0.8, 0.1, 0.1))
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.seed = 1  # type: ignore[misc]
    assert KNN_K == current().KNN_K == TextualClozeOptions().knn_k == NextActionOptions().knn_k
    assert KC == current().KC == VisualClozeOptions().kc == VisualCoherenceOptions().kc
    textual = TextualClozeOptions()
    assert (textual.items, textual.questions_per_procedure, textual.clusters, textual.min_distance) == (
        "title",
        1,
        None,
        None,
    )
    assert (textual.rounds, textual.ceiling, textual.policy) == (None, TEXTUAL_POLICY.ceiling, "standard")
    assert VisualOrderingOptions().ceiling == VisualClozeOptions().ceiling == IMAGE_POLICY.ceiling == 0.95
    assert PairOrderOptions() == PairOrderOptions(pairs_per_procedure=2, adjacent=False)
    assert SequencingOptions().min_steps == 3 and SequencingOptions().references is None
    # min_yield: the textual tasks' default and the visual tasks', each the one its presets hold
    defaults = {name: cls().min_yield for name, cls in TASK_OPTIONS.items() if hasattr(cls(), "min_yield")}
    visual = {name: value for name, value in defaults.items() if name.startswith("visual-")}
    assert set(visual) == {"visual-cloze", "visual-coherence", "visual-ordering"}
    assert set(visual.values()) == {MIN_YIELD} == {p.min_yield for p in (IMAGE_POLICY, COHERENCE_POLICY)}
    assert {v for n, v in defaults.items() if n not in visual} == {MIN_YIELD} == {TEXTUAL_POLICY.min_yield}
    assert MIN_YIELD == 0.85  # one yield for every task: the visual 0.8 was tuned inside the noise (issue 54)


@pytest.mark.parametrize(
    ("cls", "options", "message"),
    [
        (PairOrderOptions, {"seed": -1}, "--seed must be an integer from 0 to 4294967295, not -1"),
        (PairOrderOptions, {"seed": 2**32}, "--seed must be an integer"),
        (PairOrderOptions, {"seed": True}, "--seed must be an integer"),
        (SequencingOptions, {"split_by": "category"}, "--split-by takes 'procedure' or 'category:LEVEL'"),
        (SequencingOptions, {"split_ratios": (0.5, 0.5, 0.5)}, "split ratios must be three non-negative"),
        (SequencingOptions, {"split_ratios": (1.0, 0.0)}, "split ratios must be three"),
        (SequencingOptions, {"min_steps": 0}, "--min-steps must be an integer of at least 1, not 0"),
        (PairOrderOptions, {"pairs_per_procedure": 0}, "--pairs-per-procedure must be an integer of at least 1"),
        (PairOrderOptions, {"adjacent": "yes"}, "--adjacent must be true or false"),
        (TextualClozeOptions, {"items": "words"}, "--items takes title or text or first-sentence or action"),
        (TextualClozeOptions, {"clusters": 0}, "--clusters must be an integer of at least 1"),
        (TextualClozeOptions, {"questions_per_procedure": 0}, "--questions-per-procedure must be an integer of at"),
        (NextActionOptions, {"knn_k": 3}, "--knn-k must be an integer of at least 4, not 3"),
        (TextualClozeOptions, {"min_distance": -0.5}, "--min-distance must be a finite distance of at least 0"),
        (VisualClozeOptions, {"min_distance": math.nan}, "--min-distance must be a finite distance of at least 0"),
        (VisualClozeOptions, {"kc": 0}, "--kc must be an integer of at least 1, not 0"),
        (VisualCoherenceOptions, {"rounds": -1}, "--rounds must be an integer of at least 0, not -1"),
        (VisualOrderingOptions, {"ceiling": 0}, "--ceiling must be a cosine similarity in (0, 1], not 0"),
        (TextualClozeOptions, {"min_yield": 1.5}, "--min-yield must be a share in (0, 1], not 1.5"),
        (TextualClozeOptions, {"min_yield": "most"}, "--min-yield must be a finite number, not 'most'"),
        (NextActionOptions, {"policy": "huge"}, "--policy takes standard or demo, not 'huge'"),
    ],
)
def test_a_bad_value_is_one_line_of_bad_input(
    cls: type[GenerateOptions], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(BadInput) as caught:
        cls(**options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_option_the_task_does_not_take_is_named() -> None:
    with pytest.raises(BadInput, match="^--kc does not apply to task visual-ordering$"):
        VisualOrderingOptions.of(kc=5)
    with pytest.raises(BadInput, match="^--items does not apply to task next-action$"):
        task_options("next-action", items="text")
    with pytest.raises(BadInput, match="are not options of task pair-order"):
        task_options("pair-order", SequencingOptions())
    # None leaves an option at its default; changes win over the options given
    made = task_options("pair-order", PairOrderOptions(seed=3, adjacent=True), seed=None, pairs_per_procedure=4)
    assert made == PairOrderOptions(seed=3, adjacent=True, pairs_per_procedure=4)


def test_options_that_no_setting_uses_are_refused() -> None:
    adversarial, default = [Setting("adversarial")], [Setting("default")]
    for cls in (TextualClozeOptions, VisualClozeOptions, VisualCoherenceOptions, VisualOrderingOptions):
        cls(rounds=3, policy="demo").check(adversarial)
        for given in ({"rounds": 3}, {"ceiling": 0.5}, {"min_yield": 0.5}, {"policy": "demo"}):
            with pytest.raises(BadInput, match="apply only with --adversarial"):
                cls(**given).check(default)  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="--clusters applies only with --debias"):
        TextualClozeOptions(clusters=4).check(default)
    TextualClozeOptions(clusters=4).check([Setting("debias", budget="auto")])


def test_the_adversarial_policy_is_the_presets_with_the_options() -> None:
    demo = TextualClozeOptions(policy="demo").adversarial_policy(TEXTUAL_POLICY)
    assert demo.size == "demo" and demo.rounds == 4 and demo.min_yield == MIN_YIELD  # the demo size's rounds
    given = VisualOrderingOptions(policy="demo", rounds=2, ceiling=0.9, min_yield=1.0).adversarial_policy(IMAGE_POLICY)
    assert (given.rounds, given.ceiling, given.min_yield, given.n_folds) == (2, 0.9, 1.0, 3)
    assert VisualClozeOptions().adversarial_policy(IMAGE_POLICY) == IMAGE_POLICY


def test_record_names_the_options_that_are_not_at_their_default_in_command_line_order() -> None:
    options = TextualClozeOptions(seed=4, policy="demo", min_yield=0.9, clusters=7, items="title", knn_k=KNN_K)
    assert options.record() == {
        "split_by": "procedure",
        "split_ratios": [0.8, 0.1, 0.1],
        "clusters": 7,
        "min_yield": 0.9,
        "policy": "demo",
    }
    assert list(options.record()) == ["split_by", "split_ratios", "clusters", "min_yield", "policy"]
    # references are data, not an option that names the set
    with_references = SequencingOptions(references={"a": [[1, 0, 2]]}, min_steps=4)
    assert with_references.record() == {"split_by": "procedure", "split_ratios": [0.8, 0.1, 0.1], "min_steps": 4}
    assert set(PairOrderOptions().to_dict()) == {"seed", "split_by", "split_ratios", "pairs_per_procedure", "adjacent"}


def test_options_json_is_what_the_options_object_writes(ingested_sample: Path, tmp_path: Path) -> None:
    store = Store.open(shutil.copytree(ingested_sample, tmp_path / "store"))
    options = PairOrderOptions(seed=7, adjacent=True, split_ratios=(0.6, 0.2, 0.2))
    result = generate(store, "pair-order", options=options)
    assert result.options == options and result.reports["default"].questions == result.questions["default"]
    written = json.loads((result.paths["default"] / OPTIONS_FILE).read_text(encoding="utf-8"))
    expected = set_options("pair-order", "default", seed=7, args={"settings": ["default"], **options.record()})
    assert written == {"fingerprint": options_fingerprint(expected), "options": expected}
    assert written["options"]["adjacent"] is True and "pairs_per_procedure" not in written["options"]
    # the same options given one by one are the same set: no --overwrite needed
    again = generate(store, "pair-order", seed=7, adjacent=True, split_ratios=(0.6, 0.2, 0.2))
    assert json.loads((again.paths["default"] / OPTIONS_FILE).read_text(encoding="utf-8")) == written
    with pytest.raises(BadInput, match="made with other options: adjacent true -> null"):
        generate(store, "pair-order", seed=7, split_ratios=(0.6, 0.2, 0.2))


def test_setting_report_round_trip_and_one_shape_for_every_task() -> None:
    report = SettingReport(
        questions=9,
        procedures=4,
        drafted=10,
        kept_share=SettingReport.yield_of(9, 10),
        skipped_questions={"few_candidates": 1, "budget_exhausted": 0},
        adversarial={"rounds": 4, "pruned": 2},
        details={"knn_k": 100},
    )
    data = report.to_dict()
    assert data == {
        "questions": 9,
        "procedures": 4,
        "skipped_questions": {"few_candidates": 1},
        "drafted": 10,
        "yield": 0.9,
        "knn_k": 100,
        "adversarial": {"rounds": 4, "pruned": 2},
    }
    back = SettingReport.from_dict(json.loads(json.dumps(data)))
    assert back.to_dict() == data and back.pruned == 2 and back.details == {"knn_k": 100}
    assert SettingReport.of({"per_setting": {"default": data}}, "default") == back
    assert SettingReport.of({"default": data}, "default") is None  # one shape: counts["per_setting"] only
    assert SettingReport(empty="no procedure").to_dict() == {"questions": 0, "empty": "no procedure"}


def test_a_filtered_set_whose_probes_still_read_far_above_chance_is_a_warning() -> None:
    def pruned(n: int, accuracy: float) -> SettingReport:
        final = {"choice_only": 0.24, "partial_input": accuracy, "ensemble": 0.26}
        return SettingReport(questions=n, pruning={"pruned": 3, "final_accuracy": final, "chance_bound": 0.26})

    told = pruned(1396, 0.5064).probe_warning("visual-coherence/knobs-002", 0.25)
    assert told is not None
    assert told.startswith("visual-coherence/knobs-002: after K3=2 pruning, the context-free probe partial_input")
    assert "51%" in told and "procbench audit visual-coherence/knobs-002" in told
    # 3 standard errors: 0.285 on 1,396 questions, 0.38 on 100, where the filters end at 0.27-0.33
    assert pruned(1396, 0.28).probe_warning("s", 0.25) is None
    assert pruned(100, 0.33).probe_warning("s", 0.25) is None
    assert pruned(100, 0.40).probe_warning("s", 0.25) is not None
    filtered = SettingReport(questions=100, adversarial={"rounds_run": 15, "final_accuracy": {"partial_input": 0.6}})
    assert (filtered.probe_warning("t/adversarial", 0.25) or "").startswith(
        "t/adversarial: after adversarial filtering"
    )
    assert SettingReport(questions=100, adversarial={"not_filtered": "19 questions"}).probe_warning("s", 0.25) is None
    assert SettingReport(questions=0).probe_warning("s", 0.25) is None
    # a probe by name rather than their ensemble, which is named only where it alone is past the bound
    both = {"rounds_run": 15, "final_accuracy": {"partial_input": 0.4994, "ensemble": 0.5}}
    assert "probe partial_input still answers 50%" in (
        SettingReport(1484, adversarial=both).probe_warning("s", 0.25) or ""
    )
    alone = {"rounds_run": 15, "final_accuracy": {"partial_input": 0.28, "ensemble": 0.30}}
    assert "probe ensemble (the probes' mean) still answers 30%" in (
        SettingReport(1568, adversarial=alone).probe_warning("s", 0.25) or ""
    )


def test_settings_by_their_folder_names() -> None:
    for name in ("recipeqa", "default", "adversarial", "needs-context", "knobs-011", "knobs-112", "debias-b10"):
        assert parse_setting(name).name == name
    assert parse_setting("debias-auto") == parse_setting("debias") == Setting("debias", budget="auto")
    for bad in ("knobs-3", "debias-b0", "hardest"):
        with pytest.raises(BadInput):
            parse_setting(bad)


def test_generate_from_a_manifest_on_the_command_line(ingested_sample: Path, tmp_path: Path) -> None:
    """``procbench generate --manifest``: every [generate.TASK] section, or one with --task; the options given on
    the command line win; the sets are those ``generate`` makes from the same options."""
    from typer.testing import CliRunner

    from procbench.cli import app
    from procbench.embed import embed_store

    root = shutil.copytree(ingested_sample, tmp_path / "store")
    embed_store(root, text_encoder="hashed", fields="step_title")
    manifest = tmp_path / "bench.toml"
    manifest.write_text(
        'name = "bench"\n'
        '[generate.textual-cloze]\nsetting = "recipeqa"\nseed = 2\nknn_k = 20\nmin_distance = 0.5\n'
        "[generate.pair-order]\nseed = 5\npairs_per_procedure = 3\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    base = ["generate", "--manifest", str(manifest), "--store", str(root), "--json"]
    both = runner.invoke(app, base)
    assert both.exit_code == 0, both.output
    results = json.loads(both.stdout)
    assert [(r["task"], list(r["paths"])) for r in results] == [
        ("textual-cloze", ["recipeqa"]),
        ("pair-order", ["default"]),
    ]
    recorded = json.loads((root / "questions" / "textual-cloze" / "recipeqa" / OPTIONS_FILE).read_text())["options"]
    assert (recorded["seed"], recorded["knn_k"], recorded["min_distance"]) == (2, 20, 0.5)
    assert results[1]["questions"]["default"] == 3 * 45 and results[1]["counts"]["per_setting"]["default"]["questions"]
    # the library makes the same files from the same options
    twin = Store.open(shutil.copytree(ingested_sample, tmp_path / "twin"))
    made = generate(twin, "pair-order", options=PairOrderOptions(seed=5, pairs_per_procedure=3))
    for name in ("train.parquet", "test.parquet", OPTIONS_FILE):
        assert (made.paths["default"] / name).read_bytes() == (
            root / "questions" / "pair-order" / "default" / name
        ).read_bytes()
    # --task picks one section; an option given here wins over the manifest (a set with other options: refused)
    one = runner.invoke(app, [*base, "--task", "pair-order", "--seed", "6"])
    assert one.exit_code == 2 and "seed 5 -> 6" in one.stderr and "--overwrite" in one.stderr
    one = runner.invoke(app, [*base, "--task", "pair-order", "--seed", "6", "--adjacent", "--overwrite"])
    assert one.exit_code == 0, one.output
    summary = json.loads(one.stdout)
    assert summary["task"] == "pair-order"  # one section: one result, as without --manifest
    again = json.loads((root / "questions" / "pair-order" / "default" / OPTIONS_FILE).read_text())["options"]
    assert (again["seed"], again["pairs_per_procedure"], again["adjacent"]) == (6, 3, True)
    missing = runner.invoke(app, [*base, "--task", "sequencing"])
    assert missing.exit_code == 2 and "no [generate.sequencing] section" in missing.stderr
    unknown = runner.invoke(app, ["generate", "--store", str(root)])
    assert unknown.exit_code == 2 and "--task is required" in unknown.stderr


def test_a_setting_report_reads_in_a_few_lines() -> None:
    from procbench.card.setting_report import SettingReport

    report = SettingReport(
        questions=45,
        drafted=52,
        kept_share=0.8654,
        skipped_questions={"rank_balance": 41, "few_candidates": 0},
        adversarial={
            "rounds_run": 15,
            "stopped": "rounds",
            "replacements": 363,
            "pruned": 7,
            "final_accuracy": {"choice_only": 0.2593, "near_duplicate": 0.2667},
            "chance_bound": 0.2823,
            "history": [{"round": 0}],
        },
    )
    assert report.summary() == [
        "45 questions of 52 drafted (yield 0.8654)",
        "skipped questions: rank_balance 41",
        "adversarial filter: 15 rounds (stopped: rounds), 363 replacements, 7 pruned; strongest probe at the end: "
        "near_duplicate 0.2667 (stop bound 0.2823)",
    ]
