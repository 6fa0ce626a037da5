"""Odd image files of real photo corpora (issue 35): each is stored as a browser shows it, or refused with a
message; never a blank or sideways photo. Tiny images built here; nothing read from ../shared."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from procbench.ingest import ingest_file
from procbench.store import Store
from procbench.store.images import BadImage, decode_image

from helpers import make_record, write_jsonl


def _gradient(w: int = 64, h: int = 48) -> Image.Image:
    """An RGB picture whose left half is dark and right half bright (so a rotation or a blank shows)."""
    a = np.zeros((h, w, 3), np.uint8)
    a[:, w // 2 :] = 220
    a[:, : w // 2] = 30
    return Image.fromarray(a)


def _bytes(im: Image.Image, fmt: str, **kw: object) -> bytes:
    out = io.BytesIO()
    im.save(out, format=fmt, **kw)
    return out.getvalue()


def test_exif_orientation_is_applied() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # shown rotated 90 degrees clockwise
    im = decode_image(_bytes(_gradient(64, 48), "JPEG", exif=exif))
    assert im.size == (48, 64)
    a = np.asarray(im.convert("L"), dtype=float)
    assert a[:32].mean() < 80 and a[32:].mean() > 170  # the dark left half is now on top


def test_sixteen_bit_greyscale_is_not_white() -> None:
    grey = np.asarray(_gradient().convert("L"), dtype=np.uint16) * 257
    im = decode_image(_bytes(Image.fromarray(grey), "PNG"))
    a = np.asarray(im, dtype=float)
    assert a.shape == (48, 64, 3)
    assert abs(a[:, :32].mean() - 30) < 2 and abs(a[:, 32:].mean() - 220) < 2


def test_float_greyscale_is_stretched() -> None:
    values = np.where(np.arange(64)[None, :] < 32, 0.25, 0.75).repeat(48, axis=0).astype(np.float32)
    im = decode_image(_bytes(Image.fromarray(values, "F"), "TIFF"))
    a = np.asarray(im.convert("L"), dtype=float)
    assert a[:, :32].mean() < 5 and a[:, 32:].mean() > 250


@pytest.mark.parametrize("mode", ["CMYK", "L", "P", "RGBA"])
def test_other_modes_decode_to_rgb(mode: str) -> None:
    src = _gradient().convert(mode)
    fmt = "JPEG" if mode in ("CMYK", "L") else "PNG"
    im = decode_image(_bytes(src, fmt))
    assert im.mode == "RGB" and im.size == (64, 48)
    a = np.asarray(im.convert("L"), dtype=float)
    assert a[:, :32].mean() < 90 and a[:, 32:].mean() > 150


def test_truncated_and_empty_files_are_refused() -> None:
    data = _bytes(_gradient(256, 192), "JPEG")
    for bad in (data[: len(data) * 2 // 5], b"", b"not an image\n"):
        with pytest.raises(BadImage):
            decode_image(bad)


def test_odd_files_in_one_import(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    exif = Image.Exif()
    exif[0x0112] = 8
    (images / "rotated.jpg").write_bytes(_bytes(_gradient(), "JPEG", exif=exif))
    grey = np.asarray(_gradient().convert("L"), dtype=np.uint16) * 257
    (images / "grey16.png").write_bytes(_bytes(Image.fromarray(grey), "PNG"))
    (images / "cut.jpg").write_bytes(_bytes(_gradient(256, 192), "JPEG")[:500])
    record = make_record("odd", 3)
    record["steps"][0]["images"] = ["images/rotated.jpg"]
    record["steps"][1]["images"] = ["images/grey16.png", "images/missing.jpg"]
    record["steps"][2]["images"] = ["images/cut.jpg"]
    report = ingest_file(tmp_path / "s", write_jsonl(tmp_path / "in.jsonl", [record]))
    assert report.added == 1 and report.images_stored == 2
    assert sorted(ref for ref, _ in report.image_failures) == ["images/cut.jpg", "images/missing.jpg"]
    store = Store.open(tmp_path / "s")
    rows = store.table("images", ["url", "width", "height"]).to_pylist()
    sizes = {r["url"]: (r["width"], r["height"]) for r in rows}
    assert sizes == {"images/rotated.jpg": (48, 64), "images/grey16.png": (64, 48)}


def test_tiny_images_are_not_embedded_and_said_so(tmp_path: Path) -> None:
    from procbench.clean import clean_store
    from procbench.embed import embed_store, load_embeddings
    from procbench.embed.fields import MIN_IMAGE_SIDE

    images = tmp_path / "images"
    images.mkdir()
    _gradient(64, 48).save(images / "photo.png")
    _gradient(MIN_IMAGE_SIDE - 1, 40).save(images / "icon.png")
    record = make_record("tiny", 3)
    record["steps"][0]["images"] = ["images/photo.png"]
    record["steps"][1]["images"] = ["images/icon.png"]
    ingest_file(tmp_path / "s", write_jsonl(tmp_path / "in.jsonl", [record]))
    store = Store.open(tmp_path / "s")
    clean_store(store, min_steps=1)
    report = {f.field: f for f in embed_store(store, text_encoder="hashed", image_encoder="colour-layout").fields}
    ids = {r["url"]: r["id"] for r in store.table("images", ["url", "id"]).to_pylist()}
    assert load_embeddings(store, "image").keys.to_pylist() == [ids["images/photo.png"]]
    assert [key for key, _ in report["image"].failed] == [ids["images/icon.png"]]
    assert f"{MIN_IMAGE_SIDE - 1}x40 pixels" in report["image"].failed[0][1]


def test_the_report_says_why_a_set_is_empty_and_what_generation_skipped(tmp_path: Path) -> None:
    """An empty set is not a silent blank page: the reason generate recorded is on its page and the index."""
    from procbench.report.data import SetView, generation_notes
    from procbench.report.html import index_page, set_page

    store = Store.open(tmp_path / "s", create=True)
    why = "no procedure has at least 5 image steps (K1): ingest procedures with one image per step"
    per_setting = {
        "knobs-011": {"questions": 0, "empty": why},
        "needs-context": {"questions": 5, "skipped_procedures": {"few_photos": 50, "no_readable_set": 0}},
    }
    old = {"per_setting": {"knobs-011": {"questions": 9}}}
    store.record_run("generate", args={"task": "visual-cloze"}, seed=0, counts=old)
    store.record_run("generate", args={"task": "visual-cloze"}, seed=0, counts={"per_setting": per_setting})
    store.record_run("generate", args={"task": "visual-ordering"}, seed=0, counts={"per_setting": {}})
    assert generation_notes(store, "visual-cloze", "knobs-011") == {"empty": why}  # the latest run wins
    assert generation_notes(store, "visual-cloze", "needs-context") == {"skipped_procedures": {"few_photos": 50}}
    assert generation_notes(store, "visual-coherence", "knobs-011") == {}

    def view(setting: str) -> SetView:
        return SetView(
            name=f"visual-cloze/{setting}", task="visual-cloze", setting=setting, slug=setting, splits={"test": 0},
            questions=[], total=0, audit=None, has_scores=False,
            generation=generation_notes(store, "visual-cloze", setting),
        )  # fmt: skip

    empty, skipped = view("knobs-011"), view("needs-context")
    assert f'<p class="warn">Generation: no questions: {why}.</p>' in set_page(empty, instruction="")
    assert "Generation: 50 procedures skipped (few photos 50)." in set_page(skipped, instruction="")
    index = index_page([empty, skipped], [], title="t")
    assert f"no questions: {why}" in index and "50 procedures skipped (few photos 50)" in index


@pytest.mark.parametrize("files", ["none", "tiny"])
def test_a_store_without_usable_images_says_why_it_has_no_image_embeddings(tmp_path: Path, files: str) -> None:
    """Not "run procbench embed first" after embed ran: every image file was missing, or every one too small."""
    from procbench.clean import clean_store
    from procbench.embed import embed_store, load_embeddings
    from procbench.errors import BadInput

    images = tmp_path / "images"
    images.mkdir()
    if files == "tiny":
        _gradient(12, 9).save(images / "a.png")
    record = make_record("no-photos", 3)
    record["steps"][0]["images"] = ["images/a.png"]
    ingest_file(tmp_path / "s", write_jsonl(tmp_path / "in.jsonl", [record]))
    store = Store.open(tmp_path / "s")
    clean_store(store, min_steps=1)
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout")
    why = "no image file to embed" if files == "none" else "at least 24 pixels on a side"
    with pytest.raises(BadInput, match=why):
        load_embeddings(store, "image")


def test_repeated_items_finds_a_choice_that_repeats_a_question_photo() -> None:
    """The audit reads a repeat from the set alone: a wrong choice that is a question photo (a photo copied into
    two guides, stored once), two equal choices, two equal orders."""
    from procbench.audit import AuditSet, audit_set

    def cloze(i: int, negatives: list[str]) -> tuple[list[str], list[str]]:
        return [f"p{i}a", "@placeholder", f"p{i}b", f"p{i}c"], [f"p{i}x", *negatives]

    rows = [cloze(i, [f"o{i}1", f"o{i}2", f"o{i}3"]) for i in range(6)]
    rows[2] = cloze(2, ["p2b", "o22", "o23"])  # the photo beside the blank, offered again
    rows[4] = cloze(4, ["o41", "o41", "o43"])  # two equal choices
    aset = AuditSet(
        name="t", task="visual-cloze", procedure_ids=[f"p{i}" for i in range(6)], questions=[q for q, _ in rows],
        choices=[c for _, c in rows], answers=np.zeros(6, dtype=np.int64), qids=[f"q{i}" for i in range(6)],
    )  # fmt: skip
    result = audit_set(aset, n_boot=50, probes="repeated_items").probes["repeated_items"]
    assert result.value == pytest.approx(2 / 6) and result.chance is None
    assert result.details["examples"] == ["q2", "q4"]
    assert result.details["choice_repeats_question_item"] == 1 and result.details["choices_repeat_each_other"] == 1

    orders = [[["a", "b", "c"], ["b", "a", "c"], ["c", "b", "a"], ["a", "c", "b"]] for _ in range(4)]
    orders[1][3] = ["b", "a", "c"]
    ordering = AuditSet(
        name="o", task="visual-ordering", procedure_ids=["p0", "p1", "p2", "p3"], questions=[[], [], [], []],
        choices=orders, answers=np.zeros(4, dtype=np.int64),
    )  # fmt: skip
    result = audit_set(ordering, n_boot=50, probes="repeated_items").probes["repeated_items"]
    assert result.value == pytest.approx(1 / 4) and result.details["examples"] == ["1"]
