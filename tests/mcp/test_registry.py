"""MCPRegistry over real servers: discovery and routing across two WebSocket servers, retries with reconnect."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from memlab.app import Memlab
from memlab.errors import BackendError, InvalidInputError, NotFoundError
from memlab.mcp import MCPRegistry, ServerSpec, create_mcp_app, make_server
from memlab.serve.auth import ApiKeys
from memlab.serve.runner import ThreadedServer


def ws(server: ThreadedServer) -> str:
    return server.url.replace("http://", "ws://") + "/mcp"


def test_discovery_and_routing_across_two_servers(memory_server: ThreadedServer, lab: Memlab) -> None:
    lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
    key = ApiKeys(lab.store.db).add("alice")
    with ThreadedServer(create_mcp_app("datetime")) as clock:
        async def main() -> dict[str, Any]:
            reg = MCPRegistry({"memory": ServerSpec(ws(memory_server), token=key), "time": ws(clock)})
            async with reg:
                tools = reg.to_llm_tools()
                openai_names = [t["function"]["name"] for t in reg.to_llm_tools(sep="__")]
                found = await reg.call_tool("memory.search", {"query": "compleanno"})
                via_alias = await reg.call_tool("memory__search", {"query": "compleanno"})
                now = await reg.call_tool("time.now", {"timezone": "Asia/Shanghai"})
                bad = await reg.call_tool("time.now", {"timezone": 3})
                refreshed = await reg.refresh_tools()
                with pytest.raises(NotFoundError, match="Valid tools: memory.add"):
                    await reg.call_tool("web.search", {"query": "x"})
            return {"tools": tools, "openai": openai_names, "found": found, "alias": via_alias, "now": now,
                    "bad": bad, "refreshed": refreshed}

        out = anyio.run(main)
    names = [t["function"]["name"] for t in out["tools"]]
    assert names == ["memory.search", "memory.add", "memory.history", "memory.notifications_list",
                     "time.now"]
    assert out["openai"][0] == "memory__search" and out["openai"][-1] == "time__now"
    search = out["tools"][0]
    assert search["type"] == "function" and search["function"]["parameters"]["required"] == ["query"]
    assert "memories" in search["function"]["description"]
    assert out["found"].data["memories"][0]["text"] == "Il mio compleanno è il 12 luglio"
    assert out["alias"].data == out["found"].data
    assert out["now"].data["timezone"] == "Asia/Shanghai" and out["now"].data["utc_offset"] == "+0800"
    assert out["bad"].is_error and "timezone" in out["bad"].text
    assert sorted(out["refreshed"]) == sorted(names)


@pytest.mark.subprocess
def test_in_process_and_stdio_targets_mix(lab: Memlab) -> None:
    """An SDK server object (in-process) and a subprocess over stdio behind one registry."""
    import sys

    from mcp import StdioServerParameters

    lab.store.add("alice", "Abito a Roma", key="home_city")
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "memlab.cli.main", "mcp", "serve", "datetime",
                                                                "--transport", "stdio"])

    async def main() -> Any:
        async with MCPRegistry({"memory": make_server("memory", user_id="alice", lab=lab), "time": stdio}) as reg:
            return sorted(reg.tools), await reg.call_tool("time.now", {"timezone": "Europe/Rome"}), \
                await reg.call_tool("memory.search", {"query": "Roma"})

    names, now, found = anyio.run(main)
    assert names == ["memory.add", "memory.history", "memory.notifications_list", "memory.search",
                     "time.now"]
    assert not now.is_error and now.data["timezone"] == "Europe/Rome" and now.attempts == 1
    assert found.data["memories"][0]["text"] == "Abito a Roma"


def test_call_retries_and_reconnects_after_the_server_restarts() -> None:
    first = ThreadedServer(create_mcp_app("datetime")).start()
    port = int(first.url.rsplit(":", 1)[1])
    url = ws(first)

    async def main() -> tuple[Any, BaseException | None, Any]:
        reg = MCPRegistry({"time": url}, retries=2, backoff_s=0.05, timeout_s=5)
        async with reg:
            ok = await reg.call_tool("time.now", {})
            first.stop()
            failed: BaseException | None = None
            try:
                await reg.call_tool("time.now", {})
            except BackendError as exc:
                failed = exc
            second = ThreadedServer(create_mcp_app("datetime"), port=port).start()
            try:
                again = await reg.call_tool("time.now", {"timezone": "Europe/Rome"})
            finally:
                await reg.aclose()
                second.stop()
        return ok, failed, again

    ok, failed, again = anyio.run(main)
    assert ok.attempts == 1 and not ok.is_error
    assert failed is not None and "after 3 attempt(s)" in str(failed)
    assert not again.is_error and again.data["timezone"] == "Europe/Rome"


def test_registry_validates_its_configuration() -> None:
    with pytest.raises(InvalidInputError):
        MCPRegistry({})
    with pytest.raises(InvalidInputError, match="namespaces"):
        MCPRegistry({"bad name": "ws://127.0.0.1:1/mcp"})

    async def main() -> None:
        async with MCPRegistry({"x": "http://127.0.0.1:1/mcp"}):
            pass

    with pytest.raises(InvalidInputError, match="ws://"):
        anyio.run(main)

    async def unreachable() -> None:
        async with MCPRegistry({"x": "ws://127.0.0.1:1/mcp"}):
            pass

    with pytest.raises(BackendError, match="Cannot connect to MCP server 'x'"):
        anyio.run(unreachable)
