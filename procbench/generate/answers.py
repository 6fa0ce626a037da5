"""The answer-position balancing every task shares (DESIGN §5): where each question puts its correct choice."""

from __future__ import annotations

import numpy as np

from procbench.qsets.questions import Question

__all__ = ["N_CHOICES", "answer_orders", "balance_answer_positions", "place_answers"]

N_CHOICES = 4


def answer_orders(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``positions (n,)`` of the answers of ``n`` questions of ``k`` choices (balanced to within one, shuffled) and
    ``wrong (n, k-1)`` a random permutation of each question's wrong choices."""
    positions = rng.permutation(np.resize(np.arange(k), n))
    wrong = np.argsort(rng.random((n, k - 1)), axis=1, kind="stable")
    return positions, wrong


def place_answers(correct: np.ndarray, wrong: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``(n, k)`` choices: ``wrong (n, k-1)`` in order with ``correct (n,)`` inserted at ``positions``."""
    n, k = len(correct), wrong.shape[1] + 1
    out = np.empty((n, k), dtype=np.result_type(correct, wrong))
    at = np.arange(k) == positions[:, None]
    out[at] = correct
    out[~at] = wrong.reshape(-1)
    return out


def balance_answer_positions(
    questions: list[Question], rng: np.random.Generator, *, per_choice: tuple[str, ...] = ()
) -> None:
    """Move each correct choice (first, as generators build them) to a balanced position (:func:`answer_orders`);
    ``meta["negatives"]`` follows the wrong choices, the ``meta`` lists named in ``per_choice`` the choices."""
    if not questions:
        return
    n_choices = {len(q.choices) for q in questions}
    if len(n_choices) != 1:
        raise ValueError(f"questions have different numbers of choices: {sorted(n_choices)}")
    positions, orders = answer_orders(len(questions), n_choices.pop(), rng)
    for question, position, order in zip(questions, positions.tolist(), orders.tolist(), strict=True):
        wrong = [i for i in range(len(question.choices)) if i != question.answer]
        moved = [wrong[i] for i in order]
        moved.insert(position, question.answer)
        question.choices = [question.choices[i] for i in moved]
        question.answer = position
        for name in per_choice:
            if question.meta.get(name) is not None:
                question.meta[name] = [question.meta[name][i] for i in moved]
        if "negatives" in question.meta and isinstance(question.meta["negatives"], list):
            question.meta["negatives"] = [question.meta["negatives"][i] for i in order]
