"""No function in procbench is over 120 lines (issue 31), apart from the CLI's option declarations.

A function's size is read from the source, not run: ``end_lineno - lineno + 1`` of its ``def`` (decorators
not counted; a nested function counts inside its parent and on its own). A CLI command (a function named
``command`` in ``procbench/cli/``) is mostly its typer option declarations, one parameter each, so it is
exempt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import procbench

MAX_LINES = 120
_ROOT = Path(procbench.__file__).resolve().parent


def long_functions(package: Path, max_lines: int = MAX_LINES) -> list[tuple[str, str, int, int]]:
    """``(file, function, line, lines)`` of every function of the package at ``package`` over ``max_lines``
    lines, CLI commands left out; files are named from the package's parent (``procbench/...``)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package.parent).as_posix()
        in_cli = path.relative_to(package).parts[0] == "cli"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > max_lines and not (in_cli and node.name == "command"):
                found.append((name, node.name, node.lineno, lines))
    return found


def test_no_function_is_over_120_lines() -> None:
    offenders = long_functions(_ROOT)
    listed = "\n".join(f"  {file}:{line} {function} ({lines} lines)" for file, function, line, lines in offenders)
    assert not offenders, (
        f"functions over {MAX_LINES} lines; split each into helpers with one job (the stage it performs):\n{listed}"
    )


def test_the_check_finds_a_long_function_and_spares_cli_commands(tmp_path: Path) -> None:
    package = tmp_path / "procbench"
    (package / "cli").mkdir(parents=True)

    def function(name: str, lines: int, *, indent: str = "") -> str:
        body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 2))
        return f"{indent}def {name}() -> int:\n{body}{indent}    return 0\n"

    (package / "long.py").write_text(
        function("at_the_limit", MAX_LINES)
        + function("one_over", MAX_LINES + 1)
        + "class Holder:\n"
        + function("method_over", MAX_LINES + 5, indent="    ")
    )
    (package / "cli" / "thing.py").write_text(function("command", 3 * MAX_LINES) + function("helper", MAX_LINES + 1))
    (package / "command.py").write_text(function("command", MAX_LINES + 1))  # exempt only in cli/
    found = {(file, function, lines) for file, function, _, lines in long_functions(package)}
    assert found == {
        ("procbench/long.py", "one_over", MAX_LINES + 1),
        ("procbench/long.py", "method_over", MAX_LINES + 5),
        ("procbench/cli/thing.py", "helper", MAX_LINES + 1),
        ("procbench/command.py", "command", MAX_LINES + 1),
    }
