"""procbench's modules import each other without cycles.

The graph is read from the source (no import runs): every ``import`` and ``from ... import`` of a procbench
module, at module level, under ``if TYPE_CHECKING:`` and inside functions alike. A lazy or type-only import
hides a cycle from the interpreter, not from a reader: the two modules still cannot be understood apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import procbench

_ROOT = Path(procbench.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(_ROOT.rglob("*.py")):
        parts = ["procbench", *path.relative_to(_ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the procbench modules it imports (``from pkg import name`` counts as ``pkg.name`` when that
    is a module, else as ``pkg``)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name].update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in modules:
                        graph[name].add(full)
                    elif target in modules:
                        graph[name].add(target)
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "procbench.store._store" in graph["procbench.store"]  # from-import of a name, module level
    assert "procbench.embed.registry" in graph["procbench.embed.pipeline"]
    assert "procbench.store" in graph["procbench.embed.sbert"]  # under `if TYPE_CHECKING:`
    assert "procbench.card.citations" in graph["procbench.export.croissant"]  # inside a function
    assert len(graph) > 100


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
