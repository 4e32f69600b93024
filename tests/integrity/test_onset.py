"""When something began: the onset layer of the structured values, the ``absolute`` candidates of a "never" /
"first time" statement, and the extraction rules that keep such statements (LoCoMo dev plants showed each gap)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.clock import message_time
from memlab.extraction.rules import RuleExtractor, durability
from memlab.integrity import SemanticIntegrityChecker
from memlab.integrity.patterns import absolute_stems
from memlab.integrity.values import compare_values, onset_of
from memlab.records import Urgency
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge

T_OLD = datetime(2023, 5, 1, tzinfo=UTC)
T_NEW = datetime(2023, 10, 1, tzinfo=UTC)


@pytest.mark.parametrize(("old", "new", "reason"), [
    ("I started playing acoustic guitar about five years ago (2018)",
     "I actually picked up a guitar for the very first time last month (September 2023)", "different_onset"),
    ("Ho iniziato a suonare la chitarra cinque anni fa",
     "Ho suonato la chitarra per la prima volta il mese scorso (settembre 2023)", "different_onset"),
    ("I've been into dancing since I was a kid",
     "I didn't take my first dance class until I was thirty", "different_onset_age"),
    ("I ran a charity race for mental health last Saturday (20 May 2023)",
     "My very first charity race is coming up next month (November 2023), I've never done one before",
     "first_after_earlier"),
    ("Got the tattoo a few years ago, it stands for freedom",
     "Got my very first tattoo yesterday (2 April 2023), a quote about freedom", "first_after_earlier"),
    ("Our camping trip last year (2022) when we saw the Perseid meteor shower",
     "We saw the Perseids once, back in 2019 - the only meteor shower we've ever caught", "only_once_elsewhere"),
    ("My team won first place at a regionals at age fifteen",
     "The only first place my team ever won was when I was twenty-two", "only_once_elsewhere"),
    # a beginning within the year, said without a date, against one years before
    ("It made me reflect on how far I've come since I started transitioning three years ago",
     "I only began transitioning this past spring", "different_onset"),
    ("Ho iniziato a correre dieci anni fa", "Ho iniziato a correre qualche mese fa", "different_onset"),
])
def test_two_beginnings_of_one_activity_contradict_and_name_both(old: str, new: str, reason: str) -> None:
    d = compare_values(old, new, old_time=T_OLD, new_time=T_NEW, lang="en")
    assert d is not None and d.contradiction and d.decided_by == "values:onset" and d.reason == reason
    assert d.old and d.new and d.info["activity"]


@pytest.mark.parametrize(("old", "new"), [
    ("I ran my first marathon in 2019", "I ran a marathon last month (September 2023)"),  # a first, then more
    ("I started running in 2015", "I started running again last month (September 2023)"),  # a restart
    ("I started playing guitar five years ago (2018)", "I started painting last month (September 2023)"),
    ("I started playing guitar in 2018", "I've been playing guitar since 2019"),  # a year apart: vague enough
    ("Non ho mai corso una maratona", "Ho comprato scarpe da corsa nuove"),
    ("We went to the beach in 2019", "The only time we ever went to the beach was in 2019"),  # the same once
    ("Ho iniziato a suonare la chitarra dieci anni fa", "Ho iniziato a correre qualche mese fa"),  # two activities
    ("I started running in 2021", "I started running again this spring"),
])
def test_onsets_that_can_both_hold_pass(old: str, new: str) -> None:
    d = compare_values(old, new, old_time=T_OLD, new_time=T_NEW, lang="en")
    assert d is None or d.decided_by != "values:onset"


def test_an_onset_reads_years_ago_from_the_memory_time_and_ages_from_words() -> None:
    o = onset_of("I started drawing seven years ago", datetime(2023, 3, 1, tzinfo=UTC))
    assert o is not None and o.kind == "start" and o.when == (2016, 0) and "drawing" in o.lemmas | {"drawing"}
    assert onset_of("I didn't try drawing until my mid-twenties").age == 25.0
    assert onset_of("I love my dog") is None


def test_a_first_time_after_an_earlier_event_is_high_through_the_checker() -> None:
    store = MemoryStore(":memory:", embedder=FakeEmbedder())
    with message_time(T_OLD):
        store.add("u1", "I started playing acoustic guitar about five years ago (2018)")
    with message_time(T_NEW):
        new = store.add("u1", "I picked up a guitar for the very first time last month (September 2023)")
    assert new.created_at.year == 2023 and new.created_at.month == 10
    res = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), exhaustive=True).check(new)
    c = res.contradictions[0]
    assert c.decided_by == "values:onset" and c.urgency is Urgency.HIGH
    assert "2018" in c.explanation and "2023" in c.explanation


def test_absolute_stems_weigh_names_and_only_for_never_or_first_time() -> None:
    stems = dict(absolute_stems("I've never been out of the country, so Paris would be a dream"))
    assert stems["paris"] == 2.0 and stems["count"] == 1.0
    assert absolute_stems("I have been to Paris twice") == ()
    assert [s for s, _ in absolute_stems("Non ho mai fatto una maratona")] == ["marat", "fatto"]


def test_a_never_statement_is_compared_with_memories_sharing_its_words_whatever_the_cosine() -> None:
    store = MemoryStore(":memory:", embedder=FakeEmbedder())
    hurt = store.add("u1", "Last month I got hurt and had to take a break from pottery")
    for i in range(30):
        store.add("u1", f"I like colour number {i} for my canvases")
    store.add("u2", "I got hurt at the gym")  # another user's memory is never a candidate
    never = store.add("u1", "Though I've been lucky - I've never been hurt myself")
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), similarity_threshold=0.999)
    found = {m.id: src for m, _, src in checker.candidates(never)}
    assert "absolute" in found[hurt.id]
    assert all(m.user_id == "u1" for m, _, _ in checker.candidates(never))
    off = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), similarity_threshold=0.999,
                                   max_absolute_candidates=0)
    # without the absolute path the memory is still found by its shared words, but only for the values level
    assert {m.id: src for m, _, src in off.candidates(never)}.get(hurt.id) == {"lexical"}
    none = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), similarity_threshold=0.999,
                                    max_absolute_candidates=0, max_lexical_candidates=0)
    assert hurt.id not in {m.id for m, _, _ in none.candidates(never)}



def test_extraction_keeps_absolutes_and_prefers_the_lasting_fact_of_a_message() -> None:
    facts = RuleExtractor().extract(
        "Thanks for the tip. Doing research makes sense. Last month I got hurt and had to take a break from "
        "pottery. I've never missed a class before.").facts
    texts = [f.content for f in facts]
    assert any("got hurt" in t for t in texts) and any("never missed" in t for t in texts)
    assert not any("makes sense" in t for t in texts)
    assert durability("I started playing guitar in 2018.") > durability("Taking risks is key for success.")
    # a subject dropped in chat English is still the user; "we" is the user's only with a time anchor
    texts = [f.content for f in RuleExtractor().extract("Thanks! Got the tattoo a few years ago, it stands for "
                                                        "freedom.").facts]
    assert any("tattoo" in t for t in texts)
    assert RuleExtractor().extract("We should totally hang out sometime.").facts == ()
    assert RuleExtractor().extract("We saw the Perseids once, back in 2019.").facts


@pytest.mark.parametrize(("old", "new", "cue"), [
    ("Blue is my favorite color, it makes me feel relaxed.", "Honestly blue is my least favorite color.", "antonym"),
    ("Honestly blue is my least favorite color.", "Blue is my favorite color, it makes me feel relaxed.", "antonym"),
    ("I love horses, we rode through the fields.", "Horses terrified me when I was a kid.", "antonym"),
    # a lifetime is an absolute: "my whole life" cannot hold beside an earlier love of horses
    ("I used to go horseback riding with my dad as a kid.", "Horses have terrified me my whole life.", "absolute"),
    ("Mi piace andare in barca.", "Soffro il mal di mare da tutta la vita.", "absolute"),
])
def test_opposite_feelings_are_a_cue_of_exclusivity(old: str, new: str, cue: str) -> None:
    from memlab.entities import extract_entities
    from memlab.integrity.patterns import exclusive_cue, summarise

    def f(t: str) -> object:
        return summarise(t, tuple(extract_entities(t)), None)

    assert exclusive_cue(f(old), f(new)) == cue
    assert exclusive_cue(f("Blue is my favorite color."), f("Blue is still my favorite color.")) is None
