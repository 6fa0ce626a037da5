"""procbench.models and `procbench train` / `evaluate` on a sample store with offline embeddings.

Multiple-choice question sets are synthetic (written with the same writer the generators use), in the
formats of DESIGN §5; sequencing and pair-order sets come from their generators.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import BadInput
from procbench.generate import Setting, balance_answer_positions, generate, pair_order, sequencing
from procbench.ingest import ingest_file
from procbench.models import FeatureConfig, TrainConfig, evaluate, featurise, load_run, train
from procbench.models.nets import Batches
from procbench.models.training import predict_rows
from procbench.qsets import Question, read_question_set, write_question_sets
from procbench.store import Store
from procbench.store.views import kept_steps

TINY = {"hidden": 32, "heads": 2, "layers": 1, "dropout": 0.0, "lr": 1e-2, "batch_size": 16, "patience": 100}


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """Small models train fastest on one thread (and do not fight over a busy machine's cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _mc_questions(store: Store, task: str, pids: list[str], *, per_procedure: int, seed: int) -> list[Question]:
    """RecipeQA-style questions on 4 consecutive steps of each procedure of ``pids``; negatives come from
    procedures outside ``pids`` (far away, as RecipeQA samples them)."""
    rng = np.random.default_rng(seed)
    steps: dict[str, list[dict[str, Any]]] = {}
    for row in kept_steps(store).to_pylist():
        steps.setdefault(row["procedure_id"], []).append(row)
    pool = [s for pid in sorted(steps) if pid not in pids for s in steps[pid]]
    questions = []
    for pid in pids:
        rows = steps[pid]
        for _ in range(per_procedure):
            start = int(rng.integers(0, len(rows) - 3))
            window = rows[start : start + 4]
            keys = [f"{pid}#{r['index']}" for r in window]
            images = [r["image_ids"][0] for r in window]
            negatives = [pool[int(i)] for i in rng.choice(len(pool), 3, replace=False)]
            blank = int(rng.integers(0, 4))
            context = [r["index"] for r in rows]
            if task == "textual-cloze":
                question = [r["title"] for r in window]
                question[blank] = "@placeholder"
                q_keys: list[str | None] = list(keys)
                q_keys[blank] = None
                meta = {
                    "question_keys": q_keys,
                    "choice_keys": [keys[blank]] + [f"{n['procedure_id']}#{n['index']}" for n in negatives],
                }
                choices: list[Any] = [window[blank]["title"]] + [n["title"] for n in negatives]
            elif task == "visual-cloze":
                question, meta = list(images), {}
                question[blank] = "@placeholder"
                choices = [images[blank]] + [n["image_ids"][0] for n in negatives]
            elif task == "visual-coherence":  # the four images are the choices; the answer is the odd one
                question, meta = [], {}
                choices = [negatives[0]["image_ids"][0], *images[:3]]
            else:  # visual-ordering: choices are orders of the four images
                wrong = [p for p in itertools.permutations(range(4)) if p != (0, 1, 2, 3)]
                picked = [wrong[int(i)] for i in rng.choice(len(wrong), 3, replace=False)]
                question, meta = [], {}
                choices = [images] + [[images[i] for i in p] for p in picked]
            questions.append(Question(pid, context, question, choices, 0, {"setting": "synthetic", **meta}))
    balance_answer_positions(questions, rng)
    return questions


def _write(store: Store, task: str, setting: str, questions: list[Question], splits: dict[str, str]) -> Path:
    return write_question_sets(store, task, {setting: questions}, splits=splits, seed=0, args={})[setting]


@pytest.fixture(scope="module")
def store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Store:
    import shutil

    root = tmp_path_factory.mktemp("models")
    shutil.copytree(ingested_sample, root / "store")
    embed_store(root / "store", text_encoder="hashed", image_encoder="colour-layout")
    opened = Store.open(root / "store")
    pids = sorted(kept_steps(opened).column("procedure_id").unique().to_pylist())
    tiny, rest = pids[:6], pids[6:]
    train_only = {pid: "train" for pid in pids}
    by_position = {pid: ("train", "train", "train", "val", "test")[i % 5] for i, pid in enumerate(pids)}
    for task in ("textual-cloze", "visual-cloze", "visual-coherence", "visual-ordering"):
        _write(opened, task, "tiny", _mc_questions(opened, task, tiny, per_procedure=2, seed=1), train_only)
    for number, setting in enumerate(("knobs-000", "knobs-011")):
        questions = _mc_questions(opened, "visual-cloze", rest[:30], per_procedure=1, seed=10 + number)
        _write(opened, "visual-cloze", setting, questions, by_position)
    seq, _ = sequencing.build(opened, [Setting("default")])
    _write(opened, "sequencing", "tiny", [q for q in seq["default"] if q.procedure_id in tiny[:5]], train_only)
    pairs, _ = pair_order.build(opened, [Setting("default")])
    _write(opened, "pair-order", "tiny", [q for q in pairs["default"] if q.procedure_id in tiny], train_only)
    generate(opened, "sequencing", seed=0)
    generate(opened, "pair-order", seed=0)
    for task in ("textual-cloze", "visual-cloze", "visual-coherence", "visual-ordering"):
        generate(opened, task, Setting("recipeqa"), seed=0)
    return opened


def _qset(store: Store, name: str) -> Path:
    return store.root / "questions" / name


def _fit(store: Store, name: str, model: str, out: Path, **overrides: Any) -> Any:
    config = TrainConfig(model=model, **{**TINY, "epochs": 40, **overrides})
    return train(_qset(store, name), config, out)


def test_featurisation_builds_queries_per_task(store: Store) -> None:
    cloze = featurise(read_question_set(_qset(store, "textual-cloze/tiny")))
    i = 0
    blank = int(np.flatnonzero(cloze.placeholder[i])[0])
    # each choice's query is the question with that candidate in the placeholder
    for k in range(4):
        expected = cloze.question[i].copy()
        expected[blank] = cloze.choices[i, k, 0]
        assert cloze.query[i, k].tolist() == expected.tolist()
    assert cloze.dims["item"] == cloze.dims["context"] == 256 and sum(cloze.missing.values()) == 0
    table = read_question_set(_qset(store, "textual-cloze/tiny")).table()
    assert cloze.context_mask[i].sum() == len(table["context"][0])
    coherence = featurise(read_question_set(_qset(store, "visual-coherence/tiny")))
    # coherence: the four images (the choices) are the question; each query leaves its candidate out
    q, c, u = coherence.question[0], coherence.choices[0, :, 0], coherence.query[0]
    assert q.tolist() == c.tolist() and coherence.query_mask[0].sum(-1).tolist() == [3, 3, 3, 3]
    assert all(u[k, :3].tolist() == [x for x in q.tolist() if x != c[k]] for k in range(4))
    ordering = featurise(read_question_set(_qset(store, "visual-ordering/tiny")))
    assert ordering.choices.shape[1:] == (4, 4) and (ordering.query == ordering.choices).all()
    both = featurise(read_question_set(_qset(store, "visual-cloze/tiny")), FeatureConfig(context="both"))
    assert both.dims["context"] == 256 + both.dims["item"]
    seq = featurise(read_question_set(_qset(store, "sequencing/tiny")), FeatureConfig(features="text"))
    assert seq.dims["item"] == 512
    for j in range(len(seq)):
        keys = seq.keys[j]
        reference = read_question_set(_qset(store, "sequencing/tiny")).table()["choices"][j].as_py()[0]
        assert [keys[p] for p in seq.order[j] if p >= 0] == reference


def test_textual_cloze_without_step_keys_is_bad_input(store: Store, tmp_path: Path) -> None:
    questions = _mc_questions(store, "textual-cloze", ["sample:Bake-Banana-Bread"], per_procedure=1, seed=0)
    for q in questions:
        q.meta = {"setting": "synthetic"}
    path = _write(store, "textual-cloze", "nokeys", questions, {"sample:Bake-Banana-Bread": "train"})
    with pytest.raises(BadInput, match="question_keys"):
        featurise(read_question_set(path))


@pytest.mark.parametrize(
    ("model", "task"),
    [
        ("hasty-choice-only", "visual-cloze"),
        ("hasty", "textual-cloze"),
        ("impatient-reader", "textual-cloze"),
        ("bidaf", "visual-coherence"),
        ("htrn", "textual-cloze"),
        ("htrn", "visual-ordering"),
    ],
)
def test_mc_models_overfit_a_tiny_set(store: Store, tmp_path: Path, model: str, task: str) -> None:
    result = _fit(store, f"{task}/tiny", model, tmp_path / "run")
    losses = [e["loss"] for e in result.history]
    assert losses[-1] < 0.2 * losses[0]
    assert result.metrics["train"]["accuracy"] == 1.0
    assert result.select_split == "train" and result.parameters > 0


def test_ordering_models_overfit_tiny_sets(store: Store, tmp_path: Path) -> None:
    pair = _fit(store, "pair-order/tiny", "pair-order", tmp_path / "pair", epochs=60)
    assert pair.history[-1]["loss"] < 0.5 * pair.history[0]["loss"]
    assert pair.metrics["train"]["accuracy"] == 1.0
    assert pair.parameters == 2 * (2 * 904 + 256) + 2  # a linear head over [step a; step b; title]
    for model in ("pairwise-sort", "order-pointer"):
        result = _fit(store, "sequencing/tiny", model, tmp_path / model, epochs=60)
        assert result.history[-1]["loss"] < 0.5 * result.history[0]["loss"]
        assert result.metrics["train"]["pmr"] == 1.0 and result.metrics["train"]["tau"] == 1.0


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "model.safetensors"))


