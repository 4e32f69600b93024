"""The strict single-tool stepper over real LLM clients talking to the fake LLM server on loopback, with tools
served by real MCP servers (in-process SDK connections) over a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from memlab.app import Memlab
from memlab.errors import InvalidInputError
from memlab.llm import OllamaLLM, OpenAICompatLLM
from memlab.llm.fake_server import (
    FakeLLMServer,
    ollama_answer,
    ollama_tool_calls,
    openai_answer,
    openai_tool_calls,
    tool_messages,
)
from memlab.mcp import AGENT_SYSTEM_PROMPT, MCPRegistry, make_server, run_turn_stepper


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def servers(lab: Memlab, user: str = "alice") -> dict[str, Any]:
    return {"memory": make_server("memory", user_id=user, lab=lab), "time": make_server("datetime")}


def turn(llm: Any, lab: Memlab, message: str, **kw: Any) -> Any:
    async def main() -> Any:
        async with MCPRegistry(servers(lab)) as reg:
            return await run_turn_stepper(llm, reg, message, **kw)

    return anyio.run(main)


def test_two_tool_calls_in_one_reply_run_only_the_first(fake: FakeLLMServer, lab: Memlab) -> None:
    fake.queue("/api/chat",
               ollama_tool_calls(("time.now", {"timezone": "Europe/Rome"}), ("memory.add", {"text": "Abito a Roma"})),
               ollama_answer("Sono le dieci."))
    llm = OllamaLLM(model="m", base_url=fake.url, max_retries=0)
    res = turn(llm, lab, "Che ore sono? E ricorda che abito a Roma.")

    assert res.content == "Sono le dieci." and res.stopped == "answer"
    assert res.tool_calls == ["time.now"]
    assert res.steps[0].dropped == ("memory.add",) and not res.steps[0].is_error
    assert json.loads(res.steps[0].result)["timezone"] == "Europe/Rome"
    assert res.steps[1].corrected and not res.steps[0].corrected
    # the dropped call really did not run: nothing was stored
    assert lab.store.count("alice") == 0
    first, second = fake.posted("/api/chat")
    assert first["messages"][0] == {"role": "system", "content": AGENT_SYSTEM_PROMPT}
    assert [t["function"]["name"] for t in first["tools"]][-1] == "time.now"
    # the next model call carries: the one call that ran, its result, then the corrective system prompt
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "system"]
    assert [c["function"]["name"] for c in second["messages"][2]["tool_calls"]] == ["time.now"]
    assert tool_messages(second)[0]["tool_name"] == "time.now"
    corrective = second["messages"][-1]["content"]
    assert "only the first one (time.now) was run" in corrective and "memory.add" in corrective
    assert "at most ONE tool" in corrective


def test_memory_search_answer_with_thinking_hidden(fake: FakeLLMServer, lab: Memlab) -> None:
    lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
    lab.store.add("bob", "Il mio compleanno è il 3 marzo", key="birthday")

    def answer(body: Any) -> Any:  # answers from the tool result the client really sent
        found = json.loads(tool_messages(body)[-1]["content"])["memories"]
        return ollama_answer(f"Il tuo compleanno è il {found[0]['text'].rsplit(' è il ', 1)[1]}.",
                             thinking="the tool found the birthday")

    fake.queue("/api/chat", ollama_tool_calls(("memory.search", {"query": "compleanno"}), thinking="search first"))
    fake.respond("/api/chat", answer)
    tokens: list[str] = []
    llm = OllamaLLM(model="m", base_url=fake.url, max_retries=0)
    res = turn(llm, lab, "Quando è il mio compleanno?", on_token=tokens.append)
    assert res.content == "Il tuo compleanno è il 12 luglio."
    assert "".join(tokens) == res.content  # only visible text streams
    assert res.steps[0].thinking == "search first" and res.steps[1].thinking == "the tool found the birthday"
    assert "3 marzo" not in json.dumps([m for m in res.messages])  # bob's memory never reached alice's turn


def test_openai_compatible_backend_gets_tool_call_ids(fake: FakeLLMServer, lab: Memlab) -> None:
    lab.store.add("alice", "Mi chiamo Giulia", key="name")
    fake.queue("/v1/chat/completions",
               openai_tool_calls(("memory__search", {"query": "nome"}), ("time__now", {})),
               openai_answer("Ti chiami Giulia."))
    llm = OpenAICompatLLM(model="m", base_url=fake.url + "/v1", max_retries=0)
    res = turn(llm, lab, "Come mi chiamo?", tool_name_sep="__")
    assert res.content == "Ti chiami Giulia." and res.tool_calls == ["memory__search"]
    assert res.steps[0].dropped == ("time__now",)
    first, second = fake.posted("/v1/chat/completions")
    assert {t["function"]["name"] for t in first["tools"]} >= {"memory__search", "time__now"}
    call = second["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_0" and json.loads(call["function"]["arguments"]) == {"query": "nome"}
    assert second["messages"][3]["tool_call_id"] == "call_0"
    assert "Giulia" in second["messages"][3]["content"]
    assert second["messages"][-1]["role"] == "system" and "time__now" in second["messages"][-1]["content"]


def test_tool_errors_go_back_to_the_model_and_the_budget_forces_an_answer(fake: FakeLLMServer, lab: Memlab) -> None:
    fake.queue("/api/chat",
               ollama_tool_calls(("web.search", {"query": "meteo"})),         # not a tool here
               ollama_tool_calls(("memory.search", {"k": 3})),                # missing argument
               ollama_answer("Non lo so."))
    llm = OllamaLLM(model="m", base_url=fake.url, max_retries=0)
    res = turn(llm, lab, "Che tempo fa?", max_steps=2)
    assert res.stopped == "max_steps" and res.content == "Non lo so."
    assert [s.is_error for s in res.steps] == [True, True, False]
    assert "Unknown tool 'web.search'" in res.steps[0].result
    assert "query: Field required" in res.steps[1].result
    last = fake.posted("/api/chat")[-1]
    assert not last.get("tools") and "Answer the user now" in last["messages"][-1]["content"]


def test_bad_stepper_input(lab: Memlab) -> None:
    from memlab.llm import ScriptedLLM

    with pytest.raises(InvalidInputError):
        turn(ScriptedLLM(["x"]), lab, "   ")
    with pytest.raises(InvalidInputError, match="max_steps"):
        turn(ScriptedLLM(["x"]), lab, "ciao", max_steps=0)


def test_openai_streaming_tool_call_deltas(fake: FakeLLMServer, lab: Memlab) -> None:
    """Streamed tool calls (arguments split across deltas) go through the same single-tool rule."""
    from memlab.llm.fake_server import openai_stream

    lab.store.add("alice", "Abito a Roma", key="home_city")
    fake.queue("/v1/chat/completions",
               openai_stream("", tool_calls=[("memory__search", {"query": "dove abito"}), ("time__now", {})]),
               openai_stream("Abiti a Roma."))
    tokens: list[str] = []
    llm = OpenAICompatLLM(model="m", base_url=fake.url + "/v1", max_retries=0, stream=True)
    res = turn(llm, lab, "Dove abito?", tool_name_sep="__", on_token=tokens.append)
    assert res.content == "Abiti a Roma." and "".join(tokens) == "Abiti a Roma."
    assert res.tool_calls == ["memory__search"] and res.steps[0].dropped == ("time__now",)
    assert json.loads(res.steps[0].result)["memories"][0]["text"] == "Abito a Roma"


def test_enable_tools_false_is_one_plain_call(fake: FakeLLMServer) -> None:
    fake.queue("/api/chat", ollama_answer("Ciao!"))
    llm = OllamaLLM(model="m", base_url=fake.url, max_retries=0)
    res = anyio.run(lambda: run_turn_stepper(llm, None, "ciao", enable_tools=False))
    assert res.content == "Ciao!" and res.stopped == "answer" and len(res.steps) == 1
    assert not fake.posted("/api/chat")[0].get("tools")
