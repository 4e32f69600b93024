"""Pattern rules, one by one (Italian, English, Chinese where the rule has Chinese forms)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.entities import extract_entities
from memlab.integrity import RULES, compare_facts, explain_pattern, summarise

T0 = datetime(2026, 1, 10, tzinfo=UTC)


def _facts(text: str) -> object:
    return summarise(text, tuple(extract_entities(text, ref_time=T0)), T0)


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("Sono nato il 12 luglio 1990", "Il mio compleanno è il 15 agosto", "born_vs_birthday"),
        ("我1990年7月12日出生", "我的生日是8月15日", "born_vs_birthday"),
        ("I was born in 1990", "I'm 20 years old", "age_vs_birth_year"),
        ("Ho iniziato il progetto Apollo", "Ho completato il progetto Apollo", "project_status"),
        ("The project Apollo is in progress", "We finished the project Apollo", "project_status"),
        ("Sono single", "Sono sposato", "marital"),
        ("I'm not married", "my wife loves dogs", "marital"),
        ("我单身", "我结婚了", "marital"),
        ("Sono vegetariano", "Mangio carne ogni giorno", "diet"),
        ("I'm vegan", "I had a burger for lunch", "diet"),
        ("L'utente preferisce il tè", "L'utente preferisce il caffè", "exclusive_preference"),
        ("My favourite colour is red", "My favourite colour is blue", "exclusive_preference"),
        ("My favorite show is Friends.", "My favourite TV show is Seinfeld.", "exclusive_preference"),
        ("La mia serie tv preferita è Gomorra.", "La mia serie preferita è Suburra.", "exclusive_preference"),
        ("我最喜欢的电视剧是《甄嬛传》。", "我最爱的剧是《琅琊榜》，看了五遍。", "exclusive_preference"),  # a title is one object
        ("I love dogs", "I hate dogs", "like_vs_dislike"),
        ("Mi piace il calcio", "Non mi piace il calcio", "like_vs_dislike"),
        ("我喜欢猫", "我讨厌猫", "like_vs_dislike"),
        ("性别：女", "我是男生", "gender"),
        ("星座：射手座", "我是天蝎座的", "zodiac"),
        ("性别：女", "我是个大老爷们，不哭", "gender"),
        ("我是男生。", "作为一个女孩子，我很喜欢粉色", "gender"),
        ("Sono una donna.", "Da uomo ti dico che non è facile.", "gender"),
        ("I'm a woman.", "As a guy, I never cared about fashion.", "gender"),
        ("I'm a nurse", "I am a teacher", "occupation"),
        ("I am a student", "I am not a student", "negation"),
    ],
)
def test_rule_fires(old: str, new: str, rule: str) -> None:
    hit = compare_facts(_facts(old), _facts(new))  # type: ignore[arg-type]
    assert hit is not None and hit.rule == rule
    assert 0.8 <= hit.confidence <= 1.0
    assert explain_pattern(hit.rule, hit.old, hit.new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My birthday is 12 July", "Our wedding anniversary is 15 August"),
        ("Mia sorella è nata il 3 maggio", "Il mio compleanno è il 15 agosto"),
        ("I like tea", "I like biscuits"),
        ("我最喜欢的电视剧是《甄嬛传》。", "我最爱的剧是《甄嬛传》，看了五遍。"),
        ("La mia serie preferita è Suburra.", "La mia serie tv preferita è Suburra, la adoro."),
        ("Mi piace il tè", "Mi piacciono i biscotti"),
        ("L'utente preferisce il tè", "L'utente preferisce il tè verde"),
        ("Ho iniziato il progetto Apollo", "Ho completato il progetto Gemini"),
        ("I love dogs", "I love cats"),
        ("I'm a nurse", "I'm also a teacher"),
        ("I am a student", "I am a nurse"),
        ("I was born in 1990", "I'm 35 years old"),
        ("I am a student", "I am a good student"),
        ("性别：女", "我是女生"),
        ("性别：女", "作为一个女生，我也爱看球"),
        ("I'm a woman.", "I see my brother as a man of his word."),  # "as a man" said of another
        ("Sono una donna.", "Ho comprato delle scarpe da uomo per mio marito."),
        ("I'm a man.", "Mom, as a mother, said no."),
    ],
)
def test_rule_does_not_fire(old: str, new: str) -> None:
    assert compare_facts(_facts(old), _facts(new)) is None  # type: ignore[arg-type]


def test_rules_subset() -> None:
    names = [n for n, _ in RULES]
    assert compare_facts(_facts("Sono single"), _facts("Sono sposato"),  # type: ignore[arg-type]
                         rules=tuple(n for n in names if n != "marital")) is None


def test_explanations_cite_both_values_in_both_languages() -> None:
    hit = compare_facts(_facts("Sono nato il 12 luglio 1990"), _facts("Il mio compleanno è il 15 agosto"))  # type: ignore[arg-type]
    assert hit is not None
    it, en = explain_pattern(hit.rule, hit.old, hit.new), explain_pattern(hit.rule, hit.old, hit.new, lang="en")
    assert "12 luglio 1990" in it and "15 agosto" in it
    assert "12 July 1990" in en and "15 August" in en


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("I like tea", "I like biscuits", "different_likes"),
        ("Ho iniziato il progetto Apollo", "Ho completato il progetto Gemini", "different_projects"),
        ("My birthday is 12 July.", "Our wedding anniversary is 15 August.", "different_dates"),
        ("I ran 5 km on Tuesday", "I ran 3 km on Wednesday", "different_events"),
        ("My sister lives in Rome", "I live in Milan", "other_subject"),
        ("Mia sorella è nata il 3 maggio 1992", "Il mio compleanno è il 15 agosto", "other_subject"),
        ("I was born on 12 July 1990", "My date of birth is 12/07/1990", "same_value"),
        ("Sono nato il 12 luglio 1990", "Il mio compleanno è il 12 luglio", "same_value"),
        ("Sono nata a Palermo", "Vivo a Torino", "different_attributes"),
        ("我喜欢紫色", "我也喜欢蓝色", "different_likes"),
        ("I'm vegetarian", "I don't eat meat", "same_diet"),
        ("我吃素", "我不吃肉", "same_diet"),
        ("Mi piace il mare", "Mi piace anche la montagna", "different_likes"),
        ("我出生在哈尔滨", "我现在住在厦门", "different_attributes"),
    ],
)
def test_consistent_reason(old: str, new: str, reason: str) -> None:
    from memlab.integrity import consistent_reason

    assert consistent_reason(_facts(old), _facts(new)) == reason  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Sono alto 180 cm", "Sono alto 175 cm"),
        ("I love dogs", "I don't love dogs"),
        ("L'utente è nato il 12 luglio 1990", "Il compleanno dell'utente è il 15 agosto"),
        ("I like tea. " + "It is a long story about many things that happened " * 3, "I like biscuits"),
    ],
)
def test_not_decided_consistent(old: str, new: str) -> None:
    from memlab.integrity import consistent_reason

    assert consistent_reason(_facts(old), _facts(new)) is None  # type: ignore[arg-type]


def test_a_favourite_in_british_and_american_spelling_is_one_category() -> None:
    hit = compare_facts(_facts("My favorite color is green"), _facts("My favourite colour is red"))  # type: ignore[arg-type]
    assert hit is not None and hit.rule == "exclusive_preference"


@pytest.mark.parametrize(("old", "new"), [
    ("I started my own online clothing store not so long ago.", "I opened an online clothing store and it's been great!"),
    ("Dance is pretty much my go-to for stress relief.", "Dance is just me -- I can't picture life without it."),
    ("I'm so lucky to have such a great support system.", "It was comforting to know I'm not alone."),
    ("Ho aperto un negozio online.", "Non vedo l'ora di aprire il negozio online."),
])
def test_a_not_that_affirms_or_dates_is_no_cue(old: str, new: str) -> None:
    # litotes and time phrases negate no fact: a judge-only verdict on such a pair gets no cue of exclusivity
    from memlab.integrity.patterns import exclusive_cue

    assert exclusive_cue(_facts(old), _facts(new)) is None  # type: ignore[arg-type]
    assert exclusive_cue(_facts("I have a dog named Max."), _facts("I have never had a pet.")) == "negation"  # type: ignore[arg-type]
