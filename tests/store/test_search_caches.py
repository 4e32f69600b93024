"""The store's search path after the latency work: same answers as before, caches that follow every write.

The reference functions below are the previous implementation's logic, written out: the full-text query joined
with ``memories`` (user and activity filtered in SQL), the dense search over ``allowed`` minus the excluded ids
with a fresh FAISS id selector, and ``find_containing`` as an SQL ``LIKE`` scan.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memlab._validation import as_vectors, check_unit_vectors
from memlab.index import FaissIndex
from memlab.lab.bench.corpus import fact_corpus
from memlab.store import MemoryStore
from memlab.store.caches import ActiveTexts
from memlab.store.lexical import fts_query, fuse_with_cosines, owner_token
from memlab.testing import FakeEmbedder

MIXED = [
    "Abito a Città di Castello", "ABITO A ROMA da tre anni", "Mi chiamo Zoë e sono NATA a Torino",
    "我住在北京，我的生日是五月", "我叫李四", "I was BORN in Tokyo", "My name is Anna", "Lavoro da Fiat come ingegnere",
    "Il mio compleanno è il 3 marzo", "Preferisco il caffè al tè", "I have 3 cats", "Sono alto 180 cm",
]


def _reference_search(store: MemoryStore, user: str, text: str, k: int = 10) -> list[tuple[int, float]]:
    """The previous ``MemoryStore.search`` (hybrid) logic."""
    vec = store.embedder.embed([text], mode="query")[0]
    depth = max(4 * k, 40)
    rows = store.db.query("SELECT id FROM memories WHERE user_id = ? AND is_active = 1 ORDER BY id", (user,))
    allowed = np.array([r["id"] for r in rows], dtype=np.int64)  # writeable: a fresh selector every call
    dense = _reference_dense(store, user, vec, depth, allowed)
    expr = fts_query(text)
    lexical = [] if expr is None else [int(r["id"]) for r in store.db.query(
        "SELECT f.rowid AS id FROM memories_fts f JOIN memories m ON m.id = f.rowid "
        "WHERE memories_fts MATCH ? AND m.user_id = ? AND m.is_active = 1 ORDER BY bm25(memories_fts) LIMIT ?",
        (f'owner : "{owner_token(user)}" AND ({expr})', user, depth))]
    return fuse_with_cosines(dense, lexical, vec, store.vectors, k=k)


def _reference_dense(store: MemoryStore, user: str, vec: np.ndarray, k: int, allowed: np.ndarray,
                     exclude: tuple[int, ...] = ()) -> list[tuple[int, float]]:
    allowed = np.setdiff1d(allowed, np.asarray(exclude, dtype=np.int64))
    if len(allowed) == 0:
        return []
    q = check_unit_vectors(as_vectors(vec, store.embedder.dim), normalize=True)
    scores, ids = store.index.search(q, min(k, len(allowed)), allowed=allowed.copy(), partition=user)
    return [(int(i), float(s)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]


def _reference_containing(store: MemoryStore, user: str, terms: list[str], exclude_id: int | None,
                          limit: int) -> list[int]:
    where = " OR ".join("lower(text) LIKE ?" for _ in terms)
    rows = store.db.query(
        f"SELECT id FROM memories WHERE user_id = ? AND is_active = 1 AND id != ? AND ({where}) ORDER BY id DESC "
        "LIMIT ?", (user, exclude_id if exclude_id is not None else -1, *[f"%{t.lower()}%" for t in terms], limit))
    return [int(r["id"]) for r in rows]


def _fill(store: MemoryStore) -> None:
    """Three users; u1 with keyed versions (superseded and lost ones), a deactivated memory, Italian/Chinese text."""
    store.add_many("u1", fact_corpus(300, seed=3) + MIXED)
    store.add_many("u2", fact_corpus(80, seed=4) + MIXED[:4])
    store.add("u3", "Abito a Roma")
    for i, city in enumerate(["Roma", "Milano", "Tokyo", "Berlin"]):
        store.add("u1", f"Abito a {city}", key="home_city", value=city, confidence=1.0 if i != 2 else 0.5)
    victim = store.list("u1")[7]
    store.deactivate(victim.id, "test", user_id="u1")


def _assert_same_search(store: MemoryStore, queries: list[str], user: str = "u1") -> None:
    for q in queries:
        got = store.search(user, q, k=10)
        want = _reference_search(store, user, q)
        assert [m.id for m, _ in got] == [i for i, _ in want], q
        assert [c for _, c in got] == pytest.approx([c for _, c in want], abs=1e-5), q
        assert all(m.user_id == user and m.is_active for m, _ in got)


QUERIES = fact_corpus(25, seed=1) + ["Dove abito?", "我住在哪里？", "When was I born?", "Tokyo", "caffè", "?!"]


def test_hybrid_search_is_unchanged_on_a_real_store(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=48)) as store:
        _fill(store)
        _assert_same_search(store, QUERIES)
        _assert_same_search(store, QUERIES[:5], user="u2")


@pytest.mark.model
def test_hybrid_search_is_unchanged_with_the_packaged_minilm(tmp_path: Path) -> None:
    from memlab.embedding import MiniLMEmbedder

    # MiniLM gives the template corpus many exact cosine ties (repeated sentences): the tie order must hold too
    with MemoryStore(tmp_path / "m.db", embedder=MiniLMEmbedder()) as store:
        _fill(store)
        _assert_same_search(store, QUERIES)


def test_search_by_vector_with_exclude_matches_the_previous_selector_logic(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=48)) as store:
        _fill(store)
        items = store.list("u1")
        allowed = np.array([m.id for m in items], dtype=np.int64)
        for item in items[::37]:
            vec = store.vectors([item.id])[0]
            for k in (1, 10, 40):
                for exclude in ((item.id,), (item.id, items[0].id, 10**9), ()):
                    got = store.backend.dense("u1", vec, k, include_inactive=False, exclude=exclude)
                    want = _reference_dense(store, "u1", vec, k, allowed, exclude)
                    assert [i for i, _ in got] == [i for i, _ in want]
        # everything excluded: no hits, no error
        assert store.search_by_vector("u3", store.vectors([store.list("u3")[0].id])[0], 5,
                                      exclude=[m.id for m in store.list("u3")]) == []


def _check_caches_against_a_fresh_store(store: MemoryStore, path: Path, users: tuple[str, ...] = ("u1", "u2")) -> None:
    """Every cached answer equals what a store opened now on the same file (no caches yet) answers."""
    with MemoryStore(path, embedder=store.embedder) as fresh:
        for u in users:
            for inactive in (False, True):
                assert store.backend._allowed_ids(u, inactive).tolist() == fresh.backend._allowed_ids(u, inactive).tolist()
            for terms in (["abit", "live"], ["nat", "born", "生日"], ["tokyo"], ["Roma"]):
                assert [m.id for m in store.find_containing(u, terms)] == \
                    _reference_containing(fresh, u, terms, None, 20)
            for q in ("Dove abito?", "Tokyo", "我住在哪里？"):
                assert [(m.id, m.is_active) for m, _ in store.search(u, q, k=10)] == \
                    [(m.id, m.is_active) for m, _ in fresh.search(u, q, k=10)]
                assert [m.id for m, _ in store.search(u, q, k=10, include_inactive=True)] == \
                    [m.id for m, _ in fresh.search(u, q, k=10, include_inactive=True)]


def test_caches_follow_add_deactivate_reactivate_and_version_updates(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder=FakeEmbedder(dim=48)) as store:
        _fill(store)
        _check_caches_against_a_fresh_store(store, path)  # caches loaded now
        before = store.backend._allowed_ids("u1", False)
        new = store.add("u1", "Adesso abito a Tokyo")
        assert new.id in store.backend._allowed_ids("u1", False) and new.id not in before
        assert store.find_containing("u1", ["tokyo"])[0].id == new.id
        _check_caches_against_a_fresh_store(store, path)
        # a version update: the slot's active version steps down, the new one is active
        v_old = store.list("u1", key="home_city")[0]
        v_new = store.add("u1", "Abito a Napoli", key="home_city", value="Napoli")
        assert v_new.supersedes == v_old.id
        assert v_old.id not in store.backend._allowed_ids("u1", False) and v_new.id in store.backend._allowed_ids("u1", False)
        assert v_old.id in store.backend._allowed_ids("u1", True)
        assert v_old.id not in [m.id for m in store.find_containing("u1", ["abito"], limit=1000)]
        _check_caches_against_a_fresh_store(store, path)
        # a version that loses (lower confidence) is stored inactive
        lost = store.add("u1", "Abito a Bari", key="home_city", value="Bari", confidence=0.1)
        assert not lost.is_active and lost.id not in store.backend._allowed_ids("u1", False)
        # several versions of one slot in one call: only the last stays active
        batch = store.add_many("u1", [{"text": f"Abito a {c}", "key": "home_city", "value": c}
                                      for c in ("Parma", "Lecce", "Como")])
        assert [m.is_active for m in batch] == [False, False, True]
        assert set(store.backend._allowed_ids("u1", False).tolist()) & {m.id for m in batch} == {batch[-1].id}
        _check_caches_against_a_fresh_store(store, path)
        # deactivate / reactivate
        store.deactivate(new.id, "wrong", user_id="u1")
        assert new.id not in store.backend._allowed_ids("u1", False)
        assert new.id not in [m.id for m in store.find_containing("u1", ["tokyo"])]
        assert new.id not in [m.id for m, _ in store.search("u1", "Adesso abito a Tokyo", k=50)]
        _check_caches_against_a_fresh_store(store, path)
        store.reactivate(new.id, "right after all", user_id="u1")
        assert store.find_containing("u1", ["tokyo"])[0].id == new.id
        _check_caches_against_a_fresh_store(store, path)


def test_caches_of_one_user_never_hold_another_users_memories(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder=FakeEmbedder(dim=48)) as store:
        _fill(store)
        u1_ids = set(store.backend._allowed_ids("u1", True).tolist())
        store.find_containing("u1", ["abit"])
        other = store.add("u2", "Abito a Tokyo, ho 3 gatti")
        store.deactivate(store.list("u2")[0].id, "x", user_id="u2")
        assert set(store.backend._allowed_ids("u1", True).tolist()) == u1_ids
        assert other.id not in [m.id for m in store.find_containing("u1", ["tokyo", "gatti"], limit=1000)]
        assert all(m.user_id == "u1" for m, _ in store.search("u1", "Abito a Tokyo, ho 3 gatti", k=50))
        assert all(m.user_id == "u3" for m in store.find_containing("u3", ["abit"], limit=1000))
        _check_caches_against_a_fresh_store(store, path, users=("u1", "u2", "u3"))


def test_caches_are_dropped_when_another_connection_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    emb = FakeEmbedder(dim=48)
    with MemoryStore(path, embedder=emb) as a:
        _fill(a)
        a.find_containing("u1", ["abit"])
        a.search("u1", "Dove abito?")
        with MemoryStore(path, embedder=emb) as b:
            written = b.add("u1", "Abito a Kyoto")
            b.deactivate(b.list("u1")[0].id, "x", user_id="u1")
        assert a.find_containing("u1", ["kyoto"])[0].id == written.id
        _check_caches_against_a_fresh_store(a, path)


def test_a_rolled_back_outer_transaction_leaves_no_stale_cache(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder=FakeEmbedder(dim=48)) as store:
        _fill(store)
        target = store.list("u1")[3]
        store.find_containing("u1", ["abit"])
        with pytest.raises(RuntimeError), store.db.transaction():
            store.deactivate(target.id, "x", user_id="u1")
            raise RuntimeError("undo")
        assert store.get(target.id, user_id="u1").is_active
        assert target.id in store.backend._allowed_ids("u1", False)
        _check_caches_against_a_fresh_store(store, path)


def test_active_texts_answer_like_sqlite_like_through_many_changes(tmp_path: Path) -> None:
    texts = fact_corpus(1500, seed=5) + MIXED * 3
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=16)) as store:
        items = store.add_many("u", texts)
        store.add("v", "Sono nato a Roma")
        cache = ActiveTexts((m.id, m.text) for m in items)
        rng = np.random.default_rng(0)
        term_sets = [["nat", "born", "生日"], ["città", "CITTÀ"], ["zoë"], ["abit", "live", "住"], ["ho ", "have"],
                     ["roma"], ["caffè"], ["xyzzy"], ["北京"], ["cm"]]
        for step in range(4):
            for terms in term_sets:
                for exclude in (None, items[-1].id, items[0].id):
                    for limit in (1, 20, 50, 5000):
                        want = _reference_containing(store, "u", terms, exclude, limit)
                        assert cache.containing([t.lower() for t in terms], exclude_id=exclude, limit=limit) == want
                        assert [m.id for m in store.find_containing("u", terms, exclude_id=exclude, limit=limit)] == want
            # > 512 changes between rounds: the joined string is rebuilt at least once
            active = store.backend._allowed_ids("u", False)
            gone = rng.choice(active, size=300, replace=False).tolist()
            for i in gone:
                store.deactivate(int(i), "t", user_id="u")
            cache.remove(gone)
            if step % 2:
                back = gone[:100]
                for i in back:
                    store.reactivate(int(i), "t", user_id="u")
                cache.add((int(i), store.get(int(i), user_id="u").text) for i in back)
            added = store.add_many("u", fact_corpus(250, seed=10 + step))
            cache.add((m.id, m.text) for m in added)
            assert len(cache) == store.count("u")


def test_find_containing_with_like_wildcards_still_uses_sql_semantics(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=16)) as store:
        store.add_many("u", ["100% sure", "a_b", "axb", "nothing"])
        for terms in (["%"], ["a_b"], [""], ["100%"]):
            assert [m.id for m in store.find_containing("u", terms)] == _reference_containing(store, "u", terms, None, 20)


def test_faiss_index_reuses_its_selector_only_for_read_only_arrays() -> None:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    idx = FaissIndex(8)
    idx.add(np.arange(1, 51), vecs)
    q = vecs[:1]
    frozen = np.arange(1, 26, dtype=np.int64)
    frozen.flags.writeable = False
    first = idx.search(q, 5, allowed=frozen)[1][0].tolist()
    assert idx.search(q, 5, allowed=frozen)[1][0].tolist() == first and all(i <= 25 for i in first)
    # a writeable array changed in place is read again (no stale selector)
    mutable = np.arange(1, 26, dtype=np.int64)
    assert idx.search(q, 5, allowed=mutable)[1][0].tolist() == first
    mutable[:] = np.arange(26, 51)
    assert all(i > 25 for i in idx.search(q, 5, allowed=mutable)[1][0].tolist())
    # empty allowed lists: no hits, whatever their type
    for empty in (np.zeros(0, dtype=np.int64), [], frozen[:0]):
        assert idx.search(q, 3, allowed=empty)[1][0].tolist() == [-1, -1, -1]


def test_sorted_union_and_minus_keep_arrays_sorted_unique_and_read_only() -> None:
    from memlab.store.caches import sorted_minus, sorted_union

    a = np.array([2, 5, 9], dtype=np.int64)
    for out, want in ((sorted_union(a, [5, 1, 10, 10, 3]), [1, 2, 3, 5, 9, 10]), (sorted_union(a[:0], [3, 1]), [1, 3]),
                      (sorted_union(a, []), [2, 5, 9]), (sorted_minus(a, [5, 7, 100]), [2, 9]),
                      (sorted_minus(a[:0], [1]), []), (sorted_minus(a, [2, 9, 5]), [])):
        assert out.tolist() == want and out.dtype == np.int64 and not out.flags.writeable
    assert a.tolist() == [2, 5, 9]  # the input is never changed in place
