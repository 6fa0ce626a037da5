"""Question tables, the Arrow-built RecipeQA JSON, answer placement and the vectorised band selection."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from procbench.formats.recipeqa import RecipeQAWriter, json_strings
from procbench.generate.answers import answer_orders, place_answers
from procbench.generate.policy import current
from procbench.generate.visual.bands import LEVELS, Candidates, band_bounds
from procbench.generate.visual.selection import _band_ranges, _distinct, _random_true, _running_count
from procbench.qsets import Question, procedure_ids
from procbench.qsets.columns import dictionary, fixed_lists, questions_table, ranges
from procbench.qsets.files import _table

DUPLICATE_DISTANCE = current().DUPLICATE_DISTANCE

TRICKY = [
    "plain",
    'quote " and \\ backslash',
    "new\nline\ttab\rcr",
    "bell\x07 and \x1f",
    "naïve café ☕",
    "",
    "\u2028",
]


def _steps(titles: list[str | None], texts: list[str | None]) -> pa.Table:
    n = len(titles)
    return pa.table(
        {
            "procedure_id": ["p:a"] * n,
            "index": pa.array(range(n), pa.int32()),
            "title": pa.array(titles, pa.string()),
            "text": pa.array(texts, pa.string()),
            "image_ids": pa.array([[f"{i:02x}img{i}"] for i in range(n)], pa.list_(pa.string())),
        }
    )


def _reference(task: str, table: pa.Table, steps: pa.Table) -> list[dict[str, Any]]:
    """What the json module makes of the same questions (the straightforward way)."""
    visual = task.startswith("visual")
    by_index = {s["index"]: s for s in steps.to_pylist()}

    def item(x: str) -> str:
        return x if not visual or x == "@placeholder" else f"{x[:2]}/{x}.jpg"

    rows = []
    for row in table.drop_columns(["meta"]).to_pylist():
        rows.append(
            {
                "qid": row["qid"],
                "recipe_id": row["procedure_id"],
                "task": task.replace("-", "_"),
                "split": row["split"],
                "context": [
                    {
                        "id": i,
                        "title": "" if task == "textual-cloze" else by_index[i]["title"] or "",
                        "body": by_index[i]["text"],
                        "images": [] if visual else [f"{x[:2]}/{x}.jpg" for x in by_index[i]["image_ids"]],
                    }
                    for i in row["context"]
                ],
                "question": [item(x) for x in row["question"]],
                "choice_list": [[item(x) for x in c] if isinstance(c, list) else item(c) for c in row["choices"]],
                "answer": row["answer"],
            }
        )
    return rows


def _without_text(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "question_text"} for r in rows]


def test_json_strings_escape_like_the_json_module() -> None:
    values = pa.array([*TRICKY, None], pa.string())
    rendered = json_strings(values).to_pylist()
    assert rendered[:-1] == [json.dumps(v, ensure_ascii=False) for v in TRICKY] and rendered[-1] is None
    assert json_strings(values.dictionary_encode()).to_pylist() == rendered


def test_recipeqa_json_matches_the_json_module(tmp_path: Path) -> None:
    titles = [*TRICKY, None]
    steps = _steps(titles, [f"text {t!s}" if t else None for t in titles])
    cases = {
        "textual-cloze": ["@placeholder", TRICKY[1]],
        "visual-cloze": ["@placeholder", "abimg1"],
        "sequencing": [TRICKY[2], TRICKY[3]],
    }
    for task, items in cases.items():
        ordering = task == "sequencing"
        questions = [
            Question(
                "p:a",
                context,
                items,
                [items[::-1], items] if ordering else [items[1], TRICKY[4], "cdimg2", "x"],
                answer,
                {"setting": "s"},
            )
            for context, answer in (
                ([0, 1, 2], 0),
                (list(range(8)), 1),  # the whole procedure: the shared rendering
                ([3, 4, 5, 6, 7], 1),
                ([2, 0, 1], 0),
                ([0, 1, 2], 1),
            )
        ]
        table = _table(task, questions, {"p:a": "test"})
        path = tmp_path / f"{task}.json"
        RecipeQAWriter(task, steps).write(path, table)
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["version"].startswith("procbench-")
        assert _without_text(document["data"]) == _reference(task, table, steps)
        assert [r["qid"] for r in document["data"]] == [f"p:a#{i}" for i in range(5)]


def test_qids_count_each_procedures_questions_in_order() -> None:
    names = ["b", "a", "b", "c", "a", "b"]
    questions = [Question(p, [], ["x"], ["y", "z"], 0, {"n": i}) for i, p in enumerate(names)]
    table = _table("pair-order", questions, {p: "train" for p in names})
    assert table["qid"].to_pylist() == ["b#0", "a#0", "b#1", "c#0", "a#1", "b#2"]
    assert procedure_ids(questions) == procedure_ids(questions_table(questions)) == {"a", "b", "c"}
    encoded = questions_table(questions).set_column(
        0, "procedure_id", dictionary(np.array([1, 0, 1, 2, 0, 1]), pa.array(["a", "b", "c", "unused"]))
    )
    assert procedure_ids(encoded) == {"a", "b", "c"}
    assert _table("pair-order", encoded, {p: "train" for p in names})["qid"].to_pylist()[:3] == ["b#0", "a#0", "b#1"]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 300), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_answer_orders_balance_and_place(n: int, k: int, seed: int) -> None:
    positions, wrong = answer_orders(n, k, np.random.default_rng(seed))
    counts = Counter(positions.tolist())
    assert n == 0 or max(counts.values()) - min(counts.get(i, 0) for i in range(k)) <= 1
    assert (np.sort(wrong, axis=1) == np.arange(k - 1)).all()
    correct = np.arange(n) + 100
    choices = place_answers(correct, np.take_along_axis(np.tile(np.arange(k - 1), (n, 1)), wrong, axis=1), positions)
    assert (choices[np.arange(n), positions] == correct).all()
    assert (np.sort(np.where(choices >= 100, -1, choices), axis=1)[:, 1:] == np.arange(k - 1)).all()


def test_ranges_and_fixed_lists() -> None:
    assert ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist() == [5, 6, 9, 10, 11]
    assert fixed_lists(np.arange(6), 3).to_pylist() == [[0, 1, 2], [3, 4, 5]]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.integers(1, 40),
    st.integers(0, 1),
    st.floats(0.0, 0.4),
    st.integers(0, 2**32 - 1),
)
def test_band_runs_equal_the_band_rule(n_q: int, k: int, k2: int, invalid_rate: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dist = np.sort(rng.choice([0.0, DUPLICATE_DISTANCE, 0.3, 0.5, 0.7], (n_q, k)) + rng.random((n_q, k)) * 0.01, 1)
    rows = rng.integers(0, 1000, (n_q, k))
    n_valid = rng.integers(0, k + 1, n_q) if invalid_rate else np.full(n_q, k)
    rows[np.arange(k) >= n_valid[:, None]] = -1
    cands = Candidates.from_rows(dist.astype(np.float32), rows)
    lo, hi = band_bounds(cands.m, cands.s, k2)
    start, end = _band_ranges(cands, lo, hi)
    d = cands.dist.astype(np.float64)
    for level in range(len(LEVELS)):
        rule = (rows >= 0) & (d > np.maximum(lo[:, [level]], DUPLICATE_DISTANCE)) & (d < hi[:, [level]])
        cols = np.arange(k)
        run = (cols >= start[:, [level]]) & (cols < end[:, [level]])
        assert (rule == run).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 30), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_random_draws_stay_in_their_ranges(n_q: int, k: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_q, k)) < 0.4
    start = rng.integers(0, k + 1, n_q)
    end = np.maximum(start, rng.integers(0, k + 1, n_q))
    col = _random_true(_running_count(mask), start, end, rng.random(n_q))
    for b in range(n_q):
        allowed = [c for c in range(start[b], end[b]) if mask[b, c]]
        assert (col[b] in allowed) if allowed else col[b] == -1
    n = rng.integers(m, m + 6, n_q)
    picks = _distinct(n, rng.random((n_q, m)))
    assert ((picks >= 0) & (picks < n[:, None])).all()
    assert all(len(set(row)) == m for row in picks.tolist())


def test_distinct_draws_are_uniform() -> None:
    picks = _distinct(np.full(60_000, 5), np.random.default_rng(0).random((60_000, 2)))
    counts = Counter(map(tuple, np.sort(picks, axis=1).tolist()))
    assert len(counts) == 10 and max(counts.values()) / min(counts.values()) < 1.15
