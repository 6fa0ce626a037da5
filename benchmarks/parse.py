"""Parser throughput (pages/s on one core) and rate-limiter accuracy of `procbench scrape`.

Run: .venv/bin/python benchmarks/parse.py

* Parsers: the fixture pages of tests/fixtures/, as they are (small) and padded to the weight of real
  pages (~250 KB of inline CSS/JS, navigation, related articles and comments around the same content).
  Target: at least 50 pages/s per core.
* Rate limiter: 20 real requests to a local server with a 0.2 s interval; reports how far the measured
  spacing between request starts is from the configured one.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from procbench.scrape.http import HttpClient, HttpConfig
from procbench.scrape.instructables import parse_model_json, parse_project_html
from procbench.scrape.wikihow import parse_article_html

from _common import ROOT

FIX = ROOT / "tests" / "fixtures"


def _pad(page: bytes, target: int = 250_000) -> bytes:
    css = b"<style>" + b".c{color:#123;margin:0 auto;padding:4px}" * 1200 + b"</style>"
    js = b"<script>" + b"window.WH=window.WH||{};WH.x=function(a){return a+1};" * 1200 + b"</script>"
    block = b"<div class='related-wh'><a href='/Other-%d'><p>How to Do Other Thing %d</p></a></div>"
    related = b"".join(block % (i, i) for i in range(300))
    filler = css + js + b"<div id='sidebar'>" + related + b"</div>"
    while len(page) + len(filler) < target:
        filler += related
    return page.replace(b"</head>", css + js + b"</head>", 1).replace(b"</body>", filler + b"</body>", 1)


def _rate(fn, pages: list[bytes], seconds: float = 2.0) -> tuple[float, int]:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for page in pages:
            fn(page)
            done += 1
    return done / (time.perf_counter() - start), sum(len(p) for p in pages) // len(pages)


def parsers() -> dict[str, dict[str, float]]:
    wiki = [
        (FIX / "wikihow" / f"{n}.html").read_bytes()
        for n in ("Build-a-Floating-Shelf", "Decorate-a-Mantel-for-Christmas", "Make-Fluffy-Pancakes")
    ]
    ible = [
        (FIX / "instructables" / f"{n}.html").read_bytes() for n in ("Pallet-Wood-Workbench", "String-Art-Coasters")
    ]
    model = json.loads((FIX / "instructables" / "model-Pallet-Wood-Workbench.json").read_text())
    cases = {
        "wikihow html (fixture)": (lambda p: parse_article_html(p, "https://www.wikihow.com/X"), wiki),
        "wikihow html (padded to real weight)": (
            lambda p: parse_article_html(p, "https://www.wikihow.com/X"),
            [_pad(p) for p in wiki],
        ),
        "instructables html (fixture)": (lambda p: parse_project_html(p, "https://www.instructables.com/X/"), ible),
        "instructables html (padded)": (
            lambda p: parse_project_html(p, "https://www.instructables.com/X/"),
            [_pad(p) for p in ible],
        ),
        "instructables json api": (lambda p: parse_model_json(json.loads(p)), [json.dumps(model).encode()]),
    }
    out = {}
    for name, (fn, pages) in cases.items():
        rate, size = _rate(fn, pages)
        out[name] = {"pages_per_s_per_core": round(rate, 1), "avg_kb": round(size / 1024, 1)}
    return out


def rate_limiter(n: int = 20, interval: float = 0.2) -> dict[str, float]:
    arrivals: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            arrivals.append(time.monotonic())
            body = b"User-agent: *\nDisallow:\n" if self.path == "/robots.txt" else b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    client = HttpClient(HttpConfig(min_interval=interval), domains=("127.0.0.1",))
    for i in range(n):
        client.get(f"{base}/page/{i}")
    server.shutdown()
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    errors = [g - interval for g in gaps]
    return {
        "configured_s": interval,
        "requests": len(arrivals),
        "mean_gap_s": round(statistics.mean(gaps), 4),
        "mean_error_ms": round(1000 * statistics.mean(errors), 2),
        "max_error_ms": round(1000 * max(errors), 2),
        "min_gap_s": round(min(gaps), 4),
        "never_faster": min(gaps) >= interval,
    }


def main() -> None:
    results = {"parsers": parsers(), "rate_limiter": rate_limiter()}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
