"""The visual tasks (paper 001, DESIGN §6): cloze, coherence and ordering over procedures' image sequences.

One module per concept, one driver, and per task only its hooks:

- :mod:`.sequences`: each procedure's image sequence and the image data (embedding, index, searches);
- :mod:`.plans`: K1, which steps each question uses;
- :mod:`.bands`: K2, the candidates (nearest images of other procedures) and their distance bands;
- :mod:`.closeness`: K3, candidates closer to the question's point than its radius;
- :mod:`.selection`: drawing the negatives from the bands, the first under K3;
- :mod:`.recipeqa_style`: the RecipeQA style's random negatives beyond ``min_distance``;
- :mod:`.columns`: questions gathered as numpy columns and the ``meta`` fields every task shares;
- :mod:`.driver`: settings, chunks, searches, draws and tables, the same for every task;
- :mod:`.cloze`, :mod:`.coherence`, :mod:`.ordering`: the tasks (their window, add and table hooks).

Synthetic visual stores of any size, for tests and benchmarks, are :mod:`procbench.corpus.synthetic`.
"""
