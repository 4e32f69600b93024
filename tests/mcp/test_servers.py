"""memlab's MCP servers through a real SDK client: over a real WebSocket on loopback and over stdio (subprocess)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from memlab.app import Memlab
from memlab.mcp import create_mcp_app, websocket_client
from memlab.serve.auth import ApiKeys
from memlab.serve.runner import ThreadedServer


def ws_url(server: ThreadedServer) -> str:
    return server.url.replace("http://", "ws://") + "/mcp"


def payload(result: Any) -> Any:
    """The JSON a memlab tool returned (its text content)."""
    assert result.content and result.content[0].type == "text"
    return json.loads(result.content[0].text)


def run(coro_fn: Any) -> Any:
    return anyio.run(coro_fn)


def test_health_lists_the_tools(memory_server: ThreadedServer) -> None:
    r = httpx.get(memory_server.url + "/health", timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["server"] == "memory" and body["path"] == "/mcp"
    assert body["tools"] == ["search", "add", "history", "notifications_list"]


def test_memory_tools_over_websocket(memory_server: ThreadedServer, lab: Memlab) -> None:
    key = ApiKeys(lab.store.db).add("alice")

    async def main() -> dict[str, Any]:
        async with Client(websocket_client(ws_url(memory_server), token=key), mode="legacy") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            schema = {t.name: t.input_schema for t in (await c.list_tools()).tools}["search"]
            added = payload(await c.call_tool("add", {"text": "Il mio compleanno è il 12 luglio", "key": "birthday",
                                                      "value": "12 luglio"}))
            newer = payload(await c.call_tool("add", {"text": "Il mio compleanno è il 13 luglio", "key": "birthday",
                                                      "value": "13 luglio"}))
            found = payload(await c.call_tool("search", {"query": "compleanno", "k": 3}))
            hist = payload(await c.call_tool("history", {"id": added["memory"]["id"]}))
            notes = payload(await c.call_tool("notifications_list", {}))
            return {"names": names, "schema": schema, "added": added, "newer": newer, "found": found, "hist": hist,
                    "notes": notes}

    out = run(main)
    assert out["names"] == ["search", "add", "history", "notifications_list"]
    assert out["schema"]["required"] == ["query"] and out["schema"]["properties"]["k"]["maximum"] == 50
    assert out["added"]["memory"]["text"] == "Il mio compleanno è il 12 luglio"
    assert [m["text"] for m in out["found"]["memories"]] == ["Il mio compleanno è il 13 luglio"]
    assert [m["version"] for m in out["hist"]["versions"]] == [1, 2]
    assert out["hist"]["versions"][0]["is_active"] is False
    assert out["notes"] == {"count": 0, "notifications": []}
    # the memory really is in alice's store, written through MCP
    assert [m.text for m in lab.store.list("alice")] == ["Il mio compleanno è il 13 luglio"]


def test_user_isolation_over_websocket(memory_server: ThreadedServer, lab: Memlab) -> None:
    lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
    bob_item = lab.store.add("bob", "Il mio compleanno è il 3 marzo", key="birthday")
    alice_key, bob_key = ApiKeys(lab.store.db).add("alice"), ApiKeys(lab.store.db).add("bob")

    async def session(key: str) -> tuple[Any, Any, Any]:
        async with Client(websocket_client(ws_url(memory_server), token=key), mode="legacy") as c:
            found = payload(await c.call_tool("search", {"query": "compleanno", "k": 50, "include_inactive": True}))
            other = await c.call_tool("history", {"id": bob_item.id})
            extra = await c.call_tool("search", {"query": "compleanno", "user_id": "bob"})
            return found, other, extra

    async def main() -> Any:
        return await session(alice_key), await session(bob_key)

    (a_found, a_other, a_extra), (b_found, b_other, _) = run(main)
    assert [m["text"] for m in a_found["memories"]] == ["Il mio compleanno è il 12 luglio"]
    assert [m["text"] for m in b_found["memories"]] == ["Il mio compleanno è il 3 marzo"]
    # bob's id from alice's connection: the same "not found" as an id that does not exist
    assert a_other.is_error and "NotFoundError" in a_other.content[0].text and "3 marzo" not in a_other.content[0].text
    assert not b_other.is_error
    # a user argument cannot be smuggled in: the schema forbids extra fields
    assert a_extra.is_error and "user_id" in a_extra.content[0].text


def test_bad_keys_are_refused_before_the_socket_opens(memory_server: ThreadedServer, lab: Memlab) -> None:
    from websockets.exceptions import InvalidStatus

    async def connect(token: str | None) -> None:
        async with Client(websocket_client(ws_url(memory_server), token=token), mode="legacy") as c:
            await c.list_tools()

    for token in (None, "mlk_not-a-key", "garbage"):
        with pytest.raises(Exception) as info:  # noqa: PT011 - the SDK wraps the handshake error in a group
            run(lambda t=token: connect(t))
        leaves = info.value.exceptions if isinstance(info.value, BaseExceptionGroup) else [info.value]
        flat: list[BaseException] = []
        while leaves:
            e = leaves.pop()
            if isinstance(e, BaseExceptionGroup):
                leaves.extend(e.exceptions)
            else:
                flat.append(e)
        assert any(isinstance(e, InvalidStatus) and e.response.status_code == 403 for e in flat), flat


def test_bad_arguments_are_error_results_not_crashes(memory_server: ThreadedServer, lab: Memlab) -> None:
    key = ApiKeys(lab.store.db).add("alice")

    async def main() -> list[Any]:
        async with Client(websocket_client(ws_url(memory_server), token=key), mode="legacy") as c:
            out = [
                await c.call_tool("search", {}),                        # missing required argument
                await c.call_tool("search", {"query": "x", "k": 0}),    # out of range
                await c.call_tool("search", {"query": 42}),             # wrong type
                await c.call_tool("history", {"id": 999_999}),          # unknown id -> NotFoundError
                await c.call_tool("resolve", {"id": 1, "choice": "A"}), # only the user may resolve
                await c.call_tool("nope", {}),                          # unknown tool
            ]
            # the connection still works after all of that
            out.append(await c.call_tool("add", {"text": "Abito a Roma"}))
            return out

    results = run(main)
    assert [r.is_error for r in results] == [True] * 6 + [False]
    texts = [r.content[0].text for r in results]
    assert "query: Field required" in texts[0]
    assert "k: Input should be greater than or equal to 1" in texts[1]
    assert "NotFoundError" in texts[3] and texts[4].startswith("Refused: only the user can resolve")
    assert "Unknown tool 'nope'" in texts[5]


def test_datetime_server_needs_no_key() -> None:

    with ThreadedServer(create_mcp_app("datetime")) as live:
        async def main() -> tuple[Any, Any]:
            async with Client(websocket_client(ws_url(live))) as c:  # default mode: auto (discover, then fallback)
                ok = await c.call_tool("now", {"timezone": "Europe/Rome"})
                bad = await c.call_tool("now", {"timezone": "Mars/Olympus"})
                return ok, bad

        ok, bad = run(main)
    now = payload(ok)
    assert now["timezone"] == "Europe/Rome" and now["utc_offset"] in ("+0100", "+0200")
    assert bad.is_error and "Unknown timezone 'Mars/Olympus'" in bad.content[0].text


@pytest.mark.model
def test_memory_server_over_stdio_subprocess(tmp_path: Path, minilm: Any) -> None:
    """``memlab mcp serve memory --transport stdio --user alice`` as a subprocess, driven by the SDK's stdio client."""
    from memlab.app import open_memlab

    db = tmp_path / "stdio.db"
    lab = open_memlab(db, embedder=minilm, checks=False)
    lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
    lab.store.add("bob", "Il mio compleanno è il 3 marzo", key="birthday")
    lab.close()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlab.cli.main", "mcp", "serve", "memory", "--transport", "stdio", "--db", str(db),
              "--user", "alice", "--no-checks", "--embedder", "minilm"],
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
    )

    async def main() -> tuple[list[str], Any, Any]:
        async with Client(params, mode="legacy") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            found = await c.call_tool("search", {"query": "Quando è il mio compleanno?", "k": 5})
            bad = await c.call_tool("search", {"query": ""})
            return names, found, bad

    names, found, bad = run(main)
    assert names == ["search", "add", "history", "notifications_list"]
    assert [m["text"] for m in payload(found)["memories"]] == ["Il mio compleanno è il 12 luglio"]
    assert bad.is_error and "query" in bad.content[0].text


