"""``colour-layout``: a model-free image descriptor (NumPy and Pillow only, deterministic).

Three blocks, each L2-normalised, then concatenated and normalised again (392 dimensions):

* colour layout: the image reduced to an 8×8 grid of mean YCbCr colours, centred on mid-grey (192);
* colour histogram: a joint HSV histogram, 8 hues × 3 saturations × 3 values, square-rooted (72);
* edges: gradient-orientation histograms (8 bins, magnitude-weighted) in a 4×4 grid of cells, square-rooted (128).

Images of one procedure (same palette, same objects) end up close; it is the offline analogue of the
papers' CNN features for sanity checks and demos, not a semantic encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from PIL import Image

from procbench.embed.base import Encoder, Modality, l2_normalise

if TYPE_CHECKING:
    from procbench.embed.registry import EncoderSpec
    from procbench.store import Store

__all__ = ["ColourLayoutEncoder", "describe", "load"]

_GRID = 8
_HSV_BINS = (8, 3, 3)
_EDGE_CELLS = 4
_EDGE_BINS = 8
_WORK_SIDE = 64
DIM = _GRID * _GRID * 3 + int(np.prod(_HSV_BINS)) + _EDGE_CELLS * _EDGE_CELLS * _EDGE_BINS


def _unit(block: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(block))
    return block / norm if norm > 0 else block


def describe(image: Image.Image) -> np.ndarray:
    """The ``(392,)`` float32 descriptor of one image (not yet normalised as a whole)."""
    rgb = image.convert("RGB")
    layout = np.asarray(rgb.resize((_GRID, _GRID), Image.Resampling.BOX).convert("YCbCr"), dtype=np.float32)
    layout = (layout / 255.0 - 0.5).reshape(-1)

    work = rgb.resize((_WORK_SIDE, _WORK_SIDE), Image.Resampling.BILINEAR)
    hsv = np.asarray(work.convert("HSV"), dtype=np.int64)
    h = hsv[..., 0] * _HSV_BINS[0] // 256
    s = hsv[..., 1] * _HSV_BINS[1] // 256
    v = hsv[..., 2] * _HSV_BINS[2] // 256
    codes = (h * _HSV_BINS[1] + s) * _HSV_BINS[2] + v
    histogram = np.sqrt(np.bincount(codes.reshape(-1), minlength=int(np.prod(_HSV_BINS))).astype(np.float32))

    grey = np.asarray(work.convert("L"), dtype=np.float32) / 255.0
    gx = np.zeros_like(grey)
    gy = np.zeros_like(grey)
    gx[:, 1:-1] = grey[:, 2:] - grey[:, :-2]
    gy[1:-1, :] = grey[2:, :] - grey[:-2, :]
    magnitude = np.hypot(gx, gy)
    angle = np.mod(np.arctan2(gy, gx), np.pi)  # orientation, not direction
    bins = np.minimum((angle / np.pi * _EDGE_BINS).astype(np.int64), _EDGE_BINS - 1)
    cell = _WORK_SIDE // _EDGE_CELLS
    rows = np.arange(_WORK_SIDE) // cell
    cell_of = rows[:, None] * _EDGE_CELLS + rows[None, :]
    edges = np.bincount(
        (cell_of * _EDGE_BINS + bins).reshape(-1),
        weights=magnitude.reshape(-1),
        minlength=_EDGE_CELLS * _EDGE_CELLS * _EDGE_BINS,
    )
    edges = np.sqrt(edges).astype(np.float32)
    return np.concatenate([_unit(layout), _unit(histogram), _unit(edges)]).astype(np.float32)


class ColourLayoutEncoder(Encoder):
    """The colour-layout / histogram / edge descriptor as an encoder."""

    modality: ClassVar[Modality] = "image"
    name = "colour-layout"
    slug = "colour-layout"
    revision = "v1"
    dim = DIM
    description = "colour layout 8x8 YCbCr + HSV histogram 8x3x3 + edge orientations 4x4x8 (model-free)"
    default_batch_size = 64

    def encode(self, inputs: Sequence[Any], *, batch_size: int) -> np.ndarray:
        """Describe each PIL image."""
        if not inputs:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalise(np.stack([describe(image) for image in inputs]))


def load(spec: EncoderSpec, *, store: Store | None = None, seed: int = 0, refit: bool = False) -> Encoder:
    """The colour-layout encoder (nothing to load)."""
    return ColourLayoutEncoder()
