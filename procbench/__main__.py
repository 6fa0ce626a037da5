from __future__ import annotations

from procbench.cli import main

main()
