"""One seed tree: every random stream of generation is named and derived from the run's seed.

A stream is ``numpy.random.SeedSequence(seed, spawn_key=(code(name), *keys))``, ``code`` the name's CRC-32.
Streams of different names, or of one name with different keys (a round, a repeat, a procedure), are
independent, and none is another seed's stream: the arithmetic seeds this replaced (``seed + round``) made
round ``r + 1`` of seed ``s`` replay the probe folds of round ``r`` of seed ``s + 1``.

Each name is declared once, at import, by :func:`stream` (a second module declaring it, or a name whose code
collides with another's, is an error), so two parts of the code cannot share a stream by accident.
:data:`RNG_VERSION` is recorded in every question set's ``options.json``: version 2 is this tree (version 1, the
per-module tags it replaced, made other bytes from the same seed).
"""

from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["RNG_VERSION", "Stream", "declared", "stream"]

#: The seed tree's version (``options.json``'s ``rng_version``).
RNG_VERSION = 2
_KEY_MASK = (1 << 64) - 1
_DECLARED: dict[str, tuple[int, str]] = {}  # name -> (code, declaring module)


@dataclass(frozen=True)
class Stream:
    """A named random stream; :meth:`rng` and :meth:`seed` derive it for a run's seed and keys."""

    name: str
    code: int

    def sequence(self, seed: int, *keys: int) -> np.random.SeedSequence:
        """The stream's :class:`numpy.random.SeedSequence` for ``seed`` and ``keys`` (ints; taken modulo 2**64)."""
        spawn_key = (self.code, *(int(k) & _KEY_MASK for k in keys))
        return np.random.SeedSequence(int(seed) & _KEY_MASK, spawn_key=spawn_key)

    def rng(self, seed: int, *keys: int) -> np.random.Generator:
        """A generator of the stream."""
        return np.random.default_rng(self.sequence(seed, *keys))

    def seed(self, seed: int, *keys: int) -> int:
        """A 32-bit integer seed of the stream, for libraries that take one (scikit-learn's ``random_state``)."""
        return int(self.sequence(seed, *keys).generate_state(1, np.uint32)[0])


def stream(name: str) -> Stream:
    """Declare the stream ``name`` (once, at import of the module that owns it).

    Raises:
        ValueError: ``name`` is declared by another module, or its code collides with another name's.
    """
    caller = str(sys._getframe(1).f_globals.get("__name__", "?"))
    code = zlib.crc32(name.encode("utf-8"))
    if name in _DECLARED and _DECLARED[name][1] != caller:
        raise ValueError(f"random stream {name!r} is declared twice: in {_DECLARED[name][1]} and {caller}")
    for other, (other_code, _) in _DECLARED.items():
        if other_code == code and other != name:
            raise ValueError(f"random streams {name!r} and {other!r} have one code: rename one")
    _DECLARED[name] = (code, caller)
    return Stream(name, code)


def declared() -> dict[str, str]:
    """Every stream declared so far: name -> the module that declared it."""
    return {name: module for name, (_, module) in sorted(_DECLARED.items())}
