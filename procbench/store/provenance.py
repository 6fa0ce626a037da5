"""Provenance records: what command produced what, with which software, seed and results."""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

__all__ = ["RUN", "package_versions", "provenance_entry", "transactions", "utc_now"]

_ALWAYS = ("procbench", "pyarrow", "numpy", "pillow")
#: ``kind`` of a log entry for a run that changed no table (audit, train, report): see ``Store.record_run``.
RUN = "run"


def utc_now() -> str:
    """The current UTC time as an ISO-8601 string with second precision."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def package_versions(*extra: str) -> dict[str, str]:
    """Installed versions of procbench's core packages plus ``extra`` ones (missing packages are left out)."""
    versions = {"python": platform.python_version()}
    for name in (*_ALWAYS, *extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def provenance_entry(
    command: str,
    *,
    args: dict[str, Any],
    seed: int | None,
    counts: dict[str, Any],
    packages: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One entry of the store's append-only provenance log."""
    return {
        "command": command,
        "args": args,
        "seed": seed,
        "counts": counts,
        "versions": package_versions(*packages),
        "time": utc_now(),
    }


def transactions(provenance: list[dict[str, Any]]) -> int:
    """How many entries of a provenance log are committed transactions (recorded runs left out)."""
    return sum(1 for entry in provenance if entry.get("kind") != RUN)
