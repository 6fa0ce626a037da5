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


@dataclass
class _Layout:
    """Where each step sits: the row of its procedure (-1 for an orphan) and the steps in (procedure, index)
    order with orphans left out, which is what language, keywords and duplicates read."""

    n_proc: int
    proc_index: np.ndarray
    take: pa.Array
    sorted_proc: np.ndarray
    offsets: pa.Array

    @classmethod
    def of(cls, procedures: pa.Table, steps: pa.Table) -> _Layout:
        """The layout of ``steps`` under ``procedures``."""
        n_proc = procedures.num_rows
        proc_index = np.asarray(
            pc.fill_null(pc.index_in(steps["procedure_id"], value_set=procedures["id"]), -1), dtype=np.int64
        )
        order = np.lexsort((np.asarray(steps["index"], dtype=np.int64), proc_index))
        order = order[proc_index[order] >= 0]
        sorted_proc = proc_index[order]
        offsets = np.zeros(n_proc + 1, dtype=np.int32)
        np.cumsum(np.bincount(sorted_proc, minlength=n_proc), out=offsets[1:])
        return cls(n_proc, proc_index, pa.array(order), sorted_proc, pa.array(offsets))

    def per_procedure_text(self, column: pa.Array | pa.ChunkedArray) -> list[str]:
        """Per procedure, the values of a step column joined by spaces in step order."""
        values = pc.fill_null(column.take(self.take), "")
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return pc.binary_join(pa.ListArray.from_arrays(self.offsets, values), " ").to_pylist()

    def per_procedure(self, values: np.ndarray) -> np.ndarray:
        """Per procedure, the sum of a per-step number."""
        return _per_procedure(values, self.proc_index, self.n_proc)


@dataclass
class _Languages:
    """What language detection found and decided per procedure."""

    detected: list[tuple[str | None, float]]
    declared: list[str | None]
    fill: list[str | None]
    reasons: list[str | None]
    #: per procedure, plus a last ``True`` that orphan steps index: whether fused words are split
    english: np.ndarray


@dataclass
class _Texts:
    """The cleaned step columns and procedure titles, and the languages decided on the way."""

    title_clean: pa.Array
    text_clean: pa.Array
    raw_proc_titles: list[str]
    proc_titles: list[str]
    languages: _Languages


@dataclass
class _Measures:
    """Vocabulary counts before and after cleaning, and the per-procedure numbers the filters read."""

    before: VocabCounts
    after: VocabCounts
    words: np.ndarray
    content_steps: np.ndarray
    step_rows: np.ndarray


class _Verdicts:
    """Per procedure, the first filter that drops it and why (a later rule does not override an earlier one)."""

    def __init__(self, n_proc: int) -> None:
        self.reasons: list[str | None] = [None] * n_proc
        self.rule_of: list[str | None] = [None] * n_proc

    def apply(self, rule: str, found: Sequence[str | None]) -> None:
        """Drop, for ``rule``, every procedure ``found`` gives a reason for that is not dropped yet."""
        for i, why in enumerate(found):
            if why is not None and self.reasons[i] is None:
                self.reasons[i], self.rule_of[i] = why, rule

    def kept(self) -> list[bool]:
        """Per procedure, whether no rule dropped it."""
        return [r is None for r in self.reasons]


