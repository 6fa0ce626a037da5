"""BibTeX entries of the papers procbench implements, and which task (and filtering method) draws on which."""

from __future__ import annotations

__all__ = ["BIBTEX", "citations_for", "methods_of"]

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
