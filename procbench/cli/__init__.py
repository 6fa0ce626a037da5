"""The ``procbench`` command line: a thin Typer layer over the library (one module per command)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from procbench import __version__
from procbench.errors import ProcbenchError

__all__ = ["app", "main"]

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="procbench",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    help="Build, debias, audit and score procedural multimodal comprehension benchmarks.\n\n"
    "Pipeline: ingest/scrape -> clean -> embed -> generate -> audit -> train/evaluate. Every command reads "
    "and writes one store directory (--store, or env PROCBENCH_STORE). Try `procbench demo` first.",
)


def _one_line_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn procbench errors into one line on stderr and their exit code (2 bad input, 1 failure)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ProcbenchError as exc:
            from procbench.cli._console import error

            error(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except PermissionError as exc:  # an unwritable --out, --plots or store: the user's to fix
            from procbench.cli._console import error

            error(f"permission denied: {exc.filename or exc}")
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            from procbench.cli._console import error

            error("interrupted; the store keeps its last committed state")
            raise typer.Exit(130) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"procbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    pass


# One module per command under procbench/cli/, each defining NAME and a `command` function. The order
# here is the order of `procbench --help`.
_COMMANDS = [
    "scrape",
    "ingest",
    "fetch-images",
    "clean",
    "extract",
    "embed",
    "generate",
    "audit",
    "filter",
    "train",
    "evaluate",
    "evaluate_extraction",
    "export",
    "report",
    "info",
    "demo",
]


def _register() -> None:
    import importlib

    from procbench.cli._help import HelpCommand

    for name in _COMMANDS:
        module = importlib.import_module(f"procbench.cli.{name.replace('-', '_')}")
        app.command(module.NAME, help=module.command.__doc__, cls=HelpCommand)(_one_line_errors(module.command))


_register()


def main() -> None:
    """Console-script entry point."""
    app()
