"""Assistant turn flow: notifications first, HIGH before the reply, extraction, background checks, answers."""

from __future__ import annotations

import asyncio

import pytest

from memlab.agent import BackgroundAgent
from memlab.assistant import NO_MODEL_MARKER, Assistant, IngestResult, SentenceIngestor
from memlab.chats import ChatStore
from memlab.errors import InvalidInputError, LLMError, NotFoundError
from memlab.llm import ScriptedLLM
from memlab.notify import NotificationService, NotificationStatus
from memlab.records import Urgency
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedChecker

BORN = "Sono nato il 12 luglio 1990"
BDAY = "Il mio compleanno è il 15 agosto"


class StubIngestor:
    """Scripted extraction: message -> keyed facts, plus a scripted fatigue score."""

    def __init__(self, store, facts, fatigue=0.0):
        self.store, self.facts, self.fatigue = store, facts, fatigue
        self.block = "## INFORMAZIONI GIÀ RACCOLTE\n- (stub)"

    def ingest(self, user_id, conversation_id, message, *, turn=None, topic=None):
        ids = [self.store.add(user_id, text, key=key, value=value, source=f"conv:{conversation_id}").id
               for text, key, value in self.facts.get(message, [])]
        return IngestResult(memory_ids=ids, fatigue=self.fatigue, prompt_block=self.block, extractor="stub")

    def state(self, user_id, conversation_id):
        return IngestResult(fatigue=self.fatigue, prompt_block=self.block, extractor="stub")


FACTS = {
    BORN: [(BORN, "birthday", "07-12")],
    BDAY: [(BDAY, "birthday", "08-15")],
    "Abito a Roma": [("Abito a Roma", "home_city", "roma")],
    "Vivo a Milano": [("Vivo a Milano", "home_city", "milano")],
}


@pytest.fixture
def env(tmp_path):
    store = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32))
    svc = NotificationService(store)
    agent = BackgroundAgent(store, ScriptedChecker(store), svc, poll_interval_s=0.02)
    ing = StubIngestor(store, FACTS)
    yield store, svc, agent, ing
    store.close()


def turns(assistant, agent, messages, user="u1"):
    """Run turns one after the other, waiting for each turn's checks (like the CLI)."""

    async def go():
        out = []
        async with agent:
            for m in messages:
                r = await asyncio.to_thread(assistant.respond, user, m)
                await agent.wait_idle(r.job_ids, timeout=30)
                out.append(r)
        return out

    return asyncio.run(go())


def test_seed_flow_high_block_before_reply_and_resolution(env):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    r1, r2, r3 = turns(a, agent, [BORN, BDAY, "Che ore sono?"])
    assert r1.response == r2.response == NO_MODEL_MARKER["it"] == "(nessun modello configurato)"
    assert len(r1.job_ids) == len(r2.job_ids) == 1
    # the contradiction found after turn 2 is shown at turn 3, before the reply
    assert r2.high_urgency_notifications == []
    assert r3.response.startswith("[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto")
    assert "\n[⚠️ CONTRADDIZIONE RILEVATA]\nHo notato una contraddizione" in r3.response.split("\n\n")[0]
    assert r3.response.endswith("(nessun modello configurato)")
    for needle in ("12 luglio 1990", "15 agosto", "- A) La prima", "- B) La seconda",
                   "- C) Entrambe sono corrette (spiega il contesto)", "- D) Cancella entrambe"):
        assert needle in r3.response
    assert r3.notifications_count == 1 and len(r3.high_urgency_notifications) == 1
    nid = r3.high_urgency_notifications[0]["id"]
    # shown once: the next turn does not repeat the block, the badge still counts it
    (r4,) = turns(a, agent, ["Grazie"])
    assert "[⚠️" not in r4.response and r4.notifications_count == 1
    # the user's answer is final
    (r5,) = turns(a, agent, ["la prima"])
    assert r5.kind == "resolution" and r5.resolved["id"] == nid and r5.resolved["choice"] == "A"
    born, bday = store.list("u1", include_inactive=True)
    assert born.is_active and not bday.is_active
    assert r5.notifications_count == 0 and "12 luglio 1990" in r5.response
    assert r5.memory_ids == [] and r5.job_ids == []  # an answer is not a memory


