"""The :class:`BackgroundAgent`: integrity checks off the ingestion path, through a durable SQLite queue.

Two modules: :mod:`memlab.agent.queue` (the ``agent_queue`` table: enqueue, leases, retries, parking, recovery)
and :mod:`memlab.agent.worker` (the asyncio worker that runs the checks, and the periodic checks).

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

from memlab.agent.queue import SCHEMA, Job, JobQueue, JobStatus
from memlab.agent.worker import (
    BackgroundAgent,
    EventSource,
    IntegrityCheck,
    NotificationDraft,
    PeriodicCheck,
    TodoSource,
)

__all__ = [
    "SCHEMA",
    "BackgroundAgent",
    "EventSource",
    "IntegrityCheck",
    "Job",
    "JobQueue",
    "JobStatus",
    "NotificationDraft",
    "PeriodicCheck",
    "TodoSource",
]
