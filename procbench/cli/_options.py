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
SeedOption = Annotated[int, typer.Option("--seed", help="Random seed: same inputs + same seed = same outputs.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a machine-readable JSON summary instead of tables.")]

DEFAULT_STORE = Path("procbench-store")
