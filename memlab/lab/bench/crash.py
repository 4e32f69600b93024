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
import json
import os
import random
import re
import shutil
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

__all__ = ["CrashResult", "RestartResult", "run_crash_bench", "run_restart_bench"]

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
        return ok and store.backend._consistent(store.index)


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


# ---------------------------------------------------------------------------------------------------------------
# ``memlab bench crash --restart``: the start time after a kill -9 at N memories, with the FAISS file written only
# at clean shutdown ("before": the seed's open, which rebuilt the index when the file lacked any row) and with the
# background writes + catch-up ("after": the file is loaded and only the rows written after it are added).
# ---------------------------------------------------------------------------------------------------------------

_RESTART_CHILD = """
import json, os, sys, time
import numpy as np
t0 = time.perf_counter()
from memlab.embedding import load_embedder
from memlab.store import MemoryStore, SQLiteBackend
db, embedder, mode = sys.argv[1], sys.argv[2], sys.argv[3]
emb = load_embedder(embedder)
if mode == "before":  # the seed's open: load, compare with SQLite, rebuild on any difference
    SQLiteBackend._catch_up = lambda self, idx: self._consistent(idx)
t1 = time.perf_counter()
store = MemoryStore(db, embedder=emb, flush_seconds=3600)
t2 = time.perf_counter()
if mode == "crash":  # add rows after the last write of the file, then wait to be killed
    n, seed = int(sys.argv[4]), int(sys.argv[5])
    vecs = np.random.default_rng(seed).normal(size=(n, emb.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.add_many("crash-user", [f"scritta dopo l'ultimo salvataggio {i}" for i in range(n)], embeddings=vecs)
    print("ready", flush=True)
    time.sleep(3600)
print(json.dumps({"open_s": t2 - t1, "startup_s": t2 - t0, "opened": store.index_opened,
                  "rebuilds": store.index_rebuilds, "vectors": len(store.index)}), flush=True)
os._exit(0)  # the measurement ends at open: no close() (it would write the file)
"""


@dataclass
class RestartResult:
    """Start time after a kill -9 (see :func:`run_restart_bench`)."""

    memories: int
    unflushed: int
    build_s: float
    before_open_s: float
    before_process_s: float
    before_source: str
    after_open_s: float
    after_process_s: float
    after_source: str
    after_caught_up: int

    def to_markdown(self) -> str:
        """The result as a small Markdown table."""
        return "\n".join([
            "| start after kill -9 | index | open the store (s) | whole process (s) |", "|---|---|---|---|",
            f"| before (file written at clean shutdown only) | {self.before_source} | {self.before_open_s:.2f} | "
            f"{self.before_process_s:.2f} |",
            f"| after (background writes + catch-up) | {self.after_source}, +{self.after_caught_up} rows | "
            f"{self.after_open_s:.2f} | {self.after_process_s:.2f} |",
            "", f"{self.memories:,} memories ({self.unflushed} written after the file's last write); "
            f"building the database took {self.build_s:.0f} s."])


def _build_store(db: Path, embedder: str, memories: int, users: int, seed: int) -> None:
    """``memories`` rows over ``users`` users with random unit vectors (no embedding), closed cleanly."""
    import numpy as np

    from memlab.embedding import load_embedder
    from memlab.store import MemoryStore

    emb = load_embedder(embedder)
    rng = np.random.default_rng(seed)
    per_user = -(-memories // users)
    with MemoryStore(db, embedder=emb, flush_every=10**9, flush_seconds=1e6) as store:
        for u in range(users):
            n = min(per_user, memories - u * per_user)
            if n <= 0:
                break
            vecs = rng.normal(size=(n, emb.dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.add_many(f"user{u:04d}", [f"memoria {i} dell'utente {u}" for i in range(n)], embeddings=vecs)


def _child(db: Path, embedder: str, mode: str, *extra: str) -> tuple[subprocess.Popen[str], float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]),
                                                          os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _RESTART_CHILD, str(db), embedder, mode, *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, t0


def _reopen(db: Path, embedder: str, mode: str) -> tuple[dict[str, Any], float]:
    proc, t0 = _child(db, embedder, mode)
    out, err = proc.communicate(timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"the reopening process failed: {err.strip()[-500:]}")
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - t0


def _copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".faiss"):
        if Path(str(src) + suffix).exists():
            shutil.copyfile(str(src) + suffix, str(dst) + suffix)


def run_restart_bench(
    *, memories: int = 100_000, users: int = 100, unflushed: int = 500, embedder: str = "minilm", seed: int = 0,
    db_path: str | None = None,
) -> RestartResult:
    """Start time of a new process after a ``kill -9``, before and after the background FAISS writes.

    A database of ``memories`` rows (random unit vectors through ``add_many(embeddings=...)``: nothing is embedded)
    is built and closed cleanly, so its FAISS file holds every row. A process then opens it, adds ``unflushed``
    rows (the file is not written again) and is killed with SIGKILL. Two copies of what it left are opened by new
    processes: "before" with the seed's open (the file lacks rows: full rebuild from SQLite), "after" with this
    memlab's (load the file, add the missing rows). Both times are of ``MemoryStore(...)`` (the embedder is loaded
    before the clock starts) and of the whole process (interpreter, imports, embedder, open).
    """
    root = Path(db_path).parent if db_path else Path(tempfile.mkdtemp(prefix="memlab-restart-"))
    db = Path(db_path) if db_path else root / "restart.db"
    t0 = time.perf_counter()
    _build_store(db, embedder, memories, users, seed)
    build_s = time.perf_counter() - t0
    proc, _ = _child(db, embedder, "crash", str(unflushed), str(seed + 1))
    try:
        if proc.stdout is None or proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the crashing process failed: {proc.communicate(timeout=60)[1].strip()[-500:]}")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    copies = {mode: root / f"{mode}.db" for mode in ("before", "after")}
    for copy in copies.values():
        _copy_db(db, copy)
    before, before_s = _reopen(copies["before"], embedder, "before")
    after, after_s = _reopen(copies["after"], embedder, "after")
    return RestartResult(
        memories=memories, unflushed=unflushed, build_s=round(build_s, 1),
        before_open_s=round(before["open_s"], 3), before_process_s=round(before_s, 3),
        before_source=str(before["opened"]["source"]),
        after_open_s=round(after["open_s"], 3), after_process_s=round(after_s, 3),
        after_source=str(after["opened"]["source"]), after_caught_up=int(after["opened"]["caught_up"]))
