"""The :class:`BackgroundAgent`: integrity checks off the ingestion path, through a durable SQLite queue.

Flow: the assistant stores a memory and calls
:meth:`BackgroundAgent.process_new_knowledge`, which only inserts a row in the ``agent_queue`` table and
returns. An asyncio worker claims due jobs and runs the integrity check in a dedicated thread pool (torch and
faiss calls block); every contradiction found becomes a notification (HIGH by default, de-duplicated by memory
pair). A check that raises is retried with exponential backoff and, after ``max_attempts``, parked with its
error; it never blocks the others. Jobs still pending or in flight when a process stops or crashes (even
``kill -9``) are picked up at the next start: a claimed job carries its owner (host:pid) and a lease, and a
job whose owner is gone or whose lease has expired is claimable again. Re-running a check is safe because
notifications are de-duplicated by pair.

Periodic checks: a small registry (:meth:`BackgroundAgent.register_periodic`) runs functions on an
interval. Two hooks are registered by default, :meth:`BackgroundAgent.check_external_events` and
:meth:`BackgroundAgent.check_todo_list`; they poll the :class:`EventSource` / :class:`TodoSource` objects
added with :meth:`BackgroundAgent.add_event_source` / :meth:`BackgroundAgent.add_todo_source` (a calendar,
a task list ...). memlab ships no source, so by default they produce nothing (no fake data).

Example:
    >>> import asyncio
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> from memlab.records import IntegrityResult
    >>> class NoConflicts:
    ...     def check(self, item): return IntegrityResult(item_id=item.id, has_contradiction=False)
    >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
    >>> agent = BackgroundAgent(store, NoConflicts())
    >>> async def demo():
    ...     async with agent:
    ...         job = agent.process_new_knowledge("u1", store.add("u1", "Abito a Roma").id)
    ...         await agent.wait_idle(timeout=10)
    ...         return agent.job(job).status.value
    >>> asyncio.run(demo())
    'done'
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from memlab._validation import check_user_id
from memlab.clock import message_time, utcnow
from memlab.errors import BackendError, InvalidInputError, NotFoundError
from memlab.notify.records import Notification, NotificationType
from memlab.notify.service import NotificationService
from memlab.records import IntegrityResult, MemoryItem, Urgency
from memlab.store.memory import MemoryStore
from memlab.text import detect_lang, display_text, messages, one_line

__all__ = [
    "BackgroundAgent",
    "EventSource",
    "IntegrityCheck",
    "Job",
    "JobStatus",
    "NotificationDraft",
    "PeriodicCheck",
    "TodoSource",
]

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


@runtime_checkable
class IntegrityCheck(Protocol):
    """Anything with ``check(item) -> IntegrityResult`` (e.g. ``memlab.integrity.SemanticIntegrityChecker``)."""

    def check(self, item: MemoryItem) -> IntegrityResult:
        """Check one stored memory against the user's other memories (no side effects)."""
        ...


@dataclass(frozen=True, slots=True)
class NotificationDraft:
    """A notification proposed by a periodic check (event or todo source).

    Attributes:
        user_id: who must see it.
        type: ``event`` or ``todo``.
        urgency: HIGH/MEDIUM/LOW.
        content: one-line text in the user's language.
        payload: structured data (JSON-able).
        dedupe_key: stable key from the source (e.g. ``calendar:<event id>``) so a re-poll never duplicates.
    """

    user_id: str
    type: NotificationType
    urgency: Urgency
    content: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    dedupe_key: str | None = None


@runtime_checkable
class EventSource(Protocol):
    """An external event feed (calendar, email ...) polled by :meth:`BackgroundAgent.check_external_events`."""

    name: str

    def fetch(self) -> Iterable[NotificationDraft]:
        """Return notification drafts for events that need the user's attention now."""
        ...


@runtime_checkable
class TodoSource(Protocol):
    """A to-do list (due or overdue tasks) polled by :meth:`BackgroundAgent.check_todo_list`."""

    name: str

    def fetch(self) -> Iterable[NotificationDraft]:
        """Return notification drafts for tasks that need the user's attention now."""
        ...


@dataclass(slots=True)
class PeriodicCheck:
    """A function run every ``interval_s`` seconds by the agent; it returns the notifications it created."""

    name: str
    interval_s: float
    func: Callable[[], Sequence[Notification]]
    last_run: float | None = None
    last_error: str | None = None


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


