"""``clean`` end to end: text rules on every step, then the procedure filters, then one atomic write.

Cleaning reads only the raw columns (``title``, ``text``, ``language`` where declared), so it can be
redone with other settings at any time, and running it twice with the same settings changes nothing.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procbench.clean.dedupe import find_duplicates
from procbench.clean.filters import language_decisions, no_text, off_domain, step_count
from procbench.clean.language import MAX_CHARS, detect_languages
from procbench.clean.normalize import normalize_text
from procbench.clean.options import CleanOptions
from procbench.clean.report import FILTER_RULES, CleanReport, Example, RuleStats
from procbench.clean.segment import Segmenter
from procbench.clean.text import TextCleaner, default_workers
from procbench.clean.vocab import VocabCounts, count_in_vocabulary, get_vocabulary
from procbench.engine import LOCAL, Engine
from procbench.ingest.records import MAX_FIELD_CHARS
from procbench.progress import SILENT, Progress
from procbench.store import PROCEDURES, STEPS, Store, conform

__all__ = ["CleanResult", "clean_store", "clean_tables"]

#: Columns ``clean`` adds (and replaces on a re-run).
STEP_COLUMNS = ("title_clean", "text_clean")
PROCEDURE_COLUMNS = ("keep", "drop_reason")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class CleanResult:
    """The cleaned tables and the report of what changed."""

    procedures: pa.Table
    steps: pa.Table
    report: CleanReport


def _sum_counts(a: VocabCounts, b: VocabCounts) -> VocabCounts:
    return VocabCounts(a.tokens + b.tokens, a.in_vocab + b.in_vocab)


def _recount(before: VocabCounts, raw: pa.ChunkedArray | pa.Array, clean: pa.Array) -> VocabCounts:
    """Counts of ``clean``, recounting only the rows that differ from ``raw``."""
    changed = np.asarray(pc.not_equal(pc.fill_null(raw, ""), pc.fill_null(clean, "")), dtype=bool)
    if not changed.any():
        return before
    fresh = count_in_vocabulary(clean.filter(pa.array(changed)))
    tokens, in_vocab = before.tokens.copy(), before.in_vocab.copy()
    tokens[changed], in_vocab[changed] = fresh.tokens, fresh.in_vocab
    return VocabCounts(tokens, in_vocab)


def _per_procedure(values: np.ndarray, proc_index: np.ndarray, n: int) -> np.ndarray:
    ok = proc_index >= 0
    return np.bincount(proc_index[ok], weights=values[ok], minlength=n).astype(np.int64)


def clean_tables(
    procedures: pa.Table,
    steps: pa.Table,
    options: CleanOptions | None = None,
    *,
    progress: Progress = SILENT,
    segmenter: Segmenter | None = None,
    workers: int | None = None,
    ray: Any = None,
) -> CleanResult:
    """Clean a ``procedures`` and a ``steps`` table (DESIGN §3 schemas); pure: nothing is written.

    ``workers``: processes for the text rules on large tables (default: the usable CPUs, at most 4); the
    result is the same for any number. ``ray``: a connected ``ray`` module; the text rules then run as Ray
    tasks over shards of consecutive steps (the same result). Returns the two tables with the clean columns
    added (replaced when present) and the report.
    """
    started = time.perf_counter()
    options = options or CleanOptions()
    if options.split_fused and segmenter is None:
        segmenter = Segmenter(get_vocabulary())
    cleaner = TextCleaner(
        ascii_only=options.ascii_only,
        split_fused=options.split_fused,
        examples=options.examples,
        segmenter=segmenter,
        workers=default_workers() if workers is None else workers,
        ray=ray,
    )
    with cleaner:
        return _clean_with(cleaner, procedures, steps, options, progress, started)


def _clean_with(
    cleaner: TextCleaner,
    procedures: pa.Table,
    steps: pa.Table,
    options: CleanOptions,
    progress: Progress,
    started: float,
) -> CleanResult:
    n_proc, n_steps = procedures.num_rows, steps.num_rows
    ids: list[str] = procedures["id"].to_pylist()
    proc_index = np.asarray(
        pc.fill_null(pc.index_in(steps["procedure_id"], value_set=procedures["id"]), -1), dtype=np.int64
    )
    step_pids: list[str] = steps["procedure_id"].to_pylist()
    step_idx: list[int] = steps["index"].to_pylist()

    # steps in (procedure, index) order, orphans left out: what language, keywords and duplicates read
    order = np.lexsort((np.asarray(steps["index"], dtype=np.int64), proc_index))
    order = order[proc_index[order] >= 0]
    sorted_proc = proc_index[order]
    take = pa.array(order)
    offsets = np.zeros(n_proc + 1, dtype=np.int32)
    np.cumsum(np.bincount(sorted_proc, minlength=n_proc), out=offsets[1:])
    offsets_array = pa.array(offsets)

    def per_procedure_text(column: pa.Array | pa.ChunkedArray) -> list[str]:
        values = pc.fill_null(column.take(take), "")
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return pc.binary_join(pa.ListArray.from_arrays(offsets_array, values), " ").to_pylist()

    # -- fields over ingest's size cap: the procedure is dropped and its texts never reach the rules, so a
    # store written before the caps (one 200 MB step) costs a small multiple of its input, not 20 times it
    raw_titles, raw_texts, too_long = _without_oversized(procedures, steps, proc_index)

    # -- text rules, phase 1: markup, unicode, whitespace ---------------------------------------------------
    # The raw vocabulary counts run in a thread meanwhile: pyarrow releases the GIL while it tokenises.
    cleaner.start_workers(n_steps)
    counting = ThreadPoolExecutor(1)
    raw_counts = counting.submit(lambda: (count_in_vocabulary(raw_titles), count_in_vocabulary(raw_texts)))
    norm_titles = cleaner.normalize_column(raw_titles.to_pylist(), step_pids, step_idx, title=True, progress=progress)
    norm_texts = cleaner.normalize_column(raw_texts.to_pylist(), step_pids, step_idx, title=False, progress=progress)

    # -- language, before splitting: fused words are split only in English text -----------------------------
    raw_proc_titles: list[str] = ["" if i in too_long else t for i, t in enumerate(procedures["title"].to_pylist())]
    joined_norm = per_procedure_text(pa.array(norm_texts, pa.string()))
    to_detect = [
        f"{normalize_text(raw_proc_titles[i], ascii_only=options.ascii_only)}. {joined_norm[i][:MAX_CHARS]}"
        for i in range(n_proc)
    ]
    detected = detect_languages([t if _LETTER.search(t) else None for t in to_detect], progress=progress)
    declared: list[str | None] = procedures["language"].to_pylist()
    fill, language_reasons, decided = language_decisions(
        declared, detected, allowed=options.languages, min_confidence=options.min_language_confidence
    )
    english = np.array([lang in (None, "en") for lang in decided] + [True], dtype=bool)
    split_rows = english[np.where(proc_index >= 0, proc_index, n_proc)].tolist()

    # -- text rules, phase 2: fused words, step titles ----------------------------------------------------
    title_clean = pa.array(
        cleaner.finish_column(norm_titles, step_pids, step_idx, title=True, split=split_rows, progress=progress),
        pa.string(),
    )
    text_clean = pa.array(
        cleaner.finish_column(norm_texts, step_pids, step_idx, title=False, split=split_rows, progress=progress),
        pa.string(),
    )
    proc_titles = [cleaner.clean(t, split=bool(english[i])) or "" for i, t in enumerate(raw_proc_titles)]

    # -- vocabulary and per-procedure numbers ---------------------------------------------------------------
    progress.start("clean: measuring", total=None)
    before_titles, before_texts = raw_counts.result()
    counting.shutdown()
    before = _sum_counts(before_titles, before_texts)
    after = _sum_counts(
        _recount(before_titles, raw_titles, title_clean), _recount(before_texts, raw_texts, text_clean)
    )
    words = _per_procedure(after.tokens, proc_index, n_proc)
    has_content = pc.or_(
        pc.or_(pc.greater(pc.utf8_length(pc.fill_null(text_clean, "")), 0), pc.is_valid(title_clean)),
        pc.greater(pc.fill_null(pc.list_value_length(steps["image_ids"]), 0), 0),
    )
    content_steps = _per_procedure(np.asarray(has_content, dtype=np.int64), proc_index, n_proc)
    step_rows = _per_procedure(np.ones(n_steps, dtype=np.int64), proc_index, n_proc)
    joined = per_procedure_text(text_clean) if options.keywords else [""] * n_proc  # only keywords read it
    both = pc.binary_join_element_wise(
        pc.fill_null(title_clean.take(take), ""), pc.fill_null(text_clean.take(take), ""), " "
    )

    # -- filters ------------------------------------------------------------------------------------------
    reasons: list[str | None] = [None] * n_proc
    rule_of: list[str | None] = [None] * n_proc

    def apply(rule: str, found: Sequence[str | None]) -> None:
        for i, why in enumerate(found):
            if why is not None and reasons[i] is None:
                reasons[i], rule_of[i] = why, rule

    apply("too_long", [too_long.get(i) for i in range(n_proc)])
    apply("no_text", no_text(words, min_words=options.min_words))
    apply("language", language_reasons)
    apply("step_count", step_count(content_steps, min_steps=options.min_steps, max_steps=options.max_steps))
    apply("off_domain", off_domain(ids, proc_titles, procedures["category"].to_pylist(), joined, options))
    duplicates = {"exact": 0, "near": 0}
    if options.dedupe:
        progress.start("clean: duplicates", total=None)
        active = np.array([r is None for r in reasons], dtype=bool)
        matches = find_duplicates(
            both,
            sorted_proc,
            proc_titles,
            active,
            threshold=options.near_duplicate_threshold,
            title_threshold=options.title_similarity,
            strong=options.strong_duplicate_threshold,
        )
        found: list[str | None] = [None] * n_proc
        for m in matches:
            found[m.index] = (
                f"{'exact' if m.exact else 'near'} duplicate of {ids[m.kept]} (word-bigram Jaccard {m.similarity:.2f})"
            )
            duplicates["exact" if m.exact else "near"] += 1
        apply("duplicate", found)

    # -- output tables ------------------------------------------------------------------------------------
    keep = pa.array([r is None for r in reasons], pa.bool_())
    drop_reason = pa.array(rule_of, pa.string())
    language = pc.coalesce(procedures["language"], pa.array(fill, pa.string()))
    out_proc = procedures.drop_columns([c for c in PROCEDURE_COLUMNS if c in procedures.column_names])
    out_proc = out_proc.set_column(out_proc.schema.get_field_index("language"), "language", language)
    out_proc = conform(out_proc.append_column("keep", keep).append_column("drop_reason", drop_reason), PROCEDURES)
    out_steps = steps.drop_columns([c for c in STEP_COLUMNS if c in steps.column_names])
    out_steps = conform(
        out_steps.append_column("title_clean", title_clean).append_column("text_clean", text_clean), STEPS
    )

    # -- report -------------------------------------------------------------------------------------------
    kept_mask = np.array([r is None for r in reasons], dtype=bool)
    kept_steps_mask = (proc_index >= 0) & kept_mask[np.maximum(proc_index, 0)]
    filters = []
    for rule, description in FILTER_RULES.items():
        if rule == "duplicate" and not options.dedupe:
            continue
        members = [i for i in range(n_proc) if rule_of[i] == rule]
        if rule == "too_long" and not members:  # listed only when it dropped something
            continue
        stats = RuleStats(
            rule,
            "filter",
            description,
            procedures=len(members),
            steps=int(step_rows[members].sum()) if members else 0,
            tokens=int(words[members].sum()) if members else 0,
        )
        stats.examples = [
            Example(ids[i], "procedure", raw_proc_titles[i], reasons[i]) for i in members[: options.examples]
        ]
        filters.append(stats)
    kept_tokens = int(after.tokens[kept_steps_mask].sum())
    text_lengths = np.asarray(pc.fill_null(pc.utf8_length(text_clean), 0), dtype=np.int64)
    report = CleanReport(
        procedures=n_proc,
        steps=n_steps,
        kept=int(kept_mask.sum()),
        kept_steps=int(kept_steps_mask.sum()),
        kept_steps_without_text=int((kept_steps_mask & (text_lengths == 0)).sum()),
        rules=cleaner.rule_stats() + filters,
        in_vocabulary={
            "before": round(before.ratio, 4),
            "after": round(after.ratio, 4),
            "after_kept": round(float(after.in_vocab[kept_steps_mask].sum()) / kept_tokens, 4) if kept_tokens else 1.0,
            "tokens_before": int(before.tokens.sum()),
            "tokens_after": int(after.tokens.sum()),
            "tokens_after_kept": kept_tokens,
        },
        languages=dict(
            sorted(
                Counter(
                    lang for lang, p in detected if lang is not None and p >= options.min_language_confidence
                ).items(),
                key=lambda kv: (-kv[1], kv[0]),
            )
        ),
        language_filled=sum(1 for i, f in enumerate(fill) if f is not None and declared[i] is None),
        duplicates=duplicates,
        options=options.to_dict(),
    )
    report.seconds = time.perf_counter() - started
    return CleanResult(out_proc, out_steps, report)


def _without_oversized(
    procedures: pa.Table, steps: pa.Table, proc_index: np.ndarray
) -> tuple[pa.Array | pa.ChunkedArray, pa.Array | pa.ChunkedArray, dict[int, str]]:
    """The step titles and texts with every field longer than ingest's :data:`MAX_FIELD_CHARS` made null, and
    per procedure holding such a field (in a step, or its title) why it is dropped. The stored columns are
    not changed: only what the text rules read."""
    titles, texts = steps["title"], steps["text"]
    too_long: dict[int, str] = {}
    over_title = np.asarray(pc.fill_null(pc.greater(pc.utf8_length(procedures["title"]), MAX_FIELD_CHARS), False))
    for i in np.flatnonzero(over_title):
        too_long[int(i)] = f"title longer than {MAX_FIELD_CHARS:,} characters"
    columns = []
    for name, column in (("title", titles), ("text", texts)):
        over = pc.fill_null(pc.greater(pc.utf8_length(column), MAX_FIELD_CHARS), False)
        rows = np.flatnonzero(np.asarray(over))
        for row in rows:
            if proc_index[row] >= 0:
                too_long.setdefault(int(proc_index[row]), f"a step {name} longer than {MAX_FIELD_CHARS:,} characters")
        columns.append(pc.if_else(over, pa.scalar(None, pa.string()), column) if len(rows) else column)
    return columns[0], columns[1], too_long


def _same_content(old: pa.Table, new: pa.Table) -> bool:
    """Whether ``new`` holds the same values as ``old`` as read back from Parquet (which stores second
    timestamps as milliseconds and names list items ``element``)."""
    if old.column_names != new.column_names or old.num_rows != new.num_rows:
        return False
    try:
        return bool(new.cast(old.schema).equals(old))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return False


def clean_store(
    store: Store | str | Path,
    *,
    options: CleanOptions | None = None,
    progress: Progress = SILENT,
    workers: int | None = None,
    engine: Engine = LOCAL,
    **changes: Any,
) -> CleanReport:
    """Clean the store's procedures and steps in one atomic transaction; returns the report.

    ``changes`` override fields of ``options`` (e.g. ``clean_store(store, min_steps=5)``); ``workers`` is
    the number of processes for the text rules (see :func:`clean_tables`); with a Ray ``engine`` those rules
    run as Ray tasks instead, with the same result. Tables whose
    content would not change are not rewritten, so cleaning a clean store leaves its tables as they are.

    Raises:
        StoreNotFound: no store at the given path.
        BadInput: an unknown or invalid option.
    """
    options = (options or CleanOptions()).replace(**changes)
    if not isinstance(store, Store):
        store = Store.open(store)
    with contextlib.ExitStack() as stack:
        ray = None
        if engine.is_ray:
            from procbench.engine.raycluster import ray_runtime

            ray = stack.enter_context(ray_runtime(engine))
        txn = stack.enter_context(
            store.transaction(
                "clean", args=options.to_dict(), packages=("py3langid", "wordsegment", "symspellpy", "ftfy")
            )
        )
        # read under the write lock: a writer that commits meanwhile waits for us instead of being overwritten
        procedures, steps = store.table("procedures"), store.table("steps")
        result = clean_tables(procedures, steps, options, progress=progress, workers=workers, ray=ray)
        for name, old, new in (("procedures", procedures, result.procedures), ("steps", steps, result.steps)):
            if not store.has_table(name) and new.num_rows == 0:
                continue
            if not (store.has_table(name) and _same_content(old, new)):
                txn.write_table(name, new)
                result.report.written.append(name)
        txn.counts.update(result.report.counts())
    return result.report
