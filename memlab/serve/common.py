"""What every route module of ``memlab serve`` shares (:mod:`memlab.serve.app` and :mod:`memlab.serve.agent_routes`):
the service behind the app, the dependencies that give a route the service (``Svc``) and the request's user
(``User``), and the error statuses each kind of route declares."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memlab.errors import BackendError
from memlab.serve.auth import ApiKeys
from memlab.serve.errors import AuthenticationError, error_responses
from memlab.serve.fair import Priority, lower_thread_priority
from memlab.serve.health import WriteLog, is_read_only, recover_writes, write_health

if TYPE_CHECKING:
    from memlab.app import Memlab

__all__ = [
    "READ",
    "READ_ONE",
    "WAIT_TIMEOUT_S",
    "WRITE_WATCH_S",
    "WRITE",
    "WRITE_ONE",
    "Service",
    "Svc",
    "User",
    "current_user",
    "service",
]

T = TypeVar("T")

#: How often a server whose writes fail probes them again (seconds).
WRITE_WATCH_S = 1.0

#: Longest a request waits for integrity checks (``wait``) before answering with ``checked: false``.
WAIT_TIMEOUT_S = 120.0


class Service:
    """The :class:`Memlab` behind the app, the single worker thread every request's service call runs on, and a
    second thread for long work that does not touch the memory store (:meth:`long`)."""

    def __init__(self, lab: Memlab, *, owns_lab: bool) -> None:
        self.lab = lab
        self.owns_lab = owns_lab
        self.keys = ApiKeys(lab.store.db)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-serve")
        #: Long work that does not touch the memory store (``/v1/ingest``) runs here, at a lower priority
        #: (:mod:`memlab.serve.fair`), so it never holds up the other requests.
        self.long_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-serve-long",
                                                initializer=lower_thread_priority)
        self.priority = Priority()
        self._chat_locks: dict[str, list[Any]] = {}
        self.writes = WriteLog()
        #: True while the database is known not to accept writes (startup probe, a failed write, /health): the
        #: app's watcher then probes every WRITE_WATCH_S seconds and reopens the connection when it can write.
        self.write_failing = False

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the worker thread. A database failure is recorded for ``/health``; when it is a read-only
        file that has become writable again, the connection is reopened for the next request."""
        loop = asyncio.get_running_loop()
        with self.priority.request():
            return await loop.run_in_executor(self.executor, lambda: self._guarded(fn, *args, **kwargs))

    async def long(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` (long work that does not touch the memory store: parsing, embedding and storing documents) on
        the long-work thread, yielding to the requests in flight (:mod:`memlab.serve.fair`)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.long_executor, lambda: self._guarded(self.priority.run_long, fn, *args, **kwargs))

    def shutdown(self) -> None:
        """Wait for the work in flight on both threads."""
        self.long_executor.shutdown(wait=True)
        self.executor.shutdown(wait=True)

    def _guarded(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except BackendError as exc:
            if exc.__cause__ is not None and isinstance(exc.__cause__, sqlite3.Error):
                self.writes.record(exc)
                self.write_failing = True
                if is_read_only(exc) and not self.lab.store.db.in_transaction:
                    self.write_failing = not recover_writes(self.lab.store.db)
            raise

    async def watch_writes(self) -> None:
        """Forever: while writes are failing, probe them every :data:`WRITE_WATCH_S` seconds (the probe reopens a
        read-only connection once the file is writable), so the server recovers without a request failing first."""
        while True:
            await asyncio.sleep(WRITE_WATCH_S)
            if self.write_failing:
                res = await self.call(write_health, self.lab.store.db)
                self.write_failing = not res["ok"]

    @asynccontextmanager
    async def chat_lock(self, chat_id: str) -> AsyncIterator[None]:
        """Hold the lock of one chat (a PATCH in steps and a DELETE never interleave)."""
        entry = self._chat_locks.setdefault(chat_id, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._chat_locks[chat_id]

    async def wait_checks(self, job_ids: list[int]) -> bool:
        agent = self.lab.agent
        if agent is None or not job_ids:
            return True
        return await agent.wait_idle(job_ids, timeout=WAIT_TIMEOUT_S)


bearer = HTTPBearer(auto_error=False, description="an API key from `memlab users add NAME`")


def service(request: Request) -> Service:
    """The app's service (a dependency)."""
    return request.app.state.svc  # type: ignore[no-any-return]


Svc = Annotated[Service, Depends(service)]


async def current_user(
    svc: Svc, cred: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> str:
    """The user of the request's bearer key (401 without a valid one)."""
    user = None if cred is None else await svc.call(svc.keys.user_for, cred.credentials)
    if user is None:
        raise AuthenticationError(
            "Missing or invalid API key (send 'Authorization: Bearer <key>'; create one with "
            "`memlab users add NAME`)."
        )
    return user


User = Annotated[str, Depends(current_user)]

#: The statuses each kind of route can answer besides its success (see :mod:`memlab.serve.errors`).
READ = error_responses(401, 413, 422, 503)
READ_ONE = error_responses(401, 404, 413, 422, 503)
WRITE = error_responses(401, 413, 415, 422, 503)
WRITE_ONE = error_responses(401, 404, 413, 415, 422, 503)
