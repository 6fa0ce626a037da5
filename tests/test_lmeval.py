"""`procbench export --format lm-eval` loaded and run by lm-evaluation-harness itself (its TaskManager and
simple_evaluate, the dummy model and a tiny Hugging Face causal LM built here, nothing downloaded), and
`procbench evaluate --lm-eval` reading its results back into the evaluate table and the dataset card."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput
from procbench.export.lmeval import (
    IMAGE_PLACEHOLDER,
    VISUAL_METRIC,
    export_lm_eval,
    lm_eval_name,
    sequencing_orders,
)
from procbench.generate import Setting, generate
from procbench.store import Store

lm_eval = pytest.importorskip("lm_eval")

TASKS = ("textual-cloze", "pair-order", "sequencing")


@pytest.fixture(scope="module")
def store_template(tmp_path_factory: pytest.TempPathFactory, ingested_sample: Path) -> Path:
    root = tmp_path_factory.mktemp("lmeval") / "store"
    shutil.copytree(ingested_sample, root)
    store = Store.open(root)
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,image")
    generate(store, "textual-cloze", Setting("default"), seed=0)
    generate(store, "textual-cloze", Setting("recipeqa"), seed=0)
    generate(store, "pair-order", seed=0)
    generate(store, "sequencing", seed=0)
    generate(store, "visual-cloze", Setting("recipeqa"), seed=0)
    generate(store, "visual-coherence", Setting("recipeqa"), seed=0)
    generate(store, "visual-ordering", Setting("recipeqa"), seed=0)
    return root


@pytest.fixture
def store(store_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


@pytest.fixture
def quick_lm_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    """lm-eval describes the machine in every results file (torch's collect_env: ~20 s of subprocesses on a
    loaded machine); the tests leave that out. Everything else is lm-eval's own code."""
    import lm_eval.evaluator

    monkeypatch.setattr(lm_eval.evaluator, "add_env_info", lambda results: results.update(pretty_env_info="test"))
    monkeypatch.setattr(lm_eval.evaluator, "get_git_commit_hash", lambda: None)


def _test_rows(store: Path, task: str, setting: str) -> list[dict[str, Any]]:
    return pq.read_table(store / "questions" / task / setting / "test.parquet").to_pylist()


def _task_manager(out: Path) -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(out), include_defaults=False)


def _run(out: Path, tasks: list[str], model: str = "dummy", model_args: Any = None, **kwargs: Any) -> dict[str, Any]:
    """lm-eval's evaluator end to end (its standard errors of a mean are closed-form: bootstrap_iters only
    needs to be > 0)."""
    from lm_eval import simple_evaluate

    results = simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        task_manager=_task_manager(out),
        log_samples=True,
        bootstrap_iters=10,
        random_seed=0,
        **kwargs,
    )
    assert results is not None
    return results


def _save(results: dict[str, Any], folder: Path) -> Path:
    """Write results as `lm_eval --output_path folder --log_samples` does (lm-eval's EvaluationTracker)."""
    from lm_eval.loggers import EvaluationTracker

    samples = results.pop("samples")
    tracker = EvaluationTracker(output_path=str(folder))
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    (path,) = folder.rglob("results_*.json")
    return path


# -- the export ------------------------------------------------------------------------------------------------


VISUAL = ("visual-cloze", "visual-coherence", "visual-ordering")


