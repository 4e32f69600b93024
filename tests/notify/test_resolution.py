"""Resolution of contradictions applied to the real store, recorded in history, reversible."""

from __future__ import annotations

import pytest

from memlab.errors import InvalidInputError
from memlab.notify import NotificationService, NotificationStatus
from memlab.records import ConflictType, Contradiction, Urgency
from memlab.store import MemoryStore


@pytest.fixture
def store(tmp_path, fake_embedder):
    s = MemoryStore(tmp_path / "m.db", embedder=fake_embedder)
    yield s
    s.close()


def _pair(store, keyed: bool):
    kw1 = dict(key="birthday", value="1990-07-12") if keyed else {}
    kw2 = dict(key="birthday", value="--08-15") if keyed else {}
    a = store.add("u1", "Sono nato il 12 luglio 1990", **kw1)
    b = store.add("u1", "Il mio compleanno è il 15 agosto", **kw2)
    c = Contradiction(memory_id=b.id, other_id=a.id, memory_text=b.text, other_text=a.text, confidence=0.95,
                      type=ConflictType.DATE, urgency=Urgency.HIGH, explanation="date diverse", decided_by="patterns")
    return a, b, NotificationService(store).create_contradiction("u1", c)


EXPECTED = {"A": (True, False), "B": (False, True), "C": (True, True), "D": (False, False)}


@pytest.mark.parametrize("keyed", [False, True], ids=["free", "keyed"])
@pytest.mark.parametrize("choice", ["A", "B", "C", "D"])
def test_choice_applied_recorded_and_undone(store, keyed, choice):
    a, b, n = _pair(store, keyed)
    before = {m.id: (store.get(m.id, user_id="u1").is_active, store.get(m.id, user_id="u1").context) for m in (a, b)}
    if keyed:  # the version rule already made the newer one active
        assert before[a.id][0] is False and before[b.id][0] is True
    svc = NotificationService(store)
    note = "Il 15 agosto è il compleanno di mia madre" if choice == "C" else None
    r = svc.resolve(n.id, choice.lower(), note, user_id="u1")
    assert r.status is NotificationStatus.RESOLVED and r.choice == choice and r.note == note
    assert (store.get(a.id, user_id="u1").is_active, store.get(b.id, user_id="u1").is_active) == EXPECTED[choice]
    if keyed and choice == "C":
        # one active version per slot: the newer statement leaves the slot as a free fact, the older takes it back
        assert (store.get(a.id, user_id="u1").key, store.get(b.id, user_id="u1").key) == ("birthday", None)
        assert svc.resolution(n.id, user_id="u1")["unkeyed"] == {str(b.id): "birthday"}
    if choice == "C":
        assert store.get(a.id, user_id="u1").context == note and store.get(b.id, user_id="u1").context == note
    # nothing is ever deleted
    assert store.count("u1", include_inactive=True) == 2
    # history: who, when, which notification, which choice, on both memories
    for m in (a, b):
        ev = [e for e in store.events(m.id, chain=False) if e.event == "contradiction_resolved"]
        assert len(ev) == 1
        assert ev[0].actor == "user:u1" and ev[0].details["choice"] == choice
        assert ev[0].details["notification_id"] == n.id and ev[0].at is not None
    assert svc.count("u1") == 0
    # reversible from history
    u = svc.undo(n.id, user_id="u1")
    assert u.is_open and u.choice is None
    assert {m.id: (store.get(m.id, user_id="u1").is_active, store.get(m.id, user_id="u1").context) for m in (a, b)} == before
    assert store.get(b.id, user_id="u1").key == ("birthday" if keyed else None)
    assert [e.event for e in svc.events(n.id, user_id="u1")][-2:] == ["resolved", "undone"]
    for m in (a, b):
        assert "resolution_undone" in [e.event for e in store.events(m.id, chain=False)]
    assert svc.count("u1") == 1
    # and it can be answered again
    svc.resolve(n.id, "B", user_id="u1")
    assert (store.get(a.id, user_id="u1").is_active, store.get(b.id, user_id="u1").is_active) == (False, True)


def test_undo_restores_an_earlier_context(store):
    a, b, n = _pair(store, False)
    store.annotate(a.id, "detto al primo incontro")
    svc = NotificationService(store)
    svc.resolve(n.id, "C", "entrambe vere", user_id="u1")
    assert store.get(a.id, user_id="u1").context == "entrambe vere"
    svc.undo(n.id, user_id="u1")
    assert store.get(a.id, user_id="u1").context == "detto al primo incontro"
    assert store.get(b.id, user_id="u1").context is None


@pytest.mark.parametrize("choice", ["E", "", "AB", "prima"])
def test_bad_choice_changes_nothing(store, choice):
    a, b, n = _pair(store, False)
    svc = NotificationService(store)
    with pytest.raises(InvalidInputError):
        svc.resolve(n.id, choice, user_id="u1")
    assert store.get(a.id, user_id="u1").is_active and store.get(b.id, user_id="u1").is_active
    assert svc.get(n.id, user_id="u1").is_open


def test_resolve_twice_and_undo_unresolved_are_errors(store):
    _, _, n = _pair(store, False)
    svc = NotificationService(store)
    with pytest.raises(InvalidInputError):
        svc.undo(n.id, user_id="u1")
    svc.resolve(n.id, "A", user_id="u1")
    with pytest.raises(InvalidInputError):
        svc.resolve(n.id, "B", user_id="u1")


def test_failed_resolution_is_atomic(store, monkeypatch):
    a, b, n = _pair(store, False)
    svc = NotificationService(store)

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "record_event", boom)
    with pytest.raises(RuntimeError):
        svc.resolve(n.id, "A", user_id="u1")
    assert store.get(b.id, user_id="u1").is_active  # the deactivation was rolled back
    assert svc.get(n.id, user_id="u1").is_open
