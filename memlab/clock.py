"""The time memlab writes: now, or the time of the message being processed.

Every component that stamps a row (the memory store, notifications, the agent's queue, chats, the conversation
memory) reads :func:`utcnow`. It is the wall clock, unless a caller is replaying a message said at another time:
inside :func:`message_time` (what ``Memlab.turn(..., at=...)`` and ``POST /api/turn`` with ``at`` use) it is that
message's time, so the memories, their events, relative dates ("last Friday"), the chat turns and the notifications
of a replayed conversation carry the dates they were said on, not the date of the replay.

The override is a :mod:`contextvars` variable: it follows ``asyncio`` tasks and ``asyncio.to_thread`` calls made
inside the block, and never leaks to other threads or users' turns.

Example:
    >>> from datetime import datetime, UTC
    >>> with message_time(datetime(2023, 5, 8, 13, 56, tzinfo=UTC)):
    ...     utcnow().isoformat()
    '2023-05-08T13:56:00+00:00'
    >>> utcnow().year >= 2025
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from memlab.errors import InvalidInputError

__all__ = ["check_time", "message_time", "utcnow"]

_AT: ContextVar[datetime | None] = ContextVar("memlab_message_time", default=None)


def utcnow() -> datetime:
    """The current time (tz-aware UTC), or the message time set by :func:`message_time`."""
    at = _AT.get()
    return at if at is not None else datetime.now(UTC)


def check_time(at: Any, *, name: str = "at", owner: str = "memlab") -> datetime | None:
    """Validate a message time: ``None``, a :class:`datetime` (a naive one is taken as UTC) or an ISO 8601 string.

    Returns:
        The time in UTC, or ``None``.

    Raises:
        InvalidInputError: anything else, or a year before 1900 or after 2199 (a typo, not a message time).

    Example:
        >>> check_time("2023-05-08T13:56:00+02:00").isoformat()
        '2023-05-08T11:56:00+00:00'
    """
    if at is None:
        return None
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at.strip())
        except ValueError as exc:
            raise InvalidInputError(
                f"The '{name}' parameter of {owner} must be an ISO 8601 date-time. Got {at[:60]!r} instead.") from exc
    if not isinstance(at, datetime):
        raise InvalidInputError(
            f"The '{name}' parameter of {owner} must be a datetime or None. Got {type(at).__name__} instead.")
    if not 1900 <= at.year <= 2199:  # the year as written (before the offset moves it across a new year)
        raise InvalidInputError(
            f"The '{name}' parameter of {owner} must be in the years 1900-2199. Got {at.isoformat()}.")
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC)


@contextmanager
def message_time(at: datetime | None) -> Iterator[datetime | None]:
    """Within the block, :func:`utcnow` returns ``at`` (validated by :func:`check_time`); ``None`` keeps the clock."""
    at = check_time(at, owner="message_time")
    if at is None:
        yield None
        return
    token = _AT.set(at)
    try:
        yield at
    finally:
        _AT.reset(token)
