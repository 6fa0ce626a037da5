from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procbench.clean import clean_store, strip_step_indicator
from procbench.corpus import load_sample
from procbench.embed import embed_store, load_embeddings, load_index
from procbench.errors import BadInput
from procbench.generate import Setting, assign_splits, generate
from procbench.generate import textual as tc
from procbench.generate.debias import ClusterBudget, cluster_titles, default_n_clusters, draw_negatives
from procbench.generate.options import TextualClozeOptions
from procbench.generate.policy import current, overridden
from procbench.generate.textual import candidates as textual_candidates
from procbench.generate.textual import pool as textual_pool
from procbench.ingest import ingest_file
from procbench.qsets import read_question_set
from procbench.store import Store
from procbench.store.views import kept_procedures, kept_steps

from helpers import make_record, write_jsonl

INDICATOR = re.compile(r"^\s*(step|part)\s*\d+\b|^\s*\d+\s*[.):]", re.IGNORECASE)


def _records() -> list[dict[str, Any]]:
    """The sample corpus made awkward: step numbers in titles, shared closers, short, long and untitled ones."""
    records = load_sample()
    for i, record in enumerate(records):
        if i % 2 == 0:
            for j, step in enumerate(record["steps"]):
                step["title"] = f"Step {j + 1}: {step['title']}"
        if i % 5 == 0:  # the same closer in many procedures, spelled a little differently
            record["steps"][-1]["title"] = "Enjoy your project!" if i % 10 else "enjoy your project."
    short = make_record("Too-Short", 2)
    long = make_record("Too-Long", 26)
    three = make_record("Three-Steps", 3)
    untitled = make_record("No-Window", 6)
    for j in (1, 3, 5):
        untitled["steps"][j]["title"] = None
    repeated = make_record("Repeated-Title", 6)
    repeated["steps"][1]["title"] = repeated["steps"][3]["title"] = "Sand the wood."
    return [*records, short, long, three, untitled, repeated]


def _build(root: Path, records: list[dict[str, Any]], *, clean: bool = False) -> Path:
    store = root / "store"
    ingest_file(store, write_jsonl(root / "in.jsonl", records))
    if clean:
        clean_store(store, min_steps=1, max_steps=100)
    embed_store(store, text_encoder="hashed", image_encoder="colour-layout", fields="step_title")
    return store


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("tc-sample"), load_sample())


@pytest.fixture(scope="module")
def awkward_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("tc-awkward"), _records())


def _copy(src: Path, dst: Path) -> Store:
    shutil.copytree(src, dst)
    return Store.open(dst)


class Oracle:
    """Everything a question is checked against, computed independently of the generator."""

    def __init__(self, store: Store) -> None:
        cleaned = "title_clean" in store.columns("steps")
        self.titles: dict[str, str | None] = {}
        self.n_steps: Counter[str] = Counter()
        for row in kept_steps(store).to_pylist():
            title = row["title"]
            if title is not None and not cleaned:
                title = " ".join(strip_step_indicator(title).split()) or None
            self.titles[f"{row['procedure_id']}#{row['index']}"] = title
            self.n_steps[row["procedure_id"]] += 1
        emb = load_embeddings(store, "step_title")
        self.keys = emb.keys.to_pylist()
        self.row = {k: i for i, k in enumerate(self.keys)}
        self.vectors = np.asarray(emb.vectors, dtype=np.float64)
        self.procedures = np.array(emb.procedure_ids.to_pylist(), dtype=object)

    def knn_mean(self, key: str, k: int, splits: dict[str, str] | None = None) -> tuple[float, set[str]]:
        row = self.row[key]
        own = tc.normalise_title(self.titles[key])
        norms = [tc.normalise_title(self.titles.get(k)) for k in self.keys]
        # other procedures' titles, without copies of this very title (they would be correct too)
        other = (self.procedures != self.procedures[row]) & np.array([n is not None and n != own for n in norms])
        if splits is not None:
            own = splits[self.procedures[row]]
            other &= np.array([splits.get(p) == own for p in self.procedures])
        other = np.flatnonzero(other)
        d = np.linalg.norm(self.vectors[other] - self.vectors[row], axis=1)
        nearest, seen = [], set()
        for i in np.argsort(d, kind="stable"):  # the k nearest distinct titles, each by its nearest row
            if norms[other[i]] not in seen:
                seen.add(norms[other[i]])
                nearest.append(i)
        nearest = nearest[:k]
        return float(d[nearest].mean()), {self.keys[other[i]] for i in nearest}


