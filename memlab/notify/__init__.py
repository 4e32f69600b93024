"""Notifications: the persistent service, formatting by urgency, and contradiction resolution.

Example:
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> from memlab.notify import NotificationService, format_notification
    >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
    >>> a = store.add("u1", "Sono nato il 12 luglio 1990")
    >>> b = store.add("u1", "Il mio compleanno è il 15 agosto")
    >>> svc = NotificationService(store)
    >>> n = svc.create("contradiction", "high", "compleanno", "u1", memory_ids=[b.id, a.id],
    ...                payload={"first": {"id": a.id, "text": a.text}, "second": {"id": b.id, "text": b.text}})
    >>> for line in format_notification(n).splitlines()[:3]:
    ...     print(line)
    [⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto «Sono nato il 12 luglio 1990», ma ora mi dici «Il mio compleanno è il 15 agosto».
    [⚠️ CONTRADDIZIONE RILEVATA]
    Ho notato una contraddizione nella memoria:
    >>> svc.resolve(n.id, "A", user_id="u1").status.value, store.get(b.id, user_id="u1").is_active
    ('resolved', False)
"""

from __future__ import annotations

from memlab.notify.formatting import (
    FATIGUE_THRESHOLD,
    TurnPlan,
    declined_text,
    format_high_block,
    format_notification,
    format_resolution,
    medium_offer,
    parse_choice,
    parse_yes_no,
    plan_turn,
)
from memlab.notify.records import (
    Notification,
    NotificationEvent,
    NotificationStatus,
    NotificationType,
    ResolutionChoice,
)
from memlab.notify.service import NotificationService, pair_key

__all__ = [
    "FATIGUE_THRESHOLD",
    "Notification",
    "NotificationEvent",
    "NotificationService",
    "NotificationStatus",
    "NotificationType",
    "ResolutionChoice",
    "TurnPlan",
    "declined_text",
    "format_high_block",
    "format_notification",
    "format_resolution",
    "medium_offer",
    "pair_key",
    "parse_choice",
    "parse_yes_no",
    "plan_turn",
]
