"""MemoryStore: version rule (seed 004), persistence, FAISS vs exact search, isolation, bad input.

The tests on the ``store`` fixture (version rule, history, isolation, search order, bad input) run on both
backends: SQLite + FAISS and PostgreSQL + pgvector (``PostgresStore``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.errors import DimensionMismatchError, InvalidInputError, MemlabError, NotFoundError
from memlab.index import NumpyIndex
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, fake_embedder):
    """The same tests on both backends: SQLite + FAISS, and PostgreSQL + pgvector (tests/store/conftest.py; skipped
    with a warning when no server with pgvector can be started)."""
    if request.param == "sqlite":
        s = MemoryStore(":memory:", embedder=fake_embedder)
    else:
        from memlab.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_dsn"), embedder=fake_embedder)
    yield s
    s.close()


def snapshot(s) -> list[tuple]:
    """Every row of every user, to prove a failed call changed nothing."""
    if s.backend.kind == "sqlite":
        rows = s.db.query("SELECT * FROM memories ORDER BY id")
        return [tuple(r) for r in rows] + [len(s.index)]
    # PostgreSQL: every memory row (vector included, as text), every event and the check queue
    return [
        tuple(s.conn.execute(f"SELECT to_jsonb(t)::text FROM {table} t ORDER BY 1").fetchall())
        for table in ("memories", "memory_events", "memory_outbox")
    ]


# ---------------------------------------------------------------- version rule (seed 004)
def test_different_key_scope_type_or_project_never_conflict(store):
    a = store.add("u1", "Abito a Roma", key="home_city", confidence=0.9)
    b = store.add("u1", "Lavoro a Roma", key="work_city", confidence=0.9)
    c = store.add("u1", "Abito a Milano", key="home_city", scope="project", confidence=0.9)
    d = store.add("u1", "Abito a Torino", key="home_city", type="preference", confidence=0.9)
    e = store.add("u1", "Abito a Napoli", key="home_city", project_id="p1", confidence=0.9)
    f = store.add("u1", "Abito a Bari")  # unkeyed: never part of a chain
    items = [store.get(x.id, user_id="u1") for x in (a, b, c, d, e, f)]
    assert all(m.is_active for m in items)
    assert all(m.version == 1 and m.supersedes is None for m in items)
    assert len({m.chain_id for m in items}) == 6


def test_similar_confidence_latest_wins(store):
    old = store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    new = store.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)
    old = store.get(old.id, user_id="u1")
    assert new.is_active and not old.is_active
    assert new.supersedes == old.id and old.superseded_by == new.id
    assert new.version == 2 and old.superseded_at is not None


def test_exact_tenth_difference_is_not_a_tie(store):
    # |0.9 - 0.8| = 0.1 is NOT < 0.1: the higher confidence (the old one) wins
    old = store.add("u1", "Vivo a Roma", key="home_city", confidence=0.9)
    new = store.add("u1", "Vivo a Milano", key="home_city", confidence=0.8)
    assert store.get(old.id, user_id="u1").is_active and not new.is_active
    assert new.lost_to == old.id


def test_much_higher_old_confidence_old_wins(store):
    old = store.add("u1", "Sono alto 180 cm", key="height_cm", confidence=0.95)
    new = store.add("u1", "Sono alto 175 cm", key="height_cm", confidence=0.5)
    old = store.get(old.id, user_id="u1")
    assert old.is_active and old.superseded_by is None
    assert not new.is_active and new.superseded_by == old.id and new.supersedes is None
    assert new.version == 2 and new.chain_id == old.chain_id


def test_much_higher_new_confidence_new_wins(store):
    old = store.add("u1", "Sono vegetariano", key="diet", confidence=0.4)
    new = store.add("u1", "Mangio carne", key="diet", confidence=0.95)
    assert new.is_active and not store.get(old.id, user_id="u1").is_active


def test_chain_v1_v2_v3_and_history_from_every_member(store):
    v1 = store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    v2 = store.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)
    v3 = store.add("u1", "Chiamami Wang Wu", key="preferred_name", confidence=0.5)
    assert not v3.is_active and v3.lost_to == v2.id
    v1n, v2n = store.get(v1.id, user_id="u1"), store.get(v2.id, user_id="u1")
    assert (v1n.is_active, v2n.is_active) == (False, True)
    assert v2n.superseded_by is None and v1n.superseded_by == v2.id  # v1/v2 untouched by the loser
    for member in (v1, v2, v3):
        assert [m.id for m in store.history(member.id)] == [v1.id, v2.id, v3.id]
        assert [m.version for m in store.history(member.id)] == [1, 2, 3]
    events = [e.event for e in store.events(v1.id)]
    assert events.count("created") == 3 and "superseded" in events and "lost" in events


def test_add_many_applies_the_version_rule_in_order_within_one_call(store):
    items = store.add_many("u1", [
        {"text": "Chiamami Zhang San", "key": "preferred_name", "confidence": 0.9},
        {"text": "Abito a Roma"},
        {"text": "Chiamami Li Si", "key": "preferred_name", "confidence": 0.85},
        {"text": "Chiamami Wang Wu", "key": "preferred_name", "confidence": 0.4},
    ])
    v1, free, v2, v3 = items
    # the returned items are the final state: v1 was superseded by v2 later in the same call
    assert (v1.is_active, free.is_active, v2.is_active, v3.is_active) == (False, True, True, False)
    assert v1.superseded_by == v2.id and v2.supersedes == v1.id and v3.lost_to == v2.id
    assert [m.version for m in store.history(v3.id)] == [1, 2, 3]
    assert [m.id for m in store.list("u1")] == [free.id, v2.id]


def test_list_and_build_context_exclude_superseded(store):
    v1 = store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    v2 = store.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)
    store.add("u1", "Abito a Roma")
    assert [m.id for m in store.list("u1")] == [v2.id, v2.id + 1]
    ctx = store.build_context("u1")
    assert "Li Si" in ctx and "Zhang San" not in ctx
    assert "Zhang San" not in store.build_context("u1", "come mi chiamo?")
    all_items = store.list("u1", include_inactive=True)
    assert {m.id for m in all_items} == {v1.id, v2.id, v2.id + 1}
    hits = store.search("u1", "Chiamami Zhang San", k=5, include_inactive=True)
    assert hits[0][0].id == v1.id
    assert v1.id not in {m.id for m, _ in store.search("u1", "Chiamami Zhang San", k=5)}


def test_deactivate_reactivate_annotate_are_logged_and_reversible(store):
    a = store.add("u1", "Il mio compleanno è il 15 agosto")
    store.deactivate(a.id, "user chose the other", actor="user", user_id="u1")
    assert not store.get(a.id, user_id="u1").is_active
    store.reactivate(a.id, "undo", actor="user", user_id="u1")
    assert store.get(a.id, user_id="u1").is_active and store.get(a.id, user_id="u1").superseded_at is None
    store.annotate(a.id, "è il compleanno di mia madre")
    assert store.get(a.id, user_id="u1").context == "è il compleanno di mia madre"
    assert [e.event for e in store.events(a.id)] == ["created", "deactivated", "reactivated", "annotated"]


def test_build_context_project_filter(store):
    store.add("u1", "Preferisco il tè")
    store.add("u1", "Il progetto usa Python", scope="project", project_id="p1")
    store.add("u1", "Il progetto usa Rust", scope="project", project_id="p2")
    ctx = store.build_context("u1", project_id="p1", agent_type="coder")
    assert "Python" in ctx and "Rust" not in ctx and "tè" in ctx and "(coder)" in ctx


# ---------------------------------------------------------------- persistence and the FAISS cache
def test_persistence_across_reopen_and_index_rebuild(tmp_path, fake_embedder):
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder=fake_embedder) as s:
        v1 = s.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
        s.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.85)
        before = s.search("u1", "Chiamami Zhang San", k=2, include_inactive=True)
    assert (tmp_path / "m.db.faiss").exists()
    with MemoryStore(path, embedder=fake_embedder) as s:
        assert [m.id for m in s.history(v1.id)] == [1, 2]
        after = s.search("u1", "Chiamami Zhang San", k=2, include_inactive=True)
        assert [(m.id, round(x, 5)) for m, x in after] == [(m.id, round(x, 5)) for m, x in before]
    # a missing cache is rebuilt from SQLite
    (tmp_path / "m.db.faiss").unlink()
    with MemoryStore(path, embedder=fake_embedder) as s:
        assert len(s.index) == 2
    # an inconsistent cache (a row added behind its back) is rebuilt too
    with MemoryStore(path, embedder=fake_embedder) as s:
        s.add("u1", "Abito a Roma")
        s.backend._dirty = False  # simulate a crash before the index file is written
        s.db.close()
    with MemoryStore(path, embedder=fake_embedder) as s:
        assert len(s.index) == 3 and s.search("u1", "Abito a Roma", k=1)[0][0].text == "Abito a Roma"
    # a corrupt cache file is rebuilt, not fatal
    (tmp_path / "m.db.faiss").write_bytes(b"garbage")
    with MemoryStore(path, embedder=fake_embedder) as s:
        assert len(s.index) == 3


@pytest.mark.model  # runs the packaged embedder in the new processes
@pytest.mark.subprocess
def test_seed_acceptance_script_in_a_new_process(tmp_path):
    """The issue's python -c scenario on the real packaged embedder, then the same answers from a new process."""
    path = tmp_path / "accept.db"
    script = textwrap.dedent(f"""
        import json
        from memlab import MemoryStore
        s = MemoryStore({str(path)!r})
        if s.count('u1', include_inactive=True) == 0:
            s.add('u1', 'Chiamami Zhang San', key='preferred_name', confidence=0.9)
            s.add('u1', 'Chiamami Li Si', key='preferred_name', confidence=0.85)
            s.add('u1', 'Chiamami Wang Wu', key='preferred_name', confidence=0.5)
        h = s.history(1)
        print(json.dumps([[m.id, m.version, m.is_active, m.supersedes, m.superseded_by] for m in h]))
        print(json.dumps([[m.id, round(x, 4)] for m, x in s.search('u1', 'Come mi chiamo?', k=3, include_inactive=True)]))
        s.close()
    """)
    outs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1]
    chain = outs[0].splitlines()[0]
    assert chain == "[[1, 1, false, null, 2], [2, 2, true, 1, null], [3, 3, false, null, 2]]"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_faiss_search_equals_exact_numpy_search(rng, backend, request):
    emb = FakeEmbedder(dim=16)
    if backend == "sqlite":
        s = MemoryStore(":memory:", embedder=emb)
    else:  # the exact mode (no HNSW): its order must be the exact one; HNSW recall is in test_postgres_store.py
        from memlab.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_dsn"), embedder=emb, scan="exact")
    vecs = rng.standard_normal((300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    items = s.add_many("u1", [f"fact {i}" for i in range(300)], embeddings=vecs)
    s.add_many("u2", [f"other {i}" for i in range(50)], embeddings=vecs[:50])
    oracle = NumpyIndex(16)
    oracle.add(np.array([m.id for m in items]), vecs)
    queries = rng.standard_normal((20, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    for q in queries:
        got = s.search_by_vector("u1", q, 10)
        exp_s, exp_i = oracle.search(q[None, :], 10)
        assert [m.id for m, _ in got] == exp_i[0].tolist()
        np.testing.assert_allclose([x for _, x in got], exp_s[0], rtol=1e-5, atol=1e-5)
    s.close()


# ---------------------------------------------------------------- isolation
def test_user_isolation_in_every_method(store):
    a = store.add("alice", "Il mio PIN è 1234", key="pin")
    store.add("bob", "Il mio PIN è 1234", key="pin")
    assert all(m.user_id == "bob" for m in store.list("bob"))
    assert all(m.user_id == "bob" for m, _ in store.search("bob", "PIN", k=10, include_inactive=True))
    assert "alice" not in store.build_context("bob") and store.count("bob") == 1
    with pytest.raises(NotFoundError):
        store.get(a.id, user_id="bob")
    with pytest.raises(NotFoundError):
        store.history(a.id, user_id="bob")
    with pytest.raises(NotFoundError):
        store.deactivate(a.id, "x", user_id="bob")
    # same key for two users: no cross-user version chain
    assert store.get(a.id, user_id="alice").is_active and store.list("bob")[0].is_active
    assert store.search("carol", "PIN") == []


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": ""},
        {"text": "   \n\t "},
        {"text": "x" * 10_001},
        {"text": "ciao\x00mondo"},
        {"text": "ciao\x1b[31m"},
        {"text": 42},
        {"text": "ok", "confidence": 1.5},
        {"text": "ok", "confidence": -0.1},
        {"text": "ok", "confidence": float("nan")},
        {"text": "ok", "valid_from": datetime(2020, 1, 1)},  # noqa: DTZ001 - a naive datetime is the bad input
        {"text": "ok", "keywords": "not-a-list"},
    ],
)
def test_bad_input_raises_and_changes_nothing(store, kwargs):
    store.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    before = snapshot(store)
    kwargs = dict(kwargs)  # a copy: the parametrised dict is shared by both backends' runs
    text = kwargs.pop("text")
    with pytest.raises(InvalidInputError):
        store.add("u1", text, **kwargs)
    assert snapshot(store) == before


def test_wrong_dimension_vectors_and_batches_are_atomic(store):
    store.add("u1", "keep me")
    before = snapshot(store)
    with pytest.raises(DimensionMismatchError):
        store.add("u1", "vector too short", embedding=np.ones(5, dtype=np.float32))
    with pytest.raises(DimensionMismatchError):
        store.search_by_vector("u1", np.ones(7, dtype=np.float32))
    with pytest.raises(InvalidInputError):  # one bad item rejects the whole batch
        store.add_many("u1", ["good one", "", "another good one"])
    assert snapshot(store) == before


@pytest.mark.parametrize("bad_id", [999, -1, "1", None, 1.5])
def test_unknown_ids_raise_not_found(store, bad_id):
    store.add("u1", "x")
    for call in (store.get, store.history):
        with pytest.raises(NotFoundError):
            call(bad_id, user_id="u1")
    with pytest.raises(MemlabError):
        store.deactivate(bad_id, "r", user_id="u1")


def test_bad_user_and_k(store):
    with pytest.raises(InvalidInputError):
        store.add("", "x")
    with pytest.raises(InvalidInputError):
        store.search("u1", "x", k=0)
    with pytest.raises(InvalidInputError):
        store.search("u1", "")


def test_valid_time_and_created_at_are_utc(tmp_path, fake_embedder):
    t0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
    s = MemoryStore(tmp_path / "t.db", embedder=fake_embedder, clock=lambda: t0)
    m = s.add("u1", "Nato nel 1990", valid_from=datetime(1990, 7, 12, tzinfo=UTC),
              valid_to=t0 + timedelta(days=1), source="chat:1/turn:2")
    m = s.get(m.id, user_id="u1")
    assert m.created_at == t0 and m.valid_from.year == 1990 and m.source == "chat:1/turn:2"
    s.close()


def test_reopen_with_another_embedder_reembeds(tmp_path):
    path = tmp_path / "e.db"
    with MemoryStore(path, embedder=FakeEmbedder(dim=8)) as s:
        s.add("u1", "Abito a Roma")
    with pytest.warns(UserWarning, match="re-embedding"), MemoryStore(
        path, embedder=FakeEmbedder(dim=12), reembed=True
    ) as s:
        assert s.index.dim == 12 and s.search("u1", "Abito a Roma", k=1)[0][0].text == "Abito a Roma"


def test_hybrid_search_finds_a_rare_word_on_both_backends(store) -> None:
    """mode='hybrid' (the default) fuses the dense ranking with full-text search (SQLite FTS5 / PostgreSQL
    tsvector): a memory whose exact word the query names comes first even when its cosine ranks it low; another
    user's memory with that word never appears; 'dense' is the cosine ranking alone."""
    store.add_many("u1", [f"Nota numero {i} su argomenti vari e generici" for i in range(40)])
    target = store.add("u1", "Il volo per Osaka parte alle sette")
    store.add("u2", "Osaka Osaka Osaka")
    hybrid = store.search("u1", "quando parte Osaka", k=3)
    assert hybrid[0][0].id == target.id
    assert all(m.user_id == "u1" for m, _ in store.search("u1", "Osaka", k=41))
    dense = store.search("u1", "quando parte Osaka", k=41, mode="dense")
    assert [s for _, s in dense] == sorted((s for _, s in dense), reverse=True)
    assert dict((m.id, s) for m, s in dense)[target.id] == pytest.approx(hybrid[0][1], abs=1e-5)
