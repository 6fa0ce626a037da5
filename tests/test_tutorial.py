"""The tutorial (docs/tutorial.md) runs as written: its ``bash`` blocks are read from the page and run in order in
one shell, so the page cannot drift from what procbench does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def blocks(language: str | None = None) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block of the tutorial (only ``language``'s when given)."""
    found = [(m.group(1), m.group(2)) for m in _FENCE.finditer(TUTORIAL.read_text(encoding="utf-8"))]
    return [b for b in found if language is None or b[0] == language]


def test_every_block_of_the_tutorial_runs_but_the_upload_to_the_hub() -> None:
    """Only ``bash`` blocks run; the one block that does not (``console``) is the upload, which needs a token."""
    others = [(lang, code) for lang, code in blocks() if lang != "bash"]
    assert len(others) == 1 and others[0][0] == "console", others
    assert others[0][1].strip().startswith("procbench export") and "--push-to-hub" in others[0][1]
    commands = "\n".join(code for _, code in blocks("bash"))
    for step in ("ingest", "clean", "embed", "generate", "audit", "packet", "score-packet", "export", "evaluate"):
        assert re.search(rf"^procbench {step}\b", commands, re.MULTILINE), step
    assert "lm_eval " in commands


@pytest.mark.slow  # the whole pipeline on the sample and an lm-eval run: several minutes on two cores
def test_the_tutorial_runs_on_the_sample(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval")
    script = "set -euo pipefail\n" + "\n".join(
        f"echo '::: block {i}'\n{code}" for i, (_, code) in enumerate(blocks("bash"))
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PROCBENCH_STORE", None)  # the tutorial names its own
    assert shutil.which("procbench", path=env["PATH"]) is not None
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]

    store = tmp_path / "my-store"
    sets = ["textual-cloze/needs-context", "visual-cloze/needs-context", "visual-coherence/needs-context"]
    sets.append("visual-ordering/adversarial")
    audit = json.loads((store / "questions" / "audit.json").read_text())
    assert len(audit["sets"]) == len(sets)
    for name in sets:
        assert (store / "questions" / name / "test.parquet").is_file(), name
    assert (tmp_path / "report" / "index.html").is_file()
    # the reader check: ten questions, the reader's score recorded beside the set
    assert (tmp_path / "packet" / "packet.md").read_text().count("**Question:**") == 10
    readers = json.loads((store / "questions" / "textual-cloze" / "needs-context" / "readers.json").read_text())
    assert "alice" in json.dumps(readers)
    # the Hub export loads (the tutorial printed it), and lm-eval's results came back into evaluate's table
    assert (tmp_path / "hub" / "README.md").is_file() and (tmp_path / "hub" / "croissant.json").is_file()
    assert "DatasetDict" in run.stdout
    assert list((tmp_path / "lm-results").rglob("results_*.json"))
    assert "lm-eval dummy" in run.stdout
