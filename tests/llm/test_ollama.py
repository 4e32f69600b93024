"""OllamaLLM against a real loopback HTTP server speaking /api/chat (streaming NDJSON)."""

from __future__ import annotations

import json
import socket

import pytest
from pydantic import BaseModel

from memlab.errors import InvalidInputError, LLMError
from memlab.llm import (
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    OllamaLLM,
    StructuredOutputError,
)
from memlab.llm.fake_server import Answer, FakeLLMServer, ollama_answer, ollama_tags
from memlab.protocols import LLM

MSG = [{"role": "user", "content": "Ciao, come stai?"}]


class Person(BaseModel):
    name: str
    age: int


def _llm(server: FakeLLMServer, **kw: object) -> OllamaLLM:
    return OllamaLLM(model="llama3.2", base_url=server.url, backoff_s=0.0, **kw)  # type: ignore[arg-type]


def test_implements_protocol(server: FakeLLMServer) -> None:
    assert isinstance(_llm(server), LLM)


def test_streaming_reply_hides_thinking(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer("Sto bene, grazie!", thinking="The user greets me in Italian."))
    tokens: list[str] = []
    res = _llm(server).complete(MSG, on_token=tokens.append)
    assert res.content == "Sto bene, grazie!"
    assert res.thinking == "The user greets me in Italian."
    assert "".join(tokens) == "Sto bene, grazie!"  # thinking never streamed to the user
    assert res.n_chunks > 2 and res.finish_reason == "stop"
    body = server.posted("/api/chat")[0]
    assert body["stream"] is True and body["model"] == "llama3.2"
    assert body["messages"] == MSG


def test_chat_returns_text_only(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer("Risposta", thinking="segreto"))
    assert _llm(server).chat(MSG) == "Risposta"


def test_inline_think_tags_are_hidden(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer("<think>ragiono</think>Ecco la risposta"))
    res = _llm(server).complete(MSG)
    assert res.content == "Ecco la risposta" and res.thinking == "ragiono"


def test_tool_calls_are_parsed(server: FakeLLMServer) -> None:
    calls = [{"function": {"name": "get_weather", "arguments": {"city": "Roma"}}}]
    server.queue("/api/chat", ollama_answer("", tool_calls=calls))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    res = _llm(server).complete(MSG, tools=tools)
    assert [(c.name, dict(c.arguments)) for c in res.tool_calls] == [("get_weather", {"city": "Roma"})]
    assert res.finish_reason == "tool_calls"
    assert server.posted("/api/chat")[0]["tools"][0]["function"]["name"] == "get_weather"


def test_structured_sends_schema_as_format(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer(json.dumps({"name": "Li Si", "age": 30})))
    out = _llm(server).structured(MSG, Person)
    assert out == Person(name="Li Si", age=30)
    fmt = server.posted("/api/chat")[0]["format"]
    assert fmt["properties"].keys() == {"name", "age"}


def test_structured_malformed_json_raises_with_raw(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer('{"name": "Li Si", "age": '))
    with pytest.raises(StructuredOutputError) as ei:
        _llm(server).structured(MSG, Person)
    assert ei.value.raw == '{"name": "Li Si", "age": '
    assert "Invalid JSON" in ei.value.detail


def test_structured_invalid_schema_raises(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer(json.dumps({"name": "Li Si", "age": "trenta"})))
    with pytest.raises(StructuredOutputError, match="age"):
        _llm(server).structured(MSG, Person)


def test_malformed_stream_line(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(lines=[b'{"model": "m", "message": {"role": "assistant", "content": "a"}, "done": false}\n',
                                            b"{not json\n"], content_type="application/x-ndjson"))
    with pytest.raises(LLMResponseError, match="malformed"):
        _llm(server).chat(MSG)


def test_stream_cut_before_done(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(lines=[b'{"model": "m", "message": {"role": "assistant", "content": "a"}, "done": false}\n'],
                                     content_type="application/x-ndjson"))
    with pytest.raises(LLMResponseError, match="done=true"):
        _llm(server).chat(MSG)