def test_every_setting_becomes_two_tasks_the_visual_ones_with_their_images(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lm"
    result = export_lm_eval([*TASKS, *VISUAL], out, store=store)
    textual = {
        "textual_cloze_default",
        "textual_cloze_recipeqa",
        "pair_order_default",
        "sequencing_default",
    }
    visual = {"visual_cloze_recipeqa", "visual_coherence_recipeqa", "visual_ordering_recipeqa"}
    expected = textual | visual
    assert set(result.tasks) == expected | {f"{name}_nocontext" for name in expected}
    assert result.groups["textual_cloze"] == [
        "textual_cloze_default",
        "textual_cloze_default_nocontext",
        "textual_cloze_recipeqa",
        "textual_cloze_recipeqa_nocontext",
    ]
    assert result.skipped == {}
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "lm_eval --model hf --model_args pretrained=" in readme and f"--include_path {out.resolve()}" in readme
    assert "hf-multimodal" in readme and "`<image>`" in readme
    for name in result.tasks:
        (path,) = out.rglob(f"{name}.yaml")
        text = path.read_text(encoding="utf-8")
        assert "!function" not in text
        config = yaml.safe_load(text)
        assert config["task"] == name
        is_visual = name.removesuffix("_nocontext") in visual
        assert config["output_type"] == ("generate_until" if is_visual else "multiple_choice")
        if is_visual:
            assert config["doc_to_image"] == "images" and config["metadata"]["procbench"]["metric"] == VISUAL_METRIC
            assert config["filter_list"][0]["name"] == VISUAL_METRIC.split(",")[1]
        for split_file in config["dataset_kwargs"]["data_files"].values():
            assert Path(split_file).parent == path.parent  # the data beside the YAML
            assert Path(split_file).suffix == (".parquet" if is_visual else ".jsonl")
    rows = _test_rows(store, "textual-cloze", "default")
    assert result.tasks["textual_cloze_default"]["test"] == len(rows)
    assert math.isclose(result.chance["textual_cloze_default"], 0.25)
    assert result.tasks["visual_cloze_recipeqa"]["test"] == len(_test_rows(store, "visual-cloze", "recipeqa"))
    assert math.isclose(result.chance["visual_ordering_recipeqa"], 0.25)
    assert (out / "textual_cloze" / "_textual_cloze.yaml").is_file()


def test_lm_eval_renders_the_question_as_the_report_shows_it(store: Path, tmp_path: Path) -> None:
    from procbench.export.inline import Inliner
    from procbench.qsets import read_question_set

    out = tmp_path / "lm"
    export_lm_eval(["textual-cloze/default", "sequencing"], out, store=store)
    tasks = _task_manager(out).load(
        ["textual_cloze_default", "textual_cloze_default_nocontext", "sequencing_default"]
    )["tasks"]
    qset = read_question_set(store / "questions" / "textual-cloze" / "default")
    first = _test_rows(store, "textual-cloze", "default")[0]
    record = next(Inliner(Store.open(store), {first["procedure_id"]}).records(qset, "test"))
    with_context, alone = tasks["textual_cloze_default"], tasks["textual_cloze_default_nocontext"]
    doc = with_context.test_docs()[0]
    assert doc["qid"] == record["qid"]
    shown, bare = with_context.doc_to_text(doc), alone.doc_to_text(alone.test_docs()[0])
    assert shown.endswith(bare) and bare.startswith(record["instruction"])
    assert record["procedure_title"] in shown and record["procedure_title"] not in bare
    context_text = [c["text"] for c in record["context"] if c["text"]]
    assert context_text and all(t in shown for t in context_text) and not any(t in bare for t in context_text)
    items = [i["text"] or i["title"] for i in record["question"] if i["key"] != "@placeholder"]
    assert all(f". {item}\n" in bare for item in items) and "___" in bare
    answer = record["choices"][record["answer"]]["text"] or record["choices"][record["answer"]]["title"]
    choices = with_context.doc_to_choice(doc)
    assert choices[with_context.doc_to_target(doc)] == answer and all(f"- {c}\n" in bare for c in choices)
    # sequencing: every order of the shown steps is a choice, the acceptable ones the targets
    sequencing = tasks["sequencing_default"]
    seq_doc = sequencing.test_docs()[0]
    seq_row = _test_rows(store, "sequencing", "default")[0]
    n = len(seq_row["question"])
    assert len(sequencing.doc_to_choice(seq_doc)) == math.factorial(n)
    orders = sequencing_orders(n)
    position = {key: i for i, key in enumerate(seq_row["question"])}
    targets = sequencing.doc_to_target(seq_doc)
    assert sorted(targets) == sorted(orders.index(tuple(position[k] for k in o)) for o in seq_row["choices"])


def expected_images(row: dict[str, Any]) -> list[str]:
    """The image ids a visual question's prompt shows, in the export's documented order: the question's images
    (the blank has none; ordering's images sorted by id), then each choice's image."""
    choices = list(row["choices"])
    if choices and isinstance(choices[0], list):  # ordering: the images of the orders, in an order telling nothing
        return sorted({key for order in choices for key in order})
    return [k for k in row["question"] if k != "@placeholder"] + [str(c) for c in choices]


def check_visual_prompts(task: Any, store: Path, rows: list[dict[str, Any]], *, context: bool, limit: int = 5) -> None:
    """Assert that each of the first ``limit`` test prompts of an exported visual ``task`` shows the question's
    images, in order, one ``<image>`` each, and the procedure's title and step texts exactly when ``context``."""
    from PIL import Image

    opened = Store.open(store)
    by_qid = {row["qid"]: row for row in rows}
    docs = list(task.test_docs())
    assert docs
    for doc in docs[:limit]:
        row = by_qid[doc["qid"]]
        text, images = task.doc_to_text(doc), task.doc_to_image(doc)
        wanted = expected_images(row)
        assert wanted and text.count(IMAGE_PLACEHOLDER) == len(images) == len(wanted), (text, len(images))
        for image, image_id in zip(images, wanted, strict=True):
            path = opened.image_file(image_id)
            assert path is not None
            with Image.open(path) as stored:
                assert image.convert("RGB").tobytes() == stored.convert("RGB").tobytes()
        assert task.doc_to_target(doc) == "ABCDEFGH"[row["answer"]]
        steps = [c["text"] for c in doc["context"] if c["text"]]
        assert steps, "a visual question's procedure has step texts"
        shown = [step in text for step in steps] + [doc["procedure_title"] in text]
        assert all(shown) if context else not any(shown), (context, text)


def test_lm_eval_shows_the_visual_questions_with_their_images_and_context(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import procbench.export.lmeval as lmeval

    def exported(folder: str, tasks: tuple[str, ...] = VISUAL) -> dict[str, Any]:
        export_lm_eval(list(tasks), tmp_path / folder, store=store)
        names = [lm_eval_name(t, "recipeqa") for t in tasks]
        return _task_manager(tmp_path / folder).load([*names, *(f"{n}_nocontext" for n in names)])["tasks"]

    def check_all(tasks: dict[str, Any], only: tuple[str, ...] = VISUAL) -> None:
        for task in only:
            rows = _test_rows(store, task, "recipeqa")
            name = lm_eval_name(task, "recipeqa")
            check_visual_prompts(tasks[name], store, rows, context=True)
            check_visual_prompts(tasks[f"{name}_nocontext"], store, rows, context=False)

    check_all(exported("lm"))
    # the check fails on a prompt without its images, and on one without its context
    cloze = ("visual-cloze",)
    monkeypatch.setattr(lmeval, "VISUAL_TEMPLATE", lmeval.VISUAL_TEMPLATE.replace(IMAGE_PLACEHOLDER, "(image)"))
    with pytest.raises(AssertionError):
        check_all(exported("no-images", cloze), cloze)
    monkeypatch.undo()
    monkeypatch.setattr(lmeval, "CONTEXT_TEMPLATE", "")
    with pytest.raises(AssertionError):
        check_all(exported("no-context", cloze), cloze)


def test_export_refuses_a_full_folder(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lm"
    export_lm_eval(["pair-order"], out, store=store)
    with pytest.raises(BadInput, match="not empty"):
        export_lm_eval(["pair-order"], out, store=store)
    again = export_lm_eval(["sequencing"], out, store=store, overwrite=True)
    assert not (out / "pair_order").exists() and set(again.groups) == {"sequencing"}
    cli = CliRunner().invoke(
        app, ["export", "--format", "lm-eval", "pair-order", "--to", str(out), "--store", str(store), "--json"]
    )
    assert cli.exit_code == 2 and "--overwrite" in cli.output
    cli = CliRunner().invoke(
        app,
        ["export", "--format", "lm-eval", "pair-order", "--to", str(tmp_path / "p"), "--store", str(store), "--json"],
    )
    assert cli.exit_code == 0, cli.output
    assert set(json.loads(cli.stdout)["tasks"]) == {"pair_order_default", "pair_order_default_nocontext"}


# -- lm-eval runs the export; evaluate reads it back -----------------------------------------------------------


@pytest.mark.slow
def test_the_dummy_model_runs_every_task_at_chance_and_evaluate_reads_it_back(
    store: Path, tmp_path: Path, quick_lm_eval: None
) -> None:
    out = tmp_path / "lm"
    exported = export_lm_eval(list(TASKS), out, store=store)
    results = _run(out, list(exported.groups))
    assert set(exported.tasks) <= set(results["results"])
    # the dummy model answers at random: accuracy at chance within its 95% interval, over all its answers
    hits = n = 0
    expected = 0.0
    for task, counts in exported.tasks.items():
        acc = results["results"][task]["acc,none"]
        hits += acc * counts["test"]
        n += counts["test"]
        expected += exported.chance[task] * counts["test"]
        assert len(results["samples"][task]) == counts["test"]
    p = expected / n
    half = 1.96 * math.sqrt(p * (1 - p) / n)
    assert p - half <= hits / n <= p + half, (hits / n, p, half)

    path = _save(results, tmp_path / "results")
    shown = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    rows = {(r["model"], r["qset"], r["metric"]): r for r in data["results"]}
    default = rows[("lm-eval dummy", "textual-cloze/default", "accuracy")]
    assert default["ci_method"] == "bootstrap" and default["n"] == exported.tasks["textual_cloze_default"]["test"]
    assert math.isclose(default["value"], results["results"]["textual_cloze_default"]["acc,none"])
    alone = rows[("lm-eval dummy (no context)", "textual-cloze/default", "accuracy")]
    assert math.isclose(alone["value"], results["results"]["textual_cloze_default_nocontext"]["acc,none"])
    assert ("lm-eval dummy", "sequencing/default", "pmr") in rows  # the whole order right
    table = next(t for t in data["summary"]["tables"] if t["task"] == "textual-cloze")
    assert table["settings"] == ["default", "recipeqa"]
    assert [r["model"] for r in table["rows"]] == ["lm-eval dummy", "lm-eval dummy (no context)"]
    lo, hi = table["rows"][0]["ci"]["default"]
    assert lo <= table["rows"][0]["values"]["default"] <= hi
    assert any("per-question log" in note for note in data["notes"])

    # beside the baselines: chance on the same sets, one table
    both = CliRunner().invoke(
        app,
        ["evaluate", "textual-cloze", "--model", "chance", "--lm-eval", str(path), "--store", str(store), "--json"],
    )
    assert both.exit_code == 0, both.output
    table = next(t for t in json.loads(both.stdout)["summary"]["tables"] if t["task"] == "textual-cloze")
    assert [r["model"] for r in table["rows"]] == ["chance", "lm-eval dummy", "lm-eval dummy (no context)"]
    text = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path.parent), "--store", str(store)])
    assert text.exit_code == 0 and "lm-eval dummy (no context)" in text.output and "recipeqa" in text.output

    # without the per-question logs: lm-eval's standard error, said so
    for sample in path.parent.glob("samples_*.jsonl"):
        sample.unlink()
    bare = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), "--json"])
    data = json.loads(bare.stdout)
    row = next(r for r in data["results"] if r["qset"] == "textual-cloze/default" and "no context" not in r["model"])
    stderr = results["results"]["textual_cloze_default"]["acc_stderr,none"]
    assert row["ci_method"] == "stderr"
    assert math.isclose(row["ci"][1], min(1.0, row["value"] + 1.96 * stderr))
    assert any("standard error" in note for note in data["notes"])

    # recorded beside the set, the dataset card shows the model rows
    from procbench.export import export_sets

    pytest.importorskip("datasets")
    export_sets(["textual-cloze"], tmp_path / "hf", store=store)
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    models = card[card.index("## Models") :]
    assert "| lm-eval dummy (no context) |" in models and "*" in models  # the last read had no samples


