"""AFLite (Le Bras et al. 2020, "Adversarial Filters of Dataset Biases"): drop the questions that simple
models over precomputed features answer most often, and write what remains as a new setting.

The features are context-free: :func:`procbench.shortcuts.choice_features` (distances and their ranks,
length, word overlap, frequency) plus each choice's embedding on its first principal components, all
standardised. Each round deals the *procedures* into two random halves ``n_partitions`` times
(:func:`procbench.shortcuts.group_folds`) and fits a linear discriminant (correct vs wrong choice, the
closed form of the ``choice_only`` probe) on each half to score the other, so a question is only ever
predicted by a model that never saw its procedure. A question's
predictability is the share of those held-out predictions that pick its answer; the ``step`` most
predictable questions at or above ``threshold`` are removed, and rounds repeat until ``target_size`` is
reached or no question is predictable enough (the loop is adversarial filtering's too:
:func:`procbench.aflite.aflite_rounds`, docs/adversarial.md). Questions the features cannot
describe (a choice without a vector) are kept.

>>> result = aflite_filter(aset, target_size=800, seed=0)   # doctest: +SKIP
>>> result.kept.sum(), result.rounds                          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from procbench.aflite import aflite_rounds
from procbench.audit.auditset import AuditSet, NotApplicable
from procbench.audit.context import ProbeContext
from procbench.audit.probes.shortcut import choice_batch
from procbench.audit.stats import mc_hits
from procbench.errors import BadInput
from procbench.progress import SILENT, Progress
from procbench.shortcuts import ChoiceBatch, contrasts, fit_discriminant
from procbench.store import Store

__all__ = [
    "AFLiteResult",
    "aflite_features",
    "aflite_filter",
    "aflite_scores",
    "aflite_setting",
    "aflite_tree_scores",
    "filter_question_set",
]

#: Defaults of the paper's setting, scaled to question sets: 64 partitions per round (half of the
#: procedures to train on), predictability threshold 0.75, and 5% of the set removed per round at most.
N_PARTITIONS = 64
THRESHOLD = 0.75
STEP_SHARE = 0.05
EMBEDDING_DIMS = 32
#: Partitions per round with ``model="trees"`` (each is two gradient-boosted fits).
TREE_PARTITIONS = 8
#: The models AFLite can filter with.
MODELS = ("linear", "trees")


@dataclass
class AFLiteResult:
    """What :func:`aflite_filter` did.

    Attributes:
        kept: ``(n,)`` questions kept.
        removed_round: ``(n,)`` the round a question was removed in (-1: kept).
        predictability: ``(n,)`` each question's predictability in the last round it took part in (NaN for
            questions the features cannot describe).
        rounds: per round, how many questions took part, how many were removed and the mean predictability.
        options: the options the run used (target size, partitions, threshold, step, seed).
        stopped: ``"target"`` (the target size was reached) or ``"threshold"`` (no question left at or
            above the threshold).
    """

    kept: np.ndarray
    removed_round: np.ndarray
    predictability: np.ndarray
    rounds: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    stopped: str = "threshold"

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (what the card, provenance and ``--json`` show)."""
        return {
            "questions": int(len(self.kept)),
            "kept": int(self.kept.sum()),
            "removed": int((~self.kept).sum()),
            "iterations": len(self.rounds),
            "stopped": self.stopped,
            **self.options,
            "rounds": self.rounds,
        }


def aflite_features(aset: AuditSet, ctx: ProbeContext) -> tuple[np.ndarray, ChoiceBatch, np.ndarray]:
    """``(m, k, d)`` standardised context-free features of the usable questions (for the linear models), the
    usable questions as a :class:`~procbench.shortcuts.ChoiceBatch` (``valid``: their ``(m, k)`` valid
    choices), and the ``(n,)`` mask of the usable questions.

    Raises:
        NotApplicable: the set does not allow per-choice context-free features.
    """
    from procbench.shortcuts import choice_features

    batch, rows = choice_batch(aset, ctx)
    reduced = ctx.reduced_items(aset, EMBEDDING_DIMS)
    padded = np.vstack([reduced, np.zeros((1, reduced.shape[1]), dtype=reduced.dtype)])
    ids = batch.choice_ids if batch.choice_ids is not None else np.full(batch.valid.shape, -1)
    embedding = padded[np.where(batch.valid, ids, -1)].astype(np.float64)
    features = np.concatenate([choice_features(batch), embedding], axis=2)
    flat = features[batch.valid]
    mean = flat.mean(axis=0)
    std = flat.std(axis=0)
    features = np.where(batch.valid[..., None], (features - mean) / np.where(std > 0, std, 1.0), 0.0)
    return features, batch, rows


