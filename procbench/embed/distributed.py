"""``embed`` on Ray: the chunks to encode go through a Ray Data actor pool, one encoder per actor.

The driver (``embed_store``) decides what to encode exactly as a local run does: the field's rows, minus the
contents already embedded, cut into the same chunks (:func:`~procbench.embed.encoding.chunk_rows`). Those
chunks become a Ray Dataset (``ray.data.from_arrow``: one row per chunk, its number and its inputs, in the
object store); ``map_batches`` hands one chunk at a time to an actor, which calls the same
:func:`~procbench.embed.encoding.encode_inputs` as the local run with the same batch size. The encoder itself
is the one the driver loaded, shipped once through the object store, so every actor holds identical weights
(in the form :meth:`~procbench.embed.base.Encoder.for_workers` gives: a plain mean-pooling sentence-transformers
text model goes as the transformers-only :class:`~procbench.embed.pooled.MeanPooledTextEncoder`, which computes
the same bytes and spares each actor the seconds of importing sentence-transformers). Each chunk therefore
reaches the model as the same batches as in a local run and comes back as the same float32 bytes; the driver
writes them to the resumable part cache as they arrive (in any order: vectors are found by content hash),
then assembles the embedding file and builds the index as before.

The actors are not handed the store's Parquet to read and batch themselves: the batches decide the bytes
(a sentence-transformers batch is padded to its longest text), so they are cut once, by the driver, the
way a local run cuts them. The work list is small next to the vectors (texts, or image ids). A table in the
part layout (``STORE/steps/part-*.parquet``) is read by the driver the same way, its parts in order, so the
chunks and the bytes do not depend on the layout; a job that only needs rows in parallel can hand Ray Data
``store.table_files(name)`` instead.

With GPUs in the cluster each actor asks for one (``num_gpus=1``) and moves its encoder there (vectors
then differ in the last bits from a CPU run: the GPU kernels are other kernels). Image actors read the
stored images from ``STORE/images/``, so on a multi-node cluster the store must be on a shared file
system (NFS, a mounted bucket).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from procbench.embed.base import Encoder
from procbench.embed.encoding import encode_inputs
from procbench.engine import Engine
from procbench.store import Store

__all__ = ["EncodeActor", "encode_on_ray"]


class EncodeActor:
    """A Ray Data actor: one encoder, loaded once, encoding one chunk per call.

    Args:
        encoder: the driver's loaded encoder (or an object reference to it).
        store_root: the store, for the bytes of stored images.
        batch_size: the encoder batch size (the same as the local run's).
    """

    def __init__(self, encoder: Any, store_root: str, batch_size: int) -> None:
        import ray

        if isinstance(encoder, ray.ObjectRef):
            encoder = ray.get(encoder)
        if ray.get_gpu_ids():
            encoder.to_device("cuda")
        self.encoder: Encoder = encoder
        self.store = Store(Path(store_root))
        self.batch_size = batch_size

    def __call__(self, batch: pa.Table) -> dict[str, np.ndarray]:
        chunks: list[np.ndarray] = []
        positions: list[np.ndarray] = []
        vectors: list[np.ndarray] = []
        errors: list[str] = []
        for chunk, inputs in zip(batch["chunk"].to_pylist(), batch["inputs"].to_pylist(), strict=True):
            found, why = encode_inputs(self.store, self.encoder, inputs, batch_size=self.batch_size)
            full = np.zeros((len(inputs), self.encoder.dim), dtype=np.float32)
            full[[e is None for e in why]] = found
            chunks.append(np.full(len(inputs), chunk, dtype=np.int64))
            positions.append(np.arange(len(inputs), dtype=np.int64))
            vectors.append(full)
            errors.extend("" if e is None else e for e in why)
        return {
            "chunk": np.concatenate(chunks),
            "position": np.concatenate(positions),
            "vector": np.concatenate(vectors),
            "error": np.array(errors, dtype=object),
        }


def _work_blocks(inputs: list[list[str]]) -> list[pa.Table]:
    """One Arrow block per chunk (its ``chunk`` number and ``inputs``): the unit Ray Data hands an actor."""
    return [
        pa.table({"chunk": pa.array([i], pa.int64()), "inputs": pa.array([chunk], pa.list_(pa.string()))})
        for i, chunk in enumerate(inputs)
    ]


def encode_on_ray(
    store: Store,
    encoder: Encoder,
    payload: pa.ChunkedArray,
    shards: Sequence[np.ndarray],
    *,
    batch_size: int,
    engine: Engine,
) -> Iterator[tuple[np.ndarray, list[str], np.ndarray, list[str | None]]]:
    """Encode ``shards`` (arrays of rows of the field table) on the Ray runtime this process is connected to.

    Yields ``(rows, inputs, vectors of the readable inputs, per row None or why it was skipped)`` as actor
    results arrive; a shard may come back in several pieces.
    """
    from procbench.engine.raycluster import cluster_workers, import_ray

    ray = import_ray()
    inputs = [payload.take(pa.array(rows)).to_pylist() for rows in shards]
    gpu = ray.cluster_resources().get("GPU", 0) > 0
    resources = {"num_gpus": 1} if gpu else {"num_cpus": 1}
    workers = min(cluster_workers(ray, engine, gpu=gpu), len(shards))
    # The work list goes into the object store as blocks (no read tasks that actors holding every CPU of a
    # small cluster could starve); each actor call encodes one chunk.
    dataset = ray.data.from_arrow(_work_blocks(inputs)).map_batches(
        EncodeActor,
        fn_constructor_kwargs={
            "encoder": ray.put(encoder.for_workers()),
            "store_root": str(store.root.resolve()),
            "batch_size": batch_size,
        },
        batch_size=1,
        batch_format="pyarrow",
        # A chunk is seconds of work: an actor takes the next one only when it is free, so the last chunks go
        # to whichever actor is idle instead of waiting in a busy actor's queue.
        compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
        **resources,
    )
    for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
        for chunk in np.unique(batch["chunk"]):
            mine = batch["chunk"] == chunk
            positions = batch["position"][mine]
            why = [str(e) or None for e in batch["error"][mine]]
            ok = np.array([e is None for e in why], dtype=bool)
            chunk_inputs = inputs[int(chunk)]
            yield (
                shards[int(chunk)][positions],
                [chunk_inputs[p] for p in positions],
                np.ascontiguousarray(batch["vector"][mine][ok], dtype=np.float32),
                why,
            )
