from __future__ import annotations

from typing import Annotated, Any

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "fetch-images"


def command(
    limit: Annotated[int | None, typer.Option(help="Fetch at most this many images in this run.", min=1)] = None,
    delay: Annotated[
        float,
        typer.Option(
            help="Seconds between requests to one host (robots.txt Crawl-delay wins when longer; at least 1 "
            "for public hosts).",
            min=0.0,
        ),
    ] = 1.0,
    contact: Annotated[
        str | None,
        typer.Option(
            envvar="PROCBENCH_CONTACT",
            help="E-mail or URL where image hosts' operators can reach you; sent in the User-Agent "
            "(required for public hosts).",
        ),
    ] = None,
    max_bytes: Annotated[
        int, typer.Option(help="Largest image body accepted, in bytes (larger ones fail).", min=1)
    ] = 10 * 2**20,
    max_image_side: Annotated[int, typer.Option(help="Longest side of stored images, in pixels.", min=16)] = 512,
    batch_size: Annotated[int, typer.Option(help="Images committed to the store per transaction.", min=1)] = 200,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Download the image URLs the store records but has not stored (e.g. after `ingest`).

    Through the scraper's polite HTTP layer: robots.txt obeyed, one request per --delay seconds per host,
    retries with backoff only on 429/5xx/timeouts, a size cap. Each image is verified and normalised with
    Pillow, stored by content hash under STORE/images/, and its id updated in images.parquet and the steps.
    Resumable: re-run after an interruption (even kill -9) and it fetches nothing twice.
    """
    from procbench.cli._console import console, err_console, print_json, progress_bar
    from procbench.scrape.fetch_images import fetch_images
    from procbench.scrape.http import HttpConfig

    config = HttpConfig(contact=contact, min_interval=delay, max_bytes=max_bytes)
    with progress_bar() as progress:
        report = fetch_images(
            store,
            limit=limit,
            http=config,
            max_image_side=max_image_side,
            batch_size=batch_size,
            progress=progress,
        )
    if json:
        print_json(report.to_dict())
        return
    for url, why in report.failures[:20]:
        err_console.print(f"[yellow]image failed[/] {url}: {why}", highlight=False, soft_wrap=True)
    if report.hosts:
        _render_hosts(console, report)
    console.print(
        f"[bold green]fetched[/] {report.stored} of {report.pending} recorded image URLs into {store} "
        f"({report.merged} were images already stored, {report.failed} failed, {report.remaining} remaining"
        + (f", {report.not_fetchable} references are not http(s) URLs" if report.not_fetchable else "")
        + f"; http: {report.http.get('requests', 0)} requests, {report.http.get('from_cache', 0)} from cache)",
        highlight=False,
    )


def _render_hosts(console: Any, report: Any) -> None:
    from rich.table import Table

    table = Table(
        "host",
        "stored",
        "from cache",
        "failed",
        "disallowed",
        "not attempted",
        "why",
        title="Per host",
        title_justify="left",
    )
    for host in sorted(report.hosts.values(), key=lambda h: h.host):
        why = host.stopped or ", ".join(f"{k}: {v}" for k, v in host.errors.most_common(3))
        table.add_row(
            host.host,
            str(host.stored),
            str(host.from_cache),
            str(host.failed),
            str(host.disallowed),
            str(host.not_attempted),
            why,
        )
    console.print(table)
