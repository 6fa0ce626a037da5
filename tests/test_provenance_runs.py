"""Runs that read the store and write files of their own (audit, train, report) are recorded in its provenance
log as ``kind: "run"`` entries, which leave the store's version alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.errors import StoreChanged
from procbench.generate import Setting, generate
from procbench.store import Store


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def textual_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("provenance") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout")
    generate(Store.open(root), "textual-cloze", Setting("recipeqa"), seed=0)
    return root


def test_audit_train_and_report_are_recorded(textual_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(textual_store, store)
    version = Store.open(store).version
    qset = "textual-cloze/recipeqa"
    _cli("audit", qset, "--store", str(store), "--n-boot", "50", "--probes", "length,answer_position")
    run = tmp_path / "run"
    _cli("train", qset, "--store", str(store), "-m", "hasty-choice-only", "--out", str(run), "--epochs", "2")
    report = _cli("report", "--store", str(store))
    assert report.output.rstrip().endswith(str(store / "report" / "index.html"))  # the default: inside the store
    assert (store / "report" / "index.html").is_file() and not Path("report").exists()

    opened = Store.open(store)
    audit, trained, reported = opened.provenance[-3:]
    assert [e["command"] for e in (audit, trained, reported)] == ["audit", "train", "report"]
    assert all(e["kind"] == "run" for e in (audit, trained, reported))
    assert opened.version == version  # no table changed
    assert audit["args"]["sets"] == [qset] and audit["args"]["probes"] == "length,answer_position"
    assert audit["counts"]["sets"] == 1 and audit["counts"]["flagged_by_set"][qset] >= 0
    assert audit["outputs"] == ["questions/textual-cloze/recipeqa/audit.json"]
    written = json.loads((store / "questions" / "textual-cloze" / "recipeqa" / "audit.json").read_text())
    flags = sum(p.get("flagged", False) for p in written["sets"][qset]["probes"].values())
    assert audit["counts"]["flagged_by_set"][qset] == flags
    assert trained["args"]["model"] == "hasty-choice-only" and trained["args"]["qset"] == qset
    assert trained["counts"]["epochs"] == 2 and set(trained["counts"]["metrics"]) == {"train", "val", "test"}
    assert trained["outputs"] == [str(run.resolve())] and trained["seed"] == 0
    assert reported["outputs"] == ["report"] and reported["counts"]["sets"] == 1
    info = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["info", "--store", str(store)])
    assert info.exit_code == 0 and all(c in info.output for c in ("audit", "train", "report"))


def test_a_recorded_run_does_not_refuse_a_writer_that_read_before(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    with store.transaction("first"):
        pass
    writer = Store.open(tmp_path / "s")
    writer.table("procedures")  # read: its transaction checks nobody committed since
    assert Store.open(tmp_path / "s").record_run("audit", args={}, seed=1, counts={"sets": 0}, outputs=[tmp_path])
    with writer.transaction("second"):  # an audit changed no table: not a StoreChanged
        pass
    assert [e["command"] for e in writer.provenance] == ["first", "audit", "second"]
    assert writer.version == 2 and writer.provenance[1]["outputs"] == [str(tmp_path.resolve())]
    other = Store.open(tmp_path / "s")
    other.table("procedures")
    with writer.transaction("third"):
        pass
    with pytest.raises(StoreChanged, match="ran third"), other.transaction("fourth"):
        pass


def test_a_locked_store_records_nothing_after_the_wait(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", create=True)
    with store.transaction("busy"):  # holds the write lock
        assert not Store.open(tmp_path / "s").record_run("audit", args={}, seed=0, counts={}, wait=0.3)
    assert [e["command"] for e in store.provenance] == ["busy"]
