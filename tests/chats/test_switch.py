"""Chat switch: request cleaning, the documented score, the switch/ask/none decision (fake embedder)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.chats import ChatStore, strip_switch_phrase
from memlab.chats.switch import decide_switch, recency_factor, switch_score
from memlab.errors import InvalidInputError
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

T0 = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        ("la chat in cui parlavamo del viaggio a Tokyo", "viaggio a Tokyo"),
        ("torniamo alla chat sulla maratona", "maratona"),
        ("quella conversazione dove abbiamo parlato dei preventivi", "preventivi"),
        ("la chat sull'orto", "orto"),
        ("Let's go back to the chat about my marathon training", "my marathon training"),
        ("the conversation where we discussed the kitchen?", "the kitchen"),
        ("回到我们讨论过的东京旅行的聊天", "东京旅行"),
        ("viaggio a Tokyo", "viaggio a Tokyo"),
        ("la chat", "la chat"),
    ],
)
def test_strip_switch_phrase(query: str, topic: str) -> None:
    assert strip_switch_phrase(query) == topic


def test_score_and_decision_rules() -> None:
    assert switch_score(0.3, 0.3, 0.0, 0.05) == 0.0
    assert switch_score(1.0, 0.3, 1.0, 0.05) == pytest.approx(1.05)
    assert recency_factor(T0, T0 + timedelta(days=14), 14.0) == pytest.approx(0.5)
    assert recency_factor(T0 + timedelta(days=1), T0, 14.0) == 1.0
    assert decide_switch([], 0.1) == "none"
    assert decide_switch([0.2], 0.1) == "switch"
    assert decide_switch([0.5, 0.39], 0.1) == "switch"
    assert decide_switch([0.5, 0.45], 0.1) == "ask"


def _store(now: list[datetime], **kw) -> ChatStore:
    emb = FakeEmbedder(
        dim=64, aliases=[["viaggio a Tokyo", "Sto organizzando il viaggio a Tokyo di aprile."]]
    )
    return ChatStore(MemoryStore(":memory:", embedder=emb), clock=lambda: now[0], min_similarity=0.3, **kw)


def _turn(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def test_switch_ask_none() -> None:
    now = [T0]
    cs = _store(now)
    tokyo = cs.create("u1", turns=[_turn("Sto organizzando il viaggio a Tokyo di aprile.")])
    cs.create("u1", turns=[_turn("Mi alleno per la maratona di Roma di marzo.")])
    cs.create("u2", turns=[_turn("Sto organizzando il viaggio a Tokyo di aprile.")])  # another user's twin
    r = cs.search("u1", "la chat in cui parlavamo del viaggio a Tokyo")
    assert r.decision == "switch" and r.chat_id == tokyo.id and r.query == "viaggio a Tokyo"
    assert [c.user_id for c, _ in r.candidates] == ["u1"]
    assert cs.search("u1", "la chat sulla ricetta della carbonara").decision == "none"
    # a second chat with the same summary: two equally close candidates -> ask
    now[0] = T0 + timedelta(days=30)
    twin = cs.create("u1", turns=[_turn("Sto organizzando il viaggio a Tokyo di aprile.")])
    r2 = cs.search("u1", "viaggio a Tokyo")
    assert r2.decision == "ask" and r2.chat_id is None
    assert {c.id for c, _ in r2.candidates} == {tokyo.id, twin.id}
    # recency breaks the tie in the ranking, but cannot make a clear winner alone
    assert r2.candidates[0][0].id == twin.id and r2.candidates[0][1] > r2.candidates[1][1]
    assert cs.search("u1", "viaggio a Tokyo", k=1).candidates[0][0].id == twin.id


def test_search_without_chats_and_re_embedding_after_embedder_change(tmp_path) -> None:
    now = [T0]
    path = tmp_path / "m.sqlite"
    cs = ChatStore(path, embedder=FakeEmbedder(dim=16), clock=lambda: now[0], min_similarity=0.3)
    assert cs.search("u1", "viaggio a Tokyo").decision == "none"
    chat = cs.create("u1", turns=[_turn("viaggio a Tokyo")])
    other = FakeEmbedder(dim=24)
    other.name = "fake24"
    cs2 = ChatStore(path, embedder=other, clock=lambda: now[0], min_similarity=0.3)
    r = cs2.search("u1", "viaggio a Tokyo")
    assert r.decision == "switch" and r.chat_id == chat.id
    stored = cs2.db.query_one("SELECT summary_embedding FROM chats WHERE id = ?", (chat.id,))["summary_embedding"]
    assert np.frombuffer(stored, dtype=np.float32).shape == (24,)  # the theme was embedded again


def test_lexical_evidence_counts_the_requests_distinctive_words() -> None:
    """score = dense + recency + lexical_weight * (share of the request's distinctive terms the chat contains): a
    term found in every chat adds nothing; the weight 0 is the dense switch."""
    cs = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder(dim=64)), clock=lambda: T0, min_similarity=-0.99)
    tokyo = cs.create("u1", "Viaggio a Tokyo", [_turn("Sto organizzando il viaggio a Tokyo di aprile.")]).id
    osaka = cs.create("u1", "Viaggio a Osaka", [_turn("Ad ottobre viaggio a Osaka e Kyoto in Giappone.")]).id
    run = cs.create("u1", "Maratona", [_turn("Mi alleno per la maratona: un viaggio di 42 km.")]).id

    def scores(query: str, weight: float) -> dict[str, float]:
        cs.lexical_weight = weight
        return {c.id: s for c, s in cs.search("u1", query, k=3).candidates}

    dense, mixed = scores("la chat del viaggio a Tokyo", 0.0), scores("la chat del viaggio a Tokyo", 0.2)
    # "viaggio" is in every chat: only "tokyo" is distinctive, and only the Tokyo chat has it
    assert mixed[tokyo] - dense[tokyo] == pytest.approx(0.2)
    assert mixed[osaka] == pytest.approx(dense[osaka]) and mixed[run] == pytest.approx(dense[run])
    dense, mixed = scores("Osaka in Giappone o Tokyo", 0.0), scores("Osaka in Giappone o Tokyo", 0.2)
    assert mixed[osaka] - dense[osaka] == pytest.approx(0.2 * 2 / 3)  # osaka, giappone of osaka/giappone/tokyo
    assert mixed[tokyo] - dense[tokyo] == pytest.approx(0.2 / 3) and mixed[run] == pytest.approx(dense[run])
    assert scores("viaggio", 0.2) == pytest.approx(scores("viaggio", 0.0))  # nothing distinctive
    with pytest.raises(InvalidInputError):
        ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder()), lexical_weight=-0.1)
