"""The procbench exception tree.

Every error a user can cause or meet derives from :class:`ProcbenchError`. Specific errors also inherit
the matching builtin, so callers can catch either. ``exit_code`` is what the CLI exits with: 2 for bad
usage or bad input, 1 for a failure while working.
"""

from __future__ import annotations

__all__ = [
    "BadInput",
    "InputFileNotFound",
    "MissingDependency",
    "ProcbenchError",
    "StoreError",
    "StoreLocked",
    "StoreNotFound",
]


class ProcbenchError(Exception):
    """Base class of all procbench errors."""

    exit_code = 1


class BadInput(ProcbenchError, ValueError):
    """The user asked for something that cannot work (bad option, malformed file, unknown name)."""

    exit_code = 2


class InputFileNotFound(BadInput, FileNotFoundError):
    """An input file named on the command line does not exist."""


class StoreError(ProcbenchError):
    """The store is unreadable, inconsistent or of an unsupported format."""


class StoreNotFound(StoreError, BadInput, FileNotFoundError):
    """No store at the given path."""

    exit_code = 2


class StoreLocked(StoreError):
    """Another procbench process is writing to the store."""


class MissingDependency(ProcbenchError, ImportError):
    """An optional dependency is not installed; the message says what to install."""

    exit_code = 2
