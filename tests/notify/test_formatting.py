"""Formatting by urgency, the turn policy (fatigue rule) and answer parsing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from memlab.errors import InvalidInputError
from memlab.notify import (
    Notification,
    NotificationType,
    ResolutionChoice,
    format_high_block,
    format_notification,
    medium_offer,
    parse_choice,
    parse_yes_no,
    plan_turn,
)
from memlab.records import Urgency

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _contra(id_=1, urgency=Urgency.HIGH, first="Sono nato il 12 luglio 1990", second="Il mio compleanno è il 15 agosto"):
    return Notification(id=id_, user_id="u1", type=NotificationType.CONTRADICTION, urgency=urgency, content="x",
                        payload={"first": {"id": 1, "text": first}, "second": {"id": 2, "text": second}},
                        memory_ids=(1, 2), actionable=True)


def _note(id_, urgency, type_=NotificationType.EVENT, **kw):
    return Notification(id=id_, user_id="u1", type=type_, urgency=urgency, content=f"evento {id_}", **kw)


def test_high_contradiction_block_italian_exact():
    """The block as the product's specification words it: the seed's sentence and what differs, then the seed's block
    under its ``[⚠️ CONTRADDIZIONE RILEVATA]`` marker, options carrying the values the detector compared."""
    n = replace(_contra(), payload={**_contra().payload, "new_id": 2,
                                    "explanation": "Il dato «compleanno» non coincide: prima 12 luglio, ora 15 agosto.",
                                    "details": {"spans": ["12 luglio", "15 agosto"]}})
    assert format_notification(n).splitlines() == [
        "[⚠️ IMPORTANTE] Ho rilevato una contraddizione: in precedenza mi avevi detto «Sono nato il 12 luglio 1990», "
        "ma ora mi dici «Il mio compleanno è il 15 agosto».",
        "Il dato «compleanno» non coincide: prima 12 luglio, ora 15 agosto.",
        "[⚠️ CONTRADDIZIONE RILEVATA]",
        "Ho notato una contraddizione nella memoria:",
        '1. Memoria precedente: "Sono nato il 12 luglio 1990"',
        '2. Memoria nuova: "Il mio compleanno è il 15 agosto"',
        "Quale informazione è corretta?",
        "- A) La prima (12 luglio)",
        "- B) La seconda (15 agosto)",
        "- C) Entrambe sono corrette (spiega il contesto)",
        "- D) Cancella entrambe",
    ]
    # without recorded values the options stay plain
    assert format_notification(_contra()).splitlines()[-4:-2] == ["- A) La prima", "- B) La seconda"]


def test_high_block_english_chinese_text_and_explanation():
    n = replace(_contra(first="我叫张三", second="叫我李四"), payload={
        "first": {"id": 1, "text": "我叫张三"}, "second": {"id": 2, "text": "叫我李四"},
        "explanation": "Two different names."})
    sentence, *lines = format_notification(n, "en").splitlines()
    assert sentence == "[⚠️ IMPORTANT] I noticed a contradiction: earlier you told me «我叫张三», but now you say «叫我李四»."
    assert lines[:5] == ["Two different names.", "[⚠️ CONTRADICTION DETECTED]", "I noticed a contradiction in my memory:",
                         '1. Previous memory: "我叫张三"', '2. New memory: "叫我李四"']
    assert lines[-4:] == ["- A) The first", "- B) The second", "- C) Both are correct (explain the context)",
                          "- D) Delete both"]
    zh = format_notification(n, "zh").splitlines()[2:]
    assert zh[:3] == ["[⚠️ 检测到矛盾]", "我注意到记忆中有矛盾：", '1. 之前的记忆: "我叫张三"']
    assert zh[-5:] == ["哪条信息是正确的？", "- A) 第一条", "- B) 第二条", "- C) 两条都正确（请说明背景）", "- D) 两条都删除"]


def test_block_rendered_in_the_readers_language_from_the_recorded_explanation():
    """The checker's ``details["explain"]`` rebuilds the explanation and the option values in the language the block
    is shown in; the user's own words (``said``) are quoted in the sentence instead of the stored memory text."""
    from memlab.integrity.explain import explain_data

    base = _contra().payload
    n = replace(_contra(), payload={
        **base, "new_id": 2,
        "first": {**base["first"], "said": "Sono nato il 12/07/1990."},
        "explanation": "Due memorie danno valori diversi per «compleanno»: «12 luglio 1990» e «15 agosto».",
        "details": {"spans": ["12 luglio 1990", "15 agosto"],
                    "explain": explain_data("key", key="birthday", old="1990-07-12", new="--08-15")}})
    it, en, zh = (format_notification(n, lang).splitlines() for lang in ("it", "en", "zh"))
    assert it[0].endswith("in precedenza mi avevi detto «Sono nato il 12/07/1990», ma ora mi dici "
                          "«Il mio compleanno è il 15 agosto».")
    assert it[1] == "Due memorie danno valori diversi per «compleanno»: «12 luglio 1990» e «15 agosto»."
    assert en[1] == 'Two memories give different values for "birthday": "12 July 1990" and "15 August".'
    assert zh[1] == "两条记忆对「生日」给出了不同的值：「1990年7月12日」和「8月15日」。"
    assert (it[7], en[7], zh[7]) == ("- A) La prima (12 luglio 1990)", "- A) The first (12 July 1990)",
                                     "- A) 第一条 (1990年7月12日)")
    assert zh[8] == "- B) 第二条 (8月15日)"
    # a malformed record falls back to the stored explanation and spans
    bad = replace(n, payload={**n.payload, "details": {"spans": ["12 luglio 1990", "15 agosto"],
                                                        "explain": {"level": "key"}}})
    assert format_notification(bad, "en").splitlines()[1].startswith("Due memorie")