def test_user_isolation(env):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    turns(a, agent, [BORN, BDAY])
    (r,) = turns(a, agent, ["ciao"], user="u2")
    assert r.notifications_count == 0 and r.high_urgency_notifications == []
    assert "[⚠️" not in r.response
    (r,) = turns(a, agent, ["A"], user="u2")  # u2 cannot answer u1's contradiction
    assert r.kind == "chat" and svc.count("u1") == 1


def test_choice_c_keeps_both_with_context(env):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    turns(a, agent, [BORN, BDAY, "ok"])
    (r,) = turns(a, agent, ["C: il 15 agosto è il compleanno di mia madre"])
    assert r.resolved["choice"] == "C"
    for m in store.list("u1", include_inactive=True):
        assert m.is_active and m.context == "il 15 agosto è il compleanno di mia madre"
    assert "compleanno di mia madre" in r.response


def test_fatigue_shows_one_high_and_downgrades_medium(env):
    store, svc, agent, ing = env
    ing.fatigue = 0.85
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    checker = ScriptedChecker(store)
    for msg in (BORN, BDAY, "Abito a Roma", "Vivo a Milano"):  # two contradictions pending, none shown yet
        for mid in ing.ingest("u1", "c", msg).memory_ids:
            for c in checker.check(store.get(mid, user_id="u1")).contradictions:
                svc.create_contradiction("u1", c)
    assert svc.count("u1") == 2
    svc.create("event", "medium", "Domani alle 9 hai il volo per Tokyo", "u1")
    (r,) = turns(a, agent, ["boh"])
    assert len(r.high_urgency_notifications) == 1 and r.response.count("Ho notato una contraddizione") == 1
    assert r.medium_offer is None and "Vuoi che te la mostri" not in r.response
    assert r.notifications_count == 3
    ing.fatigue = 0.1
    (r,) = turns(a, agent, ["ok"])
    assert len(r.high_urgency_notifications) == 1  # the second contradiction, now
    assert r.response.endswith("Ho una notifica importante per te. Vuoi che te la mostri ora? (sì/no)")


def test_medium_offer_yes_shows_no_declines(env):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    ev = svc.create("event", "medium", "Domani alle 9 hai il volo per Tokyo", "u1")
    (r1, r2) = turns(a, agent, ["Buongiorno", "sì"])
    assert r1.response.startswith("(nessun modello configurato)")
    assert r1.response.endswith("Vuoi che te la mostri ora? (sì/no)") and r1.medium_offer["id"] == ev.id
    assert r2.kind == "offer_shown" and "volo per Tokyo" in r2.response
    assert svc.count("u1") == 0  # an event stops being pending once shown
    ev2 = svc.create("event", "medium", "Riunione con Anna alle 15", "u1")
    (r3, r4, r5) = turns(a, agent, ["Ciao di nuovo", "no", "Come va?"])
    assert r3.medium_offer["id"] == ev2.id and r4.kind == "offer_declined"
    assert r5.medium_offer is None  # not offered again, still in the bell
    assert svc.get(ev2.id, user_id="u1").status is NotificationStatus.UNREAD and r5.notifications_count == 1


def test_several_medium_notifications_are_offered_together(env):
    """Two MEDIUM notifications waiting: one plural offer; "sì" shows both, "no" leaves both in the bell."""
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    ev1 = svc.create("event", "medium", "Domani alle 9 hai il volo per Tokyo", "u1")
    ev2 = svc.create("event", "medium", "Riunione con Anna alle 15", "u1")
    (r1, r2) = turns(a, agent, ["Buongiorno", "sì"])
    assert r1.response.endswith("Ho alcune notifiche importanti per te. Vuoi che te le mostri ora? (sì/no)")
    assert r1.medium_offer["id"] == ev1.id
    assert r2.kind == "offer_shown" and "volo per Tokyo" in r2.response and "Riunione con Anna" in r2.response
    assert all(svc.get(e.id, user_id="u1").shown_at is not None for e in (ev1, ev2))  # both marked as shown
    assert svc.count("u1") == 0
    ev3 = svc.create("event", "medium", "Pagare la bolletta", "u1")
    ev4 = svc.create("event", "medium", "Chiamare il dentista", "u1")
    (r3, r4, r5) = turns(a, agent, ["Ciao di nuovo", "no", "Come va?"])
    assert "te le mostri" in r3.response
    assert r4.kind == "offer_declined" and r4.response == "Va bene, le notifiche restano nella campanella."
    assert r5.medium_offer is None and r5.notifications_count == 2  # both stay in the bell, not offered again
    assert {svc.get(e.id, user_id="u1").status for e in (ev3, ev4)} == {NotificationStatus.UNREAD}


