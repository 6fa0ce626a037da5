"""Where the heavy stages run: in this process (``local``) or on a Ray cluster (``ray``).

``embed``, ``clean`` and ``generate`` take an :class:`Engine`. With ``Engine("ray")`` the encoders run in
Ray Data actor pools, the text rules of ``clean`` and the neighbour searches of ``generate`` run as Ray
tasks; everything else (sampling, budgets, writing the store) stays in the calling process, so the outputs
are byte-identical to a local run.

>>> from procbench.engine import Engine
>>> Engine.parse("ray", address="ray://head:10001", workers=8)  # doctest: +SKIP

Ray is an optional dependency (``pip install 'procbench[ray]'``), imported only when a Ray engine is used
(see :mod:`procbench.engine.raycluster`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from procbench.errors import BadInput

__all__ = ["ENGINES", "LOCAL", "Engine", "EngineName"]

EngineName = Literal["local", "ray"]
ENGINES: tuple[EngineName, ...] = ("local", "ray")


@dataclass(frozen=True)
class Engine:
    """An execution engine.

    Attributes:
        name: ``local`` (this process and its own worker pools) or ``ray``.
        address: with ``ray``: a cluster address (``auto``, ``HOST:6379``, ``ray://HOST:10001``); None starts
            a local Ray runtime for the run (and stops it after). Ignored when Ray is already initialised.
        workers: with ``ray``: encoder actors / concurrent tasks (default: the cluster's GPUs when it has
            some, else its CPUs).
    """

    name: EngineName = "local"
    address: str | None = None
    workers: int | None = None

    @classmethod
    def parse(cls, name: str, *, address: str | None = None, workers: int | None = None) -> Engine:
        """Check and build an engine from command-line values.

        Raises:
            BadInput: unknown engine name, ``address``/``workers`` without ``ray``, workers below 1.
        """
        if name not in ENGINES:
            raise BadInput(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}")
        if name == "local" and address:
            raise BadInput("--ray-address needs --engine ray")
        if name == "local" and workers is not None:
            raise BadInput("--ray-workers needs --engine ray")
        if workers is not None and workers < 1:
            raise BadInput(f"workers must be at least 1, got {workers}")
        return cls(name, address or None, workers)

    @property
    def is_ray(self) -> bool:
        """Whether this engine runs on Ray."""
        return self.name == "ray"

    def describe(self) -> dict[str, str | int | None]:
        """What the provenance log records (the address is left out: it says nothing about the outputs)."""
        return {"engine": self.name, "workers": self.workers}


#: Run in this process.
LOCAL = Engine()
