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
