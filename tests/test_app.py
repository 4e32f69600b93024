"""`memlab.app.Memlab`: remember (store + queued check) and delete_chat (chat + its conversation memory), on SQLite and
on PostgreSQL."""

from __future__ import annotations

import pytest

from memlab.app import open_memlab
from memlab.errors import NotFoundError
from memlab.testing import FakeEmbedder, ScriptedJudge


@pytest.fixture(params=["sqlite", "postgresql"])
def lab(request, tmp_path):
    """The same app tests on an SQLite file and on PostgreSQL (the whole app: memories, chats, notifications, the
    agent's queue, the conversation memory)."""
    where = tmp_path / "app.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    lab = open_memlab(where, embedder=FakeEmbedder(), judge=ScriptedJudge())
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


def _birthday_judge() -> ScriptedJudge:
    return ScriptedJudge(lambda a, b: 0.95 if ("luglio" in a and "agosto" in b) or ("agosto" in a and "luglio" in b) else 0.05)


def test_async_with_owns_the_agent_across_turns(tmp_path) -> None:
    import asyncio

    async def main() -> tuple[bool, bool, int, bool]:
        async with open_memlab(tmp_path / "a.db", embedder=FakeEmbedder(), judge=_birthday_judge()) as lab:
            first, done1 = await lab.turn_async("u1", "Il mio compleanno è il 12 luglio")
            running_between = lab.agent.running  # not stopped after the turn: the block owns it
            second, done2 = await lab.turn_async("u1", "Il mio compleanno è il 15 agosto")
            agent = lab.agent
        return running_between, done1 and done2, second.notifications_count, agent.running

    running_between, done, count, running_after = asyncio.run(main())
    assert running_between and done and not running_after
    assert count >= 1  # the birthday contradiction was checked by the running agent
    with open_memlab(tmp_path / "a.db", embedder=FakeEmbedder(), judge=_birthday_judge()) as again:
        assert again.notifications.count("u1") == count and again.notifications.count("u2") == 0


def test_turn_works_inside_a_running_event_loop(tmp_path) -> None:
    """What a Jupyter cell does: call the synchronous API while an event loop is running in the thread."""
    import asyncio

    async def cell() -> int:
        with open_memlab(tmp_path / "j.db", embedder=FakeEmbedder(), judge=_birthday_judge()) as lab:
            lab.turn("u1", "Il mio compleanno è il 12 luglio")
            return lab.turn("u1", "Il mio compleanno è il 15 agosto").notifications_count

    assert asyncio.run(cell()) >= 1


def test_with_a_model_the_summaries_and_titles_are_written_by_it(tmp_path) -> None:
    """A configured LLM backend writes compaction summaries and chat themes (the title comes from the theme);
    checked against the fake Ollama server on loopback."""
    from memlab.llm import OllamaLLM
    from memlab.llm.fake_server import FakeLLMServer, ollama_answer

    def answer(body: dict) -> object:
        system = body["messages"][0]["content"]
        if system.startswith("You compact"):
            return ollama_answer("L'utente pianifica un viaggio a Tokyo a maggio e sceglie il JR pass.")
        if system.startswith("Describe in one to three"):
            return ollama_answer("Viaggio a Tokyo: voli, hotel e JR pass.")
        return ollama_answer("Va bene.")

    with FakeLLMServer() as srv:
        srv.respond("/api/chat", answer)
        llm = OllamaLLM(model="fake", base_url=srv.url, backoff_s=0.0)
        with open_memlab(tmp_path / "l.db", embedder=FakeEmbedder(), judge=ScriptedJudge(), llm=llm) as lab:
            assert type(lab.chats.summarizer).__name__ == "LLMSummarizer"
            chat = lab.chats.create("u1")
            turns = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": f"Tokyo, giorno {i}: JR pass?"}]}
                     for i in range(35)]
            chat = lab.chats.append(chat.id, turns, user_id="u1")
            head = chat.assistant_history[0]["parts"][0]["text"]
            assert "L'utente pianifica un viaggio a Tokyo" in head  # the model's compaction summary
            assert chat.summary_text == "Viaggio a Tokyo: voli, hotel e JR pass."
            assert chat.title and "Tokyo" in chat.title
        systems = [b["messages"][0]["content"][:20] for b in srv.posted("/api/chat")]
        assert any(s.startswith("You compact") for s in systems) and any(s.startswith("Describe") for s in systems)


def test_birthday_then_anniversary_leaves_one_low_question_in_the_bell(lab) -> None:
    import asyncio

    from memlab.records import Urgency

    async def go() -> None:
        async with lab.agent:
            for user, text in [("u1", "Il mio compleanno è il 12 luglio"),
                               ("u1", "Il nostro anniversario di matrimonio è il 15 agosto"),
                               ("u1", "Ho un appuntamento dal dentista il 20 settembre"),
                               ("u2", "我的生日是7月12日。"), ("u2", "我们的结婚纪念日是8月15日。")]:
                _, jobs = lab.remember(user, text)
                assert await lab.agent.wait_idle(jobs, timeout=60)

    asyncio.run(go())
    for user, value in (("u1", "15 agosto"), ("u2", "8月15日")):
        (n,) = lab.notifications.pending(user)  # the dentist appointment adds nothing
        assert n.urgency is Urgency.LOW and value in n.payload["explanation"]
        assert lab.notifications.pending(user, Urgency.HIGH) == []


def test_notification_language_per_user_unless_configured(tmp_path):
    """No language configured: each user reads the block in the language of their own messages (two users, one
    database); a configured language holds for everyone."""
    zh = ["我的生日是7月12日。", "我的生日是8月15日。", "好"]
    it = ["Sono nato il 12 luglio 1990", "Il mio compleanno è il 15 agosto", "ok"]
    with open_memlab(tmp_path / "auto.db", embedder=FakeEmbedder(), judge=ScriptedJudge(lambda a, b: 0.99)) as lab:
        assert lab.assistant.detect_user_lang and lab.assistant.lang == "it"
        shown = {}
        for user, msgs in (("zh_user", zh), ("it_user", it)):
            for m in msgs:
                shown[user] = lab.turn(user, m).response
        assert shown["zh_user"].startswith("[⚠️ 重要]") and "（未配置模型）" in shown["zh_user"]
        assert shown["it_user"].startswith("[⚠️ IMPORTANTE]") and "luglio" in shown["it_user"]
    with open_memlab(tmp_path / "it.db", embedder=FakeEmbedder(), judge=ScriptedJudge(lambda a, b: 0.99),
                     lang="it") as lab:
        assert not lab.assistant.detect_user_lang
        for m in zh:
            r = lab.turn("zh_user", m)
        assert r.response.startswith("[⚠️ IMPORTANTE]") and "- A) La prima (12 luglio)" in r.response