def _clean_with(
    cleaner: TextCleaner,
    procedures: pa.Table,
    steps: pa.Table,
    options: CleanOptions,
    progress: Progress,
    started: float,
) -> CleanResult:
    """The stages of :func:`clean_tables` in order: text rules (with language detection between their two
    phases), measuring, filters, output tables, report."""
    layout = _Layout.of(procedures, steps)
    # -- fields over ingest's size cap: the procedure is dropped and its texts never reach the rules, so a
    # store written before the caps (one 200 MB step) costs a small multiple of its input, not 20 times it
    raw_titles, raw_texts, too_long = _without_oversized(procedures, steps, layout.proc_index)
    # The raw vocabulary counts run in a thread meanwhile: pyarrow releases the GIL while it tokenises.
    cleaner.start_workers(steps.num_rows)
    counting = ThreadPoolExecutor(1)
    raw_counts = counting.submit(lambda: (count_in_vocabulary(raw_titles), count_in_vocabulary(raw_texts)))
    texts = _clean_texts(cleaner, procedures, steps, layout, raw_titles, raw_texts, too_long, options, progress)
    progress.start("clean: measuring", total=None)
    before_titles, before_texts = raw_counts.result()
    counting.shutdown()
    measures = _measure(steps, layout, texts, (raw_titles, raw_texts), (before_titles, before_texts))
    verdicts, duplicates = _filter(procedures, layout, texts, measures, too_long, options, progress)
    out_proc, out_steps = _output_tables(procedures, steps, texts, verdicts)
    report = _report(cleaner, procedures, steps, layout, texts, measures, verdicts, duplicates, options)
    report.seconds = time.perf_counter() - started
    return CleanResult(out_proc, out_steps, report)


def _clean_texts(
    cleaner: TextCleaner,
    procedures: pa.Table,
    steps: pa.Table,
    layout: _Layout,
    raw_titles: pa.Array | pa.ChunkedArray,
    raw_texts: pa.Array | pa.ChunkedArray,
    too_long: dict[int, str],
    options: CleanOptions,
    progress: Progress,
) -> _Texts:
    """The text rules on every step title and text and on the procedure titles: phase 1 (markup, unicode,
    whitespace), then language detection, then phase 2 (fused words, only in English text; step titles)."""
    step_pids: list[str] = steps["procedure_id"].to_pylist()
    step_idx: list[int] = steps["index"].to_pylist()
    norm_titles = cleaner.normalize_column(raw_titles.to_pylist(), step_pids, step_idx, title=True, progress=progress)
    norm_texts = cleaner.normalize_column(raw_texts.to_pylist(), step_pids, step_idx, title=False, progress=progress)
    raw_proc_titles: list[str] = ["" if i in too_long else t for i, t in enumerate(procedures["title"].to_pylist())]
    languages = _decide_languages(procedures, layout, raw_proc_titles, norm_texts, options, progress)
    english = languages.english
    split_rows = english[np.where(layout.proc_index >= 0, layout.proc_index, layout.n_proc)].tolist()
    title_clean = pa.array(
        cleaner.finish_column(norm_titles, step_pids, step_idx, title=True, split=split_rows, progress=progress),
        pa.string(),
    )
    text_clean = pa.array(
        cleaner.finish_column(norm_texts, step_pids, step_idx, title=False, split=split_rows, progress=progress),
        pa.string(),
    )
    proc_titles = [cleaner.clean(t, split=bool(english[i])) or "" for i, t in enumerate(raw_proc_titles)]
    return _Texts(title_clean, text_clean, raw_proc_titles, proc_titles, languages)


def _decide_languages(
    procedures: pa.Table,
    layout: _Layout,
    raw_proc_titles: list[str],
    norm_texts: list[str | None],
    options: CleanOptions,
    progress: Progress,
) -> _Languages:
    """Detect each procedure's language from its title and normalised step texts (before fused words are
    split, which happens only in English text) and decide it against the declared one."""
    joined_norm = layout.per_procedure_text(pa.array(norm_texts, pa.string()))
    to_detect = [
        f"{normalize_text(raw_proc_titles[i], ascii_only=options.ascii_only)}. {joined_norm[i][:MAX_CHARS]}"
        for i in range(layout.n_proc)
    ]
    detected = detect_languages([t if _LETTER.search(t) else None for t in to_detect], progress=progress)
    declared: list[str | None] = procedures["language"].to_pylist()
    fill, reasons, decided = language_decisions(
        declared, detected, allowed=options.languages, min_confidence=options.min_language_confidence
    )
    english = np.array([lang in (None, "en") for lang in decided] + [True], dtype=bool)
    return _Languages(detected, declared, fill, reasons, english)