def _subset(batch: ChoiceBatch, rows: np.ndarray) -> ChoiceBatch:
    """The questions of ``batch`` where ``rows`` is True."""
    idx = np.flatnonzero(rows)

    def texts(values: Sequence[Sequence[str]] | None) -> list[Sequence[str]] | None:
        return None if values is None else [values[i] for i in idx.tolist()]

    return ChoiceBatch(
        choice_vectors=batch.choice_vectors[idx],
        question_vectors=batch.question_vectors[idx],
        question_mask=batch.question_mask[idx],
        valid=batch.valid[idx],
        answers=batch.answers[idx],
        groups=batch.groups[idx],
        choice_texts=texts(batch.choice_texts),
        question_texts=texts(batch.question_texts),
        choice_ids=None if batch.choice_ids is None else batch.choice_ids[idx],
        clusters=None if batch.clusters is None else batch.clusters[idx],
        placeholder=None if batch.placeholder is None else batch.placeholder[idx],
    )


def aflite_tree_scores(
    batch: ChoiceBatch,
    features: np.ndarray,
    active: np.ndarray,
    *,
    rng: np.random.Generator,
    n_partitions: int = TREE_PARTITIONS,
) -> np.ndarray:
    """Like :func:`aflite_scores` with the audit's ``partial_input`` trees as the models: each partition is a
    :class:`~procbench.shortcuts.ShortcutEnsemble` over two procedure halves (a fresh seed per partition),
    fitted on the active questions' ``(m, k, F)`` :func:`~procbench.shortcuts.choice_features`."""
    from procbench.shortcuts import ShortcutEnsemble, hits

    out = np.full(len(active), np.nan)
    if len(np.unique(batch.groups[active])) < 2:
        return out
    sub = _subset(batch, active)
    feats = features[active]
    correct = np.zeros(len(sub))
    for _ in range(n_partitions):
        ensemble = ShortcutEnsemble(n_folds=2, seed=int(rng.integers(2**31)), models=("partial_input",))
        probs = ensemble.fit(sub, feats).predict(sub, feats)["partial_input"]
        correct += hits(probs, sub.answers, sub.valid)
    out[active] = correct / n_partitions
    return out


def aflite_scores(
    features: np.ndarray,
    valid: np.ndarray,
    answers: np.ndarray,
    groups: np.ndarray,
    active: np.ndarray,
    *,
    rng: np.random.Generator,
    n_partitions: int = N_PARTITIONS,
) -> np.ndarray:
    """``(m,)`` predictability of every ``active`` question: the share of held-out linear models that pick
    its answer (NaN for inactive questions).

    Each partition deals the active procedures into two halves (:func:`procbench.shortcuts.group_folds`,
    a fresh seed per partition); each half's discriminant scores the other half's questions, so every
    active question gets one held-out prediction per partition. The discriminant's covariance is
    label-free and fitted once per round on the active questions; only its direction (the mean
    correct-minus-wrong contrast) is learnt from the training half.
    """
    from procbench.shortcuts import group_folds

    correct = np.zeros(len(answers))
    seen = np.zeros(len(answers))
    if len(np.unique(groups[active])) < 2:
        return np.full(len(answers), np.nan)
    inverse = fit_discriminant(features, valid, active)
    diff = contrasts(features, valid, answers)
    active_groups = groups[active]
    for _ in range(n_partitions):
        fold_of = group_folds(active_groups, 2, int(rng.integers(2**31)))
        half = np.array([fold_of.get(int(g), -1) for g in groups.tolist()], dtype=np.int64)
        for fold in (0, 1):
            train = active & (half == fold)
            test = active & (half == 1 - fold)
            direction = inverse @ diff[train].mean(axis=0)
            scores = features[test] @ direction
            correct[test] += mc_hits(scores, answers[test], valid[test])
            seen[test] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(active & (seen > 0), correct / np.maximum(seen, 1), np.nan)


