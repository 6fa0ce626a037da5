"""Where textual negatives come from: the ``k`` nearest titles of an answer (:func:`nearest_titles`: paper 004's
kNN candidates), and the adversarial setting's windows (:func:`pick_windows`) and candidates (:func:`near_candidates`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.generate import policy
from procbench.generate.search import knn, search_until_k
from procbench.generate.textual.pool import Draft, Pool, question_vectors
from procbench.progress import Progress

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex

__all__ = ["fits_worse", "near_candidates", "nearest_titles", "pick_windows", "SplitSearch"]

_KNN_BATCH = 2048
#: Questions whose word candidates are scored together (one sparse ``(WORD_BLOCK, rows)`` score block).
WORD_BLOCK = 256
#: On an approximate (IVF) store index, a split of at most this many rows is searched over an exact index of its own
#: rows: below it an exact search costs less per query than a filtered IVF one (benchmarks/adversarial_constants.md).
#: The same rows either way on the stores measured, so it is a block size. block-size
SPLIT_EXACT_ROWS = 65_536


def nearest_titles(
    index: NeighborIndex, pool: Pool, keys: list[str], k: int, progress: Progress
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The ``k`` nearest distinct titles (by normalised text; none a copy of the key's own) of other procedures of the
    same split: ``{key: (rows, distances)}``, the exact top ``k`` whenever the index is exact."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    total = len(pool.keys)
    progress.start(f"textual-cloze: {k} nearest titles", total=len(keys))
    for start in range(0, len(keys), _KNN_BATCH):
        batch = keys[start : start + _KNN_BATCH]
        groups = np.array([pool.group_of[key.rsplit("#", 1)[0]] for key in batch], dtype=np.int64)
        copies = pool.norm_counts[pool.norm_codes[[pool.positions[key] for key in batch]]]
        for group in np.unique(groups).tolist():
            base = k if len(pool.group_rows) == 1 else _split_fetch(k, len(pool.group_rows[group]), total)
            # queries whose title has many copies ask for more rows, bucketed by powers of two
            bucket = base * 2 ** np.ceil(np.log2((base + copies) / base)).astype(np.int64)
            for size in np.unique(bucket[groups == group]).tolist():
                members = [key for key, g, b in zip(batch, groups, bucket, strict=True) if g == group and b == size]
                out.update(_search_until_k(index, pool, members, group, k, min(total, size)))
        progress.advance(len(batch))
    return out


def _split_fetch(k: int, rows: int, total: int) -> int:
    """How many rows of a whole-store index to ask for so that about ``k`` are among a split's ``rows`` (of
    ``total``): ``k`` over the split's share, with a margin."""
    share = max(1, rows) / max(1, total)
    return int(np.ceil(k / share * 1.25)) + 8


