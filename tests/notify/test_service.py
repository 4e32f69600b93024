"""NotificationService: persistence, de-duplication, isolation, bad input."""

from __future__ import annotations

import threading

import pytest

from memlab.errors import InvalidInputError, NotFoundError
from memlab.notify import NotificationService, NotificationStatus, NotificationType, pair_key
from memlab.records import ConflictType, Contradiction, Urgency
from memlab.store import Database, MemoryStore


@pytest.fixture
def store(tmp_path, fake_embedder):
    s = MemoryStore(tmp_path / "m.db", embedder=fake_embedder)
    yield s
    s.close()


@pytest.fixture
def svc(store):
    return NotificationService(store)


def _contradiction(a, b, urgency=Urgency.HIGH):
    return Contradiction(memory_id=b.id, other_id=a.id, memory_text=b.text, other_text=a.text, confidence=0.93,
                         type=ConflictType.DATE, urgency=urgency, explanation="Due date diverse per il compleanno.",
                         decided_by="entities", details={"values": ["07-12", "08-15"]})


def test_create_list_count_and_reopen(tmp_path, fake_embedder):
    path = tmp_path / "m.db"
    store = MemoryStore(path, embedder=fake_embedder)
    svc = NotificationService(store)
    n = svc.create("todo", "low", "Rinnovare il passaporto entro venerdì", "u1")
    e = svc.create(NotificationType.EVENT, Urgency.MEDIUM, "会议明天上午十点", "u1")
    assert n.status is NotificationStatus.UNREAD and not n.actionable
    assert svc.count("u1") == 2 and svc.count("u2") == 0
    assert [x.id for x in svc.pending("u1")] == [e.id, n.id]  # most urgent first
    assert [x.id for x in svc.pending("u1", urgency="low")] == [n.id]
    store.close()
    again = NotificationService(Database(path))
    got = again.get(e.id, user_id="u1")
    assert got.content == "会议明天上午十点" and got.urgency is Urgency.MEDIUM
    assert again.count("u1") == 2


def test_read_informational_leaves_badge_but_contradiction_stays(store, svc):
    a = store.add("u1", "Sono nato il 12 luglio 1990")
    b = store.add("u1", "Il mio compleanno è il 15 agosto")
    todo = svc.create("todo", "low", "Chiamare il dentista", "u1")
    c = svc.create_contradiction("u1", _contradiction(a, b))
    assert svc.count("u1") == 2
    svc.mark_read(todo.id, user_id="u1")
    svc.mark_read(c.id, user_id="u1")
    assert [n.id for n in svc.pending("u1")] == [c.id]
    assert svc.count("u1") == 1
    assert svc.get(c.id, user_id="u1").read_at is not None
    assert [x.id for x in svc.list("u1", include_resolved=True)] == [c.id, todo.id]


def test_contradiction_payload_orders_older_first(store, svc):
    a = store.add("u1", "Sono nato il 12 luglio 1990")
    b = store.add("u1", "Il mio compleanno è il 15 agosto")
    n = svc.create_contradiction("u1", _contradiction(a, b))
    assert n.memory_ids == (a.id, b.id)
    assert n.payload["first"] == {"id": a.id, "text": a.text}
    assert n.payload["second"] == {"id": b.id, "text": b.text}
    assert n.payload["conflict_type"] == "date" and n.payload["decided_by"] == "entities"
    assert n.actionable and n.urgency is Urgency.HIGH


def test_never_duplicates_an_unordered_pair(store, svc):
    a = store.add("u1", "Abito a Roma")
    b = store.add("u1", "Vivo a Milano")
    n1 = svc.create_contradiction("u1", _contradiction(a, b))
    n2 = svc.create_contradiction("u1", _contradiction(b, a))  # reversed pair
    n3 = svc.create("contradiction", "high", "x", "u1", memory_ids=[b.id, a.id])
    assert n1.id == n2.id == n3.id
    assert svc.count("u1") == 1
    # once answered, the same pair is not asked again
    svc.resolve(n1.id, "C", "Ho due case", user_id="u1")
    n4 = svc.create_contradiction("u1", _contradiction(a, b))
    assert n4.id == n1.id and n4.status is NotificationStatus.RESOLVED
    assert svc.count("u1") == 0
    assert pair_key(7, 3) == pair_key(3, 7) == "3:7"


