"""The probe families; importing this package registers every probe, in report order."""

from __future__ import annotations

import importlib

__all__ = ["FAMILIES"]

#: One module per probe family, imported in the order their probes are reported.
FAMILIES = (
    "choice",
    "distance",
    "image",
    "shortcut",
    "position",
    "text",
    "cluster",
    "overlap",
    "integrity",
    "tells",
    "reference",
)

for _family in FAMILIES:
    importlib.import_module(f"procbench.audit.probes.{_family}")
