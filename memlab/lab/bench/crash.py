"""``memlab bench crash``: random ``kill -9`` of ``memlab chat`` during contradicting turns, then one restart.

Each run starts ``memlab chat --db DB --user U --message M`` as a subprocess (a real process: the embedder loads,
the turn stores memories, queues their checks and waits for them) and kills it with SIGKILL after a random delay
drawn uniformly from ``[0, max_delay_s]``; some runs finish before the kill. The messages alternate birthdays
(a different date in every run: "Il mio compleanno è il 1 gennaio", "... 8 febbraio" ...), so every turn after the
first contradicts the one before, and each acknowledged turn is recognisable in the store by its date.

After the last run the database is opened once more with the background agent running (``async with``), which
recovers the checks left running, queues the checks of memories whose check was never queued (the outbox) and
waits for all of them. Then:

* ``acknowledged``: turns whose process printed its reply (it returned, so its memories were committed);
* ``acknowledged_present``: of those, turns whose memory is in SQLite (must be all of them);
* ``memories``: every memory row after the restart (acknowledged or not: a killed turn may have committed);
* ``memories_checked``: memories with a finished check (``done`` or ``parked``) in the agent queue;
* ``integrity_ok``: SQLite's ``PRAGMA integrity_check`` and the FAISS cache agreeing with SQLite after reopening.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memlab.lab.bench.runs import write_bench_run

__all__ = ["CrashResult", "run_crash_bench"]

_MONTHS = ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre",
           "novembre", "dicembre")


def _date(i: int) -> str:
    """A different birthday for every run (so each acknowledged turn is recognisable in the store)."""
    return f"{1 + (i * 7) % 28} {_MONTHS[i % 12]}"


@dataclass
class CrashResult:
    """Figures of one crash benchmark (see the module docstring)."""

    runs: int
    killed: int
    acknowledged: int
    acknowledged_present: int
    memories: int
    memories_checked: int
    integrity_ok: bool
    high_notifications: int
    seconds: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The result as a small Markdown table."""
        lines = ["| figure | value |", "|---|---|"]
        for k, v in asdict(self).items():
            if k != "rows":
                lines.append(f"| {k} | {v} |")
        return "\n".join(lines)


def _one_run(db: Path, message: str, delay: float, env: dict[str, str], args: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "memlab.cli.main", "chat", "--db", str(db), "--user", "u1", "--message", message,
           *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        killed = True
    return {"message": message, "delay_s": round(delay, 3), "killed": killed, "returncode": proc.returncode,
            "acknowledged": proc.returncode == 0 and bool(out.strip()), "stderr": err.strip()[-300:]}


def _restart(db: Path, embedder: str, judge: str) -> tuple[int, int, int, set[str]]:
    """Open with the agent running until every check is finished: memories, checked memories, HIGH count, texts."""
    from memlab.app import open_memlab
    from memlab.records import Urgency

    async def main() -> tuple[int, int, int, set[str]]:
        async with open_memlab(db, embedder=embedder, judge=judge) as lab:
            assert lab.agent is not None
            await lab.agent.wait_idle(timeout=600)
            items = lab.store.list("u1", include_inactive=True)
            ids = {m.id for m in items}
            finished = {j.memory_id for j in lab.agent.jobs() if j.status.value in ("done", "parked")}
            high = sum(1 for n in lab.notifications.list("u1", include_resolved=True) if n.urgency is Urgency.HIGH)
            return len(ids), len(ids & finished), high, {m.text for m in items}

    return asyncio.run(main())


def _integrity_ok(db: Path, embedder: str) -> bool:
    from memlab.embedding import load_embedder
    from memlab.store import MemoryStore

    con = sqlite3.connect(db)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    with MemoryStore(db, embedder=load_embedder(embedder)) as store:
        return ok and store._consistent(store.index)


def run_crash_bench(
    *,
    runs: int = 50,
    max_delay_s: float = 12.0,
    embedder: str = "minilm",
    judge: str = "lexical",
    seed: int = 0,
    db_path: str | None = None,
    out: str | None = None,
    progress: bool = True,
) -> CrashResult:
    """Kill ``memlab chat`` ``runs`` times at random moments, restart once, and count what survived.

    Args:
        runs: chat processes started (each killed after a random delay, unless it finished first).
        max_delay_s: the kill delay is uniform in ``[0, max_delay_s]``.
        embedder: embedder of the database (loaded by every process).
        judge: judge of the checks.
        seed: seed of the delays.
        db_path: database (default: a fresh one in a temp dir).
        out: write an eval run here.
        progress: print one line per run on stderr.
    """
    rng = random.Random(seed)
    db = Path(db_path) if db_path else Path(tempfile.mkdtemp(prefix="memlab-crash-")) / "crash.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]),
                                                          os.environ.get("PYTHONPATH", "")])}
    args = ["--embedder", embedder, "--judge", judge, "--timeout", "120"]
    t0 = time.perf_counter()
    rows = []
    for i in range(runs):
        msg = f"Il mio compleanno è il {_date(i)}"
        rows.append({**_one_run(db, msg, rng.uniform(0.0, max_delay_s), env, args), "date": _date(i)})
        if progress:
            r = rows[-1]
            print(f"run {i + 1}/{runs}: {'killed' if r['killed'] else 'finished'} after {r['delay_s']}s",
                  file=sys.stderr)
    n_mem, n_checked, high, texts = _restart(db, embedder, judge) if db.exists() else (0, 0, 0, set())
    acked = [r for r in rows if r["acknowledged"]]
    res = CrashResult(
        runs=runs,
        killed=sum(r["killed"] for r in rows),
        acknowledged=len(acked),
        acknowledged_present=sum(any(re.search(rf"(?<!\d){r['date']}\b", t) for t in texts) for r in acked),
        memories=n_mem,
        memories_checked=n_checked,
        integrity_ok=_integrity_ok(db, embedder) if db.exists() else True,
        high_notifications=high,
        seconds=round(time.perf_counter() - t0, 1),
        rows=rows,
    )
    if out:
        from memlab.eval.runs import Example

        figures = {k: v for k, v in asdict(res).items() if k != "rows"}
        figures["checked_share"] = (n_checked / n_mem) if n_mem else None
        examples = [Example(id=f"run{i}", pred="killed" if r["killed"] else "finished", score=r["delay_s"],
                            meta=r) for i, r in enumerate(rows)]
        write_bench_run(out, "crash", params={"runs": runs, "max_delay_s": max_delay_s, "embedder": embedder,
                                              "judge": judge}, seed=seed, n=runs, metrics=figures,
                        primary_metric="memories_checked", examples=examples, markdown=res.to_markdown())
    return res