def test_error_inside_stream(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(lines=[b'{"error": "model crashed"}\n'], content_type="application/x-ndjson"))
    with pytest.raises(LLMHTTPError, match="model crashed"):
        _llm(server, max_retries=0).chat(MSG)


def test_500_is_retried_then_succeeds(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(500, b'{"error": "overloaded"}'), Answer(500, b'{"error": "overloaded"}'),
                 ollama_answer("ok"))
    llm = _llm(server, max_retries=2)
    res = llm.complete(MSG)
    assert res.content == "ok" and res.attempts == 3 and llm.n_retries == 2
    assert len(server.posted("/api/chat")) == 3


def test_500_gives_clear_error_after_retries(server: FakeLLMServer) -> None:
    server.queue("/api/chat", *[Answer(500, b'{"error": "overloaded"}')] * 3)
    with pytest.raises(LLMHTTPError) as ei:
        _llm(server, max_retries=1).chat(MSG)
    assert ei.value.status_code == 500 and "overloaded" in str(ei.value)
    assert len(server.posted("/api/chat")) == 2


def test_404_model_not_found_is_not_retried(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(404, b'{"error": "model \\"nope\\" not found"}'), ollama_answer("never"))
    with pytest.raises(LLMHTTPError) as ei:
        _llm(server, max_retries=3).chat(MSG)
    assert ei.value.status_code == 404
    assert len(server.posted("/api/chat")) == 1


def test_timeout(server: FakeLLMServer) -> None:
    server.queue("/api/chat", Answer(delay_s=1.0, lines=ollama_answer("late").lines),
                 Answer(delay_s=1.0, lines=ollama_answer("late").lines))
    with pytest.raises(LLMTimeoutError, match="did not answer"):
        _llm(server, timeout_s=0.2, max_retries=1).chat(MSG)
    assert len(server.posted("/api/chat")) == 2


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OllamaLLM(model="m", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(LLMConnectionError):
        llm.chat(MSG)
    assert not llm.health().ok


def test_health(server: FakeLLMServer) -> None:
    server.queue("/api/tags", ollama_tags("llama3.2:latest", "qwen3:4b"), ollama_tags("qwen3:4b"),
                 Answer(500, b'{"error": "boom"}'))
    llm = _llm(server)
    h = llm.health()
    assert h.ok and "qwen3:4b" in h.models
    h = llm.health()
    assert not h.ok and "ollama pull llama3.2" in h.detail
    assert not llm.health().ok


@pytest.mark.parametrize(
    "messages",
    [[], "ciao", [{"role": "robot", "content": "x"}], [{"role": "user", "content": 3}], [3]],
    ids=["empty", "str", "bad-role", "bad-content", "not-dict"],
)
def test_bad_messages_send_nothing(server: FakeLLMServer, messages: object) -> None:
    with pytest.raises(InvalidInputError):
        _llm(server).chat(messages)  # type: ignore[arg-type]
    assert server.requests == []


def test_control_characters_are_stripped(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer("ok"))
    _llm(server).chat([{"role": "user", "content": "ciao\x00\x07 mondo"}])
    assert server.posted("/api/chat")[0]["messages"][0]["content"] == "ciao mondo"


@pytest.mark.parametrize("kw", [{"model": ""}, {"model": "m", "timeout_s": 0}, {"model": "m", "max_retries": -1},
                                {"model": "m", "base_url": "localhost:11434"}])
def test_bad_params(kw: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match="must be"):
        OllamaLLM(**kw)  # type: ignore[arg-type]


def test_every_error_is_an_llm_error() -> None:
    for cls in (LLMConnectionError, LLMResponseError, LLMTimeoutError):
        assert issubclass(cls, LLMError)
    assert issubclass(LLMHTTPError, LLMError) and issubclass(StructuredOutputError, LLMError)
