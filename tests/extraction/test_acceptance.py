"""Issue 6 acceptance: a scripted Italian conversation (real packaged MiniLM, real SQLite file + FAISS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.extraction import ConversationMemoryService, format_for_prompt
from memlab.store import MemoryStore

pytestmark = pytest.mark.model  # every test here runs a real model

TURNS = [
    ("Ciao! Chiamami Zhang San, per favore.", "presentazioni"),
    ("Sono nato il 12 luglio 1990 a Napoli.", "dati personali"),
    ("Adesso abito a Milano e lavoro come ingegnere presso Fincons.", "lavoro"),
    ("Anzi, chiamami Li Si: è il nome che uso con gli amici.", "presentazioni"),
    ("Mi piace molto andare in montagna con mia sorella.", "hobby"),
    ("Abito a Milano, te l'ho già detto.", "dati personali"),
    ("boh", None),
    ("non so...", None),
    ("sì", None),
    ("basta, sono stanco", None),
]


def test_italian_conversation(tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    store = MemoryStore(tmp_path / "memory.db", embedder=minilm)
    svc = ConversationMemoryService(store, user_id="mario")
    results = [svc.update_after_user_message("conv-1", msg, topic) for msg, topic in TURNS]

    # expected facts, each stored once (the repeated city is recognised as known)
    active = {m.key: m.value for m in store.list("mario") if m.key}
    assert active == {"preferred_name": "Li Si", "birthday": "1990-07-12", "home_city": "Milano",
                      "job_title": "ingegnere", "employer": "Fincons"}
    assert results[5].memories == () and [f.key for f, _ in results[5].known] == ["home_city"]
    free = [m for m in store.list("mario") if not m.key]
    assert [m.text for m in free] == ["Mi piace molto andare in montagna con mia sorella."]
    assert all(r.memories == () for r in results[6:])  # tired answers: no garbage facts

    # preferred_name version chain v1 -> v2, retrievable from either member
    chain = store.history(store.list("mario", key="preferred_name")[0].id)
    assert [(m.value, m.version, m.is_active) for m in chain] == [("Zhang San", 1, False), ("Li Si", 2, True)]
    assert chain[1].supersedes == chain[0].id and chain[0].source == "conv:conv-1/msg:1"

    mem = svc.get("conv-1")
    assert mem.fatigue > 0.5 and mem.n_messages == len(TURNS)
    svc.mark_topic_explored("conv-1", "lavoro", "moderate", label="Lavoro", covered=["azienda", "ruolo"])
    block = format_for_prompt(svc.get("conv-1"))
    assert "## INFORMAZIONI GIÀ RACCOLTE" in block and "- <memory>L'utente si chiama Li Si</memory>" in block
    assert "Zhang San" not in block
    for text in ("L'utente è nato il 12 luglio 1990", "L'utente vive a Milano", "L'utente lavora presso Fincons"):
        assert f"- <memory>{text}</memory>" in block
    assert "## ⚠️ ATTENZIONE: SEGNALI DI FATICA" in block and "Fai domande più brevi e dirette" in block
    assert "## TOPIC GIÀ DISCUSSI" in block and "## STILE COMUNICATIVO RILEVATO" in block
    store.close()

    # everything survives a restart
    with MemoryStore(tmp_path / "memory.db", embedder=minilm) as reopened:
        again = ConversationMemoryService(reopened, user_id="mario").get("conv-1")
        assert again.fatigue == mem.fatigue and len(again.facts) == len(mem.facts)
