"""A clone explains itself (issue 38): the README and every command's help stand on their own, without the
files a clone does not have (the project's design notes, its shared data folder), and say what the code does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from procbench.cli import app
from procbench.tasks import TASKS

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")

#: What a clone does not hold: the design notes and the shared data folder beside the repository.
_OUTSIDE = re.compile(r"DESIGN(\.md| §)|\.\./shared")


def _help_texts(command: Any, prefix: str = "procbench") -> dict[str, str]:
    texts = {prefix: " ".join(filter(None, [command.help, *(getattr(p, "help", None) for p in command.params)]))}
    if hasattr(command, "list_commands"):  # a group (typer's own click): ask it for each command, loaded lazily
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                texts |= _help_texts(sub, f"{prefix} {name}")
    return texts


def test_the_readme_names_nothing_a_clone_lacks() -> None:
    assert not [m.group(0) for m in _OUTSIDE.finditer(README)]


def test_no_command_help_names_anything_a_clone_lacks() -> None:
    texts = _help_texts(typer.main.get_command(app))
    assert len(texts) > 20
    assert {name: _OUTSIDE.findall(text) for name, text in texts.items() if _OUTSIDE.search(text)} == {}


def test_the_settings_page_gives_each_task_s_recommended_setting() -> None:
    page = (Path(__file__).parent.parent / "docs" / "concepts" / "settings.md").read_text(encoding="utf-8")
    paragraph = page.split("The recommended setting of each task is", 1)[1].split("\n\n", 1)[0]
    for spec in TASKS.values():
        assert f"`{spec.recommended}`" in paragraph, (spec.name, spec.recommended, paragraph)
