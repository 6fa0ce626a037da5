"""The bundled sample corpus: How-To procedures written by the procbench team, with generated step images.

45 procedures (woodworking, home decoration, cooking; 5-12 steps, every step with a headline and a
paragraph) live in ``sample.jsonl``. Step images are drawn on demand with Pillow, deterministically:
the same seed gives the same bytes. An image shows its procedure's palette and object, how far the
work has progressed (parts accumulate step after step) and a motif tied to the step headline, so
images of one procedure resemble each other and visual tasks have real signal to work with.

:mod:`.synthetic` writes synthetic visual stores of any size (vectors only) for tests and benchmarks.
"""

from __future__ import annotations

import hashlib
import json
import random
from importlib import resources
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

__all__ = ["load_sample", "step_image", "write_sample"]

_PALETTES = {
    "Hobbies and Crafts": [(222, 184, 135), (160, 110, 60), (205, 170, 125), (139, 90, 43), (245, 222, 179)],
    "Home and Garden": [(178, 34, 52), (34, 110, 60), (212, 175, 55), (70, 90, 160), (240, 235, 225)],
    "Food and Entertaining": [(250, 240, 220), (230, 126, 34), (192, 57, 43), (241, 196, 15), (120, 160, 60)],
}
_DEFAULT_PALETTE = [(200, 200, 200), (90, 90, 90), (30, 120, 200), (220, 80, 80), (250, 250, 250)]


def load_sample() -> list[dict[str, Any]]:
    """The sample procedures as import records (DESIGN §4), without images."""
    text = resources.files(__package__).joinpath("sample.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _jitter(colour: tuple[int, int, int], rng: random.Random, amount: int = 25) -> tuple[int, int, int]:
    r, g, b = (max(0, min(255, c + rng.randint(-amount, amount))) for c in colour)
    return (r, g, b)


def step_image(
    procedure: dict[str, Any], step_index: int, *, seed: int = 0, size: tuple[int, int] = (256, 192)
) -> Image.Image:
    """Draw the image of step ``step_index`` of ``procedure`` (an import record).

    Deterministic in (``seed``, procedure id, step index, step headline).
    """
    width, height = size
    steps = procedure["steps"]
    palette = _PALETTES.get((procedure.get("category") or [""])[0], _DEFAULT_PALETTE)
    proc_rng = _rng(seed, procedure["id"])
    background = _jitter(palette[4], proc_rng, 15)
    main, accent = proc_rng.sample(palette[:4], 2)
    shape = proc_rng.choice(["rect", "ellipse", "plank"])
    cells = [(x, y) for y in range(3) for x in range(4)]
    proc_rng.shuffle(cells)

    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    # Progress: one part per step done so far, placed on the procedure's own grid order.
    done = round((step_index + 1) / len(steps) * len(cells))
    cw, ch = width // 4, height // 3
    for x, y in cells[:done]:
        box = (x * cw + 6, y * ch + 6, (x + 1) * cw - 6, (y + 1) * ch - 6)
        if shape == "ellipse":
            draw.ellipse(box, fill=_jitter(main, proc_rng, 12))
        elif shape == "plank":
            draw.rectangle((box[0], box[1] + ch // 4, box[2], box[3] - ch // 4), fill=_jitter(main, proc_rng, 12))
        else:
            draw.rectangle(box, fill=_jitter(main, proc_rng, 12))
    # Motif of the step headline: similar headlines look alike across procedures.
    headline = (steps[step_index].get("title") or steps[step_index]["text"][:40]).lower()
    step_rng = _rng(seed, "headline", headline)
    for _ in range(3):
        cx, cy, r = step_rng.randint(20, width - 20), step_rng.randint(20, height - 20), step_rng.randint(8, 24)
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline=accent, width=4)
    # A bar whose length tells the position in the procedure.
    draw.rectangle((0, height - 8, int(width * (step_index + 1) / len(steps)), height), fill=accent)
    return image


def write_sample(directory: str | Path, *, seed: int = 0) -> Path:
    """Write the sample corpus as ``DIR/sample.jsonl`` plus its step images as PNG files; returns the JSONL path.

    Image paths in the JSONL are relative to ``DIR``, as ``procbench ingest`` resolves them.
    """
    directory = Path(directory)
    lines = []
    for record in load_sample():
        slug = record["id"]
        for index, step in enumerate(record["steps"]):
            relative = Path("images") / slug / f"{index:02d}.png"
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            step_image(record, index, seed=seed).save(target, format="PNG")
            step["images"] = [relative.as_posix()]
        lines.append(json.dumps(record, ensure_ascii=False))
    out = directory / "sample.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
