"""BibTeX entries of the papers procbench implements, and which task (and filtering method) draws on which."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BIBTEX", "PAPERS", "Paper", "citations_for", "methods_of", "papers_for"]

#: Key -> BibTeX entry. Paper 003 was read as an anonymous submission, so it is cited as such.
BIBTEX: dict[str, str] = {
    "wu2022sequencing": """@inproceedings{wu2022sequencing,
  title     = {Understanding Multimodal Procedural Knowledge by Sequencing Multimodal Instructional Manuals},
  author    = {Wu, Te-Lin and Spangher, Alex and Alipoormolabashi, Pegah and Freedman, Marjorie and
               Weischedel, Ralph and Peng, Nanyun},
  booktitle = {Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics},
  year      = {2022},
  eprint    = {2110.08486},
  archivePrefix = {arXiv}
}""",
    "sahu2022challenges": """@inproceedings{sahu2022challenges,
  title     = {Challenges in Procedural Multimodal Machine Comprehension: A Novel Way To Benchmark},
  author    = {Sahu, Pritish and Sikka, Karan and Divakaran, Ajay},
  booktitle = {Proceedings of the IEEE/CVF Winter Conference on Applications of Computer Vision (WACV)},
  year      = {2022}
}""",
    "xu2020procedural": """@inproceedings{xu2020procedural,
  title     = {A Benchmark for Structured Procedural Knowledge Extraction from Cooking Videos},
  author    = {Xu, Frank F. and Ji, Lei and Shi, Botian and Du, Junyi and Neubig, Graham and Bisk, Yonatan and
               Duan, Nan},
  booktitle = {Proceedings of the First International Workshop on Natural Language Processing Beyond Text},
  year      = {2020},
  eprint    = {2005.00706},
  archivePrefix = {arXiv}
}""",
    "wikiorder": """@unpublished{wikiorder,
  title     = {{WikiOrder}: A Dataset and Benchmark for Vision-Text Logical Reasoning},
  author    = {Anonymous},
  note      = {Anonymous ACL submission}
}""",
    "sahu2021towards": """@article{sahu2021towards,
  title     = {Towards Solving Multimodal Comprehension},
  author    = {Sahu, Pritish and Sikka, Karan and Divakaran, Ajay},
  journal   = {arXiv preprint arXiv:2104.10139},
  year      = {2021}
}""",
    "zellers2018swag": """@inproceedings{zellers2018swag,
  title     = {{SWAG}: A Large-Scale Adversarial Dataset for Grounded Commonsense Inference},
  author    = {Zellers, Rowan and Bisk, Yonatan and Schwartz, Roy and Choi, Yejin},
  booktitle = {Proceedings of the 2018 Conference on Empirical Methods in Natural Language Processing},
  year      = {2018}
}""",
    "zellers2019hellaswag": """@inproceedings{zellers2019hellaswag,
  title     = {{HellaSwag}: Can a Machine Really Finish Your Sentence?},
  author    = {Zellers, Rowan and Holtzman, Ari and Bisk, Yonatan and Farhadi, Ali and Choi, Yejin},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
  year      = {2019}
}""",
    "lebras2020aflite": """@inproceedings{lebras2020aflite,
  title     = {Adversarial Filters of Dataset Biases},
  author    = {Le Bras, Ronan and Swayamdipta, Swabha and Bhagavatula, Chandra and Zellers, Rowan and
               Peters, Matthew E. and Sabharwal, Ashish and Choi, Yejin},
  booktitle = {Proceedings of the 37th International Conference on Machine Learning},
  year      = {2020}
}""",
}


@dataclass(frozen=True)
class Paper:
    """A paper procbench implements, as the docs refer to it (``paper 004``)."""

    number: str
    key: str  # its BibTeX key in :data:`BIBTEX`
    short: str  # authors and year, for running text
    citation: str  # the full reference in one line
    takes: str  # what procbench takes from it


#: The papers by the number the docs and cards use ("paper 004").
PAPERS: list[Paper] = [
    Paper(
        "000",
        "wu2022sequencing",
        "Wu et al. 2022",
        "Te-Lin Wu, Alex Spangher, Pegah Alipoormolabashi, Marjorie Freedman, Ralph Weischedel, Nanyun Peng. "
        "Understanding Multimodal Procedural Knowledge by Sequencing Multimodal Instructional Manuals. "
        "ACL 2022 (arXiv:2110.08486).",
        "the sequencing task and its metrics (Acc, PMR, Dist, L_q, L_r, Kendall's tau), wikiHow scraping",
    ),
    Paper(
        "001",
        "sahu2022challenges",
        "Sahu et al. 2022",
        "Pritish Sahu, Karan Sikka, Ajay Divakaran. Challenges in Procedural Multimodal Machine Comprehension: "
        "A Novel Way To Benchmark. WACV 2022 (Meta-RecipeQA).",
        "the Control-Knobs of the visual tasks, cleaning, the distance-SVM bias probe, GM3C / HTRN baselines",
    ),
    Paper(
        "002",
        "xu2020procedural",
        "Xu et al. 2020",
        "Frank F. Xu, Lei Ji, Botian Shi, Junyi Du, Graham Neubig, Yonatan Bisk, Nan Duan. A Benchmark for "
        "Structured Procedural Knowledge Extraction from Cooking Videos. NLP Beyond Text workshop 2020 "
        "(arXiv:2005.00706).",
        "verb-argument tuples of steps (`procbench extract`), their metrics, the next-action task's items",
    ),
    Paper(
        "003",
        "wikiorder",
        "WikiOrder (anonymous)",
        "Anonymous. WikiOrder: A Dataset and Benchmark for Vision-Text Logical Reasoning. Anonymous ACL "
        "submission (under review; no authors or year published).",
        "the pair-order task",
    ),
    Paper(
        "004",
        "sahu2021towards",
        "Sahu et al. 2021",
        "Pritish Sahu, Karan Sikka, Ajay Divakaran. Towards Solving Multimodal Comprehension. "
        "arXiv:2104.10139, 2021 (WoodworkQA and DecorationQA).",
        "Instructables scraping, textual cloze, the choice-only bias, Algorithm 1 (budgeted debiasing), "
        "hasty student and impatient reader baselines",
    ),
]


def papers_for(keys: list[str]) -> list[Paper]:
    """The :class:`Paper` of each BibTeX key in ``keys`` that is one of :data:`PAPERS`, in that order."""
    by_key = {p.key: p for p in PAPERS}
    return [by_key[k] for k in keys if k in by_key]


_BY_TASK = {
    "sequencing": ["wu2022sequencing"],
    "pair-order": ["wikiorder"],
    "textual-cloze": ["sahu2021towards"],
    "next-action": ["xu2020procedural", "sahu2021towards"],
    "visual-cloze": ["sahu2022challenges"],
    "visual-coherence": ["sahu2022challenges"],
    "visual-ordering": ["sahu2022challenges"],
}
#: Filtering methods (docs/adversarial.md): adversarial settings (SWAG/HellaSwag adversarial filtering, with
#: AFLite-style pruning) and ``procbench filter --aflite`` sets.
_BY_METHOD = {
    "adversarial": ["zellers2018swag", "zellers2019hellaswag", "lebras2020aflite"],
    "aflite": ["lebras2020aflite"],
}
#: Cleaning follows papers 001 and 004 for every task.
_ALWAYS = ["sahu2022challenges", "sahu2021towards"]


def methods_of(settings: list[str]) -> list[str]:
    """The filtering methods (keys of ``_BY_METHOD``) that made sets of these setting names."""
    found = ["adversarial" for s in settings if s == "adversarial"] + ["aflite" for s in settings if "-aflite" in s]
    return list(dict.fromkeys(found))


def citations_for(tasks: list[str], methods: list[str] | None = None) -> tuple[list[str], list[str]]:
    """The BibTeX entries for a set of tasks (and filtering ``methods``, :func:`methods_of`): (the papers these
    tasks, methods and the cleaning follow, the other papers procbench implements)."""
    method_keys = [key for method in methods or [] for key in _BY_METHOD.get(method, [])]
    keys = list(dict.fromkeys([key for task in tasks for key in _BY_TASK.get(task, [])] + method_keys + _ALWAYS))
    return [BIBTEX[k] for k in keys], [entry for k, entry in BIBTEX.items() if k not in keys]