def aflite_filter(
    aset: AuditSet,
    *,
    target_size: int | None = None,
    seed: int = 0,
    model: str = "linear",
    n_partitions: int | None = None,
    threshold: float = THRESHOLD,
    step: int | None = None,
    progress: Progress = SILENT,
) -> AFLiteResult:
    """Run AFLite on ``aset``: remove the most predictable questions, ``step`` per round, until ``target_size``
    questions are left (or none is at least ``threshold`` predictable).

    ``model`` is ``linear`` (closed-form discriminants on the standardised features and the choice
    embedding, :func:`aflite_scores`; ``n_partitions`` default :data:`N_PARTITIONS`) or ``trees`` (the
    audit's ``partial_input`` gradient-boosted trees, :func:`aflite_tree_scores`, slower; default
    :data:`TREE_PARTITIONS`), which also catch non-linear shortcuts.

    Raises:
        BadInput: bad options.
        NotApplicable: the set does not allow per-choice context-free features.
    """
    n = len(aset)
    if target_size is not None and not 0 < target_size <= n:
        raise BadInput(f"--target-size must be between 1 and the set's {n} questions, not {target_size}")
    if not 0 <= threshold <= 1:
        raise BadInput(f"the AFLite threshold is a share of predictions, between 0 and 1, not {threshold}")
    if model not in MODELS:
        raise BadInput(f"AFLite's model is {' or '.join(MODELS)}, not {model!r}")
    if n_partitions is None:
        n_partitions = TREE_PARTITIONS if model == "trees" else N_PARTITIONS
    if n_partitions < 1:
        raise BadInput("AFLite needs at least one partition per round")
    ctx = ProbeContext.for_set(aset, seed=seed, n_boot=10, n_folds=2)
    features, batch, rows = aflite_features(aset, ctx)
    valid = batch.valid
    if model == "trees":
        from procbench.shortcuts import choice_features

        tree_features = choice_features(batch)
    answers = aset.answers[rows]
    groups = ctx.codes[rows]
    m = int(rows.sum())
    step = step if step is not None else max(1, round(STEP_SHARE * n))
    target = target_size if target_size is not None else 0
    removed_round = np.full(m, -1, dtype=np.int64)
    predictability = np.full(m, np.nan)
    rng = np.random.default_rng([seed, 0xAF11E])
    rounds: list[dict[str, Any]] = []
    progress.start("AFLite", total=max(1, n - target))
    kept_outside = n - m  # questions the features cannot describe are always kept

    def rank(active: np.ndarray) -> tuple[np.ndarray, bool]:
        """The active questions at least ``threshold`` predictable, most predictable first."""
        if active.sum() + kept_outside <= target:
            return np.zeros(0, dtype=np.int64), True
        if model == "trees":
            scores = aflite_tree_scores(batch, tree_features, active, rng=rng, n_partitions=n_partitions)
        else:
            scores = aflite_scores(features, valid, answers, groups, active, rng=rng, n_partitions=n_partitions)
        predictability[active] = scores[active]
        candidates = np.flatnonzero(active & (np.nan_to_num(scores, nan=-1.0) >= threshold))
        budget = min(step, int(active.sum()) + kept_outside - target, len(candidates))
        rounds.append(
            {
                "questions": int(active.sum()) + kept_outside,
                "mean_predictability": round(float(np.nanmean(scores[active])), 4) if active.any() else None,
                "removed": int(max(budget, 0)),
            }
        )
        return candidates[np.argsort(-scores[candidates], kind="stable")], False

    def dropped(order: np.ndarray) -> None:
        removed_round[order] = len(rounds) - 1
        progress.advance(len(order))

    active = aflite_rounds(rank, m, step=step, floor=target - kept_outside, dropped=dropped)
    kept = np.ones(n, dtype=bool)
    kept[np.flatnonzero(rows)] = active
    full_round = np.full(n, -1, dtype=np.int64)
    full_round[np.flatnonzero(rows)] = removed_round
    full_pred = np.full(n, np.nan)
    full_pred[np.flatnonzero(rows)] = predictability
    options = {
        "model": model,
        "target_size": target_size,
        "partitions": n_partitions,
        "threshold": threshold,
        "step": step,
    }
    stopped = "target" if int(kept.sum()) <= target else "threshold"
    return AFLiteResult(kept, full_round, full_pred, rounds, {**options, "seed": seed}, stopped)


