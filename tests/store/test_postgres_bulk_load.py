"""PostgresStore.bulk_load (binary COPY, indexes built once), the HNSW index helpers, the iterative-scan setting and
the exact search's single statement. Real server (tests/store/conftest.py), skipped loudly without one."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.errors import InvalidInputError
from memlab.testing import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="psycopg not installed: pip install -e '.[pgserver]'")

from memlab.store.postgres import PostgresStore  # noqa: E402


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def store(pg_dsn):
    s = PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=32))
    yield s
    s.close()


def test_bulk_load_stores_every_row_like_add_many_and_rebuilds_the_indexes(store, rng):
    vecs = {u: unit(rng, 300, 32) for u in ("anna", "bo", "chen")}
    texts = {
        "anna": [f"Anna vive a Milano, ricordo {i}" for i in range(300)],
        "bo": [f"Bo likes green tea, note {i}" for i in range(300)],
        "chen": [f"陈先生住在北京 第{i}条" for i in range(300)],
    }
    res = store.bulk_load((u, texts[u], vecs[u]) for u in ("anna", "bo", "chen"))
    assert res.rows == 900 and len(res.ids) == 900 and res.hnsw_built and res.copy_s > 0
    assert store.count() == 900 and store.count("bo") == 300
    assert store.has_hnsw_index()
    first = store.get(res.ids[0], user_id="anna")
    assert first.text == texts["anna"][0] and first.version == 1 and first.chain_id == first.id and first.is_active
    np.testing.assert_allclose(store.vectors([res.ids[301]])[0], vecs["bo"][1], atol=1e-6)
    assert [e.event for e in store.events(res.ids[5])] == ["created"]
    # exact search: only the user's rows, in numpy's order
    q = unit(rng, 1, 32)[0]
    hits = store.search_by_vector("bo", q, 10, scan="exact")
    order = np.argsort(-(vecs["bo"] @ q), kind="stable")[:10]
    assert [m.id for m, _ in hits] == [res.ids[300 + int(i)] for i in order]
    # the HNSW index is back and used; per-user isolation holds for it too
    assert "memories_embedding_hnsw" in store.explain_search("chen", q, scan="hnsw")
    assert {m.user_id for m, _ in store.search_by_vector("chen", q, 10, scan="hnsw")} == {"chen"}
    # the full-text index is back: Italian and Chinese words are found by the lexical half
    assert "memories_text_fts" in store.conn.execute(
        "SELECT string_agg(indexname, ',') FROM pg_indexes WHERE tablename = 'memories'").fetchone()[0]
    assert any(m.text.startswith("Anna vive a Milano") for m, _ in store.search("anna", "Milano", 5))
    n_fts = store.conn.execute(
        "SELECT count(*) FROM memories WHERE to_tsvector('simple', text) @@ to_tsquery('simple', 'milano')"
    ).fetchone()[0]
    assert n_fts == 300
    # ordinary writes still work after the load
    later = store.add("bo", "Bo moved to Oslo")
    assert later.id > max(res.ids) and store.count("bo") == 301


def test_bulk_load_runs_keyed_items_through_the_version_rule(store, rng):
    old = store.add("u1", "Il mio colore preferito è il blu", key="colore", confidence=0.5)
    items = [
        "un fatto senza chiave",
        {"text": "Il mio colore preferito è il verde", "key": "colore", "confidence": 0.9},
        {"text": "Abito a Roma", "key": "città", "confidence": 0.8},
        {"text": "Abito a Torino", "key": "città", "confidence": 0.6},  # loses to Roma
    ]
    res = store.bulk_load([("u1", items, unit(rng, 4, 32))])
    plain, green, rome, turin = (store.get(i, user_id="u1") for i in res.ids)
    assert plain.key is None and plain.is_active
    assert green.is_active and green.supersedes == old.id and green.version == 2 and green.chain_id == old.chain_id
    assert not store.get(old.id, user_id="u1").is_active
    assert rome.is_active and not turin.is_active and turin.superseded_by == rome.id
    assert [e.event for e in store.events(turin.id, chain=False)] == ["created", "lost"]


def test_bulk_load_is_all_or_nothing_and_validates_its_batches(store, rng):
    store.add("u0", "before the load", embedding=unit(rng, 1, 32)[0])
    good = ("u1", ["a", "b"], unit(rng, 2, 32))
    with pytest.raises(InvalidInputError):  # the second batch has 3 vectors for 2 items
        store.bulk_load([good, ("u2", ["c", "d"], unit(rng, 3, 32))])
    with pytest.raises(InvalidInputError):
        store.bulk_load([("u1", "one text, not a list", None)])
    with pytest.raises(InvalidInputError):
        store.bulk_load([("", ["x"], unit(rng, 1, 32))])
    with pytest.raises(InvalidInputError):  # not unit norm
        store.bulk_load([("u1", ["x"], 3 * unit(rng, 1, 32))])
    assert store.count(include_inactive=True) == 1 and store.has_hnsw_index()  # rolled back, indexes included
    # texts without vectors are embedded; a Chinese text is stored as is
    res = store.bulk_load([("u3", ["我喜欢喝茶", "Mi piace il caffè"], None)])
    assert [store.get(i, user_id="u3").text for i in res.ids] == ["我喜欢喝茶", "Mi piace il caffè"]


def test_bulk_load_without_the_hnsw_index_then_build_it(store, rng):
    store.track_checks = True
    res = store.bulk_load([("u1", [f"f{i}" for i in range(200)], unit(rng, 200, 32))], build_index=False)
    assert not res.hnsw_built and not store.has_hnsw_index()
    assert len(store.unchecked(limit=1000)) == 200  # the check queue is written as add_many writes it
    q = unit(rng, 1, 32)[0]
    assert len(store.search_by_vector("u1", q, 10)) == 10  # exact search needs no HNSW
    seconds = store.build_hnsw_index(maintenance_work_mem="64MB", parallel_workers=0)
    assert seconds > 0 and store.has_hnsw_index() and store.build_hnsw_index() == 0.0
    assert "memories_embedding_hnsw" in store.explain_search("u1", q, scan="hnsw")
    store.drop_hnsw_index()
    store.drop_hnsw_index()  # idempotent
    assert not store.has_hnsw_index()
    added = store.add("u1", "written without the HNSW index", embedding=q)
    assert store.search_by_vector("u1", q, 1)[0][0].id == added.id
    store.rebuild_index()  # builds a missing index instead of failing on REINDEX
    assert store.has_hnsw_index()
    assert store.search_by_vector("u1", q, 1, scan="hnsw")[0][0].id == added.id


def test_relaxed_iterative_scan_returns_the_users_rows_sorted(pg_dsn, rng):
    s = PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=32), iterative_scan="relaxed_order", max_scan_tuples=50_000)
    s.bulk_load([("big", [f"b{i}" for i in range(2000)], unit(rng, 2000, 32)),
                 ("small", [f"s{i}" for i in range(30)], unit(rng, 30, 32))])  # fmt: skip
    q = unit(rng, 1, 32)[0]
    plan = s.explain_search("small", q, scan="hnsw")
    assert "memories_embedding_hnsw" in plan
    hits = s.search_by_vector("small", q, 10, scan="hnsw")
    assert len(hits) == 10 and {m.user_id for m, _ in hits} == {"small"}
    scores = [x for _, x in hits]
    assert scores == sorted(scores, reverse=True)
    s.close()
    with pytest.raises(InvalidInputError, match="iterative_scan"):
        PostgresStore(pg_dsn, embedder=FakeEmbedder(dim=32), iterative_scan="sometimes")


def test_exact_search_is_one_autocommit_statement(store, rng):
    """No BEGIN/SET/COMMIT around the exact search: the connection is idle (not in a transaction) and the
    session's hnsw settings are untouched after it."""
    store.bulk_load([("u1", [f"f{i}" for i in range(50)], unit(rng, 50, 32))])
    statements: list[str] = []

    class SpyCursor(psycopg.Cursor):
        def execute(self, query, *args, **kwargs):
            statements.append(str(query))
            return super().execute(query, *args, **kwargs)

    store.conn.execute("SET hnsw.ef_search = 77")
    store.conn.cursor_factory = SpyCursor
    try:
        hits = store.search_by_vector("u1", unit(rng, 1, 32)[0], 5, scan="exact")
        statements_exact = list(statements)
        statements.clear()
        store.search_by_vector("u1", unit(rng, 1, 32)[0], 5, scan="hnsw")
    finally:
        store.conn.cursor_factory = psycopg.Cursor
    assert len(hits) == 5
    assert len(statements_exact) == 1 and "memlab search: exact" in statements_exact[0]
    assert any("SET LOCAL hnsw.ef_search" in x for x in statements)  # the HNSW modes set their knobs locally
    assert store.conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "77"
    assert store.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
