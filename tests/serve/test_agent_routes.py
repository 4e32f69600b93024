"""Seed 003 on `memlab serve`: POST /v1/chat streams an agent turn as SSE (the fake Ollama server asks for
memory.search, gets the user's birthday through the MCP memory server and answers with it), POST /v1/ingest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp", reason="LOUD SKIP: memlab[mcp] (the mcp SDK) is not installed")
pytest.importorskip("sse_starlette", reason="LOUD SKIP: sse-starlette is not installed (comes with memlab[mcp])")

from memlab.app import Memlab  # noqa: E402
from memlab.llm import OllamaLLM  # noqa: E402
from memlab.llm.fake_server import FakeLLMServer, ollama_answer, ollama_tool_calls, tool_messages  # noqa: E402
from memlab.serve import ApiKeys, create_app  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402

from .conftest import TIMEOUT  # noqa: E402
from .conftest import key_client as client  # noqa: E402
from .conftest import read_sse as sse  # noqa: E402


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def agent_server(lab: Memlab, fake: FakeLLMServer) -> Iterator[ThreadedServer]:
    app = create_app(lab)
    app.state.chat_llm = OllamaLLM(model="fake", base_url=fake.url, max_retries=0)
    live = ThreadedServer(app).start()
    yield live
    live.stop()


def core(done: dict[str, Any]) -> dict[str, Any]:
    """The seed's fields of a ``done`` event (memlab adds the assistant turn's own: response, notifications ...)."""
    return {k: done[k] for k in ("content", "tool_calls", "stopped")}


def answer_with_the_date(body: Any) -> Any:
    """The scripted model's second reply, built from the tool result the server really sent it."""
    memories = json.loads(tool_messages(body)[-1]["content"])["memories"]
    date = memories[0]["text"].rsplit(" è il ", 1)[1]
    return ollama_answer(f"Il tuo compleanno è il {date}.", thinking="SEGRETO: ho letto la memoria")


def test_chat_streams_the_birthday_found_with_memory_search(agent_server: ThreadedServer, lab: Memlab,
                                                            fake: FakeLLMServer) -> None:
    alice, bob = client(agent_server, lab, "alice"), client(agent_server, lab, "bob")
    stored = alice.post("/api/memory", json={"text": "Il mio compleanno è il 12 luglio", "key": "birthday"})
    assert stored.status_code == 201
    bob.post("/api/memory", json={"text": "Il mio compleanno è il 3 marzo", "key": "birthday"})
    fake.queue("/api/chat", ollama_tool_calls(("memory.search", {"query": "compleanno"}),
                                              thinking="SEGRETO: cerco nella memoria"))
    fake.respond("/api/chat", answer_with_the_date)

    events, raw = sse(alice, {"message": "Quando è il mio compleanno?"})

    kinds = [e for e, _ in events]
    assert kinds[0] == "tool" and kinds[-1] == "done" and "token" in kinds
    assert events[0][1] == {"name": "memory.search", "arguments": {"query": "compleanno"}, "is_error": False,
                            "dropped": []}
    streamed = "".join(d["text"] for e, d in events if e == "token")
    assert streamed == "Il tuo compleanno è il 12 luglio."
    assert core(events[-1][1]) == {"content": "Il tuo compleanno è il 12 luglio.", "tool_calls": ["memory.search"],
                                   "stopped": "answer"}
    assert "SEGRETO" not in raw  # thinking is logged, never streamed
    assert "3 marzo" not in raw  # bob's birthday never reaches alice
    # what the model saw: the agent prompt, the tools, and alice's memory only
    first, second = fake.posted("/api/chat")
    assert "memory.search" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "memory.search", "memory.add", "memory.history", "memory.notifications_list", "time.now"}
    assert "12 luglio" in tool_messages(second)[0]["content"] and "3 marzo" not in json.dumps(second)
    alice.close()
    bob.close()


def test_chat_needs_a_key_a_model_and_a_valid_body(agent_server: ThreadedServer, lab: Memlab, fake: FakeLLMServer,
                                                   server: ThreadedServer) -> None:
    assert httpx.post(agent_server.url + "/v1/chat", json={"message": "ciao"}, timeout=TIMEOUT).status_code == 401
    c = client(agent_server, lab, "alice")
    assert c.post("/v1/chat", json={"message": ""}).status_code == 422
    assert c.post("/v1/chat", json={"message": "ciao", "max_steps": 0}).status_code == 422
    assert c.post("/v1/chat", json={"message": "ciao", "user_id": "bob"}).status_code == 422
    # the plain `server` fixture has no chat model configured
    no_llm = client(server, lab, "alice")
    r = no_llm.post("/v1/chat", json={"message": "ciao"})
    assert r.status_code == 503 and "MEMLAB_LLM_BACKEND" in r.json()["detail"]
    assert r.json()["error"] == "BackendError"
    # a model failure ends the stream with an error event (the fake server answers 500)
    fake.respond("/api/chat", lambda body: 1 / 0)
    events, _ = sse(c, {"message": "ciao"})
    assert events[-1][0] == "error" and events[-1][1]["error"] == "LLMHTTPError"
    c.close()
    no_llm.close()