def aflite_setting(source: str, target_size: int | None = None, model: str = "linear") -> str:
    """The setting AFLite writes for ``source``: ``SOURCE-aflite`` (``-aflite-trees`` with the trees), and
    ``-nN`` after it with a target size (so runs with different targets never overwrite each other)."""
    name = f"{source}-aflite" + ("-trees" if model == "trees" else "")
    return name if target_size is None else f"{name}-n{target_size}"


def filter_question_set(
    spec: Any,
    *,
    store: Store | str | Path | None = None,
    target_size: int | None = None,
    seed: int = 0,
    overwrite: bool = False,
    progress: Progress = SILENT,
    **options: Any,
) -> tuple[Path, AFLiteResult]:
    """AFLite on a stored question set, writing what it keeps as a new setting next to it
    (:func:`aflite_setting`: parquet per split, ``recipeqa.json``, ``card.md``, ``options.json``, a
    ``filter`` provenance entry; same seed, same bytes). A setting already there that other options made is
    not replaced unless ``overwrite``.

    Each kept question keeps its meta plus ``source_qid`` (its qid in the source set) and
    ``aflite_predictability`` (its held-out predictability in the last round). ``options`` go to
    :func:`aflite_filter`.

    Raises:
        InputFileNotFound: no such set.
        BadInput: bad options, a set outside a store, a set AFLite does not apply to (orders, labels, no
            item vectors), or a setting there already made with other options.
    """
    import pyarrow as pa

    from procbench.audit.loaders import load_question_set, set_store
    from procbench.qsets.files import QuestionSet, check_overwrite, write_question_sets

    aset = load_question_set(spec, store=store, seed=seed)
    home = set_store(aset.source, store)
    if home is None or aset.source is None:
        raise BadInput(f"{spec} is not inside a store: AFLite writes its setting into the set's store")
    try:
        result = aflite_filter(aset, target_size=target_size, seed=seed, progress=progress, **options)
    except NotApplicable as exc:
        raise BadInput(f"AFLite does not apply to {aset.name}: {exc}") from exc

    table = QuestionSet(aset.source).table()
    keep = pa.array(result.kept)
    kept = table.filter(keep)
    meta = kept["meta"].combine_chunks()
    fields = [meta.field(i) for i in range(meta.type.num_fields)]
    names = [meta.type.field(i).name for i in range(meta.type.num_fields)]
    scores = np.round(result.predictability[result.kept], 4)
    extra = [kept["qid"].combine_chunks(), pa.array(scores, pa.float64(), mask=np.isnan(scores))]
    meta = pa.StructArray.from_arrays([*fields, *extra], names=[*names, "source_qid", "aflite_predictability"])
    questions = pa.table(
        {
            "procedure_id": kept["procedure_id"],
            "context": kept["context"],
            "question": kept["question"],
            "choices": kept["choices"],
            "answer": kept["answer"],
            "meta": meta,
        }
    )
    splits = dict(zip(table["procedure_id"].to_pylist(), table["split"].to_pylist(), strict=True))
    source = aset.source.name
    setting = aflite_setting(source, target_size, str(options.get("model", "linear")))
    summary = result.summary()
    args = {"settings": [setting], "source": f"{aset.task}/{source}", "method": "aflite", **result.options}
    items = QuestionSet(aset.source).items
    if items is not None:  # what the items are (the instruction, the embeddings the audit reads) carries over
        args["items"] = items
    if not overwrite:
        check_overwrite(home, aset.task, [setting], seed=seed, args=args)
    entry = {"source": args["source"], **summary}
    counts = {"per_setting": {setting: {"questions": int(result.kept.sum()), "aflite": entry}}}  # a SettingReport
    written = write_question_sets(
        home, aset.task, {setting: questions}, splits=splits, seed=seed, args=args, counts=counts, command="filter"
    )
    return written[setting], result
