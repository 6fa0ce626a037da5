"""Options shared by every command (DESIGN §2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StoreOption = Annotated[
    Path,
    typer.Option(
        "--store", envvar="PROCBENCH_STORE", help="Store directory (env PROCBENCH_STORE).", show_default=True
    ),
]
#: Largest seed (procbench.generate.MAX_SEED; not imported here so that --help stays fast).
MAX_SEED = 2**32 - 1
SeedOption = Annotated[
    int,
    typer.Option(
        "--seed", min=0, max=MAX_SEED, help="Random seed (0 to 2^32-1): same inputs + same seed = same outputs."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a machine-readable JSON summary instead of tables.")]

DEFAULT_STORE = Path("procbench-store")
EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Where the heavy work runs: 'local' (this machine) or 'ray' (a Ray cluster; pip install "
        "'procbench\\[ray]'). Both write the same bytes.",
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        show_default=False,
        help="--engine ray: the cluster to join ('auto', HOST:6379, ray://HOST:10001); default: $RAY_ADDRESS, "
        "else a local Ray runtime started for the run.",
    ),
]
RayWorkersOption = Annotated[
    int | None,
    typer.Option(
        "--ray-workers",
        min=1,
        show_default=False,
        help="--engine ray: actors / concurrent tasks (default: the cluster's GPUs, else its CPUs).",
    ),
]
