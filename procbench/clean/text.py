"""The text side of ``clean``: step titles and texts through every text rule, with per-rule accounting.

Rules run in the order of :data:`procbench.clean.report.TEXT_RULES`. A column is cleaned in two phases:
first markup, unicode, ASCII and whitespace (what language detection reads), then fused words,
step-title indicators (titles) and leading step numbers (texts). Titles repeat every rule until they are
stable; texts need not (see :meth:`TextCleaner.finish_column`), so cleaning clean text changes nothing.

Large columns are cleaned in chunks by worker processes (``workers``); each chunk returns its changed
values and, per changed row, which rules changed it and how many tokens. The accounting is then merged
in row order, so the report and the tables are identical whatever the number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from procbench.clean.normalize import fix_unicode, normalize_whitespace, strip_markup, to_ascii
from procbench.clean.numbering import strip_step_numbering
from procbench.clean.report import TEXT_RULES, Example, RuleStats, changed_tokens, snippet_pair
from procbench.clean.segment import Segmenter
from procbench.clean.titles import strip_step_indicator
from procbench.progress import SILENT, Progress

__all__ = ["TextCleaner", "default_workers"]

_TOKEN = re.compile(r"[^\W_]+")
_PASSES = 3
#: Rules of the second phase (after language detection).
_SECOND_PHASE = ("fused_words", "step_titles", "step_numbers")
_CHUNK = 4000
#: Columns shorter than this are cleaned in the calling process (starting workers costs more).
PARALLEL_MIN_ROWS = 20_000

Chain = list[tuple[str, Callable[[str], str]]]
#: Per changed row of a chunk: (row, cleaned value, [(rule, tokens changed), ...] in order of change).
Changed = list[tuple[int, str | None, list[tuple[str, int]]]]


def default_workers() -> int:
    """Worker processes used by default: the usable CPUs, at most 4 (1 where fork is unavailable)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


@dataclass(frozen=True)
class _Task:
    """What one chunk of a column needs: which chain (phase, title, split) and how many passes."""

    phase: str  # "normalize" or "finish"
    title: bool
    split: bool
    passes: int


