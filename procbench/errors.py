"""The procbench exception tree.

Every error a user can cause or meet derives from :class:`ProcbenchError`. Specific errors also inherit
the matching builtin, so callers can catch either. ``exit_code`` is what the CLI exits with: 2 for bad
usage or bad input, 1 for a failure while working.
"""

from __future__ import annotations

__all__ = [
    "BadInput",
    "Blocked",
    "Disallowed",
    "FetchError",
    "InputFileNotFound",
    "MissingDependency",
    "ParseError",
    "ProcbenchError",
    "RateLimited",
    "StoreChanged",
    "StoreDamaged",
    "StoreError",
    "StoreLocked",
    "StoreNotFound",
    "StoreReadOnly",
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


class StoreChanged(StoreError):
    """Another process committed to the store after this one read it: nothing was written (run it again)."""


class StoreReadOnly(StoreError, BadInput):
    """The store cannot be written here (read-only directory or file system); reading it still works."""

    exit_code = 2


class StoreDamaged(StoreError, BadInput):
    """A file of the store is damaged or points outside it: a part list that is not JSON, a missing or
    non-Parquet part, a row count that does not match its part, a path or link leading out of the store."""

    exit_code = 2


class CorruptIndex(StoreError, BadInput):
    """A persisted FAISS index that cannot be read, or does not match its embeddings (damaged on disk)."""

    exit_code = 2


class MissingDependency(ProcbenchError, ImportError):
    """An optional dependency is not installed; the message says what to install."""

    exit_code = 2


class FetchError(ProcbenchError, OSError):
    """A URL could not be fetched (``status`` is the HTTP status when there was one). ``permanent`` errors
    are never retried: asking again would give the same answer."""

    def __init__(
        self, message: str, *, url: str | None = None, status: int | None = None, permanent: bool = True
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.permanent = permanent


class Disallowed(FetchError):
    """robots.txt disallows the URL for our User-Agent, or the URL leaves the source's domain."""


class RateLimited(FetchError):
    """The site kept answering 429 (or a soft-block page) after every retry: slow down and re-run later."""


class Blocked(FetchError):
    """The site refuses us (401/403 or a block page): do not retry, check the User-Agent and robots.txt."""


class ParseError(ProcbenchError, ValueError):
    """A fetched page or API answer does not hold what the parser expects (markup changed, not a procedure)."""