def test_other_high_and_several_blocks():
    ev = _note(5, Urgency.HIGH)
    assert format_notification(ev) == "[⚠️ IMPORTANTE] evento 5"
    block = format_high_block([_contra(1), _contra(2)])
    assert block.count("[⚠️ CONTRADDIZIONE RILEVATA]\nHo notato una contraddizione nella memoria:") == 2
    assert "(notifica n. 1; rispondi con A, B, C o D)" in block and "notifica n. 2" in block
    assert format_high_block([]) == ""
    with pytest.raises(InvalidInputError):
        format_notification(ev, "fr")


def test_medium_offer_text():
    assert medium_offer() == "Ho una notifica importante per te. Vuoi che te la mostri ora? (sì/no)"
    assert medium_offer("en").endswith("(yes/no)")


def test_plan_turn_normal():
    pending = [_contra(1), _contra(2), _note(3, Urgency.MEDIUM), _note(4, Urgency.MEDIUM), _note(5, Urgency.LOW)]
    plan = plan_turn(pending, fatigue=0.2)
    assert [n.id for n in plan.high] == [1, 2]
    assert plan.offer is not None and plan.offer.id == 3
    assert [n.id for n in plan.offer_more] == [4]  # offered in the same (plural) question
    assert [n.id for n in plan.badge_only] == [5] and not plan.fatigued


def test_plan_turn_fatigued_one_high_and_no_medium():
    pending = [_contra(1), _contra(2), _note(3, Urgency.MEDIUM), _note(5, Urgency.LOW)]
    plan = plan_turn(pending, fatigue=0.75)
    assert [n.id for n in plan.high] == [1]
    assert plan.offer is None and plan.fatigued
    assert {n.id for n in plan.badge_only} == {2, 3, 5}
    # exactly at the threshold the rule does not apply (> 0.7)
    assert len(plan_turn(pending, fatigue=0.7).high) == 2


def test_plan_turn_does_not_repeat_shown_or_offered():
    pending = [replace(_contra(1), shown_at=NOW), _note(3, Urgency.MEDIUM, offered_at=NOW)]
    plan = plan_turn(pending)
    assert plan.high == () and plan.offer is None and len(plan.badge_only) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", ("A", None, None)),
        ("b", ("B", None, None)),
        ("a)", ("A", None, None)),
        ("D.", ("D", None, None)),
        ("C: il 15 agosto è il compleanno di mia madre", ("C", "il 15 agosto è il compleanno di mia madre", None)),
        ("c uno è il compleanno di mia madre", ("C", "uno è il compleanno di mia madre", None)),
        ("la prima", ("A", None, None)),
        ("La seconda è corretta", ("B", None, None)),
        ("entrambe corrette", ("C", None, None)),
        ("Cancella entrambe", ("D", None, None)),
        ("nessuna delle due", ("D", None, None)),
        ("the first", ("A", None, None)),
        ("both", ("C", None, None)),
        ("2: B", ("B", None, 2)),
        ("B 2", ("B", None, 2)),
        ("第一个", ("A", None, None)),
        ("第二个是对的", ("B", None, None)),
        ("都对，一个是我妈妈的生日", ("C", "一个是我妈妈的生日", None)),
        ("都删除", ("D", None, None)),
    ],
)
def test_parse_choice(text, expected):
    choice, note, ref = parse_choice(text)
    assert (choice, note, ref) == (ResolutionChoice(expected[0]), expected[1], expected[2])


@pytest.mark.parametrize(
    "text",
    ["a che ora apre il museo?", "Abito a Roma", "c'è il sole", "d'accordo", "Che ore sono?", "ciao",
     "la prima volta che sono andato a Parigi era il 2010 con mia sorella", ""],
)
def test_parse_choice_ignores_ordinary_messages(text):
    assert parse_choice(text) is None


@pytest.mark.parametrize(("text", "expected"), [("sì", True), ("Si!", True), ("ok", True), ("yes", True),
                                                ("no", False), ("non ora", False), ("later", False),
                                                ("ciao", None), ("Che ore sono?", None),
                                                ("好", True), ("不", False), ("我叫李四", None)])
def test_parse_yes_no(text, expected):
    assert parse_yes_no(text) is expected
