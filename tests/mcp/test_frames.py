"""Every MCP request gets an answer, on both transports: malformed frames get a JSON-RPC error, a lone surrogate in
a ``tools/call`` argument an error result; never silence (issue 41: the client hung).

Real servers: uvicorn on loopback for the WebSocket, ``memlab mcp serve ... --transport stdio`` as a subprocess;
every wait is bounded.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memlab.app import Memlab
from memlab.mcp import create_mcp_app
from memlab.serve.auth import ApiKeys
from memlab.serve.runner import ThreadedServer

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "frames", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

#: (frame as sent, expected id of the answer, expected error code or "isError" for an error result)
MALFORMED: list[tuple[str | bytes, Any, Any]] = [
    ("not json {", None, -32700),
    (b"\xff\xfe{}", None, -32700),  # not UTF-8
    ('{"jsonrpc": "2.0", "id": 20, "method": "ping", "params": {"x": NaN}}', None, -32700),
    ("[1, 2]", None, -32600),  # a batch
    ("42", None, -32600),
    ('{"jsonrpc": "1.0", "id": 21, "method": "ping"}', 21, -32600),
    ('{"id": 22}', 22, -32600),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": 23, "method": "ping", "params": 3}', 23, -32600),
    ('{"jsonrpc": "2.0", "id": 24, "method": "tools/call", "params": {"name": "now", '
     '"arguments": {"timezone": "Europe/Rome\\ud800"}}}', 24, "isError"),
    ('{"jsonrpc": "2.0", "id": 25, "method": "tools/call", "params": {"name": "\\udc00", "arguments": {}}}', 25,
     "isError"),
    ('{"jsonrpc": "2.0", "id": 26, "method": "tools/list", "params": {"cursor": "\\ud83d"}}', 26, -32602),
    ('{"jsonrpc": "2.0", "id": 27, "method": "tools/call"}', 27, -32602),  # the SDK's own check
    ("[" * 100_000 + "]" * 100_000, None, -32600),  # deeper than Python's recursion limit
]


def check_answer(answer: dict[str, Any], want_id: Any, want: Any) -> None:
    assert answer["jsonrpc"] == "2.0" and answer["id"] == want_id, answer
    if want == "isError":
        assert answer["result"]["isError"] is True
        assert "not valid Unicode text" in answer["result"]["content"][0]["text"]
    else:
        assert answer["error"]["code"] == want, answer


def test_websocket_answers_every_malformed_frame_and_keeps_working() -> None:
    from websockets.asyncio.client import connect

    with ThreadedServer(create_mcp_app("datetime")) as live:
        async def main() -> list[dict[str, Any]]:
            answers = []
            async with connect(live.url.replace("http://", "ws://") + "/mcp", subprotocols=["mcp"]) as ws:
                with anyio.fail_after(60):
                    await ws.send("not json before initialize")
                    answers.append(json.loads(await ws.recv()))
                    await ws.send(json.dumps(INIT))
                    await ws.recv()
                    await ws.send(json.dumps(INITIALIZED))
                for frame, _, _ in MALFORMED:
                    with anyio.fail_after(10):  # the bug: no answer at all, the client waited forever
                        await ws.send(frame)
                        answers.append(json.loads(await ws.recv()))
                with anyio.fail_after(10):
                    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                              "params": {"name": "now", "arguments": {"timezone": "Asia/Tokyo"}}}))
                    answers.append(json.loads(await ws.recv()))
            return answers

        answers = anyio.run(main)
    assert answers[0]["id"] is None and answers[0]["error"]["code"] == -32700
    for (_, want_id, want), answer in zip(MALFORMED, answers[1:-1], strict=True):
        check_answer(answer, want_id, want)
    assert answers[-1]["id"] == 99 and answers[-1]["result"]["isError"] is False
    assert json.loads(answers[-1]["result"]["content"][0]["text"])["utc_offset"] == "+0900"


def test_websocket_memory_add_with_a_lone_surrogate_is_an_error_result_and_stores_nothing(
    memory_server: ThreadedServer, lab: Memlab
) -> None:
    from websockets.asyncio.client import connect

    key = ApiKeys(lab.store.db).add("alice")
    frame = ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", '
             '"arguments": {"text": "Il mio nome \\u00e8 Mario \\udfff"}}}')

    async def main() -> dict[str, Any]:
        url = memory_server.url.replace("http://", "ws://") + "/mcp"
        async with connect(url, subprotocols=["mcp"], additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            with anyio.fail_after(30):
                await ws.send(json.dumps(INIT))
                await ws.recv()
                await ws.send(json.dumps(INITIALIZED))
                await ws.send(frame)
                return dict(json.loads(await ws.recv()))

    answer = anyio.run(main)
    check_answer(answer, 2, "isError")
    assert "U+DFFF" in answer["result"]["content"][0]["text"]
    assert lab.store.count() == 0


class StdioServer:
    """``memlab mcp serve datetime --transport stdio`` as a subprocess; lines in, lines out, bounded reads."""

    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memlab.cli.main", "mcp", "serve", "datetime", "--transport", "stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)

    def send(self, frame: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((frame.encode() if isinstance(frame, str) else frame) + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return code, self.proc.stderr.read().decode("utf-8", "replace")


@pytest.mark.subprocess
def test_stdio_answers_every_malformed_line_and_exits_cleanly_at_eof(tmp_path: Path) -> None:
    server = StdioServer(tmp_path)
    try:
        server.send(json.dumps(INIT))
        assert server.recv(90)["result"]["serverInfo"]["name"] == "memlab-datetime"
        server.send(json.dumps(INITIALIZED))
        answers = []
        for frame, _, _ in MALFORMED:
            server.send(frame)
            answers.append(server.recv(10))
        server.send(b"\n")  # a blank line is not a frame: no answer, and the next one is still answered in order
        server.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        last = server.recv(10)
    finally:
        code, err = server.close()
    for (_, want_id, want), answer in zip(MALFORMED, answers, strict=True):
        check_answer(answer, want_id, want)
    assert last == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert code == 0 and "Traceback" not in err, err[-2000:]
