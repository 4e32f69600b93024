"""``memlab bench serve``: requests/s and latency of the HTTP API over loopback.

A real uvicorn serves :func:`memlab.serve.create_app` on 127.0.0.1 over a fresh SQLite file with the real embedder
and judge; ``clients`` threads (one httpx client each, one API key per two clients) send ``n_requests`` requests of
each operation, one operation after the other:

- ``add``: ``POST /api/memory`` (embed, store, queue the integrity check; the check runs in the background agent,
  competing for the same CPU, as in production);
- ``search``: ``POST /api/memory/search`` over what ``add`` stored;
- ``turn``: ``POST /api/turn`` without waiting for checks (extraction, context, no LLM configured).

Figures: requests/s (completed / wall time of the phase), p50/p95 latency per request, errors.

``--noisy-neighbour`` (:func:`run_noisy_neighbour_bench`) measures fair service instead: user B's search p50/p95
alone, then while user A's ``POST /v1/ingest`` of a large document (``--ingest-kb``, 320 KB by default, the size that
stalled everyone for 131 s when ingest ran on the request path) runs, and the ratio of the two p95 (goal: at most 3x).
:meth:`ServeBench.write` saves them as an eval run (``bench-serve``), see :mod:`memlab.lab.bench.runs`.
"""

from __future__ import annotations

import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

__all__ = ["NoisyNeighbourBench", "ServeBench", "ServeBenchRow", "run_noisy_neighbour_bench", "run_serve_bench"]

_FACTS = [
    "Abito a {city}.", "Il mio cane si chiama {name}.", "Lavoro come {job}.", "Mi piace {food}.",
    "I live in {city}.", "My favourite food is {food}.", "我住在{city}。",
]
_FILL = {"city": ["Roma", "Milano", "Napoli", "Torino", "Bologna"], "name": ["Fido", "Rex", "Luna"],
         "job": ["medico", "ingegnere", "insegnante"], "food": ["la pizza", "il sushi", "la carbonara"]}


class ServeBenchRow(BaseModel):
    """One operation."""

    op: str
    requests: int
    errors: int
    requests_per_s: float
    p50_ms: float
    p95_ms: float


class ServeBench(BaseModel):
    """The benchmark's result."""

    embedder: str
    judge: str
    clients: int
    rows: list[ServeBenchRow]
    machine: str
    cpus: int
    created_at: str
    command: str

    def to_markdown(self) -> str:
        """A table, one row per operation."""
        head = (f"memlab serve over loopback: {self.clients} clients, embedder {self.embedder}, judge {self.judge}, "
                f"{self.cpus} CPUs\n\n| op | requests | errors | requests/s | p50 ms | p95 ms |\n|---|---|---|---|---|---|")
        rows = [f"| {r.op} | {r.requests} | {r.errors} | {r.requests_per_s:.1f} | {r.p50_ms:.1f} | {r.p95_ms:.1f} |"
                for r in self.rows]
        return "\n".join([head, *rows])

    def write(self, out_dir: str | Path) -> Path:
        """Write the ``bench-serve`` eval run (and ``bench.md``) into ``out_dir``; returns it.

        Metrics: ``<op>.requests_per_s|p50_ms|p95_ms|errors|requests`` per operation; one example per operation.
        """
        from memlab.lab.bench.runs import write_bench_run

        metrics = {r.op: r.model_dump(exclude={"op"}) for r in self.rows}
        examples = [{"id": r.op, "group": r.op, "latency_ms": r.p50_ms, "meta": r.model_dump()} for r in self.rows]
        params = {"embedder": self.embedder, "judge": self.judge, "clients": self.clients}
        write_bench_run(out_dir, "serve", params=params, seed=None, n=max((r.requests for r in self.rows), default=0),
                        metrics=metrics, primary_metric="add.requests_per_s",
                        examples=examples, markdown=self.to_markdown(), judge=self.judge, command=self.command,
                        machine=self.machine, cpus=self.cpus)
        return Path(out_dir)


