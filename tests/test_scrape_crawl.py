"""Whole scrapes against local fake sites: listings, pages, images, filters, resuming, the CLI, manifests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pyarrow.parquet as pq
import pytest
from fixtures.scrape_site import FakeClock, FakeSite, Reply, fixture, jpeg
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import RateLimited
from procbench.scrape import Filters, HttpConfig, ScrapeOptions, scrape
from procbench.scrape.instructables import InstructablesSource
from procbench.scrape.sample_site import render_article
from procbench.store import Store

W = "https://www.wikihow.com"
REPO = Path(__file__).resolve().parents[1]
HTTP = HttpConfig(contact="bench@example.org", max_bytes=200_000)

TREE = {  # category -> (sub-categories, articles)
    "Home-and-Garden": (["Shelving", "Home-and-Garden"], ["Decorate-a-Mantel-for-Christmas"]),
    "Shelving": ([], ["Build-a-Floating-Shelf", "Sand-Wood-by-Hand", "Missing-Article", "Tiny-Article"]),
}
TINY = {
    "id": "Tiny-Article",
    "title": "How to Do Almost Nothing",
    "category": ["Home and Garden"],
    "steps": [{"title": "Begin.", "text": "Start it."}, {"title": "End.", "text": "Stop it."}],
}


def api(path: str, headers: dict[str, str]) -> Reply:
    q = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
    if q.get("generator") == "categorymembers":
        name = q["gcmtitle"].removeprefix("Category:")
        titles = TREE.get(name, ([], []))[1]
        half = 0 if "gcmcontinue" in q else 1  # the first answer holds one page and asks to continue
        chosen = titles[:half] if half else titles[1:]
        body = {
            "query": {
                "pages": [
                    {"ns": 0, "title": t.replace("-", " "), "pageid": i, "fullurl": f"{W}/{t}"}
                    for i, t in enumerate(chosen)
                ]
            }
        }
        if half and len(titles) > 1:
            body["continue"] = {"gcmcontinue": "page|next", "continue": "gcmcontinue||"}
        return Reply(body=json.dumps(body), content_type="application/json")
    name = q.get("cmtitle", "").removeprefix("Category:")
    subcats = TREE.get(name, ([], []))[0]
    members = [{"ns": 14, "title": f"Category:{c}"} for c in subcats]
    return Reply(body=json.dumps({"query": {"categorymembers": members}}), content_type="application/json")


def image(path: str, headers: dict[str, str]) -> Reply:
    if "Build-a-Floating-Shelf-Step-2" in path:
        return Reply(body=b"this is not an image", content_type="image/jpeg")
    if "Build-a-Floating-Shelf-Step-6" in path:
        return Reply(chunked_bytes=2_000_000, content_type="image/jpeg")
    return Reply(body=jpeg((len(path) * 7 % 255, 90, 160)), content_type="image/jpeg")


def wikihow_site(site: FakeSite, *, robots: str = "User-agent: *\nDisallow: /Special:\n") -> None:
    site.page("/robots.txt", robots, "text/plain")
    site.prefix("/api.php", api)
    site.prefix("/images/", image)
    for name in ("Build-a-Floating-Shelf", "Decorate-a-Mantel-for-Christmas", "Sand-Wood-by-Hand"):
        site.page(f"/{name}", fixture(f"wikihow/{name}.html"))
    site.page("/Tiny-Article", render_article(TINY, base=W))


def test_wikihow_category_crawl_end_to_end_and_rerun_fetches_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    store = tmp_path / "store"
    options = ScrapeOptions("wikihow", categories=("Home-and-Garden",), base_url="", http=HTTP, batch_size=2)
    with FakeSite(clock) as site:
        wikihow_site(site)
        options = ScrapeOptions("wikihow", categories=("Home-and-Garden",), base_url=site.url, http=HTTP, batch_size=2)
        report = scrape(store, options, clock=clock)
        first_log = len(site.log)
        again = scrape(store, options, clock=clock)
        rerun_paths = [h.path for h in site.log[first_log:]]
    assert report.added == 3 and report.outcomes["filtered_step_count"] == 1 and report.outcomes["http_404"] == 1
    opened = Store.open(store)
    procedures = {r["id"]: r for r in opened.table("procedures").to_pylist()}
    assert set(procedures) == {
        "wikihow:Decorate-a-Mantel-for-Christmas",
        "wikihow:Build-a-Floating-Shelf",
        "wikihow:Sand-Wood-by-Hand",
    }
    assert procedures["wikihow:Build-a-Floating-Shelf"]["url"] == f"{W}/Build-a-Floating-Shelf"
    steps = opened.table("steps").to_pylist()
    mantel = [s for s in steps if s["procedure_id"] == "wikihow:Decorate-a-Mantel-for-Christmas"]
    assert [s["part"] for s in mantel][:4] == ["Planning the Look"] * 3 + ["Adding Greenery"]
    assert mantel[0]["kind"] == "part"
    failed = dict(report.image_failures)
    assert any("Step-2" in ref for ref in failed)  # not an image
    assert any("Step-6" in ref and "limit" in why for ref, why in failed.items())  # larger than max_bytes
    images = opened.table("images").to_pylist()
    assert images and all(i["stored"] for i in images) and all(opened.image_path(i["id"]).is_file() for i in images)
    # Politeness: robots.txt first, one host, at least a second between requests (fake clock).
    assert site.log[0].path == "/robots.txt"
    times = [h.time for h in site.log[:first_log]]
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:], strict=False))
    article_paths = [h.path for h in site.log[:first_log] if not h.path.startswith(("/api.php", "/images", "/robots"))]
    assert len(article_paths) == len(set(article_paths)) == 5
    # The re-run continues the finished job: nothing new, nothing fetched but robots.txt.
    assert again.resumed and again.added == 0 and again.skipped_done == 5
    assert set(rerun_paths) <= {"/robots.txt"}
    assert len(opened.provenance) == report.batches and opened.provenance[0]["command"] == "scrape"


def test_wikihow_falls_back_to_category_pages_when_the_api_is_disallowed(tmp_path: Path) -> None:
    clock = FakeClock()
    grid = "".join(f"<div class='responsive_thumb'><a href='/{a}'>{a}</a></div>" for a in ("Sand-Wood-by-Hand",))
    page1 = (
        f"<html><body><div id='content_wrapper'><div id='cat_all'><div class='cat_grid'>{grid}</div></div>"
        "<div id='large_pagination'><ul><li>1</li><li>2</li></ul></div></div></body></html>"
    )
    page2 = page1.replace("Sand-Wood-by-Hand", "Build-a-Floating-Shelf")
    with FakeSite(clock) as site:
        wikihow_site(site, robots="User-agent: *\nDisallow: /api.php\n")
        site.page("/Category:Shelving", page1)
        site.page("/Category:Shelving?pg=2", page2)
        report = scrape(
            tmp_path / "s",
            ScrapeOptions("wikihow", categories=("Shelving",), base_url=site.url, http=HTTP, images=False),
            clock=clock,
        )
    assert report.added == 2 and site.hits("/api.php") == 0
    images = Store.open(tmp_path / "s").table("images").to_pylist()
    assert images and not any(i["stored"] for i in images)  # --no-images: URLs recorded, nothing downloaded
    assert not any(h.path.startswith("/images/") for h in site.log)


def instructables_site(site: FakeSite, *, search_calls: list[dict[str, str]]) -> None:
    site.page("/robots.txt", "User-agent: *\nDisallow: /member/\n", "text/plain")
    site.page("/", fixture("instructables/home.html"))
    ranked = ["Pallet-Wood-Workbench", "Best-Workbench-Builds", "String-Art-Coasters"]

    def search(path: str, headers: dict[str, str]) -> Reply:
        if headers.get("x-typesense-api-key") != "PUBLICSEARCHKEY123":
            return Reply(status=401)
        q = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        search_calls.append(q)
        page, per_page = int(q["page"]), int(q["per_page"])
        hits = [{"document": {"urlString": s, "title": s}} for s in ranked[(page - 1) * per_page : page * per_page]]
        return Reply(body=json.dumps({"found": len(ranked), "hits": hits}), content_type="application/json")

    def model(path: str, headers: dict[str, str]) -> Reply:
        slug = parse_qs(urlsplit(path).query)["urlString"][0]
        if slug == "Pallet-Wood-Workbench":
            return Reply(
                body=fixture("instructables/model-Pallet-Wood-Workbench.json"), content_type="application/json"
            )
        if slug == "Best-Workbench-Builds":
            return Reply(body=fixture("instructables/model-collection.json"), content_type="application/json")
        return Reply(status=404)

    site.prefix("/api_proxy/search/collections/projects/documents/search", search)
    site.prefix("/json-api/showInstructableModel", model)
    site.page("/Pallet-Wood-Workbench/", fixture("instructables/Pallet-Wood-Workbench.html"))
    site.page("/String-Art-Coasters/", fixture("instructables/String-Art-Coasters.html"))
    site.prefix("/F", lambda path, headers: Reply(body=jpeg((len(path) % 255, 10, 10)), content_type="image/jpeg"))


def test_instructables_search_api_json_model_and_html_fallback(tmp_path: Path) -> None:
    clock = FakeClock()
    calls: list[dict[str, str]] = []
    with FakeSite(clock) as site:
        instructables_site(site, search_calls=calls)
        options = ScrapeOptions("instructables", categories=("workshop/workbenches",), base_url=site.url, http=HTTP)
        report = scrape(tmp_path / "s", options, clock=clock, source=InstructablesSource(per_page=2))
    assert calls[0]["sort_by"] == "views:desc"
    assert calls[0]["filter_by"] == "category:=Workshop && channel:=Workbenches"
    assert [c["page"] for c in calls] == ["1", "2"]
    assert report.added == 2 and report.outcomes["not_a_project"] == 1
    procedures = {r["id"]: r for r in Store.open(tmp_path / "s").table("procedures").to_pylist()}
    pallet = procedures["instructables:Pallet-Wood-Workbench"]
    assert pallet["license"] == "https://creativecommons.org/licenses/by-nc-sa/4.0/"  # read from the page
    assert pallet["category"] == ["Workshop", "Workbenches"] and pallet["author"] == "ShedBuilder42"
    assert procedures["instructables:String-Art-Coasters"]["author"] == "KnotQueen"  # API 404 -> page HTML
    kinds = [
        s["kind"]
        for s in Store.open(tmp_path / "s").table("steps").to_pylist()
        if s["procedure_id"] == "instructables:Pallet-Wood-Workbench"
    ]
    assert kinds == ["intro", "supplies", "step", "step", "step", "step"]
    assert report.images_stored > 0 and not report.image_failures


def test_rate_limited_run_commits_what_it_has_and_stops(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        wikihow_site(site)
        site.route("/Sand-Wood-by-Hand", Reply(status=429, headers={"Retry-After": "30"}))
        options = ScrapeOptions(
            "wikihow",
            urls=(f"{W}/Build-a-Floating-Shelf", f"{W}/Sand-Wood-by-Hand"),
            base_url=site.url,
            http=HttpConfig(contact="x@example.org", max_retries=2),
            images=False,
            batch_size=10,
        )
        with pytest.raises(RateLimited):
            scrape(tmp_path / "s", options, clock=clock)
    assert Store.open(tmp_path / "s").table("procedures")["id"].to_pylist() == ["wikihow:Build-a-Floating-Shelf"]
    assert site.hits("/Sand-Wood-by-Hand") == 3


def test_filters_and_limits(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        wikihow_site(site)
        options = ScrapeOptions(
            "wikihow",
            categories=("Shelving",),
            base_url=site.url,
            http=HTTP,
            images=False,
            limit=1,
            filters=Filters(min_steps=5, max_steps=25),
        )
        report = scrape(tmp_path / "s", options, clock=clock)
        more = scrape(tmp_path / "s", ScrapeOptions(**{**options.__dict__, "limit": 5}), clock=clock)
    assert report.added == 1 and more.added == 0 and more.outcomes["filtered_step_count"] == 2  # Sand: 4, Tiny: 2
    assert Store.open(tmp_path / "s").table("procedures").num_rows == 1


def test_cli_single_url_json_and_the_contact_rule(tmp_path: Path) -> None:
    runner = CliRunner()
    with FakeSite() as site:
        wikihow_site(site)
        result = runner.invoke(
            app,
            [
                "scrape",
                "wikihow",
                "--url",
                f"{W}/Make-Fluffy-Pancakes",
                "--url",
                "Build-a-Floating-Shelf",
                "--base-url",
                site.url,
                "--delay",
                "0",
                "--no-images",
                "--store",
                str(tmp_path / "s"),
                "--json",
            ],
        )
        site.page("/Make-Fluffy-Pancakes", fixture("wikihow/Make-Fluffy-Pancakes.html"))
        retry = runner.invoke(
            app,
            [
                "scrape",
                "wikihow",
                "--url",
                f"{W}/Make-Fluffy-Pancakes",
                "--base-url",
                site.url,
                "--delay",
                "0",
                "--no-images",
                "--store",
                str(tmp_path / "s"),
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["added"] == 1 and out["outcomes"] == {"added": 1, "http_404": 1} and out["http"]["requests"] >= 2
    assert json.loads(retry.stdout)["outcomes"] == {"http_404": 1}  # a 404 is remembered in the cache...
    assert site.hits("/Make-Fluffy-Pancakes") == 1  # ...and not asked again, even by another job
    public = runner.invoke(app, ["scrape", "wikihow", "--url", "Anything", "--store", str(tmp_path / "p")])
    assert public.exit_code == 2 and "--contact" in public.output
    fast = runner.invoke(
        app,
        ["scrape", "wikihow", "--url", "X", "--contact", "a@b.org", "--delay", "0.1", "--store", str(tmp_path / "p")],
    )
    assert fast.exit_code == 2 and "one request per second" in fast.output


def test_cli_runs_a_manifest_against_a_mirror(tmp_path: Path) -> None:
    manifest = tmp_path / "shelves.toml"
    manifest.write_text(
        'version = 1\nname = "shelves"\nsource = "wikihow"\ncategories = ["Shelving"]\n'
        'limit = 10\nimages = false\n[filters]\nmin_steps = 3\nmax_steps = 25\nlanguage = "en"\n',
        encoding="utf-8",
    )
    bad = tmp_path / "bad.toml"
    bad.write_text('source = "wikihow"\ncategories = ["X"]\ncolour = "blue"\n', encoding="utf-8")
    runner = CliRunner()
    with FakeSite() as site:
        wikihow_site(site)
        result = runner.invoke(
            app,
            [
                "scrape",
                str(manifest),
                "--base-url",
                site.url,
                "--delay",
                "0",
                "--limit",
                "1",
                "--store",
                str(tmp_path / "s"),
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 1
    assert Store.open(tmp_path / "s").provenance[-1]["args"]["manifest"] == "shelves"
    failed = runner.invoke(app, ["scrape", str(bad), "--store", str(tmp_path / "s")])
    assert failed.exit_code == 2 and "colour" in failed.output


def test_killed_run_resumes_without_losing_duplicating_or_refetching(tmp_path: Path) -> None:
    records = [
        {
            "id": f"Project-{i:02d}",
            "title": f"How to Finish Project {i}",
            "category": ["Big"],
            "steps": [
                {"title": f"Do part {j} of project {i}.", "text": f"Carefully work on part {j} of it."}
                for j in range(4)
            ],
        }
        for i in range(12)
    ]
    store = tmp_path / "store"
    with FakeSite() as site:
        site.page("/robots.txt", "User-agent: *\nDisallow: /Special:\n", "text/plain")
        members = {"query": {"pages": [{"ns": 0, "title": r["id"], "fullurl": f"{W}/{r['id']}"} for r in records]}}
        site.prefix(
            "/api.php",
            lambda path, h: Reply(
                body=json.dumps(members if "generator" in path else {"query": {}}), content_type="application/json"
            ),
        )
        for record in records:
            site.route(f"/{record['id']}", Reply(body=render_article(record, base=W), delay=0.15))
        site.prefix("/images/", lambda path, h: Reply(body=jpeg((len(path) % 250, 20, 30)), content_type="image/jpeg"))
        command = [
            sys.executable,
            "-m",
            "procbench",
            "scrape",
            "wikihow",
            "-c",
            "Big",
            "--base-url",
            site.url,
            "--delay",
            "0",
            "--batch-size",
            "1",
            "--store",
            str(store),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = store / "procedures.parquet"
            if path.exists() and pq.read_metadata(path).num_rows >= 3:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = len(site.log)
        committed = Store.open(store).table("procedures").num_rows
        assert 3 <= committed < len(records)
        options = ScrapeOptions(
            "wikihow", categories=("Big",), base_url=site.url, http=HttpConfig(min_interval=0.0), batch_size=1
        )
        report = scrape(store, options)
    ids = Store.open(store).table("procedures")["id"].to_pylist()
    assert report.resumed and len(ids) == len(set(ids)) == len(records)
    assert Store.open(store).table("steps").num_rows == 4 * len(records)
    pages = [h.path for h in site.log if h.path.startswith("/Project-")]
    repeated = {p for p in pages if pages.count(p) > 1}
    in_flight = [h.path for h in site.log[:killed_at] if h.path.startswith(("/Project-", "/images/"))][-1:]
    assert repeated <= set(in_flight)  # only a request cut off by the kill itself may be asked again
    images = [h.path for h in site.log if h.path.startswith("/images/")]
    assert {p for p in images if images.count(p) > 1} <= set(in_flight)


JA = {
    "id": "Hondana-wo-Tsukuru",
    "title": "本棚を作る方法",
    "category": ["趣味と工芸"],
    "steps": [{"title": f"手順{i}。", "text": f"板を{i}枚に切り、やすりをかけます。"} for i in range(1, 5)],
}


def ja_api(path: str, headers: dict[str, str]) -> Reply:
    q = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
    if q.get("generator") == "categorymembers" and q["gcmtitle"] == "Category:Kougei":
        pages = [{"ns": 0, "title": "Hondana wo Tsukuru", "pageid": 1}]  # no fullurl: built on the edition
        return Reply(body=json.dumps({"query": {"pages": pages}}), content_type="application/json")
    return Reply(body=json.dumps({"query": {"categorymembers": []}}), content_type="application/json")


def test_language_keeps_other_wikihow_editions(tmp_path: Path) -> None:
    from procbench.scrape.wikihow import edition_base, edition_language

    assert edition_base("ja") == "https://www.wikihow.jp" and edition_base("de") == "https://de.wikihow.com"
    assert edition_base(None) == W and edition_language("https://ja.wikihow.com/X") == "ja"
    assert edition_language(f"{W}/X") == "en" and edition_language("https://example.org/X") is None
    page = render_article(JA, base="https://www.wikihow.jp").replace('lang="en"', 'lang="ja"')
    runner = CliRunner()
    url = "https://www.wikihow.jp/Hondana-wo-Tsukuru"

    def run(store: str, *args: str, json_out: bool = True) -> object:
        base = ["scrape", "wikihow", *args, "--base-url", site.url, "--delay", "0", "--store", str(tmp_path / store)]
        return runner.invoke(app, [*base, "--json"] if json_out else base)

    with FakeSite() as site:
        site.page("/robots.txt", "User-agent: *\nDisallow: /Special:\n", "text/plain")
        site.page("/Hondana-wo-Tsukuru", page)
        site.prefix("/api.php", ja_api)
        english = run("en", "--url", url, json_out=False)
        assert english.exit_code == 0, english.output
        assert "filtered_language=1" in english.stdout and "--language any" in english.stdout
        assert Store.open(tmp_path / "en").table("procedures").num_rows == 0
        kept = run("ja", "--url", url, "--language", "ja")
        assert kept.exit_code == 0, kept.output
        assert json.loads(kept.stdout)["outcomes"] == {"added": 1}
        anything = run("any", "--url", url, "--language", "any")
        assert json.loads(anything.stdout)["outcomes"] == {"added": 1}
        listed = run("cat", "-c", "Kougei", "--language", "ja")
        assert listed.exit_code == 0, listed.output
        assert json.loads(listed.stdout)["outcomes"] == {"added": 1}
        unknown = run("x", "--url", url, "--language", "xx")
        assert unknown.exit_code == 2 and "no 'xx' edition" in unknown.stderr
        garbled = run("x", "--url", url, "--language", "japanese!")
        assert garbled.exit_code == 2 and "ISO 639-1" in garbled.stderr
    for store in ("ja", "any", "cat"):
        row = Store.open(tmp_path / store).table("procedures").to_pylist()[0]
        assert (row["id"], row["language"], row["url"]) == ("wikihow:ja/Hondana-wo-Tsukuru", "ja", url)
        assert row["title"] == "本棚を作る方法"
