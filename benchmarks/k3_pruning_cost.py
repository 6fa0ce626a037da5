"""CPU cost of K3 = 2's AFLite pruning (issue 35, session 15): one K3 = 2 knob setting drawn alone
(``--rank-yield 1``) and drawn then pruned (the default), on a synthetic store.

Run by hand: ``python benchmarks/k3_pruning_cost.py [--procedures 120] [--tasks visual-cloze,visual-ordering]``.
Prints one line per task and rank yield: questions written, CPU and wall seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from procbench.corpus.synthetic import write_synthetic_store
from procbench.generate import Setting, generate
from procbench.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procedures", type=int, default=120)
    parser.add_argument("--tasks", default="visual-cloze,visual-coherence,visual-ordering")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        write_synthetic_store(root, n_procedures=args.procedures, step_drift=0.5, seed=3)
        for task in args.tasks.split(","):
            for rank_yield in (1.0, 0.8):
                cpu, wall = time.process_time(), time.time()
                result = generate(
                    Store.open(root), task, Setting("knobs", (0, 1, 2)), seed=0, rank_yield=rank_yield, overwrite=True
                )
                print(
                    f"{task} procedures={args.procedures} rank_yield={rank_yield} "
                    f"questions={result.questions['knobs-012']} cpu_s={time.process_time() - cpu:.1f} "
                    f"wall_s={time.time() - wall:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
