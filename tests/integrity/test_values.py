"""Structured-value layers (memlab.integrity.values): numbers in words, counts vs enumerations, places inside places,
absolutes vs habits, allergies; project statuses in patterns; the checker's ``values`` level.

Hand-written unit cases (it/en/zh), never taken from a dataset.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlab.entities import extract_entities
from memlab.integrity import LEVELS, SemanticIntegrityChecker
from memlab.integrity import values as V
from memlab.integrity.patterns import compare_facts, consistent_reason, project_statuses, summarise
from memlab.records import ConflictType
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge


def _d(old: str, new: str, **kw: Any) -> V.ValueDecision | None:
    return V.compare_values(old, new, **kw)


def _contra(old: str, new: str, layer: str, **kw: Any) -> V.ValueDecision:
    d = _d(old, new, **kw)
    assert d is not None and d.contradiction, (old, new, d)
    assert d.decided_by == f"values:{layer}", d
    assert d.old and d.new
    return d


def _consistent(old: str, new: str, layer: str) -> None:
    d = _d(old, new)
    assert d is not None and not d.contradiction, (old, new, d)
    assert d.decided_by == f"values:{layer}", d


# ---------------------------------------------------------------------------------------------------- numbers
@pytest.mark.parametrize(("text", "want"), [
    ("Ho trentaquattro anni", "Ho 34 anni"),
    ("I'm thirty-four years old", "I'm 34 years old"),
    ("我三十四岁", "我34岁"),
    ("ho quarantun anni", "ho 41 anni"),
    ("Ho 34 anni", "Ho 34 anni"),
])
def test_normalise_numbers(text: str, want: str) -> None:
    assert V.normalise_numbers(text) == want


@pytest.mark.parametrize("text", ["", "   ", "\x00\x01", "九" * 40 + "岁", "9" * 60 + " anni", "mille miliardi di miliardi",
                                  "万一", "一会儿", "x" * 50_000, "Ho -3 anni", "Ho 3,5,6 anni"])
def test_normalise_numbers_never_raises(text: str) -> None:
    assert isinstance(V.normalise_numbers(text), str)


def test_normalise_numbers_non_str() -> None:
    assert V.normalise_numbers(None) == ""  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new"), [
    ("Ho 34 anni", "Ho trentaquattro anni"),
    ("I'm 34 years old", "I'm thirty-four years old"),
    ("我34岁", "我三十四岁"),
    ("Ho trentaquattro anni", "我今年三十四岁"),
])
def test_number_in_words_same_value_is_consistent(old: str, new: str) -> None:
    _consistent(old, new, "number")


def test_number_in_words_different_value() -> None:
    d = _contra("Ho 34 anni", "Ho quarantun anni", "number")
    assert (d.old, d.new, d.type) == ("34 anni", "41 anni", ConflictType.NUMBER)
    d = _contra("我三十四岁", "我41岁", "number", lang="zh")
    assert (d.old, d.new) == ("34岁", "41岁")
    _contra("I am thirty-four years old", "I'm 41 years old", "number", lang="en")


def test_number_age_allows_for_the_years_between() -> None:
    t0, t1 = datetime(2020, 1, 1, tzinfo=UTC), datetime(2023, 1, 1, tzinfo=UTC)
    d = _d("Ho trentaquattro anni", "Ho 37 anni", old_time=t0, new_time=t1)
    assert d is None or not d.contradiction
    _contra("Ho trentaquattro anni", "Ho 45 anni", "number", old_time=t0, new_time=t1)


def test_number_leaves_digits_and_other_people_alone() -> None:
    assert _d("Ho 34 anni", "Ho 41 anni") is None  # digits vs digits: the entities level decides
    assert _d("Mio figlio ha sei anni", "Ho trentaquattro anni") is None
    assert _d("Ho due figli", "Ho tre gatti") is None


# ---------------------------------------------------------------------------------------------------- counts
@pytest.mark.parametrize(("old", "new"), [
    ("Parlo tre lingue", "Parlo italiano, inglese e spagnolo"),
    ("I speak three languages", "I speak Italian, English and Spanish"),
    ("我会说三种语言", "我会说意大利语、英语和西班牙语"),
    ("Ho due figli", "I miei figli sono Anna e Luca"),
    ("I have two kids", "My kids are Anna and Luca"),
])
def test_count_matching_enumeration_is_consistent(old: str, new: str) -> None:
    _consistent(old, new, "count")


def test_count_against_a_longer_enumeration() -> None:
    d = _contra("Parlo due lingue", "Parlo italiano, inglese e spagnolo", "count")
    assert (d.old, d.new) == ("2 lingue", "italiano, inglese, spagnolo")
    d = _contra("I have two kids", "I have two kids: Anna and Luca, and Marco", "count")
    assert (d.old, d.new) == ("2 kids", "Anna, Luca, Marco")
    _contra("我会说两种语言", "我会说意大利语、英语和西班牙语", "count")
    _contra("Ho tre figli", "I miei figli sono Anna e Luca", "count")  # a definitional list of children
    _contra("Non ho figli", "My kids are Anna and Luca", "count")
    _contra("Parlo due lingue", "Parlo quattro lingue", "count")


def test_count_stays_quiet_when_the_list_is_partial() -> None:
    assert _d("Parlo tre lingue", "Parlo italiano e inglese") is None  # "I speak Italian and English" is not "only"
    assert _d("Parlo due lingue", "Parlo italiano, inglese e un po' di francese") is None
    assert _d("Parlo due lingue", "Parlo almeno tre lingue") is None
    assert _d("Ho un figlio", "I miei figli sono Anna e Luca") is None  # a son: a daughter is not ruled out
    assert _d("Ho due figli", "I miei figli sono bravi") is None
    assert _d("I have 2 kids", "My kids are 5 and 7") is None


# ---------------------------------------------------------------------------------------------------- places
def test_resolve_place_it_en_zh() -> None:
    for name, cc in [("Roma", "IT"), ("Rome", "IT"), ("Milano", "IT"), ("Parigi", "FR"), ("Londra", "GB"),
                     ("北京", "CN"), ("巴黎", "FR"), ("羅馬", "IT")]:
        p = V.resolve_place(name)
        assert p is not None and p.kind == "city" and p.countries == {cc}, name
    for name, cc in [("Italia", "IT"), ("Italy", "IT"), ("意大利", "IT"), ("Francia", "FR"), ("法国", "FR"),
                     ("中国", "CN"), ("the US", "US"), ("USA", "US"), ("UK", "GB"), ("Stati Uniti", "US")]:
        p = V.resolve_place(name)
        assert p is not None and p.kind == "country" and cc in p.countries, name
    for junk in ("", " ", "Trastevere di sotto", "x" * 500, None, 42):
        assert V.resolve_place(junk) is None  # type: ignore[arg-type]


def test_place_relation() -> None:
    r = V.resolve_place
    assert V.place_relation(r("Rome"), r("Italy")) == "contained"  # type: ignore[arg-type]
    assert V.place_relation(r("Roma"), r("Rome")) == "same"  # type: ignore[arg-type]
    assert V.place_relation(r("Milano"), r("Francia")) == "disjoint"  # type: ignore[arg-type]
    assert V.place_relation(r("Rome"), r("Milan")) == "different"  # type: ignore[arg-type]
    # "Georgia" is a country and a US state: Atlanta may be in it
    assert V.place_relation(r("Atlanta"), r("Georgia")) == "contained"  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new"), [
    ("I live in Rome", "I live in Italy"),
    ("Vivo in Italia", "Abito a Milano"),
    ("我住在北京", "我住在中国"),
    ("Abito a Roma", "I live in Rome"),
])
def test_place_inside_place_is_consistent(old: str, new: str) -> None:
    _consistent(old, new, "place")


def test_place_outside_the_country() -> None:
    d = _contra("Abito a Milano", "Vivo in Francia", "place")
    assert (d.old, d.new, d.type, d.update) == ("Milano", "Francia", ConflictType.PLACE, True)
    assert d.info["countries"] == [["IT"], ["FR"]]
    _contra("I was born in Paris", "I was born in Italy", "place")
    _contra("我住在巴黎", "我住在中国", "place")


def test_place_leaves_cities_unknown_names_and_other_people_alone() -> None:
    assert _d("I live in Rome", "I live in Milan") is None  # two cities: the entities level
    assert _d("I live in Rome", "I live in Trastevere") is None
    assert _d("My sister lives in France", "I live in Milan") is None
    assert _d("Sono nato a Napoli", "Vivo in Francia") is None  # different attributes


def test_place_consistent_only_for_short_agreeing_pairs() -> None:
    # the place agrees, the age does not: not consistent here (the number is digits: the entities level decides)
    assert _d("Abito a Roma e ho 30 anni", "Vivo in Italia e ho 45 anni") is None
    long = "I live in Rome with my husband, our two children and a very old cat who sleeps all day long"
    assert _d(long, "I live in Italy") is None


# ---------------------------------------------------------------------------------------------------- absolutes
@pytest.mark.parametrize(("old", "new"), [
    ("Non bevo mai alcolici", "Bevo un bicchiere di vino a ogni cena"),
    ("I never eat meat", "I had a steak yesterday"),
    ("我从不喝酒", "我每天晚上喝一杯红酒"),
    ("Sono astemio", "Ieri sera ho bevuto una birra"),
    ("Non ho mai fumato", "Fumo dieci sigarette al giorno"),
    ("I never drink coffee", "I drink two coffees a day"),
])
def test_absolute_vs_habit(old: str, new: str) -> None:
    d = _contra(old, new, "absolute")
    assert (d.old, d.new) == (old, new)
    _contra(new, old, "absolute")  # either order


@pytest.mark.parametrize(("old", "new"), [
    ("Non bevo mai alcolici la sera", "Bevo vino a cena"),  # the absolute is restricted
    ("Non bevo mai alcolici, tranne a Natale", "Bevo vino a cena"),
    ("Non bevo quasi mai alcolici", "Bevo vino a cena"),
    ("I never drink", "I drink coffee every morning"),  # "never drink" is alcohol
    ("I never eat meat", "I had fish for dinner"),
    ("I never drink alcohol", "I had an alcohol-free beer"),
    ("Non mangio mai carne", "Ho mangiato un burger vegano"),
    ("Mio marito non beve mai alcolici", "Bevo vino a cena"),  # another person
    ("Non bevo mai alcolici", "Mio marito beve vino a cena"),
    ("I never drink alcohol", "I used to drink wine"),  # a past habit
    ("I never drink alcohol", "I would love a glass of wine"),  # hypothetical
    ("Non ho mai fumato", "Ho smesso di fumare"),
    ("I never drink alcohol", "I bought a bottle of wine for my dad"),  # no consumption
    ("Hai mai bevuto vino?", "Bevo vino"),
    ("我晚上从不喝酒", "我每天喝红酒"),
    ("我从不喝酒", "我以前每天喝红酒"),
])
def test_absolute_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "absolute", d


@pytest.mark.parametrize(("old", "new"), [
    ("I never drink beer", "I drink wine"),
    ("I never eat pork", "I have chicken for dinner most nights"),
    ("Non mangio mai maiale", "Mangio pollo ogni settimana"),
])
def test_absolute_against_another_item_of_its_category_is_consistent(old: str, new: str) -> None:
    _consistent(old, new, "absolute")
    _consistent(new, old, "absolute")


@pytest.mark.parametrize(("old", "new"), [
    ("Non vado mai in palestra", "Vado in palestra tre volte a settimana"),
    ("I never drive to work", "I drive to work every day"),
    ("Non faccio mai colazione", "Faccio colazione ogni mattina al bar"),
    ("我从来不吃辣", "我每天都吃辣的"),
])
def test_absolute_against_a_habit_of_any_activity(old: str, new: str) -> None:
    d = _contra(old, new, "absolute")
    assert d.info["category"] == "activity" and d.old == old


@pytest.mark.parametrize(("old", "new"), [
    ("I never drive to work", "I drive to my parents' place every Sunday"),  # work is not in the habit
    ("Non bevo mai caffè", "Bevo tè ogni mattina"),
    ("I never cook", "My husband cooks every night"),  # another person
    ("Non vado mai in palestra", "Non vado in palestra da mesi"),  # no habit
    ("I never run in the evening", "I always run in the morning"),
    ("I never thought I would see this", "I think about my mom every day"),  # a verb of the mind is no habit
])
def test_absolute_against_another_activity_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


# ---------------------------------------------------------------------------------------------------- health
def test_allergy_vs_eating_without_problems() -> None:
    d = _contra("Sono allergico alle arachidi", "Posso mangiare arachidi senza problemi", "health")
    assert (d.old, d.new) == ("Sono allergico alle arachidi", "Posso mangiare arachidi senza problemi")
    _contra("I'm allergic to peanuts", "I can eat peanuts without any problems", "health")
    _contra("我对花生过敏", "我吃花生没问题", "health")
    _contra("I'm allergic to cats", "I'm not allergic to cats", "health")


@pytest.mark.parametrize(("old", "new"), [
    ("I am allergic to peanuts", "I avoid peanuts because of an allergy"),
    ("Sono allergico alle arachidi", "Ho un'allergia alle noccioline"),
    ("我对花生过敏", "我花生过敏"),
    ("Sono allergico al polline", "I'm allergic to cats"),
])
def test_allergy_paraphrases_are_consistent(old: str, new: str) -> None:
    _consistent(old, new, "health")


def test_allergy_stays_quiet() -> None:
    assert _d("Sono allergico al polline", "Mangio fragole senza problemi") is None  # different things
    assert _d("Mia moglie è allergica alle arachidi", "Mangio arachidi senza problemi") is None
    assert _d("Sono intollerante al lattosio", "Bevo latte di soia") is None


# ---------------------------------------------------------------------------------------------------- status
def _facts(t: str) -> Any:
    return summarise(t, tuple(extract_entities(t)), None)


@pytest.mark.parametrize(("text", "status"), [
    ("Il progetto Atlas non è ancora iniziato", "not_started"),
    ("Non ho ancora iniziato il progetto Atlas", "not_started"),
    ("Project Atlas hasn't started yet", "not_started"),
    ("We haven't started project Atlas", "not_started"),
    ("Atlas项目还没开始", "not_started"),
    ("Il progetto Atlas è stato completato ieri", "completed"),
    ("Atlas项目已经完成了", "completed"),
    ("The project Atlas is in progress", "started"),
    ("项目Atlas正在进行", "started"),
])
def test_project_statuses(text: str, status: str) -> None:
    assert [s[:2] for s in project_statuses(text)] == [("atlas", status)]


def test_status_not_started_vs_completed() -> None:
    for old, new in [("Il progetto Atlas non è ancora iniziato", "Il progetto Atlas è stato completato ieri"),
                     ("Project Atlas hasn't started yet", "We finished project Atlas"),
                     ("Atlas项目还没开始", "Atlas项目已经完成了")]:
        hit = compare_facts(_facts(old), _facts(new))
        assert hit is not None and hit.rule == "project_status", (old, new)


def test_status_started_vs_in_progress_is_consistent() -> None:
    a, b = _facts("The project Atlas started"), _facts("The project Atlas is in progress")
    assert compare_facts(a, b) is None and consistent_reason(a, b) == "same_status"
    assert consistent_reason(_facts("Il progetto Atlas è iniziato"), _facts("Il progetto Atlas è in corso")) == "same_status"


# ---------------------------------------------------------------------------------------------------- robustness
@pytest.mark.parametrize(("old", "new"), [
    ("", ""), ("", "Ho 34 anni"), ("Ho 34 anni", ""), ("\x00", "\x01"), ("?", "!"),
    ("Ho " + "9" * 40 + " anni", "Ho trentaquattro anni"), ("ho centomila miliardi di anni", "ho tre anni"),
    ("九" * 30 + "岁", "34岁"), ("Vivo in " + "A" * 300, "Vivo in Italia"), ("x" * 100_000, "Ho trentaquattro anni"),
])
def test_bad_input_never_raises(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or isinstance(d, V.ValueDecision)


def test_non_str_input() -> None:
    assert _d(None, "Ho 34 anni") is None  # type: ignore[arg-type]
    assert V.analyse(123).text == ""  # type: ignore[arg-type]


def test_explanations_name_both_values() -> None:
    d = _contra("Ho 34 anni", "Ho quarantun anni", "number")
    for lang in ("it", "en", "zh"):
        text = V.explain_values(d, lang)
        assert "34 anni" in text and "41 anni" in text


# ---------------------------------------------------------------------------------------------------- the checker
@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32, bag_of_words=True))
    yield s
    s.close()


def _check(store: MemoryStore, old: str, new: str, user: str = "u1", **kw: Any) -> tuple[Any, ScriptedJudge]:
    store.add(user, old)
    item = store.add(user, new)
    judge = ScriptedJudge(default=0.99)
    return SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, **kw).check(item), judge


def test_values_is_the_first_level() -> None:
    assert LEVELS == ("values", "entities", "patterns", "judge")


@pytest.mark.parametrize(("old", "new"), [
    ("Ho 34 anni", "Ho trentaquattro anni"),
    ("I'm 34 years old", "I'm thirty-four years old"),  # the entities level alone reads "four years old"
    ("I live in Rome", "I live in Italy"),  # the entities level alone calls these two different values
    ("Parlo tre lingue", "Parlo italiano, inglese e spagnolo"),
    ("I am allergic to peanuts", "I avoid peanuts because of an allergy"),
])
def test_checker_consistent_pairs_never_reach_the_judge(store: MemoryStore, old: str, new: str) -> None:
    res, judge = _check(store, old, new)
    assert not res.has_contradiction and judge.calls == [] and res.n_judged == 0
    assert "values" in res.stage_ms


@pytest.mark.parametrize(("old", "new", "level", "values"), [
    ("Non bevo mai alcolici", "Bevo un bicchiere di vino a ogni cena", "values:absolute",
     ["Non bevo mai alcolici", "Bevo un bicchiere di vino a ogni cena"]),
    ("Sono allergico alle arachidi", "Posso mangiare arachidi senza problemi", "values:health",
     ["Sono allergico alle arachidi", "Posso mangiare arachidi senza problemi"]),
    ("Abito a Milano", "Vivo in Francia", "values:place", ["Milano", "Francia"]),
    ("Parlo due lingue", "Parlo italiano, inglese e spagnolo", "values:count", ["2 lingue", "italiano, inglese, spagnolo"]),
    ("Ho trentaquattro anni", "Ho quarantun anni", "values:number", ["34 anni", "41 anni"]),
])
def test_checker_structured_contradictions(store: MemoryStore, old: str, new: str, level: str,
                                           values: list[str]) -> None:
    res, judge = _check(store, old, new)
    assert res.has_contradiction and judge.calls == []
    c = res.contradictions[0]
    assert c.decided_by == level and c.details["values"] == values and c.details["rule"] == level
    assert values[0] in c.explanation and values[1] in c.explanation
    assert c.details["explain"]["old"] == values[0]


def test_checker_status_pair_is_a_pattern(store: MemoryStore) -> None:
    res, judge = _check(store, "Il progetto Atlas non è ancora iniziato", "Il progetto Atlas è stato completato ieri")
    c = res.contradictions[0]
    assert (c.decided_by, c.details["rule"], c.type) == ("patterns", "project_status", ConflictType.STATUS)
    res, judge = _check(store, "The project Atlas started", "The project Atlas is in progress", user="u2")
    assert not res.has_contradiction and judge.calls == []


def test_checker_without_the_values_level(store: MemoryStore) -> None:
    res, judge = _check(store, "Non bevo mai alcolici", "Bevo un bicchiere di vino a ogni cena",
                        levels=("entities", "patterns", "judge"))
    assert res.contradictions[0].decided_by == "judge" and "values" not in res.stage_ms


def test_checker_english_explanation(store: MemoryStore) -> None:
    res, _ = _check(store, "Abito a Milano", "Vivo in Francia", lang="en")
    assert res.contradictions[0].explanation.startswith("The places disagree")


# ---------------------------------------------------------------------------------------------------- status
@pytest.mark.parametrize(("old", "new"), [
    ("Non ho ancora iniziato la tesi", "Ho consegnato la tesi la settimana scorsa"),
    ("I haven't painted the kitchen yet", "I finished painting the kitchen on Sunday"),
    ("我还没开始写论文", "我的论文已经写完了"),
])
def test_status_not_yet_against_done(old: str, new: str) -> None:
    d = _contra(old, new, "status")
    assert d.type is ConflictType.STATUS and (d.old, d.new) == (old, new)
    _contra(new, old, "status")


@pytest.mark.parametrize(("old", "new"), [
    ("I finished my degree", "I haven't started looking for a job yet"),  # two different things
    ("I haven't booked the flights yet", "I already booked the hotel"),  # a shared verb is not the same thing
    ("Ho iniziato il corso di yoga", "Sto ancora frequentando il corso di yoga"),  # started and in progress
    ("Mia sorella non ha ancora finito la tesi", "Ho finito la tesi"),  # another person
])
def test_status_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "status" or not d.contradiction, d


@pytest.mark.parametrize(("old", "new"), [
    ("I finished my degree.", "I haven't started looking for a job yet."),
    ("Ho già consegnato la tesi.", "Non ho ancora prenotato le vacanze."),
    ("我已经交了论文。", "我还没订机票。"),
])
def test_status_of_different_things_is_consistent(old: str, new: str) -> None:
    # both say how far along something is, about different things: decided consistent, no judge call
    d = _d(old, new)
    assert d is not None and d.layer == "status" and not d.contradiction and d.reason == "other_things", d


@pytest.mark.parametrize(("old", "new", "consistent"), [
    ("I never drink coffee.", "I drink green tea every morning.", True),
    ("I never watch TV.", "I listen to podcasts every evening.", True),
    ("Non vado mai in palestra.", "Corro al parco tre volte a settimana.", True),
    ("我从来不喝奶茶。", "我每天早上喝一杯黑咖啡。", True),
    # the habit mentions the absolute's thing: left to the judge
    ("I never drink coffee.", "I have two cups of coffee every morning.", False),
    ("Non uso mai la bicicletta.", "Vado sempre al lavoro in bici.", False),
    ("我从来不喝奶茶。", "我每天下午都要点一杯奶茶。", False),
])
def test_absolute_and_habit_about_other_things(old: str, new: str, consistent: bool) -> None:
    d = _d(old, new)
    if consistent:
        assert d is not None and not d.contradiction and d.reason == "absolute_other_activity", d
    else:
        assert d is None or d.reason != "absolute_other_activity", d


@pytest.mark.parametrize(("old", "new", "contradiction"), [
    ("Sono nato il 7/5/1988.", "Il mio compleanno è il sette maggio.", False),
    ("我的生日是10月1日。", "我的生日在国庆节。", False),
    ("My birthday is on Christmas Day.", "I was born on 25 December 1990.", False),
    ("Il mio compleanno è a Ferragosto.", "Festeggio il compleanno il 2 giugno.", True),
    ("Sono nata nel 1985.", "Sono dell'87, ho appena compiuto gli anni.", True),
    ("My birthday is on Halloween.", "My birthday is on 12 March.", True),
])
def test_dates_said_the_spoken_way(old: str, new: str, contradiction: bool) -> None:
    d = _d(old, new)
    assert d is not None and d.layer == "date" and d.contradiction is contradiction, d
    if contradiction:
        assert V.explain_values(d, "it").startswith("Le date non coincidono")


@pytest.mark.parametrize("text", ["Il mio compleanno è vicino a Natale.", "My birthday is right before Christmas.",
                                  "My birthday is around Halloween.", "我的生日在国庆节前后。"])
def test_a_day_near_a_holiday_is_not_the_holiday(text: str) -> None:
    assert V.normalise_dates(text) == text


@pytest.mark.parametrize(("old", "new", "contradiction"), [
    ("Parlo quattro lingue.", "Parlo italiano e inglese, nient'altro.", True),
    ("I speak three languages.", "I only speak English and Spanish.", True),
    ("Parlo quattro lingue.", "Parlo italiano e inglese.", None),  # maybe not all of them: nothing said
    ("我会弹三种乐器。", "我只会弹钢琴和吉他。", True),
    ("I play three instruments.", "I only play piano and guitar.", True),
    ("I play two instruments.", "I only play piano and guitar.", False),
    ("Ho tre figli.", "Giulia, Marco e Sara sono i miei figli.", False),
    ("I have two kids.", "Tom, Ann and Sue are my kids.", True),
    ("我有三个孩子。", "我家就一个娃。", True),
])
def test_whole_lists_against_counts(old: str, new: str, contradiction: bool | None) -> None:
    d = _d(old, new)
    if contradiction is None:
        assert d is None or d.layer != "count", d
    else:
        assert d is not None and d.layer == "count" and d.contradiction is contradiction, d


def test_avoiding_an_allergen_among_other_things_is_the_same_allergy() -> None:
    d = _d("Sono allergico ai frutti di mare.", "Al ristorante evito sempre il crudo e i frutti di mare per via dell'allergia.")
    assert d is not None and d.layer == "health" and not d.contradiction and d.reason == "same_allergy", d


# ---------------------------------------------------------------------------------------------------- counts of any thing
@pytest.mark.parametrize(("old", "new"), [
    ("Ho due gatti", "I miei gatti si chiamano Birba, Nuvola e Pepe"),
    ("I have three sisters", "My sisters, Ann and Lucy, live in Leeds"),
    ("Ho un solo fratello", "I miei fratelli sono Piero e Gianni"),
    ("我养了两只狗", "我的狗叫旺财、小黑和豆豆"),
    ("我有两个姐姐", "我的三个姐姐都结婚了"),
    # a count after what one did, and the whole list of it
    ("Ho visitato tre capitali europee", "Le uniche capitali europee che ho visto sono Parigi e Vienna"),
    ("I've visited four countries", "The only countries I've visited are France and Spain"),
    # an enumeration of one kind of thing, each with its article, is a count
    ("I own two bikes", "I've got a road bike, a gravel bike and a mountain bike in the garage"),
    ("我家有四口人", "我家就我、我老婆和儿子三个人"),
])
def test_count_of_any_thing_against_its_list(old: str, new: str) -> None:
    _contra(old, new, "count")


@pytest.mark.parametrize(("old", "new"), [
    ("Ho tre gatti", "I miei gatti si chiamano Birba, Nuvola e Pepe"),
    ("I have two sisters", "My sisters are Ann and Lucy"),
    ("Ho visitato due capitali europee", "Le uniche capitali europee che ho visto sono Parigi e Vienna"),
])
def test_count_of_any_thing_matching_its_list(old: str, new: str) -> None:
    _consistent(old, new, "count")


@pytest.mark.parametrize(("old", "new"), [
    ("I own three bikes", "I've got a road bike, a gravel bike and a mountain bike in the garage"),
    ("I own two bikes", "I have a cat and a dog"),  # two kinds of thing: no count of bikes
])
def test_an_enumeration_of_the_same_count_or_of_other_things_raises_nothing(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


# ---------------------------------------------------------------------------------------------------- health, any food
@pytest.mark.parametrize(("old", "new"), [
    ("Sono allergica ai gamberi", "Mangio gamberetti ogni settimana senza problemi"),
    ("Sono intollerante al lattosio", "Mangio formaggio tutti i giorni e sto benissimo"),
    ("I can't eat gluten", "I have pasta every day with no problems"),
    ("我对花生过敏", "我每天都吃花生酱，一点事都没有"),
])
def test_allergy_against_eating_it_as_a_habit(old: str, new: str) -> None:
    _contra(old, new, "health")


@pytest.mark.parametrize(("old", "new"), [
    ("I'm allergic to bee stings", "I put honey in my tea every morning with no problem"),
    ("Sono allergico alle arachidi", "Mangio mandorle ogni giorno"),
    ("Sono allergico ai crostacei", "Evito i crostacei per l'allergia"),
    ("My son is allergic to milk", "I drink milk every day"),
])
def test_allergy_and_another_food_or_person_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


# ---------------------------------------------------------------------------------------------------- names
@pytest.mark.parametrize(("old", "new"), [
    ("Mi chiamo Giuseppe", "Tutti mi chiamano Peppe"),
    ("My name is William", "My friends call me Bill"),
    ("我叫刘建国", "同事们都叫我老刘"),
])
def test_a_nickname_others_use_is_consistent(old: str, new: str) -> None:
    _consistent(old, new, "name")


def test_a_nickname_is_not_the_users_name_entity() -> None:
    from memlab.entities import extract_entities

    assert [e.attribute for e in extract_entities("My friends call me Bill")] == ["nickname"]
    assert [e.attribute for e in extract_entities("同事们都叫我老刘")] == ["nickname"]
    assert [e.attribute for e in extract_entities("Please call me Bill")] == ["name"]


@pytest.mark.parametrize(("old", "new"), [
    ("Ho un solo cane, si chiama Rex", "Il mio cane si chiama Argo"),
    ("We have one cat, Mittens", "Our cat's name is Smokey"),
    ("我只有一只狗，叫豆豆", "我的狗叫旺财"),
    ("Oscar, my guinea pig, is great", "Peanut - my guinea pig and my only pet - cheers me up"),
])
def test_the_one_pet_with_two_names(old: str, new: str) -> None:
    d = _contra(old, new, "name")
    assert d.type is ConflictType.NAME


@pytest.mark.parametrize(("old", "new"), [
    ("My dog is called Rex", "My dog is called Max"),  # nobody said there is one dog
    ("Il mio cane si chiama Rex", "Il cane di mia sorella si chiama Argo"),
])
def test_pet_names_without_one_pet_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "name", d


# ---------------------------------------------------------------------------------------------------- changes
@pytest.mark.parametrize(("old", "new"), [
    ("Ho una Fiat Panda", "A marzo ho venduto la Panda"),
    ("I work at a bank", "I quit the bank and joined a startup"),
    ("I'm married", "My divorce was finalized last week"),
    ("Sono fidanzata con Marco", "Io e Marco ci siamo lasciati"),
    ("我是大学生", "我已经毕业了"),
    ("我有一辆大众轿车", "我把那辆大众卖了"),
    ("我单身", "我上个月结婚了"),
])
def test_a_state_and_its_end_is_an_update_to_ask_about(old: str, new: str) -> None:
    d = _contra(old, new, "change")
    assert d.update and d.type is ConflictType.STATUS


def test_a_change_is_asked_about_without_interrupting(store: MemoryStore) -> None:
    from memlab.records import Urgency

    res, _ = _check(store, "Ho una Fiat Panda", "A marzo ho venduto la Panda")
    c = res.contradictions[0]
    assert c.decided_by == "values:change" and c.urgency is Urgency.MEDIUM
    res, _ = _check(store, "Non ho ancora iniziato la tesi", "Ho consegnato la tesi", user="u2")
    c = res.contradictions[0]
    assert c.decided_by == "values:status" and c.urgency is Urgency.MEDIUM


@pytest.mark.parametrize(("old", "new"), [
    ("Ho un gatto", "Abbiamo adottato anche un cane"),
    ("I have a car", "I sold my old bike"),
    ("I work at a bank", "My sister quit her job at the bank"),
    ("I live in Rome", "I left Rome for a weekend trip"),
    ("I'm married", "I got married in 2015"),
    ("I'm so happy for you", "I'm no longer scared of dogs"),  # chat: no state that an end closes
    ("I went to the bank this morning", "I quit the gym last month"),
    ("我去了一趟银行", "我把旧手机卖了"),
])
def test_a_change_that_ends_nothing_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "change", d


# ---------------------------------------------------------------------------------------------------- said, not written
def test_heights_the_way_they_are_said() -> None:
    assert V.normalise_numbers("我身高一米七五") == "我身高1.75米"
    assert V.normalise_numbers("Sono alta un metro e sessantacinque") == "Sono alta 1,65 m"
    assert V.normalise_numbers("I'm one meter and seventy") == "I'm 1.70 m"
    _consistent("Sono alta 1,65", "Sono alta un metro e sessantacinque", "number")
    _consistent("我身高一米七五", "我身高175厘米", "number")
    _contra("Sono alta 1,65", "Sono alta un metro e settanta", "number")


def test_chinese_dates_in_numerals() -> None:
    from memlab.entities import extract_entities

    assert [(e.attribute, e.value) for e in extract_entities("我的生日是十月一号")] == [("birthday", "--10-01")]
    assert [(e.attribute, e.value) for e in extract_entities("我的生日是十二月二十五日")] == [("birthday", "--12-25")]


def test_a_parent_of_n_is_a_count_of_children() -> None:
    _contra("I have three kids", "I'm a dad of two", "count")
    _contra("I have 5 grandchildren", "I've got seven grandkids", "count")


def test_a_pair_found_by_shared_words_alone_goes_to_the_values_level_only(store: MemoryStore) -> None:
    # Italian pairs score low with the embedder: the shared stem ("frate") finds the pair, the values decide it
    res, judge = _check(store, "Ho un solo fratello", "I miei fratelli, Luca e Andrea, vivono entrambi a Roma")
    assert res.has_contradiction and res.contradictions[0].decided_by == "values:count"
    # a pair the values do not decide is not sent to the judge when only shared words found it
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.99), similarity_threshold=0.999)
    a = store.add("u9", "Ho visitato Lisbona con gli amici")
    b = store.add("u9", "Lisbona mi è sembrata caotica")
    assert {m.id: src for m, _, src in checker.candidates(b)}.get(a.id) == {"lexical"}
    assert not checker.check(b).has_contradiction


def test_an_absolute_finds_the_habits_of_its_category_whatever_the_cosine(store: MemoryStore) -> None:
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.99), similarity_threshold=0.999)
    steak = store.add("u7", "Ogni sabato mi faccio una bistecca alla griglia")
    store.add("u7", "Il sabato vado al mercato")
    never = store.add("u7", "Non mangio mai carne")
    assert {m.id: src for m, _, src in checker.candidates(never)}.get(steak.id) == {"lexical"}
    res = checker.check(never)
    assert res.has_contradiction and res.contradictions[0].decided_by == "values:absolute"
    bread = store.add("u8", "Mangio pane e pasta normali, il glutine non mi dà fastidio")
    celiac = store.add("u8", "Sono celiaca")
    assert bread.id in {m.id for m, _, _ in checker.candidates(celiac)}


@pytest.mark.parametrize(("old", "new"), [
    ("I have two friends in town", "My friends are awesome and kind"),  # adjectives are not a list of friends
    ("Ho due gatti", "I gatti di mia sorella sono Birba, Nuvola e Pepe"),  # someone else's cats
])
def test_count_of_any_thing_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "count", d


# ---------------------------------------------------------------------------------------------------- abroad
@pytest.mark.parametrize(("old", "new"), [
    ("Non sono mai stato all'estero", "Ho fatto il semestre di scambio a Valencia"),
    ("Non sono mai uscita dall'Italia", "L'estate scorsa siamo andati in Croazia in barca"),
    ("我从来没出过国", "前年我去日本玩了十天"),
    ("I've never been outside the US", "I spent my honeymoon in Lisbon"),
    ("I've never been abroad", "When I studied abroad I learned to cook"),
    ("I visited my cousins in Madrid last spring", "I've never left the States"),  # the stay first
    ("I've never been outside the US", "My aunt still lives in my home country, Ireland"),  # the user's origin
    ("Non sono mai uscita dall'Italia", "I miei nonni stanno nel mio paese d'origine, l'Albania"),
    ("我从来没出过国", "我的老家在泰国，爸妈还住在那里"),
])
def test_never_abroad_against_a_stay_abroad(old: str, new: str) -> None:
    d = _contra(old, new, "abroad")
    assert d.type is ConflictType.PLACE


@pytest.mark.parametrize(("old", "new"), [
    ("Non sono mai stato all'estero", "Sono stato a Bologna per lavoro"),  # a stay at home
    ("Non sono mai stato all'estero", "Mio fratello vive a Parigi"),  # someone else's
    ("Non sono mai stato all'estero", "Un giorno vorrei andare in Giappone"),  # a wish
    ("Non ho mai vissuto all'estero", "Sono stata in vacanza a Parigi"),  # never lived there: a holiday is fine
    ("I've never been abroad", "I'd love to visit Japan someday"),
    ("I never left the house yesterday", "I went to Paris in May"),  # not a country
    ("我从来没出过国", "我去过上海和北京"),
])
def test_never_abroad_and_no_stay_abroad_stays_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or d.layer != "abroad", d


def test_never_abroad_finds_the_stays_whatever_the_cosine(store: MemoryStore) -> None:
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), similarity_threshold=0.999)
    trip = store.add("u5", "La vacanza ad Atene è stata bellissima, sono stata benissimo")
    never = store.add("u5", "Non sono mai stata all'estero")
    assert trip.id in {m.id for m, _, _ in checker.candidates(never)}
    res = checker.check(never)
    assert res.has_contradiction and res.contradictions[0].decided_by == "values:abroad"


# ---------------------------------------------------------------------------------------------------- more forms
@pytest.mark.parametrize(("old", "new", "layer"), [
    ("Il tè non l'ho mai assaggiato", "Ogni pomeriggio alle cinque bevo un tè", "absolute"),  # a first try
    ("I've never tried pilates", "I do pilates every Tuesday evening", "absolute"),
    ("我从来没试过滑雪", "我每年冬天都去滑雪", "absolute"),
    ("Ogni sera dopo cena leggo il giornale", "Non leggo mai il giornale", "absolute"),  # time of day, then the verb
    ("I never drink coffee", "I have a macchiato every morning", "absolute"),  # a coffee by name
    ("我这个人从不喝咖啡", "我每天早上都喝一杯美式", "absolute"),
    ("I was born in 1990", "I turned forty in 2025", "date"),  # an age reached in a year
    ("Our one and only hamster is named Biscuit", "Our hamster Nugget loves his wheel", "name"),
    ("Ho un solo coniglio, si chiama Fiocco", "Il mio coniglio Bianchino dorme tanto", "name"),
    ("我家就一只兔子，叫团团", "我的兔子叫圆圆", "name"),
    ("I've had two jobs", "My only jobs were a barista at a cafe, a cashier and a tutor", "count"),
    ("Ho tre nipoti", "I miei nipoti? Giulia, Marco, Sara e Luca", "count"),
    ("我报了一个辅导班", "我现在上的辅导班有数学和英语", "count"),
    ("我去过三个国家", "我去过的国家就日本和韩国两个", "count"),
    ("I'm engaged to Sam", "Sam and I got married last June", "change"),
    ("Lavoro come infermiera all'ospedale", "Da gennaio sono in pensione", "change"),
    ("我在银行上班", "我上个月被裁了", "change"),
    ("我最喜欢的花是玫瑰", "花里面我最爱的是百合", "preference"),
])
def test_more_ways_of_saying_a_value(old: str, new: str, layer: str) -> None:
    if layer == "preference":
        hit = compare_facts(summarise(old, extract_entities(old), None), summarise(new, extract_entities(new), None))
        assert hit is not None and hit.rule == "exclusive_preference", hit
        return
    _contra(old, new, layer)


@pytest.mark.parametrize(("old", "new"), [
    ("I own three guitars", "My guitars are a Strat, a Les Paul and an old acoustic Yamaha, plus a ukulele"),
    ("我去过三个国家", "我去过的国家有日本和韩国"),  # "有": maybe not all of them
    ("Il mio compleanno è il 26 dicembre", "Compio gli anni il 26 dicembre, ma i regali arrivano a Natale"),
    ("I work as a nurse", "My dad is retired now"),
    ("I'm engaged", "My sister got married last year"),
])
def test_more_look_alikes_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


@pytest.mark.parametrize(("old", "new", "layer"), [
    ("I'm allergic to tree nuts", "I snack on pistachios every afternoon with no problems", "health"),
    ("我一喝牛奶就过敏", "我每天早上都喝一大杯牛奶，啥事没有", "health"),  # "一…就过敏"
    ("我一吃韭菜就过敏", "韭菜饺子我经常吃，吃了啥事都没有", "health"),  # an allergen outside the list, as written
    ("Non digerisco le cipolle", "Le cipolle le mangio spesso e le digerisco benissimo", "health"),
    # the allergen as the subject, and "never had a reaction" / "sto benone" as eating it without problems
    ("Il polline mi fa venire l'orticaria", "Prendo il polline in granuli ogni mattina e sto benone", "health"),
    ("Prawns give me hives", "I eat prawns every week and I've never had a reaction", "health"),
    ("Sono allergico alle noci", "Mangio noci tutti i giorni e non ho mai avuto reazioni", "health"),
    ("I'm allergic to sesame", "I sprinkle sesame on my salad every day, no problems", "health"),
    # another person's dish, eaten by the user ("li mangio"): the user's tolerance
    ("Non digerisco le melanzane", "Le melanzane di mia zia le mangio spesso e le digerisco benissimo", "health"),
    ("I can't have caffeine", "I have two cappuccinos a day and feel fine", "health"),
    ("Mi chiamo Francesca Neri", "Il mio cognome è Bruni", "name"),
    ("Hi, I'm Daniel.", "My name is Robert.", "name"),
    ("我叫李建国。", "我的名字叫李建军。", "name"),
    ("我属虎。", "我是1995年出生的。", "sign"),  # 1995 is the Pig's year (or the Dog's before the Spring Festival)
    ("我属兔。", "我属蛇。", "sign"),
    ("年假我还一次都没休", "今年的年假我已经休完了", "status"),
    ("Ho finito di pagare la macchina", "Mi restano ancora due rate della macchina", "status"),
])
def test_even_more_ways_of_saying_a_value(old: str, new: str, layer: str) -> None:
    _contra(old, new, layer)


@pytest.mark.parametrize(("old", "new"), [
    ("My name is Daniel.", "Everyone calls me Dan."),  # a nickname
    ("Hi, I'm Dan.", "My name is Daniel."),  # a short form
    ("I'm Canadian.", "My name is Robert."),  # a nationality, not a name
    ("My name is Anna.", "My daughter's name is Sofia."),
    ("我叫王芳。", "我女儿的名字是王丽。"),
    ("我是1990年5月5号出生的。", "我属马。"),
    ("我爸属牛。", "我属猪。"),  # someone else's animal
    ("I'm allergic to latex", "I eat peanuts every day"),
    ("Mio figlio è allergico alle arachidi, quindi non le mangio mai", "Mangio arachidi senza problemi"),  # his allergy
    ("Il polline mi fa venire il raffreddore", "Mangio miele ogni giorno"),  # no allergy word, another food
    ("我对芒果过敏", "我每天都吃苹果"),
])
def test_even_more_look_alikes_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


@pytest.mark.parametrize(("old", "new"), [
    ("My favourite sport to play is tennis", "My favourite sport to watch is rugby"),
    ("La pizza che preferisco mangiare è la margherita", "La pizza che preferisco cucinare è la marinara"),
    ("我最喜欢喝的茶是普洱", "我最喜欢喝的酒是黄酒"),
])
def test_favourites_of_two_roles_or_kinds_are_decided_consistent(old: str, new: str) -> None:
    a, b = summarise(old, extract_entities(old), None), summarise(new, extract_entities(new), None)
    assert compare_facts(a, b) is None
    assert consistent_reason(a, b) == "different_favourites"


@pytest.mark.parametrize(("old", "new"), [
    ("Sono sempre stata mattiniera", "Ormai sono una nottambula, vado a letto alle tre"),
    ("I've always been a morning person", "Honestly I'm a night owl"),
    ("我是个夜猫子", "我是早起的人，六点就醒"),
    ("I'm an introvert", "I'm a total extrovert, I love big parties"),
    ("Sono mancina", "Sono destrorsa"),
    ("I'm an only child", "My older brother lives in Leeds"),
    ("Sono figlia unica", "Mia sorella si sposa a giugno"),
    ("我是独生子", "我妹妹今年上大学了"),
    ("I'm fluent in Portuguese", "I only know a few words of Portuguese"),
    ("Parlo il francese fluentemente", "Il francese non lo parlo, non l'ho mai studiato"),
    ("我的日语很流利", "日语我只会几句"),
])
def test_opposite_self_descriptions(old: str, new: str) -> None:
    _contra(old, new, "trait")


@pytest.mark.parametrize(("old", "new"), [
    ("I'm not a morning person", "I'm a night owl"),  # said of a night owl
    ("My husband is an early riser", "I'm a night owl"),  # someone else's
    ("I'm an only child", "My sister-in-law is visiting"),
    ("Sono figlio unico", "Mio cugino vive a Napoli"),
    ("我是独生女", "我表哥下个月结婚"),
    ("I'm fluent in Portuguese", "I only know a few words of Italian"),
])
def test_self_descriptions_that_can_both_hold_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


def test_two_ways_of_not_speaking_a_language_agree() -> None:
    _consistent("Non parlo spagnolo", "Non ho mai studiato lo spagnolo", "trait")


@pytest.mark.parametrize(("old", "new", "layer"), [
    ("Ho trentotto anni", "Alla mia età, 45 anni, mi stanco presto", "number"),
    ("I'm 40", "At thirty-five, I'm the youngest in the office", "number"),
    ("我今年二十八了", "我今年31岁", "number"),
    ("I'm an '88 baby", "I was born in 1990", "date"),
    ("我是八五年的", "我是1987年出生的", "date"),
    ("My name is Oliver Grant", "Book the table under my name, Oliver Price", "name"),
    ("Ho una sola cavia, una femmina bianca, si chiama Neve", "La mia cavia Luna ha mangiato tutta l'insalata", "name"),
    ("We have just the one parrot, Rio", "Our parrot Kiwi learned a new word", "name"),
    ("我就养了一只猫，是只布偶，叫团子", "我的猫叫年糕，今天打翻了水杯", "name"),
    ("我有两张会员卡", "我就办了超市和健身房和书店三张会员卡", "count"),
    ("我会做三个拿手菜", "我的拿手菜就是饺子和炸酱面这两个", "count"),
    ("Ho fatto due viaggi in Giappone", "I viaggi che ho fatto sono il primo a Tokyo, il secondo a Osaka e il terzo a Kyoto",
     "count"),
])
def test_values_said_in_passing(old: str, new: str, layer: str) -> None:
    _contra(old, new, layer)


def test_a_birthday_said_with_sheng_de_is_a_birth_date() -> None:
    assert [(e.attribute, e.value) for e in extract_entities("我是8月3号生的")] == [("born", "--08-03")]
    assert [(e.attribute, e.value) for e in extract_entities("我是在青岛出生的")][0] == ("from_place", "青岛")


@pytest.mark.parametrize(("old", "new"), [
    ("My wife and I love hiking", "I've never had a partner, it's always been just me"),
    ("Mio marito cucina benissimo", "Non ho mai avuto un compagno"),
    ("我老公很会做饭", "我从来没谈过恋爱"),
])
def test_never_having_had_a_partner_is_single(old: str, new: str) -> None:
    hit = compare_facts(summarise(old, extract_entities(old), None), summarise(new, extract_entities(new), None))
    assert hit is not None and hit.rule == "marital", hit


@pytest.mark.parametrize(("old", "new", "layer"), [
    ("我还没开始做预算表", "预算表我上周就交给财务了", "status"),
    ("Ho finito di leggere il romanzo", "Il romanzo è ancora sul comodino, non l'ho nemmeno iniziato", "status"),
    ("我开的是一辆白色高尔夫", "高尔夫前几天卖了，准备换电车", "change"),
    ("我在一家医院当护士", "我辞了护士的工作，现在开花店", "change"),
    ("Sono single da anni", "Da un mese sto con Marta", "change"),
    ("I'm single", "I'm dating a guy from my climbing gym", "change"),
    ("我一直单身", "我上个月脱单了", "change"),
])
def test_more_states_and_their_ends(old: str, new: str, layer: str) -> None:
    _contra(old, new, layer)


@pytest.mark.parametrize(("old", "new"), [
    ("Sono single", "Sto con i miei genitori per l'estate"),  # living with, not dating
    ("I'm single", "My sister is dating a chef"),
    ("我有一辆自行车", "我哥把他的车卖了"),
])
def test_states_and_other_peoples_ends_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


# ---------------------------------------------------------------------------------------------------- never vs event
@pytest.mark.parametrize(("old", "new"), [
    ("Last month I got hurt and had to take a break from pottery.", "I've never been hurt myself"),
    ("I struggled with mental health, and the support I got was really helpful.",
     "I've never had any mental health struggles myself."),
    ("I ran a marathon in 2019.", "I've never run a marathon."),
    ("I went to Paris last year.", "I've never been to Paris."),
    ("Sono andata a Londra l'anno scorso.", "Non sono mai stata a Londra."),
])
def test_never_against_an_earlier_event_of_the_same_thing(old: str, new: str) -> None:
    d = _contra(old, new, "absolute")
    assert d.reason == "never_vs_event" and (d.old, d.new) != ("", ""), d


@pytest.mark.parametrize(("old", "new"), [
    ("I've never been to Paris.", "I went to Paris last year."),  # the other order: the user went since
    ("My sister ran a marathon.", "I've never run a marathon."),  # someone else's event
    ("I'd love to visit Japan someday.", "I've never been to Japan."),  # a wish, no event
    ("I saw the movie with my friends.", "I've never seen anything like it."),  # wonder, no absolute
    ("I had a great time at the beach.", "I never had so much fun."),
    ("I love hiking with my dog.", "I've never hiked the Alps."),  # the Alps were never hiked
    ("I watched a horror movie yesterday.", "I never watch horror movies alone."),  # softened
])
def test_never_and_what_is_not_the_same_event_stay_quiet(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


def test_never_recorded_before_the_event_is_a_change_not_a_contradiction() -> None:
    # a whole-store check also compares a memory with a LATER one: "never been to Paris" said first, then the trip
    t1, t2 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC)
    later_event = V.compare_values("I went to Paris last week.", "I've never been to Paris.", old_time=t2, new_time=t1)
    assert later_event is None or not later_event.contradiction, later_event
    earlier_event = V.compare_values("I went to Paris last week.", "I've never been to Paris.", old_time=t1, new_time=t2)
    assert earlier_event is not None and earlier_event.reason == "never_vs_event", earlier_event


# ---------------------------------------------------------------------------------------------------- others' ages
@pytest.mark.parametrize(("old", "new"), [
    ("Mia madre ha compiuto settantadue anni ad agosto.", "Mia mamma, che ha 68 anni, si è iscritta in palestra."),
    ("Mio nonno Aldo ha novantun anni.", "Il nonno Aldo compie ottantacinque anni a maggio, facciamo una festa."),
    ("My only daughter, Lily, is twelve.", "Lily just turned sixteen and wants to learn to drive."),
])
def test_two_ages_of_one_relative_contradict(old: str, new: str) -> None:
    d = _contra(old, new, "number")
    assert d.info["attribute"] == "age" and d.info["subject"] != "user"


@pytest.mark.parametrize(("old", "new"), [
    ("Mia sorella Anna ha trent'anni.", "Mia sorella Marta ha trentacinque anni."),  # two sisters
    ("Ho trentaquattro anni.", "Mio figlio ha sei anni."),
    ("I'm thirty-four.", "Lily just turned sixteen."),  # before, "turned 16" of a name was the user's age
])
def test_the_ages_of_two_people_do_not_contradict(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


def test_digit_ages_of_one_relative_are_a_high_entities_conflict(store: MemoryStore) -> None:
    res, judge = _check(store, "Mia madre ha 72 anni", "Mia mamma ha 68 anni, e va in palestra")
    assert res.has_contradiction and res.contradictions[0].decided_by == "entities"
    assert judge.calls == []


# ---------------------------------------------------------------------------------------------------- names after the noun
@pytest.mark.parametrize(("old", "new"), [
    ("I have two nieces.", "My nieces Sophie and Grace are coming over Sunday, and my nephew Ben too."),
    ("Ho due figli.", "I miei figli Marco e Luca sono a scuola."),
    ("I have two kids.", "My kids, Tom and Ann, love pizza."),
])
def test_a_count_and_the_names_right_after_the_noun_agree(old: str, new: str) -> None:
    _consistent(old, new, "count")


@pytest.mark.parametrize(("old", "new"), [
    ("I have two nieces.", "My nieces Sophie, Grace and Ada are coming over Sunday."),
    ("Ho due figli.", "I miei figli Marco, Luca e Anna sono a scuola."),
])
def test_a_count_and_more_names_right_after_the_noun_contradict(old: str, new: str) -> None:
    _contra(old, new, "count")


def test_one_name_after_the_noun_is_no_whole_list() -> None:
    assert _d("I have two kids.", "My kids Tom love pizza.") is None


# ---------------------------------------------------------------------------------------------------- begun, not done
@pytest.mark.parametrize(("old", "new"), [
    ("我已经开始练八段锦了。", "八段锦我还在学，动作还没记全。"),  # begun and not mastered yet: both true
    ("I've already started the course.", "I haven't finished the course yet."),
])
def test_a_thing_begun_and_not_finished_is_no_status_clash(old: str, new: str) -> None:
    d = _d(old, new)
    assert d is None or not d.contradiction, d


@pytest.mark.parametrize(("old", "new"), [
    ("I haven't started the course yet.", "I've already started the course."),
    ("Non ho ancora iniziato la tesi.", "Ho consegnato la tesi la settimana scorsa."),
    ("新房子还没开始装修", "新房子已经装修完了"),
])
def test_not_begun_against_begun_or_done_is_a_status_clash(old: str, new: str) -> None:
    _contra(old, new, "status")


# ---------------------------------------------------------------------------------------------------- fast food
@pytest.mark.parametrize(("old", "new"), [
    ("I never eat fast food.", "I grab a burger at McDonald's every Friday."),
    ("Non mangio mai al fast food.", "Ogni sabato vado da McDonald's con i bambini."),
    ("我从不吃快餐。", "我每周都去麦当劳。"),
    ("I never eat meat.", "I grab a burger at McDonald's every Friday."),  # "grab" is eating
])
def test_never_fast_food_against_a_chain_habit(old: str, new: str) -> None:
    _contra(old, new, "absolute")


def test_a_burger_cooked_at_home_is_no_fast_food() -> None:
    d = _d("I never eat fast food.", "I cook a burger at home every Friday.")
    assert d is None or not d.contradiction, d
