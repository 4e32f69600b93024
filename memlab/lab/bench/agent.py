"""``memlab bench agent``: does ingestion wait on integrity checks? (200 messages while checks run)

Three runs over the same seeded messages (``fact_corpus``: Italian and English first-person facts, many of
them conflicting), each on a fresh on-disk store with the real embedder:

- ``no_agent``: :meth:`Assistant.respond` with no checks at all (the floor);
- ``with_agent``: the same turns while the :class:`~memlab.agent.BackgroundAgent` runs the real
  integrity checks concurrently (the production path);
- ``inline_check``: the turn runs the checks synchronously before returning (what the agent avoids).

Figures: per-turn latency p50/p95/max (ms), checks completed *during* the ingestion phase (proof that
they ran concurrently), time to drain the queue afterwards, checks/s, notifications created. No LLM is
called (the reply is the no-model marker), so the latency is extraction + storage + enqueue.

With ``out`` the run is written as an eval run (``bench-agent``: ``metrics[mode][figure]``, one example per timed
turn, grouped by mode), see :mod:`memlab.lab.bench.runs`.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.lab.bench.corpus import fact_corpus

__all__ = ["AgentBenchResult", "run_agent_bench"]


@dataclass
class AgentBenchResult:
    """Figures of one ``memlab bench agent`` run (``runs[mode][metric]``)."""

    n_messages: int
    embedder: str
    judge: str
    checker: str
    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    seed: int = 0
    turn_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per mode: each turn's milliseconds, in message order."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able view."""
        return {"n_messages": self.n_messages, "embedder": self.embedder, "judge": self.judge,
                "checker": self.checker, "runs": self.runs}

    def to_markdown(self) -> str:
        """One table, a column per mode."""
        modes = list(self.runs)
        metrics: list[str] = []
        for m in modes:
            metrics += [k for k in self.runs[m] if k not in metrics]
        head = (f"agent benchmark: {self.n_messages} messages, embedder={self.embedder}, judge={self.judge}, "
                f"checker={self.checker}\n\n")
        rows = ["| metric | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
        for k in metrics:
            vals = [self.runs[m].get(k) for m in modes]
            rows.append(f"| {k} | " + " | ".join("–" if v is None else f"{v:,.2f}" for v in vals) + " |")
        return head + "\n".join(rows)

    def write(self, out_dir: str | Path) -> Path:
        """Write the ``bench-agent`` eval run (and ``bench.md``) into ``out_dir``; returns it."""
        from memlab.lab.bench.runs import write_bench_run

        mode = "with_agent" if "with_agent" in self.runs else next(iter(self.runs), "")
        examples = [{"id": f"{m}/{i}", "group": m, "latency_ms": ms}
                    for m, lat in self.turn_ms.items() for i, ms in enumerate(lat)]
        params = {"embedder": self.embedder, "judge": self.judge, "checker": self.checker, "modes": list(self.runs)}
        write_bench_run(out_dir, "agent", params=params, seed=self.seed, n=self.n_messages, metrics=self.runs,
                        primary_metric=f"{mode}.turn_p50_ms", examples=examples, markdown=self.to_markdown(),
                        judge=self.judge)
        return Path(out_dir)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _lat(xs: list[float]) -> dict[str, float]:
    return {"turn_p50_ms": _pct(xs, 50), "turn_p95_ms": _pct(xs, 95), "turn_max_ms": max(xs) if xs else float("nan"),
            "turn_mean_ms": float(np.mean(xs)) if xs else float("nan")}


async def _ingest_with_agent(agent: Any, assistant: Any, messages: list[str], lat: list[float],
                             figures: dict[str, float]) -> None:
    async with agent:
        for m in messages:
            t = time.perf_counter()
            await asyncio.to_thread(assistant.respond, "bench-user", m)
            lat.append((time.perf_counter() - t) * 1000)
        st = agent.stats()
        figures["checks_done_during_ingest"] = float(st["done"])
        figures["checks_queued_at_end_of_ingest"] = float(st["pending"] + st["running"])
        t = time.perf_counter()
        await agent.wait_idle(timeout=3600)
        figures["drain_after_ingest_s"] = time.perf_counter() - t
        st = agent.stats()
        figures["checks_total"] = float(st["done"] + st["parked"])


def _timed_turns(mode: str, store: Any, checker: Any, svc: Any, messages: list[str]) -> tuple[list[float],
                                                                                          dict[str, float]]:
    """Run the turns of one mode; per-turn latencies (ms) and the mode's check and wall-time figures."""
    from memlab.agent import BackgroundAgent
    from memlab.assistant import Assistant

    lat: list[float] = []
    figures: dict[str, float] = {}
    if mode == "with_agent":
        agent = BackgroundAgent(store, checker, svc, poll_interval_s=0.05)
        assistant = Assistant(store, notifications=svc, agent=agent)

        t0 = time.perf_counter()
        asyncio.run(_ingest_with_agent(agent, assistant, messages, lat, figures))
        figures["wall_total_s"] = time.perf_counter() - t0
        figures["checks_per_s"] = figures["checks_total"] / max(figures["wall_total_s"], 1e-9)
        return lat, figures
    assistant = Assistant(store, notifications=svc)
    n_checks = 0
    t0 = time.perf_counter()
    for m in messages:
        t = time.perf_counter()
        r = assistant.respond("bench-user", m)
        if mode == "inline_check":
            for mid in r.memory_ids:
                for c in checker.check(store.get(mid, user_id="bench-user")).contradictions:
                    svc.create_contradiction("bench-user", c)
                n_checks += 1
        lat.append((time.perf_counter() - t) * 1000)
    figures["wall_total_s"] = time.perf_counter() - t0
    if mode == "inline_check":
        figures["checks_total"] = float(n_checks)
        figures["checks_per_s"] = n_checks / max(figures["wall_total_s"], 1e-9)
    return lat, figures


def run_agent_bench(
    n_messages: int = 200, *, embedder: str | None = None, judge: str | None = None, seed: int = 0,
    out: str | None = None, modes: tuple[str, ...] = ("no_agent", "with_agent", "inline_check"),
) -> AgentBenchResult:
    """Run the three modes (see the module docstring) and return their figures.

    Args:
        n_messages: user messages per mode.
        embedder: embedder name (default: ``Settings().embedder``).
        judge: judge name (default: ``Settings().judge``).
        seed: corpus seed.
        out: directory for the ``bench-agent`` eval run (:meth:`AgentBenchResult.write`).
        modes: subset of ``no_agent``, ``with_agent``, ``inline_check``.
    """
    from memlab.config import Settings
    from memlab.embedding import load_embedder
    from memlab.notify import NotificationService
    from memlab.store import MemoryStore

    settings = Settings()
    emb = load_embedder(embedder or settings.embedder)
    judge_name = judge or settings.judge
    messages = fact_corpus(n_messages, seed=seed)
    emb.embed(["warm-up"])

    def make_checker(store: Any) -> Any:
        from memlab.integrity import SemanticIntegrityChecker

        return SemanticIntegrityChecker(store, judge_name, settings)

    res = AgentBenchResult(n_messages=n_messages, embedder=emb.name, judge=judge_name,
                           checker="SemanticIntegrityChecker", seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            # every mode embeds its messages for real: drop the embedder's text cache filled by the previous mode
            cache = getattr(emb, "_cache", None)
            if hasattr(cache, "clear"):
                cache.clear()
            store = MemoryStore(Path(tmp) / f"{mode}.db", embedder=emb)
            svc = NotificationService(store)
            checker = make_checker(store)
            # warm the judge outside the timed loop (a model load is not a per-turn cost)
            checker.judge.judge([("warm-up a", "warm-up b")])
            lat, figures = _timed_turns(mode, store, checker, svc, messages)
            figures["memories"] = float(store.count("bench-user", include_inactive=True))
            figures["notifications"] = float(len(svc.list("bench-user", include_resolved=True)))
            res.runs[mode] = {**_lat(lat), **figures}
            res.turn_ms[mode] = lat
            store.close()
    if out is not None:
        res.write(out)
    return res
