from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _offline_and_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test runs offline: no model hubs, and sockets may only connect to loopback."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("PROCBENCH_STORE", str(tmp_path / "default-store"))
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


def make_record(slug: str, n_steps: int = 5, **extra: Any) -> dict[str, Any]:
    """An import record (DESIGN §4) with distinct, recognisable step texts."""
    record: dict[str, Any] = {
        "source": "test",
        "id": slug,
        "title": f"How to {slug.replace('-', ' ')}",
        "category": ["Hobbies and Crafts", "Woodworking"],
        "url": f"https://example.org/{slug}",
        "license": "CC0-1.0",
        "steps": [{"title": f"{slug} step {i}.", "text": f"Do part {i} of {slug} carefully."} for i in range(n_steps)],
    }
    record.update(extra)
    return record


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Write records (dicts are JSON-encoded, strings written as they are) one per line."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
