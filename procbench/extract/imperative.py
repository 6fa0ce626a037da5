"""Sentence-initial imperatives that the small parser mis-tags, found again by re-parsing with a subject.

A how-to step's headline is an imperative sentence whose first word is the action verb ("Open Facebook.",
"Tap iCloud.", "Place biscuits in freezer."). spaCy's small English parser often takes that word for a
noun, a proper noun or an adjective, above all before a title-case object: "Open" becomes an adjective of
"Facebook", "Place" the subject of "biscuits", and the step yields no tuple. The same words after a
subject are read as verbs, so a sentence whose first word heads no tuple is parsed again as "You open
Facebook." (then, failing that, "You should open Facebook."), and the re-parse's tuples replace the
sentence's when its first word is there a base-form verb (``VB``/``VBP``) that heads a tuple. "You" is a
personal subject, which paper 002's rules keep (``you add the salt``), and it is never an argument.

Paper 002's filtering of narrative sentences (App. C) stays: a first word that is a function word
("The", "If", "Once", "I") is no candidate; nor is one whose phrase is the subject of a verb that stays a
verb after the re-parse ("Water boils at 100 degrees", "Tap water is safe", "Work gloves protect your
hands"; a title-case "verb" in base form is a label: "Tap Turn Off Screen Time."), while a "verb" the
re-parse turns into a noun was the parser's mistake ("Place biscuits in freezer": *biscuits* is no
verb). Re-parsed tuples still pass :func:`extract_tuples`'s rules (no
subordinate clauses, purposes, discourse adverbs; ``VBD``/``VBG`` forms such as "Finished" or "Making" are
no base form and are not repaired).

Offsets: the re-parsed text is the sentence from its first word on, after the prefix; the first letter is
put in lower case (and an all-capitals ASCII sentence wholly), which keeps every offset, so spans map
back to the step text by a shift.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from procbench.extract.tuples import _SUBJECTS, ActionTuple, extract_tuples

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

__all__ = ["PREFIXES", "Candidate", "candidate_word", "repair_imperatives", "shift_tuple"]

#: Subjects put before a sentence to re-parse it, tried in order.
PREFIXES = ("You ", "You should ")
#: Tags of words that never start an imperative (determiners, pronouns, prepositions, conjunctions, ...).
_FUNCTION_TAGS = frozenset(
    ["DT", "PDT", "PRP", "PRP$", "IN", "CC", "WDT", "WP", "WP$", "WRB", "MD", "EX", "TO", "CD", "LS", "POS", "RB"]
)
#: Interjections and politeness words that start imperatives without being their verb.
_NOT_VERBS = frozenset(["please", "yes", "no", "ok", "okay", "oh", "wow", "hello", "hi", "hey", "well", "now", "then"])
#: Modifier relations walked up from the first word to the head of its phrase.
_IN_PHRASE = frozenset(["compound", "amod", "nmod", "det", "poss", "nummod", "appos"])
_VERB_TAGS = frozenset(["VB", "VBP"])


@dataclass(frozen=True)
class Candidate:
    """A sentence whose first word may be a mis-tagged imperative verb."""

    key: tuple[int, int]  # (text number, sentence number): what the caller keys its sentences by
    word_start: int  # the first word's character offset in the parsed text
    text: str  # the sentence from its first word on (first letter lower case)
    subject_verb: int | None  # offset of the verb whose subject the first word's phrase is, if any


def candidate_word(
    key: tuple[int, int], sentence: Span, word: Token | None, tuples: Sequence[ActionTuple]
) -> Candidate | None:
    """The re-parse candidate of ``sentence`` (first alphabetic token ``word``, its tuples ``tuples``) under
    ``key``, or None.

    A candidate heads no tuple of the sentence, is not a function word or an interjection, and starts the
    sentence (only punctuation or symbols before it).
    """
    if word is None or any(t.verb_span[0] == word.idx for t in tuples):
        return None
    if word.tag_ in _FUNCTION_TAGS or word.lower_ in _NOT_VERBS or not word.is_alpha:
        return None
    if any(not (t.is_punct or t.is_space or t.pos_ == "SYM") for t in sentence if t.i < word.i):
        return None
    head = word
    while head.dep_ in _IN_PHRASE and head.head.i != head.i:
        head = head.head
    # a base-form verb tagged as such is no subject, whatever its arc says ("Slide the Contacts switch"); nor
    # is a word before a title-case label read as a base-form verb ("Tap Turn Off Screen Time.")
    verb = head.head
    label = verb.i > word.i and verb.text.istitle() and verb.tag_ in _VERB_TAGS
    subject = head.dep_ in _SUBJECTS and verb.i != head.i and word.tag_ != "VB" and not label
    subject_verb = head.head.idx if subject else None
    end = sentence.end_char
    text = sentence.doc.text[word.idx : end]
    if text.isascii() and text.isupper():
        text = text.lower()
    elif word.text[:1].isascii():
        text = text[:1].lower() + text[1:]
    return Candidate(key, word.idx, text, subject_verb)


def shift_tuple(t: ActionTuple, offset: int) -> ActionTuple:
    """``t`` with every span moved by ``offset`` characters."""
    return dataclasses.replace(
        t,
        verb_span=(t.verb_span[0] + offset, t.verb_span[1] + offset),
        argument_spans=tuple((a + offset, b + offset) for a, b in t.argument_spans),
    )


def _accept(doc: Doc, prefix: str, candidate: Candidate) -> list[ActionTuple] | None:
    """The re-parse's tuples (offsets into the original text) when the first word is a base-form verb
    heading a tuple and the original subject's verb did not stay a verb; else None."""
    start = len(prefix)
    word = next((t for t in doc if t.idx == start), None)
    if word is None or word.tag_ not in _VERB_TAGS or word.pos_ not in {"VERB", "AUX"}:
        return None
    if candidate.subject_verb is not None:
        at = start + candidate.subject_verb - candidate.word_start
        verb = next((t for t in doc if t.idx == at), None)
        if verb is not None and verb.pos_ in {"VERB", "AUX"}:
            return None  # a real subject and its verb: narration, not a mis-tag
    sentence = next(s for s in doc.sents if s.start <= word.i < s.end)
    tuples = extract_tuples(sentence)
    if not any(t.verb_span[0] == start for t in tuples):
        return None
    offset = candidate.word_start - start
    # tuples of the prefix itself cannot exist ("you" is a subject); every span lies after it
    return [shift_tuple(t, offset) for t in tuples if t.verb_span[0] >= start]


def repair_imperatives(
    nlp: Language, candidates: Iterable[Candidate], *, batch_size: int = 256
) -> dict[tuple[int, int], list[ActionTuple]]:
    """Re-parse ``candidates`` with each of :data:`PREFIXES` in turn; per candidate key, the tuples of the
    first re-parse that reads the first word as an imperative verb (candidates none reads so are left out)."""
    pending = list(candidates)
    repaired: dict[tuple[int, int], list[ActionTuple]] = {}
    for prefix in PREFIXES:
        if not pending:
            break
        docs = nlp.pipe((prefix + c.text for c in pending), batch_size=batch_size)
        left = []
        for candidate, doc in zip(pending, docs, strict=True):
            tuples = _accept(doc, prefix, candidate)
            if tuples is None:
                left.append(candidate)
            else:
                repaired[candidate.key] = tuples
        pending = left
    return repaired
