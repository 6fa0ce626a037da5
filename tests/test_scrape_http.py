"""The polite HTTP layer against a local fault-injecting server (fake clock: no real waiting)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.scrape_site import FakeClock, FakeSite, Reply

from procbench.errors import Blocked, Disallowed, FetchError, RateLimited
from procbench.scrape.cache import ResponseCache
from procbench.scrape.http import HttpClient, HttpConfig, Mirror, ResponseTooLarge

W = "https://www.wikihow.com"
ROBOTS = (
    "User-agent: *\nDisallow: /Special:\nDisallow: /*action=history\nAllow: /Special:CategoryListing\nCrawl-delay: 3\n"
)


def client(site: FakeSite, tmp_path: Path, clock: FakeClock, **config: object) -> HttpClient:
    settings = {"contact": "bench@example.org", "min_interval": 1.0, "read_timeout": 5.0, **config}
    return HttpClient(
        HttpConfig(**settings),
        domains=("wikihow.com",),
        cache=ResponseCache(tmp_path / "cache"),
        mirror=Mirror(site.url, ("wikihow.com",)),
        clock=clock,
        soft_block=(b"If you are a web crawler or bot",),
    )


def test_robots_disallow_and_crawl_delay_are_obeyed(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.page("/robots.txt", ROBOTS, "text/plain")
        for path in ("/A", "/B", "/Special:CategoryListing"):
            site.page(path, f"<html>{path}</html>")
        http = client(site, tmp_path, clock)
        assert http.get(f"{W}/A").text() == "<html>/A</html>"
        with pytest.raises(Disallowed):
            http.get(f"{W}/Special:Randomizer")
        with pytest.raises(Disallowed):
            http.get(f"{W}/Some-Article?action=history")  # wildcard rule
        http.get(f"{W}/B")
        http.get(f"{W}/Special:CategoryListing")  # longest match: the Allow wins
    paths = [h.path for h in site.log]
    assert paths == ["/robots.txt", "/A", "/B", "/Special:CategoryListing"]
    times = [h.time for h in site.log]
    # Crawl-delay 3 > 1 s default, from the first request after robots.txt on
    assert all(b - a >= 3.0 for a, b in zip(times, times[1:], strict=False))
    assert http.stats.robots_disallowed == 2
    ua = site.log[1].headers["user-agent"]
    assert ua.startswith("procbench/") and "bench@example.org" in ua
    assert site.log[1].headers["from"] == "bench@example.org"


def test_default_spacing_is_one_request_per_second_per_host_for_all_kinds(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.page("/P", "page")
        site.json("/api.php?action=query", {"ok": True})
        site.route("/images/a.jpg", Reply(body=b"img", content_type="image/jpeg"))
        http = client(site, tmp_path, clock)
        http.get(f"{W}/P")
        http.get(f"{W}/api.php?action=query", kind="api")
        http.get(f"{W}/images/a.jpg", kind="image")
    times = [h.time for h in site.log]
    assert [round(b - a, 6) for a, b in zip(times, times[1:], strict=False)] == [1.0, 1.0, 1.0]


def test_429_retry_after_is_honoured_and_repeated_429s_pause_everything(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.page("/robots.txt", "User-agent: *\nDisallow:\n", "text/plain")
        site.route("/A", Reply(status=429, headers={"Retry-After": "120"}), Reply(body="ok"))
        site.route("/B", Reply(status=429), Reply(status=429), Reply(status=429), Reply(body="finally"))
        http = client(site, tmp_path, clock, pause_after_429s=3, pause_seconds=900.0)
        assert http.get(f"{W}/A").text() == "ok"
        a_times = [h.time for h in site.log if h.path == "/A"]
        assert a_times[1] - a_times[0] >= 120.0
        assert http.get(f"{W}/B").text() == "finally"
    b_times = [h.time for h in site.log if h.path == "/B"]
    assert b_times[3] - b_times[2] >= 900.0  # the global pause after the third 429 in a row
    assert http.stats.global_pauses == 1 and http.stats.status_429 == 4


def test_429s_that_never_stop_raise_rate_limited(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/A", Reply(status=429, headers={"Retry-After": "5"}))
        http = client(site, tmp_path, clock, max_retries=2)
        with pytest.raises(RateLimited):
            http.get(f"{W}/A")
    assert site.hits("/A") == 3


def test_server_errors_are_retried_with_backoff_but_404_and_403_fail_fast(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/flaky", Reply(status=500), Reply(status=503), Reply(body="up"))
        site.route("/gone", Reply(status=404))
        site.route("/secret", Reply(status=403))
        http = client(site, tmp_path, clock, backoff_base=2.0)
        assert http.get(f"{W}/flaky").text() == "up"
        flaky = [h.time for h in site.log if h.path == "/flaky"]
        assert 1.0 <= flaky[1] - flaky[0] <= 2.0 and 2.0 <= flaky[2] - flaky[1] <= 4.0  # 2**n with jitter
        with pytest.raises(FetchError) as gone:
            http.get(f"{W}/gone")
        assert gone.value.permanent and gone.value.status == 404
        with pytest.raises(Blocked):
            http.get(f"{W}/secret")
        with pytest.raises(FetchError):
            http.get(f"{W}/gone")  # remembered: not asked again
    assert site.hits("/gone") == 1 and site.hits("/secret") == 1 and http.stats.retries == 2


def test_connection_resets_and_slow_responses_are_retried(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/reset", Reply(reset=True), Reply(body="after reset"))
        site.route("/slow", Reply(body="late", delay=0.6), Reply(body="fast"))
        http = client(site, tmp_path, clock, read_timeout=0.2)
        assert http.get(f"{W}/reset").text() == "after reset"
        assert http.get(f"{W}/slow").text() == "fast"
    assert site.hits("/reset") == 2 and site.hits("/slow") == 2


def test_redirects_stay_within_the_source_domain(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site, FakeSite(clock) as other:
        site.route("/robots.txt", Reply(status=404))
        site.route("/Old-Title", Reply(status=301, headers={"Location": "/New-Title"}))
        site.page("/New-Title", "new")
        site.route("/Away", Reply(status=302, headers={"Location": f"{other.url}/elsewhere"}))
        site.route("/Loop", Reply(status=302, headers={"Location": "/Loop"}))
        other.page("/elsewhere", "must not be fetched")
        http = client(site, tmp_path, clock)
        moved = http.get(f"{W}/Old-Title")
        assert moved.text() == "new" and moved.final_url == f"{W}/New-Title"
        with pytest.raises(Disallowed):
            http.get(f"{W}/Away")
        with pytest.raises(FetchError):
            http.get(f"{W}/Loop")
    assert other.log == [] and http.stats.redirects_refused == 1


def test_oversized_bodies_are_cut_off_and_remembered(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/big", Reply(body=b"x" * 5000))
        site.route("/stream", Reply(chunked_bytes=10 * 65536))
        http = client(site, tmp_path, clock, max_bytes=4096)
        with pytest.raises(ResponseTooLarge):
            http.get(f"{W}/big")
        with pytest.raises(ResponseTooLarge):
            http.get(f"{W}/stream")
        with pytest.raises(FetchError):
            http.get(f"{W}/big")
    assert site.hits("/big") == 1 and site.hits("/stream") == 1


def test_soft_block_pages_count_as_rate_limiting(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route(
            "/A",
            Reply(body="If you are a web crawler or bot, 0100100001100101011011000110110001101111!"),
            Reply(body="article"),
        )
        http = client(site, tmp_path, clock)
        assert http.get(f"{W}/A").text() == "article"
    assert http.stats.status_429 == 1


def test_responses_are_cached_and_never_fetched_twice(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.page("/A", "cached body")
        first = client(site, tmp_path, clock).get(f"{W}/A")
        again = client(site, tmp_path, clock).get(f"{W}/A")
    assert first.body == again.body == b"cached body" and site.hits("/A") == 1


def test_only_http_urls_and_unreachable_robots_blocks_the_host(tmp_path: Path) -> None:
    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=503))
        site.page("/A", "never")
        http = client(site, tmp_path, clock, max_retries=1)
        with pytest.raises(FetchError):
            http.get("ftp://www.wikihow.com/file")
        with pytest.raises(FetchError) as caught:
            http.get(f"{W}/A")
    # RFC 9309: an unreachable robots.txt means "full disallow for now", not a verdict on the page
    assert not caught.value.permanent and not isinstance(caught.value, Disallowed)
    assert "for now" in str(caught.value)
    assert site.hits("/A") == 0 and http.stats.robots_unavailable == 1


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_trickled_answer_is_cut_off_at_the_deadline(tmp_path: Path, where: str) -> None:
    """A server sending one byte at a time defeats the read timeout; the total deadline still ends it."""
    import time

    clock = FakeClock()
    body = "x" * 400
    trickle = Reply(body=body, trickle=0.05) if where == "body" else Reply(body=body, trickle_headers=0.05)
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/slow", trickle)
        http = client(site, tmp_path, clock, max_seconds=1.0, read_timeout=2.0, max_retries=3)
        started = time.monotonic()
        with pytest.raises(FetchError, match="no complete answer within 1 s") as caught:
            http.get(f"{W}/slow")
        elapsed = time.monotonic() - started
    assert elapsed < 4.0 and not caught.value.permanent
    assert site.hits("/slow") == 1  # not retried in this run: another try would only wait as long again
    assert http.cache is not None and http.cache.get(f"{W}/slow") is None  # nor remembered


def test_unusable_answers_are_parse_errors_and_not_trusted_from_the_cache(tmp_path: Path) -> None:
    from procbench.errors import ParseError

    clock = FakeClock()
    with FakeSite(clock) as site:
        site.route("/robots.txt", Reply(status=404))
        site.route("/api", Reply(body='{"ns": null}', content_type="application/json"), Reply(body='{"ok": 1}'))
        http = client(site, tmp_path, clock)
        with pytest.raises(ParseError, match="unusable answer"):
            http.get_json(f"{W}/api", lambda data: int(data["ns"]))
        assert http.get_json(f"{W}/api", lambda data: int(data["ok"])) == 1  # asked again, not cached
    assert site.hits("/api") == 2
