"""``procbench demo``: every pipeline stage that exists, run offline on the bundled sample corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from procbench.corpus import write_sample
from procbench.generate import generate
from procbench.ingest import ingest_file
from procbench.progress import SILENT, Progress
from procbench.store import Store

__all__ = ["run_demo"]


def run_demo(store_path: str | Path, *, seed: int = 0, progress: Progress = SILENT) -> dict[str, Any]:
    """Build a store from the sample corpus at ``store_path`` and return what each stage did.

    Re-running on the same store is cheap: stages skip what is already there.
    """
    store = Store.open(store_path, create=True)
    stages: dict[str, Any] = {}
    source = write_sample(store.root / "cache" / "sample", seed=seed)
    stages["ingest"] = ingest_file(store, source, progress=progress).counts()
    stages["generate"] = {
        f"{task}/{name}": count
        for task in ("sequencing", "pair-order")
        for name, count in generate(store, task, seed=seed, progress=progress).questions.items()
    }
    summary = store.summary()
    return {
        "store": str(store.root),
        "stages": stages,
        "procedures": summary["procedures"],
        "steps": summary["steps"],
        "images": summary["images"],
        "by_category": summary["by_category"],
    }
