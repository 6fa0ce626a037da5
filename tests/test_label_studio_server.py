"""A real Label Studio round trip: `procbench export --format label-studio` imported into a Label Studio server
started here on 127.0.0.1, one annotation posted per task through its API, the project exported and scored with
`procbench score-packet`.

Label Studio is installed into its own virtual environment, created by this test (never procbench's): under
``PROCBENCH_TEST_CACHE`` (default ``~/.cache/procbench-tests``)/``label-studio``, kept between runs, with a
migrated data folder kept beside it so that a rerun starts in seconds. The server gets a temporary data folder,
the default user and its API token from environment variables, no Sentry reporting and no version check; it is
stopped in the fixture's teardown, also when the test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import test_lmeval as shared
from typer.testing import CliRunner

from procbench.cli import app

pytestmark = pytest.mark.slow

#: The Label Studio release the round trip was written against (its API: projects, import, annotations, export).
LABEL_STUDIO = "label-studio==1.23.2"

CACHE = Path(os.environ.get("PROCBENCH_TEST_CACHE") or Path.home() / ".cache" / "procbench-tests") / "label-studio"
USER, PASSWORD = "reader@example.com", "procbench-test-password"
TOKEN = "0123456789abcdef0123456789abcdef01234567"

#: Seconds to wait for the server (a first start migrates its database: about two minutes on 2 loaded cores).
START_TIMEOUT = 900

# test_lmeval's fixture: the sample store with textual cloze generated
store_template = shared.store_template
store = shared.store


def _installed() -> Path:
    """The ``label-studio`` executable of the test's own environment, installed on first use."""
    marker = CACHE / f".installed-{LABEL_STUDIO}"
    executable = CACHE / "bin" / "label-studio"
    if marker.is_file() and executable.is_file():
        return executable
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, "_base_executable", sys.executable)
    for command in ([base, "-m", "venv", str(CACHE)], [str(CACHE / "bin" / "pip"), "install", "-q", LABEL_STUDIO]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    marker.write_text(LABEL_STUDIO + "\n", encoding="utf-8")
    return executable


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    url: str

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One API call with the user's token; an HTTP error is returned as ``(status, text)``."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Token {TOKEN}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - http://127.0.0.1 only
                text = response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", errors="replace")
        return json.loads(text) if text else None


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as response:  # noqa: S310 - http://127.0.0.1 only
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    executable = _installed()
    data = tmp_path_factory.mktemp("label-studio") / "data"
    template = CACHE / "data-template"
    if template.is_dir():
        shutil.copytree(template, data)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "HOST"}  # HOST would be the server's public URL
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=str(data),
        LABEL_STUDIO_USERNAME=USER,
        LABEL_STUDIO_PASSWORD=PASSWORD,
        LABEL_STUDIO_USER_TOKEN=TOKEN,
        LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true",
        SENTRY_DSN="",  # no error reports leave the machine
        FRONTEND_SENTRY_DSN="",
        COLLECT_ANALYTICS="false",
        LATEST_VERSION_CHECK="false",
    )
    log = (data.parent / "server.log").open("w", encoding="utf-8")
    command = [str(executable), "start", "--internal-host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(data), "--no-browser", "--enable-legacy-api-token"]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (data.parent / "server.log").read_text(encoding="utf-8", errors="replace")[-3000:]
                pytest.fail(f"Label Studio did not start (exit {process.poll()}):\n{tail}")
            time.sleep(2)
        yield Server(url)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        log.close()
    if not template.is_dir() and (data / "label_studio.sqlite3").is_file():
        shutil.copytree(data, CACHE / "data-template.partial", dirs_exist_ok=True)
        (CACHE / "data-template.partial").rename(template)


def _project(server: Server, config: str) -> int:
    created = server.call("POST", "/api/projects", {"title": "procbench round trip", "label_config": config})
    assert isinstance(created, dict) and "id" in created, created
    return int(created["id"])


def test_label_studio_imports_annotates_and_exports_what_score_packet_scores(
    label_studio: Server, store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ls"
    exported = CliRunner().invoke(
        app,
        ["export", "--format", "label-studio", "textual-cloze/default", "--to", str(out), "--n", "6"]
        + ["--split", "all", "--store", str(store), "--json"],
    )
    assert exported.exit_code == 0, exported.output
    tasks = json.loads((out / "tasks.json").read_text(encoding="utf-8"))
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))["questions"]
    config = (out / "labeling_config.xml").read_text(encoding="utf-8")
    assert len(tasks) == len(key) >= 4

    project = _project(label_studio, config)
    imported = label_studio.call("POST", f"/api/projects/{project}/import", tasks)
    assert isinstance(imported, dict) and imported.get("task_count") == len(tasks), imported
    listed = label_studio.call("GET", f"/api/tasks?project={project}&page_size=1000")
    stored = listed["tasks"] if isinstance(listed, dict) else listed
    assert sorted(t["data"]["question_id"] for t in stored) == sorted(key)
    # a known answer pattern: the right letter for the first half of the questions (by id), a wrong one after
    ordered = sorted(stored, key=lambda t: t["data"]["question_id"])
    right = len(ordered) // 2
    for number, task in enumerate(ordered):
        truth = key[task["data"]["question_id"]]
        wrong = next(letter for letter in "ABCD" if letter != truth["answer"])
        result = [
            {
                "from_name": "answer",
                "to_name": "question",
                "type": "choices",
                "value": {"choices": [truth["answer"] if number < right else wrong]},
            }
        ]
        if number == 0:
            result.append(
                {"from_name": "flags", "to_name": "question", "type": "choices", "value": {"choices": ["ambiguous"]}}
            )
        posted = label_studio.call("POST", f"/api/tasks/{task['id']}/annotations", {"result": result})
        assert isinstance(posted, dict) and "id" in posted, posted
    export = label_studio.call("GET", f"/api/projects/{project}/export?exportType=JSON&download_all_tasks=true")
    assert isinstance(export, list) and len(export) == len(tasks), export
    answers = tmp_path / "label-studio-export.json"
    answers.write_text(json.dumps(export), encoding="utf-8")

    scored = CliRunner().invoke(app, ["score-packet", str(out), str(answers), "--no-record", "--json"])
    assert scored.exit_code == 0, scored.output
    (scores,) = json.loads(scored.stdout)["scores"]  # one annotator, one set: the known pattern's accuracy
    assert scores["set"] == "textual-cloze/default" and scores["n"] == len(tasks)
    assert scores["correct"] == right and scores["accuracy"] == pytest.approx(right / len(tasks))
    assert scores["ambiguous"] == 1 and scores["unanswered"] == []

    # a labeling config naming a field the tasks lack: Label Studio refuses the import (this test's check)
    wrong_config = config.replace('value="$html"', 'value="$question_html"')
    assert wrong_config != config
    refused = label_studio.call("POST", f"/api/projects/{_project(label_studio, wrong_config)}/import", tasks)
    assert isinstance(refused, tuple) and refused[0] == 400 and "question_html" in refused[1], refused
