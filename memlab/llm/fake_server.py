"""A real HTTP server on loopback that speaks the Ollama and OpenAI wire formats with scripted answers.

For tests, notebooks and demos without a model: it binds ``127.0.0.1`` on a free port, serves from a
daemon thread, records every request it receives (so a test can check what the official client sent),
and plays queued :class:`Answer` objects per path (status, body or streamed lines, a delay to provoke a
timeout). Nothing here touches the network beyond loopback.

Example:
    >>> from memlab.llm import OllamaLLM
    >>> with FakeLLMServer() as srv:
    ...     srv.queue("/api/chat", ollama_answer("Ciao!", thinking="greet back"))
    ...     OllamaLLM(model="m", base_url=srv.url).chat([{"role": "user", "content": "ciao"}])
    'Ciao!'
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Answer",
    "FakeLLMServer",
    "ollama_answer",
    "ollama_tags",
    "ollama_tool_calls",
    "openai_answer",
    "openai_models",
    "openai_stream",
    "openai_tool_calls",
    "tool_messages",
]


@dataclass
class Answer:
    """One scripted HTTP answer.

    Attributes:
        status: HTTP status.
        body: the whole body (ignored when ``lines`` is set).
        lines: body pieces written and flushed one by one (NDJSON or server-sent events).
        delay_s: sleep before answering (longer than the client timeout = a timeout).
        content_type: the Content-Type header.
    """

    status: int = 200
    body: bytes = b""
    lines: list[bytes] = field(default_factory=list)
    delay_s: float = 0.0
    content_type: str = "application/json"


def _chunks(text: str, n: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def ollama_answer(
    content: str = "",
    *,
    thinking: str = "",
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "fake",
    pieces: int = 3,
) -> Answer:
    """A streamed ``/api/chat`` answer (NDJSON): thinking chunks, content chunks, then ``done: true``."""
    ts = "2026-01-01T00:00:00Z"
    objs: list[dict[str, Any]] = []
    for t in _chunks(thinking, pieces):
        objs.append({"model": model, "created_at": ts, "message": {"role": "assistant", "content": "", "thinking": t},
                     "done": False})
    for c in _chunks(content, pieces):
        objs.append({"model": model, "created_at": ts, "message": {"role": "assistant", "content": c}, "done": False})
    if tool_calls:
        objs.append({"model": model, "created_at": ts,
                     "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}, "done": False})
    objs.append({"model": model, "created_at": ts, "message": {"role": "assistant", "content": ""}, "done": True,
                 "done_reason": "stop", "total_duration": 1, "eval_count": len(objs)})
    return Answer(lines=[json.dumps(o).encode() + b"\n" for o in objs], content_type="application/x-ndjson")


def ollama_tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "", thinking: str = "",
                      model: str = "fake") -> Answer:
    """A streamed ``/api/chat`` answer requesting the given ``(name, arguments)`` tool calls, in order.

    Example:
        >>> from memlab.llm import OllamaLLM
        >>> with FakeLLMServer() as srv:
        ...     srv.queue("/api/chat", ollama_tool_calls(("memory.search", {"query": "compleanno"})))
        ...     res = OllamaLLM(model="m", base_url=srv.url).complete([{"role": "user", "content": "ciao"}])
        >>> [(c.name, dict(c.arguments)) for c in res.tool_calls]
        [('memory.search', {'query': 'compleanno'})]
    """
    tool_calls = [{"function": {"name": name, "arguments": dict(args)}} for name, args in calls]
    return ollama_answer(content, thinking=thinking, tool_calls=tool_calls, model=model)


def openai_tool_calls(*calls: tuple[str, dict[str, Any]], content: str | None = None, model: str = "fake") -> Answer:
    """A non-streamed ``/v1/chat/completions`` answer requesting the given ``(name, arguments)`` tool calls."""
    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
                  for i, (name, args) in enumerate(calls)]
    return openai_answer(content, tool_calls=tool_calls, model=model, finish_reason="tool_calls")


def tool_messages(body: Any) -> list[dict[str, Any]]:
    """The ``role: tool`` messages of a chat request body (what a scripted responder reads tool results from), each
    content read back from its ``<tool_result>`` data block (:mod:`memlab.prompting`) as a model would read it."""
    from memlab.prompting import parse_data

    msgs = body.get("messages", []) if isinstance(body, dict) else []
    out = []
    for m in msgs:
        if isinstance(m, dict) and m.get("role") == "tool":
            texts = parse_data(str(m.get("content", "")), kind="tool_result")
            out.append({**m, "content": texts[0]} if len(texts) == 1 else m)
    return out


def ollama_tags(*models: str) -> Answer:
    """A ``/api/tags`` answer listing ``models``."""
    data = {"models": [{"name": m, "model": m, "modified_at": "2026-01-01T00:00:00Z", "size": 1, "digest": "0",
                        "details": {"format": "gguf", "family": "llama"}} for m in models]}
    return Answer(body=json.dumps(data).encode())


def openai_answer(
    content: str | None = "",
    *,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str = "fake",
    finish_reason: str = "stop",
) -> Answer:
    """A non-streamed ``/v1/chat/completions`` answer."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    if tool_calls:
        msg["tool_calls"] = tool_calls
    data = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    return Answer(body=json.dumps(data).encode())