def test_training_is_deterministic_under_a_seed(store: Store, tmp_path: Path) -> None:
    kwargs = {"epochs": 3, "dropout": 0.2, "batch_size": 4}
    a = _fit(store, "visual-cloze/tiny", "bidaf", tmp_path / "a", **kwargs)
    b = _fit(store, "visual-cloze/tiny", "bidaf", tmp_path / "b", **kwargs)
    c = _fit(store, "visual-cloze/tiny", "bidaf", tmp_path / "c", seed=1, **kwargs)
    wa, wb, wc = _weights(a.run), _weights(b.run), _weights(c.run)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not all(torch.equal(wa[k], wc[k]) for k in wa)
    assert [e["loss"] for e in a.history] == [e["loss"] for e in b.history]


def test_checkpoint_round_trip(store: Store, tmp_path: Path) -> None:
    result = _fit(store, "pair-order/default", "pair-order", tmp_path / "run", epochs=5, patience=2)
    files = sorted(p.name for p in result.run.iterdir())
    assert files == ["config.json", "last.pt", "metrics.json", "model.safetensors", "train.jsonl"]
    state = torch.load(result.run / "last.pt", weights_only=True)
    assert set(state["model"]) == set(_weights(result.run)) and state["epoch"] == result.epochs
    loaded = load_run(result.run)
    feats = featurise(read_question_set(_qset(store, "pair-order/default")))
    rows = feats.rows("test")
    predictions = predict_rows(loaded.net, Batches(feats), rows)
    accuracy = float(np.mean(np.array(predictions) == feats.answer[rows]))
    assert accuracy == pytest.approx(result.metrics["test"]["accuracy"])
    assert json.loads((result.run / "metrics.json").read_text())["test"]["accuracy"] == pytest.approx(accuracy)
    report = evaluate(runs=[result.run], splits=["test"], bootstrap=0)
    assert report.results[0].value == pytest.approx(accuracy) and report.results[0].ci is None


