"""Visual cloze that only the context answers: the ``needs-context`` setting (exchangeable photos).

Readers who never saw the step texts answered 89-100% of visual cloze on real photos
(``benchmarks/reader_checks.md``): a procedure's own photos share its device, desk and light, and the paper's
negatives come from other procedures. This setting draws as textual cloze's ``needs-context`` does
(:mod:`procbench.generate.exchangeable`):

- the question is the blank alone; its context is the blank's step (its title and text);
- the choices are four photos of the procedure's image sequence, drawn uniformly among the sets whose photos are
  no near-copies of each other (cosine below :data:`IMAGE_ALIKE`, the visual filter's ceiling) and whose steps'
  texts say different things (cosine below :data:`TEXT_ALIKE`); the answer is drawn uniformly among the four.

Four photos of one procedure, the answer uniform among them: a reader without the context reads chance. With it,
the reader finds the photo of the step the text describes.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from procbench.errors import BadInput
from procbench.formats.recipeqa import PLACEHOLDER
from procbench.generate.answers import balance_answer_positions
from procbench.generate.exchangeable import SIZE, draw, symmetric_sets
from procbench.generate.settings import Setting
from procbench.generate.visual.sequences import VisualData
from procbench.progress import SILENT, Progress
from procbench.qsets.questions import Question
from procbench.rng import stream
from procbench.store import Store

__all__ = ["IMAGE_ALIKE", "RULES", "STYLE", "TEXT_ALIKE", "build_needs_context"]

STYLE = "needs-context"
#: Cosine at or above which two photos are near-copies (the visual adversarial filter's ceiling): never both choices.
IMAGE_ALIKE = 0.95
#: Cosine at or above which two steps' texts may say the same: their photos are never both choices.
TEXT_ALIKE = 0.75
#: Each procedure's set and answer, and the answer positions.
_SETS = stream("visual.needs-context.sets")
_POSITIONS = stream("visual.needs-context.positions")

#: The card's account of the setting's rules.
RULES = [
    "the question is the blank alone; its context is the blank's step (title and text)",
    "the choices are four photos of the procedure's image sequence drawn as an unordered set, the answer uniform "
    "among them, so a reader without the context reads chance",
    f"no two photos near-copies (cosine below {IMAGE_ALIKE}), no two of their steps' texts alike (cosine below "
    f"{TEXT_ALIKE}); steps without a text are never choices",
]


def build_needs_context(
    store: Store, setting: Setting, *, seed: int = 0, progress: Progress = SILENT, alone: bool = True
) -> tuple[list[Question] | None, dict[str, Any]]:
    """The ``needs-context`` visual cloze questions (one per procedure with four usable photos) and their counts.

    Without step-text embeddings (the rule reads them) a sweep (``alone`` False) leaves the setting out: None, and
    the counts say why.

    Raises:
        BadInput: the setting asked for alone on a store without step-text embeddings.
    """
    from procbench.embed import load_embeddings

    try:
        texts = load_embeddings(store, "step_text")
    except BadInput as exc:
        reason = f"no step-text embeddings, which its rule reads (run procbench embed --fields step_text): {exc}"
        if alone:
            raise BadInput(f"visual-cloze/{setting.name}: {reason}") from exc
        return None, {"questions": 0, "empty": reason}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    text_vectors = np.asarray(texts.vectors, dtype=np.float32)
    data = VisualData(store, with_index=False)
    seqs, image_ids = data.seqs, data.embeddings.keys.cast("string").to_pylist()
    tally = {"few_photos": 0, "no_readable_set": 0}
    questions: list[Question] = []
    progress.start(f"visual-cloze/{setting.name}", total=len(seqs.names))
    for p, name in enumerate(seqs.names):
        progress.advance()
        lo, hi = int(seqs.offsets[p]), int(seqs.offsets[p + 1])
        items = [
            (int(step), int(row), text_row[key])
            for step, row in zip(seqs.steps[lo:hi].tolist(), seqs.rows[lo:hi].tolist(), strict=True)
            if (key := f"{name}#{step}") in text_row
        ]
        if len(items) < SIZE:
            tally["few_photos"] += 1
            continue
        photos = np.asarray(data.gather(np.array([row for _, row, _ in items], dtype=np.int64)), dtype=np.float64)
        photos /= np.maximum(np.linalg.norm(photos, axis=1, keepdims=True), 1e-12)
        said = text_vectors[[t for _, _, t in items]]
        sets = symmetric_sets(len(items), apart=[(photos @ photos.T, IMAGE_ALIKE), (said @ said.T, TEXT_ALIKE)])
        drawn = draw(sets, _SETS.rng(seed, zlib.crc32(name.encode("utf-8"))))
        if drawn is None:
            tally["no_readable_set"] += 1
            continue
        chosen = [items[j] for j in drawn[0]]
        step, _, _ = chosen[drawn[1]]
        meta = {
            "setting": setting.name,
            "n_steps": hi - lo,
            "answer_step": step,
            "choice_steps": [s for s, _, _ in chosen],
        }
        choices = [image_ids[row] for _, row, _ in chosen]
        questions.append(Question(name, [step], [PLACEHOLDER], choices, drawn[1], meta))
    balance_answer_positions(questions, _POSITIONS.rng(seed), per_choice=("choice_steps",))
    counts: dict[str, Any] = {"questions": len(questions), **{k: v for k, v in tally.items() if v}, "rules": RULES}
    if not questions:
        counts["empty"] = "no procedure has four photos whose steps have texts, no two alike"
    return questions, counts