def test_semantic_server_over_websocket(lab: Memlab, tmp_path: Path) -> None:
    """``vector.query`` over chunks ingested into the embedded Qdrant: per-user, tag filters, bad arguments."""
    pytest.importorskip("qdrant_client", reason="LOUD SKIP: memlab[ingest] (qdrant-client) is not installed")
    from memlab.ingest import ChunkStore
    from memlab.testing import FakeEmbedder

    chunks = ChunkStore(path=tmp_path / "qdrant", embedder=FakeEmbedder(dim=32, bag_of_words=True))
    chunks.ingest_text("alice", "# Gatto\n\nIl mio gatto si chiama Miao.", fmt="markdown", source="gatto.md",
                       tags=["casa"])
    chunks.ingest_text("alice", "Riunione con Marco lunedì.", source="lavoro.txt", tags=["lavoro"])
    chunks.ingest_text("bob", "Il mio gatto si chiama Fuffi.", source="gatto.md", tags=["casa"])
    keys = ApiKeys(lab.store.db)
    alice = keys.add("alice")
    try:
        with ThreadedServer(create_mcp_app("semantic", chunks=chunks, keys=keys)) as live:
            health = httpx.get(live.url + "/health", timeout=30).json()

            async def main() -> tuple[Any, Any, Any]:
                async with Client(websocket_client(ws_url(live), token=alice), mode="legacy") as c:
                    cat = await c.call_tool("query", {"query": "gatto", "k": 5})
                    work = await c.call_tool("query", {"query": "gatto", "k": 5, "tags": ["lavoro"]})
                    bad = await c.call_tool("query", {"query": "gatto", "tags": "casa"})
                    return cat, work, bad

            cat, work, bad = run(main)
    finally:
        chunks.close()
    assert health["tools"] == ["query"] and health["checks"]["vectors"]["chunks"] == 3
    texts = [h["text"] for h in payload(cat)["chunks"]]
    assert texts[0] == "Il mio gatto si chiama Miao." and "Il mio gatto si chiama Fuffi." not in texts
    assert payload(cat)["chunks"][0]["heading"] == "Gatto" and payload(cat)["chunks"][0]["tags"] == ["casa"]
    assert [h["source"] for h in payload(work)["chunks"]] == ["lavoro.txt"]
    assert bad.is_error and "tags" in bad.content[0].text