def test_plural_offer_in_english_and_chinese() -> None:
    from memlab.notify import declined_text, medium_offer

    assert medium_offer("en", 2).startswith("I have some important notifications")
    assert medium_offer("en", 1).startswith("I have an important notification")
    assert medium_offer("zh", 3) == "我有几条重要通知。现在要看吗？（是/否）"
    assert declined_text("zh", 2) == "好的，这些通知会留在提醒铃铛里。" and declined_text("it") == declined_text("it", 1)


def test_prompt_composition_and_llm_reply(env):
    store, svc, agent, ing = env
    llm = ScriptedLLM(["Piacere!", "Certo.", "Sono le dieci."])
    chats = ChatStore(store)
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing, llm=llm, chats=chats,
                  system_prompt="SYSTEM-PROMPT")
    r1, r2, r3 = turns(a, agent, ["Abito a Roma", BORN, "Che ore sono?"])
    assert r1.response == "Piacere!" and r3.response.endswith("Sono le dieci.")
    msgs = llm.calls[-1]
    system = msgs[0]["content"]
    assert msgs[0]["role"] == "system"
    # system prompt, then the conversation-memory block, then build_context
    assert system.index("SYSTEM-PROMPT") < system.index("## INFORMAZIONI GIÀ RACCOLTE") < system.index(
        "## MEMORIE DELL'UTENTE")
    assert "Abito a Roma" in system and BORN in system
    # then assistant_history, then the message
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[-1]["content"] == "Che ore sono?" and msgs[2]["content"] == "Piacere!"
    chat = chats.get(r3.chat_id, user_id="u1")
    assert len(chat.full_history) == 6


def test_llm_failure_keeps_the_turn(env):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing, llm=ScriptedLLM([LLMError("timeout")]))
    (r,) = turns(a, agent, ["Abito a Roma"])
    assert r.llm_error and "timeout" in r.llm_error
    assert r.response.startswith("(il modello non ha risposto") and len(r.memory_ids) == 1


@pytest.mark.parametrize("bad", ["", "   ", "ciao\x00", "x" * 100_001, None])
def test_bad_messages_store_nothing(env, bad):
    store, svc, agent, ing = env
    a = Assistant(store, notifications=svc, agent=agent, ingestor=SentenceIngestor(store))
    a.respond("u1", "Abito a Roma.")
    with pytest.raises(InvalidInputError):
        a.respond("u1", bad)
    assert [m.text for m in store.list("u1")] == ["Abito a Roma."]


def test_unknown_or_foreign_chat(env):
    store, svc, agent, ing = env
    chats = ChatStore(store)
    other = chats.create("u2")
    a = Assistant(store, notifications=svc, ingestor=ing, chats=chats)
    with pytest.raises(NotFoundError):
        a.respond("u1", "ciao", chat_id=other.id)


def test_sentence_ingestor_italian_and_chinese(tmp_path):
    store = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32))
    a = Assistant(store, ingestor=SentenceIngestor(store), lang="en")
    r = a.respond("u1", "Abito a Roma. Che ore sono? Lavoro presso Enel.\n我叫李四。")
    assert [m.text for m in store.list("u1")] == ["Abito a Roma.", "Lavoro presso Enel.", "我叫李四。"]
    assert r.response == "(no model configured)" and r.job_ids == []  # no agent: nothing scheduled
    r2 = a.respond("u1", "Abito a Roma.")  # already known: not stored twice
    assert r2.memory_ids == []
    store.close()


