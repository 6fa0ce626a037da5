"""MkDocs hook: pages generated at build time, so they cannot drift from what they document.

- ``reference/cli.md``: the command-line reference, Typer's own ``typer procbench.cli utils docs`` output for the
  installed app (every command, argument, option and default);
- ``changelog.md``: ``CHANGELOG.md`` at the repository root.

It also turns a page's link to a repository file outside ``docs/`` (``../benchmarks/NAME.md``) into the file's
path as text: the site is built from ``docs/`` alone, so such a file has no page to link to.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)\)")
_CODE = re.compile(r"(`[^`]*`)")


def _escape_brackets(line: str) -> str:
    """``[`` and ``]`` outside inline code as literal text: Typer's help says ``[--rounds R] [--ceiling S]``,
    which Markdown would read as a reference link."""
    parts = _CODE.split(line)
    return "".join(p if p.startswith("`") else p.replace("[", "\\[").replace("]", "\\]") for p in parts)


def _markdown_text(markdown: str) -> str:
    """Escape brackets on every line outside fenced code blocks."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append(line if fenced else _escape_brackets(line))
    return "\n".join(lines) + "\n"


def cli_reference() -> str:
    """The CLI reference as Markdown, from the Typer app (``python -m typer procbench.cli utils docs``)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "typer",
            "procbench.cli",
            "utils",
            "docs",
            "--name",
            "procbench",
            "--title",
            "Command-line reference",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    intro = (
        "\n\nGenerated from the Typer app at build time (`python -m typer procbench.cli utils docs`); "
        "`procbench COMMAND --help` prints the same. [Commands at a glance](commands.md) has one line each.\n"
    )
    title, _, rest = out.partition("\n")
    return title + intro + _markdown_text(rest)


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages to the build."""
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "changelog.md", content=(ROOT / "CHANGELOG.md").read_text(encoding="utf-8")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links that leave ``docs/`` for a file of the repository become that file's path as text."""
    here = (DOCS / page.file.src_uri).parent

    def outside(match: re.Match[str]) -> str:
        target = (here / match.group(2)).resolve()
        inside_docs = target.is_relative_to(DOCS)
        return match.group(0) if inside_docs or not target.is_relative_to(ROOT) else match.group(1)

    return _LINK.sub(outside, markdown)
