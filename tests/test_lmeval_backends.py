"""`procbench export --format lm-eval` run by lm-evaluation-harness's real Hugging Face backends, offline: a tiny
GPT-2 (`--model hf`) on every exported textual task and a tiny LLaVA (`--model hf-multimodal`) on the visual
tasks, both with random weights and a tokenizer trained here, nothing downloaded. `procbench evaluate --lm-eval`
reads the results back. Each test also shows that its checks fail on an export whose prompt drops the context
(and, for the visual tasks, the images)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_lmeval as shared
from test_lmeval import TASKS, VISUAL, _run, _save, _test_rows, check_visual_prompts
from typer.testing import CliRunner

from procbench.cli import app
from procbench.export.lmeval import IMAGE_PLACEHOLDER, VISUAL_METRIC, export_lm_eval, lm_eval_name

pytest.importorskip("lm_eval")
pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

# test_lmeval's fixtures: its sample store with every task generated, and lm-eval without its machine report
store_template = shared.store_template
store = shared.store
quick_lm_eval = shared.quick_lm_eval

#: Questions per task lm-eval asks the tiny models (its --limit): enough to read every prompt kind back.
LIMIT = 4


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def _bpe(texts: list[str], special: list[str], **kwargs: Any) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` (its first special token is end of text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=special[0], bos_token=special[0], **kwargs)


def _tiny_causal_lm(out: Path, texts: list[str]) -> Path:
    """A randomly initialised GPT-2 of two small layers with a byte-level BPE tokenizer trained on ``texts``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    fast = _bpe(texts, ["<|endoftext|>"])
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(fast), n_positions=4096, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    GPT2LMHeadModel(config).save_pretrained(out)
    return out


