"""The Ray side of :class:`procbench.engine.Engine`: connecting, and mapping a function over shards.

Everything here imports Ray lazily. A run connects with :func:`ray_runtime`: to the cluster at
``engine.address``, to the runtime this process already initialised (tests, notebooks), or to a local
runtime it starts for the run and stops afterwards. On a cluster procbench's own code travels to the workers as a
``py_modules`` runtime environment, so a cluster needs procbench's dependencies but not procbench itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from procbench.engine import Engine
from procbench.errors import MissingDependency

__all__ = ["cluster_workers", "import_ray", "init_kwargs", "ray_map", "ray_runtime"]

T = TypeVar("T")
R = TypeVar("R")

_INSTALL = "Ray is not installed: pip install 'procbench[ray]' (or 'ray[data]')"


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        MissingDependency: Ray is not installed.
    """
    try:
        import ray
        import ray.data  # noqa: F401  (the embed stage needs Ray Data; fail here, not half-way)
    except ImportError as exc:
        raise MissingDependency(_INSTALL) from exc
    return ray


def init_kwargs(address: str | None = None, *, num_cpus: int | None = None) -> dict[str, Any]:
    """Arguments of ``ray.init`` for procbench: no dashboard, quiet logs.

    With an ``address`` (a cluster) procbench's own package travels to the workers as a ``py_modules``
    runtime environment, so the cluster needs procbench's dependencies but not procbench itself. Without
    one (and no ``RAY_ADDRESS``) a local runtime starts on the loopback address with ``num_cpus`` CPUs
    (default: all), usage statistics off (no network traffic a user did not ask for); its workers import
    procbench as this process does.
    """
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING"}
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        kwargs["address"] = address
        kwargs["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[1])]}
    else:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        kwargs["_node_ip_address"] = "127.0.0.1"
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
    return kwargs


@contextlib.contextmanager
def ray_runtime(engine: Engine) -> Iterator[Any]:
    """Connect to Ray for one run; yields the ``ray`` module.

    A runtime this process already initialised is used as it is (and left running); otherwise one is
    started or joined for the block and shut down after it.
    """
    ray = import_ray()
    _quiet_data(ray)
    if ray.is_initialized():
        yield ray
        return
    ray.init(**init_kwargs(engine.address))
    try:
        yield ray
    finally:
        ray.shutdown()


def _quiet_data(ray: Any) -> None:
    """No Ray Data progress bars or per-operator logs in procbench's output (it reports its own progress)."""
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    if hasattr(ctx, "enable_operator_progress_bars"):
        ctx.enable_operator_progress_bars = False
    if hasattr(ctx, "print_on_execution_start"):
        ctx.print_on_execution_start = False


def cluster_workers(ray: Any, engine: Engine, *, gpu: bool = False) -> int:
    """How many actors or concurrent tasks to run: ``engine.workers``, else the cluster's GPUs (``gpu``) or CPUs."""
    if engine.workers is not None:
        return engine.workers
    resources = ray.cluster_resources()
    return max(1, int(resources.get("GPU" if gpu else "CPU", 1)))


def ray_map(
    ray: Any,
    fn: Callable[..., R],
    shards: Sequence[Any],
    *,
    shared: Sequence[Any] = (),
    num_cpus: float = 1,
    on_done: Callable[[int, R], None] | None = None,
) -> list[R]:
    """``[fn(*shared, shard) for shard in shards]`` as Ray tasks; results in shard order.

    ``shared`` arguments are put in the object store once and passed to every task by reference (a FAISS
    index, a model), not copied per task. ``on_done(i, result)`` is called as each shard finishes (in the
    order they finish), e.g. to advance a progress bar.
    """
    remote = ray.remote(num_cpus=num_cpus)(fn)
    refs = [ray.put(value) for value in shared]
    pending = {remote.remote(*refs, shard): i for i, shard in enumerate(shards)}
    results: dict[int, R] = {}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            results[i] = ray.get(ref)
            if on_done is not None:
                on_done(i, results[i])
    return [results[i] for i in range(len(shards))]
