"""Only the user resolves a notification (seed 000: always ask the user, never decide alone).

A real uvicorn server on loopback runs ``/v1/chat`` with a real OpenAI-compatible fake model server on loopback whose
replies are tool calls that try to resolve the user's pending contradiction; the notification stays open, nothing
in the store changes, and the model reads an error result. Issue 41 ("the user's consent").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp", reason="LOUD SKIP: memlab[mcp] (the mcp SDK) is not installed")
pytest.importorskip("sse_starlette", reason="LOUD SKIP: sse-starlette is not installed (comes with memlab[mcp])")
pytest.importorskip("openai", reason="LOUD SKIP: the openai client is not installed (memlab[llm])")

from memlab.app import Memlab  # noqa: E402
from memlab.llm import OpenAICompatLLM  # noqa: E402
from memlab.llm.fake_server import FakeLLMServer, openai_answer, openai_tool_calls, tool_messages  # noqa: E402
from memlab.serve import create_app  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402

from .conftest import key_client, read_sse  # noqa: E402

COMPLETIONS = "/v1/chat/completions"


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def _pending_contradiction(c: httpx.Client) -> dict[str, Any]:
    for text in ("Il mio compleanno è il 12 luglio", "Il mio compleanno è il 15 agosto"):
        assert c.post("/api/memory", json={"text": text, "wait": True}).status_code == 201
    high = c.get("/api/notifications").json()["by_urgency"]["high"]
    assert len(high) == 1 and high[0]["type"] == "contradiction"
    return high[0]  # type: ignore[no-any-return]


def test_a_model_tool_call_cannot_resolve_a_pending_notification(lab: Memlab, fake: FakeLLMServer) -> None:
    app = create_app(lab)
    app.state.chat_llm = OpenAICompatLLM(model="fake", base_url=fake.url + "/v1", max_retries=0)
    server = ThreadedServer(app).start()
    alice = key_client(server, lab, "alice")
    try:
        note = _pending_contradiction(alice)
        memories_before = alice.get("/api/memory", params={"all": True}).json()
        # the model tries every spelling: the dotted name, the OpenAI-safe alias, then answers
        fake.queue(COMPLETIONS,
                   openai_tool_calls(("memory.resolve", {"id": note["id"], "choice": "A"})),
                   openai_tool_calls(("memory__resolve", {"id": note["id"], "choice": "B", "note": "decido io"})),
                   openai_answer("Fatto."))
        events = read_sse(alice, {"message": "Che ore sono?", "max_steps": 4})[0]

        tools = [d for e, d in events if e == "tool"]
        assert [t["name"] for t in tools] == ["memory.resolve", "memory__resolve"]
        assert all(t["is_error"] for t in tools)  # both refused
        offered = {t["function"]["name"] for t in fake.posted(COMPLETIONS)[0]["tools"]}
        assert "memory.notifications_list" in offered and not any("resolve" in n for n in offered)
        for body in fake.posted(COMPLETIONS)[1:]:  # what the model read back: an error, not a resolution
            result = tool_messages(body)[-1]["content"]
            assert "Unknown tool" in result or result.startswith("Refused"), result
        assert events[-1][0] == "done" and events[-1][1]["content"] == "Fatto."

        after = lab.notifications.get(note["id"], user_id="alice")
        assert after.is_open and after.choice is None and after.resolved_at is None
        assert "resolved" not in [ev.event for ev in lab.notifications.events(note["id"], user_id="alice")]
        assert alice.get("/api/memory", params={"all": True}).json() == memories_before  # nothing applied
        assert alice.get("/api/notifications").json()["count"] >= 1
        # the user's own choice, through the API with the user's key, still works
        assert alice.post(f"/api/notifications/{note['id']}/resolve", json={"choice": "A"}).status_code == 200
    finally:
        alice.close()
        server.stop()
