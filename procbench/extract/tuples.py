"""Verb–argument tuples from a dependency parse (paper 002 §2 and §5.1).

A tuple is ``(verb, arg1, ..., argk)``: the action verb with its phrasal particles (``cut off``) and its
arguments, the objects and prepositional phrases of the verb. Paper 002 filtered the argument types of an
SRL parse that do not describe the procedure (App. C); on a dependency parse the same roles are:

=========================  ===============================================  =======================
App. C role                 dependency relations dropped here               example
=========================  ===============================================  =======================
ARG0 (subject)              nsubj, nsubjpass, csubj, csubjpass, expl         *you* add the salt
AM-MOD (modal)              aux, auxpass                                     you *can* add
AM-NEG (negation)           neg                                              do *not* stir
AM-CAU (cause)              advcl / prep introduced by because, since, as    *because I love it*
AM-DIS (discourse)          advmod in :data:`DISCOURSE`, discourse, intj, cc *then* fry the bacon
AM-REC (reciprocal)         "each other", "one another"                      rub them against *each other*
AM-PNC / PRP (purpose)      advcl with infinitival "to" / "in order to",     fry it *to make it crispy*
                            prep "for" + gerund
AM-EXT (extent)             advmod in :data:`EXTENT`                         stir *very much*
R-ARG* (references)         relative clauses are inside their noun phrase
=========================  ===============================================  =======================

Verbs: a token tagged as a verb that heads a clause (root, conjunct, open complement, dependent clause)
and has no subject or a personal one (*you*/*I*/*we* add, as in narration), so "the water boils" is not
an action. Clauses that are themselves actions (``heat the pan, then fry the bacon``) give their own tuple
and are not arguments. Arguments are contiguous spans of the sentence: the dependent's subtree, leading
articles and possessives trimmed (``the crusts of the bread`` -> ``crusts of the bread``), coordinated
noun phrases split into one argument each (``onions, celery and butter`` -> three).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

__all__ = ["DISCOURSE", "EXTENT", "ActionTuple", "extract_tuples", "first_word"]

_SUBJECTS = {"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"}
_PERSONAL = {"you", "i", "we", "u", "ya"}
_CLAUSES = {"ROOT", "conj", "xcomp", "dep", "advcl", "ccomp", "parataxis"}
#: Dependents never kept as arguments (subjects, modals, negation, markers, punctuation, the particle).
_DROP = {
    *_SUBJECTS,
    "aux",
    "auxpass",
    "neg",
    "mark",
    "cc",
    "punct",
    "prt",
    "discourse",
    "intj",
    "meta",
    "preconj",
    "predet",
    "case",
    "dep",
}
#: Clausal dependents: an argument only when not itself a verb (an adjective "make it *flat*").
_CLAUSAL = {"conj", "xcomp", "ccomp", "parataxis", "advcl", "relcl", "acl", "csubj"}
#: Discourse adverbs (App. C AM-DIS) never kept as arguments.
DISCOURSE = frozenset(
    [
        "then",
        "also",
        "now",
        "next",
        "first",
        "firstly",
        "second",
        "secondly",
        "third",
        "finally",
        "lastly",
        "however",
        "so",
        "thus",
        "therefore",
        "just",
        "simply",
        "basically",
        "actually",
        "really",
        "anyway",
        "additionally",
        "afterwards",
        "afterward",
        "meanwhile",
        "besides",
        "instead",
        "otherwise",
        "still",
        "though",
        "too",
        "well",
    ]
)
#: Extent adverbs (App. C AM-EXT).
EXTENT = frozenset(
    [
        "very",
        "much",
        "more",
        "less",
        "most",
        "least",
        "completely",
        "entirely",
        "totally",
        "fully",
        "partly",
        "slightly",
    ]
)
_CAUSE = {"because", "since", "as", "cause", "due"}
_RECIPROCAL = {"each other", "one another"}
_TRIM = {"det", "poss", "predet"}
_CLOSING = {")": "(", "]": "[", "}": "{", '"': '"', "'": "'"}


@dataclass(frozen=True)
class ActionTuple:
    """One verb–argument tuple; spans are character offsets ``[start, end)`` into the parsed text."""

    verb: str  # lemma, lower case, with its particles: "cut off"
    lemma: str  # the verb's lemma alone (what the lexicon is checked against)
    arguments: tuple[str, ...]
    verb_span: tuple[int, int]
    argument_spans: tuple[tuple[int, int], ...]

    def as_list(self) -> list[str]:
        """``[verb, arg1, ..., argk]``, the tuple as paper 002 writes it."""
        return [self.verb, *self.arguments]


def first_word(sentence: Span) -> Token | None:
    """The sentence's first alphabetic token (where §4.1 looks for the action verb)."""
    for token in sentence:
        if token.is_alpha:
            return token
    return None


