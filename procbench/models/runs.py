"""A training run's directory.

```
RUN/
  config.json        model, task, question set (path + fingerprint), hyperparameters, input sizes, encoders
  model.safetensors  the weights of the best epoch (by validation score)
  last.pt            the state after the last finished epoch (weights, optimiser, RNG, counters), a plain
                     state dict loaded with ``weights_only=True``: a killed run resumes from here
  train.jsonl        one line per epoch: loss, train and validation scores, seconds
  metrics.json       the best weights' scores on each split of the training set
```
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from procbench.errors import BadInput
from procbench.store.atomic import atomic_path

__all__ = ["CONFIG", "LOG", "METRICS", "STATE", "WEIGHTS", "is_run", "read_config", "read_log", "write_json"]

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
STATE = "last.pt"
LOG = "train.jsonl"
METRICS = "metrics.json"


def is_run(path: Path) -> bool:
    """Whether ``path`` is a run directory (has ``config.json`` naming a model)."""
    config = path / CONFIG
    if not config.is_file():
        return False
    try:
        return "model" in json.loads(config.read_text(encoding="utf-8"))
    except ValueError:
        return False


def read_config(run: Path) -> dict[str, Any]:
    """The run's ``config.json``; a directory that is not a run is a :class:`BadInput`."""
    if not is_run(run):
        raise BadInput(f"{run} is not a training run (no config.json); train one with `procbench train`")
    data: dict[str, Any] = json.loads((run / CONFIG).read_text(encoding="utf-8"))
    return data


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read_log(run: Path) -> list[dict[str, Any]]:
    """The epochs logged so far (a torn last line, from a kill mid-write, is dropped)."""
    path = run / LOG
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            break
    return entries


def write_log(run: Path, entries: list[dict[str, Any]]) -> None:
    """Rewrite the log with ``entries`` (atomically)."""
    with atomic_path(run / LOG) as tmp:
        tmp.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries), encoding="utf-8")
