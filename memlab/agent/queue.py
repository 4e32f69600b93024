"""The agent's durable job queue: the ``agent_queue`` table in the store's SQLite file and its bookkeeping.

A job is one integrity check of one stored memory. :class:`JobQueue` enqueues jobs (taking the memory out of the
store's outbox in the same transaction), leases a due job to one worker (owner ``host:pid:token`` plus a lease
deadline), records its completion, backs a failed job off exponentially and parks it after ``max_attempts``, and
makes claimable again the jobs whose owner process is gone or whose lease has expired. It runs nothing: the
:class:`~memlab.agent.BackgroundAgent` claims jobs from it and runs them.

Example:
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
    >>> queue = JobQueue(store)
    >>> job_id = queue.put("u1", store.add("u1", "Abito a Roma").id)
    >>> job = queue.claim()
    >>> job.id == job_id, job.status.value, job.attempts
    (True, 'running', 1)
    >>> queue.complete(job, {"n_contradictions": 0})
    >>> queue.job(job_id).status.value, queue.stats()["done"]
    ('done', 1)
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from memlab.clock import utcnow
from memlab.errors import InvalidInputError, NotFoundError
from memlab.store.memory import MemoryStore

__all__ = ["SCHEMA", "Job", "JobQueue", "JobStatus"]

log = logging.getLogger(__name__)

SCHEMA: list[str] = [
    """
    CREATE TABLE agent_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id TEXT NOT NULL,
        memory_id INTEGER NOT NULL,
        kind TEXT NOT NULL DEFAULT 'integrity',
        status TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at TEXT NOT NULL,
        owner TEXT,
        lease_until TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        result TEXT
    );
    CREATE INDEX idx_agent_queue_due ON agent_queue(status, next_at);
    CREATE INDEX idx_agent_queue_user ON agent_queue(user_id)
    """,
    # 2: at most one open (pending or running) check per memory, whatever process queues it (two servers on one
    # database both hand the store's outbox over at start); a repair first keeps the oldest open job of a memory.
    """
    DELETE FROM agent_queue WHERE status IN ('pending', 'running') AND id NOT IN (
        SELECT MIN(id) FROM agent_queue WHERE status IN ('pending', 'running') GROUP BY memory_id, kind);
    CREATE UNIQUE INDEX uq_agent_queue_open ON agent_queue(memory_id, kind) WHERE status IN ('pending', 'running')
    """,
]


class JobStatus(StrEnum):
    """State of a queued check."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    PARKED = "parked"
    """Failed ``max_attempts`` times; kept with its error, retried only on request (:meth:`BackgroundAgent.retry`)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One queued integrity check.

    Attributes:
        id: job id.
        user_id: owner of the memory.
        memory_id: the memory to check.
        kind: ``integrity``.
        status: pending, running, done or parked.
        attempts: how many times it was started.
        next_at: when it is due (later than now while backing off).
        owner: ``host:pid:token`` of the process running it.
        last_error: the last exception (type and message).
        created_at: enqueue time.
        finished_at: when it ended (done or parked).
        result: summary of the check (contradictions found, notification ids).
    """

    id: int
    user_id: str
    memory_id: int
    kind: str
    status: JobStatus
    attempts: int
    next_at: datetime
    owner: str | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None
    result: Mapping[str, Any] = field(default_factory=dict)


def _utcnow() -> datetime:
    return datetime.now(UTC)  # scheduling and leases always run on the wall clock, never a replayed message's time


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _row(r: Any) -> Job:
    return Job(
        id=int(r["id"]), user_id=r["user_id"], memory_id=int(r["memory_id"]), kind=r["kind"],
        status=JobStatus(r["status"]), attempts=int(r["attempts"]), next_at=datetime.fromisoformat(r["next_at"]),
        owner=r["owner"], last_error=r["last_error"], created_at=datetime.fromisoformat(r["created_at"]),
        finished_at=datetime.fromisoformat(r["finished_at"]) if r["finished_at"] else None,
        result=json.loads(r["result"]) if r["result"] else {},
    )


