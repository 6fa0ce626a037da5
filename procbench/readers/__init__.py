"""Readers: blinded answer sheets (packets) for people and language-model readers, and their scores.

- :mod:`procbench.readers.packet`: ``procbench packet`` samples and blinds questions;
- :mod:`procbench.readers.score`: ``procbench score-packet`` scores answers and records them with each set;
- :mod:`procbench.readers.views`: the recorded scores as the card and the report show them, beside the probes.

The package imports nothing itself: the card imports :mod:`~procbench.readers.views` alone.
"""

from __future__ import annotations
