"""``memlab bench serve``: requests/s and latency of the HTTP API over loopback.

A real uvicorn serves :func:`memlab.serve.create_app` on 127.0.0.1 over a fresh SQLite file with the real embedder
and judge; ``clients`` threads (one httpx client each, one API key per two clients) send ``n_requests`` requests of
each operation, one operation after the other:

- ``add``: ``POST /api/memory`` (embed, store, queue the integrity check; the check runs in the background agent,
  competing for the same CPU, as in production);
- ``search``: ``POST /api/memory/search`` over what ``add`` stored;
- ``turn``: ``POST /api/turn`` without waiting for checks (extraction, context, no LLM configured).

Figures: requests/s (completed / wall time of the phase), p50/p95 latency per request, errors.
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

__all__ = ["ServeBench", "ServeBenchRow", "run_serve_bench"]

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
