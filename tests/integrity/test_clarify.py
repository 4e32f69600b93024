"""Birthday vs wedding anniversary: a LOW clarification in the bell, never silence, never a HIGH alarm."""

from __future__ import annotations

import asyncio

import pytest

from memlab.agent import BackgroundAgent
from memlab.entities import extract_entities
from memlab.integrity import SemanticIntegrityChecker
from memlab.integrity.patterns import CLOSE_DATE_PAIRS, close_dates, summarise
from memlab.notify import NotificationType, format_notification, plan_turn
from memlab.records import Urgency
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge

CLOSE = [
    ("it", "Il mio compleanno è il 12 luglio", "Il nostro anniversario di matrimonio è il 15 agosto", "15 agosto"),
    ("en", "My birthday is 12 July.", "Our wedding anniversary is 15 August.", "15 August"),
    ("zh", "我的生日是7月12日。", "我们的结婚纪念日是8月15日。", "8月15日"),
]
UNRELATED = [
    ("it", "Il mio compleanno è il 12 luglio", "Ho un appuntamento dal dentista il 15 agosto"),
    ("en", "My birthday is 12 July.", "My dentist appointment is on 15 August."),
    ("zh", "我的生日是7月12日。", "我8月15日要看牙医。"),
]


def _facts(text: str):
    return summarise(text, tuple(extract_entities(text)), None)


@pytest.mark.parametrize(("lang", "old", "new", "_v"), CLOSE)
def test_close_dates_rule_fires_on_birthday_vs_anniversary(lang, old, new, _v):
    hit = close_dates(_facts(old), _facts(new))
    assert hit is not None
    assert {hit[0].attribute, hit[1].attribute} == {"birthday", "anniversary"}
    assert (hit[0].value, hit[1].value) == ("--07-12", "--08-15")


@pytest.mark.parametrize(("lang", "old", "new"), UNRELATED)
def test_close_dates_rule_silent_on_unrelated_dates(lang, old, new):
    assert close_dates(_facts(old), _facts(new)) is None


def test_close_dates_rule_silent_on_same_date_and_other_person():
    assert close_dates(_facts("Il mio compleanno è il 15 agosto"),
                       _facts("Il mio compleanno è il 15 agosto")) is None  # same kind: not "different dates"
    assert close_dates(_facts("Il compleanno di mia sorella è il 12 luglio"),
                       _facts("Il nostro anniversario di matrimonio è il 15 agosto")) is None
    assert frozenset({"birthday", "anniversary"}) in CLOSE_DATE_PAIRS
    assert all(len(p) == 2 and "deadline" not in p and "date" not in p for p in CLOSE_DATE_PAIRS)


def _run_agent(store: MemoryStore, user: str, texts: tuple[str, str]) -> BackgroundAgent:
    """The path a user meets: two memories saved, the background agent checks the second one."""
    ids = [store.add(user, t).id for t in texts]
    # a judge that would call ANY pair it sees a contradiction: these pairs must be decided without it
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.99))
    agent = BackgroundAgent(store, checker, poll_interval_s=0.05)

    async def go() -> None:
        async with agent:
            assert await agent.wait_idle([agent.process_new_knowledge(user, ids[1])], timeout=60)

    asyncio.run(go())
    return agent


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32))
    yield s
    s.close()


@pytest.mark.parametrize(("lang", "old", "new", "value"), CLOSE)
def test_birthday_vs_anniversary_gives_one_low_clarification(store, lang, old, new, value):
    agent = _run_agent(store, "u1", (old, new))
    svc = agent.notifications
    pending = svc.pending("u1")
    assert len(pending) == 1
    n = pending[0]
    assert n.type is NotificationType.CONTRADICTION and n.urgency is Urgency.LOW
    assert n.payload["details"]["kind"] == "clarification" and n.payload["details"]["rule"] == "close_dates"
    assert value in n.payload["explanation"]
    assert svc.pending("u1", Urgency.HIGH) == [] and svc.count("u2") == 0
    text = format_notification(n, lang)
    assert "⚠️" not in text and old in text and new in text
    # LOW never interrupts the reply: no HIGH block, no MEDIUM offer
    plan = plan_turn(svc.pending("u1"))
    assert not plan.high and plan.offer is None and plan.badge_only == (n,)
    # the user answers "both are right" and is not asked again
    svc.resolve(n.id, "C", "sono due date diverse", user_id="u1")
    assert svc.pending("u1") == []
    job = agent.jobs("done")[0]
    assert job.result["has_contradiction"] is False and len(job.result["notification_ids"]) == 1


@pytest.mark.parametrize(("lang", "old", "new"), UNRELATED)
def test_birthday_vs_dentist_stays_silent(store, lang, old, new):
    agent = _run_agent(store, "u1", (old, new))
    assert agent.notifications.list("u1", include_resolved=True) == []
