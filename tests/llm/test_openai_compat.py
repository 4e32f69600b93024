"""OpenAICompatLLM against a real loopback HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from memlab.errors import InvalidInputError
from memlab.llm import (
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    OpenAICompatLLM,
    StructuredOutputError,
)
from memlab.llm.fake_server import Answer, FakeLLMServer, openai_answer, openai_models, openai_stream
from memlab.protocols import LLM

MSG = [{"role": "system", "content": "Sei un assistente."}, {"role": "user", "content": "Come mi chiamo?"}]
PATH = "/v1/chat/completions"


class Person(BaseModel):
    name: str
    age: int


def _llm(server: FakeLLMServer, **kw: object) -> OpenAICompatLLM:
    return OpenAICompatLLM(model="qwen", base_url=server.url + "/v1", backoff_s=0.0, **kw)  # type: ignore[arg-type]


def test_implements_protocol(server: FakeLLMServer) -> None:
    assert isinstance(_llm(server), LLM)


def test_chat_and_reasoning_hidden(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_answer("Ti chiami Li Si.", reasoning="L'utente ha detto 'anzi chiamami Li Si'."))
    res = _llm(server).complete(MSG)
    assert res.content == "Ti chiami Li Si." and "anzi" in res.thinking
    body = server.posted(PATH)[0]
    assert body["model"] == "qwen" and body["messages"] == MSG and "response_format" not in body


def test_inline_think_tags(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_answer("<think>hmm</think>\nLi Si"))
    assert _llm(server).chat(MSG) == "Li Si"


def test_streaming(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_stream("Ti chiami Li Si.", reasoning="pensiero"))
    tokens: list[str] = []
    res = _llm(server, stream=True).complete(MSG, on_token=tokens.append)
    assert res.content == "Ti chiami Li Si." and res.thinking == "pensiero"
    assert "".join(tokens) == res.content and res.n_chunks > 3
    assert server.posted(PATH)[0]["stream"] is True


def test_tool_calls_parsed_and_bad_arguments_flagged(server: FakeLLMServer) -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "set_name", "arguments": '{"name": "Li Si"}'}},
        {"id": "c2", "type": "function", "function": {"name": "set_city", "arguments": "{broken"}},
    ]
    server.queue(PATH, openai_answer(None, tool_calls=calls, finish_reason="tool_calls"))
    res = _llm(server).complete(MSG, tools=[{"type": "function", "function": {"name": "set_name"}}])
    assert res.tool_calls[0].name == "set_name" and dict(res.tool_calls[0].arguments) == {"name": "Li Si"}
    assert res.tool_calls[1].arguments_error is not None and res.finish_reason == "tool_calls"


def test_structured_uses_json_schema_response_format(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_answer(json.dumps({"name": "Li Si", "age": 30})))
    assert _llm(server).structured(MSG, Person) == Person(name="Li Si", age=30)
    rf = server.posted(PATH)[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "Person"
    assert set(rf["json_schema"]["schema"]["properties"]) == {"name", "age"}


def test_structured_json_object_mode_puts_schema_in_prompt(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_answer('```json\n{"name": "Li Si", "age": 30}\n```'))
    assert _llm(server, json_mode="json_object").structured(MSG, Person).age == 30
    body = server.posted(PATH)[0]
    assert body["response_format"] == {"type": "json_object"} and "JSON schema" in body["messages"][-1]["content"]


def test_structured_malformed_json(server: FakeLLMServer) -> None:
    server.queue(PATH, openai_answer("Certo! Ecco: name=Li Si"))
    with pytest.raises(StructuredOutputError) as ei:
        _llm(server).structured(MSG, Person)
    assert ei.value.raw == "Certo! Ecco: name=Li Si"


def test_malformed_wire_json(server: FakeLLMServer) -> None:
    server.queue(PATH, Answer(body=b'{"id": "x", "choices": [ {'))
    with pytest.raises(LLMResponseError):
        _llm(server, max_retries=0).chat(MSG)


def test_500_retried_then_ok(server: FakeLLMServer) -> None:
    server.queue(PATH, Answer(500, b'{"error": {"message": "boom"}}'), openai_answer("ok"))
    res = _llm(server, max_retries=2).complete(MSG)
    assert res.content == "ok" and res.attempts == 2 and len(server.posted(PATH)) == 2


def test_500_clear_error(server: FakeLLMServer) -> None:
    server.queue(PATH, *[Answer(500, b'{"error": {"message": "boom"}}')] * 2)
    with pytest.raises(LLMHTTPError) as ei:
        _llm(server, max_retries=1).chat(MSG)
    assert ei.value.status_code == 500 and "HTTP 500" in str(ei.value)


def test_401_not_retried(server: FakeLLMServer) -> None:
    server.queue(PATH, Answer(401, b'{"error": {"message": "bad key"}}'), openai_answer("never"))
    with pytest.raises(LLMHTTPError) as ei:
        _llm(server, max_retries=3).chat(MSG)
    assert ei.value.status_code == 401 and len(server.posted(PATH)) == 1


def test_429_retried(server: FakeLLMServer) -> None:
    server.queue(PATH, Answer(429, b'{"error": {"message": "slow down"}}'), openai_answer("ok"))
    assert _llm(server, max_retries=1).chat(MSG) == "ok"


def test_timeout(server: FakeLLMServer) -> None:
    server.queue(PATH, Answer(delay_s=1.0, body=openai_answer("late").body),
                 Answer(delay_s=1.0, body=openai_answer("late").body))
    with pytest.raises(LLMTimeoutError):
        _llm(server, timeout_s=0.2, max_retries=1).chat(MSG)
    assert len(server.posted(PATH)) == 2


def test_health(server: FakeLLMServer) -> None:
    server.queue("/v1/models", openai_models("qwen", "llama"), openai_models("llama"), Answer(503, b"{}"))
    llm = _llm(server)
    assert llm.health().ok
    h = llm.health()
    assert not h.ok and "does not list" in h.detail
    assert not llm.health().ok


def test_api_key_never_in_params(server: FakeLLMServer) -> None:
    llm = _llm(server, api_key="sk-secret")
    assert "sk-secret" not in json.dumps(llm.get_params())


def test_bad_json_mode() -> None:
    with pytest.raises(InvalidInputError, match="json_mode"):
        OpenAICompatLLM(model="m", json_mode="yaml")  # type: ignore[arg-type]
