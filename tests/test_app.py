"""`memlab.app.Memlab`: remember (store + queued check) and delete_chat (chat + its conversation memory)."""

from __future__ import annotations

import pytest

from memlab.app import open_memlab
from memlab.errors import NotFoundError
from memlab.testing import FakeEmbedder, ScriptedJudge


@pytest.fixture
def lab(tmp_path):
    lab = open_memlab(tmp_path / "app.db", embedder=FakeEmbedder(), judge=ScriptedJudge())
    yield lab
    lab.close()


def test_remember_queues_one_check_per_memory(lab) -> None:
    item, jobs = lab.remember("u1", "Abito a Roma", key="city", value="Roma")
    assert item.is_active and len(jobs) == 1
    assert lab.agent.job(jobs[0]).memory_id == item.id and lab.agent.job(jobs[0]).status == "pending"


def test_remember_without_checks_queues_nothing(tmp_path) -> None:
    lab = open_memlab(tmp_path / "nc.db", embedder=FakeEmbedder(), checks=False)
    try:
        item, jobs = lab.remember("u1", "Abito a Roma")
        assert jobs == [] and lab.store.get(item.id, user_id="u1").text == "Abito a Roma"
    finally:
        lab.close()


def test_delete_chat_takes_its_conversation_memory_and_nothing_else(lab) -> None:
    a = lab.chats.create("u1", "Tokyo", [{"role": "user", "parts": [{"text": "Vado a Tokyo"}]}])
    b = lab.chats.create("u1", "Roma", [{"role": "user", "parts": [{"text": "Vado a Roma"}]}])
    lab.assistant.respond("u1", "Mi chiamo Anna.", chat_id=a.id)
    lab.assistant.respond("u1", "Abito a Milano.", chat_id=b.id)
    n_mem = lab.store.count("u1")
    lab.delete_chat("u1", a.id)
    rows = {r["conversation_id"] for r in lab.store.db.query("SELECT conversation_id FROM conv_memory")}
    assert a.id not in rows and b.id in rows
    assert lab.store.db.query("SELECT 1 FROM conv_facts WHERE conversation_id = ?", (a.id,)) == []
    assert lab.store.count("u1") == n_mem  # memories extracted from the chat stay
    with pytest.raises(NotFoundError):
        lab.chats.get(a.id, user_id="u1")


def test_delete_chat_of_another_user_is_not_found_and_changes_nothing(lab) -> None:
    a = lab.chats.create("u1", "Tokyo", [{"role": "user", "parts": [{"text": "Vado a Tokyo"}]}])
    lab.assistant.respond("u1", "Mi chiamo Anna.", chat_id=a.id)
    with pytest.raises(NotFoundError):
        lab.delete_chat("u2", a.id)
    assert lab.chats.get(a.id, user_id="u1").title == "Tokyo"
    assert lab.store.db.query_one("SELECT 1 FROM conv_memory WHERE conversation_id = ?", (a.id,))