def _is_verb(token: Token) -> bool:
    return token.pos_ == "VERB" or (token.pos_ == "AUX" and token.dep_ == "ROOT" and token.tag_ == "VB")


def _purpose_or_cause(token: Token) -> bool:
    """A clause or phrase giving a purpose or cause (App. C AM-PNC/PRP, AM-CAU)."""
    children = list(token.children)
    if token.dep_ == "advcl":
        marks = {c.lower_ for c in children if c.dep_ in {"mark", "aux", "advmod"}}
        if marks & (_CAUSE | {"to", "so", "order"}):
            return True
    if token.dep_ == "prep":
        if token.lower_ in {"because", "due"}:
            return True
        if token.lower_ == "for" and any(c.tag_ == "VBG" for c in children if c.dep_ in {"pcomp", "pobj"}):
            return True
        if token.lower_ == "in" and any(c.lower_ == "order" for c in children):
            return True
    return False


def _is_predicate(token: Token) -> bool:
    """Whether ``token`` heads an action clause: a verb with no subject or a personal one."""
    verb = _is_verb(token) and token.dep_ in _CLAUSES
    # a sentence-initial root the tagger took for a noun ("Season the chicken") still heads the clause
    initial = (
        token.dep_ == "ROOT"
        and token.i == token.sent.start
        and token.tag_ in {"NN", "NNP", "VB", "VBP"}
        and any(c.dep_ == "dobj" for c in token.children)
    )
    if not (verb or initial):
        return False
    if token.tag_ in {"VBD", "VBN", "VBZ", "VBG"} and token.dep_ != "ROOT":
        return False
    if token.tag_ in {"VBD", "VBZ"}:
        return False
    if (
        token.tag_ == "VBN"
        and token.lower_ != token.lemma_.lower()
        and not any(c.dep_ == "aux" for c in token.children)
    ):
        return False  # a participle fragment ("Finished.", "Done.") is no imperative; "Cut", "Put" may be
    if any(c.dep_ == "mark" for c in token.children) or (
        token.dep_ == "advcl" and any(c.lower_ == "to" for c in token.children)
    ):
        return False  # subordinate clauses (if you like, until it boils, to make it crispy) are no actions
    if token.dep_ == "conj" and not _is_predicate(token.head):
        return False
    if token.dep_ in {"xcomp", "dep", "advcl", "ccomp", "parataxis"} and token.tag_ not in {"VB", "VBP"}:
        return False
    if token.dep_ in {"xcomp", "advcl"} and not _governor_acts(token):
        return False  # "the caller will be able to *reach* you", "updates take minutes to *install*"
    subjects = [c for c in token.children if c.dep_ in _SUBJECTS]
    if token.dep_ == "conj" and not subjects:
        subjects = [c for c in token.head.children if c.dep_ in _SUBJECTS]
    return all(s.lower_ in _PERSONAL for s in subjects)


def _governor_acts(token: Token) -> bool:
    """Whether the nearest verb above ``token`` has no subject or a personal one (an open complement shares
    its governor's subject: "you need to add", not "the caller will be able to reach")."""
    for ancestor in token.ancestors:
        if _is_verb(ancestor) or ancestor.pos_ == "AUX":
            subjects = [c for c in ancestor.children if c.dep_ in _SUBJECTS]
            return all(s.lower_ in _PERSONAL for s in subjects)
    return True