def _measure(
    steps: pa.Table,
    layout: _Layout,
    texts: _Texts,
    raw: tuple[pa.Array | pa.ChunkedArray, pa.Array | pa.ChunkedArray],
    counted: tuple[VocabCounts, VocabCounts],
) -> _Measures:
    """Vocabulary counts before (``counted`` on the ``raw`` titles and texts) and after cleaning, and per
    procedure its words, its steps with any content and all its step rows."""
    (raw_titles, raw_texts), (before_titles, before_texts) = raw, counted
    title_clean, text_clean = texts.title_clean, texts.text_clean
    before = _sum_counts(before_titles, before_texts)
    after = _sum_counts(
        _recount(before_titles, raw_titles, title_clean), _recount(before_texts, raw_texts, text_clean)
    )
    has_content = pc.or_(
        pc.or_(pc.greater(pc.utf8_length(pc.fill_null(text_clean, "")), 0), pc.is_valid(title_clean)),
        pc.greater(pc.fill_null(pc.list_value_length(steps["image_ids"]), 0), 0),
    )
    return _Measures(
        before,
        after,
        words=layout.per_procedure(after.tokens),
        content_steps=layout.per_procedure(np.asarray(has_content, dtype=np.int64)),
        step_rows=layout.per_procedure(np.ones(steps.num_rows, dtype=np.int64)),
    )


def _filter(
    procedures: pa.Table,
    layout: _Layout,
    texts: _Texts,
    measures: _Measures,
    too_long: dict[int, str],
    options: CleanOptions,
    progress: Progress,
) -> tuple[_Verdicts, dict[str, int]]:
    """The procedure filters in order (the first to drop a procedure names it); returns the verdicts and the
    number of exact and near duplicates dropped."""
    n_proc = layout.n_proc
    ids: list[str] = procedures["id"].to_pylist()
    joined = (
        layout.per_procedure_text(texts.text_clean) if options.keywords else [""] * n_proc
    )  # only keywords read it
    verdicts = _Verdicts(n_proc)
    verdicts.apply("too_long", [too_long.get(i) for i in range(n_proc)])
    verdicts.apply("no_text", no_text(measures.words, min_words=options.min_words))
    verdicts.apply("language", texts.languages.reasons)
    verdicts.apply(
        "step_count", step_count(measures.content_steps, min_steps=options.min_steps, max_steps=options.max_steps)
    )
    verdicts.apply(
        "off_domain", off_domain(ids, texts.proc_titles, procedures["category"].to_pylist(), joined, options)
    )
    duplicates = {"exact": 0, "near": 0}
    if options.dedupe:
        progress.start("clean: duplicates", total=None)
        verdicts.apply("duplicate", _duplicates(ids, layout, texts, verdicts, duplicates, options))
    return verdicts, duplicates


def _duplicates(
    ids: list[str],
    layout: _Layout,
    texts: _Texts,
    verdicts: _Verdicts,
    counts: dict[str, int],
    options: CleanOptions,
) -> list[str | None]:
    """Per procedure, why it duplicates an earlier one still kept (or None); adds to ``counts`` the exact and
    near duplicates found."""
    both = pc.binary_join_element_wise(
        pc.fill_null(texts.title_clean.take(layout.take), ""),
        pc.fill_null(texts.text_clean.take(layout.take), ""),
        " ",
    )
    matches = find_duplicates(
        both,
        layout.sorted_proc,
        texts.proc_titles,
        np.array(verdicts.kept(), dtype=bool),
        threshold=options.near_duplicate_threshold,
        title_threshold=options.title_similarity,
        strong=options.strong_duplicate_threshold,
    )
    found: list[str | None] = [None] * layout.n_proc
    for m in matches:
        found[m.index] = (
            f"{'exact' if m.exact else 'near'} duplicate of {ids[m.kept]} (word-bigram Jaccard {m.similarity:.2f})"
        )
        counts["exact" if m.exact else "near"] += 1
    return found