def _check(
    q: dict[str, Any], oracle: Oracle, *, style: str, splits: dict[str, str] | None = None, k: int = current().KNN_K
) -> None:
    """Every per-question constraint of DESIGN §6 and paper 004 (negatives from the same split with ``splits``)."""
    meta, pid = q["meta"], q["procedure_id"]
    choices, answer = q["choices"], q["answer"]
    n = oracle.n_steps[pid]
    assert current().MIN_STEPS <= n <= current().MAX_STEPS and meta["n_steps"] == n
    if style == "debias" and meta["setting"] != "debias-auto":  # --budget auto keeps short procedures
        assert n >= current().MIN_STEPS_DEBIAS
    if style == "needs":  # the blank alone, its step's text the context, four steps of the procedure as choices
        _check_needs_context(q, oracle, splits)
        return
    assert q["context"] == list(range(n))
    # question: consecutive titles of the procedure, one placeholder
    assert len(q["question"]) == min(4, n) and q["question"].count(tc.PLACEHOLDER) == 1
    position = q["question"].index(tc.PLACEHOLDER)
    assert meta["placeholder"] == position and meta["question_keys"][position] is None
    keys = [k if k is not None else meta["answer_key"] for k in meta["question_keys"]]
    indices = [int(k.rsplit("#", 1)[1]) for k in keys]
    assert all(k.rsplit("#", 1)[0] == pid for k in keys)
    assert indices == list(range(meta["window_start"], meta["window_start"] + len(keys)))
    for item, key in zip(q["question"], meta["question_keys"], strict=True):
        assert key is None or item == oracle.titles[key]
    # choices: 4, the correct one at `answer`, keys follow the final order, no duplicates, no indicators
    assert len(choices) == 4 and len(meta["choice_keys"]) == 4
    assert meta["choice_keys"][answer] == meta["answer_key"]
    assert all(c == oracle.titles[k] for c, k in zip(choices, meta["choice_keys"], strict=True))
    normalised = [tc.normalise_title(c) for c in choices]
    assert len(set(normalised)) == 4
    shown = {tc.normalise_title(t) for t in q["question"] if t != tc.PLACEHOLDER}
    negatives = [k for i, k in enumerate(meta["choice_keys"]) if i != answer]
    own = sum(k.rsplit("#", 1)[0] == pid for k in negatives)
    assert own == 0
    if splits is not None:
        assert {splits[k.rsplit("#", 1)[0]] for k in negatives} == {splits[pid]}
    assert not shown & {tc.normalise_title(oracle.titles[k]) for k in negatives}
    assert not any(INDICATOR.match(t) for t in [*choices, *q["question"]])
    # distances recorded in choice order match the embeddings
    for key, d in zip(meta["choice_keys"], meta["choice_distances"], strict=True):
        true = np.linalg.norm(oracle.vectors[oracle.row[key]] - oracle.vectors[oracle.row[meta["answer_key"]]])
        assert d == pytest.approx(true, abs=1e-4)
    wrong = [d for i, d in enumerate(meta["choice_distances"]) if i != answer]
    if style == "recipeqa":
        assert all(d > meta["min_distance"] for d in wrong) and meta["knn_mean"] is None
    elif style == "adversarial":  # no paraphrase of the answer or of a shown title: cosine below the ceiling
        answer_vec = oracle.vectors[oracle.row[meta["answer_key"]]]
        shown_keys = [k for k in meta["question_keys"] if k is not None]
        for key in negatives:
            vec = oracle.vectors[oracle.row[key]]
            assert float(vec @ answer_vec) < meta["ceiling"]
            assert all(float(vec @ oracle.vectors[oracle.row[k]]) < meta["ceiling"] for k in shown_keys)
        assert meta["knn_mean"] is None and meta["replacements"] >= 0
    else:  # far kNN candidates: among the k nearest of other procedures, beyond their mean distance
        mean, nearest = oracle.knn_mean(meta["answer_key"], k, splits)
        assert meta["knn_mean"] == pytest.approx(mean, abs=1e-4)
        assert all(d > meta["knn_mean"] for d in wrong) and set(negatives) <= nearest
    if style == "debias":
        clusters = meta["choice_clusters"]
        assert len(clusters) == 4 and clusters[answer] == meta["answer_cluster"]
    else:
        assert meta["choice_clusters"] is None