def _tiny_llava(out: Path, texts: list[str]) -> Path:
    """A randomly initialised LLaVA (a 2-layer CLIP vision tower on 32-pixel images, 16 tokens an image, and a
    2-layer Llama) with its processor: a CLIP image processor and a BPE tokenizer trained on ``texts``."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    special = ["<|endoftext|>", IMAGE_PLACEHOLDER, "<pad>"]
    fast = _bpe(texts, special, pad_token="<pad>", extra_special_tokens={"image_token": IMAGE_PLACEHOLDER})
    image_token = fast.convert_tokens_to_ids(IMAGE_PLACEHOLDER)
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8
    )
    text = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=fast.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=fast,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _prompts(results: dict[str, Any], task: str) -> list[tuple[dict[str, Any], str]]:
    """Each logged question of ``task`` with the prompt the model was given (its request's context)."""
    return [(sample["doc"], sample["arguments"][0][0]) for sample in results["samples"][task]]


def check_context_given(results: dict[str, Any], task: str, *, context: bool) -> None:
    """Assert that the model was given the procedure's title and context step texts exactly when ``context``
    (a question without context steps shows its title only)."""
    for doc, prompt in _prompts(results, task):
        shown = [step["text"] in prompt for step in doc["context"] if step["text"]]
        shown.append(doc["procedure_title"] in prompt)
        assert all(shown) if context else not any(shown), (task, context, prompt)


def _next_action(store: Path) -> bool:
    """Next action's default set in ``store`` (its actions extracted with spaCy): False without a spaCy model."""
    from procbench.extract.parser import installed_model

    if installed_model() is None:
        return False
    runner = CliRunner()
    at = ["--store", str(store)]
    for args in (
        ["extract", *at, "--json"],
        ["embed", *at, "-t", "hashed", "-i", "colour-layout", "--fields", "step_text,procedure_title,action"],
        ["generate", "--task", "next-action", "--seed", "3", *at, "--json"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return True


def _read_back(path: Path, store: Path) -> dict[str, Any]:
    shown = CliRunner().invoke(app, ["evaluate", "--lm-eval", str(path), "--store", str(store), "--json"])
    assert shown.exit_code == 0, shown.output
    data: dict[str, Any] = json.loads(shown.stdout)
    return data


def test_a_tiny_gpt2_runs_every_textual_task_through_lm_eval_hf(
    store: Path, tmp_path: Path, quick_lm_eval: None, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import procbench.export.lmeval as lmeval

    textual = list(TASKS)
    if _next_action(store):
        textual.append("next-action")
    out = tmp_path / "lm"
    exported = export_lm_eval(textual, out, store=store)
    assert set(exported.groups) == {lm_eval_name(task) for task in textual}
    texts = [line for path in out.rglob("*.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]
    model = _tiny_causal_lm(tmp_path / "tiny", texts)
    model_args = {"pretrained": str(model), "device": "cpu"}
    results = _run(out, list(exported.tasks), model="hf", model_args=model_args, batch_size=8, limit=LIMIT)
    for task in exported.tasks:
        assert len(results["samples"][task]) == min(LIMIT, exported.tasks[task]["test"])
        assert 0.0 <= results["results"][task]["acc,none"] <= 1.0
        check_context_given(results, task, context=not task.endswith("_nocontext"))
    # the model's likelihoods, not random draws: the same run again gives the same answers
    again = _run(out, ["pair_order_default"], model="hf", model_args=model_args, batch_size=4, limit=LIMIT)

    def likelihoods(run: dict[str, Any]) -> list[float]:
        return [float(ll) for s in run["samples"]["pair_order_default"] for ll, _ in s["filtered_resps"]]

    first = likelihoods(results)
    assert likelihoods(again) == pytest.approx(first, abs=1e-4)  # batches differ: float noise only
    assert len(set(first)) > 1
    asked = {task: len(samples) for task, samples in results["samples"].items()}
    data = _read_back(_save(results, tmp_path / "results"), store)
    rows = {(r["model"], r["qset"]) for r in data["results"]}
    sets = ["textual-cloze/default", "textual-cloze/recipeqa", "pair-order/default", "sequencing/default"]
    for qset in sets + (["next-action/default"] if "next-action" in textual else []):
        assert {(f"lm-eval {model}", qset), (f"lm-eval {model} (no context)", qset)} <= rows
    for row in data["results"]:  # every question lm-eval asked, from its per-question log
        name = lm_eval_name(*row["qset"].split("/")) + ("_nocontext" if "no context" in row["model"] else "")
        assert row["n"] == asked[name] and row["ci_method"] == "bootstrap"

    # an export whose prompt drops the context fails the check on what the model was given
    monkeypatch.setattr(lmeval, "CONTEXT_TEMPLATE", "")
    broken = export_lm_eval(["textual-cloze/default"], tmp_path / "no-context", store=store)
    run = _run(tmp_path / "no-context", list(broken.tasks), model="hf", model_args=model_args, limit=2)
    with pytest.raises(AssertionError):
        check_context_given(run, "textual_cloze_default", context=True)


def test_a_tiny_llava_runs_the_visual_tasks_through_lm_eval_hf_multimodal(
    store: Path, tmp_path: Path, quick_lm_eval: None, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import procbench.export.lmeval as lmeval

    out = tmp_path / "lm"
    exported = export_lm_eval(list(VISUAL), out, store=store)
    tasks = list(exported.tasks)
    assert len(tasks) == 6
    texts = [lmeval.VISUAL_TEMPLATE, lmeval.CONTEXT_TEMPLATE, "A B C D 1, 2, 3, 4"] * 10
    model = _tiny_llava(tmp_path / "tiny-llava", texts)
    model_args = {"pretrained": str(model), "max_length": 8192}
    results = _run(out, tasks, model="hf-multimodal", model_args=model_args, device="cpu", batch_size=4, limit=LIMIT)
    loaded = _task_dict(out, tasks)
    for task in tasks:
        samples = results["samples"][task]
        assert len(samples) == LIMIT
        assert 0.0 <= results["results"][task][VISUAL_METRIC] <= 1.0
        check_context_given(results, task, context=not task.endswith("_nocontext"))
        for doc, prompt in _prompts(results, task):  # what the model got: one <image> per image of the question
            assert prompt.count(IMAGE_PLACEHOLDER) == len(loaded[task].doc_to_image(doc)) > 0
        source = next(t for t in VISUAL if task.startswith(t.replace("-", "_")))
        check_visual_prompts(
            loaded[task], store, _test_rows(store, source, "recipeqa"), context=not task.endswith("_nocontext")
        )
    data = _read_back(_save(results, tmp_path / "results"), store)
    rows = {(r["model"], r["qset"]): r for r in data["results"]}
    for source in VISUAL:
        for label in (f"lm-eval {model}", f"lm-eval {model} (no context)"):
            row = rows[(label, f"{source}/recipeqa")]
            assert row["n"] == LIMIT and row["ci_method"] == "bootstrap" and row["metric"] == "accuracy"
    assert any(VISUAL_METRIC in note for note in data["notes"])

    # an export whose prompt drops the images: the images no longer reach the model, and it refuses them
    monkeypatch.setattr(lmeval, "VISUAL_TEMPLATE", lmeval.VISUAL_TEMPLATE.replace(IMAGE_PLACEHOLDER, "(image)"))
    export_lm_eval(["visual-cloze"], tmp_path / "no-images", store=store)
    with pytest.raises(ValueError, match="[Ii]mage"):
        _run(
            tmp_path / "no-images",
            ["visual_cloze_recipeqa"],
            model="hf-multimodal",
            model_args=model_args,
            device="cpu",
            limit=1,
        )
    monkeypatch.undo()
    # ... and one that drops the context fails the check on what the model was given
    monkeypatch.setattr(lmeval, "CONTEXT_TEMPLATE", "")
    export_lm_eval(["visual-ordering"], tmp_path / "no-context", store=store)
    run = _run(
        tmp_path / "no-context",
        ["visual_ordering_recipeqa"],
        model="hf-multimodal",
        model_args=model_args,
        device="cpu",
        limit=1,
    )
    with pytest.raises(AssertionError):
        check_context_given(run, "visual_ordering_recipeqa", context=True)


def _task_dict(out: Path, names: list[str]) -> dict[str, Any]:
    from lm_eval.tasks import TaskManager

    loaded: dict[str, Any] = TaskManager(include_path=str(out), include_defaults=False).load(names)["tasks"]
    return loaded