def _output_tables(
    procedures: pa.Table, steps: pa.Table, texts: _Texts, verdicts: _Verdicts
) -> tuple[pa.Table, pa.Table]:
    """The procedures with ``keep``, ``drop_reason`` and the filled-in ``language``, and the steps with the
    clean columns (replacing those of an earlier run)."""
    keep = pa.array(verdicts.kept(), pa.bool_())
    drop_reason = pa.array(verdicts.rule_of, pa.string())
    language = pc.coalesce(procedures["language"], pa.array(texts.languages.fill, pa.string()))
    out_proc = procedures.drop_columns([c for c in PROCEDURE_COLUMNS if c in procedures.column_names])
    out_proc = out_proc.set_column(out_proc.schema.get_field_index("language"), "language", language)
    out_proc = conform(out_proc.append_column("keep", keep).append_column("drop_reason", drop_reason), PROCEDURES)
    out_steps = steps.drop_columns([c for c in STEP_COLUMNS if c in steps.column_names])
    out_steps = conform(
        out_steps.append_column("title_clean", texts.title_clean).append_column("text_clean", texts.text_clean),
        STEPS,
    )
    return out_proc, out_steps


def _report(
    cleaner: TextCleaner,
    procedures: pa.Table,
    steps: pa.Table,
    layout: _Layout,
    texts: _Texts,
    measures: _Measures,
    verdicts: _Verdicts,
    duplicates: dict[str, int],
    options: CleanOptions,
) -> CleanReport:
    """The report of what the text rules changed, what each filter dropped and what is kept."""
    before, after, languages = measures.before, measures.after, texts.languages
    kept_mask = np.array(verdicts.kept(), dtype=bool)
    kept_steps_mask = (layout.proc_index >= 0) & kept_mask[np.maximum(layout.proc_index, 0)]
    kept_tokens = int(after.tokens[kept_steps_mask].sum())
    text_lengths = np.asarray(pc.fill_null(pc.utf8_length(texts.text_clean), 0), dtype=np.int64)
    return CleanReport(
        procedures=layout.n_proc,
        steps=steps.num_rows,
        kept=int(kept_mask.sum()),
        kept_steps=int(kept_steps_mask.sum()),
        kept_steps_without_text=int((kept_steps_mask & (text_lengths == 0)).sum()),
        rules=cleaner.rule_stats() + _filter_stats(procedures, texts, measures, verdicts, options),
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
                    lang for lang, p in languages.detected if lang is not None and p >= options.min_language_confidence
                ).items(),
                key=lambda kv: (-kv[1], kv[0]),
            )
        ),
        language_filled=sum(
            1 for i, f in enumerate(languages.fill) if f is not None and languages.declared[i] is None
        ),
        duplicates=duplicates,
        options=options.to_dict(),
    )


def _filter_stats(
    procedures: pa.Table, texts: _Texts, measures: _Measures, verdicts: _Verdicts, options: CleanOptions
) -> list[RuleStats]:
    """Per filter rule: the procedures, steps and word tokens it dropped, with examples (``duplicate`` only
    when deduplicating, ``too_long`` only when it dropped something)."""
    ids: list[str] = procedures["id"].to_pylist()
    filters = []
    for rule, description in FILTER_RULES.items():
        if rule == "duplicate" and not options.dedupe:
            continue
        members = [i for i in range(len(ids)) if verdicts.rule_of[i] == rule]
        if rule == "too_long" and not members:  # listed only when it dropped something
            continue
        stats = RuleStats(
            rule,
            "filter",
            description,
            procedures=len(members),
            steps=int(measures.step_rows[members].sum()) if members else 0,
            tokens=int(measures.words[members].sum()) if members else 0,
        )
        stats.examples = [
            Example(ids[i], "procedure", texts.raw_proc_titles[i], verdicts.reasons[i])
            for i in members[: options.examples]
        ]
        filters.append(stats)
    return filters


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
                "clean",
                args=options.to_dict(),
                packages=("py3langid", "wordsegment", "symspellpy", "wordfreq", "ftfy"),
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
