"""Questions as Arrow columns: how generators that make millions of questions hand them to the writer.

A **question table** has the DESIGN §5 columns a generator decides: ``procedure_id``, ``context``,
``question``, ``choices``, ``answer`` and ``meta`` (the writer adds ``qid``, ``task`` and ``split``).
String columns may be dictionary-encoded (image ids are indices into one shared array of ids, so a sweep
of many settings holds each id once); :func:`decoded` turns them into plain strings for the files.
Small tasks build :class:`~procbench.qsets.questions.Question` objects; :func:`as_table` converts them.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.arrays import ragged_lists, ranges
from procbench.qsets.questions import Question

__all__ = [
    "COLUMNS",
    "Questions",
    "as_table",
    "count",
    "decoded",
    "dictionary",
    "fixed_lists",
    "procedure_ids",
    "questions_table",
    "ragged_lists",
    "ranges",
    "struct",
]

COLUMNS = ("procedure_id", "context", "question", "choices", "answer", "meta")
#: What a task's ``build`` returns per setting: question objects or a question table.
Questions: TypeAlias = list[Question] | pa.Table


def questions_table(questions: list[Question]) -> pa.Table:
    """The question table of ``questions`` (``meta`` types inferred from the dicts)."""
    ordering = bool(questions) and isinstance(questions[0].choices[0], list)
    choice_type = pa.list_(pa.list_(pa.string())) if ordering else pa.list_(pa.string())
    metas = [q.meta for q in questions]
    return pa.table(
        {
            "procedure_id": pa.array([q.procedure_id for q in questions], pa.string()),
            "context": pa.array([q.context for q in questions], pa.list_(pa.int32())),
            "question": pa.array([q.question for q in questions], pa.list_(pa.string())),
            "choices": pa.array([q.choices for q in questions], choice_type),
            "answer": pa.array([q.answer for q in questions], pa.int32()),
            "meta": pa.array(metas) if metas else pa.array([], pa.struct([("setting", pa.string())])),
        }
    )


def as_table(questions: Questions) -> pa.Table:
    """``questions`` as a question table (a table is returned as it is)."""
    return questions if isinstance(questions, pa.Table) else questions_table(questions)


def count(questions: Questions) -> int:
    """How many questions."""
    return questions.num_rows if isinstance(questions, pa.Table) else len(questions)


def procedure_ids(questions: Questions) -> set[str]:
    """The procedures the questions are about."""
    if not isinstance(questions, pa.Table):
        return {q.procedure_id for q in questions}
    column = questions["procedure_id"].combine_chunks()
    if pa.types.is_dictionary(column.type):
        used = np.unique(column.indices.to_numpy(zero_copy_only=False))
        return set(column.dictionary.take(pa.array(used)).to_pylist())
    return set(pc.unique(column).to_pylist())


# -- building columns ---------------------------------------------------------------------------------------
def dictionary(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    """``values[indices]`` without copying the values (int32 indices)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.asarray(indices, dtype=np.int32)), values)


def fixed_lists(values: pa.Array | np.ndarray, width: int) -> pa.ListArray:
    """Consecutive runs of ``width`` values as lists (a ``(B, width)`` array flattened row by row)."""
    if isinstance(values, np.ndarray):
        values = pa.array(values.reshape(-1))
    offsets = np.arange(0, len(values) + 1, width, dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def struct(fields: dict[str, Any]) -> pa.StructArray:
    """A struct array from named columns (numpy arrays or Arrow arrays), in the order given."""
    arrays = [value if isinstance(value, pa.Array) else pa.array(value) for value in fields.values()]
    return pa.StructArray.from_arrays(arrays, names=list(fields))


# -- decoding -------------------------------------------------------------------------------------------------
def _plain_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(kind):
        return _plain_type(kind.value_type)
    if pa.types.is_list(kind):
        return pa.list_(pa.field(kind.value_field.name, _plain_type(kind.value_type)))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in kind])
    return kind


def decoded(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary-encoded column (also inside lists and structs) as plain values."""
    schema = pa.schema([pa.field(f.name, _plain_type(f.type)) for f in table.schema])
    if schema.equals(table.schema):
        return table
    return table.cast(schema)
