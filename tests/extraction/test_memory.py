"""ConversationMemoryService: persistence, semantic dedupe, version rule, folding, isolation, bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlab.errors import InvalidInputError, NotFoundError
from memlab.extraction import FATIGUE_DECAY, ConversationMemoryService, Coverage, RuleExtractor, Tone
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "mem.db", embedder=FakeEmbedder(dim=32))
    yield s
    s.close()


def _svc(store: MemoryStore, user: str = "mario", **kw: object) -> ConversationMemoryService:
    return ConversationMemoryService(store, user_id=user, **kw)  # type: ignore[arg-type]


def test_facts_go_to_store_with_provenance(store: MemoryStore) -> None:
    r = _svc(store).update_after_user_message("c1", "Chiamami Zhang San. Abito a Roma.", topic="presentazioni")
    assert [(m.key, m.value) for m in r.memories] == [("preferred_name", "Zhang San"), ("home_city", "Roma")]
    assert all(m.user_id == "mario" and m.source == "conv:c1/msg:1" and m.topic == "presentazioni" for m in r.memories)
    assert [f.memory_id for f in r.new_facts] == [m.id for m in r.memories]
    assert r.memory.facts[0].content == "L'utente si chiama Zhang San"


def test_preferred_name_version_chain(store: MemoryStore) -> None:
    svc = _svc(store)
    v1 = svc.update_after_user_message("c1", "Chiamami Zhang San").memories[0]
    v2 = svc.update_after_user_message("c1", "anzi chiamami Li Si").memories[0]
    chain = store.history(v1.id)
    assert [(m.value, m.version, m.is_active) for m in chain] == [("Zhang San", 1, False), ("Li Si", 2, True)]
    assert v2.supersedes == v1.id
    mem = svc.get("c1")
    assert [(f.value, f.is_active) for f in mem.facts] == [("Zhang San", False), ("Li Si", True)]


def test_keyed_fact_repeated_is_known_not_stored_again(store: MemoryStore) -> None:
    svc = _svc(store)
    first = svc.update_after_user_message("c1", "Abito a Roma").memories[0]
    r = svc.update_after_user_message("c1", "Te l'ho detto, vivo a roma")
    assert r.memories == () and [(f.key, mid) for f, mid in r.known] == [("home_city", first.id)]
    assert store.count("mario") == 1 and len(svc.get("c1").facts) == 1


def test_free_fact_semantic_dedupe(store: MemoryStore) -> None:
    emb = FakeEmbedder(dim=32, aliases=[["Mi piace molto andare in montagna con mio fratello.",
                                         "Adoro andare in montagna con mio fratello."]])
    s2 = MemoryStore(":memory:", embedder=emb)
    svc = _svc(s2)
    svc.update_after_user_message("c1", "Mi piace molto andare in montagna con mio fratello.")
    r = svc.update_after_user_message("c1", "Adoro andare in montagna con mio fratello.")
    assert r.memories == () and len(r.known) == 1  # a paraphrase (same vector) is not stored twice
    r3 = svc.update_after_user_message("c1", "Mi piace giocare a scacchi con mia nonna la domenica.")
    assert len(r3.memories) == 1


def test_numbers_block_semantic_dedupe(store: MemoryStore) -> None:
    emb = FakeEmbedder(dim=32, aliases=[["Ho 2 gatti e un cane", "Ho 3 gatti e un cane"]])
    svc = _svc(MemoryStore(":memory:", embedder=emb))
    svc.update_after_user_message("c1", "Ho 2 gatti e un cane")
    assert len(svc.update_after_user_message("c1", "Ho 3 gatti e un cane").memories) == 1


def test_known_fact_from_another_conversation_is_listed_once(store: MemoryStore) -> None:
    svc = _svc(store)
    mid = svc.update_after_user_message("c1", "Abito a Roma").memories[0].id
    r = svc.update_after_user_message("c2", "Abito a Roma")
    assert r.memories == () and [f.memory_id for f in r.memory.facts] == [mid]
    svc.update_after_user_message("c2", "Abito a Roma")
    assert len(svc.get("c2").facts) == 1


def test_fatigue_fold_average_length_emoji_and_tone(store: MemoryStore) -> None:
    svc = _svc(store)
    ex = RuleExtractor()
    msgs = ["Ciao! Abito a Roma e lavoro come insegnante da dieci anni 😀", "boh", "non so...", "Vivo con mia moglie"]
    fatigue, lengths, tone = 0.0, [], None
    for m in msgs:
        res = ex.extract(m)
        fatigue = FATIGUE_DECAY * fatigue + (1 - FATIGUE_DECAY) * res.fatigue_signal
        lengths.append(res.n_chars)
        tone = res.tone or tone
        mem = svc.update_after_user_message("c1", m).memory
        assert mem.fatigue == pytest.approx(fatigue)
        assert mem.avg_response_length == pytest.approx(sum(lengths) / len(lengths))
        assert mem.tone == tone
    assert mem.emoji_used and mem.n_messages == 4
    assert mem.tone is Tone.BRIEF  # the last message shows no tone: the last detected one is kept


def test_persisted_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder=FakeEmbedder()) as s:
        svc = _svc(s)
        svc.update_after_user_message("c1", "Chiamami Li Si")
        svc.mark_topic_explored("c1", "lavoro", "moderate", label="Lavoro", covered=["ruolo"], missing=["orari"])
        svc.record_unanswered("c1", "età", priority="high", skip_reason="user_declined")
        before = svc.get("c1")
    with MemoryStore(path, embedder=FakeEmbedder()) as s:
        after = _svc(s).get("c1")
    assert after == before


def test_topics_accumulate_and_unanswered_attempts(store: MemoryStore) -> None:
    svc = _svc(store)
    svc.mark_topic_explored("c1", "lavoro", "shallow", covered=["azienda"], missing=["ruolo", "orari"])
    t = svc.mark_topic_explored("c1", "lavoro", Coverage.MODERATE, covered=["ruolo"])
    assert t.coverage is Coverage.MODERATE and t.covered == ("azienda", "ruolo") and t.missing == ("orari",)
    svc.record_unanswered("c1", "età")
    a = svc.record_unanswered("c1", "età", skip_reason="time_limit")
    assert a.attempts == 2 and a.skip_reason == "time_limit" and a.priority == "medium"
    svc.resolve_unanswered("c1", "età")
    assert svc.get("c1").unanswered == ()


@pytest.mark.parametrize("cov", ["huge", "", None])
def test_bad_coverage(store: MemoryStore, cov: object) -> None:
    with pytest.raises(InvalidInputError, match="coverage"):
        _svc(store).mark_topic_explored("c1", "t", cov)  # type: ignore[arg-type]


def test_isolation_between_users(store: MemoryStore) -> None:
    mario, anna = _svc(store, "mario"), _svc(store, "anna")
    mario.update_after_user_message("c1", "Abito a Roma")
    with pytest.raises(NotFoundError):
        anna.get("c1")
    with pytest.raises(InvalidInputError, match="another user"):
        anna.update_after_user_message("c1", "Abito a Milano")
    with pytest.raises(InvalidInputError, match="another user"):
        anna.mark_topic_explored("c1", "casa")
    # anna's own identical fact is stored for her: dedupe never looks at mario's memories
    r = anna.update_after_user_message("c2", "Abito a Roma")
    assert len(r.memories) == 1 and r.memories[0].user_id == "anna"
    assert anna.conversations() == ["c2"] and mario.conversations() == ["c1"]
    assert store.count("mario") == 1 and store.count("anna") == 1


@pytest.mark.parametrize("bad", ["", "   ", "\x00\x07", None, 42])
def test_bad_message_changes_nothing(store: MemoryStore, bad: object) -> None:
    svc = _svc(store)
    svc.update_after_user_message("c1", "Abito a Roma")
    before, n = svc.get("c1"), store.count("mario", include_inactive=True)
    with pytest.raises(InvalidInputError):
        svc.update_after_user_message("c1", bad)  # type: ignore[arg-type]
    assert svc.get("c1") == before and store.count("mario", include_inactive=True) == n


def test_emoji_only_and_huge_messages_are_safe(store: MemoryStore) -> None:
    svc = _svc(store)
    r = svc.update_after_user_message("c1", "😴😴")
    assert r.memories == () and r.memory.emoji_used and r.memory.fatigue > 0
    big = "Abito a Roma. " + "parola " * 200_000
    r = svc.update_after_user_message("c1", big)
    assert r.extraction.truncated and [m.key for m in r.memories] == ["home_city"]
    assert r.memory.avg_response_length <= svc.extractor.max_chars  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad_id", ["", None, "x" * 300])
def test_bad_conversation_id(store: MemoryStore, bad_id: object) -> None:
    with pytest.raises(InvalidInputError):
        _svc(store).update_after_user_message(bad_id, "Abito a Roma")  # type: ignore[arg-type]


def test_unknown_conversation(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        _svc(store).get("nope")


def test_bad_service_params(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="dedupe_threshold"):
        _svc(store, dedupe_threshold=2.0)
    with pytest.raises(InvalidInputError):
        ConversationMemoryService(store, user_id="")


def test_relative_dates_use_the_clock(store: MemoryStore) -> None:
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    svc = _svc(store, clock=lambda: now)
    r = svc.update_after_user_message("c1", "Il mio compleanno è domani")
    assert r.memories[0].value == (now + timedelta(days=1)).date().isoformat()
    assert r.memory.facts[0].extracted_at == now


def test_birthday_without_year_repeats_full_date(store: MemoryStore) -> None:
    svc = _svc(store)
    svc.update_after_user_message("c1", "Sono nato il 12 luglio 1990")
    r = svc.update_after_user_message("c1", "Il mio compleanno è il 12 luglio")
    assert r.memories == () and len(r.known) == 1  # same day-month: known, the full date stays active
    r = svc.update_after_user_message("c1", "Il mio compleanno è il 15 agosto")
    assert [m.value for m in r.memories] == ["--08-15"]  # a different day: a new version (the detector asks)


def test_priorities_and_skip_reasons_are_the_specified_values(store: MemoryStore) -> None:
    from memlab.errors import InvalidInputError

    svc = _svc(store)
    svc.record_unanswered("c1", "budget", priority="low", skip_reason="off_topic")
    svc.record_unanswered("c1", "età", priority="high")
    assert [(a.area, a.priority.value) for a in svc.get("c1").unanswered] == [("età", "high"), ("budget", "low")]
    for bad in ({"priority": 2}, {"priority": "urgent"}, {"skip_reason": "user declined"}):
        with pytest.raises(InvalidInputError):
            svc.record_unanswered("c1", "lavoro", **bad)
    assert "lavoro" not in [a.area for a in svc.get("c1").unanswered]  # nothing written on a refused call
    # a file written by an earlier version (ranks 1..5, free-text reasons) still reads
    store.db.execute("UPDATE conv_unanswered SET priority = 4, skip_reason = 'stanco' WHERE area = 'budget'")
    (old,) = [a for a in svc.get("c1").unanswered if a.area == "budget"]
    assert old.priority.value == "low" and old.skip_reason is None


def test_a_relative_date_is_stored_with_its_absolute_date(store: MemoryStore) -> None:
    said = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
    r = _svc(store).update_after_user_message("c1", "Ieri ho adottato un cane di nome Rex.", ref_time=said)
    texts = [m.text for m in r.memories]
    assert texts and all("(7 maggio 2023)" in t for t in texts if "ieri" in t.lower()), texts
    assert any("7 maggio 2023" in t for t in texts), texts


def test_semantic_dedupe_never_merges_facts_about_different_people_or_days() -> None:
    """Near-identical sentences (the same vector here) that name another person or another date are distinct facts."""
    same = ["Ieri ho visto Marco al parco.", "Ieri ho visto Luca al parco.", "Ho visto Marco al parco il 3 maggio.",
            "Ho visto Marco al parco il 4 maggio."]
    s2 = MemoryStore(":memory:", embedder=FakeEmbedder(dim=32, aliases=[same]))
    svc = _svc(s2)
    said = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
    stored = [len(svc.update_after_user_message("c1", t, ref_time=said).memories) for t in same]
    assert stored == [1, 1, 1, 1]
    again = svc.update_after_user_message("c1", "Ieri ho visto Luca al parco.", ref_time=said)
    assert again.memories == () and len(again.known) == 1  # the same person on the same day is known
