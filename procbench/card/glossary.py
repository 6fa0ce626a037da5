"""What a setting name means: one glossary for the dataset card, the HTML report and the README.

A setting is the folder of a question set under ``questions/TASK/`` and the config of an export. Each entry of
:data:`GLOSSARY` matches setting names by a regular expression and explains them in plain words; a new setting
is one more :class:`Term` (the README's glossary table lists the same terms; a test checks they agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GLOSSARY", "Term", "explain", "glossary_for", "knob_values"]


@dataclass(frozen=True)
class Term:
    """One setting name (or family of names) and what it means.

    Attributes:
        name: the name as people write it (``knobs-K1K2K3``).
        pattern: a regular expression matching the whole setting name (suffixes such as ``-aflite`` are
            matched separately, by :data:`SUFFIXES`).
        tasks: the tasks that have the setting (for people; not checked).
        meaning: what the setting does, in a sentence or two.
    """

    name: str
    pattern: str
    tasks: str
    meaning: str

    def matches(self, setting: str) -> bool:
        """Whether ``setting`` is this term."""
        return re.fullmatch(self.pattern, setting) is not None


_NEEDS_CONTEXT = (
    "only reading answers it: the choices are four items of one procedure (textual: step titles; visual: photos) "
    "drawn as an unordered set, the answer uniform among them, so a reader without the context reads chance by "
    "construction. Cloze: the question is the blank alone and its context the blank's step; visual coherence: the "
    "four photos are the choices, the context three of their steps, and the answer the photo of none of them. No "
    "two choices alike (textual: no step text more than 0.12 (cosine) nearer another choice's title than its own; "
    "visual: no near-copy photos, no two steps' texts alike; the answer's rank by distance to the four photos' "
    "centroid dealt evenly over the set). Recommended. Blinded readers: real recipes (textual "
    "cloze) 31% without the context (recipeqa 90%), 97.5% with it; real build-guide photos, visual cloze 22% "
    "without, 94% with; visual coherence 18% without, 90% with (benchmarks/reader_checks.md)."
)
_KNOBS = (
    "The Control-Knobs of Sahu et al. 2022 (paper 001). K1, overlap between a procedure's questions: 0 = at most "
    "n/2 questions per procedure (the answer's step leaves the pool after each), 1 = at most n/3 (the answer's "
    "step and one more leave it). K2, how near the negatives are: from the K_C (100) nearest images of other "
    "procedures, 0 = the band (0, m−s) of their distances (nearer, harder), 1 = the band (m−s, m+s). K3, the "
    "question's closeness: 0 = no constraint, 1 = one negative nearer the question than the answer (as the "
    "paper states it), 2 = rank-uniform (procbench's: the answer's distance rank among the choices is spread "
    "evenly over the set, so distances alone tell nothing)"
)

#: Every setting procbench writes; the first term that matches a name explains it.
GLOSSARY: list[Term] = [
    Term(
        "recipeqa",
        r"recipeqa",
        "textual cloze, next action, visual tasks",
        "RecipeQA's original sampling (Yagcioglu et al. 2018), kept as the biased baseline: negatives drawn at "
        "random from other procedures beyond a fixed distance from the answer. Context-free models answer it "
        "well above chance; the audit shows how much.",
    ),
    Term(
        "default",
        r"default",
        "every task",
        "textual cloze and next action: the negatives of Sahu et al. 2021 (paper 004), three of the 100 "
        "nearest distinct titles (actions) of the answer, the nearest ones dropped; sequencing and pair order: "
        "the task's only setting.",
    ),
    Term(
        "debias-bN",
        r"debias-b\d+",
        "textual cloze, next action",
        "Algorithm 1 of Sahu et al. 2021 (paper 004): titles clustered with KMeans, each cluster may give at "
        "most N negatives, so no title is a frequent negative and a choice-only model cannot learn which "
        "titles are never the answer.",
    ),
    Term(
        "debias-auto",
        r"debias-auto",
        "textual cloze, next action",
        "Algorithm 1 with the per-cluster budget chosen automatically: grown from the even share until 98% of "
        "the drafted questions can be completed.",
    ),
    Term("knobs-K1K2K3", r"knobs-[01][01][012]", "visual cloze, coherence, ordering", _KNOBS),
    Term(
        "adversarial",
        r"adversarial",
        "textual cloze, next action, visual tasks",
        "adversarial filtering (SWAG / HellaSwag style): negatives are replaced, round after round, wherever "
        "an ensemble of context-free probes (choice-only, partial-input, question-distance models) tells them "
        "from the answer; questions they still solve are dropped while 85% of the drafted ones stay (visual "
        "tasks: 80%); a set of fewer than 20 questions is left as drawn (too few to fit a probe on). The visual "
        "tasks also take procedures shorter than the Control-Knobs' 5 image steps. Recommended for next action "
        "and visual ordering: the audit's shortcut probes read it nearest chance.",
    ),
    Term(
        "needs-context",
        r"needs-context",
        "textual cloze, visual cloze, visual coherence",
        _NEEDS_CONTEXT,
    ),
    Term(
        "needs-context-cL",
        r"needs-context-c\d+",
        "textual cloze",
        "needs-context at closeness level L (`--closeness L`): of the sets of four titles needs-context draws "
        "from, only those whose step texts fit rival titles nearly as well as their own (closeness level L: the "
        "set's mean fit margin, over its four steps and over TF-IDF and embedding cosine, at most 0.08 at level 1 "
        "and 0.03 at level 2). Harder with the context; without it still chance by construction, since the rule "
        "reads the set, never which step is the answer. On the RecipeQA development slice the zero-shot context "
        "readers fall by about 20 points from level 0 to level 2 (benchmarks/closeness_levels.md).",
    ),
]

#: Suffixes appended to a setting by ``procbench filter``: (regex of the suffix, meaning).
SUFFIXES: list[Term] = [
    Term(
        "SETTING-aflite",
        r"-aflite(?:-trees)?(?:-n\d+)?",
        "any multiple-choice setting",
        "the setting filtered by AFLite (Le Bras et al. 2020, `procbench filter --aflite`): the questions "
        "linear models on context-free features answer most often are removed. `-trees`: gradient-boosted "
        "trees instead of linear models; `-nN`: filtered down to N questions.",
    ),
]


def explain(setting: str) -> list[Term]:
    """The terms that explain ``setting``: its base setting's term, then its suffix's (empty: unknown)."""
    out: list[Term] = []
    base = setting
    for suffix in SUFFIXES:
        match = re.search(suffix.pattern + "$", setting)
        if match:
            base = setting[: match.start()]
            out.append(suffix)
            break
    for term in GLOSSARY:
        if term.matches(base):
            return [term, *out]
    return out


def glossary_for(settings: list[str]) -> list[Term]:
    """The terms that explain ``settings``, in :data:`GLOSSARY` order, each once."""
    used = {term.name for setting in settings for term in explain(setting)}
    return [term for term in [*GLOSSARY, *SUFFIXES] if term.name in used]


_K1 = {"0": "at most n/2 questions per procedure", "1": "at most n/3 questions per procedure"}
_K2 = {"0": "negatives from the nearer band (0, m−s)", "1": "negatives from the band (m−s, m+s)"}
_K3 = {
    "0": "no closeness constraint",
    "1": "one negative nearer the question than the answer",
    "2": "rank-uniform answer distances",
}


def knob_values(setting: str) -> str | None:
    """What the digits of a ``knobs-K1K2K3`` setting (or a setting derived from one) choose, in words; None for
    other settings."""
    match = re.match(r"knobs-([01])([01])([012])(?:$|-)", setting)
    if match is None:
        return None
    k1, k2, k3 = match.groups()
    return f"K1={k1}: {_K1[k1]}; K2={k2}: {_K2[k2]}; K3={k3}: {_K3[k3]}."
