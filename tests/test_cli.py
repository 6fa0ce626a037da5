from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from procbench.cli import app

from helpers import make_record, write_jsonl

runner = CliRunner()


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['procbench', '--help']\n"
        "from procbench.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "names = ('torch', 'faiss', 'sentence_transformers', 'sklearn', 'transformers')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "Commands" in out and "ingest" in out
    assert out.strip().endswith("HEAVY=")


def test_ingest_then_info_json(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [make_record("a", 4), "oops", make_record("b", 6, source="other")])
    store = str(tmp_path / "s")
    result = runner.invoke(app, ["ingest", str(path), "--store", store, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 2 and report["problems"][0]["where"] == "line 2"
    info = runner.invoke(app, ["info", "--store", store, "--json"])
    summary = json.loads(info.stdout)
    assert (summary["procedures"], summary["steps"]) == (2, 10)
    assert summary["by_source"] == {
        "other": {"procedures": 1, "steps": 6, "images": 0},
        "test": {"procedures": 1, "steps": 4, "images": 0},
    }
    counts = {"procedures": 2, "steps": 10, "images": 0}
    assert summary["by_category"] == {"Hobbies and Crafts": counts}
    assert summary["by_subcategory"] == {"Hobbies and Crafts > Woodworking": counts}
    assert [e["command"] for e in summary["provenance"]] == ["ingest"]


def test_info_renders_tables_not_raw_dicts_and_a_short_history(tmp_path: Path) -> None:
    records = [make_record(f"p{i}", 5) for i in range(12)]
    store = str(tmp_path / "s")
    for i in range(3):
        path = write_jsonl(tmp_path / f"in{i}.jsonl", records[4 * i : 4 * i + 4])
        assert runner.invoke(app, ["ingest", str(path), "--store", store]).exit_code == 0
    for args in (["clean"], ["embed", "-t", "hashed"], ["generate", "-t", "pair-order"]):
        done = runner.invoke(app, [*args, "--store", store])
        assert done.exit_code == 0, done.output
    out = runner.invoke(app, ["info", "--store", store, "--history", "2"], env={"COLUMNS": "120"}).stdout
    assert "{" not in out and "}" not in out  # no dict printed as Python
    assert "clean: kept 12 procedures" in out and "Embeddings" in out and "step_text.hashed" in out
    assert "Question sets" in out and "pair-order/default" in out
    assert "last 2 of 6; --history 0 for all" in out
    history = [line for line in out.splitlines() if line.startswith("│") and "UTC" not in line]
    assert sum("ingest" in line for line in history) == 0 and any("generate" in line for line in history)
    everything = runner.invoke(app, ["info", "--store", store, "--history", "0"], env={"COLUMNS": "120"}).stdout
    assert sum("ingest" in line for line in everything.splitlines()) == 3


def test_store_from_environment(tmp_path: Path, monkeypatch: object) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [make_record("a")])
    env_store = tmp_path / "env-store"
    result = runner.invoke(app, ["ingest", str(path)], env={"PROCBENCH_STORE": str(env_store)})
    assert result.exit_code == 0, result.output
    assert (env_store / "procedures.parquet").is_file()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["ingest", str(tmp_path / "missing.jsonl"), "--store", str(tmp_path / "s")])
    assert missing.exit_code == 2
    assert "no such file" in missing.stderr and "Traceback" not in missing.output
    assert len(missing.stderr.strip().splitlines()) == 1
    path = write_jsonl(tmp_path / "in.jsonl", [make_record("a")])
    unknown = runner.invoke(app, ["ingest", str(path), "--format", "csv", "--store", str(tmp_path / "s")])
    assert unknown.exit_code == 2 and "unknown format" in unknown.stderr
    no_store = runner.invoke(app, ["info", "--store", str(tmp_path / "nowhere")])
    assert no_store.exit_code == 2 and "no procbench store" in no_store.stderr


def test_console_script_runs(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("procbench")
    result = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("procbench ")


def test_help_shows_every_option_name_whole_at_80_columns() -> None:
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        out = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}).stdout
        assert max(len(line) for line in out.splitlines()) <= 80, name
        assert "…" not in out, name
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in out, (name, opt)


def test_help_keeps_every_word_whole_and_every_bracket_at_80_columns() -> None:
    """No help word is broken across lines (``step_first_sentenc e``), no ``[auto]`` default is eaten as Rich
    markup, docstring paragraphs reflow; generate's --task lists every registered task."""
    import typer.main
    from rich.text import Text

    from procbench.cli._help import escape_brackets, reflow
    from procbench.tasks import TASKS

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        out = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}).stdout
        words = set(out.split())
        texts = [reflow(command.help) or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            for word in Text.from_markup(escape_brackets(text) or "").plain.split():
                assert word in words, (name, word)
    generate = runner.invoke(app, ["generate", "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}).stdout
    task_help = " ".join(generate.split("--task", 1)[1].split("--knobs", 1)[0].split())
    assert all(f" {task}," in task_help or f" {task}." in task_help for task in TASKS.names())
    assert "question) [auto]." in " ".join(generate.split())


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    """Bad option values (--seed -1), unknown options and commands: one line on stderr, exit 2, no usage box."""
    for args, message in (
        (["generate", "--seed", "-1"], "Invalid value for '--seed'"),
        (["audit", "x", "--seed", str(2**32)], "Invalid value for '--seed'"),
        (["scrape", "wikihow", "--limit-per-category", "-1"], "--limit-per-category"),
        (["info", "--colour"], "No such option: --colour"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and "Usage" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1
    assert runner.invoke(app, ["info", "--help"]).exit_code == 0
    exe = Path(sys.executable).with_name("procbench")
    real = subprocess.run([str(exe), "generate", "--seed", "-1"], capture_output=True, text=True)
    assert real.returncode == 2 and len(real.stderr.strip().splitlines()) == 1 and "--seed" in real.stderr


def test_a_path_that_cannot_be_used_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [make_record("a")])
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(path), "--store", str(afile / "store")])
    assert result.exit_code == 2 and "Not a directory" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
