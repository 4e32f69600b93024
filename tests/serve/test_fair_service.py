"""One user's long work does not stall the other users (issue 41, "one user stalls everyone").

A real uvicorn server on loopback over a SQLite file. User A's ``/v1/ingest`` is held inside its embedding by a gate
the test controls (no timing involved): while it is held, user B's search, memory add and list answer; then the gate
opens and A's document is stored whole. Before the fix every request ran on one worker thread behind the ingest, so
B's search waited for the gate (it would hit the client's timeout). The figures with the real embedder come from
``memlab bench serve --noisy-neighbour``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("qdrant_client", reason="LOUD SKIP: qdrant-client is not installed (memlab[ingest])")

from memlab.app import open_memlab  # noqa: E402
from memlab.serve import ApiKeys, create_app  # noqa: E402
from memlab.serve.fair import FairEmbedder, Priority  # noqa: E402
from memlab.serve.runner import ThreadedServer  # noqa: E402
from memlab.testing import FakeEmbedder  # noqa: E402

from .conftest import NO_LLM, birthday_judge  # noqa: E402


class GatedEmbedder(FakeEmbedder):
    """Passages embedded on the long-work thread wait for ``gate`` (and say so on ``entered``)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def embed(self, texts: Sequence[str], /, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith("memlab-serve-long"):
            self.entered.set()
            if not self.gate.wait(120):
                raise AssertionError("the test never opened the gate")
        return super().embed(texts, **kwargs)


def test_a_large_ingest_does_not_block_another_users_requests(tmp_path: Path) -> None:
    embedder = GatedEmbedder(dim=64)
    lab = open_memlab(tmp_path / "fair.db", embedder=embedder, judge=birthday_judge(), settings=NO_LLM)
    keys = ApiKeys(lab.store.db)
    a_key, b_key = keys.add("alice"), keys.add("bob")
    doc = "\n\n".join(f"## Parte {i}\n" + f"Paragrafo {i} del documento lungo. " * 30 for i in range(40))
    result: dict[str, Any] = {}
    try:
        with ThreadedServer(create_app(lab)) as server, \
                httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {a_key}"}, timeout=120) as a, \
                httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {b_key}"}, timeout=30) as b:
            assert b.post("/api/memory", json={"text": "Abito a Roma"}).status_code == 201

            def ingest() -> None:
                result["r"] = a.post("/v1/ingest", json={"content": doc, "fmt": "markdown", "source": "big.md"})

            worker = threading.Thread(target=ingest)
            worker.start()
            try:
                assert embedder.entered.wait(60), "the ingest never reached its embedding"
                # A's ingest is held inside its work: B is served all the same
                hits = b.post("/api/memory/search", json={"query": "Roma", "k": 3})
                assert hits.status_code == 200 and hits.json()[0]["memory"]["text"] == "Abito a Roma"
                assert b.post("/api/memory", json={"text": "Lavoro a Milano"}).status_code == 201
                assert len(b.get("/api/memory").json()) == 2
                assert "r" not in result  # ... while A's ingest is still running
            finally:
                embedder.gate.set()
                worker.join()
        r = result["r"]
        assert r.status_code == 201, r.text
        assert r.json()["chunks"] >= 40 and r.json()["chunks_total"] == r.json()["chunks"]
    finally:
        lab.close()


def test_long_work_embeds_one_text_at_a_time_and_lets_requests_go_first() -> None:
    """Without a twin engine, long work shares the requests' embedder one text per call, and before each call waits
    while a request is in flight; a request's own call is never split or held."""
    calls: list[int] = []

    class Counting(FakeEmbedder):
        def embed(self, texts: Sequence[str], /, **kwargs: Any) -> Any:
            calls.append(len(texts))
            return super().embed(texts, **kwargs)

    priority = Priority(max_yield_s=60)
    fair = FairEmbedder(Counting(dim=8), priority)
    assert fair.embed(["a", "b", "c"]).shape == (3, 8) and calls == [3]  # a request: one call
    calls.clear()
    out: dict[str, Any] = {}

    def long_work() -> None:
        out["v"] = priority.run_long(fair.embed, ["a", "b", "c"])

    with priority.request():  # a request in flight: the long work does not start embedding
        worker = threading.Thread(target=long_work)
        worker.start()
        worker.join(0.3)
        assert calls == [] and worker.is_alive()
    worker.join(60)
    assert calls == [1, 1, 1] and out["v"].shape == (3, 8)


