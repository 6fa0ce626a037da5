"""The visual filters' image-statistics relations (procbench.generate.visual.probes.ImageRelations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from procbench.generate.visual.probes import IMAGE_RELATIONS, ImageRelations
from procbench.image_stats import ImageStats


def _photo(seed: int, tint: tuple[int, int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 255, size=(12, 12, 1)).repeat(3, axis=2).astype(np.float64)
    big = np.kron(base, np.ones((8, 8, 1)))  # 96 x 96 blocks: a structure a re-crop keeps
    return np.clip(0.5 * big + np.array(tint), 0, 255).astype(np.uint8)


class _Images:
    """The one method ImageRelations asks of VisualData: the statistics of image rows read from files."""

    def __init__(self, paths: list[Path | None]) -> None:
        self.paths = paths

    def image_stats(self, rows: np.ndarray) -> tuple[ImageStats, np.ndarray]:
        keys = [str(i) for i in range(len(self.paths))]
        stats = ImageStats.read(keys, lambda key: self.paths[int(key)])
        return stats, np.arange(len(self.paths), dtype=np.int64)


def _store(tmp_path: Path) -> _Images:
    from PIL import Image

    desk = (60, 40, 10)  # the question's photos: one desk, one light
    arrays = [_photo(0, desk), _photo(1, desk), _photo(2, desk)]
    arrays.append(arrays[0][4:92, 4:92])  # 3: a re-crop of photo 0 (the answer a shortcut finds)
    arrays.append(_photo(3, (0, 60, 120)))  # 4: another desk, another light
    arrays.append(_photo(4, (0, 70, 110)))  # 5: the same other desk
    paths: list[Path | None] = []
    for i, array in enumerate(arrays):
        path = tmp_path / f"{i}.png"
        Image.fromarray(array).resize((96, 96)).save(path)
        paths.append(path)
    paths.append(None)  # 6: a file that cannot be read
    return _Images(paths)


def test_relations_see_the_same_desk_and_the_re_crop(tmp_path: Path) -> None:
    relations = ImageRelations(_store(tmp_path), np.arange(7))  # type: ignore[arg-type]
    assert relations.any
    choices = np.array([[3, 4, 5, 6]])
    refs = np.array([[0, 1, 2, -1]])
    rel = relations.relations(choices, refs)[0]  # (4 choices, relations)
    colour_mean, colour_nearest, agreement, correlation = (rel[:, IMAGE_RELATIONS.index(n)] for n in IMAGE_RELATIONS)
    assert colour_mean[0] < min(colour_mean[1], colour_mean[2])  # the re-crop shares the question's desk
    assert colour_nearest[0] < min(colour_nearest[1], colour_nearest[2])
    assert agreement[0] > 0.75 > max(agreement[1], agreement[2])  # and nearly its dHash
    assert correlation[0] > max(correlation[1], correlation[2])
    assert np.isnan(rel[3]).all()  # an unreadable file has no relations
    features = relations.features(choices, refs, np.ones((1, 4), dtype=bool))
    assert features.shape == (1, 4, 4 * len(IMAGE_RELATIONS)) and np.isfinite(features).all()
    assert (features[0, 3] == 0).all()


def test_relations_to_the_other_choices_leave_the_choice_itself_out(tmp_path: Path) -> None:
    relations = ImageRelations(_store(tmp_path), np.arange(7))  # type: ignore[arg-type]
    rel = relations.relations(np.array([[0, 3, 4, 5]]), None)[0]
    agreement = rel[:, IMAGE_RELATIONS.index("hash_agreement")]
    assert agreement[0] > 0.75 and agreement[1] > 0.75  # 0 and its re-crop find each other, not themselves
    assert max(agreement[2], agreement[3]) < 0.75


def test_a_knob_setting_without_procedures_says_why_and_eligible_names_its_plan(tmp_path: Path) -> None:
    from procbench.corpus.synthetic import write_synthetic_store
    from procbench.generate import generate
    from procbench.generate.settings import Setting

    short = write_synthetic_store(tmp_path / "short", n_procedures=12, dim=16, steps=(4, 4), seed=1)
    result = generate(short, "visual-cloze", setting=Setting("knobs", (0, 1, 2)), seed=0)
    assert result.questions["knobs-012"] == 0
    assert result.counts["eligible"] == {"k1=0": 0}
    assert "at least 5 image steps" in result.counts["per_setting"]["knobs-012"]["empty"]
    assert any("visual-cloze/knobs-012: no questions: no procedure has" in w for w in result.warnings)
    enough = write_synthetic_store(tmp_path / "enough", n_procedures=12, dim=16, steps=(5, 6), seed=1)
    result = generate(enough, "visual-cloze", setting=Setting("knobs", (0, 1, 2)), seed=0)
    assert result.counts["eligible"] == {"k1=0": 12} and "empty" not in result.counts["per_setting"]["knobs-012"]
