"""What a textual sampler reads (:class:`TextualContext`) and which drafts (:class:`DraftPlan`)."""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from procbench.generate import policy
from procbench.generate.adversarial import TEXTUAL_POLICY, AdversarialPolicy
from procbench.generate.debias import Clustering, cluster_titles, default_n_clusters
from procbench.generate.search import Searcher, median_pair_distance
from procbench.generate.settings import Setting
from procbench.generate.textual.candidates import nearest_titles
from procbench.generate.textual.pool import ITEM_FIELDS, Draft, Pool, StepRows, make_drafts, step_text_embeddings
from procbench.progress import Progress
from procbench.rng import stream
from procbench.store import Store

if TYPE_CHECKING:
    from procbench.embed import Embeddings, NeighborIndex

__all__ = ["DraftPlan", "TextualContext"]

_SETTINGS = stream("textual.settings")
_PAIRS = stream("textual.recipeqa.min-distance")


@dataclass(frozen=True)
class DraftPlan:
    """Which drafts a sampler reads: ``per_procedure`` of each procedure, answers drawn with ``replace``."""

    per_procedure: int
    replace: bool = False


@dataclass
class TextualContext:
    """Everything a textual sampler reads; shared resources are computed once, when first asked for."""

    store: Store
    items: str
    pool: Pool
    steps: dict[str, StepRows]  # per procedure: (index, item, normalised item) of every step
    in_range: dict[str, StepRows]  # the procedures with an allowed step count
    seed: int
    progress: Progress
    questions_per_procedure: int = 1
    knn_k: int = field(default_factory=lambda: policy.current().KNN_K)
    clusters: int | None = None
    min_distance: float | None = None  # None (and clusters None): the default, computed here
    adversarial: AdversarialPolicy = TEXTUAL_POLICY
    notes: dict[str, Any] = field(default_factory=dict)  # shared resources' account (the clustering)
    hide_window: bool = False  # how drafts are made (make_drafts)
    last: bool = False
    searcher: Searcher | None = None  # where the index's searches run (None: here)
    _drafts: dict[DraftPlan, dict[str, list[Draft]]] = field(default_factory=dict)

    def drafts(self, plan: DraftPlan) -> dict[str, list[Draft]]:
        """The drafts of every procedure in range under ``plan`` (made once per plan), in procedure order."""
        if plan not in self._drafts:
            drafted = functools.partial(make_drafts, seed=self.seed, hide_window=self.hide_window, last=self.last)
            self._drafts[plan] = {
                pid: drafted(pid, rows, per_procedure=plan.per_procedure, replace=plan.replace)
                for pid, rows in sorted(self.in_range.items())
            }
        return self._drafts[plan]

    def rng(self, setting: Setting) -> np.random.Generator:
        """The generator of ``setting`` (its negatives and answer positions)."""
        return _SETTINGS.rng(self.seed, zlib.crc32(setting.name.encode("utf-8")))

    @cached_property
    def fixed_distance(self) -> float:
        """RecipeQA style's distance: ``min_distance``, else the median distance of random title pairs."""
        if self.min_distance is not None:
            return self.min_distance
        return median_pair_distance(self.pool.procedures, self.pool.distance, _PAIRS.rng(self.seed))

    @cached_property
    def knn(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{answer key: (rows, distances)}`` the ``knn_k`` nearest titles of every single-draw draft's answer."""
        pool = self.pool
        drafts = [d for ds in self.drafts(DraftPlan(self.questions_per_procedure)).values() for d in ds]
        wanted = {d.answer_key for d in drafts if d.answer_key in pool.positions and d.procedure_id in pool.group_of}
        return nearest_titles(self.index, pool, sorted(wanted), self.knn_k, self.progress)

    @cached_property
    def index(self) -> NeighborIndex:
        """The store's persisted index of the items (every neighbour search goes through it)."""
        from procbench.embed import load_index

        return load_index(self.store, ITEM_FIELDS[self.items]).served_by(self.searcher)

    @cached_property
    def clustering(self) -> Clustering:
        """KMeans over the distinct items (Algorithm 1), ``clusters`` or ``round(sqrt(distinct))`` of them."""
        embeddings = self.pool.embeddings
        n_distinct = len(np.unique(embeddings.hashes))
        n_clusters = self.clusters if self.clusters is not None else default_n_clusters(n_distinct)
        self.progress.start(f"textual-cloze: KMeans ({n_clusters} clusters)", total=None)
        clustering = cluster_titles(
            embeddings.vectors, n_clusters=n_clusters, seed=self.seed, hashes=embeddings.hashes
        )
        self.notes["clustering"] = {
            "clusters": clustering.n_clusters,
            "inertia": round(clustering.inertia, 4),
            "n_iter": clustering.n_iter,
            "largest": int(clustering.sizes().max()),
            "smallest": int(clustering.sizes().min()),
        }
        return clustering

    @cached_property
    def step_texts(self) -> Embeddings | None:
        """The step-text embeddings in the items' space when the context shows each answer's step text."""
        return step_text_embeddings(self.store, self.items, self.pool.embeddings)
