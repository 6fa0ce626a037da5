"""Hardening of fetch-images (issue 34, item 6), against servers on 127.0.0.1 only, each bounded in time."""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

import pytest
from fixtures.scrape_site import FakeClock, FakeSite, Reply, jpeg
from typer.testing import CliRunner

from procbench.cli import app
from procbench.ingest import ingest_file
from procbench.scrape.fetch_images import fetch_images
from procbench.scrape.http import HttpConfig
from procbench.store import Store
from procbench.store.images import BadImage, normalise_image

from helpers import write_jsonl

ROBOTS = "User-agent: *\nAllow: /\n"


def _store(tmp_path: Path, urls: list[str]) -> Store:
    record = {
        "source": "t",
        "id": "p",
        "title": "P",
        "steps": [{"text": f"Step {i}.", "images": [u]} for i, u in enumerate(urls)],
    }
    ingest_file(tmp_path / "store", write_jsonl(tmp_path / "in.jsonl", [record]))
    return Store.open(tmp_path / "store")


def test_a_redirect_to_another_port_of_the_same_host_is_refused(tmp_path: Path) -> None:
    with FakeSite() as other, FakeSite() as site:
        other.page("/robots.txt", ROBOTS, content_type="text/plain")
        other.route("/x.jpg", Reply(body=jpeg(), content_type="image/jpeg"))
        site.page("/robots.txt", ROBOTS, content_type="text/plain")
        site.route("/r.jpg", Reply(status=302, headers={"Location": f"{other.url}/x.jpg"}))
        site.route("/same.jpg", Reply(status=302, headers={"Location": "/y.jpg"}))
        site.route("/y.jpg", Reply(body=jpeg((1, 2, 3)), content_type="image/jpeg"))
        store = _store(tmp_path, [f"{site.url}/r.jpg", f"{site.url}/same.jpg"])
        report = fetch_images(store, http=HttpConfig(min_interval=0))
        assert (report.stored, report.failed) == (1, 1)  # the same-origin redirect is followed
        assert "another host or port" in report.failures[0][1]
        assert other.hits("/x.jpg") == 0


def test_a_host_that_keeps_timing_out_is_given_up(tmp_path: Path) -> None:
    clock = FakeClock()  # backoff sleeps are not real; the timeouts are
    with FakeSite(clock) as site:
        site.page("/robots.txt", ROBOTS, content_type="text/plain")
        for n in range(6):
            site.route(f"/slow/{n}.jpg", *[Reply(body=jpeg(), content_type="image/jpeg", delay=3.0)] * 6)
        store = _store(tmp_path, [f"{site.url}/slow/{n}.jpg" for n in range(6)])
        config = HttpConfig(min_interval=0, read_timeout=0.3, max_retries=4, backoff_base=0.01, max_host_timeouts=3)
        start = time.monotonic()
        report = fetch_images(store, http=config, clock=clock)
        elapsed = time.monotonic() - start
        slow_hits = sum(site.hits(f"/slow/{n}.jpg") for n in range(6))
    assert slow_hits == 3 and elapsed < 8, (slow_hits, elapsed)  # without the give-up: 30 requests, 9+ s
    host = next(iter(report.hosts.values()))
    assert host.stopped and "timed out 3 times" in host.stopped
    assert (report.stored, host.not_attempted) == (0, 5)


def test_credentials_in_urls_are_never_sent_or_printed(tmp_path: Path) -> None:
    with FakeSite() as site:
        site.page("/robots.txt", ROBOTS, content_type="text/plain")
        site.route("/i/1.jpg", Reply(body=jpeg(), content_type="image/jpeg"))
        site.route("/i/missing.jpg", Reply(status=404))
        secret_url = site.url.replace("http://", "http://alice:s3cr3t@")
        store = _store(tmp_path, [f"{secret_url}/i/1.jpg", f"{secret_url}/i/missing.jpg"])
        runner = CliRunner()
        args = ["fetch-images", "--store", str(store.root), "--delay", "0"]
        as_json = runner.invoke(app, [*args, "--json", "--limit", "1"])
        table = runner.invoke(app, args)
        assert all("authorization" not in {k.lower() for k in h.headers} for h in site.log)
    assert as_json.exit_code == 0 and table.exit_code == 0, (as_json.output, table.output)
    data = json.loads(as_json.stdout)
    assert data["stored"] == 1 and data["hosts"][0]["host"] == site.url.removeprefix("http://")
    for output in (as_json.output, table.output):
        assert "s3cr3t" not in output and "alice" not in output
    cached = b"".join(p.read_bytes() for p in (store.root / "cache").rglob("*") if p.is_file())
    assert b"s3cr3t" not in cached


def test_non_image_bodies_are_not_cached(tmp_path: Path) -> None:
    with FakeSite() as site:
        site.page("/robots.txt", ROBOTS, content_type="text/plain")
        site.route("/i/page.jpg", Reply(body="<html>MARKER-HTML</html>"))
        svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>MARKER-SVG</script></svg>'
        site.route("/i/pic.svg", Reply(body=svg, content_type="image/svg+xml"))
        site.route("/i/broken.png", Reply(body=b"\x89PNG\r\n\x1a\nMARKER-BROKEN", content_type="image/png"))
        store = _store(tmp_path, [f"{site.url}/i/page.jpg", f"{site.url}/i/pic.svg", f"{site.url}/i/broken.png"])
        report = fetch_images(store, http=HttpConfig(min_interval=0))
        assert report.failed == 3
        assert next(iter(report.hosts.values())).errors["not an image"] == 3
        cached = b"".join(p.read_bytes() for p in (store.root / "cache" / "http").rglob("*") if p.is_file())
        assert b"MARKER" not in cached
        again = fetch_images(store, http=HttpConfig(min_interval=0))  # failures remembered: nothing asked again
        assert again.failed == 3 and sum(site.hits(p) for p in ("/i/page.jpg", "/i/pic.svg", "/i/broken.png")) == 3


def _flat_png(width: int, height: int, mode_type: int = 6) -> bytes:
    """A PNG of ``width`` x ``height`` RGBA (colour type 6) zero pixels, compressed row by row (small)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" * (1 + width * 4)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, mode_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_a_large_rgba_png_under_the_megapixel_cap_is_refused_by_its_decoded_size() -> None:
    import resource

    data = _flat_png(7000, 7000)
    assert len(data) < 300_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(BadImage, match="decodes to 196,000,000 bytes"):
        normalise_image(data)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: not decoded
