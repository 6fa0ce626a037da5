"""``procbench sample-site``: the bundled sample corpus served on 127.0.0.1, scraped by ``procbench scrape wikihow``
as the README shows it."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.scrape.sample_site import serve_sample_site

runner = CliRunner()


def _scrape(url: str, store: Path, limit: int = 3) -> dict[str, object]:
    args = ["scrape", "wikihow", "--base-url", url, "-c", "Woodworking", "--limit", str(limit), "--delay", "0"]
    result = runner.invoke(app, [*args, "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def _check_store(store: Path, limit: int = 3) -> None:
    procedures = pq.read_table(store / "procedures.parquet").to_pylist()
    assert len(procedures) == limit
    assert all(p["id"].startswith("wikihow:") and p["n_steps"] >= 3 for p in procedures)
    assert {p["category"][1] for p in procedures} == {"Woodworking"}
    images = pq.read_table(store / "images.parquet", columns=["stored"])["stored"].to_pylist()
    steps = pq.read_table(store / "steps.parquet", columns=["procedure_id"]).num_rows
    assert len(images) == steps and all(images)  # every step's image fetched from the site and stored


def test_the_scraper_reads_the_sample_site_like_wikihow(tmp_path: Path) -> None:
    with serve_sample_site(port=0) as site:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", site.url)
        _scrape(site.url, tmp_path / "store", limit=2)  # the slow test below runs the README's --limit 3
    _check_store(tmp_path / "store", limit=2)


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with serve_sample_site(port=0) as site:
        port = site.url.rsplit(":", 1)[1]
        result = runner.invoke(app, ["sample-site", "--port", port, "--for", "0"])
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.slow
def test_sample_site_command_serves_until_stopped_and_prints_the_base_url(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    exe = [sys.executable, "-m", "procbench", "sample-site", "--port", "0", "--for", "300"]
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)  # noqa: S603
    try:
        assert proc.stdout is not None
        out, deadline = b"", time.monotonic() + 120
        while b"try:" not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if ready:
                out += os.read(proc.stdout.fileno(), 4096)
        text = out.decode()
        url = re.search(r"sample site: (http://127\.0\.0\.1:\d+)", text)
        assert url, text
        assert f"procbench scrape wikihow --base-url {url.group(1)} -c Woodworking" in text
        _scrape(url.group(1), tmp_path / "store")
        _check_store(tmp_path / "store")
    finally:
        proc.terminate()
        proc.wait(30)
