"""``procbench evaluate-extraction``: stage-1 and stage-2 scores of extracted tuples against gold.

Gold (and optional prediction) files are JSONL, one evaluation unit per line::

    {"procedure_id": "wikihow:Make-Tea", "step": 2, "sentence": 0, "key": true,
     "tuples": [{"verb": "heat", "arguments": ["cast iron skillet"]}, ["fry", "bacon", "with heated skillet"]]}

``sentence`` (the sentence's number within the step text, as ``actions.parquet`` numbers them) is optional:
without it the unit is the whole step and the step's predicted tuples are pooled. ``key`` defaults to
"has tuples". A tuple is ``{"verb", "arguments"}`` or a list ``[verb, arg1, ...]``.

Stage 2 is reported twice, as paper 002 Table 5 does: on the gold key units (``oracle``: each gold key
unit's predicted tuples against its gold tuples) and on predicted key units (``predicted``: a unit's
predicted tuples count only when it is predicted key, its gold only when it is gold key).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procbench.errors import BadInput, InputFileNotFound
from procbench.extract.metrics import MODES, binary_scores, phrase_scores
from procbench.store import Store

__all__ = ["GoldUnit", "evaluate_extraction", "predictions_from_store", "read_units", "score_units"]

Tuple = tuple[str, tuple[str, ...]]
UnitKey = tuple[str, int, int | None]


@dataclass(frozen=True)
class GoldUnit:
    """One annotated (or predicted) sentence or step."""

    procedure_id: str
    step: int
    sentence: int | None
    key: bool
    tuples: tuple[Tuple, ...]

    @property
    def unit(self) -> UnitKey:
        return (self.procedure_id, self.step, self.sentence)


def _parse_tuple(raw: Any, where: str) -> Tuple:
    if isinstance(raw, dict):
        verb, arguments = raw.get("verb"), raw.get("arguments", [])
    elif isinstance(raw, list) and raw:
        verb, arguments = raw[0], raw[1:]
    else:
        raise BadInput(f"{where}: a tuple is {{'verb', 'arguments'}} or [verb, arg, ...], not {raw!r}")
    if not isinstance(verb, str) or not verb.strip():
        raise BadInput(f"{where}: a tuple needs a non-empty verb string")
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        raise BadInput(f"{where}: arguments must be a list of strings")
    return verb, tuple(arguments)


def read_units(path: str | os.PathLike[str]) -> list[GoldUnit]:
    """Read a gold or prediction JSONL file (see the module docstring); one-line errors name the line."""
    file = Path(path)
    if not file.is_file():
        raise InputFileNotFound(f"file not found: {file}")
    units: list[GoldUnit] = []
    seen: set[UnitKey] = set()
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file.name} line {number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise BadInput(f"{where}: expected an object")
        pid, step, sentence = record.get("procedure_id"), record.get("step"), record.get("sentence")
        if not isinstance(pid, str) or not isinstance(step, int) or isinstance(step, bool):
            raise BadInput(f"{where}: needs procedure_id (string) and step (integer)")
        if sentence is not None and (not isinstance(sentence, int) or isinstance(sentence, bool)):
            raise BadInput(f"{where}: sentence must be an integer")
        raw = record.get("tuples", [])
        if not isinstance(raw, list):
            raise BadInput(f"{where}: tuples must be a list")
        tuples = tuple(_parse_tuple(t, where) for t in raw)
        key = record.get("key", bool(tuples))
        if not isinstance(key, bool):
            raise BadInput(f"{where}: key must be true or false")
        unit = GoldUnit(pid, step, sentence, key, tuples)
        if unit.unit in seen:
            raise BadInput(f"{where}: unit {pid} step {step} sentence {sentence} appears twice")
        seen.add(unit.unit)
        units.append(unit)
    if not units:
        raise BadInput(f"{file} holds no units")
    return units


def predictions_from_store(store: Store, *, all_verbs: bool = False) -> dict[UnitKey, tuple[bool, tuple[Tuple, ...]]]:
    """Per ``(procedure_id, step, sentence)``: (key, tuples) from ``actions.parquet``.

    The prediction is paper 002's "w/ heur.": in-lexicon tuples, key when there is one. ``all_verbs``
    scores every extracted tuple instead ("w/o heur.").
    """
    from procbench.extract.pipeline import read_actions

    table = read_actions(store).select(["procedure_id", "step", "sentence", "verb", "arguments", "in_lexicon"])
    out: dict[UnitKey, list[Tuple]] = defaultdict(list)
    for row in table.to_pylist():
        unit = (row["procedure_id"], row["step"], row["sentence"])
        if all_verbs or row["in_lexicon"]:
            out[unit].append((row["verb"], tuple(row["arguments"])))
        else:
            out.setdefault(unit, [])
    return {unit: (bool(tuples), tuple(tuples)) for unit, tuples in out.items()}


def _pooled(
    predictions: dict[UnitKey, tuple[bool, tuple[Tuple, ...]]],
) -> dict[UnitKey, tuple[bool, tuple[Tuple, ...]]]:
    """Add step-level units ``(pid, step, None)`` pooling each step's sentences (in sentence order)."""
    by_step: dict[UnitKey, list[tuple[int, bool, tuple[Tuple, ...]]]] = defaultdict(list)
    for (pid, step, sentence), (key, tuples) in predictions.items():
        if sentence is not None:
            by_step[(pid, step, None)].append((sentence, key, tuples))
    pooled = dict(predictions)
    for unit, parts in by_step.items():
        if unit not in pooled:
            parts.sort(key=lambda p: p[0])
            pooled[unit] = (any(k for _, k, _ in parts), tuple(t for _, _, ts in parts for t in ts))
    return pooled