class BackgroundAgent:
    """Runs integrity checks from a durable queue and turns contradictions into notifications.

    Args:
        store: the memory store (the queue table lives in its SQLite file).
        checker: an :class:`IntegrityCheck` (``memlab.integrity.SemanticIntegrityChecker`` in production).
        notifications: where notifications go (default: a :class:`NotificationService` on the same store).
        max_attempts: a failing check is tried this many times, then parked.
        backoff_s: first retry delay; doubles each attempt, capped at ``max_backoff_s``.
        max_backoff_s: cap of the retry delay.
        concurrency: checks run at the same time (threads); 1 keeps CPU for ingestion on small machines.
        poll_interval_s: how often an idle worker looks at the queue (other processes may enqueue).
        lease_s: how long a claimed job belongs to its worker before another process may take it over.
        clock: returns "now" (tz-aware); injectable for tests.
    """

    def __init__(
        self,
        store: MemoryStore,
        checker: IntegrityCheck,
        notifications: NotificationService | None = None,
        *,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 60.0,
        concurrency: int = 1,
        poll_interval_s: float = 1.0,
        lease_s: float = 600.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        owner = "BackgroundAgent"
        if not hasattr(checker, "check"):
            raise InvalidInputError(
                f"The 'checker' parameter of {owner} must have a check(item) method. Got {type(checker).__name__}."
            )
        for name, val, lo in (("max_attempts", max_attempts, 1), ("concurrency", concurrency, 1)):
            if isinstance(val, bool) or not isinstance(val, int) or val < lo:
                raise InvalidInputError(f"The {name!r} parameter of {owner} must be an int in [{lo}, inf). "
                                        f"Got {val!r} instead.")
        for name, fval in (("backoff_s", backoff_s), ("max_backoff_s", max_backoff_s),
                           ("poll_interval_s", poll_interval_s), ("lease_s", lease_s)):
            if isinstance(fval, bool) or not isinstance(fval, int | float) or fval < 0:
                raise InvalidInputError(f"The {name!r} parameter of {owner} must be a float in [0, inf). "
                                        f"Got {fval!r} instead.")
        self.store = store
        self.checker = checker
        self.notifications = notifications or NotificationService(store)
        self.max_attempts = max_attempts
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.concurrency = concurrency
        self.poll_interval_s = float(poll_interval_s)
        self.lease_s = float(lease_s)
        self.clock = clock or _utcnow
        self._stamp = clock or utcnow  # a job's created_at: the time of the message that caused it
        self.db = store.db
        self.db.migrate("agent", SCHEMA)
        store.track_checks = True  # from now on every new memory waits in the outbox until its check is queued
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._executor: ThreadPoolExecutor | None = None
        self._stopping = False
        self._stop_event: asyncio.Event | None = None
        self._periodic: dict[str, PeriodicCheck] = {}
        self._event_sources: list[EventSource] = []
        self._todo_sources: list[TodoSource] = []
        self.register_periodic("external_events", self.check_external_events, interval_s=900.0)
        self.register_periodic("todo_list", self.check_todo_list, interval_s=3600.0)

    def get_params(self) -> dict[str, Any]:
        """JSON-able parameters (recorded by benchmarks)."""
        return {"max_attempts": self.max_attempts, "backoff_s": self.backoff_s, "max_backoff_s": self.max_backoff_s,
                "concurrency": self.concurrency, "poll_interval_s": self.poll_interval_s, "lease_s": self.lease_s,
                "checker": type(self.checker).__name__}

    # ------------------------------------------------------------------ queue (sync, thread-safe)
    def process_new_knowledge(self, user_id: str, memory_id: int) -> int:
        """Enqueue an integrity check of a newly stored memory and return at once.

        Safe to call from any thread, with or without a running worker (the job waits in SQLite).

        Args:
            user_id: owner of the memory.
            memory_id: the memory to check.

        Returns:
            The job id.

        Raises:
            NotFoundError: the memory does not exist or belongs to another user.
        """
        user_id = check_user_id(user_id, owner="BackgroundAgent.process_new_knowledge")
        self.store.get(memory_id, user_id=user_id)
        with self.db.transaction():
            job_id = self._enqueue(user_id, int(memory_id))
        self._poke()
        return job_id

    def _enqueue(self, user_id: str, memory_id: int) -> int:
        """Queue one check and take its memory out of the store's outbox (inside the caller's transaction)."""
        now = _ts(self.clock())
        cur = self.db.execute(
            "INSERT INTO agent_queue(user_id, memory_id, kind, status, attempts, next_at, created_at) "
            "VALUES (?, ?, 'integrity', 'pending', 0, ?, ?)",
            (user_id, memory_id, now, _ts(self._stamp())),
        )
        self.store.mark_checked_queued([memory_id])
        return int(cur.lastrowid or 0)

    def enqueue_unchecked(self) -> int:
        """Queue a check for every memory left in the store's outbox (stored, but its check never queued: the
        process died between the two). Called at start; returns how many were queued."""
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

    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # loop closed between the check and the call
                pass

    @staticmethod
    def _row(r: Any) -> Job:
        return Job(
            id=int(r["id"]), user_id=r["user_id"], memory_id=int(r["memory_id"]), kind=r["kind"],
            status=JobStatus(r["status"]), attempts=int(r["attempts"]), next_at=datetime.fromisoformat(r["next_at"]),
            owner=r["owner"], last_error=r["last_error"], created_at=datetime.fromisoformat(r["created_at"]),
            finished_at=datetime.fromisoformat(r["finished_at"]) if r["finished_at"] else None,
            result=json.loads(r["result"]) if r["result"] else {},
        )

    def job(self, job_id: int) -> Job:
        """One job by id.

        Raises:
            NotFoundError: unknown id.
        """
        r = self.db.query_one("SELECT * FROM agent_queue WHERE id = ?", (int(job_id),))
        if r is None:
            raise NotFoundError(f"No agent job with id {job_id}.")
        return self._row(r)

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
        return [self._row(r) for r in self.db.query(sql, params)]

    def stats(self) -> dict[str, int]:
        """Number of jobs per status."""
        rows = self.db.query("SELECT status, COUNT(*) AS n FROM agent_queue GROUP BY status")
        out = {s.value: 0 for s in JobStatus}
        out.update({r["status"]: int(r["n"]) for r in rows})
        return out

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

    def recover(self) -> int:
        """Make claimable again the running jobs whose owner process is gone or whose lease has expired.

        Called at start and on every poll. Returns how many jobs were recovered.
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

    def _claim(self) -> Job | None:
        now = self.clock()
        with self.db.transaction():
            r = self.db.query_one(
                "SELECT * FROM agent_queue WHERE status = 'pending' AND next_at <= ? ORDER BY next_at, id LIMIT 1",
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

    def _next_due_in(self) -> float | None:
        r = self.db.query_one("SELECT MIN(next_at) AS t FROM agent_queue WHERE status = 'pending'")
        if r is None or r["t"] is None:
            return None
        return max(0.0, (datetime.fromisoformat(r["t"]) - self.clock()).total_seconds())

    # ------------------------------------------------------------------ running one job
    def _explicit_update(self, user_id: str, c: Any) -> str | None:
        """The "updated" notice when the new memory explicitly corrects the version it replaced in its slot
        ("Anzi, chiamami Li Si"); ``None`` when the pair is a real doubt to ask about."""
        new = self.store.get(int(c.memory_id), user_id=user_id)
        old = self.store.get(int(c.other_id), user_id=user_id)
        if new.key is None or old.key != new.key or old.superseded_by != new.id:
            return None
        if not self.store.is_correction(new.id, user_id=user_id):
            return None
        return messages(detect_lang(new.text))["updated"].format(new=display_text(one_line(new.text)),
                                                               old=display_text(one_line(old.text)))

    def run_job(self, job: Job) -> dict[str, Any]:
        """Run one check synchronously and create its notifications (used by the worker; handy in tests)."""
        with message_time(job.created_at):  # a check's notifications carry the time of the message that caused it
            return self._run_job(job)

    def _run_job(self, job: Job) -> dict[str, Any]:
        item = self.store.get(job.memory_id, user_id=job.user_id)
        result = self.checker.check(item)
        created: list[int] = []
        skipped = 0
        for c in result.contradictions:
            # a contradiction must stay inside one user's memories (defence in depth)
            try:
                self.store.get(int(c.other_id), user_id=job.user_id)
                self.store.get(int(c.memory_id), user_id=job.user_id)
            except NotFoundError:
                skipped += 1
                log.warning("agent: job %d: contradiction with a memory outside user %r skipped", job.id, job.user_id)
                continue
            update = self._explicit_update(job.user_id, c)
            if update is not None:
                n = self.notifications.create(NotificationType.EVENT, Urgency.LOW, update, job.user_id,
                                              payload={"kind": "updated", "old_id": int(c.other_id),
                                                       "new_id": int(c.memory_id)},
                                              memory_ids=(int(c.other_id), int(c.memory_id)),
                                              dedupe_key=f"updated:{c.other_id}:{c.memory_id}",
                                              source=f"agent:job:{job.id}")
            else:
                n = self.notifications.create_contradiction(job.user_id, c, source=f"agent:job:{job.id}")
            created.append(n.id)
        for c in result.clarifications:  # LOW: in the bell, never before the reply
            created.append(self.notifications.create_contradiction(job.user_id, c, source=f"agent:job:{job.id}").id)
        return {"has_contradiction": bool(result.has_contradiction), "n_contradictions": len(result.contradictions),
                "notification_ids": created, "n_candidates": int(result.n_candidates), "skipped": skipped}

    def _complete(self, job: Job, summary: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE agent_queue SET status = 'done', finished_at = ?, owner = NULL, lease_until = NULL, result = ?, "
            "last_error = NULL WHERE id = ? AND owner = ?",
            (_ts(self.clock()), json.dumps(summary), job.id, self.owner),
        )

    def _fail(self, job: Job, exc: BaseException) -> None:
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

    # ------------------------------------------------------------------ asyncio worker
    @property
    def running(self) -> bool:
        """Whether the worker tasks are running."""
        return bool(self._tasks) and not self._stopping

    async def start(self) -> None:
        """Start the worker(s) and the periodic checks in the running event loop.

        Jobs left by an earlier (stopped or crashed) process are recovered and run.
        """
        if self._tasks:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._stopping = False
        self._stop_event = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="memlab-agent")
        self.recover()
        self.enqueue_unchecked()
        self._tasks = [asyncio.create_task(self._worker(i), name=f"memlab-agent-{i}") for i in range(self.concurrency)]
        self._tasks.append(asyncio.create_task(self._periodic_loop(), name="memlab-agent-periodic"))

    async def stop(self) -> None:
        """Stop after the checks in flight finish; pending jobs stay in the queue for the next start."""
        if not self._tasks:
            return
        self._stopping = True
        if self._wake is not None:
            self._wake.set()
        if self._stop_event is not None:
            self._stop_event.set()
        tasks, self._tasks = self._tasks, []
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self._loop = None
        self._wake = None

    async def __aenter__(self) -> BackgroundAgent:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _worker(self, wid: int) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None  # set by start()
        while not self._stopping:
            try:
                job = self._claim()
            except Exception as exc:  # a locked/busy database must not kill the worker
                log.warning("agent: cannot claim a job: %s", exc)
                job = None
            if job is None:
                self.recover()
                due = self._next_due_in()
                timeout = self.poll_interval_s if due is None else min(self.poll_interval_s, due)
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.005))
                except TimeoutError:
                    pass
                continue
            try:
                summary = await loop.run_in_executor(self._executor, self.run_job, job)
            except Exception as exc:  # one failing check never stops the others
                self._fail(job, exc)
            else:
                self._complete(job, summary)

    async def wait_idle(self, job_ids: Sequence[int] | None = None, *, timeout: float | None = None) -> bool:
        """Wait until the queue (or just ``job_ids``) has nothing pending or running.

        Jobs backing off after a failure count as pending (so this waits for their retries); parked jobs
        count as finished.

        Returns:
            True when idle, False on timeout.

        Raises:
            BackendError: the worker is not running and there is work to wait for.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if job_ids is None:
                r = self.db.query_one("SELECT COUNT(*) AS n FROM agent_queue WHERE status IN ('pending','running')")
            elif not job_ids:
                return True
            else:
                ids = [int(i) for i in job_ids]
                r = self.db.query_one(
                    f"SELECT COUNT(*) AS n FROM agent_queue WHERE status IN ('pending','running') "
                    f"AND id IN ({','.join('?' * len(ids))})", ids)
            if not r or int(r["n"]) == 0:
                return True
            if not self._tasks:
                raise BackendError("BackgroundAgent is not running: start() it (or use 'async with agent') "
                                   "before wait_idle().")
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)

    # ------------------------------------------------------------------ periodic checks
    def register_periodic(self, name: str, func: Callable[[], Sequence[Notification]], *, interval_s: float) -> None:
        """Register (or replace) a periodic check run every ``interval_s`` seconds while the agent runs.

        ``func`` runs in the agent's thread pool; it returns the notifications it created. An exception is
        logged and kept in ``periodic_checks()[name].last_error``; it never stops the agent.
        """
        if isinstance(interval_s, bool) or not isinstance(interval_s, int | float) or interval_s <= 0:
            raise InvalidInputError(f"The 'interval_s' parameter of BackgroundAgent.register_periodic must be a float "
                                    f"in (0, inf). Got {interval_s!r} instead.")
        self._periodic[name] = PeriodicCheck(name=name, interval_s=float(interval_s), func=func)

    def periodic_checks(self) -> dict[str, PeriodicCheck]:
        """The registry of periodic checks, by name."""
        return dict(self._periodic)

    def add_event_source(self, source: EventSource) -> None:
        """Add an external event feed polled by :meth:`check_external_events`."""
        if not hasattr(source, "fetch"):
            raise InvalidInputError("An event source must have a fetch() method returning NotificationDraft objects.")
        self._event_sources.append(source)

    def add_todo_source(self, source: TodoSource) -> None:
        """Add a to-do list polled by :meth:`check_todo_list`."""
        if not hasattr(source, "fetch"):
            raise InvalidInputError("A todo source must have a fetch() method returning NotificationDraft objects.")
        self._todo_sources.append(source)

    def _drain(self, sources: Sequence[EventSource | TodoSource], ntype: NotificationType) -> list[Notification]:
        out: list[Notification] = []
        for src in sources:
            for d in src.fetch():
                if NotificationType(d.type) is not ntype:
                    raise InvalidInputError(f"Source {getattr(src, 'name', src)!r} produced a {d.type!r} draft; "
                                            f"expected {ntype.value!r}.")
                out.append(self.notifications.create(
                    ntype, d.urgency, d.content, d.user_id, payload=d.payload, dedupe_key=d.dedupe_key,
                    source=f"{ntype.value}:{getattr(src, 'name', type(src).__name__)}"))
        return out

    def check_external_events(self) -> list[Notification]:
        """Hook: poll every registered :class:`EventSource` and notify (``event`` type). None by default."""
        return self._drain(self._event_sources, NotificationType.EVENT)

    def check_todo_list(self) -> list[Notification]:
        """Hook: poll every registered :class:`TodoSource` and notify (``todo`` type). None by default."""
        return self._drain(self._todo_sources, NotificationType.TODO)

    async def run_periodic_now(self, name: str | None = None) -> dict[str, int]:
        """Run one (or every) periodic check now; returns how many notifications each produced."""
        names = [name] if name is not None else list(self._periodic)
        out: dict[str, int] = {}
        loop = asyncio.get_running_loop()
        for n in names:
            if n not in self._periodic:
                raise NotFoundError(f"No periodic check named {n!r}. Registered: {sorted(self._periodic)}.")
            pc = self._periodic[n]
            pc.last_run = time.monotonic()
            try:
                made = await loop.run_in_executor(self._executor, pc.func)
                pc.last_error = None
                out[n] = len(made)
            except Exception as exc:
                pc.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("agent: periodic check %r failed: %s", n, pc.last_error)
                out[n] = 0
        return out

    async def _periodic_loop(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            now = time.monotonic()
            for pc in list(self._periodic.values()):
                if self._stopping:
                    break
                if pc.last_run is None or now - pc.last_run >= pc.interval_s:
                    await self.run_periodic_now(pc.name)
            assert self._stop_event is not None
            try:
                await asyncio.wait_for(self._stop_event.wait(), timeout=min(1.0, self.poll_interval_s))
            except TimeoutError:
                pass
