"""procbench export (Hugging Face layout, card, Croissant) and procbench report (static HTML, headless browser)."""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from procbench.cli import app
from procbench.embed import embed_store
from procbench.export import export_sets
from procbench.generate import Setting, generate
from procbench.report import write_report
from procbench.store import Store


@pytest.fixture(scope="module")
def store_template(sample_visual_sweeps: tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from procbench.audit import run_audit

    root = tmp_path_factory.mktemp("publish")
    # the sample with hashed step-title and colour-layout image embeddings and the visual-cloze sweep (seed 3,
    # demo-sized adversarial filtering), shared with test_generate_visual; the sweep's 13 settings are kept, and
    # step texts embedded for the needs-context settings (visual-cloze's 14th; textual cloze's)
    shutil.copytree(sample_visual_sweeps[0], root / "store")
    for other in ("visual-cloze/recipeqa", "visual-coherence", "visual-ordering"):
        shutil.rmtree(root / "store" / "questions" / other)
    store = Store.open(root / "store")
    embed_store(store, text_encoder="hashed", fields="step_text")
    generate(store, "visual-cloze", Setting("needs-context"), seed=3)
    generate(store, "sequencing", seed=0)
    generate(store, "pair-order", seed=0)
    generate(store, "textual-cloze", sweep=True, seed=0, policy="demo")  # every textual setting, filters demo-sized
    sets = [store.root / "questions" / s for s in ("visual-cloze/knobs-000", "visual-cloze/knobs-011")]
    out = store.root / "questions" / "audit.json"
    # per_question: shortcut_scores.parquet in each set folder, as `procbench audit --per-question` writes it
    run_audit(sets, store=store, out=out, n_boot=50, probes="answer_position", per_question=True)
    return root / "store"


@pytest.fixture
def store(store_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    shutil.copytree(store_template, tmp_path / "store")
    return tmp_path / "store"


def _settings(store: Path, task: str) -> list[str]:
    return sorted(p.name for p in (store / "questions" / task).iterdir() if p.is_dir())


def _rows(store: Path, task: str, setting: str, split: str) -> pa.Table:
    return pq.read_table(store / "questions" / task / setting / f"{split}.parquet")


# -- export ---------------------------------------------------------------------------------------------------


def test_a_sweep_loads_config_by_config_without_the_store(store: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hf"
    result = export_sets(["visual-cloze"], out, store=store)
    settings = _settings(store, "visual-cloze")
    assert sorted(result.configs) == settings and len(settings) == 14  # configs named by setting, none hard-coded
    shutil.rmtree(store)  # the export must not need the store
    schemas = set()
    for setting in settings:
        loaded = datasets.load_dataset(str(out), setting, cache_dir=str(tmp_path / "cache"))
        assert set(loaded) == set(result.configs[setting])
        for hub_split, n in result.configs[setting].items():
            assert loaded[hub_split].num_rows == n
        schemas.add(json.dumps(loaded["train"].features.to_dict(), sort_keys=True))
        row = loaded["train"][0]
        assert row["setting"] == setting and row["task"] == "visual-cloze"
        assert json.loads(row["meta"])["setting"] == setting
        blanks = [i for i in row["question"] if i["key"] == "@placeholder"]
        assert len(blanks) == 1 and blanks[0]["image"] is None
        images = [i["image"] for i in [*row["question"], *row["choices"]] if i["key"] != "@placeholder"]
        # PIL images, decoded from the bytes; needs-context's question is the blank alone
        assert len(images) == (4 if setting == "needs-context" else 7) and all(im.size[0] > 0 for im in images)
        assert row["context"] and row["context"][0]["text"]
    assert len(schemas) == 1  # one schema across the sweep, although meta differs per setting


_LOAD_EVERY_CONFIG = """
import json, sys
import yaml
from datasets import load_dataset

out = sys.argv[1]
header = yaml.safe_load(open(out + "/README.md", encoding="utf-8").read().split("---\\n")[1])
loaded = {}
for config in header["configs"]:
    ds = load_dataset(out, config["config_name"])
    loaded[config["config_name"]] = {split: ds[split].num_rows for split in ds}
    assert json.loads(ds["train"][0]["meta"])["setting"] == ds["train"][0]["setting"]
print(json.dumps(loaded))
"""


def test_a_textual_sweep_loads_in_a_fresh_offline_process(store: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "hf"
    result = export_sets(["textual-cloze"], out, store=store)
    # the recommended setting is the default config: the setting `default` gets another config name
    assert sorted(result.configs) == ["adversarial", "debias-auto", "default-sampler", "needs-context", "recipeqa"]
    shutil.rmtree(store)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "HF_HOME": str(tmp_path / "home" / "hf"),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }  # no PYTHONPATH: procbench is not needed to read an export
    run = subprocess.run(  # noqa: S603
        [sys.executable, "-c", _LOAD_EVERY_CONFIG, str(out)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == result.configs
    card = (out / "README.md").read_text()
    assert "adversarial filtering: at most 4 rounds" in card and "negatives replaced in" in card
    assert "budget auto:" in card and "yield " in card


def test_order_and_text_tasks_inline_their_items(store: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hf"
    result = export_sets(["sequencing", "pair-order/default", "textual-cloze/default"], out, store=store)
    assert sorted(result.configs) == ["pair-order-default", "sequencing-default", "textual-cloze-default"]
    cache = str(tmp_path / "cache")  # datasets' own cache per test: another run's export never answers for this one
    sequencing = datasets.load_dataset(str(out), "sequencing-default", cache_dir=cache)["train"]
    original = _rows(store, "sequencing", "default", "train").to_pylist()
    for row, raw in zip(sequencing, original, strict=True):
        assert [i["key"] for i in row["question"]] == raw["question"]
        authored = [row["question"][p]["key"] for p in row["choice_orders"][0]]
        assert authored == raw["choices"][0] and row["choices"] == []
        assert all(i["text"] for i in row["question"])  # step texts inlined
    pair = datasets.load_dataset(str(out), "pair-order-default", cache_dir=cache)["test"][0]
    assert [c["text"] for c in pair["choices"]] == ["inverted", "in order"]
    cloze = datasets.load_dataset(str(out), "textual-cloze-default", cache_dir=cache)["test"][0]
    # step titles are titles: in `title`, with `text` null; the context leaves titles out
    assert all(c["title"] and c["text"] is None for c in cloze["choices"])
    assert all(i["title"] and i["text"] is None for i in cloze["question"] if i["key"] != "@placeholder")
    assert all(s["title"] is None for s in cloze["context"])
    assert cloze["choices"][cloze["answer"]]["title"] not in {s["text"] for s in cloze["context"]}
    # the sample's woodworking and decoration procedures are procedures; its cooking ones recipes
    words = {
        row["category"][0]: row["instruction"]
        for row in datasets.load_dataset(str(out), "textual-cloze-default", cache_dir=cache)["train"]
    }
    assert words["Hobbies and Crafts"].endswith("complete the procedure.")
    assert words["Food and Entertaining"].endswith("complete the recipe.")


def test_the_card_is_what_the_hub_reads(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    export_sets(["visual-cloze"], out, store=store)
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["license"] == "cc0-1.0" and header["language"] == ["en"]
    assert header["task_categories"] == ["multiple-choice"] and header["size_categories"] == ["1K<n<10K"]
    configs = {c["config_name"]: c for c in header["configs"]}
    assert sorted(configs) == _settings(store, "visual-cloze")
    for config in configs.values():
        for files in config["data_files"]:
            assert list(out.glob(files["path"])), files
    audit = json.loads((store / "questions" / "audit.json").read_text())["sets"]["visual-cloze/knobs-011"]
    position = audit["probes"]["answer_position"]
    assert f"{position['value']:.3f} [{position['ci'][0]:.3f}, {position['ci'][1]:.3f}]" in text
    assert "| image | colour-layout |" in text and "@inproceedings{sahu2022challenges" in text


def test_an_audit_older_than_its_set_is_not_reported(store: Path, tmp_path: Path) -> None:
    audit = store / "questions" / "audit.json"
    written = (store / "questions" / "visual-cloze" / "knobs-011" / "train.parquet").stat().st_mtime
    os.utime(audit, (written - 60, written - 60))  # the set was regenerated after the audit
    export_sets(["visual-cloze/knobs-011"], tmp_path / "hf", store=store)
    text = (tmp_path / "hf" / "README.md").read_text()
    assert "Not audited yet" in text and "| answer_position |" not in text


def test_croissant_validates_and_reads(store: Path, tmp_path: Path) -> None:
    mlc = pytest.importorskip("mlcroissant")
    out = tmp_path / "hf"
    export_sets(["visual-cloze/knobs-011", "sequencing"], out, store=store)
    dataset = mlc.Dataset(jsonld=str(out / "croissant.json"))  # raises ValidationError on an invalid file
    assert not dataset.metadata.issues.errors
    records = dataset.records("visual-cloze-knobs-011")
    first = next(iter(records))
    split_of = {
        qid: path.name.split("-")[0]
        for path in (out / "data" / "visual-cloze-knobs-011").glob("*.parquet")
        for qid in pq.read_table(path, columns=["qid"])["qid"].to_pylist()
    }
    qid = first["visual-cloze-knobs-011/qid"].decode()
    assert first["visual-cloze-knobs-011/split"].decode() == split_of[qid]
    images = [i["visual-cloze-knobs-011/choices/image"] for i in first["visual-cloze-knobs-011/choices"]]
    assert len(images) == 4 and all(im.size[0] > 0 for im in images)


def test_cli_export_errors_and_json(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["export", "nope/none", "--to", str(tmp_path / "x"), "--store", str(store)])
    assert missing.exit_code == 2 and "no question set" in missing.stderr
    bad = runner.invoke(
        app, ["export", "sequencing", "--to", str(tmp_path / "x"), "--format", "zip", "--store", str(store)]
    )
    assert bad.exit_code == 2
    out = tmp_path / "hf"
    ok = runner.invoke(app, ["export", "sequencing", "--to", str(out), "--json", "--store", str(store)])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["configs"]["default"]["train"] > 0
    again = runner.invoke(app, ["export", "sequencing", "--to", str(out), "--store", str(store)])
    assert again.exit_code == 2 and "--overwrite" in again.stderr
    over = runner.invoke(app, ["export", "sequencing", "--to", str(out), "--overwrite", "--store", str(store)])
    assert over.exit_code == 0, over.output


# -- report ---------------------------------------------------------------------------------------------------


def _page_data(page: Path) -> dict[str, Any]:
    match = re.search(r'<script id="qset-data" type="application/json">(.*?)</script>', page.read_text(), re.S)
    assert match
    return json.loads(match.group(1).replace("<\\/", "</"))


def _scores(store: Path) -> dict[str, float]:
    """The per-question shortcut scores ``procbench audit --per-question`` wrote for visual-cloze/knobs-011."""
    table = pq.read_table(store / "questions" / "visual-cloze" / "knobs-011" / "shortcut_scores.parquet")
    return {
        q: s
        for q, s in zip(table["qid"].to_pylist(), table["shortcut_score"].to_pylist(), strict=True)
        if s is not None
    }


def test_report_pages_are_offline_and_complete(store: Path, tmp_path: Path) -> None:
    scores = _scores(store)
    out = tmp_path / "report"
    result = write_report(["visual-cloze", "sequencing"], out, store=store, runs=[])
    index = (out / "index.html").read_text()
    for setting in _settings(store, "visual-cloze"):
        assert f'href="sets/visual-cloze--{setting}.html"' in index
    assert index.count("<circle") == 2  # the audited probe, one interval per audited set
    assert index.count('class="hist"') >= 8  # Fig. 2 distances for the visual sets
    for page in [out / "index.html", *(out / "sets").glob("*.html")]:
        html = page.read_text()
        loads = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="([^"]+)"', html)
        assert loads and not [u for u in loads if re.match(r"[a-z]+:", u)], page  # nothing fetched from anywhere
    data = _page_data(result.pages["visual-cloze/knobs-011"])
    assert data["has_scores"] and len(data["questions"]) == data["total"]
    assert all(q["score"] == scores[q["qid"]] for q in data["questions"])
    assert [q["split"] for q in data["questions"]][0] == "test"
    images = {i["img"] for q in data["questions"] for i in [*q["question"], *q["choices"]] if "img" in i}
    assert images and all((out / p).is_file() for p in images)
    # the sample's images are drawn by procbench: said on every page that shows them; its URLs are reserved hosts
    assert "Synthetic images." in index and "Synthetic images." in result.pages["visual-cloze/knobs-011"].read_text()
    assert all(q["url"] is None for q in data["questions"])
    # settings explained: a glossary on the index, the setting's meaning on its page
    assert '<h2 id="settings">Settings</h2>' in index and "<code>knobs-K1K2K3</code>" in index
    assert "Control-Knobs" in result.pages["visual-cloze/knobs-011"].read_text()
    # 13 visual-cloze settings audited? only two here: one table; each table has at most 7 settings
    assert all(t.count("<th><span title=") <= 7 for t in index.split('<table class="audit">')[1:])


def test_the_report_says_how_the_sets_were_audited() -> None:
    """`procbench demo` audits at a smaller size than `procbench audit` (3 folds, 200 replicates, smaller trees):
    the report states the folds, replicates and trees the probes' details record."""
    from types import SimpleNamespace

    from procbench.report.html import _audit_settings

    def view(**partial_input: Any) -> Any:
        probes = {"length": {"details": {"n_folds": 3, "n_boot": 200}}, "partial_input": {"details": partial_input}}
        return SimpleNamespace(audit={"probes": probes})

    trees = "60 boosting iterations over 63 bins per feature"
    line = _audit_settings([view(n_folds=3, n_boot=200, trees=trees), view(n_folds=5, n_boot=200)])
    assert line == (
        '<p class="muted">Audited with 3 / 5 procedure-grouped folds; 200 bootstrap replicates per interval; '
        f"partial-input trees of {trees}.</p>"
    )
    assert _audit_settings([SimpleNamespace(audit=None)]) == ""


def test_report_links_only_urls_that_can_exist() -> None:
    from procbench.report.data import real_url

    assert real_url("https://www.wikihow.com/Make-Tea") == "https://www.wikihow.com/Make-Tea"
    assert real_url("http://www.instructables.com/x/") == "http://www.instructables.com/x/"
    for url in (
        "https://sample.procbench.invalid/Make-Tea",
        "https://example.org/sample/Make-Tea",
        "https://www.example.com/a",
        "http://localhost:8000/x",
        "http://shop.test/",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,x",
        "not a url",
        "",
        None,
    ):
        assert real_url(url) is None, url


class _Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe (fds 3/4): no websocket, no port."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser, self._w = os.pipe()
        self._r, from_browser = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 and 4, inheritable
            import fcntl

            a = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run"]
        args += ["--no-default-browser-check", f"--user-data-dir={profile}", "--window-size=1280,1600", "about:blank"]
        self.proc = subprocess.Popen(  # noqa: S603
            args, close_fds=False, preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._r], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                return reply.get("result", {})
            self.events.append(reply)

    def wait(self, method: str) -> None:
        deadline = time.monotonic() + 60
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(deadline))
        self.events = [e for e in self.events if e.get("method") != method]

    def open(self, url: str) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait("Page.loadEventFired")
        return str(session)

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        return result["result"].get("value")

    def errors(self) -> list[Any]:
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(params["exceptionDetails"])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(params)
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append(params["entry"])
        return out

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)
        os.close(self._r)


def _browser() -> str | None:
    for name in (os.environ.get("PROCBENCH_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


_STATE = (
    "JSON.stringify({ready: document.body.dataset.ready, rendered: document.querySelectorAll('.question').length,"
    " matching: Number(document.body.dataset.matching), answers: document.querySelectorAll('.choice.answer').length,"
    " images: document.images.length,"
    " broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length})"
)


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_in_headless_chromium(store: Path, tmp_path: Path) -> None:
    scores = _scores(store)
    out = tmp_path / "report"
    result = write_report(["visual-cloze", "sequencing"], out, store=store, runs=[])
    browser = _Chromium(str(_browser()), tmp_path / "profile")
    try:
        index = browser.open((out / "index.html").as_uri())
        assert browser.evaluate(index, "document.querySelectorAll('svg.hist').length") >= 8
        page = result.pages["visual-cloze/knobs-011"]
        session = browser.open(page.as_uri())
        state = json.loads(browser.evaluate(session, _STATE))
        total = len(_page_data(page)["questions"])
        assert state["ready"] == "1" and state["matching"] == total and state["rendered"] == min(20, total)
        assert state["answers"] == state["rendered"]  # every question shows its answer
        assert state["images"] == 7 * state["rendered"] and state["broken"] == 0  # 3 items + 4 choices, all decoded
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        (tmp_path / "knobs-011.png").write_bytes(base64.b64decode(shot["data"]))
        select_test = (
            "(() => { const s = document.getElementById('split'); s.value = 'test';"
            " s.dispatchEvent(new Event('change')); return Number(document.body.dataset.matching); })()"
        )
        tests = _rows(store, "visual-cloze", "knobs-011", "test").num_rows
        assert browser.evaluate(session, select_test) == tests
        test_qids = set(_rows(store, "visual-cloze", "knobs-011", "test")["qid"].to_pylist())
        test_scores = sorted(s for q, s in scores.items() if q in test_qids)
        threshold = round(round(test_scores[len(test_scores) // 2] / 0.05) * 0.05, 2)  # on the slider's steps
        expected = sum(1 for s in test_scores if s >= threshold)
        assert 0 < expected < tests  # the filter keeps some test questions and drops others
        slide = (
            f"(() => {{ const s = document.getElementById('score'); s.value = '{threshold}';"
            " s.dispatchEvent(new Event('input')); return Number(document.body.dataset.matching); })()"
        )
        assert browser.evaluate(session, slide) == expected
        ordering = browser.open(result.pages["sequencing/default"].as_uri())
        state = json.loads(browser.evaluate(ordering, _STATE))
        assert state["rendered"] > 0 and state["broken"] == 0
        assert browser.errors() == []
        assert {u.split(":", 1)[0] for u in browser.requested()} == {"file"}
    finally:
        browser.close()


def test_the_cards_usage_snippet_loads_the_export_and_hub_parses_the_card(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("datasets")
    from huggingface_hub import DatasetCard as HubCard

    monkeypatch.chdir(tmp_path)
    result = export_sets(["visual-cloze"], "hf/visual-cloze", store=store, contact="procbench@example.org")
    text = (tmp_path / "hf" / "visual-cloze" / "README.md").read_text(encoding="utf-8")
    card = HubCard(text)
    defaults = [c["config_name"] for c in card.data.to_dict()["configs"] if c.get("default")]
    assert defaults == ["needs-context"] and "needs-context" in result.configs  # the recommended setting
    snippet = text.split("## Usage\n\n```python\n", 1)[1].split("```", 1)[0]
    assert 'load_dataset("hf/visual-cloze", "needs-context")' in snippet.replace("'", '"')
    scope: dict[str, Any] = {}
    exec(compile(snippet, "card-usage", "exec"), scope)  # noqa: S102 - the card's own snippet, as a reader runs it
    assert scope["q"]["setting"] == "needs-context" and scope["q"]["instruction"]
    # the example is the first test question of the default config, images by id
    first = pq.read_table(store / "questions" / "visual-cloze" / "needs-context" / "test.parquet")["qid"][0].as_py()
    assert f"`qid` `{first}`" in text and "🖼 image `" in text and "✅ (answer)" in text
    assert "Questions, corrections and takedown requests: procbench@example.org" in text
    assert "PATH_OR_REPO" not in text and "answer positions:" not in text
    # wide audit tables are split: no table row names more than 5 settings
    assert all(
        line.count("`knobs-") + line.count("`adversarial`") <= 5 for line in text.splitlines() if "| probe |" in line
    )
