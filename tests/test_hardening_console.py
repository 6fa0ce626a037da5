"""Hardening: control characters from a store never reach a terminal or a file (issue 34, item 9)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from typer.testing import CliRunner

from procbench.cli import app
from procbench.cli._console import SafeConsole, error
from procbench.ingest import ingest_file

from helpers import make_record, write_jsonl

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x00\u202e"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def test_info_prints_no_escape_sequence_from_names(tmp_path: Path) -> None:
    record = make_record("esc", source=f"evil{ESCAPES}src", category=[f"Cat{ESCAPES}", "Sub"])
    ingest_file(tmp_path / "s", write_jsonl(tmp_path / "in.jsonl", [record]))
    result = CliRunner().invoke(app, ["info", "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "evil" in result.output and "pwned" in result.output  # the text stays, its controls go
    assert not _CONTROL.search(result.output), repr(result.output[:400])


def test_the_console_strips_controls_but_keeps_its_styles() -> None:
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="standard", width=200)
    console.print(f"[bold]name[/] {ESCAPES}x\nnext line", highlight=False)
    text = out.getvalue()
    assert "\x1b[1m" in text  # rich's own bold is kept
    assert "\x1b]0;" not in text and "\x07" not in text and "\x1b[2J" not in text and "\x00" not in text
    assert "pwned[2J[Hx\nnext line" in re.sub(r"\x1b\[[0-9;]*m", "", text)  # the text stays, one ESC each gone


def test_an_error_is_one_line_without_controls(capsys: object) -> None:
    error(f"bad\nthing{ESCAPES}")
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.count("\n") == 1 and not _CONTROL.search(err.rstrip("\n"))