def test_urgency_order_in_pending(env):
    store, svc, agent, ing = env
    svc.create("todo", "low", "Pagare la bolletta", "u1")
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing)
    (r,) = turns(a, agent, ["Ciao"])
    assert r.response == "(nessun modello configurato)" and r.notifications_count == 1  # LOW: badge only
    assert svc.pending("u1")[0].urgency is Urgency.LOW


@pytest.mark.model
@pytest.mark.parametrize(
    ("first", "second", "needles"),
    [
        (BORN, BDAY, ("12 luglio 1990", "15 agosto")),
        ("I was born on 12 July 1990.", "My birthday is on 15 August.", ("12 July 1990", "15 August")),
        ("我叫张三", "叫我李四", ("张三", "李四")),
    ],
    ids=["it", "en", "zh"],
)
def test_real_extraction_detector_and_minilm(tmp_path, minilm, first, second, needles):
    """Integration: real packaged MiniLM, real rule extraction, real layered detector (judge scripted to 0,
    so the entity/pattern levels decide), real agent and SQLite."""
    from memlab.assistant import ConversationIngestor
    from memlab.integrity import SemanticIntegrityChecker
    from memlab.testing import ScriptedJudge

    store = MemoryStore(tmp_path / "m.db", embedder=minilm)
    svc = NotificationService(store)
    agent = BackgroundAgent(store, SemanticIntegrityChecker(store, ScriptedJudge(default=0.0)), svc,
                            poll_interval_s=0.02)
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ConversationIngestor(store))
    r1, r2, r3 = turns(a, agent, [first, second, "Che ore sono?"])
    assert r1.memory_ids and r2.memory_ids
    assert r3.response.startswith("[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto")
    assert "\n[⚠️ CONTRADDIZIONE RILEVATA]\nHo notato una contraddizione" in r3.response.split("\n\n")[0], r3.response
    block = r3.response.split("\n\n")[0]
    assert all(n in block for n in needles)
    assert r3.notifications_count >= 1
    (r4,) = turns(a, agent, ["B"])
    assert r4.kind == "resolution"
    kept = store.get(r2.memory_ids[0], user_id="u1")
    assert kept.is_active and not store.get(r1.memory_ids[0], user_id="u1").is_active
    (r5,) = turns(a, agent, ["ciao"], user="u2")
    assert r5.notifications_count == 0
    store.close()


def test_a_switch_request_is_not_stored_as_a_fact(tmp_path):
    from memlab.app import open_memlab
    from memlab.testing import ScriptedJudge

    with open_memlab(tmp_path / "s.db", embedder=FakeEmbedder(), judge=ScriptedJudge()) as lab:
        lab.turn("u1", "Sto organizzando un viaggio a Tokyo per maggio")
        before = lab.store.count("u1", include_inactive=True)
        r = lab.turn("u1", "Passiamo alla chat in cui parlavamo del viaggio a Tokyo")
        assert r.kind == "chat_switch" and r.switch["topic"] == "viaggio a Tokyo"
        assert r.switch["decision"] in {"switch", "ask", "none"} and r.memory_ids == []
        assert lab.store.count("u1", include_inactive=True) == before


@pytest.mark.model
def test_chat_switch_inside_a_turn_with_the_product_embedder(tmp_path):
    """The seed's own phrase switches to the Tokyo chat (it used to be stored as a fact and searched as 'ask')."""
    from memlab.app import open_memlab
    from memlab.testing import ScriptedJudge

    with open_memlab(tmp_path / "s.db", judge=ScriptedJudge(), checks=False) as lab:
        tokyo = lab.chats.create("u1", "Viaggio a Tokyo", [
            {"role": "user", "parts": [{"text": "Sto organizzando un viaggio a Tokyo per maggio: voli, hotel e JR pass."}]},
            {"role": "model", "parts": [{"text": "Per Tokyo a maggio conviene prenotare presto l'hotel a Shinjuku."}]}])
        lab.chats.create("u1", "Mutuo", [
            {"role": "user", "parts": [{"text": "Devo scegliere tra mutuo a tasso fisso e variabile per la casa."}]},
            {"role": "model", "parts": [{"text": "Con i tassi attuali il fisso costa di più ma protegge dai rialzi."}]}])
        r = lab.turn("u1", "Passiamo alla chat in cui parlavamo del viaggio a Tokyo")
        assert r.kind == "chat_switch" and r.switch["decision"] == "switch" and r.chat_id == tokyo.id
        assert r.response == "Ok, torniamo alla chat «Viaggio a Tokyo»."
        assert lab.chats.list("u1")[0].id == tokyo.id  # the switched-to chat is now the current one
        assert lab.chats.get(tokyo.id).full_history[-1]["parts"][0]["text"] == r.response
        none = lab.turn("u1", "Torniamo alla chat sulla ricetta della carbonara")
        assert none.kind == "chat_switch" and none.switch["topic"] == "ricetta della carbonara"
        assert not (none.switch["decision"] == "switch" and none.chat_id == tokyo.id)  # never the Tokyo chat


