"""No MCP tool can resolve, dismiss or change a notification: a tool may list them, only the user decides (issue 41).

Over a real WebSocket MCP server on loopback with the official SDK client: the memory server lists no such tool, every
user-only name (``resolve``, ``dismiss``, ``undo`` ...) answers an error result that says why, and listing
notifications leaves them exactly as they were.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from memlab.app import Memlab
from memlab.mcp.servers import USER_ONLY_TOOLS, datetime_tools, memory_tools
from memlab.mcp.transport import websocket_client
from memlab.serve.auth import ApiKeys
from memlab.serve.runner import ThreadedServer


def _ws_url(server: ThreadedServer) -> str:
    return server.url.replace("http://", "ws://") + "/mcp"


def test_no_mcp_tool_can_change_a_notification_and_listing_changes_nothing(
        lab: Memlab, memory_server: ThreadedServer) -> None:
    key = ApiKeys(lab.store.db).add("alice")
    note = lab.notifications.create("todo", "high", "Rinnovare il passaporto", "alice")
    before = lab.notifications.get(note.id, user_id="alice")
    offered = {t.name for t in memory_tools(lab, "alice")} | {t.name for t in datetime_tools()}
    assert not offered & USER_ONLY_TOOLS

    async def main() -> tuple[list[str], list[Any], Any]:
        async with Client(websocket_client(_ws_url(memory_server), token=key), mode="legacy") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            refused = [await c.call_tool(name, {"id": note.id, "choice": "done"}) for name in sorted(USER_ONLY_TOOLS)]
            listed = await c.call_tool("notifications_list", {})
            return names, refused, listed

    names, refused, listed = anyio.run(main)
    assert not set(names) & USER_ONLY_TOOLS
    assert all(r.is_error for r in refused)
    assert all(r.content[0].text.startswith("Refused: only the user can resolve") for r in refused)
    assert not listed.is_error and listed.structured_content["notifications"][0]["id"] == note.id
    after = lab.notifications.get(note.id, user_id="alice")
    assert after == before  # same status, read_at, resolved_at, choice: listing is not reading
    assert [e.event for e in lab.notifications.events(note.id, user_id="alice")] == ["created"]