def _search_until_k(
    index: NeighborIndex, pool: Pool, keys: list[str], group: int, k: int, fetch: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Neighbours of ``keys`` (all of split ``group``) as :func:`nearest_titles`: ``fetch`` rows, doubled if few."""
    rows = np.fromiter((pool.positions[key] for key in keys), dtype=np.int64, count=len(keys))

    def usable(queries: np.ndarray, hits: np.ndarray) -> np.ndarray:
        """Rows of the split with a usable title other than the query's, the nearest row of each title."""
        codes = pool.norm_codes[np.maximum(hits, 0)]
        ok = (hits >= 0) & (pool.groups[np.maximum(hits, 0)] == group) & (codes >= 0)
        ok &= codes != pool.norm_codes[rows[queries]][:, None]
        for j in range(len(hits)):
            kept = np.flatnonzero(ok[j])
            _, first = np.unique(codes[j, kept], return_index=True)
            ok[j, np.delete(kept, first)] = False
        return ok

    vectors = np.asarray(pool.embeddings.vectors[rows])
    exclude = [key.rsplit("#", 1)[0] for key in keys]
    dist, hits = search_until_k(index, vectors, k, exclude=exclude, keep=usable, fetch=fetch, limit=len(pool.keys))
    return {key: (hit[hit >= 0], d[hit >= 0].astype(np.float64)) for key, d, hit in zip(keys, dist, hits, strict=True)}


class SplitSearch:
    """Searches of the rows ``allowed (N,)`` (e.g. one split's usable titles): ``search(queries (B, D), procedures,
    k)`` gives ``(distances (B, k), rows (B, k))`` ascending (inf / -1: none), none of the query's procedure. Over
    an exact index of the allowed rows alone (up to :data:`SPLIT_EXACT_ROWS` on an IVF index), else the IVF index
    widened until ``k`` remain."""

    def __init__(self, index: NeighborIndex, pool: Pool, allowed: np.ndarray) -> None:
        self.index, self.allowed, self.total = index, allowed, len(pool.keys)
        self.rows = np.flatnonzero(allowed)
        exact = index.kind != "ivf" or len(self.rows) <= min(SPLIT_EXACT_ROWS, index.exact_max_rows)
        self.part = index.subset(self.rows) if exact else None

    def __call__(self, queries: np.ndarray, procedures: Sequence[str | None], k: int) -> tuple[np.ndarray, np.ndarray]:
        vectors = np.ascontiguousarray(queries, dtype=np.float32)
        if self.part is not None:
            distances, found = knn(self.part, vectors, min(k, len(self.rows)), exclude=procedures)
            found = np.where(found >= 0, self.rows[np.maximum(found, 0)], -1)
            pad = ((0, 0), (0, k - found.shape[1]))
            return np.pad(distances, pad, constant_values=np.inf), np.pad(found, pad, constant_values=-1)
        fetch = min(self.total, _split_fetch(k, len(self.rows), self.total))
        allowed = self.allowed

        def keep(_queries: np.ndarray, hits: np.ndarray) -> np.ndarray:
            return (hits >= 0) & allowed[np.maximum(hits, 0)]

        return search_until_k(self.index, vectors, k, exclude=procedures, keep=keep, fetch=fetch, limit=self.total)


def _shared_answer(draft: Draft, pool: Pool) -> bool:
    """Whether the draft's answer shows a (normalised) title that other steps of the pool show too."""
    row = pool.positions.get(draft.answer_key, -1)
    code = int(pool.norm_codes[row]) if row >= 0 else -1
    return code < 0 or int(pool.norm_counts[code]) > 1


def pick_windows(index: NeighborIndex, options: list[Draft], pool: Pool, per_procedure: int) -> list[Draft]:
    """Each procedure's ``per_procedure`` drafts among ``options`` (in procedure order) whose answers the probes tell
    least: an answer no other step shares first, then the most of the ``ADVERSARIAL_NEARER`` titles nearest the
    question mean nearer than the answer, earlier drafts on ties."""
    vectors = pool.embeddings.vectors
    shared = [_shared_answer(d, pool) for d in options]
    spans = _procedure_spans(options)
    contested = _contested(shared, spans, per_procedure)
    embedded = [i for i, d in enumerate(options) if contested[i] and d.answer_key in pool.positions]
    score = np.full(len(options), -1, dtype=np.int64)  # not embedded: the last choice (skipped later)
    if embedded:
        chosen = [options[i] for i in embedded]
        means, _ = question_vectors(chosen, pool)
        answers = np.asarray(vectors[[pool.positions[d.answer_key] for d in chosen]], dtype=np.float32)
        radius = np.linalg.norm(answers - means, axis=1)
        group = np.array([pool.group_of[d.procedure_id] for d in chosen], dtype=np.int64)
        for g in np.unique(group).tolist():
            allowed = (pool.norm_codes >= 0) & (pool.groups == g)
            members = np.flatnonzero(group == g)
            if not allowed.any():
                continue
            procedures = [chosen[i].procedure_id for i in members.tolist()]
            distance, hit = SplitSearch(index, pool, allowed)(
                means[members], procedures, policy.current().ADVERSARIAL_NEARER
            )
            nearer = (hit >= 0) & (distance < radius[members][:, None])
            score[np.array(embedded)[members]] = nearer.sum(axis=1)
    picked: list[Draft] = []
    for start, end in spans:
        best = sorted(range(start, end), key=lambda i: (shared[i], -score[i], options[i].number))[:per_procedure]
        picked.extend(options[i] for i in sorted(best))
    return picked


def _procedure_spans(options: list[Draft]) -> list[tuple[int, int]]:
    """``[(start, end)]`` of each procedure's run of ``options`` (listed in procedure order)."""
    spans: list[tuple[int, int]] = []
    for _, run in itertools.groupby(options, key=lambda d: d.procedure_id):
        start = spans[-1][1] if spans else 0
        spans.append((start, start + sum(1 for _ in run)))
    return spans


def _contested(shared: list[bool], spans: list[tuple[int, int]], per_procedure: int) -> np.ndarray:
    """``(len(shared),)`` the options whose score can change the pick (of the class a procedure's picks fill only in
    part); the others need no search."""
    contested = np.zeros(len(shared), dtype=bool)
    for start, end in spans:
        left = per_procedure
        for value in (False, True):
            members = [i for i in range(start, end) if shared[i] == value]
            if 0 < left < len(members):
                contested[members] = True
            left -= min(left, len(members))
    return contested


def _word_vectors(pool: Pool) -> Any:
    """``(N, V)`` sparse L2-normalised TF-IDF rows of the items' content words (the probes' word-overlap words)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from procbench.shortcuts import content_words

    texts = [text or "" for text in pool.texts]
    vectorizer = TfidfVectorizer(analyzer=lambda text: sorted(content_words(text)), binary=True, dtype=np.float32)
    try:
        return vectorizer.fit_transform(texts)
    except ValueError:  # no item has a content word
        return None


def near_candidates(index: NeighborIndex, drafts: list[Draft], pool: Pool, sizes: Mapping[str, int]) -> np.ndarray:
    """``(Q, M)`` candidate titles per draft (-1: padding) of other procedures of its split, from each source of
    ``sizes`` in turn: nearest its answer, its question mean, each question item, and sharing its words (TF-IDF)."""
    vectors = pool.embeddings.vectors
    answer_rows = np.array([pool.positions[d.answer_key] for d in drafts], dtype=np.int64)
    # one row per distinct title (the first that is not an answer), so a candidate list holds distinct items
    usable = pool.norm_codes >= 0
    usable[answer_rows] = False
    _, first = np.unique(np.where(usable, pool.norm_codes, -1), return_index=True)
    distinct = np.zeros(len(usable), dtype=bool)
    distinct[first] = True
    usable &= distinct
    means, shown = question_vectors(drafts, pool)
    words = _word_vectors(pool) if sizes.get("words", 0) else None
    lists: list[list[np.ndarray]] = [[] for _ in drafts]
    own = np.array([pool.procedure_code.get(d.procedure_id, -2) for d in drafts], dtype=np.int64)
    group = np.array([pool.group_of[d.procedure_id] for d in drafts], dtype=np.int64)
    for g in np.unique(group).tolist():
        allowed = usable & (pool.groups == g)
        rows = np.flatnonzero(allowed)
        members = np.flatnonzero(group == g)
        if not len(rows) or not len(members):
            continue

        search = SplitSearch(index, pool, allowed)  # one per split, shared by the sources

        def nearest(queries: np.ndarray, k: int, search: SplitSearch = search) -> np.ndarray:
            """``(B, k + MAX_STEPS)`` rows nearest ``queries (B, D)``: room for the own procedure's, dropped below."""
            return search(queries, [None] * len(queries), k + policy.current().MAX_STEPS)[1]

        for source, k in sizes.items():
            if k <= 0:
                continue
            if source == "answer":
                hits = nearest(np.asarray(vectors[answer_rows[members]], dtype=np.float32), k)
            elif source == "question":
                hits = nearest(means[members], k)
            elif source == "items":
                items = shown[members]
                per_item = -(-k // max(1, items.shape[1]))
                shown_items = items >= 0  # items is padded to the longest question: only shown items are searched
                found = np.full((*items.shape, per_item + policy.current().MAX_STEPS), -1, dtype=np.int64)
                found[shown_items] = nearest(np.asarray(vectors[items[shown_items]], dtype=np.float32), per_item)
                hits = found.transpose(0, 2, 1).reshape(len(members), -1)  # interleaved: each item's nearest first
            elif source == "words":
                if words is None:
                    continue
                hits = _word_neighbours(words, shown[members], rows, k + policy.current().MAX_STEPS)
            else:
                raise ValueError(f"unknown candidate source {source!r}")
            for j, i in enumerate(members.tolist()):
                hit = hits[j][hits[j] >= 0]
                lists[i].append(hit[pool.procedures[hit] != own[i]][:k])
    width = sum(max(0, k) for k in sizes.values())
    out = np.full((len(drafts), width), -1, dtype=np.int64)
    for i, parts in enumerate(lists):  # a title that several sources found is listed once, where first found
        unique = list(dict.fromkeys(np.concatenate(parts).tolist())) if parts else []
        out[i, : len(unique)] = unique
    return out


def _word_neighbours(words: Any, shown: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """``(B, k)`` of ``rows``, those sharing the most TF-IDF weight with each question's shown items (ties by row; -1:
    none), compared sparsely (a word in over ``WORD_POSTINGS`` rows is a stop word)."""
    import scipy.sparse as sp

    pool_words = sp.csr_matrix(words[rows])
    common = pool_words.getnnz(axis=0) > policy.current().WORD_POSTINGS
    if common.any():
        pool_words = sp.csr_matrix(pool_words @ sp.diags((~common).astype(np.float32)))
        pool_words.eliminate_zeros()
    pool_words = pool_words.T.tocsr()  # (V, R)
    out = np.full((len(shown), k), -1, dtype=np.int64)
    for start in range(0, len(shown), WORD_BLOCK):
        block = shown[start : start + WORD_BLOCK]
        picks = sp.csr_matrix(
            (np.ones(int((block >= 0).sum()), dtype=np.float32), (np.nonzero(block >= 0)[0], block[block >= 0])),
            shape=(len(block), words.shape[0]),
        )
        scores = sp.csr_matrix(picks @ words @ pool_words)  # (b, R)
        for i in range(len(block)):
            lo, hi = scores.indptr[i], scores.indptr[i + 1]
            cols, values = scores.indices[lo:hi], scores.data[lo:hi]
            live = values > 0
            cols, values = cols[live], values[live]
            if len(cols) > k:  # the k best, then ordered: best first, ties by row
                top = np.argpartition(-values, k - 1)[:k]
                cut = values[top].min()
                keep = values >= cut  # every row tied with the k-th stays in the running, so ties go by row
                cols, values = cols[keep], values[keep]
            order = np.lexsort((cols, -values))[:k]
            out[start + i, : len(order)] = rows[cols[order]]
    return out


def fits_worse(
    candidates: np.ndarray, answers: np.ndarray, drafts: list[Draft], pool: Pool, step_texts: Embeddings
) -> np.ndarray:
    """``candidates`` without those nearer the answer's own step text than the answer (-1, packed left): the context
    shows that text, and such a negative would make the question ambiguous."""
    row_of = {k: i for i, k in enumerate(step_texts.keys.to_pylist())}
    texts = np.asarray(step_texts.vectors)
    vectors = pool.embeddings.vectors
    out = candidates.copy()
    for i, d in enumerate(drafts):
        row = row_of.get(d.answer_key)
        if row is None:
            continue
        text = np.asarray(texts[row], dtype=np.float32)
        fit = float(np.asarray(vectors[answers[i]], dtype=np.float32) @ text)
        live = candidates[i] >= 0
        sims = np.asarray(vectors[np.maximum(candidates[i], 0)], dtype=np.float32) @ text
        keep = live & (sims < fit)
        out[i] = -1
        out[i, : int(keep.sum())] = candidates[i][keep]
    return out
