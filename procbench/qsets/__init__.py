"""Question sets as data (DESIGN §5): what ``generate`` writes and audit, models, export, report and readers read.

- :mod:`~procbench.qsets.files`: a set's folder (a parquet file per split, ``recipeqa.json``, ``card.md``,
  ``options.json``), read memory-mapped (:class:`QuestionSet`) and written atomically, a sweep at a time;
- :mod:`~procbench.qsets.columns`: the question table, the DESIGN §5 columns as Arrow arrays;
- :mod:`~procbench.qsets.questions`: :class:`Question`, one question as an object;
- :mod:`~procbench.qsets.splits`: train/val/test by procedure or by category.

Nothing here samples questions: that is :mod:`procbench.generate`, which imports this package (never the
other way round; ``tests/test_import_graph.py``).
"""

from __future__ import annotations

from procbench.qsets.columns import Questions, procedure_ids
from procbench.qsets.files import QuestionSet, check_overwrite, iter_settings, read_question_set, write_question_sets
from procbench.qsets.questions import Question
from procbench.qsets.splits import SPLITS

__all__ = [
    "SPLITS",
    "Question",
    "QuestionSet",
    "Questions",
    "check_overwrite",
    "iter_settings",
    "procedure_ids",
    "read_question_set",
    "write_question_sets",
]
