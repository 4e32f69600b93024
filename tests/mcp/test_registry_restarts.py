"""MCPRegistry with several servers: any one of them may restart, and the next call reconnects it."""

from __future__ import annotations

from typing import Any

import anyio

from memlab.mcp import MCPRegistry, create_mcp_app
from memlab.serve.runner import ThreadedServer


def ws(server: ThreadedServer) -> str:
    return server.url.replace("http://", "ws://") + "/mcp"


def test_each_of_three_servers_can_restart_and_the_next_call_reconnects_it() -> None:
    """Three real datetime servers on loopback; each is stopped and started again on its port in turn (the first
    connected, the middle one, the last): every call after a restart succeeds on a fresh connection, and the
    other two servers keep answering."""
    names = ("first", "second", "third")
    servers = {ns: ThreadedServer(create_mcp_app("datetime")).start() for ns in names}
    ports = {ns: int(s.url.rsplit(":", 1)[1]) for ns, s in servers.items()}
    urls = {ns: ws(s) for ns, s in servers.items()}

    async def main() -> list[tuple[str, str, Any]]:
        seen: list[tuple[str, str, Any]] = []
        async with MCPRegistry(urls, retries=3, backoff_s=0.05, timeout_s=5) as reg:
            for ns in names:
                assert not (await reg.call_tool(f"{ns}.now", {})).is_error
            for restarted in names:
                servers[restarted].stop()
                servers[restarted] = ThreadedServer(create_mcp_app("datetime"), port=ports[restarted]).start()
                for ns in names:
                    res = await reg.call_tool(f"{ns}.now", {"timezone": "Europe/Rome"})
                    seen.append((restarted, ns, res))
        return seen

    try:
        seen = anyio.run(main)
    finally:
        for s in servers.values():
            s.stop()
    assert len(seen) == 9
    for restarted, ns, res in seen:
        assert not res.is_error and res.data["timezone"] == "Europe/Rome", (restarted, ns, res)
        if ns == restarted:
            assert res.attempts >= 2  # the dead connection failed once, then a new one answered
