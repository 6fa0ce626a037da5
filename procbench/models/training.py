"""Training: Adam, cross-entropy, early stopping on the validation score, seeded, checkpointed, resumable.

One epoch = one pass over the train split in a seeded shuffle (the shuffle of epoch ``e`` depends only on
the seed and ``e``, so a resumed run sees the same batches as an uninterrupted one). After every epoch the
model is scored on the validation split (Acc for sequencing, accuracy otherwise; the train split when the
set has no validation questions), the best weights are kept in ``model.safetensors`` and the full state in
``last.pt``. Training stops after ``patience`` epochs without improvement or after ``epochs``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from procbench import __version__
from procbench.errors import BadInput
from procbench.models.config import RESUMABLE, TrainConfig
from procbench.models.featurisation import Featurised, featurise, qset_fingerprint
from procbench.models.nets import Batches, Net, build_net, count_parameters
from procbench.models.registry import get_model
from procbench.models.runs import CONFIG, LOG, METRICS, STATE, WEIGHTS, read_config, read_log, write_json, write_log
from procbench.models.scoring import primary_metric, question_scores
from procbench.progress import SILENT, Progress
from procbench.qsets.files import QuestionSet, read_question_set
from procbench.store import Store
from procbench.store.atomic import atomic_path

__all__ = ["LoadedRun", "TrainResult", "load_run", "predict_rows", "train", "train_many"]

_SPLITS = ("train", "val", "test")


@dataclass
class TrainResult:
    """What one training run did and where it is."""

    run: Path
    model: str
    task: str
    qset: str
    parameters: int
    epochs: int
    best_epoch: int
    best_score: float
    select_split: str
    stopped: str
    seconds: float
    metrics: dict[str, dict[str, float]]
    missing: dict[str, int] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "run": str(self.run),
            "model": self.model,
            "task": self.task,
            "qset": self.qset,
            "parameters": self.parameters,
            "epochs": self.epochs,
            "best_epoch": self.best_epoch,
            "best_score": self.best_score,
            "select_split": self.select_split,
            "stopped": self.stopped,
            "seconds": round(self.seconds, 3),
            "metrics": self.metrics,
            "missing": self.missing,
            "history": self.history,
        }


@dataclass
class LoadedRun:
    """A trained run ready to predict: its config and network (best weights, eval mode)."""

    path: Path
    config: dict[str, Any]
    train_config: TrainConfig
    net: Net

    @property
    def model(self) -> str:
        """The registered model name."""
        return str(self.config["model"])


def predict_rows(net: Net, batches: Batches, rows: np.ndarray, *, batch_size: int = 256) -> list[Any]:
    """Predictions of ``net`` (in eval mode, no gradients) for questions ``rows``."""
    net.eval()
    out: list[Any] = []
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            out.extend(net.predict(batches.batch(rows[start : start + batch_size])))
    return out


def _split_metrics(net: Net, batches: Batches, feats: Featurised) -> dict[str, dict[str, float]]:
    metrics: dict[str, dict[str, float]] = {}
    for split in _SPLITS:
        rows = feats.rows(split)
        if len(rows) == 0:
            continue
        scores = question_scores(feats, rows, predict_rows(net, batches, rows))
        metrics[split] = {"n": len(rows), **{k: float(v.mean()) for k, v in scores.items()}}
    return metrics


def _selection_score(net: Net, batches: Batches, feats: Featurised, rows: np.ndarray) -> float:
    scores = question_scores(feats, rows, predict_rows(net, batches, rows))
    return float(scores[primary_metric(feats.family)].mean())


def _identity(config: dict[str, Any]) -> dict[str, Any]:
    hp = {k: v for k, v in config["hyperparameters"].items() if k not in RESUMABLE}
    return {
        "model": config["model"],
        "task": config["task"],
        "fingerprint": config["qset"]["fingerprint"],
        "hyperparameters": hp,
        "dims": config["dims"],
        "encoders": config["encoders"],
    }


def _save_weights(net: Net, path: Path) -> None:
    tensors = {k: v.detach().contiguous() for k, v in net.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt", "procbench": __version__})


def _save_state(state: dict[str, Any], path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def _clear(run: Path) -> None:
    for name in (CONFIG, WEIGHTS, STATE, LOG, METRICS):
        (run / name).unlink(missing_ok=True)


def _as_qset(qset: QuestionSet | str | Path) -> QuestionSet:
    if isinstance(qset, QuestionSet):
        return qset
    path = Path(qset)
    if not path.is_dir():
        raise BadInput(f"no question set at {path}")
    return read_question_set(path)


@dataclass
class _Fit:
    """What one training run works with: the network and its optimiser, the features and their batches, the
    rows it trains on and the rows (and split) it selects the best epoch on, its config and directory."""

    net: Net
    optimiser: torch.optim.Optimizer
    feats: Featurised
    batches: Batches
    train_rows: np.ndarray
    select_rows: np.ndarray
    select_split: str
    config: TrainConfig
    run: Path


@dataclass
class _Standing:
    """Where training stands: epochs done, the best selection score and its epoch, epochs since it improved,
    why it stopped (empty while it goes on) and the per-epoch log."""

    epoch: int = 0
    best: float = float("-inf")
    best_epoch: int = 0
    bad: int = 0
    stopped: str = ""
    log: list[dict[str, Any]] = field(default_factory=list)


def train(
    qset: QuestionSet | str | Path,
    config: TrainConfig,
    out: str | Path,
    *,
    store: Store | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    progress: Progress = SILENT,
) -> TrainResult:
    """Train ``config.model`` on ``qset`` into the run directory ``out`` and score the best weights.

    If ``out`` already holds this run (same model, questions, hyperparameters apart from ``epochs`` and
    ``patience``), training resumes after its last finished epoch; a finished run returns at once. A
    different run there is a :class:`BadInput` unless ``overwrite``. ``threads`` sets torch's CPU threads
    (one is fastest for small models on a busy machine).
    """
    spec = get_model(config.model)
    if not spec.trained:
        raise BadInput(f"{config.model} is not trained: score it with `procbench evaluate --model {config.model}`")
    qset = _as_qset(qset)
    spec.check_task(qset.task)
    run = Path(out)
    feats = featurise(qset, config.feature_config(), store=store)
    train_rows, select_rows, select_split = _train_and_select_rows(feats, qset)
    hp = config.resolved()
    if threads:
        torch.set_num_threads(threads)

    torch.manual_seed(config.seed)
    net = build_net(config.model, feats.dims, hp)
    optimiser = torch.optim.Adam(net.parameters(), lr=config.lr)
    run_config = _run_config(config, qset, feats, hp, net, select_split)
    state = _open_run(run, run_config, overwrite=overwrite)

    started = time.perf_counter()
    standing = _Standing() if state is None else _resume(state, net, optimiser, run, patience=config.patience)
    fit = _Fit(net, optimiser, feats, Batches(feats), train_rows, select_rows, select_split, config, run)
    while not standing.stopped and standing.epoch < config.epochs:
        _train_epoch(fit, standing, progress)
    if not standing.stopped:
        standing.stopped = "epochs"
    net.load_state_dict(load_file(str(run / WEIGHTS)))
    metrics = _split_metrics(net, fit.batches, feats)
    write_json(run / METRICS, metrics)
    epoch, best_epoch, stopped = standing.epoch, standing.best_epoch, standing.stopped
    _record_run(store, qset, run_config, run, epoch=epoch, best_epoch=best_epoch, stopped=stopped, metrics=metrics)
    return TrainResult(
        run=run,
        model=config.model,
        task=qset.task,
        qset=qset.name,
        parameters=run_config["parameters"],
        epochs=epoch,
        best_epoch=best_epoch,
        best_score=standing.best,
        select_split=select_split,
        stopped=stopped,
        seconds=time.perf_counter() - started,
        metrics=metrics,
        missing=feats.missing,
        history=standing.log,
    )


def _train_and_select_rows(feats: Featurised, qset: QuestionSet) -> tuple[np.ndarray, np.ndarray, str]:
    """The train rows, and the rows and split the best epoch is selected on (val, else train)."""
    train_rows = feats.rows("train")
    if len(train_rows) == 0:
        raise BadInput(f"{qset.name} has no train questions")
    select_rows, select_split = feats.rows("val"), "val"
    if len(select_rows) == 0:
        select_rows, select_split = train_rows, "train"
    return train_rows, select_rows, select_split


def _run_config(
    config: TrainConfig, qset: QuestionSet, feats: Featurised, hp: dict[str, Any], net: Net, select_split: str
) -> dict[str, Any]:
    """What ``config.json`` records of a run: versions, model, question set, hyperparameters and features."""
    return {
        "procbench": __version__,
        "torch": torch.__version__,
        "model": config.model,
        "task": qset.task,
        "qset": {"name": qset.name, "path": str(qset.path.resolve()), "fingerprint": qset_fingerprint(qset)},
        "hyperparameters": hp,
        "dims": feats.dims,
        "encoders": feats.encoders,
        "parameters": count_parameters(net),
        "select_split": select_split,
    }


def _open_run(run: Path, run_config: dict[str, Any], *, overwrite: bool) -> dict[str, Any] | None:
    """Make the run directory hold this run's config; returns the checkpointed state of the same run found
    there (None to start afresh). Another run there is a :class:`BadInput` unless ``overwrite`` clears it."""
    if overwrite:
        _clear(run)
    state: dict[str, Any] | None = None
    if (run / CONFIG).is_file():
        previous = read_config(run)
        if _identity(previous) != _identity(run_config):
            raise BadInput(
                f"{run} holds a different run ({previous['model']} on {previous['qset']['name']}); "
                "choose another --out or pass --overwrite"
            )
        if (run / STATE).is_file():
            state = torch.load(run / STATE, weights_only=True)
    run.mkdir(parents=True, exist_ok=True)
    write_json(run / CONFIG, run_config)
    return state


def _resume(
    state: dict[str, Any], net: Net, optimiser: torch.optim.Optimizer, run: Path, *, patience: int
) -> _Standing:
    """Restore the network, optimiser and torch's random state from a checkpoint; returns where it stood."""
    net.load_state_dict(state["model"])
    optimiser.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    epoch = int(state["epoch"])
    bad = int(state["bad_epochs"])
    return _Standing(
        epoch=epoch,
        best=float(state["best"]),
        best_epoch=int(state["best_epoch"]),
        bad=bad,
        stopped="patience" if bad >= patience else "",
        log=[e for e in read_log(run) if e["epoch"] <= epoch],
    )


