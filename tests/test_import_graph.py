"""The packages that only read or write question sets import nothing from ``procbench.generate``.

Question sets as data live in :mod:`procbench.qsets`, below ``generate/``; audit, models, export, report,
readers and the card use them there. The imports are read from the source with :mod:`ast` (nothing is
imported): absolute and relative, at module level, under ``if TYPE_CHECKING:`` and inside functions alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import procbench

_ROOT = Path(procbench.__file__).resolve().parent
#: Packages that must not import ``procbench.generate`` (the sets they need are in ``procbench.qsets``).
BELOW_GENERATE = ("audit", "models", "export", "report", "readers", "card", "qsets")
_GENERATE = "procbench.generate"


def generate_imports(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, imported module)`` of every import of ``procbench.generate`` (or a module below it) in
    ``source``, the text of ``module`` (dotted name; ``is_package``: it is that package's ``__init__``)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        hits = [t for t in targets if t == _GENERATE or t.startswith(_GENERATE + ".")]
        if hits:
            found.append((node.lineno, min(hits, key=len)))
    return found


def test_finder_sees_every_kind_of_import() -> None:
    source = """
import procbench.generate.visual as visual
from procbench.generate import generate
from procbench import generate as gen
from ..generate.columns import x
from . import generate
from procbench.generated_elsewhere import y
from procbench.qsets import QuestionSet

def f():
    from procbench.generate.qset import QuestionSet

if TYPE_CHECKING:
    from procbench.generate.settings import Setting
"""
    found = generate_imports(source, "procbench.audit.loaders")
    assert found == [
        (2, "procbench.generate.visual"),
        (3, "procbench.generate"),
        (4, "procbench.generate"),
        (5, "procbench.generate.columns"),
        (11, "procbench.generate.qset"),
        (14, "procbench.generate.settings"),
    ]
    # relative imports resolve against the module's package (a package's __init__ is in the package itself)
    assert generate_imports("from . import generate\n", "procbench.demo") == [(1, "procbench.generate")]
    assert generate_imports("from .. import generate\n", "procbench.audit", is_package=True) == [
        (1, "procbench.generate")
    ]
    assert generate_imports("from . import generate\n", "procbench.audit", is_package=True) == []


def test_set_readers_import_nothing_from_generate() -> None:
    offending = []
    for name in BELOW_GENERATE:
        assert (_ROOT / name / "__init__.py").is_file(), f"procbench/{name} is not a package"
        for path in sorted((_ROOT / name).rglob("*.py")):
            parts = ["procbench", *path.relative_to(_ROOT).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_package else parts)
            for line, target in generate_imports(path.read_text(encoding="utf-8"), module, is_package=is_package):
                offending.append(f"{path.relative_to(_ROOT.parent)}:{line} imports {target}")
    assert not offending, "use procbench.qsets, not generate/: " + "; ".join(offending)
