from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from procbench.cli._options import DEFAULT_STORE, JsonOption, StoreOption

NAME = "scrape"


def command(
    target: Annotated[
        str, typer.Argument(help="wikihow, instructables, zim, or a manifest file (.toml).", show_default=False)
    ],
    file: Annotated[
        Path | None, typer.Argument(help="The .zim archive (with `zim` only).", show_default=False)
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            "-c",
            help="Category to crawl (repeatable). "
            "wikiHow: a category name (Woodworking); Instructables: CATEGORY or CATEGORY/CHANNEL "
            "(workshop/furniture).",
        ),
    ] = None,
    url: Annotated[list[str] | None, typer.Option("--url", "-u", help="A single page to scrape (repeatable).")] = None,
    limit: Annotated[
        int | None, typer.Option(help="Stop after adding this many procedures (over all runs of the same job).", min=1)
    ] = None,
    limit_per_category: Annotated[
        int | None, typer.Option(help="At most this many procedures per category.", min=1)
    ] = None,
    sort: Annotated[
        str | None,
        typer.Option(help="Listing order where the site offers one (Instructables: popular, recent, favorites)."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help="Send every request of the source (pages, APIs, images) to this mirror instead."
        ),
    ] = None,
    images: Annotated[bool, typer.Option("--images/--no-images", help="Download step images.")] = True,
    max_image_side: Annotated[int, typer.Option(help="Longest side of stored images, in pixels.", min=16)] = 512,
    contact: Annotated[
        str | None,
        typer.Option(
            envvar="PROCBENCH_CONTACT",
            help="E-mail or URL where site operators "
            "can reach you; sent in the User-Agent (required for public sites).",
        ),
    ] = None,
    user_agent: Annotated[str | None, typer.Option(help="Replace the whole User-Agent header.")] = None,
    delay: Annotated[
        float,
        typer.Option(
            help="Seconds between requests to one host (robots.txt Crawl-delay wins "
            "when longer; at least 1 for public sites).",
            min=0.0,
        ),
    ] = 1.0,
    language: Annotated[
        str,
        typer.Option(
            "--language",
            help="Keep procedures in this language (ISO 639-1 code), or 'any'. wikiHow categories are listed "
            "on that language's edition (ja: www.wikihow.jp, de: de.wikihow.com, ...). A manifest sets "
            "[scrape.filters] language instead.",
        ),
    ] = "en",
    min_steps: Annotated[int, typer.Option(help="Drop procedures with fewer steps.", min=1)] = 3,
    max_steps: Annotated[int, typer.Option(help="Drop procedures with more steps.", min=1)] = 25,
    batch_size: Annotated[int, typer.Option(help="Procedures committed to the store per transaction.", min=1)] = 10,
    store: StoreOption = DEFAULT_STORE,
    json: JsonOption = False,
) -> None:
    """Scrape procedures and step images from wikiHow or Instructables (or a wikiHow ZIM) into the store.

    Polite by default: robots.txt obeyed, one request per second per host, retries with backoff only on
    429/5xx/timeouts, every response cached under STORE/cache/. Resumable: re-run the same command after
    an interruption (even kill -9) and it continues where it stopped, fetching nothing twice.
    """
    from dataclasses import replace

    from procbench.cli._console import console, err_console, print_json, progress_bar
    from procbench.errors import BadInput
    from procbench.manifest import load_manifest
    from procbench.scrape import Filters, HttpConfig, ScrapeOptions, ZimOptions, scrape, scrape_zim

    http = HttpConfig(contact=contact, user_agent=user_agent, min_interval=delay)
    code = language.strip().lower()
    if not code.isalpha() or len(code) not in (2, 3):
        raise BadInput(f"--language takes an ISO 639-1 code (en, ja, de, ...) or 'any', not {language!r}")
    filters = Filters(min_steps=min_steps, max_steps=max_steps, language=None if code == "any" else code)
    with progress_bar() as progress:
        if target == "zim":
            if file is None:
                raise BadInput("give the archive: procbench scrape zim FILE.zim")
            report = scrape_zim(
                store,
                file,
                ZimOptions(
                    categories=tuple(category or ()),
                    limit=limit,
                    images=images,
                    max_image_side=max_image_side,
                    filters=filters,
                ),
                progress=progress,
            )
        elif target.endswith(".toml") or Path(target).is_file():
            options = load_manifest(target).scrape_options(
                http=http, limit=limit, base_url=base_url, sort=sort, limit_per_category=limit_per_category
            )
            if not images:
                options = replace(options, images=False)
            report = scrape(store, options, progress=progress)
        else:
            if file is not None:
                raise BadInput(f"unexpected argument {file} (only `zim` takes a file)")
            options = ScrapeOptions(
                source=target,
                categories=tuple(category or ()),
                urls=tuple(url or ()),
                limit=limit,
                limit_per_category=limit_per_category,
                sort=sort,
                images=images,
                max_image_side=max_image_side,
                base_url=base_url,
                filters=filters,
                batch_size=batch_size,
                http=http,
            )
            report = scrape(store, options, progress=progress)
    if json:
        print_json(report.to_dict())
        return
    for page, why in report.failures[:20]:
        err_console.print(f"[yellow]skipped[/] {page}: {why}", highlight=False, soft_wrap=True)
    for where, why in report.listing_errors[:20]:
        err_console.print(f"[yellow]listing failed[/] {where or 'URLs'}: {why}", highlight=False, soft_wrap=True)
    for ref, why in report.image_failures[:20]:
        err_console.print(f"[yellow]image skipped[/] {ref}: {why}", highlight=False, soft_wrap=True)
    counts = report.counts()
    dropped = ", ".join(f"{k}={v}" for k, v in counts["outcomes"].items() if k != "added") or "none"
    if counts["outcomes"].get("filtered_language"):
        dropped += " (other languages: --language CODE or --language any keeps them)"
    http_line = ""
    if report.http:
        h = report.http
        http_line = (
            f"; http: {h['requests']} requests, {h['from_cache']} from cache, {h['retries']} retries, "
            f"{h['robots_disallowed']} disallowed by robots.txt"
        )
    console.print(
        f"[bold green]scraped[/] {counts['added']} procedures from {report.source} into {store} "
        f"({'resumed' if report.resumed else 'new'} job {report.job}; {counts['skipped_done']} already handled; "
        f"other outcomes: {dropped}; images: {counts['images_stored']} stored, {counts['images_remote']} by URL, "
        f"{counts['images_failed']} failed{http_line})",
        highlight=False,
    )
