"""PostgresStore specifics: HNSW vs exact search, concurrent writers on one slot, the durable check queue, the
partial unique index, the embedder binding, and seed 002's ``search_chats_semantic``.

The tests shared with the SQLite store run on both backends in test_memory_store.py. Every test here gets a fresh
database on the session's throwaway server (tests/store/conftest.py) and is skipped, loudly, without one.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.errors import DimensionMismatchError, InvalidInputError, NotFoundError
from memlab.testing import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed: pip install -e '.[pgserver]'")

from memlab.store.postgres import PostgresStore  # noqa: E402


@pytest.fixture
def pg(pg_dsn, fake_embedder):
    s = PostgresStore(pg_dsn, embedder=fake_embedder)
    yield s
    s.close()


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# ---------------------------------------------------------------- search: HNSW vs exact
def test_hnsw_mode_uses_the_index_and_keeps_recall_under_a_user_filter(pg_dsn, rng):
    emb = FakeEmbedder(dim=32)
    s = PostgresStore(pg_dsn, embedder=emb)
    big, small = unit(rng, 2000, 32), unit(rng, 25, 32)
    s.add_many("big", [f"b{i}" for i in range(2000)], embeddings=big)
    s.add_many("small", [f"s{i}" for i in range(25)], embeddings=small)
    q0 = unit(rng, 1, 32)[0]
    assert "memories_embedding_hnsw" in s.explain_search("big", q0, scan="hnsw")
    assert "memories_embedding_hnsw" not in s.explain_search("big", q0, scan="exact")
    hits = total = 0
    for q in unit(rng, 20, 32):
        for user in ("big", "small"):
            exact = s.search_by_vector(user, q, 10, scan="exact")
            approx = s.search_by_vector(user, q, 10, scan="hnsw")
            # the filter keeps only the user's rows, and the iterative scan still fills k (small: 25 of 2025 rows)
            assert len(approx) == 10 and {m.user_id for m, _ in approx} == {user}
            scores = [x for _, x in approx]
            assert scores == sorted(scores, reverse=True)
            hits += len({m.id for m, _ in exact} & {m.id for m, _ in approx})
            total += 10
            # exact mode agrees with numpy
            pool = big if user == "big" else small
            first = 1 if user == "big" else 2001
            order = np.argsort(-(pool @ q), kind="stable")[:10]
            assert [m.id for m, _ in exact] == (order + first).tolist()
    assert hits / total >= 0.95, f"HNSW recall@10 {hits / total:.3f}"
    s.close()


def test_each_search_mode_keeps_its_plan_once_psycopg_prepares_the_statement(pg_dsn, rng):
    """psycopg prepares a statement after 5 runs and the server may then reuse one plan: the exact mode must never
    touch the HNSW index and the hnsw mode must always use it, in any order, however many times they ran."""
    s = PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=32))
    vecs = unit(rng, 300, 32)
    s.add_many("u1", [f"f{i}" for i in range(300)], embeddings=vecs)
    # what the server chose by itself at 10k rows (eval/experiments/pg_hnsw_recall.py): one generic plan per statement
    s.conn.execute("SET plan_cache_mode = force_generic_plan")

    def hnsw_scans() -> int:
        s.conn.execute("SELECT pg_stat_force_next_flush()")
        row = s.conn.execute(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'memories_embedding_hnsw'"
        ).fetchone()
        return int(row[0])

    queries = unit(rng, 8, 32)
    for mode, expected in (("exact", 0), ("hnsw", len(queries)), ("exact", 0), ("hnsw", len(queries))):
        before = hnsw_scans()
        for q in queries:
            got = [m.id for m, _ in s.search_by_vector("u1", q, 10, scan=mode)]
            if mode == "exact":
                assert got == (np.argsort(-(vecs @ q), kind="stable")[:10] + 1).tolist()
        assert hnsw_scans() - before == expected, mode
    s.close()


def test_search_exclude_min_score_and_inactive(pg, fake_embedder):
    a = pg.add("u1", "Chiamami Zhang San", key="preferred_name", confidence=0.9)
    b = pg.add("u1", "Chiamami Li Si", key="preferred_name", confidence=0.9)
    c = pg.add("u1", "Abito a Roma")
    q = fake_embedder.embed(["Chiamami Zhang San"], mode="query")[0]
    assert a.id not in {m.id for m, _ in pg.search_by_vector("u1", q, 5)}
    got = pg.search_by_vector("u1", q, 5, include_inactive=True)
    assert got[0][0].id == a.id and got[0][1] == pytest.approx(1.0, abs=1e-5)
    assert a.id not in {m.id for m, _ in pg.search_by_vector("u1", q, 5, include_inactive=True, exclude=[a.id])}
    assert [m.id for m, _ in pg.search_by_vector("u1", q, 5, include_inactive=True, min_score=0.99)] == [a.id]
    assert {b.id, c.id} == {m.id for m, _ in pg.search_by_vector("u1", q, 5)}
    # a scaled vector gives the same cosines
    again = pg.search_by_vector("u1", q * 7.5, 5, include_inactive=True)
    np.testing.assert_allclose([x for _, x in again], [x for _, x in got], atol=1e-6)
    with pytest.raises(InvalidInputError):
        pg.search_by_vector("u1", np.zeros(32, dtype=np.float32))
    with pytest.raises(InvalidInputError):
        pg.search_by_vector("u1", q, 3, scan="fuzzy")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the version rule under concurrency
def test_concurrent_writers_on_one_slot_leave_one_active_version_and_a_whole_chain(pg_dsn, fake_embedder):
    stores = [PostgresStore(pg_dsn, embedder=fake_embedder) for _ in range(3)]
    errors: list[BaseException] = []

    def write(s: PostgresStore, w: int) -> None:
        try:
            for i in range(10):
                s.add("u1", f"Abito a città {w}-{i}", key="home_city", confidence=0.9)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, w)) for w, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = stores[0]
    everything = s.list("u1", include_inactive=True)
    active = [m for m in everything if m.is_active]
    assert len(everything) == 30 and len(active) == 1
    chain = s.history(everything[0].id, user_id="u1")
    assert [m.version for m in chain] == list(range(1, 31))
    assert active[0].version == 30  # every write saw the previous one: the last one wins the tie
    by_id = {m.id: m for m in chain}
    for m in chain[:-1]:  # each version points at the one that replaced it, and back
        nxt = by_id[m.superseded_by]
        assert nxt.supersedes == m.id and nxt.version == m.version + 1
    for st in stores:
        st.close()


def test_unique_index_keeps_one_active_version_per_slot_whatever_the_writer(pg):
    v1 = pg.add("u1", "Vivo a Roma", key="home_city", confidence=0.9)
    v2 = pg.add("u1", "Vivo a Milano", key="home_city", confidence=0.9)
    with pytest.raises(psycopg.errors.UniqueViolation):
        pg.conn.execute("UPDATE memories SET is_active = true WHERE id = %s", (v1.id,))
    with pytest.raises(InvalidInputError):
        pg.reactivate(v1.id, "user chose the older value", user_id="u1")
    pg.deactivate(v2.id, "user chose the older value", user_id="u1")
    assert pg.reactivate(v1.id, "user chose the older value", user_id="u1").is_active
    assert [m.id for m in pg.list("u1")] == [v1.id]
    events = [e.event for e in pg.events(v1.id, user_id="u1")]
    assert events == ["created", "created", "superseded", "deactivated", "reactivated"]
    # set_key refuses to move an active memory into an occupied slot
    other = pg.add("u1", "Lavoro a Torino", key="work_city")
    with pytest.raises(InvalidInputError):
        pg.set_key(other.id, "home_city", user_id="u1")
    assert pg.set_key(other.id, None, user_id="u1").key is None


# ---------------------------------------------------------------- durable check queue, reopen, embedder binding
def test_check_queue_is_durable_and_written_with_the_memory(pg_dsn, fake_embedder):
    s = PostgresStore(pg_dsn, embedder=fake_embedder)
    s.add("u1", "non in coda")
    s.track_checks = True
    a = s.add("u1", "Sono nato a Torino")
    b = s.add("u2", "Sono nato a Bari")
    with pytest.raises(InvalidInputError):  # a rejected batch queues nothing
        s.add_many("u1", ["ok", ""])
    s.close()
    with PostgresStore(pg_dsn, embedder=fake_embedder) as s2:  # another connection, later
        assert s2.unchecked() == [(a.id, "u1"), (b.id, "u2")]
        s2.mark_checked_queued([a.id])
        assert s2.unchecked() == [(b.id, "u2")]
        assert s2.count(include_inactive=True) == 3 and s2.users() == ["u1", "u2"]


def test_reopen_keeps_everything_and_refuses_another_embedder(pg_dsn, fake_embedder):
    t0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
    with PostgresStore(pg_dsn, embedder=fake_embedder, clock=lambda: t0) as s:
        m = s.add("u1", "Nato nel 1990", valid_from=datetime(1990, 7, 12, tzinfo=UTC),
                  valid_to=t0 + timedelta(days=1), source="chat:1/turn:2", keywords=["nascita", "1990"])  # fmt: skip
        before = s.search("u1", "Nato nel 1990", k=1)
    with PostgresStore(pg_dsn, embedder=fake_embedder) as s:
        got = s.get(m.id, user_id="u1")
        assert got == m and got.created_at == t0 and got.keywords == ("nascita", "1990")
        assert [(x.id, round(y, 5)) for x, y in s.search("u1", "Nato nel 1990", k=1)] == [
            (x.id, round(y, 5)) for x, y in before
        ]
        np.testing.assert_allclose(s.vectors([m.id])[0], fake_embedder.embed(["Nato nel 1990"])[0], atol=1e-6)
    with pytest.raises(InvalidInputError, match="fake"):
        PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=16))


def test_bad_dsn_and_unreachable_server_are_memlab_errors(fake_embedder):
    from memlab.errors import BackendError

    with pytest.raises(InvalidInputError):
        PostgresStore("", embedder=fake_embedder)
    with pytest.raises(BackendError):
        PostgresStore("host=/nonexistent-socket-dir port=1 user=x dbname=x", embedder=fake_embedder, connect_timeout=2)


def test_a_lost_connection_is_a_backend_error_and_the_data_stays(pg_dsn, fake_embedder):
    from memlab.errors import BackendError

    s = PostgresStore(pg_dsn, embedder=fake_embedder)
    a = s.add("u1", "Abito a Roma", key="home_city")
    other = psycopg.connect(pg_dsn, autocommit=True)
    other.execute("SELECT pg_terminate_backend(%s)", (s.conn.info.backend_pid,))
    other.close()
    with pytest.raises(BackendError):
        s.add("u1", "Abito a Milano", key="home_city")
    s.close()
    with PostgresStore(pg_dsn, embedder=fake_embedder) as s2:
        assert [m.id for m in s2.list("u1", include_inactive=True)] == [a.id] and s2.get(a.id, user_id="u1").is_active


# ---------------------------------------------------------------- seed 002: chats + search_chats_semantic
def _chats(fake_embedder):
    from memlab.chats import ChatStore
    from memlab.store import MemoryStore

    now = [datetime(2026, 3, 1, 9, tzinfo=UTC)]
    # a window of 2: three turns compact at once, and a compacted chat has the seed's summary_text and embedding
    cs = ChatStore(MemoryStore(":memory:", embedder=fake_embedder), clock=lambda: now[0], summary_window_size=2)
    topics = {
        "u1": ["viaggio a Tokyo a maggio", "mutuo della casa a Milano", "ricetta della carbonara", "corso di cinese"],
        "u2": ["viaggio a Tokyo con la famiglia", "manutenzione della bici"],
    }
    out = []
    for user, texts in topics.items():
        for t in texts:
            now[0] += timedelta(hours=1)
            out.append(cs.create(user, turns=[{"role": role, "parts": [{"text": f"{lead} {t}."}]} for role, lead in (
                ("user", "Parliamo di"), ("model", "Va bene, parliamo di"), ("user", "Sì, proprio di"))]))
    return out


def test_search_chats_semantic_ranks_a_users_chats_by_summary_embedding(pg, fake_embedder):
    chats = _chats(fake_embedder)
    for c in chats:
        assert c.summary_embedding is not None
        pg.put_chat(c)
    q = fake_embedder.embed(["il viaggio a Tokyo"], mode="query")[0]
    mine = [c for c in chats if c.user_id == "u1"]
    sims = np.array([float(c.summary_embedding @ q) for c in mine])
    expected = [mine[i].id for i in np.argsort(-sims, kind="stable")]
    got = pg.search_chats("u1", q, k=10)
    assert [cid for cid, _ in got] == expected  # only u1's chats, best first
    np.testing.assert_allclose([s for _, s in got], np.sort(sims)[::-1], atol=1e-5)
    assert pg.search_chats("u1", q, k=2) == got[:2]
    # the cut-off is a cosine distance: 1 - similarity
    cut = 1 - got[1][1] + 1e-6
    assert [cid for cid, _ in pg.search_chats("u1", q, k=10, max_distance=cut)] == expected[:2]
    assert pg.search_chats("nobody", q) == []
    # the same ranking straight from SQL (the RPC of seed 002)
    rows = pg.conn.execute(
        "SELECT id, similarity FROM search_chats_semantic(%s::vector, %s, %s)",
        ("[" + ",".join(str(float(x)) for x in q) + "]", "u1", 3),
    ).fetchall()
    assert [r[0].hex for r in rows] == expected[:3]
    # an update moves the chat (upsert), another user cannot overwrite it
    from dataclasses import replace

    first = mine[0]
    pg.put_chat(replace(first, summary_text="x", summary_embedding=q.copy()))
    assert pg.search_chats("u1", q, k=1)[0] == (first.id, pytest.approx(1.0, abs=1e-5))
    with pytest.raises(NotFoundError):
        pg.put_chat(replace(first, user_id="u2"))


def test_search_chats_bad_input(pg, fake_embedder):
    q = fake_embedder.embed(["x"], mode="query")[0]
    with pytest.raises(InvalidInputError):
        pg.search_chats("u1", q, k=0)
    with pytest.raises(InvalidInputError):
        pg.search_chats("", q)
    with pytest.raises(DimensionMismatchError):
        pg.search_chats("u1", q[:5])
    with pytest.raises(InvalidInputError):
        pg.search_chats("u1", q, max_distance=3.0)
    from dataclasses import replace

    chat = _chats(fake_embedder)[0]
    with pytest.raises(InvalidInputError):
        pg.put_chat(replace(chat, id="not-a-uuid"))