def test_ingest_then_vector_query_in_chat(agent_server: ThreadedServer, lab: Memlab, fake: FakeLLMServer) -> None:
    pytest.importorskip("qdrant_client", reason="LOUD SKIP: memlab[ingest] (qdrant-client) is not installed")
    alice, bob = client(agent_server, lab, "alice"), client(agent_server, lab, "bob")
    note = "# Gatto\n\nIl mio gatto si chiama Miao e mangia crocchette."
    r = alice.post("/v1/ingest", json={"content": note, "fmt": "markdown", "source": "gatto.md", "tags": ["casa"]})
    assert r.status_code == 201, r.text
    assert r.json()["ingested"] == {"source": "gatto.md", "fmt": "markdown", "title": "Gatto", "n_chunks": 1,
                                    "n_chars": len("Il mio gatto si chiama Miao e mangia crocchette."),
                                    "replaced": 0, "tags": ["casa"]}
    assert alice.post("/v1/ingest", json={"content": "x", "fmt": "pdf", "source": "a"}).status_code == 422

    def reply(body: Any) -> Any:
        chunks = json.loads(tool_messages(body)[-1]["content"])["chunks"]
        return ollama_answer(chunks[0]["text"] if chunks else "Non trovo niente.")

    for c, expected in ((alice, "Il mio gatto si chiama Miao e mangia crocchette."), (bob, "Non trovo niente.")):
        fake.queue("/api/chat", ollama_tool_calls(("vector.query", {"query": "gatto", "tags": ["casa"]})))
        fake.respond("/api/chat", reply)
        events, _ = sse(c, {"message": "Come si chiama il mio gatto?"})
        assert events[0][1]["name"] == "vector.query" and not events[0][1]["is_error"]
        assert events[-1][0] == "done"
        assert core(events[-1][1]) == {"content": expected, "tool_calls": ["vector.query"], "stopped": "answer"}
    alice.close()
    bob.close()


def test_memlab_serve_also_serves_the_mcp_servers(agent_server: ThreadedServer, lab: Memlab) -> None:
    """`ws://.../mcp` on the HTTP service: the key's user's memory server (same store as /api/memory)."""
    import anyio

    from memlab.mcp import MCPRegistry, ServerSpec

    alice_key = ApiKeys(lab.store.db).add("alice")
    lab.store.add("bob", "Il mio compleanno è il 3 marzo", key="birthday")
    c = client(agent_server, lab, "alice")
    c.post("/api/memory", json={"text": "Il mio compleanno è il 12 luglio", "key": "birthday"})
    c.post("/v1/ingest", json={"content": "Il mio gatto si chiama Miao.", "source": "gatto.txt"})
    base = agent_server.url.replace("http://", "ws://")

    async def main() -> Any:
        servers = {"memory": ServerSpec(base + "/mcp", token=alice_key), "time": base + "/mcp/datetime",
                   "vector": ServerSpec(base + "/mcp/semantic", token=alice_key)}
        async with MCPRegistry(servers) as reg:
            found = await reg.call_tool("memory.search", {"query": "compleanno", "k": 10})
            added = await reg.call_tool("memory.add", {"text": "Abito a Roma", "key": "home_city"})
            doc = await reg.call_tool("vector.query", {"query": "gatto"})
            now = await reg.call_tool("time.now", {})
            return sorted(reg.tools), found, added, doc, now

    names, found, added, doc, now = anyio.run(main)
    assert names == ["memory.add", "memory.history", "memory.notifications_list",
                     "memory.search", "time.now", "vector.query"]
    assert [m["text"] for m in found.data["memories"]] == ["Il mio compleanno è il 12 luglio"]
    assert not added.is_error
    listed = c.get("/api/memory").json()
    assert sorted(m["text"] for m in listed) == ["Abito a Roma", "Il mio compleanno è il 12 luglio"]
    assert doc.data["chunks"][0]["text"] == "Il mio gatto si chiama Miao." and now.data["timezone"] == "UTC"
    c.close()


def test_mcp_websocket_on_memlab_serve_needs_a_key(agent_server: ThreadedServer) -> None:
    import anyio
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    url = agent_server.url.replace("http://", "ws://") + "/mcp"

    async def attempt(headers: dict[str, str]) -> int:
        try:
            async with connect(url, additional_headers=headers):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    async def main() -> list[int]:
        return [await attempt({}), await attempt({"Authorization": "Bearer mlk_wrong"})]

    assert anyio.run(main) == [403, 403]


def test_chat_accepts_the_seeds_messages_form_and_enable_tools(agent_server: ThreadedServer, lab: Memlab,
                                                              fake: FakeLLMServer) -> None:
    c = client(agent_server, lab, "alice")
    fake.queue("/api/chat", ollama_answer("Ciao Giulia!"), ollama_answer("Certo."))
    seed_body = {"messages": [{"role": "user", "content": "Mi chiamo Giulia"},
                              {"role": "assistant", "content": "Piacere!"},
                              {"role": "user", "content": "Salutami"}], "enable_tools": False}
    events, _ = sse(c, seed_body)
    assert {e for e, _ in events[:-1]} == {"token"}
    assert "".join(d["text"] for _, d in events[:-1]) == "Ciao Giulia!"
    assert events[-1][0] == "done"
    assert core(events[-1][1]) == {"content": "Ciao Giulia!", "tool_calls": [], "stopped": "answer"}
    sent = fake.posted("/api/chat")[0]
    assert not sent.get("tools")  # enable_tools: false offers no tools
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert sent["messages"][-1]["content"] == "Salutami"
    events, _ = sse(c, {"messages": [{"role": "user", "content": "ok?"}]})  # tools on by default
    assert events[-1][1]["content"] == "Certo." and fake.posted("/api/chat")[1]["tools"]
    for bad in ({"message": "a", "messages": [{"role": "user", "content": "b"}]},
                {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
                {"messages": [{"role": "user", "content": "a"}], "history": [{"role": "user", "content": "b"}]},
                {}):
        assert c.post("/v1/chat", json=bad).status_code == 422, bad
    c.close()
