"""The visual filters' image-statistics relations (procbench.generate.visual.adversarial.ImageRelations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from procbench.generate.visual.adversarial import IMAGE_RELATIONS, ImageRelations, _lookalikes, image_gaps
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


def test_image_gaps_rank_a_negative_from_the_answer_s_desk_first(tmp_path: Path) -> None:
    relations = ImageRelations(_store(tmp_path), np.arange(7))  # type: ignore[arg-type]
    refs = np.array([[0, 1, -1]])
    target = relations.relations(np.array([[2]]), refs)[:, 0, :]  # the answer: photo 2, on the question's desk
    gaps = image_gaps(relations, np.array([[3, 4, 5, 6]]), refs, target)[0]
    assert gaps[1] > 0 and gaps[2] > 0
    assert gaps[3] == 0  # unread: no preference either way


def test_a_knob_setting_without_procedures_says_why_and_eligible_names_ranked_plans(tmp_path: Path) -> None:
    from procbench.corpus.synthetic import write_synthetic_store
    from procbench.generate import generate
    from procbench.generate.settings import Setting

    short = write_synthetic_store(tmp_path / "short", n_procedures=12, dim=16, steps=(4, 4), seed=1)
    result = generate(short, "visual-cloze", setting=Setting("knobs", (0, 1, 2)), seed=0)
    assert result.questions["knobs-012"] == 0
    assert result.counts["eligible"] == {"k1=0,ranked": 0}  # was {}: ranked plans were left out
    assert "at least 5 image steps" in result.counts["per_setting"]["knobs-012"]["empty"]
    assert any("visual-cloze/knobs-012: no questions: no procedure has" in w for w in result.warnings)
    enough = write_synthetic_store(tmp_path / "enough", n_procedures=12, dim=16, steps=(5, 6), seed=1)
    result = generate(enough, "visual-cloze", setting=Setting("knobs", (0, 1, 2)), seed=0)
    assert (
        result.counts["eligible"] == {"k1=0,ranked": 12} and "empty" not in result.counts["per_setting"]["knobs-012"]
    )


def test_foursome_relations_are_each_choice_s_relations_to_the_other_three(tmp_path: Path) -> None:
    """K3=2 coherence reads, for every candidate intruder at once, the four choices' relations to each other: the
    same numbers as relating each foursome's choices to the other choices one question at a time."""
    relations = ImageRelations(_store(tmp_path), np.arange(7))  # type: ignore[arg-type]
    coherent = np.array([[0, 1, 2], [4, 5, 0]])
    candidates = np.array([[3, 4, 6], [1, 3, -1]])
    four = relations.foursome(coherent, candidates)
    assert four.shape == (2, 3, 4, len(IMAGE_RELATIONS))
    for b in range(2):
        for k in range(3):
            if candidates[b, k] < 0:
                assert np.isnan(four[b, k, 0]).all()
                continue
            direct = relations.relations(np.array([[candidates[b, k], *coherent[b]]]), None)[0]
            np.testing.assert_allclose(four[b, k], direct, rtol=1e-9, equal_nan=True)
    # the re-crop of photo 0 stands among 0, 1, 2 as a near copy: its hash agreement is the highest of the four
    agreement = four[0, 0, :, IMAGE_RELATIONS.index("hash_agreement")]
    assert agreement[0] == agreement.max() > 0.75


def test_lookalike_intruders_are_the_pool_s_photos_nearest_the_coherent_ones_by_both_image_probes(
    tmp_path: Path,
) -> None:
    images = _store(tmp_path)
    coherent = np.array([[0, 1, 2], [4, 5, -1]])
    pool = np.array([[4, 6, 3, 5], [6, -1, 0, 3]])
    found = _lookalikes(images, coherent, pool, 2)  # type: ignore[arg-type]
    assert found[0, 0] == 3  # the re-crop of photo 0, on the question's desk: first
    assert found[0, 1] in (4, 5)  # then a readable photo; the unreadable 6 never
    assert set(found[1].tolist()) == {0, 3} and 6 not in found  # -1 and unread pool rows are never picked
    assert (_lookalikes(images, coherent, pool, 0) == -1).all()
    unread = _Images([None] * 7)
    assert (_lookalikes(unread, coherent, pool, 2) == -1).all()  # type: ignore[arg-type]