def test_dedupe_is_atomic_across_threads(store, svc):
    a = store.add("u1", "Abito a Roma")
    b = store.add("u1", "Vivo a Milano")
    ids: list[int] = []

    def worker():
        for _ in range(20):
            ids.append(svc.create_contradiction("u1", _contradiction(a, b)).id)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1
    assert len(svc.list("u1", include_resolved=True)) == 1


def test_event_dedupe_key(svc):
    a = svc.create("event", "medium", "Volo per Tokyo domani alle 9", "u1", dedupe_key="calendar:evt-1")
    b = svc.create("event", "medium", "Volo per Tokyo domani alle 9", "u1", dedupe_key="calendar:evt-1")
    c = svc.create("event", "medium", "Cena con Marco", "u1", dedupe_key="calendar:evt-2")
    assert a.id == b.id != c.id


def test_user_isolation_everywhere(store, svc):
    a = store.add("u1", "Abito a Roma")
    b = store.add("u1", "Vivo a Milano")
    n = svc.create_contradiction("u1", _contradiction(a, b))
    for call in (
        lambda: svc.get(n.id, user_id="u2"),
        lambda: svc.mark_read(n.id, user_id="u2"),
        lambda: svc.resolve(n.id, "A", user_id="u2"),
        lambda: svc.undo(n.id, user_id="u2"),
        lambda: svc.events(n.id, user_id="u2"),
        lambda: svc.dismiss(n.id, user_id="u2"),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert svc.pending("u2") == [] and svc.list("u2", include_resolved=True) == []
    # nothing changed for u1
    assert svc.get(n.id, user_id="u1").status is NotificationStatus.UNREAD
    assert store.get(a.id, user_id="u1").is_active and store.get(b.id, user_id="u1").is_active
    with pytest.raises(NotFoundError):
        svc.get(999_999, user_id="u1")
    # a contradiction naming another user's memory is refused
    c = store.add("u2", "Abito a Napoli")
    with pytest.raises(NotFoundError):
        svc.create_contradiction("u1", _contradiction(a, c))
    with pytest.raises(NotFoundError):
        svc.create_contradiction("u2", _contradiction(a, c))
    assert svc.count("u2") == 0 and svc.count("u1") == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(type="alarm", urgency="high", content="x"),
        dict(type="todo", urgency="urgent", content="x"),
        dict(type="todo", urgency="low", content="   "),
        dict(type="todo", urgency="low", content="bad\x00text"),
        dict(type="todo", urgency="low", content="x" * 20_000),
        dict(type="contradiction", urgency="high", content="x", memory_ids=[1]),
        dict(type="contradiction", urgency="high", content="x", memory_ids=[2, 2]),
        dict(type="todo", urgency="low", content="x", payload={"when": object()}),
    ],
)
def test_bad_input_is_rejected_and_nothing_is_stored(svc, kwargs):
    svc.create("todo", "low", "esistente", "u1")
    with pytest.raises(InvalidInputError):
        svc.create(user_id="u1", **kwargs)
    assert [n.content for n in svc.list("u1", include_resolved=True)] == ["esistente"]


@pytest.mark.parametrize("user", ["", "  ", "u\x07", 42])
def test_bad_user_id(svc, user):
    with pytest.raises(InvalidInputError):
        svc.count(user)


def test_resolve_other_types_and_dismiss(svc):
    t = svc.create("todo", "low", "Pagare la bolletta", "u1")
    e = svc.create("event", "low", "Compleanno di Anna", "u1")
    assert svc.resolve(t.id, "done", user_id="u1").choice == "done"
    assert svc.dismiss(e.id, user_id="u1", reason="non mi interessa").status is NotificationStatus.DISMISSED
    assert svc.count("u1") == 0
    with pytest.raises(InvalidInputError):
        svc.resolve(t.id, "done", user_id="u1")  # already resolved
    assert [ev.event for ev in svc.events(t.id, user_id="u1")] == ["created", "resolved"]


def test_service_on_bare_database_cannot_resolve_contradictions(store):
    a = store.add("u1", "Abito a Roma")
    b = store.add("u1", "Vivo a Milano")
    n = NotificationService(store).create_contradiction("u1", _contradiction(a, b))
    bare = NotificationService(store.db)
    with pytest.raises(InvalidInputError):
        bare.resolve(n.id, "A", user_id="u1")
    assert bare.get(n.id, user_id="u1").is_open


def test_constructor_rejects_wrong_type():
    with pytest.raises(InvalidInputError):
        NotificationService(42)  # type: ignore[arg-type]
