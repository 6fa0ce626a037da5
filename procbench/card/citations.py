"""BibTeX entries of the five papers procbench implements, and which task draws on which."""

from __future__ import annotations

__all__ = ["BIBTEX", "citations_for"]

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
}

_BY_TASK = {
    "sequencing": ["wu2022sequencing"],
    "pair-order": ["wikiorder"],
    "textual-cloze": ["sahu2021towards"],
    "next-action": ["xu2020procedural", "sahu2021towards"],
    "visual-cloze": ["sahu2022challenges"],
    "visual-coherence": ["sahu2022challenges"],
    "visual-ordering": ["sahu2022challenges"],
}
#: Cleaning follows papers 001 and 004 for every task.
_ALWAYS = ["sahu2022challenges", "sahu2021towards"]


def citations_for(tasks: list[str]) -> tuple[list[str], list[str]]:
    """The BibTeX entries for a set of tasks: (the papers these tasks and the cleaning follow, the other papers
    procbench implements)."""
    keys = list(dict.fromkeys([key for task in tasks for key in _BY_TASK.get(task, [])] + _ALWAYS))
    return [BIBTEX[k] for k in keys], [entry for k, entry in BIBTEX.items() if k not in keys]
