"""What the benchmarks share: memory readings of this process and a per-phase peak-RSS sampler.

A benchmark imports procbench as installed (``pip install -e .`` puts this checkout on the path) and these
helpers with ``from _common import ...`` (a script's own folder is on ``sys.path``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["ROOT", "PhasePeaks", "anonymous_rss_mb", "peak_rss_mb", "rss_mb"]

#: The checkout the benchmarks belong to (its tests/fixtures, a working directory for child processes).
ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    """This process's resident set size now, in MiB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def anonymous_rss_mb() -> float:
    """The anonymous part of the RSS in MiB (RssAnon; the rest is file-backed, e.g. memory-mapped embeddings)."""
    return _status_mb("RssAnon")


def peak_rss_mb() -> float:
    """VmHWM: this process's own peak RSS in MiB (``ru_maxrss`` would include the parent's peak from before
    exec)."""
    return _status_mb("VmHWM")


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024
    return 0.0


class PhasePeaks:
    """The peak RSS of every phase, sampled every 50 ms by a thread: set ``phase`` as work moves on.

    Subclasses that read more than the RSS override :meth:`sample`; call :meth:`stop` when done.
    """

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.peaks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        """Record one reading under the current phase."""
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), rss_mb())

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.sample()

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()
