"""The :class:`BackgroundAgent`: the asyncio worker that runs the queued integrity checks, and its periodic checks.

The jobs themselves live in the durable :class:`~memlab.agent.queue.JobQueue`; this module claims due jobs from it,
runs each check in a dedicated thread pool (torch and faiss calls block), turns contradictions into notifications
and reports the outcome back to the queue. It also runs a small registry of periodic checks (event and to-do
sources).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memlab._validation import check_user_id
from memlab.agent.queue import Job, JobQueue, JobStatus
from memlab.clock import message_time
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
    "NotificationDraft",
    "PeriodicCheck",
    "TodoSource",
]

log = logging.getLogger(__name__)


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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        # a job's created_at is the time of the message that caused it, or ``clock`` when one is injected
        self.queue = JobQueue(store, max_attempts=max_attempts, backoff_s=backoff_s, max_backoff_s=max_backoff_s,
                              lease_s=lease_s, clock=clock, stamp=clock, on_due=self._poke)
        self.clock = self.queue.clock
        self.db = self.queue.db
        self.owner = self.queue.owner
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
        return self.queue.put(user_id, int(memory_id))

    def enqueue_unchecked(self) -> int:
        """Queue a check for every memory left in the store's outbox (stored, but its check never queued: the
        process died between the two). Called at start; returns how many were queued."""
        return self.queue.enqueue_unchecked()

    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # loop closed between the check and the call
                pass

    def job(self, job_id: int) -> Job:
        """One job by id.

        Raises:
            NotFoundError: unknown id.
        """
        return self.queue.job(job_id)

    def jobs(self, status: JobStatus | str | None = None, *, user_id: str | None = None) -> list[Job]:
        """Jobs, oldest first, optionally filtered by status and user."""
        return self.queue.jobs(status, user_id=user_id)

    def stats(self) -> dict[str, int]:
        """Number of jobs per status."""
        return self.queue.stats()

    def retry(self, job_id: int) -> Job:
        """Put a parked job back in the queue (attempts reset)."""
        return self.queue.retry(job_id)

    def recover(self) -> int:
        """Make claimable again the running jobs whose owner process is gone or whose lease has expired.

        Called at start and on every poll. Returns how many jobs were recovered.
        """
        return self.queue.recover()

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
                job = self.queue.claim()
            except Exception as exc:  # a locked/busy database must not kill the worker
                log.warning("agent: cannot claim a job: %s", exc)
                job = None
            if job is None:
                self.recover()
                due = self.queue.next_due_in()
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
                self.queue.fail(job, exc)
            else:
                self.queue.complete(job, summary)

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
            if self.queue.unfinished(job_ids) == 0:
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
