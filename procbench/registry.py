"""One registry for everything procbench looks up by name: tasks, encoders, probes, models and sources.

A :class:`Registry` maps names (and aliases) to entries. An entry is either the object itself or a lazy
``"module:object"`` reference (``"module:Class.attribute"`` works too), imported only when asked for, so
listing names never imports anything heavy. An unknown name is a :class:`~procbench.errors.BadInput`
that names what is available and suggests the closest names ("did you mean ...?").

Adding an entry (see DEVELOPERS.md for each registry)::

    TASKS.add(TaskSpec("next-action", "procbench.generate.next_action", ...))   # an object
    SOURCES.add("instructables", "procbench.scrape.instructables:InstructablesSource")  # lazy
    @PROBES.register("partial_input")                                          # a decorator
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar, cast

from procbench.errors import BadInput

__all__ = ["Registry", "load_object"]

T = TypeVar("T")


def load_object(reference: str) -> object:
    """Import ``"module:object"`` (or ``"module:Class.attribute"``) and return the object."""
    module, _, attribute = reference.partition(":")
    if not module or not attribute:
        raise ValueError(f"a lazy registry entry is 'module:object', not {reference!r}")
    found: object = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


class Registry(Generic[T]):
    """Named entries of one kind, in registration order.

    Args:
        kind: what an entry is, for messages (``task``, ``encoder``, ``probe``, ...).
        normalise: how names are compared (e.g. ``visual_cloze`` and ``visual-cloze`` as one); applied to
            names, aliases and lookups alike.
    """

    def __init__(self, kind: str, *, normalise: Callable[[str], str] = str.lower) -> None:
        self.kind = kind
        self._normalise = normalise
        self._entries: dict[str, T] = {}  # canonical name -> entry (loaded)
        self._lazy: dict[str, str] = {}  # canonical name -> "module:object" not imported yet
        self._names: dict[str, str] = {}  # normalised name or alias -> canonical name
        self._order: list[str] = []

    def add(self, name: str, entry: T | str, *, aliases: Iterable[str] = ()) -> None:
        """Register ``entry`` (or a lazy ``"module:object"`` reference to it) as ``name``.

        Raises:
            ValueError: ``name`` or an alias is taken already.
        """
        for key in (name, *aliases):
            if self._normalise(key) in self._names:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        if isinstance(entry, str):
            self._lazy[name] = entry
        else:
            self._entries[name] = entry
        self._order.append(name)
        for key in (name, *aliases):
            self._names[self._normalise(key)] = name

    def register(self, name: str, *, aliases: Iterable[str] = ()) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def decorate(entry: T) -> T:
            self.add(name, entry, aliases=aliases)
            return entry

        return decorate

    def canonical(self, name: str) -> str | None:
        """The registered name ``name`` (or an alias) stands for; None when unknown."""
        return self._names.get(self._normalise(name))

    def find(self, name: str) -> T | None:
        """The entry of ``name`` (or an alias), loaded; None when unknown."""
        canonical = self.canonical(name)
        return None if canonical is None else self._load(canonical)

    def get(self, name: str) -> T:
        """The entry of ``name`` (or an alias), loaded.

        Raises:
            BadInput: an unknown name (the message lists the names and suggests the closest).
        """
        found = self.find(name)
        if found is None:
            raise BadInput(self.unknown(name))
        return found

    def suggestions(self, name: str, *, n: int = 2) -> list[str]:
        """Up to ``n`` registered names closest to ``name`` (matching names and aliases), closest first."""
        close = difflib.get_close_matches(self._normalise(name), list(self._names), n=2 * n)
        return list(dict.fromkeys(self._names[c] for c in close))[:n]

    def unknown(self, name: str) -> str:
        """The one-line message for an unknown ``name``."""
        suggestions = self.suggestions(name)
        hint = f"; did you mean {' or '.join(map(repr, suggestions))}?" if suggestions else ""
        return f"unknown {self.kind} {name!r}{hint} (available: {', '.join(self._order)})"

    def _load(self, name: str) -> T:
        if name in self._lazy:
            self._entries[name] = cast(T, load_object(self._lazy.pop(name)))
        return self._entries[name]

    def names(self) -> list[str]:
        """The registered names (no aliases), in registration order; nothing is imported."""
        return list(self._order)

    def values(self) -> list[T]:
        """Every entry, loaded, in registration order."""
        return [self._load(name) for name in self._order]

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs, loaded, in registration order."""
        return [(name, self._load(name)) for name in self._order]

    def __getitem__(self, name: str) -> T:
        """The entry of ``name`` (or an alias), like a dict: :class:`KeyError` when unknown."""
        canonical = self.canonical(name)
        if canonical is None:
            raise KeyError(name)
        return self._load(canonical)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._order)