def test_evaluate_refuses_results_that_are_not_lm_eval_and_other_splits(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "results_x.json"
    bad.write_text('{"nothing": 1}', encoding="utf-8")
    for args in (
        ["evaluate", "--lm-eval", str(bad)],
        ["evaluate", "--lm-eval", str(tmp_path / "missing.json")],
        ["evaluate", "--lm-eval", str(bad), "--lm-eval-metric", "f1"],
    ):
        result = CliRunner().invoke(app, [*args, "--store", str(store)])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_evaluate_records_lm_eval_scores_only_in_the_store_it_was_given(store: Path, tmp_path: Path) -> None:
    """A results file names its sets by the path they were exported from: ``evaluate --store B`` must not write
    ``models.json`` into store A's set (a moved export, or a crafted file), and says why; ``--store A`` records."""
    qset = store / "questions" / "textual-cloze" / "default"
    results = {
        "results": {"textual_cloze_default": {"acc,none": 0.3, "acc_stderr,none": 0.05}},
        "configs": {
            "textual_cloze_default": {
                "metadata": {
                    "procbench": {"task": "textual-cloze", "setting": "default", "context": True, "qset": str(qset)}
                }
            }
        },
        "n-samples": {"textual_cloze_default": {"effective": 10}},
        "config": {"model": "dummy"},
    }
    path = tmp_path / "results" / "results_2026-11-26T00-00-00.json"
    path.parent.mkdir()
    path.write_text(json.dumps(results), encoding="utf-8")
    other = tmp_path / "other-store"
    Store.open(other, create=True)
    elsewhere = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(other), "--json"])
    assert elsewhere.exit_code == 0, elsewhere.output
    assert not (qset / "models.json").exists()
    assert "in neither the store nor the sets given" in elsewhere.stderr
    here = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), "--json"])
    assert here.exit_code == 0, here.output
    assert "lm-eval dummy" in json.loads((qset / "models.json").read_text(encoding="utf-8"))["models"]


