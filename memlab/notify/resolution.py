"""Apply a user's answer to a contradiction to the memory store, and revert it from history.

The choices: ``A`` keeps the first (older) memory and deactivates the second, ``B`` the reverse,
``C`` keeps both and attaches the user's explanation to both as context, ``D`` deactivates both.

A keyed slot has at most one active version (a unique index in SQLite). So a kept memory is reactivated only when
its slot is free: when a later version holds it, the choice is recorded and the later version stays in force
(``slot_held_by``); for ``C`` on the pair itself, the newer memory leaves the slot as a free fact (``unkeyed``) and
the older takes the slot back, so both stay active. Undo puts every flag, key and context back. Nothing is
deleted. Every change goes through the store's own methods (``deactivate``/``reactivate``/``annotate``/
``record_event``), so it is in the memories' event history with who, when, which notification and which
choice. The state before the resolution is returned and kept with the notification, which is what
:func:`revert_resolution` restores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memlab.notify.records import Notification, ResolutionChoice

if TYPE_CHECKING:
    from memlab.store.memory import MemoryStore

__all__ = ["apply_resolution", "revert_resolution"]


def _plan(choice: ResolutionChoice, first: int, second: int) -> tuple[list[int], list[int]]:
    if choice is ResolutionChoice.A:
        return [first], [second]
    if choice is ResolutionChoice.B:
        return [second], [first]
    if choice is ResolutionChoice.C:
        return [first, second], []
    return [], [first, second]


def apply_resolution(
    store: MemoryStore, notification: Notification, choice: ResolutionChoice, note: str | None, *, actor: str
) -> dict[str, Any]:
    """Apply ``choice`` to the two memories of a contradiction notification.

    Call inside a transaction of ``store.db`` so the whole resolution is atomic.

    Returns:
        A JSON-able record: ``{"choice", "note", "kept", "deactivated", "memories": {id: {"before", "after"}}}``.

    Raises:
        NotFoundError: a memory no longer exists or is not the notification's user's.
    """
    user_id = notification.user_id
    first, second = notification.memory_ids
    keep, drop = _plan(choice, first, second)
    details = {"notification_id": notification.id, "choice": choice.value}
    reason = f"contradiction notification {notification.id}: user chose {choice.value}"
    before = {i: store.get(i, user_id=user_id) for i in (first, second)}
    for i in drop:  # drops first: a kept memory may then take its slot back
        other = keep[0] if keep else None
        if before[i].is_active:
            store.deactivate(i, reason, actor=actor, user_id=user_id, kept=other, **details)
    held_by: dict[int, int] = {}
    unkeyed: dict[int, str] = {}
    for i in keep:
        if before[i].is_active:
            continue
        holder = store.active_in_slot(store.get(i, user_id=user_id))
        if holder is not None and choice is ResolutionChoice.C and holder.id in (first, second):
            # both true: the newer statement is about something else ("il 15 agosto è il compleanno di mia
            # madre"), so it leaves the slot as a free fact and the older takes the slot back; both stay active
            unkeyed[holder.id] = str(holder.key)
            store.set_key(holder.id, None, actor=actor, user_id=user_id, **details)
            holder = None
        if holder is not None:
            # a later version holds the slot (one active version per slot): the kept memory stays in the history,
            # marked as the user's choice, and is not reactivated
            held_by[i] = holder.id
            continue
        store.reactivate(i, reason, actor=actor, user_id=user_id, **details)
    if choice is ResolutionChoice.C and note:
        for i in (first, second):
            store.annotate(i, note, actor=actor, user_id=user_id, **details)
    for i in (first, second):
        other = second if i == first else first
        store.record_event(
            i, "contradiction_resolved", actor=actor, user_id=user_id, other=other, note=note,
            kept=keep, deactivated=drop, **details,
        )
    after = {i: store.get(i, user_id=user_id) for i in (first, second)}
    return {
        "choice": choice.value,
        "note": note,
        "kept": keep,
        "deactivated": drop,
        "slot_held_by": {str(k): v for k, v in held_by.items()},
        "unkeyed": {str(k): v for k, v in unkeyed.items()},
        "memories": {
            str(i): {
                "before": {"is_active": before[i].is_active, "context": before[i].context},
                "after": {"is_active": after[i].is_active, "context": after[i].context},
            }
            for i in (first, second)
        },
    }


def revert_resolution(store: MemoryStore, notification: Notification, resolution: dict[str, Any], *,
                      actor: str) -> None:
    """Restore each memory's active flag and context to what they were before ``resolution``."""
    user_id = notification.user_id
    details = {"notification_id": notification.id, "undo_of": resolution.get("choice")}
    reason = f"undo of the resolution of contradiction notification {notification.id}"
    states_by_id = {int(sid): states for sid, states in resolution["memories"].items()}
    current = {mid: store.get(mid, user_id=user_id) for mid in states_by_id}
    for mid, states in states_by_id.items():  # deactivations first, so a reactivated memory finds its slot free
        if not states["before"]["is_active"] and current[mid].is_active:
            store.deactivate(mid, reason, actor=actor, user_id=user_id, **details)
    for sid, key in (resolution.get("unkeyed") or {}).items():  # back into the slot it left
        store.set_key(int(sid), key, actor=actor, user_id=user_id, **details)
    for mid, states in states_by_id.items():
        if states["before"]["is_active"] and not current[mid].is_active:
            store.reactivate(mid, reason, actor=actor, user_id=user_id, **details)
    for mid, states in states_by_id.items():
        prev, cur = states["before"], current[mid]
        if prev["context"] != cur.context:
            if prev["context"]:
                store.annotate(mid, prev["context"], actor=actor, user_id=user_id, **details)
            else:
                store.clear_context(mid, actor=actor, user_id=user_id, **details)
        store.record_event(mid, "resolution_undone", actor=actor, user_id=user_id, **details)
