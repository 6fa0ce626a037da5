"""Hardening: size caps of an import and local image paths confined to the feed (issue 34, items 2 and 5)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

import procbench.ingest as ingest_module
from procbench.cli import app
from procbench.ingest import ingest_file
from procbench.ingest.records import MAX_FIELD_CHARS, MAX_LINE_BYTES, MAX_STEPS
from procbench.store import Store
from procbench.store.append import UNUSABLE_LOCAL_IMAGE

from helpers import make_record, write_jsonl


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


def test_each_cap_skips_one_record_with_its_line_number(tmp_path: Path) -> None:
    long_line = json.dumps(make_record("long-line", steps=[{"text": "x" * (MAX_LINE_BYTES + 10)}]))
    long_field = make_record("long-field")
    long_field["steps"][1]["text"] = "y" * (MAX_FIELD_CHARS + 1)
    long_title = make_record("long-title", title="z" * (MAX_FIELD_CHARS + 1))
    many_steps = make_record("many-steps", MAX_STEPS + 1)
    records = [make_record("ok-1"), long_line, long_field, long_title, many_steps, make_record("ok-2")]
    path = write_jsonl(tmp_path / "in.jsonl", records)
    result = CliRunner().invoke(app, ["ingest", str(path), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.output.splitlines() if "skipped" in line]
    assert len(skipped) == 4, result.output
    assert "line 2:" in skipped[0] and "longer than the" in skipped[0]
    assert "line 3:" in skipped[1] and "step 2: 'text'" in skipped[1]
    assert "line 4:" in skipped[2] and "'title'" in skipped[2]
    assert "line 5:" in skipped[3] and "steps, more than" in skipped[3]
    ids = Store.open(tmp_path / "s").table("procedures", ["id"])["id"].to_pylist()
    assert sorted(ids) == ["test:ok-1", "test:ok-2"]


_MEASURE = """
import resource, sys
from procbench.ingest import ingest_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = ingest_file(sys.argv[1], sys.argv[2])
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(report.added, [p.where for p in report.problems], grew)
"""


def test_a_huge_line_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    with open(path, "w") as fh:
        fh.write(json.dumps(make_record("ok")) + "\n")
        fh.write('{"title": "huge", "steps": [{"text": "')
        for _ in range(96):
            fh.write("w" * (2**20))  # 96 MiB in one line
        fh.write('"}]}\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path / "s"), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    ).stdout.split(" ", 1)
    added, rest = out[0], out[1].rsplit(" ", 1)
    assert added == "1" and rest[0] == "['line 2']"
    assert int(rest[1]) < 48 * 1024, rest[1]  # KiB: the 96 MiB line never sits in memory whole


def test_more_procedures_than_the_cap_stops_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_module, "MAX_PROCEDURES_PER_FILE", 3)
    path = write_jsonl(tmp_path / "in.jsonl", [make_record(f"p-{i}") for i in range(6)])
    report = ingest_file(tmp_path / "s", path)
    assert report.added == 3
    assert [(p.where, "split the file" in p.message) for p in report.problems] == [("line 4", True)]


@pytest.fixture
def feed(tmp_path: Path) -> Path:
    """feed/in.jsonl beside private/secret.png (and a text file posing as an image)."""
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.png").write_bytes(_png())
    (tmp_path / "feed" / "img").mkdir(parents=True)
    (tmp_path / "feed" / "img" / "ok.png").write_bytes(_png())
    (tmp_path / "feed" / "img" / "notes.png").write_text("not an image\n")
    (tmp_path / "feed" / "img" / "escape.png").symlink_to(tmp_path / "private" / "secret.png")
    return tmp_path / "feed"


def _ingest_refs(feed: Path, refs: list[str], **options: object) -> dict[str, str]:
    record = make_record("pics", 1)
    record["steps"][0]["images"] = refs
    store = feed.parent / f"s-{len(list(feed.parent.glob('s-*')))}"  # a new store per call
    report = ingest_file(store, write_jsonl(feed / "in.jsonl", [record]), **options)  # type: ignore[arg-type]
    assert report.added == 1
    return dict(report.image_failures)


def test_local_images_outside_the_feed_are_refused(feed: Path) -> None:
    secret = feed.parent / "private" / "secret.png"
    outside = ["../private/secret.png", str(secret), f"file://{secret}", "img/escape.png"]
    failures = _ingest_refs(feed, ["img/ok.png", *outside])
    assert set(failures) == set(outside)
    assert all("outside" in why and "--allow-outside" in why for why in failures.values())
    images = Store.open(feed.parent / "s-0").table("images", ["stored"])["stored"].to_pylist()
    assert images == [True]  # only img/ok.png


def test_allow_outside_and_images_folder_widen_the_roots(feed: Path, tmp_path: Path) -> None:
    assert _ingest_refs(feed, ["../private/secret.png"], allow_outside=True) == {}
    assert _ingest_refs(feed, [str(feed.parent / "private" / "secret.png")], images_dir=feed.parent / "private") == {}


def test_missing_and_non_image_files_give_one_message(feed: Path) -> None:
    failures = _ingest_refs(feed, ["img/missing.png", "img/notes.png"])
    assert failures == {"img/missing.png": UNUSABLE_LOCAL_IMAGE, "img/notes.png": UNUSABLE_LOCAL_IMAGE}