def test_seed_wire_format_by_hand_and_malformed_frames() -> None:
    """The seed's JSON-RPC 2.0 over the WebSocket, written by hand: initialize, tools/list, tools/call, ping; a
    frame that is not JSON is answered with a JSON-RPC parse error (-32700) and the connection keeps working."""
    from websockets.asyncio.client import connect

    with ThreadedServer(create_mcp_app("datetime")) as live:
        async def main() -> tuple[str | None, list[dict[str, Any]]]:
            async with connect(ws_url(live), subprotocols=["mcp"]) as ws:  # type: ignore[list-item]
                out = []
                await ws.send("not json {")
                parse_error = json.loads(await ws.recv())
                assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
                for msg in (
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "by-hand", "version": "0"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "now", "arguments": {"timezone": "Asia/Shanghai"}}},
                    {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"},
                ):
                    await ws.send(json.dumps(msg))
                    if "id" in msg:
                        out.append(json.loads(await ws.recv()))
                return ws.subprotocol, out

        subprotocol, (init, listed, called, ping, unknown) = run(main)
    assert subprotocol == "mcp"
    assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "memlab-datetime"
    assert "tools" in init["result"]["capabilities"]
    assert [t["name"] for t in listed["result"]["tools"]] == ["now"]
    assert listed["result"]["tools"][0]["inputSchema"]["properties"]["timezone"]["default"] == "UTC"
    assert called["result"]["isError"] is False
    assert json.loads(called["result"]["content"][0]["text"])["utc_offset"] == "+0800"
    assert called["result"]["structuredContent"]["timezone"] == "Asia/Shanghai"
    assert ping == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert unknown["id"] == 5 and unknown["error"]["code"] == -32601