class JobQueue:
    """The durable queue of integrity checks in ``store``'s SQLite file (thread-safe; runs nothing itself).

    Creating one migrates the ``agent_queue`` table and turns on the store's outbox (``track_checks``): from then on
    every new memory waits in the outbox until its check is queued.

    Args:
        store: the memory store (the queue table lives in its SQLite file).
        max_attempts: a failing check is tried this many times, then parked.
        backoff_s: first retry delay; doubles each attempt, capped at ``max_backoff_s``.
        max_backoff_s: cap of the retry delay.
        lease_s: how long a claimed job belongs to its worker before another process may take it over.
        clock: returns "now" (tz-aware) for scheduling and leases; the wall clock by default.
        stamp: returns a job's ``created_at``; by default the time of the message that caused it.
        on_due: called (from any thread) when a job becomes due, to wake a worker; nothing by default.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 60.0,
        lease_s: float = 600.0,
        clock: Callable[[], datetime] | None = None,
        stamp: Callable[[], datetime] | None = None,
        on_due: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.max_attempts = max_attempts
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.lease_s = float(lease_s)
        self.clock = clock or _utcnow
        self._stamp = stamp or utcnow
        self._on_due = on_due
        self.db = store.db
        self.db.migrate("agent", SCHEMA)
        store.track_checks = True  # from now on every new memory waits in the outbox until its check is queued
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def _poke(self) -> None:
        if self._on_due is not None:
            self._on_due()

    # ------------------------------------------------------------------ enqueue
    def put(self, user_id: str, memory_id: int) -> int:
        """Queue one check in its own transaction, wake a worker and return the job id (no validation)."""
        with self.db.transaction():
            job_id = self._enqueue(user_id, int(memory_id))
        self._poke()
        return job_id

    def _enqueue(self, user_id: str, memory_id: int) -> int:
        """Queue one check and take its memory out of the store's outbox (inside the caller's transaction). A memory
        with an open check already (queued by this or another process) keeps that one: its id is returned."""
        now = _ts(self.clock())
        row = self.db.query_one(
            "INSERT INTO agent_queue(user_id, memory_id, kind, status, attempts, next_at, created_at) "
            "VALUES (?, ?, 'integrity', 'pending', 0, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
            (user_id, memory_id, now, _ts(self._stamp())),
        )
        if row is None:
            row = self.db.query_one("SELECT id FROM agent_queue WHERE memory_id = ? AND kind = 'integrity' "
                                    "AND status IN ('pending', 'running')", (memory_id,))
        self.store.mark_checked_queued([memory_id])
        return int(row["id"]) if row else 0

    def enqueue_unchecked(self) -> int:
        """Queue a check for every memory left in the store's outbox (stored, but its check never queued: the
        process died between the two). Returns how many were queued."""
        n = 0
        while batch := self.store.unchecked():
            with self.db.transaction():
                for memory_id, user_id in batch:
                    self._enqueue(user_id, memory_id)
            n += len(batch)
        if n:
            log.info("agent: queued %d check(s) of memories stored by a process that died before queueing them", n)
            self._poke()
        return n

    # ------------------------------------------------------------------ reading
    def job(self, job_id: int) -> Job:
        """One job by id.

        Raises:
            NotFoundError: unknown id.
        """
        r = self.db.query_one("SELECT * FROM agent_queue WHERE id = ?", (int(job_id),))
        if r is None:
            raise NotFoundError(f"No agent job with id {job_id}.")
        return _row(r)

    def jobs(self, status: JobStatus | str | None = None, *, user_id: str | None = None) -> list[Job]:
        """Jobs, oldest first, optionally filtered by status and user."""
        where, params = [], []
        if status is not None:
            where.append("status = ?")
            params.append(JobStatus(status).value)
        if user_id is not None:
            where.append("user_id = ?")
            params.append(user_id)
        sql = "SELECT * FROM agent_queue" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id"
        return [_row(r) for r in self.db.query(sql, params)]

    def stats(self) -> dict[str, int]:
        """Number of jobs per status."""
        rows = self.db.query("SELECT status, COUNT(*) AS n FROM agent_queue GROUP BY status")
        out = {s.value: 0 for s in JobStatus}
        out.update({r["status"]: int(r["n"]) for r in rows})
        return out

    def unfinished(self, job_ids: Sequence[int] | None = None) -> int:
        """How many jobs (all, or those of ``job_ids``) are pending or running; backing-off jobs count as pending."""
        if job_ids is None:
            r = self.db.query_one("SELECT COUNT(*) AS n FROM agent_queue WHERE status IN ('pending','running')")
        elif not job_ids:
            return 0
        else:
            ids = [int(i) for i in job_ids]
            r = self.db.query_one(
                f"SELECT COUNT(*) AS n FROM agent_queue WHERE status IN ('pending','running') "
                f"AND id IN ({','.join('?' * len(ids))})", ids)
        return int(r["n"]) if r else 0

    def next_due_in(self) -> float | None:
        """Seconds until the earliest pending job is due (0 when one is due now); ``None`` when nothing is pending."""
        r = self.db.query_one("SELECT MIN(next_at) AS t FROM agent_queue WHERE status = 'pending'")
        if r is None or r["t"] is None:
            return None
        return max(0.0, (datetime.fromisoformat(r["t"]) - self.clock()).total_seconds())

    # ------------------------------------------------------------------ leases
    def claim(self) -> Job | None:
        """Lease the earliest due pending job to this queue's owner (attempts + 1); ``None`` when nothing is due."""
        now = self.clock()
        # PostgreSQL: another process may claim at the same moment; it skips the row this one locked
        lock = " FOR UPDATE SKIP LOCKED" if self.db.dialect == "postgresql" else ""
        with self.db.transaction():
            r = self.db.query_one(
                "SELECT * FROM agent_queue WHERE status = 'pending' AND next_at <= ? ORDER BY next_at, id LIMIT 1"
                + lock,
                (_ts(now),),
            )
            if r is None:
                return None
            self.db.execute(
                "UPDATE agent_queue SET status = 'running', attempts = attempts + 1, owner = ?, lease_until = ?, "
                "started_at = ? WHERE id = ?",
                (self.owner, _ts(now + timedelta(seconds=self.lease_s)), _ts(now), int(r["id"])),
            )
        return self.job(int(r["id"]))

    def recover(self) -> int:
        """Make claimable again the running jobs whose owner process is gone or whose lease has expired.

        Returns how many jobs were recovered.
        """
        host = socket.gethostname()
        now = self.clock()
        rows = self.db.query("SELECT id, owner, lease_until FROM agent_queue WHERE status = 'running'")
        stale = []
        for r in rows:
            owner = r["owner"] or ""
            if owner == self.owner:
                continue
            parts = owner.split(":")
            dead = len(parts) >= 2 and parts[0] == host and parts[1].isdigit() and not _pid_alive(int(parts[1]))
            expired = r["lease_until"] is None or datetime.fromisoformat(r["lease_until"]) < now
            if dead or expired:
                stale.append(int(r["id"]))
        if stale:
            with self.db.transaction():
                for jid in stale:
                    self.db.execute(
                        "UPDATE agent_queue SET status = 'pending', owner = NULL, lease_until = NULL, next_at = ? "
                        "WHERE id = ? AND status = 'running'",
                        (_ts(now), jid),
                    )
            log.info("agent: recovered %d job(s) left running by a stopped process", len(stale))
        return len(stale)

    # ------------------------------------------------------------------ outcomes
    def complete(self, job: Job, summary: dict[str, Any]) -> None:
        """Mark a job this owner leased as done, with the summary of its check."""
        self.db.execute(
            "UPDATE agent_queue SET status = 'done', finished_at = ?, owner = NULL, lease_until = NULL, result = ?, "
            "last_error = NULL WHERE id = ? AND owner = ?",
            (_ts(self.clock()), json.dumps(summary), job.id, self.owner),
        )

    def fail(self, job: Job, exc: BaseException) -> None:
        """Record a failed attempt: back off (``backoff_s`` doubling, capped) or park the job after
        ``max_attempts`` or at once when its memory is gone (:class:`~memlab.errors.NotFoundError`)."""
        err = f"{type(exc).__name__}: {exc}"
        permanent = isinstance(exc, NotFoundError)
        now = self.clock()
        if permanent or job.attempts >= self.max_attempts:
            self.db.execute(
                "UPDATE agent_queue SET status = 'parked', finished_at = ?, owner = NULL, lease_until = NULL, "
                "last_error = ? WHERE id = ? AND owner = ?",
                (_ts(now), err, job.id, self.owner),
            )
            log.warning("agent: job %d parked after %d attempt(s): %s", job.id, job.attempts, err)
        else:
            delay = min(self.max_backoff_s, self.backoff_s * (2 ** (job.attempts - 1)))
            self.db.execute(
                "UPDATE agent_queue SET status = 'pending', next_at = ?, owner = NULL, lease_until = NULL, "
                "last_error = ? WHERE id = ? AND owner = ?",
                (_ts(now + timedelta(seconds=delay)), err, job.id, self.owner),
            )
            log.info("agent: job %d failed (attempt %d), retry in %.2fs: %s", job.id, job.attempts, delay, err)

    def retry(self, job_id: int) -> Job:
        """Put a parked job back in the queue (attempts reset)."""
        job = self.job(job_id)
        if job.status is not JobStatus.PARKED:
            raise InvalidInputError(f"Job {job_id} is {job.status.value}; only parked jobs can be retried.")
        self.db.execute(
            "UPDATE agent_queue SET status = 'pending', attempts = 0, next_at = ?, finished_at = NULL WHERE id = ?",
            (_ts(self.clock()), job.id),
        )
        self._poke()
        return self.job(job.id)