def _train_epoch(fit: _Fit, standing: _Standing, progress: Progress) -> None:
    """One epoch: a pass over the train rows in the epoch's seeded shuffle, then selection and checkpoint."""
    config, net, optimiser = fit.config, fit.net, fit.optimiser
    tick = time.perf_counter()
    last = standing.log[-1] if standing.log else None
    note = f" · loss {last['loss']:.3f} · {fit.select_split} {last['select_score']:.1%}" if last else ""
    progress.start(
        f"{config.model} epoch {standing.epoch + 1}/{config.epochs}{note}",
        total=-(-len(fit.train_rows) // config.batch_size),
    )
    net.train()
    generator = torch.Generator().manual_seed(config.seed * 1_000_003 + standing.epoch)
    order = fit.train_rows[torch.randperm(len(fit.train_rows), generator=generator).numpy()]
    loss_sum, correct, total = 0.0, 0, 0
    for start in range(0, len(order), config.batch_size):
        rows = order[start : start + config.batch_size]
        optimiser.zero_grad()
        loss, right, count = net.loss_and_correct(fit.batches.batch(rows))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        optimiser.step()
        loss_sum += float(loss.detach()) * len(rows)
        correct, total = correct + right, total + count
        progress.advance()
    standing.epoch += 1
    score = _selection_score(net, fit.batches, fit.feats, fit.select_rows)
    improved = score > standing.best
    if improved:
        standing.best, standing.best_epoch, standing.bad = score, standing.epoch, 0
        _save_weights(net, fit.run / WEIGHTS)
    else:
        standing.bad += 1
    if standing.bad >= config.patience:
        standing.stopped = "patience"
    standing.log.append(
        {
            "epoch": standing.epoch,
            "loss": loss_sum / len(order),
            "train_score": correct / max(total, 1),
            "select_score": score,
            "select_split": fit.select_split,
            "best": improved,
            "seconds": round(time.perf_counter() - tick, 4),
        }
    )
    write_log(fit.run, standing.log)
    _checkpoint(fit, standing)


def _checkpoint(fit: _Fit, standing: _Standing) -> None:
    """Save the full state after an epoch (``last.pt``): what a resumed run continues from."""
    _save_state(
        {
            "model": fit.net.state_dict(),
            "optimizer": fit.optimiser.state_dict(),
            "rng": torch.get_rng_state(),
            "epoch": standing.epoch,
            "best": standing.best,
            "best_epoch": standing.best_epoch,
            "bad_epochs": standing.bad,
            "stopped": standing.stopped,
        },
        fit.run / STATE,
    )


def _record_run(
    store: Store | None,
    qset: QuestionSet,
    run_config: dict[str, Any],
    run: Path,
    *,
    epoch: int,
    best_epoch: int,
    stopped: str,
    metrics: dict[str, dict[str, float]],
) -> None:
    """A ``train`` entry in the provenance log of the store the features came from: the model, the set (and its
    fingerprint), the hyperparameters, where the run is, how it ended and its scores per split."""
    from procbench.models.featurisation import store_of

    home = store or store_of(qset)
    args = {
        "model": run_config["model"],
        "qset": qset.name,
        "fingerprint": run_config["qset"]["fingerprint"],
        "hyperparameters": run_config["hyperparameters"],
    }
    counts = {"epochs": epoch, "best_epoch": best_epoch, "stopped": stopped, "metrics": metrics}
    home.record_run("train", args=args, seed=run_config["hyperparameters"].get("seed"), counts=counts, outputs=[run])


def train_many(
    qsets: list[QuestionSet],
    config: TrainConfig,
    out: str | Path,
    *,
    overwrite: bool = False,
    threads: int | None = None,
    progress: Progress = SILENT,
) -> list[TrainResult]:
    """Train on one question set into ``out``, or on each setting of a sweep into ``out/SETTING``."""
    if not qsets:
        raise BadInput("no question sets to train on")
    if len(qsets) == 1:
        return [train(qsets[0], config, out, overwrite=overwrite, threads=threads, progress=progress)]
    names = [q.setting for q in qsets]
    if len(set(names)) != len(names):
        raise BadInput("the question sets share setting names; train them one at a time with separate --out")
    return [
        train(q, config, Path(out) / q.setting, overwrite=overwrite, threads=threads, progress=progress) for q in qsets
    ]


def load_run(run: str | Path) -> LoadedRun:
    """Load a run's best weights (safetensors) into its network, ready to predict."""
    run = Path(run)
    config = read_config(run)
    if not (run / WEIGHTS).is_file():
        raise BadInput(f"{run} has no weights yet: its first epoch has not finished; resume it with `procbench train`")
    train_config = TrainConfig.from_dict({**config["hyperparameters"], "model": config["model"]})
    net = build_net(config["model"], config["dims"], config["hyperparameters"])
    net.load_state_dict(load_file(str(run / WEIGHTS)))
    net.eval()
    return LoadedRun(run, config, train_config, net)
