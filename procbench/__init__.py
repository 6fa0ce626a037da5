"""procbench: procedural multimodal comprehension benchmarks from How-To sites.

The top-level package imports nothing heavy; import the stage modules you need, e.g.
``from procbench.store import Store`` or ``from procbench.ingest import ingest_file``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
