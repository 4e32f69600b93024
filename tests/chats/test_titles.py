"""Chat titles and the chat-level summary: only what the user said names a chat, every stored embedding has its text,
and the seed's ``summary_text`` is empty until the first compaction (fake embedder, no model)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memlab.assistant import Assistant, SentenceIngestor
from memlab.chats import ChatStore
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

MARATHON = [
    "Mi sto allenando per la maratona di Roma di aprile.",
    "Corro 40 chilometri a settimana con il mio gruppo.",
    "Il mio obiettivo è chiudere la maratona sotto le quattro ore.",
]


class EchoLLM:
    """A model whose replies are long, fact-like sentences: exactly what must never become a title."""

    name = "echo"

    def chat(self, messages: list[dict[str, Any]]) -> str:
        return "Il JR pass conviene per quel giro in Giappone con tre città e due settimane di viaggio."

    def structured(self, messages: Any, schema: Any) -> Any:  # pragma: no cover - the sentence ingestor never asks
        raise NotImplementedError


def _assistant(llm: Any = None, **chat_kw: Any) -> Assistant:
    # words shared, vectors close: "la maratona" finds the marathon chat, "la dichiarazione dei redditi" finds none
    store = MemoryStore(":memory:", embedder=FakeEmbedder(dim=512, bag_of_words=True))
    # a threshold of 0.9999 re-derives an automatic title at every append: any sentence that can name the chat will
    chats = ChatStore(store, title_min_similarity=0.9999, min_similarity=0.15, **chat_kw)
    return Assistant(store, chats=chats, llm=llm, ingestor=SentenceIngestor(store))


def test_the_assistants_own_replies_never_rename_a_chat() -> None:
    """An unmatched chat-switch request, its answer ("Non ho trovato una chat su …"), the "no model" marker and a
    model's reply stay in the chat's history, but the title is always something the user said."""
    for llm in (None, EchoLLM()):
        a = _assistant(llm)
        said: list[str] = []
        for m in MARATHON:
            r = a.respond("u1", m)
            said.append(m)
            title = a.chats.get(r.chat_id, user_id="u1").title
            assert title and any(title.rstrip("…") in s for s in said), title
        switch = a.respond("u1", "Passiamo alla chat sulla dichiarazione dei redditi")
        assert switch.kind == "chat_switch" and switch.switch["decision"] == "none"
        assert switch.response.startswith("Non ho trovato una chat su")
        chat = a.chats.get(switch.chat_id, user_id="u1")
        texts = [p["text"] for t in chat.full_history for p in t["parts"]]
        assert switch.response in texts  # the exchange is in the history ...
        assert "Non ho trovato" not in chat.title and "dichiarazione" not in chat.title  # ... never in the title
        assert "Non ho trovato" not in (chat.theme or "") and "nessun modello" not in (chat.theme or "")
        assert any(chat.title.rstrip("…") in s for s in MARATHON), chat.title
        # a later switch back confirms with the user's title, not with the assistant's words
        back = a.respond("u1", "Torniamo alla chat sulla maratona di Roma")
        title = a.chats.get(switch.chat_id, user_id="u1").title
        assert back.switch["decision"] == "switch" and back.response == f"Ok, torniamo alla chat «{title}»."
        assert any(title.rstrip("…") in s for s in MARATHON), title


def test_the_title_anchor_stores_the_text_it_is_the_embedding_of() -> None:
    """``title_anchor`` (the theme the title was derived from, for the drift test) keeps its text beside it, and the
    embedding is exactly that text's; a chat read with another embedder re-embeds the anchor from its text."""
    store = MemoryStore(":memory:", embedder=FakeEmbedder(dim=32))
    cs = ChatStore(store)
    chat = cs.create("u1", turns=[{"role": "user", "parts": [{"text": m}]} for m in MARATHON])
    row = cs.db.query_one("SELECT title, title_anchor, title_anchor_text FROM chats WHERE id = ?", (chat.id,))
    assert row["title"] == chat.title and row["title_anchor_text"]
    vec = cs.embedder.embed([row["title_anchor_text"]], mode="passage")[0]
    assert np.array_equal(np.frombuffer(row["title_anchor"], dtype=np.float32), vec)
    other = FakeEmbedder(dim=24)
    other.name = "fake24"
    cs2 = ChatStore(store.db, embedder=other)
    cs2.append(chat.id, [{"role": "user", "parts": [{"text": "Domenica faccio un lungo di 30 chilometri."}]}])
    row2 = cs2.db.query_one("SELECT title_anchor, title_anchor_text FROM chats WHERE id = ?", (chat.id,))
    anchor = np.frombuffer(row2["title_anchor"], dtype=np.float32)
    assert anchor.shape == (24,) and np.array_equal(anchor, other.embed([row2["title_anchor_text"]], mode="passage")[0])


def test_summary_text_is_empty_until_the_first_compaction() -> None:
    """As in the seed's chats table: at creation ``full_history == assistant_history`` and the summary fields are
    empty; the first compaction fills ``summary_text`` (and its embedding). The theme that titles the chat and lets
    the chat switch find it exists from the first turn (``Chat.theme``)."""
    cs = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder(dim=512, bag_of_words=True)), summary_window_size=6,
                   min_similarity=0.15)
    turns = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": f"{MARATHON[i % 3]} Giorno {i}."}]}
             for i in range(4)]
    chat = cs.create("u1", turns=turns)
    assert chat.full_history == chat.assistant_history
    assert chat.summary_text is None and chat.summary_embedding is None and chat.n_compactions == 0
    assert chat.theme and chat.title  # titled and findable already
    assert cs.search("u1", "la chat sulla maratona").candidates
    chat = cs.append(chat.id, turns[:2])  # 6 turns: still within the window
    assert chat.summary_text is None
    chat = cs.append(chat.id, turns[2:3])  # 7 > 6: the first compaction
    assert chat.n_compactions == 1 and chat.summary_text == chat.theme and chat.summary_text
    assert np.array_equal(chat.summary_embedding, cs.embedder.embed([chat.summary_text], mode="passage")[0])
