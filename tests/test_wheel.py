"""procbench installs as a package: ``python -m build`` makes an sdist and a wheel (built from the sdist) that carry
the sample corpus, the report's assets and the licence, and the wheel's ``procbench demo`` runs in a fresh virtual
environment with no source tree.

The fresh environment sees procbench's dependencies (torch, FAISS, the offline models: gigabytes) through a
``.pth`` file naming this environment's site-packages, where procbench itself is only an editable install, which a
``.pth`` path line does not bring along (the editable finder is hooked in by a ``.pth`` file of its own, which is
read only in a site directory). The wheel is installed with ``--no-deps``; so the procbench that runs is the
wheel's, which the test checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What must ship inside the package: the bundled sample, the report's stylesheets and scripts, the type marker.
PACKAGE_DATA = (
    "procbench/corpus/sample.jsonl",
    "procbench/report/assets/report.css",
    "procbench/report/assets/report.js",
    "procbench/py.typed",
)


def build(out: Path) -> tuple[Path, Path]:
    """``python -m build`` of the repository into ``out``: ``(sdist, wheel)``."""
    pytest.importorskip("build")
    run = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (sdist,) = out.glob("procbench-*.tar.gz")
    (wheel,) = out.glob("procbench-*.whl")
    return sdist, wheel


@pytest.mark.slow  # builds twice (sdist, then the wheel from it) and runs the whole demo: a few minutes
def test_the_wheel_installs_in_a_fresh_environment_and_runs_the_demo(tmp_path: Path) -> None:
    sdist, wheel = build(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert set(PACKAGE_DATA) <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Intended Audience :: Science/Research" in metadata
    assert "Project-URL: " in metadata and "Provides-Extra: offline" in metadata
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    assert {"LICENSE", "README.md", "pyproject.toml", *PACKAGE_DATA} <= members

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "procbench-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(install, check=True, capture_output=True)

    elsewhere = tmp_path / "elsewhere"  # no source tree here, nor on any path
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PROCBENCH_STORE", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    where = subprocess.run(
        [str(python), "-c", "import procbench.corpus as c; print(c.__file__, len(c.load_sample()))"],
        cwd=elsewhere,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(venv) and where[1] == "45"  # the wheel's procbench and its bundled sample

    demo = subprocess.run(
        [str(venv / "bin" / "procbench"), "demo", "--store", "demo"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "The recommended set of every task" in demo.stdout
    report = elsewhere / "demo" / "report"
    assert (report / "index.html").is_file() and (report / "assets" / "report.css").is_file()
    assert (elsewhere / "demo" / "packets" / "visual-cloze" / "packet.md").is_file()
