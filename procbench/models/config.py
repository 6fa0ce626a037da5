"""Training hyperparameters (what a run's ``config.json`` records and a resumed run must match)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from procbench.errors import BadInput
from procbench.models.featurisation import FeatureConfig

__all__ = ["RESUMABLE", "TrainConfig"]

#: Settings a resumed run may change (train longer, or be more patient); every other one must match.
RESUMABLE = ("epochs", "patience")
_DEFAULT_LAYERS = {"htrn": 4, "order-pointer": 2}


@dataclass(frozen=True)
class TrainConfig:
    """How to train one model (papers 001 App. A and 004 §4.2: Adam 5e-4, cross-entropy, early stopping).

    Attributes:
        model: a trained model of :data:`procbench.models.MODELS`.
        hidden: width of the encoders (BiLSTM outputs, both directions) and of the transformers;
            paper 001 used 512 (BiLSTMs of 256 per direction).
        layers: transformer layers (htrn 4 as the paper, order-pointer 2 when None).
        heads: attention heads (8 as the paper).
        ffn: transformer feed-forward size (2 * hidden when None).
        dropout: dropout on the frozen inputs and inside the transformers.
        context / features / max_context: see :class:`FeatureConfig`.
        title: ordering models also read the procedure title's vector (paper 003 gives every model the title).
        lr, batch_size: Adam learning rate and questions per step.
        epochs: at most this many epochs.
        patience: stop after this many epochs without a better validation score (paper 001 used 20).
        seed: seeds initialisation, shuffling and dropout.
    """

    model: str
    hidden: int = 256
    layers: int | None = None
    heads: int = 8
    ffn: int | None = None
    dropout: float = 0.1
    context: str = "text"
    features: str = "both"
    max_context: int = 25
    title: bool = True
    lr: float = 5e-4
    batch_size: int = 32
    epochs: int = 30
    patience: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "batch_size", "epochs", "patience", "max_context"):
            if int(getattr(self, name)) < 1:
                raise BadInput(f"--{name.replace('_', '-')} must be at least 1")
        if self.layers is not None and self.layers < 1:
            raise BadInput("--layers must be at least 1")
        if not 0.0 <= self.dropout < 1.0:
            raise BadInput("--dropout must be in [0, 1)")
        if self.lr <= 0:
            raise BadInput("--lr must be positive")
        self.feature_config()

    def feature_config(self) -> FeatureConfig:
        """The featurisation this model reads."""
        return FeatureConfig(context=self.context, features=self.features, max_context=self.max_context)

    def resolved(self) -> dict[str, Any]:
        """All settings with model-specific defaults filled in (what ``config.json`` stores)."""
        out = asdict(self)
        out["layers"] = self.layers or _DEFAULT_LAYERS.get(self.model, 1)
        out["ffn"] = self.ffn or 2 * self.hidden
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Rebuild from ``resolved()`` output (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
