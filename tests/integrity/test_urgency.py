"""Urgency by evidence: HIGH only for a conflict of structure (naming its two values); the judge alone never
interrupts, and without a cue of exclusivity it does not notify at all."""

from __future__ import annotations

import pytest

from memlab.integrity import SemanticIntegrityChecker
from memlab.records import Urgency
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore(":memory:", embedder=FakeEmbedder())


@pytest.mark.parametrize(("born", "birthday", "values"), [
    ("L'utente è nato il 12 luglio 1990", "Il compleanno dell'utente è il 15 agosto", ("12", "15")),
    ("I was born on 12 July 1990", "My birthday is on 15 August", ("12", "15")),
    ("我1990年7月12日出生", "我的生日是8月15日", ("7", "8")),
])
def test_the_seed_pair_is_high_and_names_both_values(store: MemoryStore, born: str, birthday: str,
                                                     values: tuple[str, str]) -> None:
    store.add("u1", born)
    new = store.add("u1", birthday)
    res = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), exhaustive=True).check(new)
    c = res.contradictions[0]
    assert c.urgency is Urgency.HIGH and c.decided_by != "judge"
    shown = " ".join(str(v) for v in c.details["values"]) + " " + " ".join(str(s) for s in c.details.get("spans", []))
    assert all(v in shown for v in values), shown


def test_judge_alone_is_medium_or_low_never_high(store: MemoryStore) -> None:
    old = store.add("u1", "I have a dog named Max.")
    new = store.add("u1", "I have never had a pet in my life.")
    for p, urgency in ((0.97, Urgency.MEDIUM), (0.8, Urgency.LOW)):
        res = SemanticIntegrityChecker(store, ScriptedJudge({(old.text, new.text): p}), exhaustive=True).check(new)
        (c,) = res.contradictions
        assert c.decided_by == "judge" and c.urgency is urgency and c.details["cue"] == "negation"


def test_judge_alone_without_a_cue_does_not_notify(store: MemoryStore) -> None:
    """Of one person, both are true; an NLI-trained judge says contradiction (SNLI assumes one scene)."""
    old = store.add("u1", "My mom really loved flowers.")
    new = store.add("u1", "My mom had a big passion for cooking.")
    judge = ScriptedJudge({(old.text, new.text): 0.9})
    assert not SemanticIntegrityChecker(store, judge, exhaustive=True).check(new).has_contradiction
    sure = ScriptedJudge({(old.text, new.text): 0.97})  # at judge_no_cue_threshold or more, no cue is needed
    assert SemanticIntegrityChecker(store, sure, exhaustive=True).check(new).contradictions[0].urgency is Urgency.MEDIUM
    gated_off = SemanticIntegrityChecker(store, judge, exhaustive=True, judge_needs_cue=False).check(new)
    assert gated_off.contradictions[0].urgency is Urgency.MEDIUM


def test_settings_reach_the_checker(store: MemoryStore) -> None:
    from memlab.config import Settings

    s = Settings(integrity_judge_medium_threshold=0.99, integrity_judge_needs_cue=False)
    cfg = SemanticIntegrityChecker(store, ScriptedJudge(), s).config
    assert cfg.judge_medium_threshold == 0.99 and cfg.judge_needs_cue is False
