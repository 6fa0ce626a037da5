"""File formats procbench reads and writes besides its own store: RecipeQA JSON (:mod:`.recipeqa`)."""
