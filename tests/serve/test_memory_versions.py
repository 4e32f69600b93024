"""Seed 004 on `POST /api/memory` and the store: when the existing value wins, `add` says so (the seed's "Returns id1
(existing memory retained)"); `updated_at` is the time of a memory's last change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memlab.app import Memlab
from memlab.serve.runner import ThreadedServer
from memlab.serve.schemas import MemoryOut
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

from .conftest import key_client


def test_add_says_when_the_existing_memory_is_retained(server: ThreadedServer, lab: Memlab) -> None:
    with key_client(server, lab, "alice") as alice:
        def add(text: str, confidence: float) -> dict:
            r = alice.post("/api/memory", json={"text": text, "key": "preferred_name", "confidence": confidence})
            assert r.status_code == 201, r.text
            return r.json()

        first = add("Chiamami Zhang San", 0.9)
        assert (first["outcome"], first["retained_id"]) == ("added", None)
        loser = add("Chiamami Li Si", 0.5)  # |0.5 - 0.9| >= 0.1: the higher confidence, the existing one, wins
        assert loser["outcome"] == "existing_retained" and loser["retained_id"] == first["memory"]["id"]
        assert loser["memory"]["is_active"] is False  # kept in the history, inactive
        newer = add("Chiamami Wang Wu", 0.95)
        assert (newer["outcome"], newer["retained_id"]) == ("new_version", None)
        assert newer["memory"]["supersedes"] == first["memory"]["id"]
    # the library says it too: the stored item names the memory that was retained
    item = lab.store.get(loser["memory"]["id"], user_id="alice")
    assert item.retained_id == first["memory"]["id"]
    assert lab.store.get(first["memory"]["id"], user_id="alice").retained_id is None  # replaced later, not beaten


def test_updated_at_is_the_time_of_the_last_change() -> None:
    now = [datetime(2026, 3, 1, 9, 0, tzinfo=UTC)]

    def tick(minutes: int) -> datetime:
        now[0] += timedelta(minutes=minutes)
        return now[0]

    with MemoryStore(":memory:", embedder=FakeEmbedder(), clock=lambda: now[0]) as store:
        t0 = now[0]
        v1 = store.add("u1", "Il mio compleanno è il 12 luglio", key="birthday")
        assert v1.updated_at == t0 and MemoryOut.of(v1).updated_at == t0
        t1 = tick(5)
        v2 = store.add("u1", "Il mio compleanno è il 15 agosto", key="birthday")
        assert store.get(v1.id, user_id="u1").updated_at == t1  # superseded: a change
        t2 = tick(5)
        store.deactivate(v2.id, "the user chose the first", user_id="u1")
        t3 = tick(1)
        back = store.reactivate(v1.id, "the user chose the first", user_id="u1")
        # the answer brought the first value back: its last change is now, not its creation or its old supersession
        assert back.updated_at == t3 and MemoryOut.of(back).updated_at == t3 > t1
        assert store.get(v2.id, user_id="u1").updated_at == t2
        t4 = tick(2)
        assert store.annotate(v1.id, "confermato dall'utente", user_id="u1").updated_at == t4
        assert [m.updated_at for m in store.history(v1.id, user_id="u1")] == [t4, t2]
