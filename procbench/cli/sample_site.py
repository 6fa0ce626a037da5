from __future__ import annotations

from typing import Annotated

import typer

from procbench.cli._options import SeedOption

NAME = "sample-site"


def command(
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free port).", min=0, max=65535)
    ] = 8765,
    seed: SeedOption = 0,
    duration: Annotated[
        float | None,
        typer.Option("--for", help="Stop after this many seconds (default: until Ctrl-C).", min=0.0),
    ] = None,
) -> None:
    """Serve the bundled sample corpus as a wikiHow-like site on 127.0.0.1, to try the scraper offline.

    45 team-written How-To procedures (woodworking, decoration, cooking) with generated step images, served
    with wikiHow's article markup, category pages and MediaWiki API. It prints the address to pass as
    --base-url; in another shell:

        procbench scrape wikihow --base-url http://127.0.0.1:8765 -c Woodworking --limit 3 --delay 0

    The scraper takes the mirror for wikiHow, so the procedures it stores carry wikihow: ids and www.wikihow.com
    URLs that do not exist there: scrape into a store of its own (--store). Only this machine can reach the
    site. Stop it with Ctrl-C (or --for SECONDS).
    """
    import time

    from procbench.cli._console import console
    from procbench.scrape.sample_site import serve_sample_site

    with serve_sample_site(seed=seed, port=port) as site:
        categories = ", ".join(site.top_categories)
        console.print(f"sample site: {site.url}", highlight=False, soft_wrap=True)
        console.print(f"categories: {categories} (and their subcategories, e.g. Woodworking)", highlight=False)
        console.print(
            f"try: procbench scrape wikihow --base-url {site.url} -c Woodworking --limit 3 --delay 0 "
            "--store sample-store",
            highlight=False,
            soft_wrap=True,
        )
        console.file.flush()
        try:
            if duration is not None:
                time.sleep(duration)
            else:
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)
