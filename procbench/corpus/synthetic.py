"""Synthetic visual stores: procedures whose step images have random but clustered vectors.

For tests and benchmarks of the visual tasks at any size: no image bytes exist; the vectors are written
directly as the store's image embedding through the embed package's writers, and indexed the way
``procbench embed`` indexes (exact up to ``IndexConfig.exact_max_rows`` rows, IVF above).

Vectors: ``topics`` unit centres; each procedure's centre is its topic's plus Gaussian noise of norm about
``procedure_spread``; each image is its procedure's centre plus noise of norm about ``image_spread``; all
L2-normalised. The default spreads make procedures overlap within a topic, so that for some questions an
image of another procedure is closer to the question than the answer is (all K3 paths occur) while the
RecipeQA style's bias stays plain. Irregularities the generators must cope with can be mixed in: steps
without an image, steps with two images, images shared with another procedure, images of other
procedures whose vector duplicates an existing one (distance 0), steps repeating the previous step's
image.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa

from procbench.embed.index import IndexConfig, build_index_for
from procbench.embed.storage import CURRENT, embedding_id, read_embedding_file, write_current, write_embedding_file
from procbench.progress import SILENT, Progress
from procbench.store import IMAGES, PROCEDURES, STEPS, Store, Transaction, conform

__all__ = ["EMBEDDING_NAME", "stage_image_embedding", "write_synthetic_store"]

EMBEDDING_NAME = "image.synthetic"
_BLOCK = 65536


def _image_id(seed: int, p: int, i: int, j: int) -> str:
    return hashlib.sha256(f"synthetic:{seed}:{p}:{i}:{j}".encode()).hexdigest()


def stage_image_embedding(
    store: Store,
    txn: Transaction,
    name: str,
    keys: list[str],
    owners: list[str],
    vectors: np.ndarray,
    *,
    encoder: str,
    revision: str,
    model: str,
    index_config: IndexConfig,
    progress: Progress = SILENT,
) -> None:
    """Stage ``vectors (N, D)`` (L2-normalised, one per image id of ``keys``, sorted; ``owners`` the procedure each
    is filed under) in ``txn`` as the store's current image embedding ``name``, indexed as ``procbench embed``
    indexes. Image ids are hex digests: their first 32 digits are the content hashes."""
    hashes = np.array([bytes.fromhex(k[:32]) for k in keys], dtype="S16")
    key_array = pa.array(keys, pa.string())
    dim = vectors.shape[1]
    metadata = {
        "format": "procbench-embeddings/1",
        "encoder": encoder,
        "revision": revision,
        "field": "image",
        "dim": str(dim),
        "model": model,
        "rows": str(len(keys)),
        "normalised": "l2",
        "distance": "euclidean",
        "embedding_id": embedding_id(encoder, revision, dim, key_array, hashes),
    }
    staged = txn.stage(f"embeddings/{name}.arrow")
    write_embedding_file(
        staged, keys=key_array, procedure_ids=pa.array(owners, pa.string()), hashes=hashes, vectors=vectors,
        metadata=metadata,
    )  # fmt: skip
    build_index_for(store, txn, read_embedding_file(staged, name), config=index_config, progress=progress)
    write_current(txn.stage(CURRENT), {"image": name})


def write_synthetic_store(
    path: str | Path,
    *,
    n_procedures: int,
    dim: int = 512,
    steps: tuple[int, int] = (5, 8),
    topics: int | None = None,
    procedure_spread: float = 0.4,
    image_spread: float = 1.2,
    missing_images: float = 0.0,
    two_images: float = 0.0,
    shared_images: float = 0.0,
    duplicate_vectors: float = 0.0,
    repeated_images: float = 0.0,
    step_drift: float = 0.0,
    seed: int = 0,
    index_config: IndexConfig | None = None,
    progress: Progress = SILENT,
) -> Store:
    """Create a store at ``path`` with ``n_procedures`` procedures of ``steps`` (inclusive range) steps.

    Args:
        topics: number of topic centres (default ``max(1, n_procedures // 50)``).
        missing_images, two_images, shared_images, duplicate_vectors, repeated_images: per-step rates of a
            step without an image, with a second image, whose image is one of another procedure, whose image's
            vector copies one of another procedure's images, and whose images start with the previous step's.
        step_drift: how far images move along their topic's own direction from a procedure's first step to its
            last (0: step images are exchangeable; > 0: the authored order is the smoothest and early and late
            steps look different, as in real procedures).
    """
    rng = np.random.default_rng([seed, 0x5E7])
    store = Store.open(path, create=True)
    n_topics = topics or max(1, n_procedures // 50)
    centres = rng.standard_normal((n_topics, dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic_of = rng.integers(0, n_topics, n_procedures)
    n_steps = rng.integers(steps[0], steps[1] + 1, n_procedures)
    proc_ids = [f"synthetic:p{p:07d}" for p in range(n_procedures)]

    step_proc = np.repeat(np.arange(n_procedures), n_steps)
    step_index = np.concatenate([np.arange(n) for n in n_steps.tolist()]) if n_procedures else np.zeros(0, int)
    n_total = len(step_proc)
    kind = rng.random((5, n_total))
    missing = kind[0] < missing_images
    second = ~missing & (kind[1] < two_images)
    shared = ~missing & (kind[2] < shared_images) & (step_proc > 0)
    duplicate = ~missing & ~shared & (kind[3] < duplicate_vectors) & (step_proc > 0)

    # Images created here, in creation order: (procedure, step, j) and their vectors.
    own = ~missing & ~shared
    img_step = np.concatenate([np.flatnonzero(own), np.flatnonzero(second)])
    img_j = np.concatenate([np.zeros(int(own.sum()), np.int64), np.ones(int(second.sum()), np.int64)])
    order = np.lexsort((img_j, img_step))
    img_step, img_j = img_step[order], img_j[order]
    ids = [
        _image_id(seed, p, i, j)
        for p, i, j in zip(step_proc[img_step].tolist(), step_index[img_step].tolist(), img_j.tolist(), strict=True)
    ]
    n_images = len(ids)
    img_proc = step_proc[img_step]

    # A shared step reuses an image created by an earlier procedure.
    first_image_of_step = np.full(n_total, -1, np.int64)
    first_image_of_step[img_step[img_j == 0]] = np.flatnonzero(img_j == 0)
    second_image_of_step = np.full(n_total, -1, np.int64)
    second_image_of_step[img_step[img_j == 1]] = np.flatnonzero(img_j == 1)
    shared_steps = np.flatnonzero(shared)
    earlier = np.searchsorted(img_proc, step_proc[shared_steps])  # images of procedures before this one
    ok = earlier > 0
    shared_steps, earlier = shared_steps[ok], earlier[ok]
    first_image_of_step[shared_steps] = (rng.random(len(shared_steps)) * earlier).astype(np.int64)
    # A duplicate-vector image copies the vector of an image of an earlier procedure.
    copy_from = np.full(n_images, -1, np.int64)
    dup_images = first_image_of_step[np.flatnonzero(duplicate)]
    dup_images = dup_images[dup_images >= 0]
    lower = np.searchsorted(img_proc, img_proc[dup_images])
    copy_from[dup_images[lower > 0]] = (rng.random(int((lower > 0).sum())) * lower[lower > 0]).astype(np.int64)

    scratch = store.root / "cache" / "synthetic"
    scratch.mkdir(parents=True, exist_ok=True)
    created = _image_vectors(
        scratch / "created.f32", rng, centres, topic_of, n_steps, step_proc, step_index, img_step, copy_from,
        procedure_spread=procedure_spread, image_spread=image_spread, step_drift=step_drift, seed=seed,
        progress=progress,
    )  # fmt: skip

    procedures, steps_table, images = _tables(
        proc_ids, topic_of, n_steps, step_proc, step_index, ids, first_image_of_step, second_image_of_step,
        kind[4] < repeated_images,
    )  # fmt: skip
    owner = _owners(images["id"].to_pylist(), images["procedure_id"].to_pylist())
    keys = sorted(owner)
    position = {image: k for k, image in enumerate(ids)}
    take = np.array([position[k] for k in keys], dtype=np.int64)
    args: dict[str, float] = {"n_procedures": n_procedures, "dim": dim}
    if step_drift:
        args["step_drift"] = step_drift
    with store.transaction("synthetic", args=args, seed=seed) as txn:
        txn.write_table("procedures", conform(procedures, PROCEDURES))
        txn.write_table("steps", conform(steps_table, STEPS))
        txn.write_table("images", conform(images, IMAGES))
        ordered = np.memmap(scratch / "ordered.f32", dtype=np.float32, mode="w+", shape=(max(1, len(keys)), dim))
        for start in range(0, len(keys), _BLOCK):
            ordered[start : start + _BLOCK] = created[take[start : start + _BLOCK]]
        stage_image_embedding(
            store, txn, EMBEDDING_NAME, keys, [owner[k] for k in keys], ordered[: len(keys)],
            encoder="synthetic", revision=f"seed{seed}",
            model="random clustered vectors (procbench.corpus.synthetic)",
            index_config=index_config or IndexConfig(seed=seed), progress=progress,
        )  # fmt: skip
        del ordered, created
        txn.counts.update({"procedures": n_procedures, "steps": n_total, "images": len(keys)})
    shutil.rmtree(scratch, ignore_errors=True)
    return store


def _tables(
    proc_ids: list[str],
    topic_of: np.ndarray,
    n_steps: np.ndarray,
    step_proc: np.ndarray,
    step_index: np.ndarray,
    ids: list[str],
    first_image_of_step: np.ndarray,
    second_image_of_step: np.ndarray,
    repeated: np.ndarray,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The procedures, steps and images tables of a synthetic store (``repeated``: per step, whether its images
    start with the previous step's)."""
    n_procedures, n_total = len(proc_ids), len(step_proc)
    step_images: list[list[str]] = []
    first_l, second_l = first_image_of_step.tolist(), second_image_of_step.tolist()
    row_ids: list[str] = []
    row_procs: list[str] = []
    row_steps: list[int] = []
    for s in range(n_total):
        found = [ids[k] for k in (first_l[s], second_l[s]) if k >= 0]
        if repeated[s] and step_index[s] > 0 and step_images[-1]:
            found = [step_images[-1][0], *found]
        step_images.append(found)
        for image in found:
            row_ids.append(image)
            row_procs.append(proc_ids[step_proc[s]])
            row_steps.append(int(step_index[s]))
    procedures = pa.table(
        {
            "id": proc_ids,
            "source": ["synthetic"] * n_procedures,
            "title": [f"How to do synthetic task {p}" for p in range(n_procedures)],
            "category": [["Synthetic", f"Topic {t}"] for t in topic_of.tolist()],
            "license": ["CC0-1.0"] * n_procedures,
            "n_steps": pa.array(n_steps.tolist(), pa.int32()),
        }
    )
    steps_table = pa.table(
        {
            "procedure_id": pa.array(proc_ids).take(pa.array(step_proc)) if n_total else pa.array([], pa.string()),
            "index": pa.array(step_index.tolist(), pa.int32()),
            "title": [f"Step {i + 1}." for i in step_index.tolist()],
            "text": [
                f"Do part {i + 1} of synthetic task {p}."
                for p, i in zip(step_proc.tolist(), step_index.tolist(), strict=True)
            ],
            "image_ids": pa.array(step_images, pa.list_(pa.string())),
        }
    )
    n_rows = len(row_ids)
    images = pa.table(
        {
            "id": pa.array(row_ids, pa.string()),
            "procedure_id": pa.array(row_procs, pa.string()),
            "step_index": pa.array(row_steps, pa.int32()),
            "width": pa.array([64] * n_rows, pa.int32()),
            "height": pa.array([64] * n_rows, pa.int32()),
            "stored": pa.array([True] * n_rows, pa.bool_()),
        }
    )
    return procedures, steps_table, images


def _image_vectors(
    path: Path,
    rng: np.random.Generator,
    centres: np.ndarray,
    topic_of: np.ndarray,
    n_steps: np.ndarray,
    step_proc: np.ndarray,
    step_index: np.ndarray,
    img_step: np.ndarray,
    copy_from: np.ndarray,
    *,
    procedure_spread: float,
    image_spread: float,
    step_drift: float,
    seed: int,
    progress: Progress,
) -> np.ndarray:
    """``(n_images, D)`` the created images' unit vectors (a memmap at ``path``): around their procedure's centre,
    which lies around its topic's; ``copy_from``: the image whose vector each duplicate copies (-1: none)."""
    n_procedures, n_topics, dim = len(topic_of), len(centres), centres.shape[1]
    n_images = len(img_step)
    img_proc = step_proc[img_step]
    created = np.memmap(path, dtype=np.float32, mode="w+", shape=(max(1, n_images), dim))
    proc_centres = centres[topic_of] + procedure_spread / np.sqrt(dim) * rng.standard_normal(
        (n_procedures, dim), dtype=np.float32
    )
    proc_centres /= np.linalg.norm(proc_centres, axis=1, keepdims=True)
    drift = None
    if step_drift:  # a stream of its own: stores without drift are unchanged
        directions = np.random.default_rng([seed, 0xD1F]).standard_normal((n_topics, dim), dtype=np.float32)
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        where = step_index[img_step] / np.maximum(n_steps[step_proc[img_step]] - 1, 1) - 0.5  # -0.5 .. 0.5
        drift = (step_drift * where)[:, None].astype(np.float32), directions[topic_of[img_proc]]
    progress.start("synthetic vectors", total=n_images)
    for start in range(0, n_images, _BLOCK):
        stop = min(n_images, start + _BLOCK)
        block = proc_centres[img_proc[start:stop]] + image_spread / np.sqrt(dim) * rng.standard_normal(
            (stop - start, dim), dtype=np.float32
        )
        if drift is not None:
            block += drift[0][start:stop] * drift[1][start:stop]
        created[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
        progress.advance(stop - start)
    for target in np.flatnonzero(copy_from >= 0).tolist():
        created[target] = created[copy_from[target]]
    return created


def _owners(row_ids: list[str], row_procs: list[str]) -> dict[str, str]:
    """Each image id's owner: the embedding holds one row per image id (sorted by id, as `procbench embed` files
    them), filed under the smallest procedure id that uses it."""
    owner: dict[str, str] = {}
    for image, pid in zip(row_ids, row_procs, strict=True):
        if image not in owner or pid < owner[image]:
            owner[image] = pid
    return owner
