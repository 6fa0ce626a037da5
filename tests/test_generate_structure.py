"""Issue 54's structural acceptance for generate/: sizes, one policy, one game, recipes whose tells are dealt.

- every file of ``procbench/generate`` at most 400 lines; the package and its ``visual/`` within their budgets;
- no module-level numeric constant in ``generate/`` outside ``generate/policy.py`` but the tagged allowlist
  (block sizes, the task format of DESIGN section 5/6, seed codes, input bounds, a rounding tolerance, recipe data);
- every policy constant has its evidence and a record in ``benchmarks/evidence_ledger.jsonl``; ``docs/adversarial.md``
  holds the constants and recipes tables as the code makes them;
- exactly one class implements the replacement game;
- for every recipe and every tell it declares, the answer's rank on that tell is uniform (chi-square, p > 0.01);
- a toy tell defined here plugs in by one recipe line.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.stats import chisquare

import procbench
from procbench.corpus.synthetic import write_synthetic_store
from procbench.embed import embed_store, load_embeddings
from procbench.errors import BadInput
from procbench.generate import Setting, generate, policy, recipes
from procbench.store import Store
from procbench.tells import TELLS, ChoiceView, answer_ranks

_ROOT = Path(procbench.__file__).resolve().parent
GENERATE = _ROOT / "generate"
REPO = _ROOT.parent
MAX_FILE_LINES = 400
#: Files over the limit, with why (a miss the issue's note states, not a pass).
OVER_LIMIT: dict[str, str] = {}

#: Module-level numeric constants allowed outside policy.py, by (file under generate/, name): their tag.
ALLOWLIST = {
    ("adversarial/arena.py", "QUESTION_BLOCK"): "block",
    ("adversarial/filter.py", "VARIANT_BATCH"): "block",
    ("search.py", "SEARCH_BLOCK"): "block",
    ("textual/candidates.py", "_KNN_BATCH"): "block",
    ("textual/candidates.py", "WORD_BLOCK"): "block",
    ("textual/candidates.py", "SPLIT_EXACT_ROWS"): "block",
    ("textual/samplers.py", "_RANDOM_BATCH"): "block",
    ("visual/dealer.py", "CLASS_BLOCK"): "block",
    ("visual/driver.py", "CHUNK_PROCEDURES"): "block",
    ("visual/sequences.py", "SEARCH_BATCH"): "block",
    ("visual/sequences.py", "GATHER_BATCH"): "block",
    ("answers.py", "N_CHOICES"): "format",
    ("exchangeable.py", "SIZE"): "format",
    ("options.py", "_NEGATIVES"): "format",
    ("ranks.py", "CLOZE_WANTS"): "format",
    ("textual/pool.py", "N_QUESTION"): "format",
    ("textual/pool.py", "N_NEGATIVES"): "format",
    ("visual/bands.py", "QUESTION_KNN"): "format",
    ("visual/cloze.py", "_SIZE"): "format",
    ("visual/coherence.py", "_SIZE"): "format",
    ("visual/coherence.py", "_PAIRS"): "format",
    ("visual/ordering.py", "_SIZE"): "format",
    ("visual/orders.py", "ORDERS"): "format",
    ("visual/cloze.py", "CLOZE"): "seed-code",
    ("visual/coherence.py", "COHERENCE"): "seed-code",
    ("visual/ordering.py", "ORDERING"): "seed-code",
    ("base_options.py", "MAX_SEED"): "bound",
    ("base_options.py", "MAX_COUNT"): "bound",
    ("visual/orders.py", "PATH_TOLERANCE"): "tolerance",
    ("recipes.py", "_KNN"): "recipe",
    ("recipes.py", "RECIPES"): "recipe",
}
#: Numbers that are not a setting (none, one, an index's -1).
_NEUTRAL = {0, 1, -1}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_generate_file_is_over_400_lines() -> None:
    over = {
        path.relative_to(GENERATE).as_posix(): _lines(path)
        for path in sorted(GENERATE.rglob("*.py"))
        if _lines(path) > MAX_FILE_LINES
    }
    assert set(over) == set(OVER_LIMIT), over


@pytest.mark.xfail(strict=True, reason="issue 54's budgets missed: generate/ 7,640 lines, visual/ 3,323 (a miss)")
def test_generate_is_within_7000_lines_and_its_visual_part_within_3000() -> None:
    total = sum(_lines(p) for p in GENERATE.rglob("*.py"))
    visual = sum(_lines(p) for p in (GENERATE / "visual").rglob("*.py"))
    assert total <= 7000 and visual <= 3000, (total, visual)


def numeric_constants(path: Path) -> list[tuple[str, int]]:
    """``(name, line)`` of the module-level assignments of ``path`` whose value holds a number other than 0, 1, -1."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        numbers = [
            n.value
            for n in ast.walk(node.value)
            if isinstance(n, ast.Constant) and isinstance(n.value, int | float) and not isinstance(n.value, bool)
        ]
        if any(value not in _NEUTRAL for value in numbers):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            names = [t.id for t in ast.walk(target) if isinstance(t, ast.Name)]
            found.append((names[0] if names else ast.unparse(target), node.lineno))
    return found


