from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from procbench.corpus import load_sample, step_image, write_sample


def test_sample_corpus_shape() -> None:
    sample = load_sample()
    assert len(sample) >= 40
    domains = Counter(r["category"][1] for r in sample)
    assert set(domains) == {"Woodworking", "Decorating", "Recipes"} and min(domains.values()) >= 10
    assert len({r["id"] for r in sample}) == len(sample)
    for record in sample:
        assert 5 <= len(record["steps"]) <= 12 and len(record["category"]) == 3
        for step in record["steps"]:
            assert step["title"].strip() and len(step["text"].split()) >= 25


def _digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.rglob("*.*"))}


def test_written_sample_is_deterministic_by_seed(tmp_path: Path) -> None:
    write_sample(tmp_path / "a", seed=0)
    write_sample(tmp_path / "b", seed=0)
    write_sample(tmp_path / "c", seed=1)
    a, b, c = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert a == b
    assert sum(a[k] != c[k] for k in a if k.endswith(".png")) > 0.9 * sum(k.endswith(".png") for k in a)
    assert sum(k.endswith(".png") for k in a) == sum(len(r["steps"]) for r in load_sample())


def _pixels(record: dict, index: int) -> bytes:
    return step_image(record, index).tobytes()


def test_images_vary_with_step_and_resemble_within_procedure() -> None:
    sample = load_sample()
    record = sample[0]
    frames = [_pixels(record, i) for i in range(len(record["steps"]))]
    assert len(set(frames)) == len(frames)

    def distance(x: bytes, y: bytes) -> float:
        return sum(abs(p - q) for p, q in zip(x[::97], y[::97], strict=True)) / len(x[::97])

    same = distance(frames[1], frames[2])
    other_domain = next(r for r in sample if r["category"][0] != record["category"][0])
    across = distance(frames[1], _pixels(other_domain, 1))
    assert same < across
