"""Scrapes against fault-injecting servers on 127.0.0.1 end in bounded time, record bad answers as page
failures (never a crash, never trusted from the cache) and treat a robots.txt outage as "try later"
(issue 15, defects 2-4)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fixtures.scrape_site import FakeClock, FakeSite, Reply, fixture

from procbench.scrape import HttpConfig, ScrapeOptions, ScrapeReport, scrape
from procbench.store import Store

W = "https://www.wikihow.com"
HTTP = HttpConfig(contact="bench@example.org", max_bytes=200_000)
ARTICLE = "Build-a-Floating-Shelf"


def bounded(store: Path, options: ScrapeOptions, clock: FakeClock, seconds: float = 60.0) -> ScrapeReport:
    """Scrape in a thread; fail (instead of hanging the suite) when it takes longer than ``seconds``."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["report"] = scrape(store, options, clock=clock)
        except BaseException as exc:  # re-raised on the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the scrape was still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["report"]  # type: ignore[no-any-return]


def ids(store: Path) -> set[str]:
    return set(Store.open(store).table("procedures", ["id"])["id"].to_pylist())


def test_an_api_continue_token_that_never_changes_ends_the_listing(tmp_path: Path) -> None:
    def api(path: str, headers: dict[str, str]) -> Reply:
        q = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        if q.get("generator") == "categorymembers":  # the same page and the same token, forever
            body = {
                "query": {"pages": [{"ns": 0, "title": ARTICLE.replace("-", " "), "fullurl": f"{W}/{ARTICLE}"}]},
                "continue": {"gcmcontinue": "page|same", "continue": "gcmcontinue||"},
            }
        else:
            body = {"query": {"categorymembers": []}}
        return Reply(body=json.dumps(body), content_type="application/json")

    clock = FakeClock()
    with FakeSite(clock) as site:
        site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
        site.prefix("/api.php", api)
        site.page("/Category:Shelving", "<html><body>no articles</body></html>")
        site.page(f"/{ARTICLE}", fixture(f"wikihow/{ARTICLE}.html"))
        options = ScrapeOptions("wikihow", categories=("Shelving",), base_url=site.url, http=HTTP, images=False)
        report = bounded(tmp_path / "s", options, clock)
        again = bounded(tmp_path / "s", options, clock)  # from the cache: still ends
        api_hits = [h.path for h in site.log if h.path.startswith("/api.php") and "generator" in h.path]
    assert report.listing_errors == [] and again.listing_errors == []  # fell back to the category page
    assert len(api_hits) == len(set(api_hits)) == 2  # the first page, then the repeated token once: no loop


@pytest.mark.parametrize(
    "answer",
    [
        {"query": {"pages": [{"ns": None, "title": ARTICLE}]}},
        {"query": {"pages": ["a string where an object belongs"]}},
        {"query": "not an object"},
        ["not", "an", "object"],
    ],
)
def test_a_malformed_wikihow_api_answer_is_no_crash_and_not_cached(tmp_path: Path, answer: Any) -> None:
    healthy = {"query": {"pages": [{"ns": 0, "title": ARTICLE.replace("-", " "), "fullurl": f"{W}/{ARTICLE}"}]}}
    clock = FakeClock()
    options: ScrapeOptions
    for body in (answer, healthy):
        with FakeSite(clock) as site:
            site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
            site.route("/api.php", Reply(body=json.dumps(body), content_type="application/json"))
            site.page(f"/{ARTICLE}", fixture(f"wikihow/{ARTICLE}.html"))
            options = ScrapeOptions(
                "wikihow", categories=("Shelving",), base_url=site.url, http=HTTP, images=False, limit=1
            )
            report = bounded(tmp_path / "s", options, clock)
            if body is answer:
                assert report.added == 0 and report.listing_errors  # recorded (the HTML fallback 404s)
    assert report.added == 1 and ids(tmp_path / "s") == {f"wikihow:{ARTICLE}"}  # re-asked, not cached


def instructables_model(**changes: Any) -> bytes:
    model = json.loads(fixture("instructables/model-Pallet-Wood-Workbench.json"))
    for key, value in changes.items():
        if key == "files":
            model["steps"][0]["files"] = value
        else:
            model[key] = value
    return json.dumps(model).encode("utf-8")


@pytest.mark.parametrize(
    "changes", [{"files": 5}, {"urlString": 5}, {"steps": {"0": "a table, not a list"}}, {"author": "x"}]
)
def test_a_malformed_instructables_answer_is_a_page_failure_and_not_cached(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    clock = FakeClock()
    url = "https://www.instructables.com/Pallet-Wood-Workbench/"
    outcomes = []
    for body, page in ((instructables_model(**changes), Reply(status=500)), (instructables_model(), None)):
        with FakeSite(clock) as site:
            site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
            site.route("/json-api/showInstructableModel", Reply(body=body, content_type="application/json"))
            # the first time the HTML fallback is down too; then the page serves its license button
            site.route(
                "/Pallet-Wood-Workbench/", page or Reply(body=fixture("instructables/Pallet-Wood-Workbench.html"))
            )
            options = ScrapeOptions("instructables", urls=(url,), base_url=site.url, http=HTTP, images=False)
            report = bounded(tmp_path / "s", options, clock)
            outcomes.append((report.added, report.failures))
    assert outcomes[0][0] == 0 and outcomes[0][1]  # a recorded failure, not a crash
    assert outcomes[1][0] == 1 and "instructables:Pallet-Wood-Workbench" in ids(tmp_path / "s")
    steps = Store.open(tmp_path / "s").table("steps", ["procedure_id"]).num_rows
    assert steps > 3  # the healthy API answer was parsed (not the bad one from the cache)


def test_a_robots_txt_outage_leaves_pages_for_the_next_run(tmp_path: Path) -> None:
    clock = FakeClock()
    http = HttpConfig(contact="bench@example.org", max_retries=1)
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=503))
        site.page(f"/{ARTICLE}", fixture(f"wikihow/{ARTICLE}.html"))
        options = ScrapeOptions("wikihow", urls=(f"{W}/{ARTICLE}",), base_url=site.url, http=http, images=False)
        down = bounded(tmp_path / "s", options, clock)
        assert site.hits(f"/{ARTICLE}") == 0
        site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
        up = bounded(tmp_path / "s", options, clock)
    assert down.added == 0 and "robots" not in down.outcomes and down.failures
    assert up.added == 1 and ids(tmp_path / "s") == {f"wikihow:{ARTICLE}"}


def test_a_trickling_page_does_not_stall_the_scrape(tmp_path: Path) -> None:
    clock = FakeClock()
    http = HttpConfig(contact="bench@example.org", max_seconds=1.0, read_timeout=5.0)
    with FakeSite(clock) as site:
        site.page("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
        site.route("/Slow-Article", Reply(body="<html>" + "x" * 2000 + "</html>", trickle=0.05))
        site.page(f"/{ARTICLE}", fixture(f"wikihow/{ARTICLE}.html"))
        urls = (f"{W}/Slow-Article", f"{W}/{ARTICLE}")
        options = ScrapeOptions("wikihow", urls=urls, base_url=site.url, http=http, images=False)
        report = bounded(tmp_path / "s", options, clock, seconds=20)
    assert report.added == 1 and any("no complete answer" in why for _, why in report.failures)