def _text(i: int) -> str:
    t = _FACTS[i % len(_FACTS)]
    return t.format(**{k: v[(i // len(_FACTS)) % len(v)] for k, v in _FILL.items()}) + f" ({i})"


def _phase(
    op: str, clients: list[Any], n: int, request: Callable[[Any, int], Any]
) -> ServeBenchRow:
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()
    counter = iter(range(n))

    def work(client: Any) -> None:
        nonlocal errors
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            try:
                ok = request(client, i).status_code < 300
            except Exception:  # noqa: BLE001 - counted as an error of the figure
                ok = False
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                errors += not ok

    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ms = np.asarray(lat) * 1000
    return ServeBenchRow(op=op, requests=n, errors=errors, requests_per_s=round(n / wall, 2),
                         p50_ms=round(float(np.percentile(ms, 50)), 2), p95_ms=round(float(np.percentile(ms, 95)), 2))


def run_serve_bench(
    *,
    n_requests: int = 200,
    clients: int = 4,
    embedder: str | None = None,
    judge: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> ServeBench:
    """Serve a fresh database on loopback and measure ``add``, ``search`` and ``turn``.

    Raises:
        InvalidInputError: ``n_requests`` or ``clients`` < 1.
    """
    import httpx

    from memlab._validation import check_positive_int
    from memlab.app import open_memlab
    from memlab.config import Settings
    from memlab.serve import ApiKeys, create_app
    from memlab.serve.runner import ThreadedServer

    n_requests = check_positive_int(n_requests, name="n_requests", owner="run_serve_bench")
    clients = check_positive_int(clients, name="clients", owner="run_serve_bench")
    say = progress or (lambda _m: None)
    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="memlab-bench-serve-") as tmp:
        lab = open_memlab(Path(tmp) / "bench.db", settings=settings, embedder=embedder, judge=judge)
        try:
            keys = ApiKeys(lab.store.db)
            user_keys = [keys.add(f"bench{u}") for u in range((clients + 1) // 2)]
            lab.store.embedder.embed(["warm-up"])  # model loads are not requests
            if lab.checker is not None:
                lab.checker.judge.judge([("warm-up", "warm-up")])
            with ThreadedServer(create_app(lab)) as server:
                http = [httpx.Client(base_url=server.url, timeout=300,
                                     headers={"Authorization": f"Bearer {user_keys[c // 2]}"}) for c in range(clients)]
                try:
                    rows = []
                    say(f"add x{n_requests}")
                    rows.append(_phase("add", http, n_requests,
                                       lambda c, i: c.post("/api/memory", json={"text": _text(i)})))
                    say(f"search x{n_requests}")
                    rows.append(_phase("search", http, n_requests,
                                       lambda c, i: c.post("/api/memory/search", json={"query": _text(i * 7), "k": 10})))
                    say(f"turn x{n_requests}")
                    rows.append(_phase("turn", http, n_requests,
                                       lambda c, i: c.post("/api/turn", json={"message": _text(i + 10_000), "wait": False})))
                finally:
                    for c in http:
                        c.close()
            emb_name = getattr(lab.store.embedder, "name", "?")
            judge_name = getattr(getattr(lab.checker, "judge", None), "name", "none")
        finally:
            lab.close()
    return ServeBench(embedder=emb_name, judge=judge_name, clients=clients, rows=rows, machine=platform.machine(),
                      cpus=os.cpu_count() or 0, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                      command=f"memlab bench serve --requests {n_requests} --clients {clients}")


# ------------------------------------------------------------------ the noisy neighbour
class NoisyNeighbourBench(BaseModel):
    """User B's search latency alone and while user A ingests a large document (``--noisy-neighbour``)."""

    embedder: str
    ingest_kb: float
    ingest_chunks: int
    ingest_s: float
    alone: ServeBenchRow
    noisy: ServeBenchRow
    ratio_p95: float
    machine: str
    cpus: int
    created_at: str
    command: str

    def to_markdown(self) -> str:
        """B's search p50/p95 alone and beside A's ingest, and the p95 ratio (goal: at most 3)."""
        head = (f"noisy neighbour: user A ingests {self.ingest_kb:.0f} KB ({self.ingest_chunks} chunks, "
                f"{self.ingest_s:.1f} s) while user B searches; embedder {self.embedder}, {self.cpus} CPUs\n\n"
                "| user B's search | requests | errors | p50 ms | p95 ms |\n|---|---|---|---|---|")
        rows = [f"| {name} | {r.requests} | {r.errors} | {r.p50_ms:.1f} | {r.p95_ms:.1f} |"
                for name, r in (("alone", self.alone), ("during A's ingest", self.noisy))]
        return "\n".join([head, *rows, "", f"p95 with the neighbour / p95 alone: **{self.ratio_p95:.2f}x** "
                          "(goal: at most 3x)"])

    def write(self, out_dir: str | Path) -> Path:
        """Write the ``bench-serve-noisy`` eval run (and ``bench.md``) into ``out_dir``; returns it."""
        from memlab.lab.bench.runs import write_bench_run

        metrics = {"ratio_p95": self.ratio_p95, "alone": self.alone.model_dump(exclude={"op"}),
                   "noisy": self.noisy.model_dump(exclude={"op"}), "ingest_s": self.ingest_s,
                   "ingest_chunks": self.ingest_chunks}
        write_bench_run(out_dir, "serve-noisy", params={"embedder": self.embedder, "ingest_kb": self.ingest_kb},
                        seed=None, n=self.alone.requests + self.noisy.requests, metrics=metrics,
                        primary_metric="ratio_p95", markdown=self.to_markdown(), command=self.command,
                        machine=self.machine, cpus=self.cpus)
        return Path(out_dir)


def _document(kb: float) -> str:
    """A markdown document of about ``kb`` kilobytes: headed sections of varied sentences."""
    parts: list[str] = []
    size, i = 0, 0
    while size < kb * 1024:
        if i % 40 == 0:
            parts.append(f"\n## Sezione {i // 40}\n")
        parts.append(_text(i) + (" " if i % 5 else "\n\n"))
        size += len(parts[-1].encode("utf-8"))
        i += 1
    return "".join(parts)


def _searches(client: Any, n: int | None, until: threading.Event | None) -> ServeBenchRow:
    """One client's searches, one after the other: ``n`` of them, or until ``until`` is set (at least one)."""
    lat: list[float] = []
    errors = 0
    i = 0
    t_start = time.perf_counter()
    while (n is not None and i < n) or (until is not None and (not until.is_set() or i == 0)):
        t0 = time.perf_counter()
        try:
            ok = client.post("/api/memory/search", json={"query": _text(i * 7), "k": 10}).status_code < 300
        except Exception:  # noqa: BLE001 - counted as an error of the figure
            ok = False
        lat.append(time.perf_counter() - t0)
        errors += not ok
        i += 1
    wall = time.perf_counter() - t_start
    ms = np.asarray(lat) * 1000
    return ServeBenchRow(op="search", requests=len(lat), errors=errors, requests_per_s=round(len(lat) / wall, 2),
                         p50_ms=round(float(np.percentile(ms, 50)), 2), p95_ms=round(float(np.percentile(ms, 95)), 2))


def _noisy_phases(server: Any, keys: tuple[str, str], n_requests: int, kb: float,
                  say: Callable[[str], None]) -> tuple[ServeBenchRow, ServeBenchRow, float, int]:
    """B alone, then B while A ingests: ``(alone, noisy, ingest seconds, chunks)``."""
    import httpx

    a = httpx.Client(base_url=server.url, timeout=3600, headers={"Authorization": f"Bearer {keys[0]}"})
    b = httpx.Client(base_url=server.url, timeout=300, headers={"Authorization": f"Bearer {keys[1]}"})
    try:
        for i in range(30):  # B's memories
            b.post("/api/memory", json={"text": _text(i), "wait": True}).raise_for_status()  # checks done first
        a.post("/v1/ingest", json={"content": "warm-up", "source": "warm-up"}).raise_for_status()
        say(f"user B alone: {n_requests} searches")
        alone = _searches(b, n_requests, None)
        doc = _document(kb)
        done = threading.Event()
        out: dict[str, Any] = {}

        def ingest() -> None:
            t0 = time.perf_counter()
            try:
                r = a.post("/v1/ingest", json={"content": doc, "fmt": "markdown", "source": "big.md"})
                out["chunks"] = int(r.json().get("chunks", 0)) if r.status_code < 300 else 0
                out["status"] = r.status_code
            finally:
                out["s"] = time.perf_counter() - t0
                done.set()

        say(f"user A ingests {len(doc) / 1024:.0f} KB while user B searches")
        worker = threading.Thread(target=ingest, name="noisy-neighbour")
        worker.start()
        time.sleep(0.2)  # A's request is in: B's searches all run beside it
        noisy = _searches(b, None, done)
        worker.join()
        if out.get("status", 0) >= 300:
            from memlab.errors import BackendError

            raise BackendError(f"The noisy neighbour's ingest failed with HTTP {out.get('status')}.")
        return alone, noisy, float(out["s"]), int(out.get("chunks", 0))
    finally:
        a.close()
        b.close()


def run_noisy_neighbour_bench(
    *,
    n_requests: int = 100,
    ingest_kb: float = 320.0,
    embedder: str | None = None,
    judge: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> NoisyNeighbourBench:
    """User B's search p95 alone and while user A ingests ``ingest_kb`` KB through ``/v1/ingest``.

    A real uvicorn on loopback over a fresh SQLite file (and its embedded Qdrant) with the real embedder; B searches
    with one client, one request after the other, ``n_requests`` times alone, then for as long as A's ingest runs.

    Raises:
        InvalidInputError: ``n_requests`` < 1 or ``ingest_kb`` not > 0.
        BackendError: the ingest failed.
    """
    from memlab._validation import check_positive_int
    from memlab.app import open_memlab
    from memlab.config import Settings
    from memlab.errors import InvalidInputError
    from memlab.serve import ApiKeys, create_app
    from memlab.serve.runner import ThreadedServer

    n_requests = check_positive_int(n_requests, name="n_requests", owner="run_noisy_neighbour_bench")
    if not isinstance(ingest_kb, int | float) or not ingest_kb > 0:
        raise InvalidInputError(f"The 'ingest_kb' parameter of run_noisy_neighbour_bench must be > 0. Got {ingest_kb!r}.")
    say = progress or (lambda _m: None)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-noisy-") as tmp:
        lab = open_memlab(Path(tmp) / "bench.db", settings=Settings(llm_backend="none"), embedder=embedder,
                          judge=judge)
        try:
            keys = ApiKeys(lab.store.db)
            pair = (keys.add("neighbour-a"), keys.add("user-b"))
            lab.store.embedder.embed(["warm-up"])  # model loads are not requests
            with ThreadedServer(create_app(lab)) as server:
                alone, noisy, ingest_s, chunks = _noisy_phases(server, pair, n_requests, ingest_kb, say)
            emb_name = getattr(lab.store.embedder, "name", "?")
        finally:
            lab.close()
    return NoisyNeighbourBench(
        embedder=emb_name, ingest_kb=round(float(ingest_kb), 1), ingest_chunks=chunks, ingest_s=round(ingest_s, 2),
        alone=alone, noisy=noisy, ratio_p95=round(noisy.p95_ms / max(alone.p95_ms, 1e-9), 2),
        machine=platform.machine(), cpus=os.cpu_count() or 0, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=f"memlab bench serve --noisy-neighbour --requests {n_requests} --ingest-kb {ingest_kb:g}")
