"""Hardening: ``export --overwrite`` replaces only an earlier export's own files (issue 34, item 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.errors import BadInput
from procbench.export import export_sets
from procbench.export.hf import EXPORT_MARKER
from procbench.generate import generate
from procbench.store import Store


@pytest.fixture(scope="module")
def pair_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export-hardening") / "store"
    shutil.copytree(ingested_sample, root)
    generate(Store.open(root), "pair-order", seed=0)
    return root


def test_overwrite_refuses_a_folder_that_is_not_an_export(pair_store: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "data" / "raw").mkdir(parents=True)
    (proj / "data" / "raw" / "experiment.csv").write_text("x\n")
    (proj / "README.md").write_text("hi\n")
    result = CliRunner().invoke(
        app, ["export", "pair-order", "--to", str(proj), "--overwrite", "--store", str(pair_store)]
    )
    assert result.exit_code == 2, result.output
    assert "not an earlier procbench export" in result.output and "Traceback" not in result.output
    assert (proj / "data" / "raw" / "experiment.csv").read_text() == "x\n"
    assert (proj / "README.md").read_text() == "hi\n"


def test_overwrite_replaces_only_the_files_the_export_wrote(pair_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    first = export_sets(["pair-order"], out, store=pair_store)
    marker = json.loads((out / EXPORT_MARKER).read_text())
    assert set(marker["files"]) == {"README.md", "croissant.json", *(str(p.relative_to(out)) for p in first.files)}
    # the user's own files beside the export, and one inside its data folder
    (out / "notes.txt").write_text("mine\n")
    (out / "data" / "raw").mkdir()
    (out / "data" / "raw" / "experiment.csv").write_text("x\n")
    (out / "README.md").write_text("edited card\n")
    # a crafted marker naming a file that export never writes is not believed
    marker["files"].append("notes.txt")
    marker["files"].append("data/../notes.txt")
    (out / EXPORT_MARKER).write_text(json.dumps(marker))
    again = export_sets(["pair-order"], out, store=pair_store, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "data" / "raw" / "experiment.csv").read_text() == "x\n"
    assert "procbench" in (out / "README.md").read_text()  # the card is the export's: replaced
    assert all(p.is_file() for p in again.files)


def test_a_planned_file_of_the_user_is_not_replaced(pair_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    export_sets(["pair-order"], out, store=pair_store)
    marker = json.loads((out / EXPORT_MARKER).read_text())
    marker["files"] = ["README.md"]  # an earlier export that wrote the card only
    (out / EXPORT_MARKER).write_text(json.dumps(marker))
    (out / "croissant.json").write_text("user's\n")
    with pytest.raises(BadInput, match="not written by procbench export"):
        export_sets(["pair-order"], out, store=pair_store, overwrite=True)
    assert (out / "croissant.json").read_text() == "user's\n"


def test_a_symlinked_data_folder_is_one_line(pair_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    export_sets(["pair-order"], out, store=pair_store)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / "data", elsewhere)
    (out / "data").symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))
    result = CliRunner().invoke(
        app, ["export", "pair-order", "--to", str(out), "--overwrite", "--store", str(pair_store)]
    )
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == before
