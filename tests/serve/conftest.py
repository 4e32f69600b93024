"""A real uvicorn server on 127.0.0.1 (in a thread of the test process), driven with httpx."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="LOUD SKIP: memlab[serve] (fastapi) is not installed: pip install -e '.[serve]'")
pytest.importorskip("uvicorn", reason="LOUD SKIP: uvicorn is not installed: pip install -e '.[serve]'")

from memlab.app import Memlab, open_memlab  # noqa: E402
from memlab.config import Settings  # noqa: E402
from memlab.serve import ApiKeys, create_app  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402
from memlab.testing import FakeEmbedder, ScriptedJudge  # noqa: E402

LiveServer = ThreadedServer


def birthday_judge() -> ScriptedJudge:
    """Contradiction (0.97) between two different birthday dates; anything else is consistent."""

    def score(a: str, b: str) -> float:
        return 0.97 if "compleanno" in a and "compleanno" in b and a != b else 0.0

    return ScriptedJudge(score)


#: No chat model unless a test sets one: the default (a local model when one is installed) is not what these test.
NO_LLM = Settings(llm_backend="none")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Memlab]:
    lab = open_memlab(tmp_path / "serve.db", embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM)
    yield lab
    lab.close()


@pytest.fixture
def server(lab: Memlab) -> Iterator[LiveServer]:
    live = LiveServer(create_app(lab)).start()
    yield live
    live.stop()


#: seconds a test client waits for the real server: generous, because a loaded 2-core CI machine (make eval and the
#: tests side by side) once took over httpx's default 5 s to build the first /openapi.json schema
TIMEOUT = 120.0


def key_client(server: LiveServer, lab: Memlab, user: str) -> httpx.Client:
    """An httpx client authenticated with a new key of ``user``."""
    key = ApiKeys(lab.store.db).add(user)
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT)


def read_sse(c: httpx.Client, body: dict[str, Any]) -> tuple[list[tuple[str, Any]], str]:
    """POST /v1/chat and read the event stream: ``[(event, data)]`` and the raw text."""
    events: list[tuple[str, Any]] = []
    raw: list[str] = []
    with c.stream("POST", "/v1/chat", json=body) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in r.iter_lines():
            raw.append(line)
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event is not None:
                events.append((event, json.loads(line.split(":", 1)[1].strip())))
                event = None
    return events, "\n".join(raw)


@pytest.fixture
def client_for(server: LiveServer, lab: Memlab) -> Iterator[Callable[[str], httpx.Client]]:
    """``client_for("alice")``: an httpx client authenticated as a new key of that user."""
    clients: list[httpx.Client] = []

    def make(user: str) -> httpx.Client:
        clients.append(key_client(server, lab, user))
        return clients[-1]

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def minilm_server(tmp_path: Path, minilm: Any) -> Iterator[tuple[LiveServer, Memlab]]:
    """The same server over the real packaged MiniLM embedder (semantic chat search needs real vectors)."""
    lab = open_memlab(tmp_path / "minilm.db", embedder=minilm, judge=birthday_judge(), settings=NO_LLM)
    live = LiveServer(create_app(lab)).start()
    yield live, lab
    live.stop()
    lab.close()


def wait_healthy(proc: Any, base: str, timeout: float = 240.0) -> None:
    """Wait until the ``memlab serve`` process ``proc`` answers ``GET /health`` with 200 (fail with its stderr when it
    exits or ``timeout`` seconds pass)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"memlab serve did not become healthy: {proc.communicate()[1][-3000:]}")
        time.sleep(0.5)
