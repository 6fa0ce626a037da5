"""Hardening: ``export --overwrite`` replaces only an earlier export's own files (issue 34, item 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

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


# -- the same attacks on --format lm-eval ------------------------------------------------------------------------


def _lm_eval(pair_store: Path, out: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        app, ["export", "--format", "lm-eval", "pair-order", "--to", str(out), "--store", str(pair_store), *extra]
    )


def test_lm_eval_overwrite_refuses_a_folder_that_is_not_an_lm_eval_export(pair_store: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "configs" / "run").mkdir(parents=True)
    files = {"README.md": "hi\n", "configs/_base.yaml": "a: 1\n", "configs/run/run.yaml": "b: 2\n"}
    for rel, text in files.items():
        (proj / rel).write_text(text)
    result = _lm_eval(pair_store, proj, "--overwrite")
    assert result.exit_code == 2, result.output
    assert "not an earlier lm-eval export" in result.output
    assert {str(p.relative_to(proj)): p.read_text() for p in proj.rglob("*") if p.is_file()} == files
    hf = tmp_path / "hf"  # a Hugging Face export is not an lm-eval export either
    export_sets(["pair-order"], hf, store=pair_store)
    before = {p: p.read_bytes() for p in hf.rglob("*") if p.is_file()}
    assert _lm_eval(pair_store, hf, "--overwrite").exit_code == 2
    assert {p: p.read_bytes() for p in hf.rglob("*") if p.is_file()} == before


def test_lm_eval_overwrite_replaces_only_the_files_it_wrote(pair_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lm"
    assert _lm_eval(pair_store, out).exit_code == 0
    marker = json.loads((out / EXPORT_MARKER).read_text())
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {EXPORT_MARKER}
    assert set(marker["files"]) >= written and "README.md" in written
    (out / "pair_order" / "notes.txt").write_text("mine\n")
    (out / "elsewhere.yaml").write_text("mine\n")
    marker["files"] += ["pair_order/notes.txt", "elsewhere.yaml", "pair_order/../elsewhere.yaml"]
    (out / EXPORT_MARKER).write_text(json.dumps(marker))
    assert _lm_eval(pair_store, out, "--overwrite").exit_code == 0
    assert (out / "pair_order" / "notes.txt").read_text() == "mine\n"
    assert (out / "elsewhere.yaml").read_text() == "mine\n"
    assert (out / "pair_order" / "default" / "pair_order_default.yaml").is_file()


def test_lm_eval_a_symlinked_task_folder_is_one_line(pair_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "lm"
    assert _lm_eval(pair_store, out).exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / "pair_order", elsewhere)
    (out / "pair_order").symlink_to(elsewhere, target_is_directory=True)
    before = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()}
    result = _lm_eval(pair_store, out, "--overwrite")
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and len(result.output.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} == before
