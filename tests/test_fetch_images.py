"""`procbench fetch-images` against an image server on 127.0.0.1 with faults, and resumed after kill -9."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest
from fixtures.scrape_site import FakeClock, FakeSite, Reply, jpeg
from PIL import Image
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.ingest import ingest_file
from procbench.scrape.fetch_images import fetch_images
from procbench.scrape.http import HttpConfig
from procbench.store import Store

from helpers import write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def _png_rgba() -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (40, 30), (10, 200, 30, 128)).save(out, format="PNG")
    return out.getvalue()


def _noise_jpeg(size: int = 300) -> bytes:
    out = io.BytesIO()
    Image.frombytes("RGB", (size, size), os.urandom(size * size * 3)).save(out, format="JPEG", quality=95)
    return out.getvalue()


def _ingest(tmp_path: Path, steps_images: list[list[list[str]]]) -> Store:
    records = [
        {
            "source": "t",
            "id": f"p{n}",
            "title": f"Procedure {n}",
            "steps": [{"text": f"Step {i} of {n}.", "images": images} for i, images in enumerate(steps)],
        }
        for n, steps in enumerate(steps_images)
    ]
    tmp_path.mkdir(parents=True, exist_ok=True)
    ingest_file(tmp_path / "store", write_jsonl(tmp_path / "in.jsonl", records))
    return Store.open(tmp_path / "store")


def _check_consistent(store: Store) -> None:
    images = store.table("images")
    ids = images["id"].to_pylist()
    assert len(ids) == len(set(ids))
    for row in images.to_pylist():
        assert row["stored"] == (not row["id"].startswith("url:"))
        if row["stored"]:
            assert store.image_path(row["id"]).is_file() and row["width"] and row["height"]
    known = set(ids)
    for image_ids in store.table("steps")["image_ids"].to_pylist():
        assert set(image_ids) <= known and len(image_ids) == len(set(image_ids))


def test_fetch_with_faults_updates_images_and_steps(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.page("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
        site.route("/img/1.jpg", Reply(body=jpeg((200, 10, 10)), content_type="image/jpeg"))
        site.route("/img/dup.jpg", Reply(body=jpeg((200, 10, 10)), content_type="image/jpeg"))  # same bytes as 1
        site.route("/img/2.png", Reply(body=_png_rgba(), content_type="image/png"))
        site.route("/img/flaky.jpg", Reply(status=503), Reply(body=jpeg((10, 200, 10)), content_type="image/jpeg"))
        site.route(
            "/img/slow.jpg",
            Reply(status=429, headers={"Retry-After": "3"}),
            Reply(body=jpeg((10, 10, 200)), content_type="image/jpeg"),
        )
        site.route("/img/page.jpg", Reply(body="<html>not an image</html>"))
        site.route("/img/huge.jpg", Reply(body=_noise_jpeg(), content_type="image/jpeg"))
        site.route("/private/secret.jpg", Reply(body=jpeg(), content_type="image/jpeg"))
        other = site.url.replace("127.0.0.1", "localhost")
        u = site.url
        store = _ingest(
            tmp_path,
            [
                [[f"{u}/img/1.jpg", f"{u}/img/dup.jpg"], [f"{u}/img/2.png"], [f"{u}/img/flaky.jpg"], []],
                [[f"{u}/img/1.jpg"], [f"{u}/img/slow.jpg"], [f"{u}/img/missing.jpg"], [f"{u}/img/page.jpg"]],
                [[f"{u}/img/huge.jpg"], [f"{u}/private/secret.jpg"], [f"{other}/img/2.png"], [f"{other}/img/1.jpg"]],
            ],
        )
        assert store.table("images").num_rows == 11
        config = HttpConfig(min_interval=0.5, max_bytes=20_000, backoff_base=0.01, seed=0)
        report = fetch_images(store, http=config, clock=clock, batch_size=3)
        # stored: 1, dup (merged into 1), 2.png, flaky (after a 503), slow (after a 429), localhost 2.png and 1.jpg
        assert (report.pending, report.stored, report.failed, report.remaining) == (11, 7, 4, 0)
        assert report.merged == 3 and report.batches == 3  # dup, and localhost's 2.png and 1.jpg
        store = Store.open(store.root)
        _check_consistent(store)
        images = store.table("images")
        assert int(pc.sum(images["stored"]).as_py()) == 4  # four distinct contents
        assert images.num_rows == 8  # 11 rows - 3 merged
        steps = store.table("steps").sort_by([("procedure_id", "ascending"), ("index", "ascending")]).to_pylist()
        assert len(steps[0]["image_ids"]) == 1 and steps[0]["image_ids"] == steps[4]["image_ids"]  # 1 == dup
        assert steps[0]["image_ids"] == steps[11]["image_ids"] and steps[1]["image_ids"] == steps[10]["image_ids"]
        assert steps[6]["image_ids"][0].startswith("url:")  # 404: still only a URL
        with Image.open(store.image_path(steps[1]["image_ids"][0])) as im:
            assert im.format == "JPEG" and im.mode == "RGB" and im.size == (40, 30)
        hosts = {h.host: h for h in report.hosts.values()}
        local = hosts[site.url.removeprefix("http://")]
        assert (local.stored, local.failed, local.disallowed) == (5, 3, 1)
        assert local.errors["HTTP 404"] == 1 and local.errors["not an image"] == 1
        assert any("exceeds" in why for url, why in report.failures if url.endswith("huge.jpg"))
        assert site.hits("/private/secret.jpg") == 0 and site.hits("/img/flaky.jpg") == 2
        assert hosts[other.removeprefix("http://")].stored == 2
        # per host: at least 0.5 s between requests (the 429 pushed the next one back by its Retry-After)
        times = [h.time for h in site.log if h.headers.get("host", "").startswith("127.0.0.1")]
        assert all(b - a >= 0.5 - 1e-9 for a, b in zip(times, times[1:], strict=False))
        slow = [h.time for h in site.log if h.path == "/img/slow.jpg"]
        assert slow[1] - slow[0] >= 3
        assert "procbench/" in site.log[0].headers["user-agent"]
        # a re-run asks no host for any image again: failures are remembered (or fail again from the cache)
        before = sum(site.hits(p) for p in ("/img/missing.jpg", "/img/page.jpg", "/img/huge.jpg"))
        again = fetch_images(store, http=config, clock=clock)
        assert (again.pending, again.stored, again.failed) == (4, 0, 4)
        assert sum(site.hits(p) for p in ("/img/missing.jpg", "/img/page.jpg", "/img/huge.jpg")) == before
        assert [e["command"] for e in store.provenance].count("fetch-images") == 3


def test_limit_contact_and_cli_report(tmp_path: Path) -> None:
    with FakeSite() as site:
        site.page("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
        for n in range(4):
            site.route(f"/i/{n}.jpg", Reply(body=jpeg((60 * n, 20, 20)), content_type="image/jpeg"))
        store = _ingest(tmp_path, [[[f"{site.url}/i/{n}.jpg"] for n in range(4)]])
        runner = CliRunner()
        args = ["fetch-images", "--store", str(store.root), "--delay", "0"]
        first = runner.invoke(app, [*args, "--limit", "3", "--json"])
        assert first.exit_code == 0, first.output
        data = json.loads(first.stdout)
        assert (data["stored"], data["remaining"]) == (3, 1) and data["hosts"][0]["not_attempted"] == 1
        table = runner.invoke(app, args)
        assert table.exit_code == 0, table.output
        assert "Per host" in table.stdout and "fetched 1 of 1" in " ".join(table.stdout.split())
    public = _ingest(tmp_path / "pub", [[["https://images.example.org/a.jpg"]]])
    with pytest.raises(BadInput, match="--contact"):
        fetch_images(public)
    with pytest.raises(BadInput, match="--delay"):
        fetch_images(public, http=HttpConfig(contact="me@example.org", min_interval=0.2))
    assert runner.invoke(app, ["fetch-images", "--store", str(public.root)]).exit_code == 2


def test_resumes_after_kill_9(tmp_path: Path) -> None:
    n_images = 12
    with FakeSite() as site:
        site.page("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
        for n in range(n_images):
            site.route(f"/k/{n}.jpg", Reply(body=jpeg((20 * n, 90, 90)), content_type="image/jpeg", delay=0.2))
        store = _ingest(tmp_path, [[[f"{site.url}/k/{n}.jpg"] for n in range(n_images)]])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "procbench", "fetch-images", "--store", str(store.root), "--delay", "0"]
        child = subprocess.Popen(
            [*cmd, "--batch-size", "3"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while sum(site.hits(f"/k/{n}.jpg") for n in range(n_images)) < 8 and time.monotonic() < deadline:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        mid = Store.open(store.root)  # recovers or discards a half-done transaction
        _check_consistent(mid)
        committed = int(pc.sum(mid.table("images")["stored"]).as_py() or 0)
        assert 3 <= committed < n_images and committed % 3 == 0
        report = fetch_images(mid, http=HttpConfig(min_interval=0))
        assert report.stored == n_images - committed and report.http["from_cache"] >= 1
        done = Store.open(store.root)
        _check_consistent(done)
        assert int(pc.sum(done.table("images")["stored"]).as_py()) == n_images
        hits = [site.hits(f"/k/{n}.jpg") for n in range(n_images)]
        assert sum(hits) - n_images <= 1  # at most the request in flight at the kill is asked again
