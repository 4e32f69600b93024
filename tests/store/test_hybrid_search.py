"""Hybrid search (dense + SQLite FTS5 BM25, reciprocal rank fusion) in MemoryStore and in the chat archive."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlab.chats import ChatStore
from memlab.errors import InvalidInputError, NotFoundError
from memlab.store import MemoryStore
from memlab.store.lexical import LexicalIndex, fts_query, lexical_text, reciprocal_rank_fusion
from memlab.testing import FakeEmbedder

FILLER = [f"Nota numero {i} su argomenti vari e generici" for i in range(60)]


@pytest.mark.parametrize(
    "query",
    ['NEAR(a b)', 'tokyo"', "a* OR b", "owner : x", "AND OR NOT", "'; DROP TABLE memories; --", "col:val ^start"],
)
def test_fts_query_never_lets_fts5_syntax_through(query: str) -> None:
    idx = LexicalIndex()
    idx.add([(1, "Tokyo trip in May"), (2, "AND OR NOT are words here")])
    idx.search(query, 5)  # no sqlite3.OperationalError: every term is a quoted string
    expr = fts_query(query)
    assert expr is None or all(part.startswith('"') and part.endswith('"') for part in expr.split(" OR "))


def test_lexical_text_and_query_split_chinese_so_words_inside_a_sentence_match() -> None:
    idx = LexicalIndex()
    idx.add([(1, "我下个月去东京旅行"), (2, "我喜欢吃苹果")])
    assert lexical_text("东京") == "东 京 "
    assert idx.search("东京", 5) == [1]
    assert idx.search("苹果", 5) == [2]


def test_rrf_is_rank_based_and_rewards_agreement() -> None:
    fused = dict(reciprocal_rank_fusion([[1, 2, 3], [3, 4]], k=10))
    assert fused[3] == pytest.approx(1 / 13 + 1 / 11)
    assert fused[1] == pytest.approx(1 / 11)
    assert max(fused, key=fused.__getitem__) == 3  # second in one list, first in the other beats first in one
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([[1]], weights=[1.0, 2.0])


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(str(tmp_path / "m.db"), embedder=FakeEmbedder(dim=32))
    yield s
    s.close()


def test_hybrid_finds_the_memory_with_the_rare_word_dense_misses(store: MemoryStore) -> None:
    store.add_many("u1", FILLER)
    target = store.add("u1", "Il volo per Osaka parte alle sette")
    # FakeEmbedder: different texts are ~orthogonal, so the cosine alone ranks the target anywhere
    dense = [m.id for m, _ in store.search("u1", "quando parte Osaka", k=3, mode="dense")]
    hybrid = store.search("u1", "quando parte Osaka", k=3)
    assert target.id not in dense
    assert hybrid[0][0].id == target.id
    # scores stay cosines, whatever the order
    cos = dict((m.id, s) for m, s in store.search("u1", "quando parte Osaka", k=61, mode="dense"))
    assert hybrid[0][1] == pytest.approx(cos[target.id], abs=1e-6)


def test_hybrid_search_keeps_users_apart_and_skips_superseded_versions(store: MemoryStore) -> None:
    store.add("u2", "Il mio cane Osaka ha tre anni")
    store.add_many("u1", FILLER[:5])
    old = store.add("u1", "Vivo a Osaka", key="city")
    new = store.add("u1", "Vivo a Kyoto", key="city")
    hits = [m for m, _ in store.search("u1", "Osaka", k=10)]
    assert all(m.user_id == "u1" for m in hits)
    assert old.id not in [m.id for m in hits] and new.id in [m.id for m in hits]
    assert old.id in [m.id for m, _ in store.search("u1", "Osaka", k=10, include_inactive=True)]
    assert store.search("u3", "Osaka", k=5) == []


def test_min_score_and_mode_are_checked(store: MemoryStore) -> None:
    store.add_many("u1", [*FILLER[:10], "Osaka in primavera"])
    assert all(s >= 0.5 for _, s in store.search("u1", "Osaka", k=10, min_score=0.5))
    with pytest.raises(InvalidInputError, match="mode"):
        store.search("u1", "Osaka", mode="bm25")
    with pytest.raises(InvalidInputError):
        store.search("u1", "Osaka", k=0)


def test_an_older_file_without_the_full_text_rows_is_backfilled_on_open(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with MemoryStore(path, embedder=FakeEmbedder(dim=32)) as s:
        s.add_many("u1", FILLER[:20])
        target = s.add("u1", "Il volo per Osaka parte alle sette")
    with sqlite3.connect(path) as con:  # as a file written before the full-text table existed would be
        con.execute("DELETE FROM memories_fts")
    with MemoryStore(path, embedder=FakeEmbedder(dim=32)) as s:
        assert s.db.query_one("SELECT COUNT(*) AS n FROM memories_fts")["n"] == 21
        assert s.search("u1", "Osaka", k=1)[0][0].id == target.id


T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _turn(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"text": text}]}


@pytest.fixture
def chats(store: MemoryStore) -> ChatStore:
    return ChatStore(store, summary_window_size=4, clock=_Clock())


def test_compaction_archives_every_folded_turn_in_dated_passages(chats: ChatStore) -> None:
    c = chats.create("u1")
    chats.append(c.id, [_turn("user", "Ieri sono stata a Osaka"), _turn("model", "Com'era?")])
    chats.clock.now = T0 + timedelta(days=3)
    chats.append(c.id, [_turn("user", f"Messaggio {i}") for i in range(6)])
    chat = chats.get(c.id)
    rows = chats.db.query("SELECT start_pos, end_pos, text FROM chat_passages WHERE chat_id = ? ORDER BY end_pos", (c.id,))
    assert [r["end_pos"] for r in rows] == list(range(chat.compacted_until))
    first = rows[0]
    assert first["text"] == "[8 maggio 2023] Ieri sono stata a Osaka"
    # a passage never joins two sessions (3 days apart) and holds at most 3 turns
    assert (rows[2]["start_pos"], rows[2]["end_pos"]) == (2, 2)
    assert all(r["end_pos"] - r["start_pos"] <= 2 for r in rows)
    hits = chats.search_history("u1", "Osaka", k=3)
    assert hits[0].chat_id == c.id and 0 in hits[0].positions and "Osaka" in hits[0].text
    assert hits[0].at == T0


def test_search_history_is_per_user_and_per_chat(chats: ChatStore) -> None:
    a = chats.create("u1", turns=[_turn("user", f"Parliamo di Osaka, punto {i}") for i in range(8)])
    b = chats.create("u2", turns=[_turn("user", f"Parliamo di Osaka anche noi, punto {i}") for i in range(8)])
    assert {h.chat_id for h in chats.search_history("u1", "Osaka", k=20)} == {a.id}
    assert {h.chat_id for h in chats.search_history("u2", "Osaka", k=20)} == {b.id}
    assert chats.search_history("u3", "Osaka") == []
    with pytest.raises(NotFoundError):
        chats.search_history("u1", "Osaka", chat_id=b.id)
    with pytest.raises(InvalidInputError):
        chats.search_history("u1", "Osaka", mode="fuzzy")
    # consecutive passages overlap: the top hits do not repeat one moment
    hits = chats.search_history("u1", "Parliamo di Osaka", k=3)
    for i, h in enumerate(hits):
        for g in hits[:i]:
            assert len(set(h.positions) & set(g.positions)) < 2
    chats.delete(a.id, user_id="u1")
    assert chats.search_history("u1", "Osaka") == []
    assert chats.db.query_one("SELECT COUNT(*) AS n FROM chat_passages_fts")["n"] == len(
        chats.db.query("SELECT id FROM chat_passages")
    )


def test_a_chat_compacted_before_the_archive_existed_is_archived_when_searched(chats: ChatStore) -> None:
    c = chats.create("u1", turns=[_turn("user", f"Racconto {i} sul viaggio a Osaka") for i in range(9)])
    with chats.db.transaction():  # as a file written before the archive existed would be
        chats.db.execute("DELETE FROM chat_passages_fts")
        chats.db.execute("DELETE FROM chat_passages")
        chats.db.execute("UPDATE chats SET archived_until = 0")
    hits = chats.search_history("u1", "viaggio a Osaka", k=2)
    assert hits and all(h.chat_id == c.id for h in hits)
    n = chats.db.query_one("SELECT COUNT(*) AS n FROM chat_passages")["n"]
    assert n == chats.get(c.id).compacted_until


def test_passages_written_by_another_embedder_are_re_embedded_before_a_search(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with MemoryStore(path, embedder=FakeEmbedder(dim=32)) as s:
        chats = ChatStore(s, summary_window_size=4, clock=_Clock())
        c = chats.create("u1", turns=[_turn("user", f"Racconto {i} sul viaggio a Osaka") for i in range(9)])
    other = FakeEmbedder(dim=16)
    other.name = "fake16"
    chats = ChatStore(path, embedder=other, summary_window_size=4, clock=_Clock())
    hits = chats.search_history("u1", "viaggio a Osaka", k=2)  # no shape error: 32-d vectors are replaced
    assert hits and all(h.chat_id == c.id for h in hits)
    assert {r["embedder"] for r in chats.db.query("SELECT embedder FROM chat_passages")} == {"fake16"}


def test_passages_at_finds_the_passage_that_ends_at_a_folded_turn(chats: ChatStore) -> None:
    from memlab.errors import InvalidInputError, NotFoundError

    chat = chats.create("u1")
    texts = [f"turno numero {i} sul viaggio" for i in range(12)]
    chats.append(chat.id, [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": t}]}
                           for i, t in enumerate(texts)], user_id="u1")
    folded = chats.get(chat.id, user_id="u1").compacted_until
    assert folded >= 3
    hits = chats.passages_at("u1", chat.id, [folded - 1, 0, folded + 1, folded - 1])
    assert [(h.start, h.end) for h in hits] == [(folded - 3, folded - 1), (0, 0)]  # in order, once; window skipped
    assert texts[folded - 1] in hits[0].text and texts[folded - 3] in hits[0].text
    assert chats.passages_at("u1", chat.id, []) == []
    with pytest.raises(NotFoundError):
        chats.passages_at("u2", chat.id, [0])  # another user's chat
    with pytest.raises(InvalidInputError):
        chats.passages_at("u1", chat.id, [-1])


def test_context_of_a_message_longer_than_a_memory_text(store: MemoryStore) -> None:
    """A chat message may be twice a memory's longest text (found by fuzzing /v1/chat): the context search reads its
    first max_text_chars characters instead of failing the turn."""
    store.add("u1", "I live in Rome and I work as a nurse.")
    long_message = "Where do I live? " + "x" * (2 * store.max_text_chars)
    items = store.context_items("u1", long_message, k=5)
    assert [m.text for m in items] == ["I live in Rome and I work as a nurse."]


def test_opening_while_another_process_adds_indexes_each_memory_once(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the race CI met once (two processes on one file): a memory committed, full-text row included, between the
    # opening store's two reads of what to back-fill was indexed a second time -> "constraint failed" on open
    from memlab.store.db import Database

    path = str(tmp_path / "m.db")
    MemoryStore(path, embedder=FakeEmbedder(dim=32)).close()
    other = MemoryStore(path, embedder=FakeEmbedder(dim=32))  # already open, as the other process was
    real, added = Database.query, []

    def query(self: Database, sql: str, *args: object, **kwargs: object) -> object:
        if not added and "FROM memories WHERE id >" in sql:
            added.append(None)
            added[0] = other.add("u2", "Il volo per Osaka parte alle sette")  # commits between the opener's reads
        return real(self, sql, *args, **kwargs)

    monkeypatch.setattr(Database, "query", query)
    try:
        with MemoryStore(path, embedder=FakeEmbedder(dim=32)) as s:
            monkeypatch.setattr(Database, "query", real)
            assert added and added[0] is not None
            assert s.db.query_one("SELECT COUNT(*) AS n FROM memories_fts")["n"] == 1
            assert s.search("u2", "Osaka", k=1)[0][0].id == added[0].id
    finally:
        other.close()