@pytest.mark.parametrize(
    ("first", "second", "lang_word"),
    [
        ("Chiamami Zhang San", "Anzi, chiamami Li Si", "aggiornato"),
        ("以后请叫我张三", "其实还是叫我李四吧", "更新"),
        ("Call me Zhang San", "Actually, call me Li Si", "updated"),
    ],
)
def test_an_explicit_correction_is_an_update_not_a_question(tmp_path, first, second, lang_word):
    """'Anzi, chiamami Li Si' used to raise a HIGH 'which is correct?' (in Italian for a Chinese user)."""
    from memlab.app import open_memlab
    from memlab.records import Urgency
    from memlab.testing import ScriptedJudge

    with open_memlab(tmp_path / "c.db", embedder=FakeEmbedder(), judge=ScriptedJudge(lambda a, b: 0.99)) as lab:
        lab.turn("u1", first)
        r = lab.turn("u1", second)
        names = lab.store.list("u1", key="preferred_name")
        assert len(names) == 1 and "Li Si" in names[0].text or "李四" in names[0].text  # the update is applied
        pending = lab.notifications.pending("u1")
        assert [n.urgency for n in pending] == [Urgency.LOW], [n.content for n in pending]
        assert lang_word in pending[0].content and r.high_urgency_notifications == []
        assert lab.store.is_correction(names[0].id)


def test_a_provisional_version_is_marked_until_the_user_answers(tmp_path):
    """Always ask (the user decides) and latest wins (the newer keyed fact is active) at once: the active version
    is provisional in the model's context until the user's answer, which is final."""
    from memlab.app import open_memlab
    from memlab.testing import ScriptedJudge

    judge = ScriptedJudge(lambda a, b: 0.97 if {"luglio", "agosto"} <= set((a + " " + b).split()) else 0.02)
    with open_memlab(tmp_path / "p.db", embedder=FakeEmbedder(), judge=judge) as lab:
        lab.turn("u1", "Il mio compleanno è il 12 luglio")
        lab.turn("u1", "Il mio compleanno è il 15 agosto")
        (n,) = lab.notifications.pending("u1")
        system = lab.assistant.compose_messages("u1", "quando è il mio compleanno?")[0]["content"]
        provisional = [ln for ln in system.splitlines() if "in attesa della conferma" in ln]
        assert len(provisional) == 1 and "15 agosto" in provisional[0]
        lab.notifications.resolve(n.id, "B", user_id="u1")
        system = lab.assistant.compose_messages("u1", "quando è il mio compleanno?")[0]["content"]
        assert "in attesa della conferma" not in system and "15 agosto" in system


def test_what_compaction_folded_away_comes_back_into_the_prompt_when_asked_about(env):
    """After compaction the model no longer sees the early turns; a message about them brings the archived passage
    into the system message (under its own heading), and the chat's other early turns stay out."""
    store, svc, agent, ing = env
    llm = ScriptedLLM(["ok"] * 20)
    chats = ChatStore(store, summary_window_size=4)
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing, llm=llm, chats=chats, history_k=1)
    msgs = ["Il codice del garage è zebra-quattro", "Oggi piove", "Ho letto un libro", "Sono stanco", "Ciao",
            "Che tempo fa?", "Come si chiama il codice del garage?"]
    turns(a, agent, msgs)
    system = llm.calls[-1][0]["content"]
    assert "## DA QUESTA CHAT, PRIMA DEL RIASSUNTO" in system
    earlier = system.split("## DA QUESTA CHAT, PRIMA DEL RIASSUNTO")[1]
    assert "zebra-quattro" in earlier and "libro" not in earlier
    assert msgs[0] not in [m["content"] for m in llm.calls[-1][1:]]  # the turn itself left the window


