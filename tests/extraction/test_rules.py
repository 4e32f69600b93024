"""RuleExtractor: slots and free facts in Italian, English and Chinese; bad input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.errors import InvalidInputError
from memlab.extraction import RuleExtractor, Tone

R = RuleExtractor()


def _slots(text: str) -> dict[str, str | None]:
    return {f.key: f.value for f in R.extract(text).facts if f.key}


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("Chiamami Zhang San", "preferred_name", "Zhang San"),
        ("anzi chiamami Li Si", "preferred_name", "Li Si"),
        ("Mi chiamo Giulia Rossi.", "preferred_name", "Giulia Rossi"),
        ("Sono nato il 12 luglio 1990", "birthday", "1990-07-12"),
        ("Il mio compleanno è il 15 agosto", "birthday", "--08-15"),
        ("Abito a Roma", "home_city", "Roma"),
        ("Vivo a Milano da tre anni", "home_city", "Milano"),
        ("Lavoro presso Fincons", "employer", "Fincons"),
        ("Lavoro come ingegnere presso Fincons", "job_title", "ingegnere"),
        ("Sono alto 180 cm", "height_cm", "180"),
        ("Peso 75 kg", "weight_kg", "75"),
        ("Ho 34 anni", "age", "34"),
        ("Sono vegetariana", "diet", "vegetarian"),
        ("Sono sposato", "marital_status", "married"),
        ("Preferisco il tè al caffè", "favourite_drink", "tè"),
        ("Il mio colore preferito è il blu", "favourite_color", "blu"),
        ("Call me Bob", "preferred_name", "Bob"),
        ("I was born on July 12, 1990", "birthday", "1990-07-12"),
        ("I live in New York", "home_city", "New York"),
        ("I work at Google", "employer", "Google"),
        ("I work as a nurse at St. Mary Hospital", "employer", "St. Mary Hospital"),
        ("I'm a teacher", "job_title", "teacher"),
        ("I prefer coffee", "favourite_drink", "coffee"),
        ("My favorite movie is Inception", "favourite_movie", "inception"),
        ("我叫李四", "preferred_name", "李四"),
        ("我住在北京", "home_city", "北京"),
    ],
)
def test_slots(text: str, key: str, value: str) -> None:
    assert _slots(text).get(key) == value


def test_keyed_fact_has_template_text_type_and_confidence() -> None:
    (f,) = R.extract("Chiamami Zhang San").facts
    assert f.content == "L'utente si chiama Zhang San" and f.type == "profile" and f.confidence == 0.9
    (g,) = R.extract("anzi chiamami Li Si").facts
    assert g.confidence > f.confidence  # an explicit correction is stronger
    (h,) = R.extract("Forse abito a Roma").facts
    assert h.key == "home_city" and h.confidence < f.confidence  # hedged
    (e,) = R.extract("I live in Rome").facts
    assert e.content == "The user lives in Rome"


def test_feminine_form_is_kept() -> None:
    (f,) = R.extract("Sono nata il 3 marzo 1985").facts
    assert f.content == "L'utente è nata il 3 marzo 1985"


def test_several_clauses_give_several_facts() -> None:
    facts = R.extract("Sono nata il 3 marzo 1985 e vivo a Milano. Lavoro come sviluppatrice presso Fincons.").facts
    assert {f.key for f in facts} == {"birthday", "home_city", "job_title", "employer"}


def test_count_and_free_facts() -> None:
    facts = R.extract("I have 3 kids and I work at Google.").facts
    assert [f.key for f in facts] == [None, "employer"] and facts[0].rule == "count"
    (f,) = R.extract("Mi piace molto andare in montagna con mio fratello.").facts
    assert f.key is None and f.type == "preference" and "montagna" in f.keywords
    (g,) = R.extract("Mia sorella si chiama Anna e vive a Torino.").facts
    assert g.key is None and g.type == "relation"  # about another person: never the user's slot


@pytest.mark.parametrize(
    "text",
    [
        "Come ti chiami?", "What's your name?", "Se abitassi a Roma sarei felice.", "If I lived in Paris I'd be happy.",
        "Grazie!", "Wow, that's cool!", "I'm so glad you had fun!", "Your painting is beautiful.",
        "Non abito più a Roma.", "ok", "It's an important part of life.",
    ],
)
def test_no_slot_from_questions_conditionals_reactions_negations(text: str) -> None:
    facts = R.extract(text).facts
    assert all(f.key is None for f in facts)
    if text != "Non abito più a Roma.":
        assert facts == ()


@pytest.mark.parametrize("text", ["I live in the city now", "I come from all over", "I work at my dad's shop",
                                  "Ho un cane che si chiama Fido"])
def test_generic_words_and_pets_fill_no_slot(text: str) -> None:
    assert all(f.key is None for f in R.extract(text).facts)


def test_relative_date_needs_ref_time() -> None:
    ref = datetime(2026, 3, 10, tzinfo=UTC)
    assert R.extract("Il mio compleanno è domani", ref_time=ref).facts[0].value == "2026-03-11"


def test_topic_is_attached() -> None:
    assert R.extract("Abito a Roma", topic="casa").facts[0].topic == "casa"


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("text", ["", "   ", "😀😀🎉", "!!!", "...", "\n\n"])
def test_empty_or_emoji_only_gives_no_facts(text: str) -> None:
    res = R.extract(text)
    assert res.facts == ()
    assert res.has_emoji == ("😀" in text)


def test_control_characters_are_removed() -> None:
    res = R.extract("Abito\x00 a Ro\x07ma\x1b")
    assert [(f.key, f.value) for f in res.facts] == [("home_city", "Roma")]


def test_huge_message_is_truncated_and_flagged() -> None:
    msg = "Abito a Roma. " + ("bla " * 300_000)  # ~1.2 MB
    res = R.extract(msg)
    assert res.truncated and res.n_chars <= R.max_chars
    assert [(f.key, f.value) for f in res.facts] == [("home_city", "Roma")]  # no garbage from the run-on


def test_huge_message_rejected_when_asked() -> None:
    with pytest.raises(InvalidInputError, match="at most 100 characters"):
        RuleExtractor(max_chars=100, oversize="reject").extract("x" * 101)


def test_one_megabyte_without_spaces() -> None:
    res = R.extract("a" * 1_000_000)
    assert res.facts == () and res.truncated


def test_mixed_languages() -> None:
    res = R.extract("Ciao! I live in London ma sono nato il 12 luglio 1990. 我叫李四。")
    assert {f.key: f.value for f in res.facts} == {"home_city": "London", "birthday": "1990-07-12",
                                                    "preferred_name": "李四"}
    zh = next(f for f in res.facts if f.key == "preferred_name")
    assert zh.content == "用户叫李四"


@pytest.mark.parametrize("bad", [None, 3, b"abito a Roma", ["Abito a Roma"]])
def test_non_str_message(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="must be a str"):
        R.extract(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kw", [{"max_chars": 0}, {"oversize": "drop"}, {"min_content_words": -1}])
def test_bad_params(kw: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match="must be"):
        RuleExtractor(**kw)  # type: ignore[arg-type]


def test_tone_and_fatigue_signals() -> None:
    assert R.extract("boh, non so").tone is Tone.BRIEF
    assert R.extract("boh, non so").fatigue_signal > R.extract("Abito a Roma da tre anni con la mia famiglia").fatigue_signal
    assert R.extract("Gentile assistente, vorrei sapere come funziona il servizio").tone is Tone.FORMAL
    assert R.extract("ahah che bello, domani vado al mare con gli amici!!").tone is Tone.CASUAL


def test_get_params_is_jsonable() -> None:
    import json

    assert json.loads(json.dumps(R.get_params()))["name"] == "rules"


def test_a_place_named_after_a_comma_is_kept_and_an_origin_is_lasting() -> None:
    from memlab.extraction.rules import durability

    msg = ("This scarf means a lot to me - my aunt knitted it back in my home country, Norway. "
           "She made it for me when I was little, and it keeps me warm.")
    facts = [f.content for f in RuleExtractor().extract(msg).facts]
    assert any(f.endswith("my home country, Norway.") for f in facts), facts
    assert durability("I grew up in Porto.") > durability("Porto is lovely.")


# ------------------------------------------------------------------------------------------------ facts said with a question
@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I'm vegetarian, what should I cook tonight?", "diet", "vegetarian"),
        ("Can you remember that my birthday is April 14th?", "birthday", "--04-14"),
        ("Puoi ricordare che il mio compleanno è il 14 aprile?", "birthday", "--04-14"),
        ("Can you remind my team that my birthday is April 14th?", "birthday", "--04-14"),
        ("Ciao, sono Beatrice, mi aggiungi il latte alla lista della spesa?", "preferred_name", "Beatrice"),
        ("Hi, I'm Gregory, can you help me plan a trip?", "preferred_name", "Gregory"),
        ("你好，我是郑雨晴，帮我查一下明天的天气。", "preferred_name", "郑雨晴"),
        ("I'm thirty-four.", "age", "34"),
    ],
)
def test_a_fact_said_with_a_question_or_an_introduction_is_kept(text: str, key: str, value: str) -> None:
    assert _slots(text).get(key) == value


def test_the_statement_before_a_question_is_a_free_fact_and_the_question_is_not() -> None:
    facts = [f.content for f in R.extract("Sono allergico alle arachidi, cosa posso mangiare?").facts]
    assert facts == ["Sono allergico alle arachidi."]
    assert R.extract("Wow, that is great, how did you do it?").facts == ()


def test_a_request_to_remember_is_not_part_of_the_fact() -> None:
    assert [f.content for f in R.extract("Ricordati che sono allergico alle arachidi.").facts] == [
        "Sono allergico alle arachidi."]


def test_a_fact_in_english_is_written_in_english() -> None:  # "I'm 34." has no English function word but "I'm"
    assert [f.content for f in R.extract("I'm 34.").facts] == ["The user is 34 years old"]
