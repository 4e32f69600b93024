"""The behaviour every :class:`~memlab.store.memory.MemoryStore` backend must show: :func:`check_memory_store`.

Run by the test suite on SQLite (file and ``":memory:"``) and on PostgreSQL; a new backend passes it before it is
used. It checks behaviour through the public API only (no SQL), with :class:`~memlab.testing.FakeEmbedder` vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from memlab.errors import InvalidInputError, MemlabError, NotFoundError
from memlab.store.memory import MemoryStore

__all__ = ["check_memory_store"]


def _raises(exc: type[BaseException], fn: Callable[[], object], what: str) -> None:
    try:
        fn()
    except exc:
        return
    except Exception as other:  # noqa: BLE001 - the check reports which error escaped
        raise AssertionError(f"{what} raised {type(other).__name__} ({other}); expected {exc.__name__}") from other
    raise AssertionError(f"{what} was accepted; expected {exc.__name__}")


def _snapshot(store: MemoryStore, users: list[str]) -> list[tuple[object, ...]]:
    return [(m.id, m.is_active, m.version, m.superseded_by, m.context, m.key)
            for u in users for m in store.list(u, include_inactive=True)]


def _check_version_rule(store: MemoryStore, what: str) -> None:
    v1 = store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    v2 = store.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)  # within 0.1: the newer wins
    lost = store.add("u1", "Chiamami Wang Wu", key="preferred_name", confidence=0.5)  # far below: the older stays
    assert v2.is_active and v2.supersedes == v1.id and v2.version == 2, f"{what}: the newer of a tie must win"
    old = store.get(v1.id, user_id="u1")
    assert not old.is_active and old.superseded_by == v2.id and old.superseded_at is not None, f"{what}: step down"
    assert not lost.is_active and lost.superseded_by == v2.id, f"{what}: a much less confident version must lose"
    chain = store.history(lost.id)
    assert [m.id for m in chain] == [v1.id, v2.id, lost.id] and len({m.chain_id for m in chain}) == 1, (
        f"{what}: one chain, oldest first, from any member")
    assert [m.id for m in store.list("u1", key="preferred_name")] == [v2.id], f"{what}: one active per slot"
    events = [e.event for e in store.events(v1.id)]
    assert events.count("created") == 3 and "superseded" in events and "lost" in events, f"{what}: events {events}"
    batch = store.add_many("u1", [{"text": f"Abito a {c}", "key": "home", "confidence": 0.8}
                                  for c in ("Roma", "Milano", "Torino")])
    assert [m.is_active for m in batch] == [False, False, True], f"{what}: add_many applies the rule in order"
    other = store.add("u1", "Abito a Bari", key="home", scope="project", confidence=0.8)
    assert other.is_active and store.get(batch[-1].id, user_id="u1").is_active, f"{what}: another scope, no conflict"


def _check_changes(store: MemoryStore, what: str) -> None:
    a = store.add("u1", "Mi piace il tè verde")
    store.deactivate(a.id, "user said so", user_id="u1")
    assert not store.get(a.id, user_id="u1").is_active, f"{what}: deactivate"
    assert a.id not in {m.id for m, _ in store.search("u1", "tè verde", k=5)}, f"{what}: an inactive memory is found"
    store.reactivate(a.id, "user changed mind", user_id="u1")
    assert a.id in {m.id for m, _ in store.search("u1", "tè verde", k=5)}, f"{what}: a reactivated memory is lost"
    assert store.annotate(a.id, "solo d'estate", user_id="u1").context == "solo d'estate", f"{what}: annotate"
    assert store.clear_context(a.id, user_id="u1").context is None, f"{what}: clear_context"
    moved = store.set_key(a.id, "drink", user_id="u1")
    assert moved.key == "drink" and moved.updated_at is not None, f"{what}: set_key"
    events = [e.event for e in store.events(a.id, chain=False)]
    assert events == ["created", "deactivated", "reactivated", "annotated", "context_cleared", "key_changed"], (
        f"{what}: the audit log is {events}")
    assert [m.id for m in store.find_containing("u1", ["tè verde"])] == [a.id], f"{what}: find_containing"
    store.track_checks = True
    tracked = store.add("u1", "Lavoro a Torino")
    assert (tracked.id, "u1") in store.unchecked(), f"{what}: the check outbox misses a tracked memory"
    store.mark_checked_queued([tracked.id])
    assert (tracked.id, "u1") not in store.unchecked(), f"{what}: mark_checked_queued"
    store.track_checks = False


def _check_search_and_isolation(store: MemoryStore, what: str) -> None:
    mine = store.add("u2", "Il mio volo per Tokyo parte il 3 marzo")
    store.add("u2", "Ho un gatto di nome Miso")
    hits = store.search("u2", "volo Tokyo", k=2)
    assert hits and hits[0][0].id == mine.id, f"{what}: hybrid search misses an exact rare word"
    assert all(m.user_id == "u2" for m, _ in hits), f"{what}: search returned another user's memory"
    vec = store.vectors([mine.id])[0]
    dense = store.search_by_vector("u2", vec, k=1)
    assert dense[0][0].id == mine.id and abs(dense[0][1] - 1.0) < 1e-4, f"{what}: self-retrieval by vector"
    assert store.search_by_vector("u3", vec, k=5) == [], f"{what}: another user's search sees u2's memories"
    _raises(NotFoundError, lambda: store.get(mine.id, user_id="u3"), f"{what}: get of another user's memory")
    _raises(NotFoundError, lambda: store.deactivate(mine.id, "x", user_id="u3"), f"{what}: cross-user deactivate")
    assert store.active_ids("u3", [mine.id]) == set() and store.count("u3") == 0, f"{what}: u3 sees u2's ids"
    assert "Tokyo" in store.build_context("u2", "Tokyo"), f"{what}: build_context"
    assert set(store.users()) >= {"u1", "u2"}, f"{what}: users()"


def _check_bad_input(store: MemoryStore, what: str) -> None:
    before = _snapshot(store, ["u1", "u2"])
    bad = [
        lambda: store.add("u1", ""),
        lambda: store.add("u1", "x" * (store.max_text_chars + 1)),
        lambda: store.add("u1", "ciao\x1b[31m"),
        lambda: store.add("u1", "ok", confidence=1.5),
        lambda: store.add("u1", "ok", valid_from=datetime(2020, 1, 1)),  # noqa: DTZ001 - naive is the bad input
        lambda: store.add("u1", "ok", embedding=np.ones(store.embedder.dim + 1, dtype=np.float32)),
        lambda: store.add_many("u1", ["ok", ""]),
        lambda: store.add_many("u1", "a single text"),
        lambda: store.search("u1", "ok", k=0),
        lambda: store.search("", "ok"),
    ]
    for i, call in enumerate(bad):
        _raises(MemlabError, call, f"{what}: bad input #{i}")
    _raises(InvalidInputError, lambda: store.search("u1", "ok", mode="fuzzy"), f"{what}: unknown search mode")
    _raises(NotFoundError, lambda: store.get(10**12, user_id="u1"), f"{what}: unknown id")
    assert _snapshot(store, ["u1", "u2"]) == before, f"{what}: a refused call changed the store"
    when = datetime(2024, 5, 1, 12, tzinfo=UTC)
    item = store.add("u1", "Sono nato nel 1990", valid_from=when)
    assert item.valid_from == when and item.created_at is not None and item.created_at.tzinfo is not None, (
        f"{what}: times must come back as aware UTC datetimes")


def check_memory_store(make_store: Callable[[], MemoryStore]) -> None:
    """Check a store built by ``make_store()`` (empty, with a :class:`~memlab.testing.FakeEmbedder`): the version
    rule and its chains, deactivate/reactivate/annotate/set_key with their events, the check outbox, hybrid and
    vector search, user isolation in every read and write, bad input refused with nothing changed, aware times.

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> check_memory_store(lambda: MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)))
    """
    store = make_store()
    what = f"{type(store).__name__} on {store.backend.kind}"
    try:
        assert store.count(include_inactive=True) == 0, f"{what}: check_memory_store needs an empty store"
        _check_version_rule(store, what)
        _check_changes(store, what)
        _check_search_and_isolation(store, what)
        _check_bad_input(store, what)
    finally:
        store.close()