def score_units(gold: list[GoldUnit], predictions: dict[UnitKey, tuple[bool, tuple[Tuple, ...]]]) -> dict[str, Any]:
    """Stage-1 and stage-2 scores of ``predictions`` (per unit: key flag, tuples) against ``gold``."""
    predictions = _pooled(predictions)
    missing = 0
    pairs = []
    for unit in gold:
        if unit.unit not in predictions:
            missing += 1
        pairs.append((unit, predictions.get(unit.unit, (False, ()))))
    stage1 = binary_scores([p[0] for _, p in pairs], [g.key for g, _ in pairs])

    def phrases(tuples: tuple[Tuple, ...]) -> tuple[list[str], list[str]]:
        return [verb for verb, _ in tuples], [a for _, args in tuples for a in args]

    stage2: dict[str, Any] = {}
    for setting in ("oracle", "predicted"):
        verbs, arguments = [], []
        for g, (pred_key, pred_tuples) in pairs:
            if setting == "oracle":
                if not g.key:
                    continue
                predicted = pred_tuples
            else:
                if not (g.key or pred_key):
                    continue
                predicted = pred_tuples if pred_key else ()
            gold_tuples = g.tuples if g.key else ()
            pv, pa_ = phrases(predicted)
            gv, ga = phrases(gold_tuples)
            verbs.append((pv, gv))
            arguments.append((pa_, ga))
        stage2[setting] = {
            "units": len(verbs),
            "verbs": {mode: phrase_scores(verbs, mode).to_dict() for mode in MODES},
            "arguments": {mode: phrase_scores(arguments, mode).to_dict() for mode in MODES},
        }
    return {
        "units": len(gold),
        "gold_key_units": sum(g.key for g in gold),
        "units_with_nothing_extracted": missing,
        "stage1": stage1.to_dict(),
        "stage2": stage2,
    }


def evaluate_extraction(
    gold_path: str | os.PathLike[str],
    *,
    store: Store | None = None,
    predictions_path: str | os.PathLike[str] | None = None,
    all_verbs: bool = False,
) -> dict[str, Any]:
    """Score a store's ``actions.parquet`` (or a predictions JSONL) against a gold JSONL file."""
    gold = read_units(gold_path)
    if predictions_path is not None:
        units = read_units(predictions_path)
        predictions = {u.unit: (u.key, u.tuples) for u in units}
        source = str(predictions_path)
    elif store is not None:
        predictions = predictions_from_store(store, all_verbs=all_verbs)
        source = f"{store.root}/actions.parquet" + (" (all verbs)" if all_verbs else "")
    else:
        raise BadInput("evaluate-extraction needs a store with actions.parquet or --predictions FILE")
    return {"gold": str(gold_path), "predictions": source, **score_units(gold, predictions)}
