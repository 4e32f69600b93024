"""Real MCP servers on loopback (uvicorn in a thread of the test process) and real SDK clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="LOUD SKIP: memlab[mcp] (the mcp SDK) is not installed: pip install -e '.[mcp]'")
pytest.importorskip("uvicorn", reason="LOUD SKIP: uvicorn is not installed: pip install -e '.[serve]'")
pytest.importorskip("websockets", reason="LOUD SKIP: websockets is not installed (uvicorn's WebSocket support)")

from memlab.app import Memlab, open_memlab  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402
from memlab.testing import FakeEmbedder, ScriptedJudge  # noqa: E402


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Memlab]:
    lab = open_memlab(tmp_path / "mcp.db", embedder=FakeEmbedder(dim=64, bag_of_words=True), judge=ScriptedJudge(),
                      checks=False)
    yield lab
    lab.close()


@pytest.fixture
def memory_server(lab: Memlab) -> Iterator[ThreadedServer]:
    from memlab.mcp import create_mcp_app

    live = ThreadedServer(create_mcp_app("memory", lab=lab)).start()
    yield live
    live.stop()
