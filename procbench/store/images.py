"""Image normalisation: every stored image is an RGB JPEG, longest side bounded, content-addressed."""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from procbench.errors import BadInput

__all__ = [
    "MAX_DECODED_BYTES",
    "MAX_PIXELS",
    "BadImage",
    "NormalisedImage",
    "decode_image",
    "normalise_image",
    "remote_image_id",
]

#: Images with more pixels than this are rejected as decompression bombs (Pillow's own default is ~89M).
MAX_PIXELS = 50_000_000
#: Images whose decoded pixels take more bytes than this are rejected too (bands x pixels: a 50-megapixel
#: RGB photo fits, a 7000x7000 RGBA PNG of 190 KB, 196 MB decoded, does not), so one image costs a bounded
#: amount of memory whatever its mode.
MAX_DECODED_BYTES = 160_000_000
#: Bytes per pixel of modes whose bands are wider than one byte (others: one byte per band).
_WIDE_MODES = {"I": 4, "F": 4, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2}
#: The EXIF tag of a photo's orientation (1: upright; 2-8: mirrored and/or rotated).
_ORIENTATION = 0x0112


class BadImage(BadInput):
    """Bytes that are not a usable image (corrupt, not an image, too large)."""


@dataclass(frozen=True)
class NormalisedImage:
    """A normalised image: ``id`` is the sha256 hex of ``data`` (JPEG bytes)."""

    id: str
    data: bytes
    width: int
    height: int


def normalise_image(data: bytes, *, max_side: int = 512, quality: int = 90) -> NormalisedImage:
    """Verify ``data`` with Pillow and re-encode it as an RGB JPEG whose longest side is at most ``max_side``.

    Raises:
        BadImage: the bytes are not a decodable image, or decode to more than ``MAX_PIXELS`` pixels.
    """
    rgb = decode_image(data)
    if max(rgb.size) > max_side:
        rgb.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    rgb.save(out, format="JPEG", quality=quality)
    jpeg = out.getvalue()
    return NormalisedImage(hashlib.sha256(jpeg).hexdigest(), jpeg, rgb.width, rgb.height)


def decode_image(data: bytes) -> Image.Image:
    """Verify ``data`` with Pillow and decode it to RGB (transparency on white; upright as its EXIF orientation
    says, as a browser shows it; 16- and 32-bit greyscale scaled to 8 bits), refusing decompression bombs
    before decoding.

    Raises:
        BadImage: the bytes are not a decodable image, or decode to more than ``MAX_PIXELS`` pixels.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                if probe.width * probe.height > MAX_PIXELS:
                    raise BadImage(f"image of {probe.width}x{probe.height} pixels exceeds the {MAX_PIXELS} limit")
                decoded = probe.width * probe.height * _WIDE_MODES.get(probe.mode, len(probe.getbands()))
                if decoded > MAX_DECODED_BYTES:
                    raise BadImage(
                        f"image of {probe.width}x{probe.height} {probe.mode} pixels decodes to {decoded:,} bytes, "
                        f"over the {MAX_DECODED_BYTES:,}-byte limit"
                    )
                probe.verify()
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                return _to_rgb(im)
    except BadImage:
        raise
    except (
        UnidentifiedImageError,
        OSError,
        SyntaxError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:
        raise BadImage(f"not a usable image: {exc}") from exc


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.getexif().get(_ORIENTATION, 1) != 1:  # a phone photo taken sideways: stored the way it is seen
        im = ImageOps.exif_transpose(im)
    if im.mode in _WIDE_MODES:  # convert("RGB") clips every value over 255: a 16-bit photo would be white
        im = _to_8bit(im)
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im if im.mode == "RGBA" else im.convert("RGBA")  # no copy of a decoded RGBA image
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return im.convert("RGB")


def _to_8bit(im: Image.Image) -> Image.Image:
    """A 16/32-bit integer or float greyscale image as 8-bit ``L``, as a browser shows it: 16-bit values
    (``I;16*``, and ``I`` holding values over 255) divided by 257, floats by their own minimum and maximum."""
    import numpy as np

    values = np.asarray(im, dtype=np.float64)
    if im.mode == "F":
        low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
        values = (values - low) * (255.0 / (high - low) if high > low else 0.0)
    elif im.mode.startswith("I;16") or (values.size and values.max() > 255):
        values = values / 257.0
    return Image.fromarray(np.clip(np.rint(values), 0, 255).astype(np.uint8), "L")


def remote_image_id(url: str) -> str:
    """Id of an image known only by its URL (bytes not fetched yet)."""
    return "url:" + hashlib.sha256(url.encode("utf-8")).hexdigest()
