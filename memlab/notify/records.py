"""Notification records and their small enums (no I/O here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memlab.records import Urgency

__all__ = ["Notification", "NotificationEvent", "NotificationStatus", "NotificationType", "ResolutionChoice"]


class NotificationType(StrEnum):
    """What a notification is about.

    ``contradiction`` is produced by the background agent today; ``event`` and ``todo`` are extension points
    fed by the agent's periodic-check registry (see :class:`memlab.agent.BackgroundAgent`).
    """

    CONTRADICTION = "contradiction"
    EVENT = "event"
    TODO = "todo"


class NotificationStatus(StrEnum):
    """Life cycle: ``unread`` -> ``read`` -> ``resolved`` (or ``dismissed``)."""

    UNREAD = "unread"
    READ = "read"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


class ResolutionChoice(StrEnum):
    """The user's answer to a contradiction : memlab never decides alone."""

    A = "A"
    """Keep the first (older) memory; the second becomes inactive."""
    B = "B"
    """Keep the second (newer) memory; the first becomes inactive."""
    C = "C"
    """Both are correct; the user's explanation is stored as context on both."""
    D = "D"
    """Neither is correct: both become inactive (kept in history, never deleted)."""


@dataclass(frozen=True, slots=True)
class Notification:
    """One notification of one user.

    Attributes:
        id: integer id (unique in the database).
        user_id: owner; every read and resolve checks it.
        type: ``contradiction``, ``event`` or ``todo``.
        urgency: HIGH (shown before the next reply), MEDIUM (offered after it), LOW (badge only).
        content: a one-line human summary.
        payload: structured data (for contradictions: ``first``/``second`` memory id and text, confidence,
            conflict type, explanation, ``decided_by``).
        memory_ids: the memories it is about (contradictions: ``(first, second)``, older first).
        status: ``unread``, ``read``, ``resolved`` or ``dismissed``.
        actionable: whether it needs an answer (contradictions do); a read, non-actionable notification
            is no longer pending.
        created_at: when it was created (UTC).
        read_at: when the user first saw it.
        shown_at: when it was shown in full inside a reply.
        offered_at: when a MEDIUM offer ("Vuoi che te la mostri ora?") was made for it.
        declined_at: when the user said "no" to the offer, or let it pass (then it is not offered again).
        resolved_at: when it was resolved.
        choice: the resolution choice (``A``/``B``/``C``/``D`` for contradictions).
        note: the user's explanation given with the choice.
        source: provenance (e.g. ``agent:job:12``).
    """

    id: int
    user_id: str
    type: NotificationType
    urgency: Urgency
    content: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    memory_ids: tuple[int, ...] = ()
    status: NotificationStatus = NotificationStatus.UNREAD
    actionable: bool = False
    created_at: datetime | None = None
    read_at: datetime | None = None
    shown_at: datetime | None = None
    offered_at: datetime | None = None
    declined_at: datetime | None = None
    resolved_at: datetime | None = None
    choice: str | None = None
    note: str | None = None
    source: str | None = None

    @property
    def is_open(self) -> bool:
        """True while not resolved or dismissed."""
        return self.status in (NotificationStatus.UNREAD, NotificationStatus.READ)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (used by ``--json`` outputs and the dashboard)."""
        return {
            "id": self.id,
            "user_id": self.user_id,
            "type": self.type.value,
            "urgency": self.urgency.value,
            "content": self.content,
            "payload": dict(self.payload),
            "memory_ids": list(self.memory_ids),
            "status": self.status.value,
            "actionable": self.actionable,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "read_at": self.read_at.isoformat() if self.read_at else None,
            "shown_at": self.shown_at.isoformat() if self.shown_at else None,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
            "choice": self.choice,
            "note": self.note,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class NotificationEvent:
    """One entry of a notification's audit log (created, shown, read, resolved, undone ...).

    Attributes:
        id: event id.
        notification_id: the notification.
        event: what happened.
        actor: who did it (``user:<id>``, ``agent``, ``assistant``).
        at: when (UTC).
        details: free JSON (choice, note, the state before a resolution ...).
    """

    id: int
    notification_id: int
    event: str
    actor: str
    at: datetime
    details: Mapping[str, Any]
