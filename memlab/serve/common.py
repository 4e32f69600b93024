"""What every route module of ``memlab serve`` shares (:mod:`memlab.serve.app` and :mod:`memlab.serve.agent_routes`):
the service behind the app, the dependencies that give a route the service (``Svc``) and the request's user
(``User``), and the error statuses each kind of route declares."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memlab.serve.auth import ApiKeys
from memlab.serve.errors import AuthenticationError, error_responses

if TYPE_CHECKING:
    from memlab.app import Memlab

__all__ = [
    "READ",
    "READ_ONE",
    "WAIT_TIMEOUT_S",
    "WRITE",
    "WRITE_ONE",
    "Service",
    "Svc",
    "User",
    "current_user",
    "service",
]

T = TypeVar("T")

#: Longest a request waits for integrity checks (``wait``) before answering with ``checked: false``.
WAIT_TIMEOUT_S = 120.0


class Service:
    """The :class:`Memlab` behind the app, and the single worker thread every service call runs on."""

    def __init__(self, lab: Memlab, *, owns_lab: bool) -> None:
        self.lab = lab
        self.owns_lab = owns_lab
        self.keys = ApiKeys(lab.store.db)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlab-serve")

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

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