class TextCleaner:
    """Clean step titles and texts; counts what each rule touched into :class:`RuleStats`.

    Args:
        ascii_only: also fold/remove non-ASCII characters.
        split_fused: split fused words (needs the word lists; see :mod:`procbench.clean.vocab`).
        examples: before/after examples to keep per rule.
        workers: processes for large columns (1: none; results are the same for any number).
        ray: a connected ``ray`` module: every column's chunks (consecutive step rows, so shards of
            procedures) are cleaned as Ray tasks instead (the same results, in the same order).
    """

    def __init__(
        self,
        *,
        ascii_only: bool = False,
        split_fused: bool = True,
        examples: int = 3,
        segmenter: Segmenter | None = None,
        workers: int = 1,
        ray: Any = None,
    ) -> None:
        self.ascii_only = ascii_only
        self.split_fused = split_fused
        self.examples = examples
        self.workers = max(1, workers)
        self.ray = ray
        self.segmenter = (segmenter or Segmenter()) if split_fused else None
        self.stats = {name: RuleStats(name, "text", desc) for name, desc in TEXT_RULES.items()}
        self._steps: dict[str, set[tuple[str, int]]] = {name: set() for name in TEXT_RULES}
        self._pool: ProcessPoolExecutor | None = None

    # -- chains ----------------------------------------------------------------------------------------
    def _chain(self, title: bool, split: bool = True) -> Chain:
        chain: Chain = [("html", strip_markup), ("unicode", fix_unicode)]
        if self.ascii_only:
            chain.append(("non_ascii", to_ascii))
        chain.append(("whitespace", lambda s: normalize_whitespace(s, single_line=title)))
        if self.segmenter is not None and split:
            chain.append(("fused_words", self.segmenter.split_text))
        if title:
            chain.append(("step_titles", strip_step_indicator))
        else:
            chain.append(("step_numbers", strip_step_numbering))
        return chain

    def _task_chain(self, task: _Task) -> Chain:
        if task.phase == "normalize":
            return [(n, r) for n, r in self._chain(task.title, split=False) if n not in _SECOND_PHASE]
        if task.title:
            return self._chain(True, task.split)
        # Texts only need the splitter and the step numbers in the second phase: the splitter's output holds
        # only dictionary words, numbers and protected spans, which no rule changes, and removing a leading
        # number (or turning a sub-list's markers into sentence breaks) leaves nothing for the others.
        return [(n, r) for n, r in self._chain(False, task.split) if n in _SECOND_PHASE]

    # -- one text ----------------------------------------------------------------------------------------
    def clean(self, text: str | None, *, title: bool = False, split: bool = True) -> str | None:
        """The clean form of one text (no accounting). Titles that end up empty become None.

        ``split=False`` skips fused-word splitting (for text that is not English).
        """
        return _run(text, self._chain(title, split), title, _PASSES)[0]

    # -- columns -----------------------------------------------------------------------------------------
    def normalize_column(
        self,
        values: Sequence[str | None],
        procedure_ids: Sequence[str],
        indexes: Sequence[int],
        *,
        title: bool,
        progress: Progress = SILENT,
    ) -> list[str | None]:
        """First phase: markup, unicode, ASCII and whitespace rules only (what language detection reads).

        ``procedure_ids``/``indexes`` name each step for the accounting.
        """
        task = _Task("normalize", title, False, _PASSES)
        return self._column(values, procedure_ids, indexes, task, progress)

    def finish_column(
        self,
        normalized: Sequence[str | None],
        procedure_ids: Sequence[str],
        indexes: Sequence[int],
        *,
        title: bool,
        split: Sequence[bool] | None = None,
        progress: Progress = SILENT,
    ) -> list[str | None]:
        """Second phase on :meth:`normalize_column` output: fused words (where ``split`` says so, default
        everywhere) and step titles; titles repeat every rule until they are stable (removing an indicator
        can make the next word start the title)."""
        passes = _PASSES if title else 1
        if split is None or all(split):
            return self._column(normalized, procedure_ids, indexes, _Task("finish", title, True, passes), progress)
        result = list(normalized)
        for flag in (True, False):
            rows = [i for i, s in enumerate(split) if bool(s) is flag]
            part = self._column(
                [normalized[i] for i in rows],
                [procedure_ids[i] for i in rows],
                [indexes[i] for i in rows],
                _Task("finish", title, flag, passes),
                progress,
            )
            for i, value in zip(rows, part, strict=True):
                result[i] = value
        return result

    def clean_column(
        self,
        values: Sequence[str | None],
        procedure_ids: Sequence[str],
        indexes: Sequence[int],
        *,
        title: bool,
        split: Sequence[bool] | None = None,
        progress: Progress = SILENT,
    ) -> list[str | None]:
        """Clean every value of a column of steps (both phases), accounting each change to its rule and step."""
        normalized = self.normalize_column(values, procedure_ids, indexes, title=title, progress=progress)
        return self.finish_column(normalized, procedure_ids, indexes, title=title, split=split, progress=progress)

    def _column(
        self,
        values: Sequence[str | None],
        procedure_ids: Sequence[str],
        indexes: Sequence[int],
        task: _Task,
        progress: Progress,
    ) -> list[str | None]:
        what = "normalising" if task.phase == "normalize" else "splitting"
        field = "step title" if task.title else "step text"
        progress.start(f"clean: {what} {field}s", total=len(values))
        out = list(values)
        chunks = [(start, list(values[start : start + _CHUNK])) for start in range(0, len(values), _CHUNK)]
        config = (self.ascii_only, self.split_fused, self.segmenter.settings if self.segmenter else None)
        if self.ray is not None and chunks:
            from procbench.engine.raycluster import ray_map

            results: Iterable[Changed] = ray_map(self.ray, _work, [(config, task, chunk) for _, chunk in chunks])
        elif self.workers > 1 and len(values) >= PARALLEL_MIN_ROWS:
            results = self._executor().map(_work, [(config, task, chunk) for _, chunk in chunks])
        else:
            chain = self._task_chain(task)
            results = (_process(chunk, chain, task) for _, chunk in chunks)
        for (start, chunk), changed in zip(chunks, results, strict=True):
            for row, value, rules in changed:
                i = start + row
                out[i] = value
                self._account((procedure_ids[i], indexes[i]), field, rules, chunk[row], task)
            progress.advance(len(chunk))
        return out

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # fork: workers start with the word lists and language model already loaded
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
        return self._pool

    def start_workers(self, rows: int) -> None:
        """Start the worker processes now if columns of ``rows`` values will use them (forking before the
        caller starts threads of its own)."""
        if self.ray is None and self.workers > 1 and rows >= PARALLEL_MIN_ROWS:
            list(self._executor().map(_wait, [0.05] * self.workers))

    def close(self) -> None:
        """Stop the worker processes (if any were started)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> TextCleaner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- accounting -----------------------------------------------------------------------------------------
    def _account(
        self, step: tuple[str, int], field: str, rules: list[tuple[str, int]], value: str | None, task: _Task
    ) -> None:
        seen: set[str] = set()
        for name, tokens in rules:
            stats = self.stats[name]
            stats.tokens += tokens
            if name in seen:
                continue
            seen.add(name)
            steps = self._steps[name]
            if step in steps:
                continue
            steps.add(step)
            if len(stats.examples) < self.examples:
                # Examples are rare: redo this one text here to see the rule's own before and after.
                changes = _run(value, self._task_chain(task), task.title, task.passes)[1]
                before, after = next((b, a) for n, b, a in changes if n == name)
                b, a = snippet_pair(before, after)
                stats.examples.append(Example(step[0], f"{field} {step[1]}", b, a))

    def rule_stats(self) -> list[RuleStats]:
        """Stats of the rules that ran (``non_ascii`` only with ``ascii_only``, ``fused_words`` when splitting)."""
        active = {"html", "unicode", "whitespace", "step_titles", "step_numbers"}
        if self.ascii_only:
            active.add("non_ascii")
        if self.segmenter is not None:
            active.add("fused_words")
        out = []
        for name, stats in self.stats.items():
            if name in active:
                stats.steps = len(self._steps[name])
                stats.procedures = len({pid for pid, _ in self._steps[name]})
                out.append(stats)
        return out


def _run(text: str | None, chain: Chain, title: bool, passes: int) -> tuple[str | None, list[tuple[str, str, str]]]:
    """Apply ``chain`` up to ``passes`` times (until stable); the result and every (rule, before, after)."""
    if text is None:
        return None, []
    changes: list[tuple[str, str, str]] = []
    for _ in range(passes):
        start = text
        for name, rule in chain:
            out = rule(text)
            if out != text:
                changes.append((name, text, out))
                text = out
        if text == start:
            break
    text = text.strip()
    if title and not text:
        return None, changes
    return text, changes


def _process(values: list[str | None], chain: Chain, task: _Task) -> Changed:
    """Clean a chunk: the changed rows, each with its rules and the tokens each rule changed."""
    changed: Changed = []
    for row, value in enumerate(values):
        cleaned, changes = _run(value, chain, task.title, task.passes)
        if changes or cleaned != value:
            rules = [(n, changed_tokens(_TOKEN.findall(b), _TOKEN.findall(a))) for n, b, a in changes]
            changed.append((row, cleaned, rules))
    return changed


_WORKER: dict[Any, TextCleaner] = {}


def _wait(seconds: float) -> None:
    time.sleep(seconds)


def _work(args: tuple[Any, _Task, list[str | None]]) -> Changed:
    """Worker-process entry point: clean one chunk with a cleaner built once per process and config."""
    config, task, values = args
    cleaner = _WORKER.get(config)
    if cleaner is None:
        ascii_only, split_fused, settings = config
        segmenter = Segmenter(settings=settings) if split_fused else None
        cleaner = _WORKER[config] = TextCleaner(ascii_only=ascii_only, split_fused=split_fused, segmenter=segmenter)
    return _process(values, cleaner._task_chain(task), task)
