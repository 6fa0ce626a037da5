"""The ``procbench`` command line: a thin Typer layer over the library (one module per command)."""

from __future__ import annotations

import errno
import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer
from typer.core import TyperGroup

from procbench import __version__
from procbench.errors import ProcbenchError

__all__ = ["app", "main"]

P = ParamSpec("P")
R = TypeVar("R")


def _click_exception(name: str) -> type[Exception]:
    """Click's exception class ``name``, as typer raises it (recent typers bundle their own click)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


_UsageError = _click_exception("UsageError")
_ClickException = _click_exception("ClickException")


class _OneLineUsageErrors(TyperGroup):
    """Usage errors (a bad option value, an unknown option) are one line and exit 2, like every bad input.

    Click's standalone handling is done here instead of inside click, so that its boxed usage message
    becomes one line; everything else (help, --version, exit codes, Ctrl-C) behaves as click's.
    """

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        from procbench.cli._console import error

        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _ClickException as exc:
            if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if isinstance(exc, _UsageError) and ctx else ""
                error(" ".join(exc.format_message().split()) + hint)  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        except typer.Abort:
            error("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=_OneLineUsageErrors,
    name="procbench",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    help="Build, debias, audit and score procedural multimodal comprehension benchmarks.\n\n"
    "Pipeline: ingest/scrape -> clean -> embed -> generate -> audit -> train/evaluate. Every command reads "
    "and writes one store directory (--store, or env PROCBENCH_STORE). Try `procbench demo` first.",
)


#: OSErrors about a path the user gave rather than about procbench's work.
_PATH_ERRNOS = frozenset({errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP})


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
        except OSError as exc:
            if exc.errno not in _PATH_ERRNOS or exc.filename is None:
                raise
            from procbench.cli._console import error

            # a path given that cannot be used as asked (a file where a folder goes, a read-only file system)
            error(f"{exc.filename}: {exc.strerror}")
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
    "packet",
    "score-packet",
    "info",
    "layout",
    "demo",
    "sample-site",
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