# -- malformed results (issue 58, row F): one line, exit 2, nothing recorded -------------------------------------


def _results(value: Any = 0.3, **overrides: Any) -> dict[str, Any]:
    """An lm-eval results file of one exported task (textual cloze's default setting), with overrides."""
    data: dict[str, Any] = {
        "results": {"textual_cloze_default": {"acc,none": value, "acc_stderr,none": 0.05}},
        "configs": {
            "textual_cloze_default": {
                "metadata": {"procbench": {"task": "textual-cloze", "setting": "default", "context": True}}
            }
        },
        "n-samples": {"textual_cloze_default": {"effective": 10}},
        "config": {"model": "dummy"},
    }
    data.update(overrides)
    return data


@pytest.fixture
def empty_store(tmp_path: Path) -> Path:
    Store.open(tmp_path / "store", create=True)
    return tmp_path / "store"


def _evaluate(path: Path, store: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), *extra])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"results": {"textual_cloze_default": 7}, "configs": _results()["configs"]}), "not an object"),
        (json.dumps(_results("abc")), "not a number"),
        (json.dumps(_results(7.5)), "outside [0, 1]"),
        (json.dumps(_results(-0.1)), "outside [0, 1]"),
        (json.dumps(_results()).replace("0.3", "NaN"), "NaN"),
        (json.dumps(_results()).replace("0.3", "Infinity"), "Infinity"),
        (json.dumps(_results()).replace("0.3", "1e999"), "not a number"),
        (json.dumps(_results()).replace('"effective": 10', '"effective": 1e999'), "not a count"),
        (json.dumps(_results()).replace('"effective": 10', '"effective": -4'), "not a count"),
        (json.dumps(_results()).replace('"acc_stderr,none": 0.05', '"acc_stderr,none": -3'), "outside [0, 1]"),
        (json.dumps(_results(configs=[])), "'configs' is not an object"),
        ('{"results": ' * 5000 + "{}" + "}" * 5000, "nested too deeply"),
        ('{"results": {}, "x": ' + "[" * 100 + "]" * 100 + "}", "nested too deeply"),
        (json.dumps(_results(configs={"textual_cloze_default": {"metadata": {"procbench": {"task": 3}}}})), "string"),
    ],
    ids=[
        "not-a-dict",
        "text",
        "above-one",
        "below-zero",
        "nan",
        "infinity",
        "overflow",
        "huge-count",
        "negative-count",
        "negative-stderr",
        "configs-a-list",
        "deep-5000",
        "deep-100",
        "task-not-a-string",
    ],
)
def test_evaluate_refuses_malformed_lm_eval_results_with_one_line(
    empty_store: Path, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "results_x.json"
    path.write_text(text, encoding="utf-8")
    result = _evaluate(path, empty_store)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_evaluate_caps_the_size_of_results_and_of_a_logged_sample(
    empty_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import procbench.models.lmeval as reader

    folder = tmp_path / "results"
    folder.mkdir()
    path = folder / "results_2026-01-01T00-00-00.json"
    path.write_text(json.dumps(_results()), encoding="utf-8")
    monkeypatch.setattr(reader, "MAX_RESULTS_BYTES", 100)
    result = _evaluate(path, empty_store)
    assert result.exit_code == 2 and "over 0 MiB" in result.output and len(result.output.strip().splitlines()) == 1
    monkeypatch.undo()
    samples = folder / "samples_textual_cloze_default_2026-01-01T00-00-00.jsonl"
    samples.write_text(json.dumps({"acc": 2.0, "doc": {"procedure_id": "p"}}) + "\n", encoding="utf-8")
    result = _evaluate(path, empty_store)
    assert result.exit_code == 2 and "outside [0, 1]" in result.output, result.output
    monkeypatch.setattr(reader, "MAX_SAMPLE_LINE", 10)
    samples.write_text(json.dumps({"acc": 1.0, "doc": {"procedure_id": "p"}}) + "\n", encoding="utf-8")
    result = _evaluate(path, empty_store)
    assert result.exit_code == 2 and "a line over" in result.output, result.output
    monkeypatch.undo()
    result = _evaluate(path, empty_store, "--json")  # the same files, within the caps: read
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["value"] == 1.0


@pytest.mark.parametrize("name", ["[bold red]boom[/]", "[/]", "a[link=file:///etc]x[/link]", "\x1b[2Jcleared"])
def test_a_model_name_is_printed_as_plain_text(empty_store: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / "results_x.json"
    path.write_text(json.dumps(_results(config={"model_args": {"pretrained": name}})), encoding="utf-8")
    result = _evaluate(path, empty_store, "--no-record")
    assert result.exit_code == 0, result.output
    shown = name.replace("\x1b", "")
    assert f"lm-eval {shown}" in result.output  # the name as written, its brackets kept: no markup applied
    assert "\x1b" not in result.output


def test_evaluate_reads_a_visual_task_by_the_metric_its_export_names(empty_store: Path, tmp_path: Path) -> None:
    """A visual task's result is ``exact_match`` after the ``letter`` filter (its config's metadata says so); the
    per-question log's lines of other filters are not that score."""
    info = {"task": "visual-cloze", "setting": "recipeqa", "context": False, "metric": VISUAL_METRIC}
    data = {
        "results": {"visual_cloze_recipeqa_nocontext": {VISUAL_METRIC: 0.5, "exact_match_stderr,letter": 0.2}},
        "configs": {"visual_cloze_recipeqa_nocontext": {"metadata": {"procbench": info}}},
        "n-samples": {"visual_cloze_recipeqa_nocontext": {"effective": 4}},
        "config": {"model": "hf-multimodal", "model_args": "pretrained=tiny-vlm"},
    }
    folder = tmp_path / "results"
    folder.mkdir()
    path = folder / "results_2026-01-01T00-00-00.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = _evaluate(path, empty_store, "--json", "--no-record")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["results"]
    assert row["model"] == "lm-eval tiny-vlm (no context)" and row["qset"] == "visual-cloze/recipeqa"
    assert row["value"] == 0.5 and row["ci_method"] == "stderr" and row["metric"] == "accuracy"
    assert row["ci"] == pytest.approx([0.5 - 1.96 * 0.2, 0.5 + 1.96 * 0.2])
    lines = [
        {"doc": {"procedure_id": f"p{i % 2}"}, "filter": name, "exact_match": float(hit)}
        for i, (name, hit) in enumerate([("letter", 1), ("letter", 1), ("letter", 1), ("letter", 0), ("none", 0)])
    ]
    samples = folder / "samples_visual_cloze_recipeqa_nocontext_2026-01-01T00-00-00.jsonl"
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = _evaluate(path, empty_store, "--json", "--no-record")
    (row,) = json.loads(result.stdout)["results"]
    assert row["value"] == 0.75 and row["n"] == 4 and row["ci_method"] == "bootstrap"
    assert any(VISUAL_METRIC in note for note in json.loads(result.stdout)["notes"])
