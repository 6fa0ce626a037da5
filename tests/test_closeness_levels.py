"""Difficulty levels of textual needs-context (``--closeness``): close calls kept by a rule symmetric in the four."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from procbench.card.models import record_model_rows
from procbench.cli import app
from procbench.errors import BadInput
from procbench.generate import Setting, generate, policy
from procbench.generate.exchangeable import fit_margins
from procbench.generate.settings import parse_setting
from procbench.generate.textual.closeness import close_sets, levels
from procbench.qsets import read_question_set
from procbench.readers.views import headroom, headroom_card_lines, headroom_html
from procbench.store import Store


def test_fit_margins_are_each_steps_own_fit_over_its_best_rival() -> None:
    fit = np.array(
        [
            [0.9, 0.5, 0.1, 0.0, 0.95],
            [0.2, 0.6, 0.7, 0.1, 0.0],
            [0.0, 0.0, 0.8, 0.3, 0.0],
            [0.4, 0.4, 0.4, 0.5, 0.0],
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    margins = fit_margins(fit, np.array([[0, 1, 2, 3], [0, 1, 3, 4]]))
    np.testing.assert_allclose(margins[0], [0.4, -0.1, 0.5, 0.1])
    np.testing.assert_allclose(margins[1], [-0.05, 0.4, 0.1, 1.0])  # step 4's title is step 0's rival now


def test_levels_keep_fewer_and_closer_sets() -> None:
    """Level 0 keeps every set; each level keeps a subset of the one below, all within its bound."""
    rng = np.random.default_rng(0)
    sets = np.array([[0, 1, 2, 3], [0, 1, 2, 4], [1, 2, 3, 4], [0, 2, 3, 4], [0, 1, 3, 4]])
    fits = [rng.uniform(size=(5, 5)) + np.eye(5) * rng.uniform(0, 0.2, size=5) for _ in range(2)]
    kept = [set(map(tuple, close_sets(sets, fits, level).tolist())) for level in range(levels() + 1)]
    assert kept[0] == set(map(tuple, sets.tolist()))
    bounds = policy.current().CLOSENESS_MARGINS
    for level in range(1, levels() + 1):
        assert kept[level] <= kept[level - 1]
        for s in kept[level]:
            margin = np.mean([fit_margins(f, np.array([s])).mean() for f in fits])
            assert margin <= bounds[level - 1]
    with policy.overridden(CLOSENESS_MARGINS=(np.inf, -np.inf)):
        assert len(close_sets(sets, fits, 1)) == len(sets) and len(close_sets(sets, fits, 2)) == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(4, 8), st.integers(0, 2**32 - 1), st.integers(1, 2))
def test_the_level_rule_treats_the_steps_alike(n: int, seed: int, level: int) -> None:
    """Relabelling the steps relabels the kept sets: the rule never favours a step by its place, so the answer
    (uniform among the four) stays exchangeable at every level."""
    from itertools import combinations

    rng = np.random.default_rng(seed)
    fits = [rng.uniform(size=(n, n)) * 0.3 + np.eye(n) * 0.05 for _ in range(2)]
    sets = np.array(list(combinations(range(n), 4)))
    kept = {tuple(s) for s in close_sets(sets, fits, level).tolist()}
    perm = rng.permutation(n)
    moved = close_sets(sets, [f[np.ix_(perm, perm)] for f in fits], level)
    assert {tuple(sorted(perm[s].tolist())) for s in moved} == kept


def test_a_level_is_a_setting_of_its_own_folder() -> None:
    assert Setting("needs-context", closeness=2).name == "needs-context-c2"
    assert Setting("needs-context").name == "needs-context"
    assert parse_setting("needs-context-c1") == Setting("needs-context", closeness=1)
    with pytest.raises(BadInput, match="only with --style needs-context"):
        Setting("adversarial", closeness=1)
    with pytest.raises(BadInput, match="from 0 to 2"):
        parse_setting("needs-context-c3")


def test_harder_levels_write_their_own_sets_and_say_their_rule(titled_store: Path) -> None:
    counts = {}
    for level in range(levels() + 1):
        with policy.overridden(CLOSENESS_MARGINS=(0.5, 0.3)):  # the hashed encoder's margins are wide
            result = generate(
                Store.open(titled_store), "textual-cloze", Setting("needs-context", closeness=level), seed=1
            )
        name = Setting("needs-context", closeness=level).name
        counts[level] = result.questions[name]
        folder = titled_store / "questions" / "textual-cloze" / name
        qset = read_question_set(folder)
        assert sum(qset.split(split).num_rows for split in ("train", "val", "test")) == counts[level]
        assert json.loads((folder / "options.json").read_text())["options"]["setting"] == name
        if level:
            assert "closeness level L" in (folder / "card.md").read_text()
    assert counts[0] >= counts[1] >= counts[2] > 0, counts


def test_closeness_is_refused_where_it_has_no_meaning(titled_store: Path) -> None:
    runner = CliRunner()
    for args, said in [
        (["--task", "textual-cloze", "--adversarial", "--closeness", "1"], "only with --style needs-context"),
        (["--task", "visual-cloze", "--style", "needs-context", "--closeness", "1"], "apply to textual-cloze"),
        (["--task", "textual-cloze", "--style", "needs-context", "--closeness", "7"], "from 0 to 2"),
    ]:
        result = runner.invoke(app, ["generate", "--store", str(titled_store), *args])
        assert result.exit_code == 2, result.output
        assert said in result.output.replace("\n", " ")


def test_headroom_is_readers_with_the_context_minus_the_best_model() -> None:
    readers = [
        {"context": "with", "n": 40, "correct": 39, "accuracy": 0.975},
        {"context": "with", "n": 40, "correct": 36, "accuracy": 0.9},
        {"context": "without", "n": 40, "correct": 11, "accuracy": 0.275},  # not the context's side
    ]
    models = {
        "context-tfidf": {"accuracy": {"value": 0.44}},
        "context-embedding": {"accuracy": {"value": 0.48}},
        "chance": {"accuracy": {"value": 0.25}},
    }
    h = headroom("textual-cloze/needs-context-c2", readers, models)
    assert h is not None and h.answers == 80 and h.model == "context-embedding"
    assert h.readers == pytest.approx(75 / 80) and h.points == pytest.approx(100 * (75 / 80 - 0.48))
    lines = "\n".join(headroom_card_lines([h, None]))
    assert "## Headroom" in lines and "93.8% (80 answers)" in lines and "+45.8 points" in lines
    assert headroom("x", readers[2:], models) is None and headroom("x", readers, {}) is None
    assert "+45.8" in headroom_html([h]) and headroom_html([None]) == ""


def test_the_report_shows_a_sets_headroom(titled_store: Path, tmp_path: Path) -> None:
    """A set with readers and model rows recorded: the HTML report states readers minus the best model."""
    store = Store.open(titled_store)
    generate(store, "textual-cloze", Setting("needs-context"), seed=2, overwrite=True)
    folder = titled_store / "questions" / "textual-cloze" / "needs-context"
    record_model_rows(folder, {"context-tfidf": {"accuracy": {"value": 0.6, "ci": None, "n": 10}}})
    readers = {"results": [{"reader": "r1", "context": "with", "n": 20, "correct": 19, "accuracy": 0.95}]}
    (folder / "readers.json").write_text(json.dumps(readers))
    result = CliRunner().invoke(
        app, ["report", "--store", str(titled_store), "textual-cloze/needs-context", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Headroom" in page and "context-tfidf 60.0%" in page and "+35.0" in page