class _Interrupt:
    """A progress sink that interrupts training after ``after`` batches (like Ctrl-C or a kill)."""

    def __init__(self, after: int) -> None:
        self.left = after

    def start(self, description: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise KeyboardInterrupt


def test_interrupted_and_extended_runs_resume_to_the_same_weights(store: Store, tmp_path: Path) -> None:
    name, model = "visual-cloze/tiny", "hasty"
    config = TrainConfig(model=model, **{**TINY, "batch_size": 4, "dropout": 0.1, "epochs": 4})
    whole = train(_qset(store, name), config, tmp_path / "whole")
    # interrupted in the middle of epoch 3 (3 batches per epoch), then the same command again
    with pytest.raises(KeyboardInterrupt):
        train(_qset(store, name), config, tmp_path / "resumed", progress=_Interrupt(after=7))
    assert len((tmp_path / "resumed" / "train.jsonl").read_text().splitlines()) == 2
    resumed = train(_qset(store, name), config, tmp_path / "resumed")
    # trained for 2 epochs, then asked for 4
    short = train(_qset(store, name), TrainConfig(**{**config.__dict__, "epochs": 2}), tmp_path / "extended")
    assert short.epochs == 2
    extended = train(_qset(store, name), config, tmp_path / "extended")
    for run in (resumed, extended):
        assert run.epochs == 4 and [e["loss"] for e in run.history] == [e["loss"] for e in whole.history]
        w, ref = _weights(run.run), _weights(whole.run)
        assert all(torch.equal(w[k], ref[k]) for k in ref)
    # a finished run returns at once; another model in the same folder needs --overwrite
    again = train(_qset(store, name), config, tmp_path / "whole")
    assert again.epochs == 4 and len(again.history) == 4
    with pytest.raises(BadInput, match="different run"):
        train(_qset(store, name), TrainConfig(model="bidaf", **TINY), tmp_path / "whole")
    replaced = train(
        _qset(store, name), TrainConfig(model="bidaf", **{**TINY, "epochs": 1}), tmp_path / "whole", overwrite=True
    )
    assert replaced.model == "bidaf" and replaced.epochs == 1


def test_reference_models(store: Store) -> None:
    report = evaluate(
        qsets=[_qset(store, "visual-cloze/knobs-000"), _qset(store, "pair-order/default")],
        models=["chance", "distance-svm"],
        splits=["train", "test"],
        bootstrap=200,
    )
    values = {(r.model, r.qset, r.split): r.value for r in report.results}
    assert values[("chance", "visual-cloze/knobs-000", "test")] == 0.25
    assert values[("chance", "pair-order/default", "test")] == 0.5
    # negatives from other procedures are far from the question in colour-layout space: the probe finds it
    assert values[("distance-svm", "visual-cloze/knobs-000", "train")] > 0.6
    assert any("distance-svm: does not answer pair-order" in s for s in report.skipped)
    with pytest.raises(BadInput, match="does not answer sequencing"):
        evaluate(qsets=[_qset(store, "sequencing/default")], models=["distance-svm"])
    with pytest.raises(BadInput, match="is trained"):
        evaluate(qsets=[_qset(store, "sequencing/default")], models=["htrn"])


@pytest.mark.parametrize("task", ["textual-cloze", "visual-cloze", "visual-coherence", "visual-ordering"])
def test_generated_sets_train_and_evaluate(store: Store, tmp_path: Path, task: str) -> None:
    result = _fit(store, f"{task}/recipeqa", "htrn", tmp_path / "run", epochs=2)
    assert {"train", "val", "test"} <= set(result.metrics) and sum(result.missing.values()) == 0
    report = evaluate(runs=[result.run], models=["chance", "distance-svm"], splits=["test"], bootstrap=50)
    values = {r.model: r.value for r in report.results}
    assert values["chance"] == 0.25 and 0.0 <= values["htrn"] <= 1.0 and 0.0 <= values["distance-svm"] <= 1.0


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    return result


def test_cli_train_and_evaluate_a_sweep(store: Store, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    small = ["--hidden", "16", "--heads", "2", "--epochs", "3", "--patience", "2", "--threads", "1"]
    trained = _cli(
        "train",
        "visual-cloze",
        "--store",
        str(store.root),
        "--model",
        "hasty-choice-only",
        "--out",
        str(runs / "choice-only"),
        *small,
        "--json",
    )
    assert trained.exit_code == 0, trained.output
    sweep = [r for r in json.loads(trained.stdout)["runs"]]
    assert {Path(r["run"]).name for r in sweep} >= {"knobs-000", "knobs-011"}
    assert all(r["epochs"] >= 1 and "test" in r["metrics"] for r in sweep if r["qset"].endswith(("000", "011")))
    shown = _cli("evaluate", str(runs / "choice-only"), "--model", "chance", "--store", str(store.root))
    assert shown.exit_code == 0, shown.output
    assert "mean ± std" in shown.output and "011" in shown.output and "chance" in shown.output
    as_json = _cli("evaluate", str(runs / "choice-only"), "--model", "chance", "--json", "--bootstrap", "100")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    first = data["results"][0]
    assert {"model", "qset", "split", "metric", "value", "ci"} <= set(first) and len(first["ci"]) == 2
    table = next(t for t in data["summary"]["tables"] if t["task"] == "visual-cloze")
    assert {"knobs-000", "knobs-011"} <= set(table["settings"])
    row = next(r for r in table["rows"] if r["model"] == "hasty-choice-only")
    values = [row["values"][s] for s in table["settings"]]
    assert row["mean"] == pytest.approx(np.mean(values)) and row["std"] == pytest.approx(np.std(values))
    assert [r["model"] for r in table["rows"]][0] == "chance"


def test_cli_sequencing_and_errors(store: Store, tmp_path: Path) -> None:
    run = tmp_path / "pointer"
    trained = _cli(
        "train",
        "sequencing/default",
        "--store",
        str(store.root),
        "--model",
        "order-pointer",
        "--out",
        str(run),
        "--hidden",
        "16",
        "--heads",
        "2",
        "--epochs",
        "2",
        "--threads",
        "1",
    )
    assert trained.exit_code == 0, trained.output
    assert "order-pointer" in trained.output and "PMR" in trained.output
    shown = _cli("evaluate", str(run), "--model", "chance", "--split", "all", "--json", "--bootstrap", "0")
    assert shown.exit_code == 0, shown.output
    metrics = {r["metric"] for r in json.loads(shown.stdout)["results"]}
    assert metrics == {"acc", "pmr", "l_q", "l_r", "tau", "dist"}
    bad = [
        ("train", "sequencing/default", "--store", str(store.root), "--model", "htrm", "--out", str(tmp_path / "x")),
        ("train", "sequencing/default", "--store", str(store.root), "--model", "hasty", "--out", str(tmp_path / "x")),
        ("train", "sequencing/default", "--store", str(store.root), "--model", "chance", "--out", str(tmp_path / "x")),
        ("train", "nothing/here", "--store", str(store.root), "--model", "hasty", "--out", str(tmp_path / "x")),
        ("evaluate", "--store", str(store.root)),
        ("evaluate", str(run), "--split", "dev"),
        ("evaluate", "--model", "chance"),
    ]
    for args in bad:
        result = _cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output


def test_help_does_not_import_the_model_subpackage() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['procbench', '--help']\n"
        "from procbench.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('procbench.models', 'torch', 'safetensors'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_run_is_not_scored_on_its_set_once_that_set_changed(store: Store, tmp_path: Path) -> None:
    import shutil

    copy = Store.open(shutil.copytree(store.root, tmp_path / "store"))
    run = _fit(copy, "pair-order/default", "pair-order", tmp_path / "run", epochs=1).run
    assert evaluate(runs=[run], bootstrap=0).warnings == []
    generate(copy, "pair-order", seed=1, overwrite=True)  # the set is regenerated under the run
    with pytest.raises(BadInput, match="has changed since"):
        evaluate(runs=[run], bootstrap=0)
    cli = CliRunner().invoke(app, ["evaluate", str(run), "--bootstrap", "0"])
    assert cli.exit_code == 2 and "--allow-changed-sets" in cli.stderr
    loud = CliRunner().invoke(app, ["evaluate", str(run), "--bootstrap", "0", "--allow-changed-sets"])
    assert loud.exit_code == 0 and "warning:" in loud.stderr and "has changed since" in loud.stderr


def test_title_less_text_only_store_trains_and_chance_needs_no_embeddings(tmp_path: Path) -> None:
    """OpenPI-style data: one sentence per step, no headlines, image URLs never fetched."""
    words = ["wood", "glue", "paint", "saw", "nail", "sand", "drill", "clamp", "brush", "tape"]
    records = [
        {
            "id": f"p{n}",
            "title": f"Build thing {n}",
            "steps": [
                {
                    "text": f"Take the {words[(n + i) % 10]} and use it {i} times.",
                    "images": [f"https://x.org/{n}/{i}.jpg"],
                }
                for i in range(5)
            ],
        }
        for n in range(30)
    ]
    source = tmp_path / "p.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    ingest_file(tmp_path / "store", source)
    store = Store.open(tmp_path / "store")
    generate(store, "pair-order", seed=0)
    qset = _qset(store, "pair-order/default")
    chance = evaluate(qsets=[qset], models=["chance"], bootstrap=0)  # nothing embedded yet
    assert {r.value for r in chance.results} == {0.5}
    with pytest.raises(BadInput, match=r"no step_text embeddings yet; run `procbench embed` first$"):
        featurise(read_question_set(qset))  # the hint once, not twice
    embed_store(store, text_encoder="hashed")
    feats = featurise(read_question_set(qset))  # default features: both (titles and images absent: no columns)
    assert feats.dims["item"] == load_embeddings_dim(store, "step_text") and feats.missing.get("step_image") is None
    with pytest.raises(BadInput, match="fetch-images"):
        featurise(read_question_set(qset), FeatureConfig(features="image"))
    result = train(qset, TrainConfig(model="pair-order", **{**TINY, "epochs": 2}), tmp_path / "run")
    assert result.metrics["train"]["accuracy"] >= 0.0


def load_embeddings_dim(store: Store, field: str) -> int:
    from procbench.embed import load_embeddings

    return int(load_embeddings(store, field).dim)