def test_a_long_chat_patch_lets_another_users_request_run_between_its_steps(lab: Any, server: Any) -> None:
    """A 60-turn PATCH is appended 20 turns at a time; each step is held by a gate the test opens one by one. User
    B's request, sent during the first step, is answered while the PATCH's last step is still held; the PATCH then
    completes with every turn, in order. Before the fix the 60 turns were one service call: B waited for all of it."""
    from memlab.serve.app import PATCH_STEP_TURNS

    keys = ApiKeys(lab.store.db)
    a_key, b_key = keys.add("alice"), keys.add("bob")
    permits = threading.Semaphore(0)
    entered: list[threading.Event] = [threading.Event() for _ in range(3)]
    append = lab.chats.append
    calls: list[int] = []

    def gated_append(chat_id: str, turns: Any, **kwargs: Any) -> Any:
        entered[min(len(calls), 2)].set()
        calls.append(len(turns))
        if not permits.acquire(timeout=120):
            raise AssertionError("the test never let this step run")
        return append(chat_id, turns, **kwargs)

    turns = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": f"Messaggio numero {i}"}]}
             for i in range(3 * PATCH_STEP_TURNS)]
    result: dict[str, Any] = {}
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {a_key}"}, timeout=120) as a, \
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {b_key}"}, timeout=120) as b:
        chat_id = a.post("/api/chats", json={"title": "lunga"}).json()["id"]
        lab.chats.append = gated_append  # type: ignore[method-assign]
        try:
            patch = threading.Thread(target=lambda: result.update(r=a.patch(f"/api/chats/{chat_id}",
                                                                               json={"turns": turns})))
            patch.start()
            assert entered[0].wait(60)
            listing = threading.Thread(target=lambda: result.update(b=b.get("/api/memory")))
            listing.start()  # queued behind the PATCH's first step
            svc = server.server.config.app.state.svc
            deadline = time.monotonic() + 60  # wait until B's service call is queued (in flight) before step 1 ends
            while svc.priority.in_flight < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert svc.priority.in_flight >= 2, "B's request never reached the service"
            permits.release()  # step 1 runs
            assert entered[1].wait(60)
            permits.release()  # step 2 runs; B's request is queued before step 3
            assert entered[2].wait(60)
            listing.join(60)
            assert "b" in result and result["b"].status_code == 200  # B answered ...
            assert "r" not in result and calls == [20, 20, 20]  # ... while the PATCH's last step is held
        finally:
            for _ in range(3):
                permits.release()
            patch.join(60)
            lab.chats.append = append  # type: ignore[method-assign]
        r = result["r"]
        assert r.status_code == 200, r.text
        texts = [t["parts"][0]["text"] for t in a.get(f"/api/chats/{chat_id}").json()["full_history"]]
        assert texts == [f"Messaggio numero {i}" for i in range(60)]


def test_bench_serve_noisy_neighbour_prints_both_p95_and_the_ratio(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``memlab bench serve --noisy-neighbour`` (fake embedder, small document): B's search alone and beside A's
    ingest, the ratio, and an eval run. The figures with e5 are in docs/guides/reliability.md."""
    from memlab.cli.main import main
    from memlab.embedding import register_embedder
    from memlab.eval.runs import load_run

    def fake() -> FakeEmbedder:
        emb = FakeEmbedder(dim=32)
        emb.name = "fake-noisy"
        return emb

    register_embedder("fake-noisy", fake)
    out = tmp_path / "noisy"
    assert main(["bench", "serve", "--noisy-neighbour", "--requests", "5", "--ingest-kb", "8", "--embedder",
                 "fake-noisy", "--judge", "lexical", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| alone | 5 | 0 |" in printed and "| during A's ingest |" in printed and "p95 with the neighbour" in printed
    run = load_run(out)
    assert run.spec.task == "bench-serve-noisy" and run.metric() == run.metric("ratio_p95") > 0
    assert run.metric("noisy.errors") == 0 and run.metric("ingest_chunks") > 0
