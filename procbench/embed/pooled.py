"""A sentence-transformers mean-pooling text model run with ``transformers`` alone (what a Ray actor holds).

Importing sentence-transformers costs a Ray encode actor seconds of its start-up (it pulls in scikit-learn
and more). For the models whose module stack is exactly ``Transformer -> Pooling(mean) [-> Normalize]``
(all-MiniLM-L6-v2, ``minilm-offline``, among them) :class:`MeanPooledTextEncoder` computes what
``SentenceTransformer.encode(..., normalize_embeddings=True)`` computes, operation for operation: the same
length-sorted batches, the same tokenizer call, the same model forward, the same mean pooling arithmetic and
normalisations, in float32. It holds the very model and tokenizer objects the driver's sentence-transformers
model loaded (shipped by value, so a cluster's workers need no copy of the model), and unpickling it imports
``torch`` and the model's ``transformers`` modules only.

:func:`from_sentence_transformer` builds one only for a model it recognises, and only when it gives the same
bytes as sentence-transformers on a probe batch; anything else keeps the sentence-transformers encoder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from procbench.embed.base import Encoder, Modality, l2_normalise

__all__ = ["MeanPooledTextEncoder", "from_sentence_transformer"]

#: Texts of different lengths, encoded in batches of 2 (padding inside each batch), that a candidate must
#: encode to sentence-transformers' bytes before it replaces sentence-transformers.
PROBE = (
    "Preheat the oven to 180 degrees and grease a round cake tin with butter.",
    "Mix.",
    "Cut the board to length, sand the edges smooth and mark where the shelf brackets go on the wall.",
    "Add the flour, then the water, a little at a time",
    "",
)


class MeanPooledTextEncoder(Encoder):
    """``SentenceTransformer.encode`` of a ``Transformer -> Pooling(mean) [-> Normalize]`` model, in transformers.

    Args:
        model: the ``transformers`` model of the sentence-transformers ``Transformer`` module.
        tokenizer: its tokenizer (with the module's ``max_seq_length`` as ``model_max_length``).
        forward_keys: tokenizer outputs the module passes to the model (None: all of them).
        normalize_layers: how many ``Normalize`` modules follow the pooling (0 or 1).
        stands_for: the encoder it replaces; its name, slug, revision, dim, description, packages and default
            batch size are this one's (the embeddings' metadata stays the same).
    """

    modality: ClassVar[Modality] = "text"
    _IDENTITY = ("name", "slug", "revision", "dim", "description", "packages", "default_batch_size")

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        forward_keys: frozenset[str] | None,
        normalize_layers: int,
        stands_for: Encoder,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.forward_keys = forward_keys
        self.normalize_layers = normalize_layers
        for attribute in self._IDENTITY:
            setattr(self, attribute, getattr(stands_for, attribute))

    def to_device(self, device: str) -> None:
        """Move the model to ``device``."""
        self.model.to(device)

    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Encode as ``SentenceTransformer.encode(list(inputs), batch_size, normalize_embeddings=True)`` does."""
        import torch
        import torch.nn.functional as F

        texts = list(inputs)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers sorts by length, longest first (the same unstable argsort), so each batch is
        # padded to the same length and holds the same texts as there.
        order = np.argsort([-len(text) for text in texts])
        ordered = [texts[i] for i in order]
        pooled: list[Any] = []
        with torch.inference_mode():
            for start in range(0, len(ordered), batch_size):
                features = self.tokenizer(
                    ordered[start : start + batch_size], padding=True, truncation="longest_first", return_tensors="pt"
                )
                features = {key: value.to(self.model.device) for key, value in features.items()}
                passed = {k: v for k, v in features.items() if self.forward_keys is None or k in self.forward_keys}
                tokens = self.model(**passed, return_dict=True)["last_hidden_state"]
                # Pooling(mean): the mask in the embeddings' dtype, sums accumulated in float32 for half types
                accumulate = torch.float32 if tokens.dtype in (torch.float16, torch.bfloat16) else tokens.dtype
                mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                total = (tokens * mask).sum(dim=1, dtype=accumulate)
                count = torch.clamp(mask.sum(dim=1, dtype=accumulate), min=1e-9)
                vectors = (total / count).to(tokens.dtype)
                for _ in range(self.normalize_layers):
                    vectors = F.normalize(vectors, p=2, dim=-1)
                vectors = F.normalize(vectors, p=2, dim=1)  # normalize_embeddings=True
                pooled.extend(vectors.cpu())
        stacked = torch.stack([pooled[i] for i in np.argsort(order)])
        if stacked.dtype == torch.bfloat16:
            stacked = stacked.float()
        return l2_normalise(np.asarray(stacked.numpy(), dtype=np.float32))


def _plain_stack(model: Any) -> tuple[Any, int] | None:
    """The ``Transformer`` module and the number of ``Normalize`` modules, if ``model`` (a loaded
    ``SentenceTransformer``) is exactly ``Transformer -> Pooling(mean) [-> Normalize]`` used as procbench
    uses it (no prompt, no truncation, padded text batches); else None."""
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedTokenizerBase

    try:  # the module layout of sentence-transformers 6 (the one read op for op); another keeps its own path
        from sentence_transformers.base.modules.normalize import Normalize
        from sentence_transformers.base.modules.transformer import Transformer
        from sentence_transformers.sentence_transformer.modules.pooling import Pooling
    except ImportError:
        return None

    if type(model) is not SentenceTransformer or len(model) not in (2, 3):
        return None
    modules = list(model)
    transformer, pooling, rest = modules[0], modules[1], modules[2:]
    if type(transformer) is not Transformer or type(pooling) is not Pooling or pooling.pooling_mode != "mean":
        return None
    if rest and (
        type(rest[0]) is not Normalize
        or (rest[0].module_input_name, rest[0].module_output_name) != ("sentence_embedding",) * 2
    ):
        return None
    if model.default_prompt_name is not None or model.truncate_dim is not None:
        return None
    if model.module_kwargs and any(model.module_kwargs.values()):
        return None
    if getattr(model, "_distributed_inference", None) is not None:
        return None
    text_only = {"text": {"method": "forward", "method_output_name": "last_hidden_state"}}
    if (
        transformer.transformer_task != "feature-extraction"
        or transformer.backend != "torch"
        or transformer.modality_config != text_only
        or transformer.module_output_name != "token_embeddings"
        or transformer.can_flatten_inputs
        or transformer.processing_kwargs
        or transformer.query_expansion is not None
        or not isinstance(transformer.processor, PreTrainedTokenizerBase)
    ):
        return None
    return transformer, len(rest)


def from_sentence_transformer(encoder: Any) -> MeanPooledTextEncoder | None:
    """The transformers-only form of a sentence-transformers text encoder (a ``SentenceTransformerEncoder``),
    or None when its model is not a plain mean-pooling stack or the probe batch's bytes differ."""
    stack = _plain_stack(encoder.model)
    if stack is None:
        return None
    transformer, normalize_layers = stack
    forward_keys = transformer.model_forward_params
    pooled = MeanPooledTextEncoder(
        transformer.model,
        transformer.processor,
        forward_keys=None if forward_keys is None else frozenset(forward_keys),
        normalize_layers=normalize_layers,
        stands_for=encoder,
    )
    with _one_thread():
        if pooled.encode(PROBE, batch_size=2).tobytes() != encoder.encode(PROBE, batch_size=2).tobytes():
            return None
    return pooled


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one thread for the block, as in a Ray actor: the probe then takes ~0.1 s even when another
    process holds a core (with 2 threads it measured 1-3 s here, the threads waiting for each other)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