def openai_stream(content: str, *, reasoning: str = "", model: str = "fake", pieces: int = 3,
                  tool_calls: list[tuple[str, dict[str, Any]]] | None = None) -> Answer:
    """A streamed ``/v1/chat/completions`` answer (server-sent events ending with ``[DONE]``); ``tool_calls``
    (``(name, arguments)`` pairs) stream as deltas, each call's arguments split across two chunks."""
    def ev(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    lines = [ev({"role": "assistant", "reasoning_content": r}) for r in _chunks(reasoning, pieces)]
    lines += [ev({"content": c}) for c in _chunks(content, pieces)]
    for i, (name, args) in enumerate(tool_calls or ()):
        raw = json.dumps(args, ensure_ascii=False)
        half = len(raw) // 2
        lines.append(ev({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                         "function": {"name": name, "arguments": raw[:half]}}]}))
        lines.append(ev({"tool_calls": [{"index": i, "function": {"arguments": raw[half:]}}]}))
    lines += [ev({}, "tool_calls" if tool_calls else "stop"), b"data: [DONE]\n\n"]
    return Answer(lines=lines, content_type="text/event-stream")


def openai_models(*models: str) -> Answer:
    """A ``/v1/models`` answer listing ``models``."""
    data = {"object": "list", "data": [{"id": m, "object": "model", "created": 1, "owned_by": "memlab"} for m in models]}
    return Answer(body=json.dumps(data).encode())


class FakeLLMServer:
    """A threaded HTTP server on ``127.0.0.1`` (free port) playing queued answers per path.

    Queued answers are played first; when a path's queue is empty, a responder set with :meth:`respond`
    (``request JSON body -> Answer``) answers, so a script can depend on what the client sent (e.g. answer
    with the tool result it received). Otherwise the path answers 404. Use as a context manager, or call
    :meth:`close`.

    Attributes:
        url: ``http://127.0.0.1:<port>`` (add ``/v1`` for OpenAI clients).
        requests: ``(method, path, parsed JSON body)`` of every request, in arrival order.
    """

    def __init__(self) -> None:
        self.answers: dict[str, deque[Answer]] = defaultdict(deque)
        self.responders: dict[str, Callable[[Any], Answer]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the headers and the body are two writes; with Nagle's algorithm the body of every answer
            # after a connection's first waited for the client's delayed ACK (~40 ms on Linux)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except (json.JSONDecodeError, UnicodeDecodeError):
                    body = raw
                path = self.path.split("?")[0]
                with owner._lock:
                    owner.requests.append((self.command, path, body))
                    queue = owner.answers.get(path)
                    responder = owner.responders.get(path)
                    ans = queue.popleft() if queue else None
                if ans is None:
                    try:
                        ans = responder(body) if responder is not None else None
                    except Exception as exc:  # noqa: BLE001 - a broken script answers 500, like a broken server
                        ans = Answer(500, json.dumps({"error": f"responder failed: {exc}"}).encode())
                if ans is None:
                    ans = Answer(404, b'{"error": "no scripted answer"}')
                if ans.delay_s:
                    time.sleep(ans.delay_s)
                payload = b"".join(ans.lines) if ans.lines else ans.body
                try:
                    self.send_response(ans.status)
                    self.send_header("Content-Type", ans.content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    for piece in ans.lines or [ans.body]:
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return

            do_GET = _handle
            do_POST = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="memlab-fake-llm", daemon=True)
        self._thread.start()

    def queue(self, path: str, *answers: Answer) -> None:
        """Append answers for ``path`` (played in order, one per request)."""
        with self._lock:
            self.answers[path].extend(answers)

    def respond(self, path: str, responder: Callable[[Any], Answer]) -> None:
        """Answer ``path`` with ``responder(request JSON body)`` whenever its queue is empty."""
        with self._lock:
            self.responders[path] = responder

    def posted(self, path: str) -> list[Any]:
        """JSON bodies POSTed to ``path``, in order."""
        return [b for m, p, b in self.requests if m == "POST" and p == path]

    def close(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