def _keep_argument(child: Token) -> bool:
    if child.dep_ in _DROP:
        return False
    if child.dep_ in _CLAUSAL and (_is_verb(child) or child.dep_ in {"conj", "relcl", "acl", "parataxis"}):
        return False
    if child.dep_ == "advmod" and (child.lower_ in DISCOURSE or child.lower_ in EXTENT):
        return False
    if child.dep_ == "npadvmod" and " ".join(t.lower_ for t in child.subtree) in _RECIPROCAL:
        return False
    return not _purpose_or_cause(child)


def _parts(head: Token, cut: set[int]) -> list[list[Token]]:
    """The phrase headed by ``head`` as one token list per coordinated noun phrase (``cut``: tokens left out)."""
    nominal = head.pos_ in {"NOUN", "PROPN", "PRON", "NUM"}
    conjuncts = [c for c in head.children if c.dep_ == "conj"] if nominal else []
    if not conjuncts:
        return [[t for t in head.subtree if t.i not in cut]]
    skip = set(cut)
    for c in conjuncts:
        skip.update(t.i for t in c.subtree)
    for c in head.children:
        if c.dep_ in {"cc", "punct"} and c.i > head.i:
            skip.add(c.i)
    own = [t for t in head.subtree if t.i not in skip]
    parts = [own]
    for c in conjuncts:
        parts.extend(_parts(c, cut))
    return parts


def _trim(tokens: list[Token]) -> list[Token]:
    """Leading articles/possessives and punctuation, trailing punctuation and conjunctions, removed."""
    tokens = sorted(tokens, key=lambda t: t.i)
    # keep the contiguous run that contains the head (a dropped conjunct may leave a gap)
    start = 0
    while start < len(tokens) - 1 and (tokens[start].dep_ in _TRIM or tokens[start].is_punct):
        start += 1
    end = len(tokens)
    while end > start + 1 and (tokens[end - 1].is_punct or tokens[end - 1].dep_ == "cc"):
        if tokens[end - 1].text in _CLOSING and _CLOSING[tokens[end - 1].text] in {t.text for t in tokens[start:]}:
            break  # a bracket closing one opened inside the phrase stays
        end -= 1
    run = tokens[start:end]
    contiguous = [run[0]]
    for token in run[1:]:
        if token.i != contiguous[-1].i + 1:
            break
        contiguous.append(token)
    return contiguous


def extract_tuples(sentence: Span) -> list[ActionTuple]:
    """The action tuples of one parsed sentence, in the order of their verbs."""
    out = []
    predicates = [token for token in sentence if _is_predicate(token)]
    for token in predicates:
        # clauses that are actions of their own are never inside another verb's argument
        cut = {t.i for p in predicates if p.i != token.i and token.is_ancestor(p) for t in p.subtree}
        particles = [c for c in token.children if c.dep_ == "prt"]
        verb = " ".join([token.lemma_.lower(), *(p.lower_ for p in particles)])
        arguments: list[str] = []
        spans: list[tuple[int, int]] = []
        for child in token.children:
            if not _keep_argument(child):
                continue
            for part in _parts(child, cut):
                tokens = _trim(part)
                if not tokens or not any(t.is_alpha or t.like_num for t in tokens):
                    continue  # punctuation or symbols only
                last = tokens[-1]
                opened = sum(t.text == "(" for t in tokens) - sum(t.text == ")" for t in tokens)
                if opened > 0 and last.i + 1 < sentence.end and sentence.doc[last.i + 1].text == ")":
                    last = sentence.doc[last.i + 1]  # the parser hung the closing bracket on the verb
                start, end = tokens[0].idx, last.idx + len(last.text)
                arguments.append(sentence.doc.text[start:end])
                spans.append((start, end))
        out.append(
            ActionTuple(
                verb=verb,
                lemma=token.lemma_.lower(),
                arguments=tuple(arguments),
                verb_span=(token.idx, token.idx + len(token.text)),
                argument_spans=tuple(spans),
            )
        )
    return out
