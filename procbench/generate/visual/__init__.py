"""The visual tasks (paper 001, DESIGN §6): cloze, coherence and ordering over procedures' image sequences.

One module per concept (sequences, K1 plans, K2 bands, K3 closeness, selection, the RecipeQA style, columns), one
driver, and per task only its hooks; DEVELOPERS.md ("Layout") lists them.
"""