def test_a_retrieved_fact_brings_the_passage_it_was_said_in(env, monkeypatch):
    """Small-to-big: a memory in the context brings the archived passage of the message it came from (its ``said``
    event records the chat and position), so the model reads the words around a fact, not the fact alone."""
    store, svc, agent, ing = env
    ing.facts["Si chiama Fido e ha tre anni"] = [("Il cane si chiama Fido", "dog_name", "fido")]
    llm = ScriptedLLM(["ok"] * 20)
    chats = ChatStore(store, summary_window_size=4)
    a = Assistant(store, notifications=svc, agent=agent, ingestor=ing, llm=llm, chats=chats, history_k=1)
    msgs = ["Ho preso un cane al canile", "Si chiama Fido e ha tre anni", "Oggi piove", "Ho letto un libro",
            "Sono stanco", "Ciao"]
    turns(a, agent, msgs)
    (fact,) = [m for m in store.list("u1") if m.key == "dog_name"]
    said = [e for e in store.events(fact.id, user_id="u1") if e.event == "said"][-1].details
    chat = chats.get(said["chat_id"], user_id="u1")
    assert chat.full_history[said["pos"]]["parts"][0]["text"] == msgs[1]
    assert said["pos"] < chat.compacted_until  # folded out of the model's window
    (passage,) = chats.passages_at("u1", chat.id, [said["pos"]])
    assert (passage.start, passage.end) == (said["pos"] - 2, said["pos"]) and msgs[0] in passage.text

    monkeypatch.setattr(chats, "search_history", lambda *args, **kwargs: [])  # leave only the fact's own passage
    system = a.compose_messages("u1", "Come si chiama il cane?", chat_id=chat.id)[0]["content"]
    earlier = system.split("## DA QUESTA CHAT, PRIMA DEL RIASSUNTO")[1]
    assert "tre anni" in earlier and "canile" in earlier  # words the fact itself does not hold
    assert "Oggi piove" in earlier and "libro" not in earlier  # two turns after it (the reply, the next message)
    assert "Il cane si chiama Fido" in system.split("## DA QUESTA CHAT")[0]  # the fact, in the memory block


def test_the_current_topic_is_generale_first_then_the_title_with_this_message() -> None:
    """The topic passed to extraction: "Generale" for the first message of a chat (no topic yet), then the chat's
    title as it stands *with* the message (never the title of the turn before); a user's title from the start."""

    class Recording(SentenceIngestor):
        def __init__(self, store):
            super().__init__(store)
            self.topics: list[str | None] = []

        def ingest(self, user_id, conversation_id, message, *, turn=None, topic=None):
            self.topics.append(topic)
            return super().ingest(user_id, conversation_id, message, turn=turn, topic=topic)

    store = MemoryStore(":memory:", embedder=FakeEmbedder(dim=32))
    rec = Recording(store)
    # a title re-derived at every append: the title after a message names it
    chats = ChatStore(store, title_min_similarity=0.9999)
    a = Assistant(store, chats=chats, ingestor=rec)
    r = a.respond("u1", "Mi chiamo Li Si e vivo a Roma.")
    a.respond("u1", "Sto organizzando un viaggio a Tokyo per maggio.", chat_id=r.chat_id)
    title_now = chats.get(r.chat_id, user_id="u1").title
    assert rec.topics[0] == "Generale"
    assert rec.topics[1] == title_now and "Tokyo" in title_now  # the title with this message, not the one before
    chats.create("u1", "Trasloco a Roma")
    user_titled = chats.list("u1")[0]
    a.respond("u1", "Ho trovato casa in Prati.", chat_id=user_titled.id)
    assert rec.topics[2] == "Trasloco a Roma"
    en = Assistant(store, chats=chats, ingestor=rec, lang="en")
    en.respond("u2", "I live in Rome.")
    assert rec.topics[3] == "General"
