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
from procbench.export.lmeval import SKIPPED_TASKS, export_lm_eval, sequencing_orders
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


def test_every_textual_setting_becomes_two_tasks_and_visual_sets_are_skipped(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lm"
    result = export_lm_eval([*TASKS, "visual-cloze"], out, store=store)
    expected = {
        "textual_cloze_default",
        "textual_cloze_recipeqa",
        "pair_order_default",
        "sequencing_default",
    }
    assert set(result.tasks) == expected | {f"{name}_nocontext" for name in expected}
    assert result.groups["textual_cloze"] == [
        "textual_cloze_default",
        "textual_cloze_default_nocontext",
        "textual_cloze_recipeqa",
        "textual_cloze_recipeqa_nocontext",
    ]
    assert set(result.skipped) == {"visual-cloze/recipeqa"}
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "lm_eval --model hf --model_args pretrained=" in readme and f"--include_path {out.resolve()}" in readme
    for task in SKIPPED_TASKS:
        assert task in readme  # says which visual tasks are not exported, and why
    for name in result.tasks:
        (path,) = out.rglob(f"{name}.yaml")
        text = path.read_text(encoding="utf-8")
        assert "!function" not in text
        config = yaml.safe_load(text)
        assert config["output_type"] == "multiple_choice" and config["task"] == name
        for split_file in config["dataset_kwargs"]["data_files"].values():
            assert Path(split_file).parent == path.parent  # the data beside the YAML
    rows = _test_rows(store, "textual-cloze", "default")
    assert result.tasks["textual_cloze_default"]["test"] == len(rows)
    assert math.isclose(result.chance["textual_cloze_default"], 0.25)
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


def test_export_refuses_only_visual_sets_and_a_full_folder(store: Path, tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="visual-cloze"):
        export_lm_eval(["visual-cloze"], tmp_path / "v", store=store)
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


def _tiny_causal_lm(out: Path, texts: list[str]) -> Path:
    """A randomly initialised GPT-2 of two small layers with a byte-level BPE tokenizer trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    fast.save_pretrained(out)
    import torch

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(fast), n_positions=4096, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    GPT2LMHeadModel(config).save_pretrained(out)
    return out


@pytest.mark.slow
def test_a_tiny_hugging_face_model_runs_the_tasks_offline(
    store: Path, tmp_path: Path, quick_lm_eval: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    out = tmp_path / "lm"
    exported = export_lm_eval(["textual-cloze/default", "pair-order"], out, store=store)
    texts = [line for path in out.rglob("*.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]
    model = _tiny_causal_lm(tmp_path / "tiny", texts)
    results = _run(
        out, list(exported.tasks), model="hf", model_args={"pretrained": str(model), "device": "cpu"}, batch_size=4
    )
    for task, counts in exported.tasks.items():
        assert len(results["samples"][task]) == counts["test"]
        assert 0.0 <= results["results"][task]["acc,none"] <= 1.0
    # the model's likelihoods, not random draws: the same run again gives the same answers
    again = _run(
        out, ["pair_order_default"], model="hf", model_args={"pretrained": str(model), "device": "cpu"}, batch_size=4
    )

    def likelihoods(run: dict[str, Any]) -> list[float]:
        return [float(ll) for s in run["samples"]["pair_order_default"] for ll, _ in s["filtered_resps"]]

    first = likelihoods(results)
    assert likelihoods(again) == pytest.approx(first, abs=1e-4)  # batches differ: float noise only
    assert len(set(first)) > 1
    path = _save(results, tmp_path / "results")
    shown = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), "--json"])
    assert shown.exit_code == 0, shown.output
    models = {r["model"] for r in json.loads(shown.stdout)["results"]}
    assert models == {f"lm-eval {model}", f"lm-eval {model} (no context)"}


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