def test_no_behavioural_numeric_constant_outside_policy() -> None:
    found = {
        (path.relative_to(GENERATE).as_posix(), name): line
        for path in sorted(GENERATE.rglob("*.py"))
        if path != GENERATE / "policy.py"
        for name, line in numeric_constants(path)
    }
    stray = {key: line for key, line in found.items() if key not in ALLOWLIST}
    assert not stray, f"numeric constants outside generate/policy.py (add them to Policy, read at call time): {stray}"
    assert set(ALLOWLIST) <= set(found), set(ALLOWLIST) - set(found)  # the allowlist names only what exists
    assert set(ALLOWLIST.values()) == {"block", "format", "seed-code", "bound", "tolerance", "recipe"}


def test_the_scan_finds_a_planted_constant(tmp_path: Path) -> None:
    planted = tmp_path / "m.py"
    planted.write_text("A = 0.37\nB = (1, 0)\nC = {'k': 48}\nD = -1\n", encoding="utf-8")
    assert [name for name, _ in numeric_constants(planted)] == ["A", "C"]


def test_overridden_changes_what_the_generators_read_and_says_what_is_unknown() -> None:
    from procbench.generate.visual.bands import band_bounds

    m, s = np.array([1.0]), np.array([0.2])
    before = band_bounds(m, s, 1)[1][0, 1]
    with policy.overridden(BAND_WIDENING=(0.0, 2.0, 4.0), KC=7) as changed:
        assert changed.KC == policy.current().KC == 7
        assert band_bounds(m, s, 1)[1][0, 1] == pytest.approx(1.0 + 0.2 + 2.0 * 0.2)
    assert band_bounds(m, s, 1)[1][0, 1] == before and policy.current().KC == 100
    with pytest.raises(BadInput, match="no policy constant NOT_A_CONSTANT"), policy.overridden(NOT_A_CONSTANT=1):
        pass


def test_every_policy_constant_has_its_evidence_and_a_ledger_record() -> None:
    ledger = [
        json.loads(line) for line in (REPO / "benchmarks/evidence_ledger.jsonl").read_text().splitlines() if line
    ]
    keys = {
        "value_before",
        "value_after",
        "corpus",
        "questions",
        "seeds",
        "effect",
        "se",
        "verdict",
        "reason",
        "commit",
    }
    for record in ledger:
        assert ("constant" in record) != ("rule" in record) and keys <= set(record), record
        assert record["verdict"] in {"kept", "removed", "untuned"}, record
    recorded = {r["constant"] for r in ledger if "constant" in r}
    for name, _, evidence, doc in policy.entries():
        assert evidence.split(":")[0] in {"ledger", "paper", "design", "untuned"} and doc, name
        assert name in recorded, f"{name} has no record in benchmarks/evidence_ledger.jsonl"


def test_the_docs_tables_are_the_codes() -> None:
    text = (REPO / "docs/adversarial.md").read_text(encoding="utf-8")
    assert policy.constants_table() in text, "regenerate docs/adversarial.md's constants table (policy.py)"
    assert recipes.recipes_table() in text, "regenerate docs/adversarial.md's recipes table (recipes.py)"


