"""ChatStore: CRUD, validation, isolation, compaction invariants (unit tests with the fake embedder)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.chats import Chat, ChatStore, LLMSummarizer, validate_turns
from memlab.errors import InvalidInputError, LLMError, NotFoundError
from memlab.prompting import quote_data
from memlab.store import MemoryStore
from memlab.store.db import Database
from memlab.testing import FakeEmbedder

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def tick(self, **kw: float) -> None:
        self.now = self.now + timedelta(**kw)


def turn(text: str, role: str = "user", **extra: object) -> dict:
    return {"role": role, "parts": [{"text": text}], **extra}


def numbered(n: int, start: int = 0, prefix: str = "Il fatto numero") -> list[dict]:
    return [
        turn(f"{prefix} {i} riguarda Tokyo e il 3 maggio.", "user" if i % 2 == 0 else "model")
        for i in range(start, start + n)
    ]


@pytest.fixture
def chats() -> ChatStore:
    return ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)), clock=Clock())


def summary_turn_ok(chat: Chat) -> None:
    """The structural invariant: assistant_history == [summary] + visible tail of full_history."""
    tail = [{"role": t["role"], "parts": t["parts"]} for t in chat.full_history[chat.compacted_until :]]
    if chat.is_compacted:
        head = chat.assistant_history[0]
        assert head["role"] == "model" and len(head["parts"]) == 1 and head["parts"][0]["text"]
        assert list(chat.assistant_history[1:]) == tail
    else:
        assert list(chat.assistant_history) == tail


# ------------------------------------------------------------------ CRUD
def test_create_get_list_delete(chats: ChatStore) -> None:
    a = chats.create("u1", title="Viaggio", turns=[turn("Parto per Tokyo il 3 maggio.")])
    chats.clock.tick(minutes=1)
    b = chats.create("u1")
    c = chats.create("u2", turns=[turn("我下个月去东京。")])
    assert chats.get(a.id).title == "Viaggio" and chats.get(a.id).title_source == "user"
    assert b.full_history == () and b.summary_text is None
    assert [x.id for x in chats.list("u1")] == [b.id, a.id]
    chats.clock.tick(minutes=1)
    chats.append(a.id, [turn("Perfetto, buon viaggio!", "model")])
    assert [x.id for x in chats.list("u1")] == [a.id, b.id]  # by last activity
    assert chats.get(a.id).last_activity_at == chats.clock.now
    assert [x.id for x in chats.list("u2")] == [c.id]
    chats.delete(a.id, user_id="u1")
    with pytest.raises(NotFoundError):
        chats.get(a.id)
    assert [x.id for x in chats.list("u1")] == [b.id]
    assert chats.db.query_one("SELECT COUNT(*) AS n FROM chat_turns WHERE chat_id = ?", (a.id,))["n"] == 0


def test_user_isolation(chats: ChatStore) -> None:
    a = chats.create("u1", turns=[turn("Parto per Tokyo il 3 maggio.")])
    for call in (
        lambda: chats.get(a.id, user_id="u2"),
        lambda: chats.append(a.id, [turn("x y z")], user_id="u2"),
        lambda: chats.delete(a.id, user_id="u2"),
        lambda: chats.compact(a.id, user_id="u2"),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert chats.list("u2") == []
    assert chats.search("u2", "Parto per Tokyo il 3 maggio.").decision == "none"
    assert len(chats.get(a.id, user_id="u1").full_history) == 1


def test_unknown_chat(chats: ChatStore) -> None:
    for bad in ("nope", "", None, 3):
        with pytest.raises(NotFoundError):
            chats.get(bad)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        chats.append("nope", [turn("ciao a tutti voi")])


def test_empty_append_is_a_noop(chats: ChatStore) -> None:
    a = chats.create("u1", turns=[turn("Parto per Tokyo il 3 maggio.")])
    chats.clock.tick(hours=1)
    b = chats.append(a.id, [])
    assert b == a


def test_persistence_across_reopen(tmp_path) -> None:
    path = tmp_path / "m.sqlite"
    store = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    cs = ChatStore(store, summary_window_size=6, clock=Clock())
    a = cs.create("u1", turns=numbered(9))
    store.close()
    store2 = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    cs2 = ChatStore(store2, summary_window_size=6, clock=Clock())
    b = cs2.get(a.id)
    assert b == a and b.is_compacted and len(b.assistant_history) == 6
    store2.close()


def test_accepts_database_or_path(tmp_path) -> None:
    db = Database(tmp_path / "x.sqlite")
    cs = ChatStore(db, embedder=FakeEmbedder(dim=8))
    assert cs.create("u", turns=[turn("Ciao, mi chiamo Anna Rossi.")]).full_history
    cs2 = ChatStore(str(tmp_path / "y.sqlite"), embedder=FakeEmbedder(dim=8))
    assert cs2.list("u") == []
    with pytest.raises(InvalidInputError):
        ChatStore(tmp_path / "z.sqlite")  # no embedder
    with pytest.raises(InvalidInputError):
        ChatStore(object(), embedder=FakeEmbedder(dim=8))


@pytest.mark.parametrize(
    "kw",
    [
        {"summary_window_size": 1},
        {"summary_window_size": True},
        {"summary_max_chars": 0},
        {"switch_margin": -1},
        {"recency_half_life_days": 0},
        {"min_similarity": 1.5},
        {"title_min_similarity": "x"},
    ],
)
def test_bad_parameters(kw: dict) -> None:
    with pytest.raises(InvalidInputError, match="parameter of ChatStore"):
        ChatStore(":memory:", embedder=FakeEmbedder(dim=8), **kw)


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "bad",
    [
        [{"role": "assistant", "parts": [{"text": "hi"}]}],
        [{"role": "user", "parts": []}],
        [{"role": "user", "parts": [{"text": ""}]}],
        [{"role": "user", "parts": [{"text": "   "}]}],
        [{"role": "user", "parts": [{"text": "ciao\x00"}]}],
        [{"role": "user", "parts": [{"text": "ciao", "extra": 1}]}],
        [{"role": "user", "parts": [{"image": "x"}]}],
        [{"role": "user", "parts": "ciao"}],
        [{"role": "user", "parts": [{"text": 3}]}],
        [{"role": "user", "parts": [{"text": "ciao"}], "id": 3}],
        [{"role": "user", "parts": [{"text": "ciao"}], "thinking": 3}],
        [{"role": "user", "parts": [{"text": "ciao"}], "thinking": "a\x07b"}],
        [{"parts": [{"text": "ciao"}]}],
        ["ciao"],
        {"role": "user", "parts": [{"text": "ciao"}]},
        "ciao",
        [{"role": "user", "parts": [{"text": "x" * 100_001}]}],
        [{"role": "user", "parts": [{"text": "x" * 60_000}, {"text": "y" * 60_000}]}],
    ],
)
def test_bad_turns_raise_and_store_nothing(chats: ChatStore, bad: object) -> None:
    a = chats.create("u1", turns=[turn("Parto per Tokyo il 3 maggio.")])
    with pytest.raises(InvalidInputError):
        chats.append(
            a.id, [turn("Questo turno valido non deve entrare."), *bad] if isinstance(bad, list) else bad
        )
    with pytest.raises(InvalidInputError):
        chats.create("u1", turns=bad)  # type: ignore[arg-type]
    assert chats.get(a.id) == a
    assert len(chats.list("u1")) == 1


def test_validate_turns_normalises_and_keeps_thinking() -> None:
    out = validate_turns([turn("  Cafe\u0301  ", "model", thinking="ragiono..."), turn("ok", thinking="  ")])
    assert out[0] == {"role": "model", "parts": [{"text": "Café"}], "thinking": "ragiono..."}
    assert "thinking" not in out[1]


def test_bad_ids_and_text(chats: ChatStore) -> None:
    for bad in ("", "  ", None, "u\x01"):
        with pytest.raises(InvalidInputError):
            chats.create(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        chats.create("u1", title="")
    with pytest.raises(InvalidInputError):
        chats.search("u1", "")
    with pytest.raises(InvalidInputError):
        chats.search("u1", "Tokyo", k=0)


def test_thinking_is_kept_for_the_ui_but_never_sent_to_the_model(chats: ChatStore) -> None:
    a = chats.create("u1", turns=[turn("Quanto fa 2+2?"), turn("Fa 4.", "model", thinking="2+2=4, facile")])
    assert a.full_history[1]["thinking"] == "2+2=4, facile"
    assert all("thinking" not in t for t in a.assistant_history)
    assert "thinking" not in json.dumps(chats.history_for_model(a.id))


# ------------------------------------------------------------------ compaction
def test_compaction_at_the_window() -> None:
    cs = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)), clock=Clock())
    a = cs.create("u1", turns=numbered(30))
    assert not a.is_compacted and len(a.assistant_history) == 30
    b = cs.append(a.id, numbered(1, 30))
    assert b.is_compacted and len(b.assistant_history) == 30 and b.compacted_until == 2
    summary = cs.compaction_summary(a.id)
    assert summary is not None and summary.text == b.assistant_history[0]["parts"][0]["text"]
    assert set(summary.sources) <= {0, 1}
    summary_turn_ok(b)


def test_one_big_append_compacts_to_the_window(chats: ChatStore) -> None:
    a = chats.create("u1", turns=numbered(100))
    assert len(a.full_history) == 100 and len(a.assistant_history) == 30 and a.compacted_until == 71
    summary_turn_ok(a)


def test_hundred_random_appends_acceptance(rng) -> None:
    """Issue 8 acceptance: <= 30 after each append, full_history has all, exactly one summary turn at the head."""
    cs = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)), clock=Clock())
    chat = cs.create("u1")
    sent: list[dict] = []
    for step in range(100):
        n = int(rng.integers(1, 4))
        new = [
            turn(
                f"Passo {step}.{j}: il valore è {int(rng.integers(0, 1000))} euro a Milano.",
                "user" if (len(sent) + j) % 2 == 0 else "model",
            )
            for j in range(n)
        ]
        sent += new
        chat = cs.append(chat.id, new)
        assert len(chat.assistant_history) <= 30
        assert [t["parts"][0]["text"] for t in chat.full_history] == [t["parts"][0]["text"] for t in sent]
        summary_turn_ok(chat)
        if chat.is_compacted:
            assert len(chat.assistant_history) == 30
            tail_texts = {t["parts"][0]["text"] for t in chat.full_history[chat.compacted_until :]}
            assert chat.assistant_history[0]["parts"][0]["text"] not in tail_texts
    assert chat.n_compactions > 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(window=st.integers(2, 12), batches=st.lists(st.integers(0, 15), min_size=1, max_size=25))
def test_property_random_appends(window: int, batches: list[int]) -> None:
    cs = ChatStore(
        MemoryStore(":memory:", embedder=FakeEmbedder(dim=16)), summary_window_size=window, clock=Clock()
    )
    chat = cs.create("u1")
    total = 0
    for b in batches:
        chat = cs.append(chat.id, numbered(b, total))
        total += b
        assert len(chat.full_history) == total
        assert len(chat.assistant_history) <= window
        assert len(chat.assistant_history) == min(total, window)
        summary_turn_ok(chat)
        summary = cs.compaction_summary(chat.id)
        if summary is not None:
            assert set(summary.sources) <= set(range(chat.compacted_until))
        # idempotent: compacting again changes nothing
        assert cs.compact(chat.id) == chat


def test_summaries_are_folded_not_stacked() -> None:
    calls: list[list[dict]] = []

    class FakeLLM:
        name = "fake"

        def chat(self, messages):
            calls.append(list(messages))
            return f"RIASSUNTO {len(calls)}"

        def structured(self, messages, schema):  # pragma: no cover - not used
            raise NotImplementedError

    cs = ChatStore(
        MemoryStore(":memory:", embedder=FakeEmbedder(dim=16)),
        summarizer=LLMSummarizer(FakeLLM()),
        summary_window_size=4,
        clock=Clock(),
    )
    chat = cs.create("u1", turns=numbered(5))
    first = chat.assistant_history[0]["parts"][0]["text"]
    chat = cs.append(chat.id, numbered(1, 5))
    texts = [t["parts"][0]["text"] for t in chat.assistant_history]
    assert sum(t.startswith("RIASSUNTO") for t in texts) == 1 and texts[0].startswith("RIASSUNTO")
    compaction_prompts = [m[1]["content"] for m in calls if "compact" in m[0]["content"]]
    assert "EARLIER SUMMARY (consolidated truth):\n" + quote_data(first, kind="summary") in compaction_prompts[-1]
    assert (
        "consolidated truth" in calls[-1][0]["content"] or "never invent" in calls[-1][0]["content"].lower()
    )


def test_failing_summarizer_writes_nothing() -> None:
    class BrokenLLM:
        name = "broken"

        def chat(self, messages):
            raise LLMError("timeout")

        def structured(self, messages, schema):  # pragma: no cover
            raise NotImplementedError

    cs = ChatStore(
        MemoryStore(":memory:", embedder=FakeEmbedder(dim=16)),
        summarizer=LLMSummarizer(BrokenLLM()),
        summary_window_size=4,
        clock=Clock(),
    )
    chat = cs.create("u1")
    with pytest.raises(LLMError):
        cs.append(chat.id, numbered(2))
    assert cs.get(chat.id) == chat


def test_summaries_carry_no_turns_of_other_chats_or_users() -> None:
    cs = ChatStore(
        MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)), summary_window_size=6, clock=Clock()
    )
    mine = [
        turn(f"Alice ha comprato {i} mele a Torino il {i} marzo.", "user" if i % 2 == 0 else "model")
        for i in range(20)
    ]
    other_chat = [turn(f"Bob ha venduto {i} pere a Napoli il {i} aprile.") for i in range(20)]
    other_user = [turn(f"Carla ha perso {i} chiavi a Bari il {i} maggio.") for i in range(20)]
    a = b = c = None
    for i in range(0, 20, 4):  # interleaved writes
        a = cs.append(a.id, mine[i : i + 4]) if a else cs.create("u1", turns=mine[:4])
        b = cs.append(b.id, other_chat[i : i + 4]) if b else cs.create("u1", turns=other_chat[:4])
        c = cs.append(c.id, other_user[i : i + 4]) if c else cs.create("u2", turns=other_user[:4])
    own = {t["parts"][0]["text"] for t in a.full_history}
    summary = cs.compaction_summary(a.id)
    assert summary is not None and summary.sentences
    for s in summary.sentences:
        assert s.text in own
        assert all(0 <= p < a.compacted_until for p in s.sources)
        assert "Bob" not in s.text and "Carla" not in s.text
    assert "Bob" not in a.summary_text and "Carla" not in a.summary_text


def test_history_for_model_is_assistant_history_only(chats: ChatStore) -> None:
    a = chats.create("u1", turns=numbered(45))
    sent = chats.history_for_model(a.id)
    assert sent == [dict(t) for t in a.assistant_history] and len(sent) == 30
    full_texts = [t["parts"][0]["text"] for t in a.full_history[: a.compacted_until]]
    assert not any(t["parts"][0]["text"] in full_texts for t in sent[1:])
    sent[0]["parts"][0]["text"] = "mutated"  # a copy: the stored chat is untouched
    assert chats.get(a.id).assistant_history[0]["parts"][0]["text"] != "mutated"


def test_lowered_window_compacts_on_demand(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    cs = ChatStore(path, embedder=FakeEmbedder(dim=16), summary_window_size=30, clock=Clock())
    a = cs.create("u1", turns=numbered(20))
    cs2 = ChatStore(path, embedder=FakeEmbedder(dim=16), summary_window_size=8, clock=Clock())
    b = cs2.compact(a.id)
    assert len(b.assistant_history) == 8 and b.compacted_until == 13
    assert cs2.compact(a.id) == b


# ------------------------------------------------------------------ summary and title
def test_chat_summary_embedding_is_the_embedding_of_its_text(chats: ChatStore) -> None:
    a = chats.create(
        "u1", turns=[turn("Sto organizzando un viaggio a Tokyo per il 3 aprile con mia sorella.")]
    )
    assert a.title and a.title_source == "auto" and a.theme
    a = chats.append(a.id, numbered(35))  # compacted: the seed's summary fields are filled
    vec = chats.embedder.embed([a.summary_text], mode="passage")[0]
    assert a.summary_embedding is not None and (a.summary_embedding == vec).all()


def test_user_title_is_never_replaced(chats: ChatStore) -> None:
    a = chats.create("u1", title="Tokyo 2026")
    assert a.theme == "Tokyo 2026" and a.summary_text is None
    b = chats.append(a.id, numbered(40, prefix="Ricetta della carbonara, passo"))
    assert b.title == "Tokyo 2026" and b.title_source == "user"


def test_title_changes_only_past_the_drift_threshold() -> None:
    emb = FakeEmbedder(dim=32)
    never = ChatStore(":memory:", embedder=emb, title_min_similarity=-1.0, clock=Clock())
    always = ChatStore(":memory:", embedder=emb, title_min_similarity=0.9999, clock=Clock())
    for cs, expect_change in ((never, False), (always, True)):
        a = cs.create("u1", turns=[turn("Parliamo del viaggio a Tokyo del 3 aprile.")])
        b = cs.append(
            a.id, [turn("Adesso parliamo invece della ricetta della carbonara con 200 g di guanciale.")]
        )
        assert b.theme != a.theme
        anchor = cs.db.query_one("SELECT title_anchor FROM chats WHERE id = ?", (a.id,))["title_anchor"]
        now = cs.db.query_one("SELECT summary_embedding FROM chats WHERE id = ?", (a.id,))["summary_embedding"]
        # the title is re-derived (anchored on the new summary) only past the threshold
        assert (anchor == now) is expect_change
        if not expect_change:
            assert b.title == a.title
