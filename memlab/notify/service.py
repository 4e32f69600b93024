"""The persistent :class:`NotificationService` (same SQLite file as the memory store).

Tables (component ``notifications``, created with ``Database.migrate``):

- ``notifications``: one row per notification. A partial unique index on ``(user_id, type, pair_key)`` over
  open rows makes "never two open notifications for the same unordered memory pair" hold even across
  processes; :meth:`NotificationService.create` also returns the *resolved* one for a pair the user has
  already answered (the user's answer is final, the agent does not ask again).
- ``notification_events``: the audit log of every notification (created, shown, read, resolved, undone).

Every read and write takes the ``user_id``; a notification of another user is reported as
:class:`~memlab.errors.NotFoundError`, exactly like an unknown id.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memlab._validation import check_enum, check_id, check_positive_int, check_text, check_user_id
from memlab.clock import utcnow
from memlab.errors import InvalidInputError, MemlabError, NotFoundError
from memlab.notify.records import (
    Notification,
    NotificationEvent,
    NotificationStatus,
    NotificationType,
    ResolutionChoice,
)
from memlab.records import Contradiction, Urgency
from memlab.store.db import Database, is_database
from memlab.store.opening import open_database

if TYPE_CHECKING:
    from memlab.store.memory import MemoryStore

__all__ = ["NotificationService"]

SCHEMA: list[str] = [
    """
    CREATE TABLE notifications (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id TEXT NOT NULL,
        type TEXT NOT NULL,
        urgency TEXT NOT NULL,
        content TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        memory_ids TEXT NOT NULL DEFAULT '[]',
        pair_key TEXT,
        status TEXT NOT NULL DEFAULT 'unread',
        actionable INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        read_at TEXT,
        shown_at TEXT,
        offered_at TEXT,
        declined_at TEXT,
        resolved_at TEXT,
        choice TEXT,
        note TEXT,
        resolution TEXT,
        source TEXT
    );
    CREATE INDEX idx_notifications_user ON notifications(user_id, status, urgency);
    CREATE UNIQUE INDEX uq_notifications_open_pair ON notifications(user_id, type, pair_key)
        WHERE pair_key IS NOT NULL AND status IN ('unread', 'read');
    CREATE TABLE notification_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        notification_id INTEGER NOT NULL,
        user_id TEXT NOT NULL,
        event TEXT NOT NULL,
        actor TEXT NOT NULL,
        at TEXT NOT NULL,
        details TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX idx_notification_events ON notification_events(notification_id)
    """,
]

_OPEN = ("unread", "read")
_MAX_CONTENT = 10_000
_URGENCY_ORDER = {Urgency.HIGH: 0, Urgency.MEDIUM: 1, Urgency.LOW: 2}


def _utcnow() -> datetime:
    return utcnow()  # the wall clock, or a replayed message's time (memlab.clock)


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def _parse(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


def pair_key(a: int, b: int) -> str:
    """Key of an unordered memory pair (``"3:7"`` for (7, 3) and (3, 7))."""
    lo, hi = sorted((int(a), int(b)))
    return f"{lo}:{hi}"


class NotificationService:
    """Create, list, read and resolve notifications, persisted beside the memories.

    Args:
        store_or_db: a :class:`~memlab.store.MemoryStore` (needed to resolve contradictions: the choice is
            applied to its memories) or a bare :class:`~memlab.store.Database` / path (read-only use,
            events and todos).
        clock: returns "now" (tz-aware); injectable for tests.

    Example:
        >>> from memlab.store import MemoryStore
        >>> from memlab.testing import FakeEmbedder
        >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
        >>> svc = NotificationService(store)
        >>> n = svc.create("todo", "low", "Rinnovare il passaporto", "u1")
        >>> svc.count("u1"), svc.count("u2")
        (1, 0)
    """

    def __init__(
        self,
        store_or_db: MemoryStore | Database | str | os.PathLike[str],
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from memlab.store.memory import MemoryStore

        self.store: MemoryStore | None = None
        if isinstance(store_or_db, MemoryStore):
            self.store = store_or_db
            self.db = store_or_db.db
        elif is_database(store_or_db):
            self.db = store_or_db
        elif isinstance(store_or_db, str | os.PathLike):
            self.db = open_database(store_or_db)
        else:
            raise InvalidInputError(
                "The 'store_or_db' parameter of NotificationService must be a MemoryStore, a Database or a path. "
                f"Got {type(store_or_db).__name__} instead."
            )
        self.clock = clock or (store_or_db.clock if isinstance(store_or_db, MemoryStore) else _utcnow)
        self.db.migrate("notifications", SCHEMA)

    # ------------------------------------------------------------------ rows
    @staticmethod
    def _row(row: sqlite3.Row) -> Notification:
        return Notification(
            id=int(row["id"]),
            user_id=row["user_id"],
            type=NotificationType(row["type"]),
            urgency=Urgency(row["urgency"]),
            content=row["content"],
            payload=json.loads(row["payload"] or "{}"),
            memory_ids=tuple(int(i) for i in json.loads(row["memory_ids"] or "[]")),
            status=NotificationStatus(row["status"]),
            actionable=bool(row["actionable"]),
            created_at=_parse(row["created_at"]),
            read_at=_parse(row["read_at"]),
            shown_at=_parse(row["shown_at"]),
            offered_at=_parse(row["offered_at"]),
            declined_at=_parse(row["declined_at"]),
            resolved_at=_parse(row["resolved_at"]),
            choice=row["choice"],
            note=row["note"],
            source=row["source"],
        )

    def _event(self, notification_id: int, user_id: str, event: str, actor: str, **details: Any) -> None:
        self.db.execute(
            "INSERT INTO notification_events(notification_id, user_id, event, actor, at, details) VALUES (?,?,?,?,?,?)",
            (notification_id, user_id, event, actor, _ts(self.clock()), json.dumps(details, default=str)),
        )

    # ------------------------------------------------------------------ create
    def create(
        self,
        type: NotificationType | str,
        urgency: Urgency | str,
        content: str,
        user_id: str,
        *,
        payload: Mapping[str, Any] | None = None,
        memory_ids: Sequence[int] = (),
        actionable: bool | None = None,
        source: str | None = None,
        dedupe_key: str | None = None,
    ) -> Notification:
        """Create a notification, or return the one that already covers the same memory pair.

        Args:
            type: ``contradiction``, ``event`` or ``todo``.
            urgency: ``high``, ``medium`` or ``low``.
            content: one-line human summary (non-empty, no control characters).
            user_id: owner.
            payload: structured, JSON-able data.
            memory_ids: memories it is about. For a contradiction exactly two ids, stored older first;
                they define the unordered pair used for de-duplication.
            actionable: needs an answer (default: True for contradictions, False otherwise).
            source: provenance (e.g. ``agent:job:12``).
            dedupe_key: for events and todos, a source-defined key (e.g. ``calendar:evt-123``): a second
                notification with the same key is not created. Contradictions use their memory pair.

        Returns:
            The new notification, or the existing one (open or already resolved) for the same pair/key.

        Raises:
            InvalidInputError: unknown type/urgency, empty content, a contradiction without two distinct ids,
                or a payload that is not JSON-able. Nothing is written.
            NotFoundError: a contradiction's memory is not ``user_id``'s (checked when built on a store).
        """
        owner = "NotificationService.create"
        user_id = check_user_id(user_id, owner=owner)
        ntype, urg = check_enum(NotificationType, type, name="type", owner=owner), check_enum(
            Urgency, urgency, name="urgency", owner=owner)
        content = check_text(content, name="content", owner=owner, max_chars=_MAX_CONTENT)
        ids, key = self._pair_or_key(ntype, memory_ids, dedupe_key, user_id, owner)
        try:
            payload_json = json.dumps(dict(payload or {}), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"The 'payload' parameter of {owner} must be JSON-serialisable: {exc}") from exc
        act = (ntype is NotificationType.CONTRADICTION) if actionable is None else bool(actionable)
        with self.db.transaction():
            if key is not None and (row := self._same_pair(user_id, ntype, key)) is not None:
                return self._row(row)
            # another process may write the same open pair meanwhile: the unique index keeps one, this call returns it
            new = self.db.query_one(
                "INSERT INTO notifications(user_id, type, urgency, content, payload, memory_ids, pair_key, status, "
                "actionable, created_at, source) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING RETURNING id",
                (user_id, ntype.value, urg.value, content, payload_json, json.dumps(ids), key, "unread", int(act),
                 _ts(self.clock()), source),
            )
            if new is None:
                row = self._same_pair(user_id, ntype, key)
                assert row is not None
                return self._row(row)
            nid = int(new["id"])
            self._event(nid, user_id, "created", source or "system", urgency=urg.value)
        return self.get(nid, user_id=user_id)

    def _same_pair(self, user_id: str, ntype: NotificationType, key: str | None) -> Any:
        """The user's newest notification of this type about the same pair (open ones first), dismissed ones aside."""
        return self.db.query_one(
            "SELECT * FROM notifications WHERE user_id = ? AND type = ? AND pair_key = ? "
            "AND status != 'dismissed' ORDER BY (status IN ('unread','read')) DESC, id DESC LIMIT 1",
            (user_id, ntype.value, key),
        )

    def _pair_or_key(
        self, ntype: NotificationType, memory_ids: Sequence[int], dedupe_key: str | None, user_id: str, owner: str
    ) -> tuple[list[int], str | None]:
        """The stored memory ids and the de-duplication key: the unordered pair of a contradiction (both memories
        must be ``user_id``'s), else the source's ``dedupe_key``."""
        ids = [int(i) for i in memory_ids]
        if ntype is not NotificationType.CONTRADICTION:
            key = None if dedupe_key is None else "k:" + check_text(dedupe_key, name="dedupe_key", owner=owner,
                                                                  max_chars=512)
            return ids, key
        if len(ids) != 2 or ids[0] == ids[1]:
            raise InvalidInputError(
                f"The 'memory_ids' parameter of {owner} must hold two distinct memory ids for a contradiction. "
                f"Got {list(memory_ids)!r} instead."
            )
        ids = sorted(ids)
        if self.store is not None:  # both memories must be this user's (isolation)
            for i in ids:
                self.store.get(i, user_id=user_id)
        return ids, pair_key(*ids)

    def create_contradiction(
        self, user_id: str, contradiction: Contradiction, *, source: str | None = None
    ) -> Notification:
        """Create (or return the existing) notification for one detected contradiction.

        The two memories are stored older first (``first``/``second`` in the payload), which is what the
        A/B choices refer to. Urgency comes from the contradiction (HIGH by default).
        """
        a, b = int(contradiction.other_id), int(contradiction.memory_id)
        texts = {a: contradiction.other_text, b: contradiction.memory_text}
        first, second = sorted((a, b))
        payload = {
            "first": {"id": first, "text": texts[first], **self._said(first)},
            "second": {"id": second, "text": texts[second], **self._said(second)},
            "new_id": b,
            "confidence": float(contradiction.confidence),
            "conflict_type": str(contradiction.type.value if hasattr(contradiction.type, "value") else contradiction.type),
            "explanation": contradiction.explanation,
            "decided_by": contradiction.decided_by,
            "details": json.loads(json.dumps(dict(contradiction.details or {}), default=str)),
        }
        content = f'"{texts[first]}" / "{texts[second]}"'
        if len(content) > _MAX_CONTENT:
            content = content[: _MAX_CONTENT - 1] + "…"
        return self.create(
            NotificationType.CONTRADICTION,
            contradiction.urgency,
            content,
            user_id,
            payload=payload,
            memory_ids=(first, second),
            source=source,
        )

    def _said(self, memory_id: int) -> dict[str, str]:
        """``{"said": <the user's words>}`` when the memory came from a chat message whose words were recorded (the
        ``said`` event :class:`memlab.assistant.Assistant` writes), else ``{}``."""
        if self.store is None:
            return {}
        try:
            events = self.store.events(memory_id, chain=False)
        except MemlabError:
            return {}
        words = [e.details.get("words") for e in events if e.event == "said"]
        return {"said": str(words[-1])} if words and isinstance(words[-1], str) and words[-1].strip() else {}

    # ------------------------------------------------------------------ reads
    def get(self, id: int, *, user_id: str) -> Notification:
        """The notification ``id`` of ``user_id``.

        Raises:
            NotFoundError: unknown id, or one owned by another user (indistinguishable on purpose).
        """
        user_id = check_user_id(user_id, owner="NotificationService.get")
        id = check_id(id, kind="notification")
        row = self.db.query_one("SELECT * FROM notifications WHERE id = ? AND user_id = ?", (id, user_id))
        if row is None:
            raise NotFoundError(f"No notification with id {id} for user {user_id!r}.")
        return self._row(row)

    def pending(
        self, user_id: str, urgency: Urgency | str | None = None, *, type: NotificationType | str | None = None
    ) -> list[Notification]:
        """Open notifications still waiting for the user, most urgent first, then oldest first.

        An actionable notification (a contradiction) stays pending until resolved; an informational one
        stops being pending once read.
        """
        user_id = check_user_id(user_id, owner="NotificationService.pending")
        where = ["user_id = ?", "(status = 'unread' OR (status = 'read' AND actionable = 1))"]
        params: list[Any] = [user_id]
        if urgency is not None:
            where.append("urgency = ?")
            params.append(Urgency(urgency).value)
        if type is not None:
            where.append("type = ?")
            params.append(NotificationType(type).value)
        rows = self.db.query(f"SELECT * FROM notifications WHERE {' AND '.join(where)} ORDER BY id", params)
        out = [self._row(r) for r in rows]
        return sorted(out, key=lambda n: (_URGENCY_ORDER[n.urgency], n.id))

    def list(self, user_id: str, *, include_resolved: bool = False, limit: int | None = None, offset: int = 0,
             urgencies: Sequence[Urgency | str] | None = None, types: Sequence[NotificationType | str] | None = None,
             ) -> list[Notification]:
        """All notifications of ``user_id`` (open only unless ``include_resolved``), newest first.

        Args:
            limit, offset: one page: at most ``limit`` notifications (an int >= 1), after skipping ``offset`` (>= 0).
            urgencies, types: only these urgencies / types (``None``: all).

        Raises:
            InvalidInputError: a bad ``limit``, ``offset``, urgency or type.
        """
        owner = "NotificationService.list"
        where, params = self._list_where(owner, user_id, include_resolved, urgencies, types)
        sql = f"SELECT * FROM notifications WHERE {where} ORDER BY id DESC"
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"The 'offset' parameter of {owner} must be an int >= 0. Got {offset!r} instead.")
        if limit is not None or offset:
            sql += f" LIMIT {-1 if limit is None else check_positive_int(limit, name='limit', owner=owner)}"
            sql += f" OFFSET {offset}"
        return [self._row(r) for r in self.db.query(sql, params)]

    def total(self, user_id: str, *, include_resolved: bool = False,
              urgencies: Sequence[Urgency | str] | None = None,
              types: Sequence[NotificationType | str] | None = None) -> int:
        """How many notifications :meth:`list` has for these filters (without ``limit``/``offset``): a pager's total."""
        where, params = self._list_where("NotificationService.total", user_id, include_resolved, urgencies, types)
        row = self.db.query_one(f"SELECT COUNT(*) AS n FROM notifications WHERE {where}", params)
        return int(row["n"]) if row else 0

    @staticmethod
    def _list_where(owner: str, user_id: str, include_resolved: bool, urgencies: Any, types: Any,
                    ) -> tuple[str, list[Any]]:
        """The WHERE clause (and its parameters) of :meth:`list` and :meth:`total`."""
        where, params = ["user_id = ?"], [check_user_id(user_id, owner=owner)]
        if not include_resolved:
            where.append("status IN ('unread', 'read')")
        for column, cls, values in (("urgency", Urgency, urgencies), ("type", NotificationType, types)):
            if values is None:
                continue
            if isinstance(values, str):
                raise InvalidInputError(f"The {column!r} filter of {owner} must be a list, not a str.")
            checked = [check_enum(cls, v, name=column, owner=owner).value for v in values]
            where.append(f"{column} IN ({','.join('?' * len(checked))})" if checked else "0")
            params += checked
        return " AND ".join(where), params

    def count(self, user_id: str) -> int:
        """The bell badge: how many notifications are pending (see :meth:`pending`)."""
        user_id = check_user_id(user_id, owner="NotificationService.count")
        row = self.db.query_one(
            "SELECT COUNT(*) AS n FROM notifications WHERE user_id = ? "
            "AND (status = 'unread' OR (status = 'read' AND actionable = 1))",
            (user_id,),
        )
        return int(row["n"]) if row else 0

    def events(self, id: int, *, user_id: str) -> list[NotificationEvent]:
        """The audit log of one notification, oldest first."""
        n = self.get(id, user_id=user_id)
        rows = self.db.query("SELECT * FROM notification_events WHERE notification_id = ? ORDER BY id", (n.id,))
        return [
            NotificationEvent(id=int(r["id"]), notification_id=int(r["notification_id"]), event=r["event"],
                              actor=r["actor"], at=datetime.fromisoformat(r["at"]), details=json.loads(r["details"]))
            for r in rows
        ]

    def resolution(self, id: int, *, user_id: str) -> dict[str, Any] | None:
        """What the last resolution did (states before/after per memory), or None if never resolved."""
        n = self.get(id, user_id=user_id)
        row = self.db.query_one("SELECT resolution FROM notifications WHERE id = ?", (n.id,))
        return json.loads(row["resolution"]) if row and row["resolution"] else None

    # ------------------------------------------------------------------ state changes
    def _touch(self, id: int, user_id: str, column: str, event: str, actor: str) -> Notification:
        n = self.get(id, user_id=user_id)
        now = _ts(self.clock())
        with self.db.transaction():
            if column == "read_at":
                self.db.execute(
                    "UPDATE notifications SET read_at = COALESCE(read_at, ?), "
                    "status = CASE WHEN status = 'unread' THEN 'read' ELSE status END WHERE id = ?",
                    (now, n.id),
                )
            elif column == "shown_at":
                self.db.execute(
                    "UPDATE notifications SET shown_at = ?, read_at = COALESCE(read_at, ?), "
                    "status = CASE WHEN status = 'unread' THEN 'read' ELSE status END WHERE id = ?",
                    (now, now, n.id),
                )
            else:
                self.db.execute(f"UPDATE notifications SET {column} = ? WHERE id = ?", (now, n.id))
            self._event(n.id, n.user_id, event, actor)
        return self.get(n.id, user_id=user_id)

    def mark_read(self, id: int, *, user_id: str, actor: str | None = None) -> Notification:
        """Mark as read (an informational notification then leaves the badge; a contradiction stays pending).

        Raises:
            NotFoundError: unknown id or another user's.
        """
        return self._touch(id, user_id, "read_at", "read", actor or f"user:{user_id}")

    def mark_shown(self, id: int, *, user_id: str) -> Notification:
        """Record that the notification was shown in full inside a reply (implies read)."""
        return self._touch(id, user_id, "shown_at", "shown", "assistant")

    def mark_offered(self, id: int, *, user_id: str) -> Notification:
        """Record that a MEDIUM offer ("Vuoi che te la mostri ora?") was made for it."""
        return self._touch(id, user_id, "offered_at", "offered", "assistant")

    def mark_declined(self, id: int, *, user_id: str, expired: bool = False) -> Notification:
        """Record that the user said "no" to a MEDIUM offer (or let it pass): it stays in the bell, not re-offered."""
        return self._touch(id, user_id, "declined_at", "offer_expired" if expired else "offer_declined",
                           "assistant" if expired else f"user:{user_id}")

    def dismiss(self, id: int, *, user_id: str, reason: str | None = None) -> Notification:
        """Close a notification without applying anything (e.g. the user declined an event reminder)."""
        n = self.get(id, user_id=user_id)
        if not n.is_open:
            raise InvalidInputError(f"Notification {n.id} is already {n.status.value}.")
        with self.db.transaction():
            self.db.execute(
                "UPDATE notifications SET status = 'dismissed', resolved_at = ? WHERE id = ?",
                (_ts(self.clock()), n.id),
            )
            self._event(n.id, n.user_id, "dismissed", f"user:{user_id}", reason=reason)
        return self.get(n.id, user_id=user_id)

    def resolve(
        self, id: int, choice: ResolutionChoice | str, note: str | None = None, *, user_id: str,
        actor: str | None = None,
    ) -> Notification:
        """Resolve a notification; for a contradiction the choice is applied to the memory store.

        Args:
            id: notification id.
            choice: contradictions: ``A`` (keep the first), ``B`` (keep the second), ``C`` (both correct; ``note``
                is stored as context on both), ``D`` (deactivate both). Other types: any short label
                (e.g. ``done``).
            note: the user's explanation (recorded; for ``C`` attached to both memories).
            user_id: owner (another user's id raises :class:`NotFoundError`).
            actor: who resolved (default ``user:<user_id>``); recorded in the memories' event history.

        Returns:
            The resolved notification.

        Raises:
            NotFoundError: unknown id or another user's.
            InvalidInputError: bad choice, or the notification is already resolved. Nothing changes.
        """
        owner = "NotificationService.resolve"
        n = self.get(id, user_id=user_id)
        if not n.is_open:
            raise InvalidInputError(
                f"Notification {n.id} is already {n.status.value} (choice {n.choice!r}); undo it first to change it."
            )
        if note is not None:
            note = check_text(note, name="note", owner=owner, max_chars=_MAX_CONTENT)
        actor = actor or f"user:{n.user_id}"
        resolution: dict[str, Any] = {}
        if n.type is NotificationType.CONTRADICTION:
            choice_s = str(getattr(choice, "value", choice)).strip().upper()
            try:
                ch = ResolutionChoice(choice_s)
            except ValueError:
                raise InvalidInputError(
                    f"The 'choice' parameter of {owner} must be one of A, B, C, D for a contradiction. "
                    f"Got {choice!r} instead."
                ) from None
            if self.store is None:
                raise InvalidInputError(
                    f"{owner} needs a MemoryStore to apply a contradiction's choice; build the service with the store."
                )
            from memlab.notify.resolution import apply_resolution

            with self.db.transaction():
                resolution = apply_resolution(self.store, n, ch, note, actor=actor)
                self._finish(n, ch.value, note, resolution, actor)
        else:
            choice_s = check_text(str(getattr(choice, "value", choice)), name="choice", owner=owner, max_chars=64)
            with self.db.transaction():
                self._finish(n, choice_s, note, resolution, actor)
        return self.get(n.id, user_id=user_id)

    def _finish(self, n: Notification, choice: str, note: str | None, resolution: dict[str, Any], actor: str) -> None:
        now = _ts(self.clock())
        self.db.execute(
            "UPDATE notifications SET status = 'resolved', resolved_at = ?, read_at = COALESCE(read_at, ?), "
            "choice = ?, note = ?, resolution = ? WHERE id = ?",
            (now, now, choice, note, json.dumps(resolution, default=str), n.id),
        )
        self._event(n.id, n.user_id, "resolved", actor, choice=choice, note=note, resolution=resolution)

    def undo(self, id: int, *, user_id: str, actor: str | None = None) -> Notification:
        """Revert a resolution: memories get back the active flag and context they had before, and the
        notification is open again (it can be answered anew). Both steps are recorded in history.

        Raises:
            NotFoundError: unknown id or another user's.
            InvalidInputError: the notification is not resolved.
        """
        n = self.get(id, user_id=user_id)
        if n.status is not NotificationStatus.RESOLVED:
            raise InvalidInputError(f"Notification {n.id} is {n.status.value}, not resolved: nothing to undo.")
        actor = actor or f"user:{n.user_id}"
        resolution = self.resolution(n.id, user_id=user_id) or {}
        with self.db.transaction():
            if n.type is NotificationType.CONTRADICTION and resolution.get("memories"):
                if self.store is None:
                    raise InvalidInputError("NotificationService.undo needs a MemoryStore to revert a contradiction.")
                from memlab.notify.resolution import revert_resolution

                revert_resolution(self.store, n, resolution, actor=actor)
            self.db.execute(
                "UPDATE notifications SET status = 'read', resolved_at = NULL, choice = NULL, note = NULL, "
                "resolution = NULL WHERE id = ?",
                (n.id,),
            )
            self._event(n.id, n.user_id, "undone", actor, previous_choice=n.choice, previous_note=n.note)
        return self.get(n.id, user_id=user_id)