def test_exactly_one_class_implements_the_replacement_game() -> None:
    game = {"probe", "replace", "snapshot"}
    classes = [
        (path.relative_to(GENERATE).as_posix(), node.name)
        for path in sorted(GENERATE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and game <= {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        and not any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)
    ]
    assert classes == [("adversarial/filter.py", "ReplacementGame")], classes


# -- the answer's rank on every tell a recipe declares ----------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return write_synthetic_store(tmp_path_factory.mktemp("structure") / "s", n_procedures=120, dim=32, seed=3)


@pytest.fixture(scope="module")
def photo_store(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The sample with step-text embeddings (``needs-context`` reads them; the synthetic store has no texts)."""
    root = tmp_path_factory.mktemp("structure-photos") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout", fields="step_text,image")
    return Store.open(root)


_SETTINGS = {"rank-uniform": Setting("knobs", (0, 1, 2)), "adversarial": Setting("adversarial")}


@dataclass
class _Set:
    """A written set's answers and the vectors of what each question shows, ready for the tells."""

    views: ChoiceView
    answers: np.ndarray


def _read(store: Store, folder: Path) -> _Set:
    embeddings = load_embeddings(store, "image")
    row = {key: i for i, key in enumerate(embeddings.keys.to_pylist())}
    vectors = np.asarray(embeddings.vectors, dtype=np.float64)
    table = [r for split in ("train", "val", "test") for r in pq.read_table(folder / f"{split}.parquet").to_pylist()]

    def vec(item: Any) -> np.ndarray:  # an image, or an order of images (concatenated)
        return np.concatenate([vectors[row[i]] for i in item]) if isinstance(item, list) else vectors[row[item]]

    choices = np.stack([[vec(c) for c in q["choices"]] for q in table])
    width = max([len([i for i in q["question"] if i in row]) for q in table] + [1])
    question = np.zeros((len(table), width, vectors.shape[1]))
    mask = np.zeros((len(table), width), dtype=bool)
    for n, q in enumerate(table):
        shown = [vectors[row[i]] for i in q["question"] if i in row]
        if shown:
            question[n, : len(shown)] = shown
            mask[n, : len(shown)] = True
    return _Set(ChoiceView(choices, question, mask), np.array([q["answer"] for q in table]))


def _uniform(ranks: np.ndarray, n_ranks: int) -> float:
    """The chi-square p-value of ``ranks`` against equal counts of ``0..n_ranks-1``."""
    return float(chisquare(np.bincount(ranks, minlength=n_ranks)).pvalue)


def _cases() -> Iterator[Any]:
    for (task, kind), recipe in recipes.RECIPES.items():
        for tell in recipe.tells:
            yield pytest.param(task, kind, tell, id=f"{task}-{kind}-{tell}")


@pytest.mark.parametrize(("task", "kind", "tell"), list(_cases()))
def test_every_recipe_deals_the_answer_rank_uniformly_on_each_tell(
    task: str, kind: str, tell: str, synthetic: Store, photo_store: Store
) -> None:
    store = photo_store if kind == "needs-context" else synthetic
    setting = Setting(kind) if kind == "needs-context" else _SETTINGS[kind]
    result = generate(store, task, setting, seed=0, policy="demo" if kind == "adversarial" else "standard")
    written = _read(store, result.paths[setting.name])
    ranks = answer_ranks(TELLS[tell].values(written.views), written.answers)
    assert len(ranks) >= 40, len(ranks)
    assert _uniform(ranks, written.views.choices.shape[1]) > 0.01, np.bincount(ranks)


@dataclass(frozen=True)
class _FirstCoordinate:
    """A toy tell: each choice's first embedding coordinate."""

    name: str = "first_coordinate"
    separable: bool = True

    def values(self, view: ChoiceView) -> np.ndarray:
        return np.asarray(view.choices[:, :, 0])


def test_a_toy_tell_plugs_in_by_one_recipe_line(synthetic: Store) -> None:
    if "first_coordinate" not in TELLS:
        TELLS.add("first_coordinate", _FirstCoordinate())

    def toy_counts(folder: Path) -> np.ndarray:
        written = _read(synthetic, folder)
        return np.bincount(answer_ranks(TELLS["first_coordinate"].values(written.views), written.answers), minlength=4)

    drawn = generate(synthetic, "visual-cloze", _SETTINGS["rank-uniform"], seed=0)
    before = toy_counts(drawn.paths["knobs-012"])
    with recipes.overridden("visual-cloze", "rank-uniform", tells=("question_distance", "first_coordinate")):
        dealt = generate(synthetic, "visual-cloze", _SETTINGS["rank-uniform"], seed=0, overwrite=True)
    written = _read(synthetic, dealt.paths["knobs-012"])
    first = np.bincount(answer_ranks(TELLS["question_distance"].values(written.views), written.answers), minlength=4)
    after = toy_counts(dealt.paths["knobs-012"])
    assert first.sum() >= 40 and first.max() - first.min() <= 2, first
    # the toy rank is dealt too: as even as the dealer's least-dealt rule makes it, evener than the draw left it
    assert after.max() - after.min() <= 4 < before.max() - before.min(), (before, after)


def test_each_setting_states_its_recipe_and_how_its_probes_are_read(synthetic: Store) -> None:
    """The knob settings' probes are reported by construction (issue 54's K3 = 2 decision); ``adversarial``'s are
    judged against their nulls; each set records its recipe version."""
    result = generate(synthetic, "visual-ordering", sweep=True, seed=0, policy="demo", overwrite=True)
    for name, report in result.reports.items():
        kind = recipes.kind_of(Setting("adversarial") if name == "adversarial" else Setting("knobs", _knobs(name)))
        recipe = recipes.get("visual-ordering", kind)
        stated = report.details["recipe"]
        assert stated["version"] == recipe.version and stated["tells_dealt"] == list(recipe.tells), name
        assert stated["probes"].startswith("judged" if name == "adversarial" else "reported by construction"), name
        recorded = json.loads((result.paths[name] / "options.json").read_text(encoding="utf-8"))["options"]
        assert recorded["recipe_version"] == recipe.version and "draw_version" not in recorded


def _knobs(name: str) -> tuple[int, int, int]:
    k1, k2, k3 = name.removeprefix("knobs-")
    return int(k1), int(k2), int(k3)
