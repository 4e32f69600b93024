"""A 50 MB unauthenticated body is refused (401 or 413) and never held in memory (issue 41, "bodies before keys").

A real ``memlab serve`` app in its own process (uvicorn on loopback over a SQLite file), so its memory is measured
apart from the client's: four 50 MB bodies at once (two with a declared ``Content-Length``, two chunked without
one, on routes that need a key) are all refused, and the server's resident memory stays within 100 MB of idle
(before the body limit, four 200 MB bodies took it from 1.8 to 3.3 GB). The time each refusal took is printed
(``pytest -s``), not asserted: speed belongs in benchmarks.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

MB = 1024 * 1024

_SERVER = """
import sys
from memlab.app import open_memlab
from memlab.config import Settings
from memlab.serve import create_app
from memlab.serve.runner import ThreadedServer
from memlab.testing import FakeEmbedder, ScriptedJudge

lab = open_memlab(sys.argv[1], embedder=FakeEmbedder(dim=64), judge=ScriptedJudge(), settings=Settings(llm_backend="none"))
server = ThreadedServer(create_app(lab)).start()
print(server.url, flush=True)
sys.stdin.read()  # serve until the test closes stdin
server.stop()
lab.close()
"""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")  # pragma: no cover - Linux always has it


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    script = tmp_path / "serve.py"
    script.write_text(_SERVER)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "limit.db")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        url = (proc.stdout.readline() if proc.stdout else "").strip()
        assert url.startswith("http://127.0.0.1:"), "the server did not start"
        yield proc, url
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server must not hang the suite
            proc.kill()
            proc.wait()


def _body(total: int) -> Iterator[bytes]:
    piece = b"x" * MB  # the same megabyte again and again: the client holds 1 MB, not 50
    for _ in range(total // MB):
        yield piece


@pytest.mark.subprocess
def test_fifty_megabyte_unauthenticated_bodies_are_refused_without_growing_the_server(
        server_process: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = server_process
    with httpx.Client(base_url=url, timeout=120) as c:  # warm up the code paths the bodies will take
        assert c.get("/health").status_code == 200
        assert c.post("/api/memory", json={"text": "x"}).status_code == 401
        assert c.post("/api/memory", content=b"x" * (9 * MB)).status_code == 413
    idle = _rss_mb(proc.pid)
    peak = {"mb": idle}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak["mb"] = max(peak["mb"], _rss_mb(proc.pid))
            time.sleep(0.01)

    results: list[tuple[str, int | str, float]] = []

    def send(path: str, declared: bool) -> None:
        headers = {"Content-Type": "application/json"}
        if declared:
            headers["Content-Length"] = str(50 * MB)
        t0 = time.perf_counter()
        try:
            with httpx.Client(base_url=url, timeout=120) as c:
                status: int | str = c.post(path, content=_body(50 * MB), headers=headers).status_code
        except httpx.HTTPError as exc:  # reported below as a failure, with what happened
            status = f"{type(exc).__name__}: {exc}"
        results.append((f"{path} {'Content-Length' if declared else 'chunked'}", status, time.perf_counter() - t0))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    senders = [threading.Thread(target=send, args=(p, d)) for p, d in
               (("/api/memory", True), ("/api/memory", False), ("/v1/ingest", True), ("/api/chats", False))]
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    stop.set()
    sampler.join()
    peak["mb"] = max(peak["mb"], _rss_mb(proc.pid))
    for what, status, seconds in results:
        print(f"50 MB unauthenticated body, {what}: {status} in {seconds:.2f} s")
    print(f"server RSS idle {idle:.0f} MB, peak {peak['mb']:.0f} MB (+{peak['mb'] - idle:.0f} MB)")
    assert len(results) == 4 and all(status in (401, 413) for _, status, _ in results), results
    assert peak["mb"] - idle < 100, (idle, peak)
