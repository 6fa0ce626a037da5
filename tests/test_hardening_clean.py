"""Hardening: ``clean`` on a store with a field over ingest's size cap (a store written before the caps)
drops that procedure without running the text rules on it, so its memory stays a small multiple of its
input (issue 34, item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import procbench.clean.pipeline as pipeline
from procbench.clean import clean_store
from procbench.ingest import ingest_file
from procbench.store import Store

from helpers import make_record, write_jsonl


def _store_with_long_step(root: Path, length: int, n: int = 12) -> Path:
    """A store of ``n`` procedures whose procedure 3, step 2 has a text of ``length`` characters, planted
    past ingest (as a store written before the caps holds it)."""
    store = Store.open(root, create=True)
    ingest_file(store, write_jsonl(root.parent / f"{root.name}.jsonl", [make_record(f"p-{i}") for i in range(n)]))
    store = Store.open(root)
    steps = store.table("steps")
    texts = steps["text"].to_pylist()
    row = [
        i
        for i, (p, k) in enumerate(zip(steps["procedure_id"].to_pylist(), steps["index"].to_pylist(), strict=True))
        if (p, k) == ("test:p-3", 2)
    ][0]
    texts[row] = ("lorem ipsum dolor sit amet " * (length // 27 + 1))[:length]
    steps = steps.set_column(steps.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
    with store.transaction("plant") as txn:
        txn.write_table("steps", steps)
    return root


def test_a_procedure_with_an_oversized_field_is_dropped_and_kept_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "MAX_FIELD_CHARS", 5_000)
    root = _store_with_long_step(tmp_path / "s", 6_000)
    report = clean_store(root)
    store = Store.open(root)
    procs = {r["id"]: r for r in store.table("procedures", ["id", "keep", "drop_reason"]).to_pylist()}
    assert procs["test:p-3"]["keep"] is False and procs["test:p-3"]["drop_reason"] == "too_long"
    assert [pid for pid, r in procs.items() if r["drop_reason"] == "too_long"] == ["test:p-3"]
    steps = [r for r in store.table("steps").to_pylist() if r["procedure_id"] == "test:p-3" and r["index"] == 2]
    assert len(steps[0]["text"]) == 6_000 and steps[0]["text_clean"] is None  # nothing the user wrote is lost
    rules = {r.rule: r for r in report.rules}
    assert rules["too_long"].procedures == 1 and "longer than 5,000" in (rules["too_long"].examples[0].after or "")


_MEASURE = """
import resource, sys
from procbench.clean import clean_store
clean_store(sys.argv[1])  # a small store first: the fixed cost (vocabulary, language model) is paid here
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
clean_store(sys.argv[2])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.slow
def test_clean_memory_is_a_small_multiple_of_one_huge_step(tmp_path: Path) -> None:
    # 40 MB of step text: reading it back from Parquet alone peaks at ~4x; before the cap clean grew by ~13x
    length = 40_000_000
    small = _store_with_long_step(tmp_path / "small", 20)
    big = _store_with_long_step(tmp_path / "big", length)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    grew_kib = int(
        subprocess.run(
            [sys.executable, "-c", _MEASURE, str(small), str(big)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
            env=env,
        ).stdout
    )
    assert grew_kib * 1024 < 6 * length, f"clean grew by {grew_kib / 1024:.0f} MiB for a {length / 1e6:.0f} MB step"
