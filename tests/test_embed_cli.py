"""`procbench embed` end to end with typer's CliRunner, the demo's embed stage, and the import-cost contract."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import load_index, neighbors_of
from procbench.ingest import ingest_file
from procbench.progress import SILENT
from procbench.store import Store

runner = CliRunner()


@pytest.fixture
def store_path(ingested_sample: Path, tmp_path: Path) -> str:
    shutil.copytree(ingested_sample, tmp_path / "store")
    return str(tmp_path / "store")


def test_embed_json_then_rerun_embeds_nothing(store_path: str) -> None:
    args = ["embed", "--store", store_path, "--text-encoder", "hashed", "--image-encoder", "colour-layout", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert [f["field"] for f in report["fields"]] == ["step_title", "step_text", "procedure_title", "image"]
    assert report["encoders"]["text"]["name"] == "hashed" and report["encoders"]["image"]["dim"] == 392
    assert report["embedded"] > 0 and all(f["index"]["kind"] == "flat" for f in report["fields"])
    second = json.loads(runner.invoke(app, args).stdout)
    assert second["embedded"] == 0 and second["rows"] == report["rows"]
    info = json.loads(runner.invoke(app, ["info", "--store", store_path, "--json"]).stdout)
    assert set(info["stages"]["embeddings"]) == {f["name"] for f in report["fields"]}
    assert len(info["stages"]["indexes"]) == 4


def test_embed_table_output_and_fields(store_path: str) -> None:
    result = runner.invoke(
        app,
        [
            "embed",
            "--store",
            store_path,
            "-t",
            "hashed",
            "--fields",
            "step_title,procedure_title",
            "--exact-max-rows",
            "100",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "step_title" in result.stdout and "ivf" in result.stdout and "image" not in result.stdout
    assert sorted(p.name for p in (Path(store_path) / "embeddings").glob("*.arrow")) == [
        "procedure_title.hashed.arrow",
        "step_title.hashed.arrow",
    ]


def test_default_encoders_offline_fail_fast_with_one_line(store_path: str) -> None:
    result = runner.invoke(app, ["embed", "--store", store_path])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")
    assert "all-MiniLM-L6-v2" in lines[0] and "minilm-offline" in lines[0] and "hashed" in lines[0]
    assert "Traceback" not in result.output
    assert not (Path(store_path) / "embeddings").exists()
    image = runner.invoke(app, ["embed", "--store", store_path, "-t", "hashed", "--fields", "step_title,image"])
    assert image.exit_code == 2 and "clip-ViT-B-32" in image.stderr and "colour-layout" in image.stderr
    missing = runner.invoke(app, ["embed", "--store", store_path, "-t", "no-such-encoder-here"])
    assert missing.exit_code == 2 and "no-such-encoder-here" in missing.stderr


def test_only_the_named_encoder_is_resolved(store_path: str) -> None:
    """-t alone embeds the text fields; the images (the default CLIP cannot load offline) are skipped, said why."""
    text = runner.invoke(app, ["embed", "--store", store_path, "-t", "hashed", "--json"])
    assert text.exit_code == 0, text.output
    report = json.loads(text.stdout)
    skipped = {f["field"]: f["skipped"] for f in report["fields"]}
    assert skipped["step_text"] is None and skipped["procedure_title"] is None
    assert "no image encoder named" in skipped["image"] and set(report["encoders"]) == {"text"}
    image = runner.invoke(app, ["embed", "--store", store_path, "-i", "colour-layout"])
    assert image.exit_code == 0, image.output
    assert "no text encoder named" in " ".join(image.stdout.split())
    current = json.loads((Path(store_path) / "embeddings" / "current.json").read_text())
    assert set(current) == {"step_title", "step_text", "procedure_title", "image"}


def test_fields_without_rows_load_no_encoder(tmp_path: Path) -> None:
    """A text-only store without headlines: the default image encoder is never resolved, step_title skipped."""
    source = tmp_path / "p.jsonl"
    steps = [{"text": f"Do thing {i} carefully."} for i in range(4)]
    source.write_text(json.dumps({"title": "Do things", "steps": steps}) + "\n", encoding="utf-8")
    ingest_file(tmp_path / "store", source)
    result = runner.invoke(app, ["embed", "--store", str(tmp_path / "store"), "-t", "hashed", "--json"])
    assert result.exit_code == 0, result.output
    fields = {f["field"]: f for f in json.loads(result.stdout)["fields"]}
    assert "title" in fields["step_title"]["skipped"] and "no stored images" in fields["image"]["skipped"]
    assert fields["step_text"]["rows"] == 4


def test_bad_options_exit_2(store_path: str, tmp_path: Path) -> None:
    assert runner.invoke(app, ["embed", "--store", store_path, "-t", "hashed", "--fields", "nope"]).exit_code == 2
    assert (
        runner.invoke(app, ["embed", "--store", store_path, "-t", "colour-layout", "--fields", "step_title"]).exit_code
        == 2
    )
    assert runner.invoke(app, ["embed", "--store", str(tmp_path / "none"), "-t", "hashed"]).exit_code == 2
    assert runner.invoke(app, ["embed", "--store", store_path, "--batch-size", "0"]).exit_code == 2


def test_list_encoders(tmp_path: Path) -> None:
    result = runner.invoke(app, ["embed", "--list-encoders", "--json"])
    assert result.exit_code == 0, result.output
    names = {e["name"]: e for e in json.loads(result.stdout)}
    assert {"hashed", "minilm-offline", "colour-layout", "efficientnet-lite0", "clip-ViT-B-32"} <= set(names)
    assert names["hashed"]["available"] is True and names["colour-layout"]["modality"] == "image"


@pytest.mark.usefixtures("torch_one_thread")
def test_demo_embeds_the_sample_offline(tmp_path: Path) -> None:
    # The demo's embed stage (MiniLM when procbench[offline] is installed) on six of the sample's procedures; the
    # whole demo runs in the slow tests/test_demo.py.
    from procbench.corpus import write_sample
    from procbench.demo import _embed_offline

    sample = write_sample(tmp_path / "src")
    six = sample.with_name("six.jsonl")
    six.write_text("".join(sample.read_text(encoding="utf-8").splitlines(keepends=True)[:6]), encoding="utf-8")
    ingest_file(tmp_path / "demo", six)
    store = Store.open(tmp_path / "demo")
    embed = _embed_offline(store, seed=0, progress=SILENT)
    summary = store.summary()
    assert summary["procedures"] == 6 and summary["images_stored"] == summary["steps"]
    assert embed["image_encoder"] == "colour-layout" and embed["text_encoder"] in ("minilm-offline", "hashed")
    assert embed["step_title"] == summary["steps"] and embed["image"] == summary["images"]
    index = load_index(tmp_path / "demo", "image")
    hits = neighbors_of(index, index.keys[:2].to_pylist(), 3)
    assert (hits.indices >= 0).all()
    assert _embed_offline(Store.open(tmp_path / "demo"), seed=0, progress=SILENT)["embedded"] == 0


def test_embed_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['procbench', 'embed', '--help']\n"
        "from procbench.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "names = ('torch', 'faiss', 'sentence_transformers', 'sklearn', 'transformers', 'procbench.embed')\n"
        "print('HEAVY=' + ','.join(m for m in names if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "--text-encoder" in out and "--image-encoder" in out
    assert out.strip().endswith("HEAVY=")
