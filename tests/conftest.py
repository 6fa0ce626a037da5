"""Fixtures every test module can use (shared helper functions live in ``helpers.py``)."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# OpenBLAS on one thread (numpy's and scipy's copies read this when they load, after this file: pytest loads no
# numpy before it). The suite's matrices are small and its machines shared: two OpenBLAS threads busy-wait for each
# other on busy cores. The hashed text encoder's fit (a TruncatedSVD, in most stores the tests build) took 22 s for
# three fits with the default threads and 2.4 s with one, at load 4.5; test_embed_store, test_generate_samplers and
# test_generate_next_action took 127.6 s wall (123.7 s CPU) and 57.7 s (47.5 s CPU), at load 4. Subprocesses
# inherit it; a test that sets its own threads (torch, threadpoolctl) still does.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# A fast test over 20 s fails (tests/fast_budget.py); pytester runs that guard on a test file of its own.
pytest_plugins = ["fast_budget", "pytester"]


@pytest.fixture(autouse=True)
def _offline_and_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test runs offline: no model hubs, and sockets may only connect to loopback."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("PROCBENCH_STORE", str(tmp_path / "default-store"))
    # No progress lines on the captured stderr that tests assert on (tests of the lines set it themselves).
    monkeypatch.setenv("PROCBENCH_PROGRESS", "off")
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and self.family in (socket.AF_INET, socket.AF_INET6):
            try:
                loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise OSError(f"tests may not connect to {host}: only 127.0.0.1 is allowed")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture
def torch_one_thread() -> Iterator[None]:
    """torch on one thread for the test (modules of small torch models opt in with ``pytestmark``): on a shared
    two-core machine torch's two threads wait for each other (the embed workers' bytes test: 10.6 s with two
    threads, 1.4 s with one, at load 3.3). Not for every test: one OpenMP thread process-wide made a textual
    adversarial build 4x slower (13.5 -> 55.9 s, idle)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the bundled sample corpus and its images, ingested once per session: copy it before
    writing to it."""
    from procbench.corpus import write_sample
    from procbench.ingest import ingest_file

    root = tmp_path_factory.mktemp("ingested-sample")
    ingest_file(root / "store", write_sample(root / "src"))
    return root / "store"


@pytest.fixture(scope="session")
def sample_visual_sweeps(ingested_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The bundled sample with hashed ``step_title`` and colour-layout ``image`` embeddings, and every visual
    task's sweep (adversarial filtering demo-sized) and RecipeQA-style set, seed 3:
    ``(store, {TASK: result, "TASK/recipeqa": result})``. Built once per session (``test_generate_visual``,
    ``test_publish``): copy the store before writing to it."""
    import shutil

    from procbench.embed import embed_store
    from procbench.generate import Setting, generate
    from procbench.store import Store

    root = tmp_path_factory.mktemp("visual-sweeps") / "store"
    shutil.copytree(ingested_sample, root)
    embed_store(root, text_encoder="hashed", image_encoder="colour-layout", fields="step_title,image")
    store = Store.open(root)
    results = {}
    for task in ("visual-cloze", "visual-coherence", "visual-ordering"):
        results[task] = generate(store, task, sweep=True, seed=3, policy="demo")
        results[f"{task}/recipeqa"] = generate(store, task, Setting("recipeqa"), seed=3)
    return root, results


@pytest.fixture(scope="module")
def titled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample's procedures with hashed ``step_title``, ``step_text`` and ``procedure_title``
    embeddings (what textual ``needs-context`` reads), once per test module (the module may write into it)."""
    from procbench.corpus import load_sample
    from procbench.embed import embed_store
    from procbench.ingest import ingest_file

    from helpers import write_jsonl

    root = tmp_path_factory.mktemp("titled")
    store = root / "store"
    ingest_file(store, write_jsonl(root / "in.jsonl", load_sample()))
    embed_store(store, text_encoder="hashed", fields="step_title,step_text,procedure_title")
    return store
