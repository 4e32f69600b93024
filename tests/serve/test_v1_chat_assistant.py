"""POST /v1/chat runs inside the memory assistant's turn: a pending HIGH contradiction is streamed before the model's
reply, the message's facts are stored and checked, an answer ("A") resolves it without a model call; extra MCP
servers come from settings (``MEMLAB_MCP_SERVERS``). Real servers on loopback, the fake Ollama server as the model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="LOUD SKIP: memlab[mcp] (the mcp SDK) is not installed")
pytest.importorskip("sse_starlette", reason="LOUD SKIP: sse-starlette is not installed (comes with memlab[mcp])")

from memlab.app import Memlab, open_memlab  # noqa: E402
from memlab.config import Settings  # noqa: E402
from memlab.llm import OllamaLLM  # noqa: E402
from memlab.llm.fake_server import FakeLLMServer, ollama_answer, ollama_tool_calls, tool_messages  # noqa: E402
from memlab.mcp import create_mcp_app  # noqa: E402
from memlab.serve import create_app  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402
from memlab.testing import FakeEmbedder  # noqa: E402

from .conftest import birthday_judge, key_client, read_sse  # noqa: E402


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def _serve(lab: Memlab, fake: FakeLLMServer) -> ThreadedServer:
    app = create_app(lab)
    app.state.chat_llm = OllamaLLM(model="fake", base_url=fake.url, max_retries=0)
    return ThreadedServer(app).start()


def test_v1_chat_shows_a_pending_contradiction_first_and_stores_and_checks_the_turns_memories(
        lab: Memlab, fake: FakeLLMServer) -> None:
    fake.respond("/api/chat", lambda body: ollama_answer("Va bene."))
    server = _serve(lab, fake)
    alice = key_client(server, lab, "alice")
    try:
        first = read_sse(alice, {"message": "Il mio compleanno è il 12 luglio"})[0]
        second = read_sse(alice, {"message": "Il mio compleanno è il 15 agosto"})[0]
        for events in (first, second):  # each message's fact is stored, and checked before `done`
            done = events[-1][1]
            assert events[-1][0] == "done" and done["memory_ids"] and done["job_ids"] and done["checked"] is True
        assert second[-1][1]["notifications_count"] == 1  # the check of the second birthday found the conflict
        assert not second[-1][1]["high_urgency_notifications"]  # ... shown at the next interaction, as in the seed

        third = read_sse(alice, {"message": "Che ore sono?", "enable_tools": False})[0]
        tokens = [d["text"] for e, d in third if e == "token"]
        assert tokens[0].startswith("[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto "
                                    "«Il mio compleanno è il 12 luglio», ma ora mi dici «Il mio compleanno è il 15 "
                                    "agosto».")
        assert "[⚠️ CONTRADDIZIONE RILEVATA]\nHo notato una contraddizione nella memoria:" in tokens[0]
        assert "".join(tokens[1:]) == "Va bene."  # the model's reply comes after the block
        done = third[-1][1]
        assert done["content"] == "Va bene." and done["response"] == "".join(tokens)
        assert len(done["high_urgency_notifications"]) == 1 and done["kind"] == "chat"
        system = fake.posted("/api/chat")[-1]["messages"][0]["content"]
        assert "## MEMORIE DELL'UTENTE" in system and "15 agosto" in system  # the model knows the user's memories

        n_model_calls = len(fake.posted("/api/chat"))
        answer = read_sse(alice, {"message": "A"})[0]  # keeps the first: applied by the assistant, no model call
        assert answer[-1][1]["kind"] == "resolution" and answer[-1][1]["tool_calls"] == []
        assert answer[0][1]["text"].startswith("Ok, tengo la prima informazione")
        assert len(fake.posted("/api/chat")) == n_model_calls
        active = [m["text"] for m in alice.get("/api/memory").json()]
        assert len(active) == 1 and "12 luglio" in active[0]
        # the notification was shown once: /api/turn does not show it again
        assert "CONTRADDIZIONE" not in alice.post("/api/turn", json={"message": "Grazie"}).json()["response"]
    finally:
        alice.close()
        server.stop()


def test_v1_chat_offers_the_tools_of_mcp_servers_listed_in_settings(tmp_path: Path, fake: FakeLLMServer) -> None:
    """``MEMLAB_MCP_SERVERS`` adds servers to the registry of /v1/chat: a real datetime server on loopback under the
    namespace ``clock``, and one that is down (``gone``), left out without failing the turn."""
    with ThreadedServer(create_mcp_app("datetime")) as clock:
        url = clock.url.replace("http://", "ws://") + "/mcp"
        settings = Settings(llm_backend="none", mcp_servers={"clock": url, "gone": "ws://127.0.0.1:9/mcp"})
        lab = open_memlab(tmp_path / "x.db", embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=settings)
        server = _serve(lab, fake)
        alice = key_client(server, lab, "alice")
        try:
            fake.queue("/api/chat", ollama_tool_calls(("clock.now", {"timezone": "Asia/Tokyo"})))
            fake.respond("/api/chat", lambda body: ollama_answer(
                "A Tokyo sono le " + json.loads(tool_messages(body)[-1]["content"])["time"][:5] + "."))
            events = read_sse(alice, {"message": "Che ore sono a Tokyo?"})[0]
        finally:
            alice.close()
            server.stop()
            lab.close()
    tool = next(d for e, d in events if e == "tool")
    assert tool["name"] == "clock.now" and not tool["is_error"]
    assert events[-1][0] == "done" and events[-1][1]["content"].startswith("A Tokyo sono le ")
    offered = {t["function"]["name"] for t in fake.posted("/api/chat")[0]["tools"]}
    assert {"clock.now", "memory.search", "time.now"} <= offered and not any(n.startswith("gone.") for n in offered)