def _textual(
    store: Store, settings: list[Setting], *, splits: dict[str, str] | None = None, **options: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``tc.build`` with textual cloze's options made from ``options``."""
    return tc.build(store, settings, TextualClozeOptions(**options), splits=splits)


def _questions(store: Store, setting: Setting, **options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    sets, counts = _textual(store, [setting], **options)
    rows = [
        {
            "procedure_id": q.procedure_id,
            "context": q.context,
            "question": q.question,
            "choices": q.choices,
            "answer": q.answer,
            "meta": q.meta,
        }
        for q in sets[setting.name]
    ]
    return rows, counts


# -- unit ---------------------------------------------------------------------------------------------------
def test_normalise_title() -> None:
    assert tc.normalise_title("Enjoy your project!") == tc.normalise_title("  enjoy YOUR project. ")
    assert tc.normalise_title("Sand, then paint") == "sand then paint"
    assert tc.normalise_title("...") is None and tc.normalise_title(None) is None


def test_default_cluster_count() -> None:
    assert default_n_clusters(1) == 1 and default_n_clusters(2) == 2
    assert default_n_clusters(400) == 20 and default_n_clusters(10**6) == 100


def test_cluster_budget_never_negative() -> None:
    budget = ClusterBudget(3, 2)
    budget.spend([0, 0, 1])
    assert budget.left.tolist() == [0, 1, 2] and budget.spent.tolist() == [2, 1, 0]
    with pytest.raises(ValueError, match="negative"):
        budget.spend([0])
    assert budget.left.tolist() == [0, 1, 2]  # all or nothing
    assert budget.summary()["exhausted"] == 1 and budget.summary()["untouched"] == 1
    with pytest.raises(BadInput):
        ClusterBudget(3, 0)


def test_cluster_titles_is_seeded_and_checks_the_cluster_count() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    a, b = cluster_titles(vectors, n_clusters=7, seed=3), cluster_titles(vectors, n_clusters=7, seed=3)
    assert np.array_equal(a.labels, b.labels) and a.inertia == b.inertia and a.sizes().sum() == 300
    with pytest.raises(BadInput, match="distinct titles"):
        cluster_titles(np.repeat(vectors[:4], 10, axis=0), n_clusters=5)


def test_draw_negatives_reasons() -> None:
    rng = np.random.default_rng(0)
    rows = np.arange(6)
    texts = ["a", "a", "b", "c", None, "d"]
    picked, reason = draw_negatives(rows, None, texts, rng, forbidden={"d"})
    assert reason is None and picked is not None and len({texts[i] for i in picked}) == 3
    assert draw_negatives(rows, None, texts, rng, forbidden={"c", "d"}) == (None, "few_candidates")
    budget = ClusterBudget(2, 1)
    clusters = np.array([0, 0, 0, 1, 1, 1])
    assert draw_negatives(rows, clusters, texts, rng, budget=budget) == (None, "budget_exhausted")
    assert budget.left.tolist() == [1, 1]  # nothing spent by a failed draw


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 4),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 12)), min_size=0, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_budget_accounting_is_exact_and_never_negative(
    n_clusters: int, per_cluster: int, candidates: list[tuple[int, int]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    clusters_of = np.array([min(c, n_clusters - 1) for c, _ in candidates], dtype=np.int64)
    texts = [f"t{t}" if t else None for _, t in candidates]
    budget = ClusterBudget(n_clusters, per_cluster)
    tally: Counter[int] = Counter()
    for _ in range(30):  # many questions drawing from overlapping candidate sets
        take = rng.random(len(candidates)) < 0.7
        rows = np.flatnonzero(take)
        forbidden = {f"t{rng.integers(1, 13)}"}
        picked, reason = draw_negatives(
            rows, clusters_of[rows], [texts[i] for i in rows], rng, budget=budget, forbidden=forbidden
        )
        if picked is None:
            assert reason in ("few_candidates", "budget_exhausted")
            continue
        assert len(picked) == 3 and len({texts[i] for i in picked}) == 3
        assert not {texts[i] for i in picked} & forbidden
        budget.spend(clusters_of[picked])
        tally.update(int(clusters_of[i]) for i in picked)
        assert (budget.left >= 0).all()
    assert budget.spent.tolist() == [tally[c] for c in range(n_clusters)]
    assert (budget.spent <= per_cluster).all()


# -- on stores ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["recipeqa", "default", "debias"])
def test_every_question_meets_its_constraints(awkward_store: Path, style: str) -> None:
    store = Store.open(awkward_store)
    setting = Setting(style, budget=10) if style == "debias" else Setting(style)
    rows, counts = _questions(store, setting, seed=1)
    oracle = Oracle(store)
    assert rows
    for q in rows:
        _check(q, oracle, style=style)
    entry = counts["per_setting"][setting.name]
    assert entry.skipped_procedures["step_count"] >= 2  # Too-Short, Too-Long
    assert entry.skipped_procedures["no_titled_window"] == 1  # No-Window
    assert "stripped" in counts["title_source"]
    assert "test:Three-Steps" in {q["procedure_id"] for q in rows} or style == "debias"


@pytest.mark.slow  # ~16 s of CPU, 25 s and more of wall time: `make test-slow`
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(0, 10**6),
    st.integers(1, 6),
    st.one_of(st.none(), st.integers(2, 30)),
    st.integers(1, 3),
)
def test_debias_property(awkward_store: Path, seed: int, per_cluster: int, clusters: int | None, per: int) -> None:
    store = Store.open(awkward_store)
    setting = Setting("debias", budget=per_cluster)
    rows, counts = _questions(store, setting, seed=seed, clusters=clusters, questions_per_procedure=per)
    oracle = Oracle(store)
    tally: Counter[int] = Counter()
    for q in rows:
        _check(q, oracle, style="debias")
        tally.update(c for i, c in enumerate(q["meta"]["choice_clusters"]) if i != q["answer"])
    budget = counts["per_setting"][setting.name].budget
    assert budget["spent_per_cluster"] == [tally[c] for c in range(budget["clusters"])]
    assert max(budget["spent_per_cluster"]) <= per_cluster and budget["spent"] == 3 * len(rows)
    assert budget["clusters"] == (clusters or counts["clustering"]["clusters"])
    skipped = counts["per_setting"][setting.name].skipped_questions
    if per_cluster * budget["clusters"] < 3 * (len(rows) + sum(skipped.values())):
        assert skipped.get("budget_exhausted", 0) > 0 or len(rows) * 3 == per_cluster * budget["clusters"]
    # distinct answers per procedure when several questions are drawn
    answers = Counter((q["procedure_id"], q["meta"]["answer_key"]) for q in rows)
    assert max(answers.values(), default=1) == 1


def test_frequent_titles_do_not_crowd_out_neighbours(awkward_store: Path) -> None:
    """With a small k, copies of one title could fill the whole neighbourhood: titles count once."""
    store = Store.open(awkward_store)
    rows, counts = _questions(store, Setting("default"), seed=0, knn_k=6, questions_per_procedure=8)
    oracle = Oracle(store)
    closers = [q for q in rows if tc.normalise_title(q["choices"][q["answer"]]) == "enjoy your project"]
    assert closers and set(counts["per_setting"]["default"].skipped_questions) <= {"few_candidates"}
    for q in rows:
        _check(q, oracle, style="default", k=6)
        assert q["meta"]["knn_k"] == 6


def test_recorded_clusters_are_the_kmeans_labels(awkward_store: Path) -> None:
    store = Store.open(awkward_store)
    rows, counts = _questions(store, Setting("debias", budget=4), seed=2, clusters=9)
    emb = load_embeddings(store, "step_title")
    labels = cluster_titles(emb.vectors, n_clusters=9, seed=2, hashes=emb.hashes).labels
    row = {k: i for i, k in enumerate(emb.keys.to_pylist())}
    for q in rows:
        assert q["meta"]["choice_clusters"] == [int(labels[row[k]]) for k in q["meta"]["choice_keys"]]
    assert counts["clustering"]["clusters"] == 9 and counts["clustering"]["inertia"] > 0


def test_exhausted_budgets_skip_questions_and_never_hang(sample_store: Path) -> None:
    store = Store.open(sample_store)
    rows, counts = _questions(store, Setting("debias", budget=1), seed=0, clusters=4)
    entry = counts["per_setting"]["debias-b1"]
    assert len(rows) <= 1 and entry.skipped_questions["budget_exhausted"] >= 30
    assert entry.budget["spent"] == 3 * len(rows) and all(s <= 1 for s in entry.budget["spent_per_cluster"])


def test_auto_budget_keeps_nearly_every_draft_with_clusters_giving_equally(awkward_store: Path) -> None:
    store = Store.open(awkward_store)
    sets, counts = _textual(
        store, [Setting("default"), Setting("debias", budget=4), Setting("debias", budget="auto")], seed=1
    )
    auto, fixed = counts["per_setting"]["debias-auto"], counts["per_setting"]["debias-b4"]
    # the fixed budget loses the short procedures (paper 004's 6-step minimum) and exhausts its clusters
    assert fixed.kept_share * fixed.drafted / len(sets["default"]) < 0.9
    # auto: the same drafts as the default setting, nearly all kept
    assert auto.drafted >= len(sets["default"]) and auto.questions == len(sets["debias-auto"])
    assert auto.kept_share >= 0.9 and auto.questions >= 0.9 * len(sets["default"])
    assert auto.skipped_procedures.get("step_count", 0) == (
        counts["per_setting"]["default"].skipped_procedures.get("step_count", 0)
    )
    spent = auto.budget["spent_per_cluster"]
    chosen = auto.auto_budget["chosen"]
    assert chosen == auto.budget["per_cluster"] and max(spent) <= chosen
    assert sum(spent) == 3 * auto.questions
    # the cap is the even share or a few steps above it: no cluster gives more than a few times its share
    assert chosen <= 4 * auto.auto_budget["even_share"]
    oracle = Oracle(store)
    for q in sets["debias-auto"]:
        row = {name: getattr(q, name) for name in ("procedure_id", "context", "question", "choices", "answer", "meta")}
        _check(row, oracle, style="debias")


def test_cleaned_store_uses_title_clean(tmp_path: Path) -> None:
    store = Store.open(_build(tmp_path, _records(), clean=True))
    rows, counts = _questions(store, Setting("default"), seed=0)
    assert counts["title_source"] == "title_clean"
    oracle = Oracle(store)
    for q in rows:
        _check(q, oracle, style="default")


def _check_needs_context(q: dict[str, Any], oracle: Oracle, splits: dict[str, str] | None) -> None:
    """needs-context's shape (its rules: tests/test_generate_needs_context.py)."""
    meta, pid, keys = q["meta"], q["procedure_id"], q["meta"]["choice_keys"]
    assert q["question"] == [tc.PLACEHOLDER] and meta["question_keys"] == [None] and meta["placeholder"] == 0
    assert q["context"] == [int(meta["answer_key"].rsplit("#", 1)[1])] and keys[q["answer"]] == meta["answer_key"]
    assert len(set(keys)) == 4 and all(k.rsplit("#", 1)[0] == pid for k in keys)
    assert [oracle.titles[k] for k in keys] == q["choices"]
    assert len({tc.normalise_title(c) for c in q["choices"]}) == 4
    if splits is not None:
        assert all(splits[k.rsplit("#", 1)[0]] == splits[pid] for k in keys)


@pytest.mark.slow  # two sweeps with two adversarial filters each: ~38 s of CPU (measured)
def test_settings_are_paired_and_answer_positions_uniform(sample_store: Path) -> None:
    store = Store.open(sample_store)
    sets, _ = _textual(store, list(tc.SWEEP), seed=4, questions_per_procedure=3, policy="demo")
    # the first question of each procedure is the same in every setting: only the negatives differ
    single, _ = _textual(store, list(tc.SWEEP), seed=4, policy="demo")
    # (the adversarial and needs-context settings choose their own windows: see their tests)
    own_windows = ("adversarial", "needs-context")
    paired = {k: v for k, v in single.items() if k not in own_windows}
    for group in (paired, {k: v for k, v in sets.items() if k not in ("debias-auto", *own_windows)}):
        first: dict[str, dict[str, tuple[str, int]]] = {}
        for name, questions in group.items():
            for q in questions:
                where = (q.meta["answer_key"], q.meta["window_start"])
                first.setdefault(q.procedure_id, {}).setdefault(name, where)
        assert len(first) == 45 and all(len(set(v.values())) == 1 for v in first.values())
    # --budget auto keeps every draft of the default setting (paper 004's 6-step minimum, kept by debias-bB,
    # left 36 of the 45); the auto budget is the smallest that completes every question
    assert len(single["debias-auto"]) == len(single["default"]) == 45
    for name, questions in sets.items():
        positions = Counter(q.answer for q in questions)
        assert max(positions.values()) - min(positions.get(i, 0) for i in range(4)) <= 1, name
    assert len(sets["recipeqa"]) == len(sets["default"]) == 135
    # RecipeQA style resamples freely; the others never ask for the same step twice
    assert len({q.meta["answer_key"] for q in sets["default"]}) == 135


def test_bad_settings_and_options(sample_store: Path, tmp_path: Path) -> None:
    store = Store.open(sample_store)
    with pytest.raises(BadInput, match="Control-Knobs"):
        tc.build(store, [Setting("knobs", (0, 1, 1))])
    with pytest.raises(BadInput, match="--clusters"):
        _textual(store, [Setting("recipeqa")], clusters=5)
    with pytest.raises(BadInput, match="distinct titles"):
        _textual(store, [Setting("debias", budget=3)], clusters=10_000)
    with pytest.raises(BadInput, match="--questions-per-procedure"):
        _textual(store, [Setting("default")], questions_per_procedure=0)
    bare = tmp_path / "bare"
    ingest_file(bare, write_jsonl(tmp_path / "in.jsonl", load_sample()[:5]))
    with pytest.raises(BadInput, match="procbench embed"):
        tc.build(Store.open(bare), [Setting("default")])


# -- written sets ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["recipeqa", "default", "debias"])
def test_negatives_stay_in_their_split(awkward_store: Path, style: str) -> None:
    store = Store.open(awkward_store)
    ids = sorted(kept_procedures(store, ["id"])["id"].to_pylist())
    splits = {pid: ("train", "val", "test")[i % 3] for i, pid in enumerate(ids)}
    setting = Setting(style, budget=20) if style == "debias" else Setting(style)
    rows, counts = _questions(store, setting, seed=5, splits=splits)
    oracle = Oracle(store)
    assert len(rows) > 20 and counts["negatives_from"].endswith("same split")
    for q in rows:
        _check(q, oracle, style=style, splits=splits)


@pytest.mark.slow  # two sweeps with two adversarial filters each: ~40 s of CPU (measured)
def test_no_leakage_across_splits(awkward_store: Path, tmp_path: Path) -> None:
    for split_by in ("procedure", "category:2"):
        store = _copy(awkward_store, tmp_path / split_by.replace(":", "-"))
        result = generate(store, "textual-cloze", sweep=True, seed=3, split_by=split_by, policy="demo")
        kept = set(kept_procedures(store, ["id"])["id"].to_pylist())
        expected = assign_splits(store, kept, split_by=split_by, ratios=(0.8, 0.1, 0.1), seed=3)
        oracle = Oracle(store)
        for name, path in result.paths.items():
            table = read_question_set(path).table()
            split_of: dict[str, set[str]] = {}
            for row in table.to_pylist():
                split_of.setdefault(row["procedure_id"], set()).add(row["split"])
                assert row["split"] == expected[row["procedure_id"]]
                own = [row["meta"]["answer_key"], *(k for k in row["meta"]["question_keys"] if k)]
                assert all(k.rsplit("#", 1)[0] == row["procedure_id"] for k in own)
                _check(row, oracle, style=name.split("-")[0], splits=expected)  # choices from its split only
            assert all(len(s) == 1 for s in split_of.values())
            assert len(set(table["qid"].to_pylist())) == table.num_rows


@pytest.mark.slow  # three sweeps with two adversarial filters each: `make test-slow`
def test_same_seed_gives_byte_identical_files(sample_store: Path, tmp_path: Path) -> None:
    snapshots = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        store = _copy(sample_store, tmp_path / name)
        embed_store(store, text_encoder="hashed", fields="step_text")  # needs-context's rule reads the step texts
        result = generate(store, "textual-cloze", sweep=True, seed=seed, policy="demo")
        snapshots.append(
            {f"{s}/{p.name}": p.read_bytes() for s, folder in result.paths.items() for p in sorted(folder.iterdir())}
        )
    assert set(snapshots[0]) == {
        f"{s}/{f}"
        for s in ("recipeqa", "default", "debias-auto", "adversarial", "needs-context")
        for f in ("card.md", "options.json", "recipeqa.json", "test.parquet", "train.parquet", "val.parquet")
    }
    assert snapshots[0] == snapshots[1]
    assert snapshots[0] != snapshots[2]


def test_title_less_corpus_is_told_to_use_items_text_not_to_embed(tmp_path: Path) -> None:
    words = ["wood", "glue", "paint", "saw", "nail", "sand", "drill", "clamp", "brush", "tape"]
    records = [
        {
            "id": f"p{n}",
            "title": f"Build thing {n}",
            "steps": [{"text": f"Use the {words[(n + i) % 10]} {i}."} for i in range(5)],
        }
        for n in range(12)
    ]
    store = Store.open(tmp_path / "s", create=True)
    ingest_file(store.root, write_jsonl(tmp_path / "p.jsonl", records))
    store = Store.open(store.root)
    embed_store(store, text_encoder="hashed")
    with pytest.raises(BadInput) as caught:
        generate(Store.open(store.root), "textual-cloze", seed=0)
    assert "no kept step has one" in str(caught.value) and "--items text" in str(caught.value)
    assert "procbench embed" not in str(caught.value)  # embedding again could never help
    made = generate(Store.open(store.root), "textual-cloze", seed=0, items="text")
    assert sum(made.questions.values()) > 0


def _pool_and_options(store: Store, per_procedure: int = 6) -> tuple[Any, list[Any]]:
    steps, _ = textual_pool.read_items(store)
    pool = textual_pool.make_pool(load_embeddings(store, "step_title"), steps, None)
    options = [
        d
        for pid, rows in sorted(steps.items())
        if current().MIN_STEPS <= len(rows) <= current().MAX_STEPS
        for d in textual_pool.make_drafts(pid, rows, per_procedure=per_procedure, replace=False, seed=0)
    ]
    return pool, options


def test_adversarial_questions_are_those_whose_answer_other_titles_come_nearest(sample_store: Path) -> None:
    """Of each procedure's drafts, the adversarial setting asks, among those whose answer title no other step
    shares (when it has any), the one with the most titles of other procedures nearer the question than its
    answer (an answer nearer than all of them gives itself away)."""
    store = Store.open(sample_store)
    pool, options = _pool_and_options(store)
    oracle = Oracle(store)
    norms = Counter(tc.normalise_title(t) for t in oracle.titles.values() if t is not None)

    def shared(d: Any) -> bool:
        return norms[tc.normalise_title(oracle.titles[d.answer_key])] > 1

    def score(d: Any) -> int:
        shown = [oracle.vectors[oracle.row[k]] for n, k in enumerate(d.keys) if n != d.position]
        mean = np.mean(shown, axis=0)
        mean /= np.linalg.norm(mean)
        radius = np.linalg.norm(oracle.vectors[oracle.row[d.answer_key]] - mean)
        other = np.flatnonzero(
            (oracle.procedures != d.procedure_id) & np.array([oracle.titles.get(k) is not None for k in oracle.keys])
        )
        nearest = np.sort(np.linalg.norm(oracle.vectors[other] - mean, axis=1))[: current().ADVERSARIAL_NEARER]
        return int((nearest < radius - 1e-6).sum())

    picked = textual_candidates.pick_windows(load_index(store, "step_title"), options, pool, 1)
    by_procedure: dict[str, list[Any]] = {}
    for d in options:
        by_procedure.setdefault(d.procedure_id, []).append(d)
    assert [d.procedure_id for d in picked] == sorted(by_procedure)  # one per procedure, in procedure order
    gained = 0
    for d in picked:
        eligible = [o for o in by_procedure[d.procedure_id] if not shared(o)] or by_procedure[d.procedure_id]
        scores = [score(o) for o in eligible]
        assert not shared(d) or all(shared(o) for o in by_procedure[d.procedure_id])
        assert score(d) == max(scores)
        best = [o.number for o, s in zip(eligible, scores, strict=True) if s == max(scores)]
        assert d.number == min(best)
        gained += score(d) - score(by_procedure[d.procedure_id][0])
    assert gained > 0  # the first draft (the other settings' question) was often not the best
    two = textual_candidates.pick_windows(load_index(store, "step_title"), options, pool, 2)
    assert len(two) == 2 * len(picked) and all(
        len({d.answer_key for d in two if d.procedure_id == pid}) == 2 for pid in by_procedure
    )


def test_adversarial_questions_avoid_answers_with_a_generic_title(tmp_path: Path) -> None:
    """A headline every procedure shares ("Ingredients") would be the answer of many questions and a negative of
    few, so its count in the set would give it away: the adversarial setting asks another step when it can."""
    words = ["flour", "sugar", "butter", "lemon", "basil", "garlic", "onion", "pepper", "rice", "beans", "tofu"]
    records = [
        {
            "id": f"p{n}",
            "title": f"Dish {n}",
            "steps": [{"title": "Ingredients", "text": "Gather everything."}]
            + [{"title": f"Add the {words[(n + i) % 11]} to dish {n}", "text": f"Stir {i}."} for i in range(1, 5)],
        }
        for n in range(16)
    ]
    store = Store.open(tmp_path / "s", create=True)
    ingest_file(store.root, write_jsonl(tmp_path / "p.jsonl", records))
    store = Store.open(store.root)
    embed_store(store, text_encoder="hashed")
    pool, options = _pool_and_options(Store.open(store.root))
    generic = [d for d in options if tc.normalise_title("Ingredients") == pool.norms[pool.positions[d.answer_key]]]
    assert generic  # the drafts do offer the generic step
    picked = textual_candidates.pick_windows(load_index(store, "step_title"), options, pool, 1)
    assert len(picked) == len(records)
    assert all(pool.norms[pool.positions[d.answer_key]] != tc.normalise_title("Ingredients") for d in picked)
    # when every draft is asked, so is it
    everything = textual_candidates.pick_windows(
        load_index(store, "step_title"), options, pool, current().ADVERSARIAL_DRAFTS
    )
    assert any(pool.norms[pool.positions[d.answer_key]] == tc.normalise_title("Ingredients") for d in everything)


def test_adversarial_candidates_come_from_every_source(sample_store: Path) -> None:
    store = Store.open(sample_store)
    pool, options = _pool_and_options(store, per_procedure=1)
    index = load_index(store, "step_title")
    words = textual_candidates.near_candidates(index, options, pool, {"words": 8})
    assert words.shape == (len(options), 8) and (words >= 0).any()
    from procbench.shortcuts import content_words

    for d, rows in zip(options, words.tolist(), strict=True):
        shown = set().union(*(content_words(t) for n, t in enumerate(d.titles) if n != d.position))
        found = [r for r in rows if r >= 0]
        assert all(pool.keys[r].rsplit("#", 1)[0] != d.procedure_id for r in found)
        assert all(content_words(pool.texts[r] or "") & shown for r in found)  # each shares a word
        assert len({pool.norms[r] for r in found}) == len(found)
    both = textual_candidates.near_candidates(index, options, pool, {"answer": 4, "items": 6})
    answer_only = textual_candidates.near_candidates(index, options, pool, {"answer": 4})
    assert both.shape[1] == 10 and np.array_equal(both[:, :4], answer_only)  # sources in turn, duplicates once
    for row in both.tolist():
        found = [r for r in row if r >= 0]
        assert len(found) == len(set(found))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_word_neighbours_are_the_rows_sharing_the_most_word_weight(seed: int) -> None:
    """The sparse search returns what scoring every row of the split would: the rows sharing a word with the shown
    items, most shared TF-IDF weight first, ties by row; a word in more than WORD_POSTINGS rows is not matched."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n, vocab = 60, 12
    present = rng.random((n, vocab)) < 0.15
    present[:, 0] = rng.random(n) < 0.9  # a very common word
    weights = sp.csr_matrix(np.where(present, rng.choice([0.5, 1.0], size=(n, vocab)), 0.0).astype(np.float32))
    rows = np.sort(rng.choice(n, 40, replace=False))
    shown = rng.integers(-1, n, size=(7, 3))
    for cap in (n, 10):
        with overridden(WORD_POSTINGS=cap):
            found = textual_candidates._word_neighbours(weights, shown, rows, 5)
        pool = weights[rows].toarray()
        common = (pool > 0).sum(axis=0) > cap
        pool[:, common] = 0
        for q, items in enumerate(shown):
            query = sum((weights[i].toarray()[0] for i in items if i >= 0), np.zeros(vocab, dtype=np.float32))
            scores = pool @ query
            best = sorted((r for r in range(len(rows)) if scores[r] > 0), key=lambda r: (-scores[r], r))[:5]
            expected = [int(rows[r]) for r in best] + [-1] * (5 - len(best))
            got = found[q].tolist()
            # equal scores may differ in their last float bits between the two sums: compare score sequences
            assert [round(float(scores[list(rows).index(r)]), 5) if r >= 0 else None for r in got] == [
                round(float(scores[list(rows).index(r)]), 5) if r >= 0 else None for r in expected
            ]


def test_no_adversarial_negative_fits_the_answers_step_text_better_than_the_answer(
    sample_store: Path, tmp_path: Path
) -> None:
    """The context shows the blank's step text: a negative nearer it than the answer would make the question
    ambiguous, not hard, so the adversarial setting never offers one (with step-text embeddings at hand). The
    rule is the candidates' (a replacement is drawn from them too), so the filter runs demo-sized."""
    store = _copy(sample_store, tmp_path / "store")
    embed_store(store, text_encoder="hashed", fields="step_text")
    titles, texts = load_embeddings(store, "step_title"), load_embeddings(store, "step_text")
    title_row = {k: i for i, k in enumerate(titles.keys.to_pylist())}
    text_row = {k: i for i, k in enumerate(texts.keys.to_pylist())}
    sets, _ = _textual(store, [Setting("adversarial")], seed=0, policy="demo")
    offered = 0
    for q in sets["adversarial"]:
        text = np.asarray(texts.vectors[text_row[q.meta["answer_key"]]])
        fit = [float(np.asarray(titles.vectors[title_row[k]]) @ text) for k in q.meta["choice_keys"]]
        assert all(f < fit[q.answer] for i, f in enumerate(fit) if i != q.answer)
        offered += 1
    assert offered > 30
    # without step-text embeddings (or with --items text, whose context hides the answer's text) no such rule
    assert textual_pool.step_text_embeddings(store, "text", texts) is None


@settings(max_examples=80, deadline=None)
@given(
    classes=st.lists(st.lists(st.booleans(), min_size=1, max_size=7), min_size=1, max_size=5),
    per_procedure=st.integers(1, 7),
    seed=st.integers(0, 2**16),
)
def test_adversarial_windows_skip_only_searches_that_cannot_change_the_pick(
    classes: list[list[bool]], per_procedure: int, seed: int
) -> None:
    """``pick_windows`` searches only the contested drafts: any scores of the others pick the same drafts."""
    shared = [value for procedure in classes for value in procedure]
    spans, start = [], 0
    for procedure in classes:
        spans.append((start, start + len(procedure)))
        start += len(procedure)
    contested = textual_candidates._contested(shared, spans, per_procedure)
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 17, len(shared))
    other = np.where(contested, scores, rng.integers(0, 17, len(shared)))

    def picks(score: np.ndarray) -> list[int]:
        return [
            i
            for a, b in spans
            for i in sorted(sorted(range(a, b), key=lambda i: (shared[i], -score[i], i))[:per_procedure])
        ]

    assert picks(scores) == picks(other)
