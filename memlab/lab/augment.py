"""Seeded synthetic persona pairs (English, Italian, Chinese) that teach the judge attribute contradictions.

Real NLI data (SNLI captions, spoken dialogue) rarely contains the kind of pair a personal memory store sees:
"I was born on 12 July 1990" vs "My birthday is on 15 August". This module renders persona attributes through
templates, in English and Italian (first and third person) and Chinese (:mod:`memlab.lab.augment_zh`: also key/value
lines such as "星座：射手座" and other people's attributes), and labels pairs by construction:

- same attribute, same value (any template of that attribute) -> ``entailment``;
- same attribute, different value -> ``contradiction``;
- different attribute that shares the value *type* (birthday vs wedding anniversary, my height vs my son's
  height, "ran 5 km on Tuesday" vs "ran 3 km on Wednesday") -> ``neutral``;
- a statement and its negation ("I am married" / "I am not married") -> ``contradiction``.

The generator is deterministic for a seed. Its output is used for training only, never for evaluation.

Example:
    >>> pairs = generate_pairs(6, seed=0)
    >>> len(pairs), pairs == generate_pairs(6, seed=0)
    (6, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.errors import InvalidInputError
from memlab.lab import augment_zh
from memlab.records import Label

__all__ = ["LANGUAGES", "SyntheticPair", "generate_pairs"]

LANGUAGES = ("en", "it", "zh")
"""Languages the templates cover."""


@dataclass(frozen=True, slots=True)
class SyntheticPair:
    """One generated pair.

    Attributes:
        premise: the earlier statement.
        hypothesis: the later statement, judged against ``premise``.
        label: ``contradiction``, ``entailment`` or ``neutral``.
        attribute: generating attribute (``birthday``, ``city`` ...), for analysis.
        language: ``en``, ``it`` or ``zh``.
    """

    premise: str
    hypothesis: str
    label: Label
    attribute: str
    language: str


_MONTHS = {
    "en": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "it": [
        "gennaio",
        "febbraio",
        "marzo",
        "aprile",
        "maggio",
        "giugno",
        "luglio",
        "agosto",
        "settembre",
        "ottobre",
        "novembre",
        "dicembre",
    ],
}
_NAMES = [
    "Marco",
    "Giulia",
    "Luca",
    "Sofia",
    "Anna",
    "Paolo",
    "Francesca",
    "Matteo",
    "Chiara",
    "Davide",
    "Elena",
    "John",
    "Mary",
    "Peter",
    "Laura",
    "David",
    "Sarah",
    "Tom",
    "Emma",
    "James",
    "Alice",
    "Robert",
    "Olivia",
]
_CITIES = [
    "Rome",
    "Milan",
    "Naples",
    "Turin",
    "Florence",
    "Bologna",
    "Venice",
    "Genoa",
    "Palermo",
    "London",
    "Paris",
    "Berlin",
    "Madrid",
    "Boston",
    "Chicago",
    "Toronto",
    "Sydney",
    "Vienna",
    "Lisbon",
    "Dublin",
]
_CITIES_IT = {
    "Rome": "Roma",
    "Milan": "Milano",
    "Naples": "Napoli",
    "Turin": "Torino",
    "Florence": "Firenze",
    "Venice": "Venezia",
    "Genoa": "Genova",
    "London": "Londra",
    "Paris": "Parigi",
    "Berlin": "Berlino",
    "Lisbon": "Lisbona",
    "Vienna": "Vienna",
    "Madrid": "Madrid",
    "Dublin": "Dublino",
}
_JOBS = [
    ("teacher", "insegnante"),
    ("doctor", "medico"),
    ("nurse", "infermiere"),
    ("lawyer", "avvocato"),
    ("engineer", "ingegnere"),
    ("architect", "architetto"),
    ("chef", "cuoco"),
    ("accountant", "commercialista"),
    ("pharmacist", "farmacista"),
    ("journalist", "giornalista"),
    ("plumber", "idraulico"),
    ("software developer", "programmatore"),
    ("dentist", "dentista"),
    ("police officer", "poliziotto"),
]
_COLOURS = [
    ("blue", "blu"),
    ("red", "rosso"),
    ("green", "verde"),
    ("yellow", "giallo"),
    ("black", "nero"),
    ("purple", "viola"),
    ("orange", "arancione"),
    ("white", "bianco"),
]
_FOODS = [
    ("pizza", "la pizza"),
    ("sushi", "il sushi"),
    ("pasta", "la pasta"),
    ("chocolate", "il cioccolato"),
    ("coffee", "il caffè"),
    ("tea", "il tè"),
    ("fish", "il pesce"),
    ("cheese", "il formaggio"),
]
_SPORTS = [
    ("football", "il calcio"),
    ("tennis", "il tennis"),
    ("swimming", "il nuoto"),
    ("running", "la corsa"),
    ("cycling", "il ciclismo"),
    ("basketball", "il basket"),
    ("skiing", "lo sci"),
]
_WEEKDAYS = [
    ("Monday", "lunedì"),
    ("Tuesday", "martedì"),
    ("Wednesday", "mercoledì"),
    ("Thursday", "giovedì"),
    ("Friday", "venerdì"),
    ("Saturday", "sabato"),
    ("Sunday", "domenica"),
]
_PETS = [
    ("dogs", "cani"),
    ("cats", "gatti"),
    ("children", "figli"),
    ("brothers", "fratelli"),
    ("sisters", "sorelle"),
]


def _date(rng: random.Random) -> tuple[int, int, int]:
    return rng.randint(1, 28), rng.randint(1, 12), rng.randint(1950, 2005)


def _other_date(rng: random.Random, d: tuple[int, int, int]) -> tuple[int, int, int]:
    while True:
        e = (rng.randint(1, 28), rng.randint(1, 12), d[2] if rng.random() < 0.5 else rng.randint(1950, 2005))
        if (e[0], e[1]) != (d[0], d[1]):
            return e


def _fmt_date(d: tuple[int, int, int], lang: str, rng: random.Random, *, year: bool) -> str:
    day, month, yr = d
    name = _MONTHS[lang][month - 1]
    if lang == "en":
        s = f"{name} {day}" if rng.random() < 0.3 else f"{day} {name}"
        if year:
            s = f"{s}, {yr}" if s.startswith(name) else f"{s} {yr}"
        return s
    return f"{day} {name} {yr}" if year else f"{day} {name}"


# An attribute: value sampler, a "different value" sampler, and per-language renderers.
# Each renderer takes (value, rng) and returns a sentence. Renderers of one attribute all state the SAME fact.
Render = Callable[[object, random.Random], str]


@dataclass(frozen=True, slots=True)
class _Attr:
    name: str
    family: (
        str  # attributes of one family share a value type; a cross-attribute pair of one family is neutral
    )
    sample: Callable[[random.Random], object]
    differ: Callable[[random.Random, object], object]
    render: dict[str, Sequence[Render]]


def _pick_other(pool: Sequence[object]) -> Callable[[random.Random, object], object]:
    def differ(rng: random.Random, v: object) -> object:
        return rng.choice([p for p in pool if p != v])

    return differ


def _num_other(lo: int, hi: int, gap: int) -> Callable[[random.Random, object], object]:
    def differ(rng: random.Random, v: object) -> object:
        choices = [x for x in range(lo, hi + 1) if abs(x - int(v)) >= gap]  # type: ignore[call-overload]
        return rng.choice(choices)

    return differ


def _en_it(en: Sequence[Render], it: Sequence[Render]) -> dict[str, Sequence[Render]]:
    return {"en": en, "it": it}


def _d(lang: str, year: bool | None = None) -> Callable[[object, random.Random], str]:
    def f(v: object, rng: random.Random) -> str:
        y = rng.random() < 0.5 if year is None else year
        return _fmt_date(v, lang, rng, year=y)  # type: ignore[arg-type]

    return f


_ATTRS: list[_Attr] = [
    _Attr(
        "birthday",
        "date",
        _date,
        _other_date,
        _en_it(
            [
                lambda v, r: f"I was born on {_d('en', True)(v, r)}.",
                lambda v, r: f"My birthday is on {_d('en', False)(v, r)}.",
                lambda v, r: f"My birthday is {_d('en', False)(v, r)}.",
                lambda v, r: f"The user was born on {_d('en')(v, r)}.",
                lambda v, r: f"The user's birthday is on {_d('en', False)(v, r)}.",
                lambda v, r: f"I celebrate my birthday on {_d('en', False)(v, r)}.",
            ],
            [
                lambda v, r: f"Sono nato il {_d('it', True)(v, r)}.",
                lambda v, r: f"Sono nata il {_d('it')(v, r)}.",
                lambda v, r: f"Il mio compleanno è il {_d('it', False)(v, r)}.",
                lambda v, r: f"L'utente è nato il {_d('it')(v, r)}.",
                lambda v, r: f"Il compleanno dell'utente è il {_d('it', False)(v, r)}.",
                lambda v, r: f"Festeggio il compleanno il {_d('it', False)(v, r)}.",
            ],
        ),
    ),
    _Attr(
        "anniversary",
        "date",
        _date,
        _other_date,
        _en_it(
            [
                lambda v, r: f"Our wedding anniversary is {_d('en', False)(v, r)}.",
                lambda v, r: f"I got married on {_d('en', True)(v, r)}.",
                lambda v, r: f"The user's wedding anniversary is on {_d('en', False)(v, r)}.",
            ],
            [
                lambda v, r: f"Il nostro anniversario di matrimonio è il {_d('it', False)(v, r)}.",
                lambda v, r: f"Mi sono sposato il {_d('it', True)(v, r)}.",
                lambda v, r: f"L'anniversario di matrimonio dell'utente è il {_d('it', False)(v, r)}.",
            ],
        ),
    ),
    _Attr(
        "job_start",
        "date",
        _date,
        _other_date,
        _en_it(
            [
                lambda v, r: f"I started my new job on {_d('en')(v, r)}.",
                lambda v, r: f"My first day at work was {_d('en')(v, r)}.",
            ],
            [
                lambda v, r: f"Ho iniziato il nuovo lavoro il {_d('it')(v, r)}.",
                lambda v, r: f"Il mio primo giorno di lavoro è stato il {_d('it')(v, r)}.",
            ],
        ),
    ),
    _Attr(
        "appointment",
        "date",
        _date,
        _other_date,
        _en_it(
            [
                lambda v, r: f"My dentist appointment is on {_d('en', False)(v, r)}.",
                lambda v, r: f"I have to see the dentist on {_d('en', False)(v, r)}.",
            ],
            [
                lambda v, r: f"L'appuntamento dal dentista è il {_d('it', False)(v, r)}.",
                lambda v, r: f"Devo andare dal dentista il {_d('it', False)(v, r)}.",
            ],
        ),
    ),
    _Attr(
        "name",
        "person",
        lambda r: r.choice(_NAMES),
        _pick_other(_NAMES),
        _en_it(
            [
                lambda v, r: f"My name is {v}.",
                lambda v, r: f"I'm {v}.",
                lambda v, r: f"Call me {v}.",
                lambda v, r: f"The user's name is {v}.",
                lambda v, r: f"The user is called {v}.",
            ],
            [
                lambda v, r: f"Mi chiamo {v}.",
                lambda v, r: f"Il mio nome è {v}.",
                lambda v, r: f"Sono {v}.",
                lambda v, r: f"L'utente si chiama {v}.",
                lambda v, r: f"Il nome dell'utente è {v}.",
            ],
        ),
    ),
    _Attr(
        "sister_name",
        "person",
        lambda r: r.choice(_NAMES),
        _pick_other(_NAMES),
        _en_it(
            [lambda v, r: f"My sister is called {v}.", lambda v, r: f"My sister's name is {v}."],
            [lambda v, r: f"Mia sorella si chiama {v}.", lambda v, r: f"Il nome di mia sorella è {v}."],
        ),
    ),
    _Attr(
        "dog_name",
        "person",
        lambda r: r.choice(_NAMES),
        _pick_other(_NAMES),
        _en_it(
            [lambda v, r: f"My dog is called {v}.", lambda v, r: f"I named my dog {v}."],
            [lambda v, r: f"Il mio cane si chiama {v}.", lambda v, r: f"Ho chiamato il mio cane {v}."],
        ),
    ),
    _Attr(
        "city",
        "place",
        lambda r: r.choice(_CITIES),
        _pick_other(_CITIES),
        _en_it(
            [
                lambda v, r: f"I live in {v}.",
                lambda v, r: f"I'm living in {v} now.",
                lambda v, r: f"My home is in {v}.",
                lambda v, r: f"The user lives in {v}.",
            ],
            [
                lambda v, r: f"Abito a {_CITIES_IT.get(str(v), v)}.",
                lambda v, r: f"Vivo a {_CITIES_IT.get(str(v), v)}.",
                lambda v, r: f"La mia casa è a {_CITIES_IT.get(str(v), v)}.",
                lambda v, r: f"L'utente vive a {_CITIES_IT.get(str(v), v)}.",
            ],
        ),
    ),
    _Attr(
        "birthplace",
        "place",
        lambda r: r.choice(_CITIES),
        _pick_other(_CITIES),
        _en_it(
            [lambda v, r: f"I was born in {v}.", lambda v, r: f"My hometown is {v}."],
            [
                lambda v, r: f"Sono nato a {_CITIES_IT.get(str(v), v)}.",
                lambda v, r: f"La mia città natale è {_CITIES_IT.get(str(v), v)}.",
            ],
        ),
    ),
    _Attr(
        "holiday",
        "place",
        lambda r: r.choice(_CITIES),
        _pick_other(_CITIES),
        _en_it(
            [
                lambda v, r: f"Last summer I went on holiday to {v}.",
                lambda v, r: f"Last summer I spent my holidays in {v}.",
            ],
            [
                lambda v, r: f"L'estate scorsa sono andato in vacanza a {_CITIES_IT.get(str(v), v)}.",
                lambda v, r: f"L'estate scorsa ho passato le vacanze a {_CITIES_IT.get(str(v), v)}.",
            ],
        ),
    ),
    _Attr(
        "job",
        "job",
        lambda r: r.choice(_JOBS),
        _pick_other(_JOBS),
        _en_it(
            [
                lambda v, r: f"I work as a {v[0]}.",
                lambda v, r: f"I'm a {v[0]}.",  # type: ignore[index]
                lambda v, r: f"My job: {v[0]}.",
                lambda v, r: f"The user works as a {v[0]}.",
            ],  # type: ignore[index]
            [
                lambda v, r: f"Lavoro come {v[1]}.",
                lambda v, r: (
                    f"Di mestiere faccio l'{v[1]}."  # type: ignore[index]
                    if str(v[1])[0] in "aeiou"
                    else f"Di mestiere faccio il {v[1]}."
                ),  # type: ignore[index]
                lambda v, r: f"L'utente lavora come {v[1]}.",
            ],  # type: ignore[index]
        ),
    ),
    _Attr(
        "brother_job",
        "job",
        lambda r: r.choice(_JOBS),
        _pick_other(_JOBS),
        _en_it(
            [lambda v, r: f"My brother is a {v[0]}.", lambda v, r: f"My brother works as a {v[0]}."],  # type: ignore[index]
            [lambda v, r: f"Mio fratello lavora come {v[1]}."],  # type: ignore[index]
        ),
    ),
    _Attr(
        "height",
        "height",
        lambda r: r.randint(150, 200),
        _num_other(150, 200, 4),
        _en_it(
            [
                lambda v, r: f"I am {v} cm tall.",
                lambda v, r: f"My height is {v} cm.",
                lambda v, r: f"The user is {v} cm tall.",
            ],
            [
                lambda v, r: f"Sono alto {v} cm.",
                lambda v, r: f"La mia altezza è {v} cm.",
                lambda v, r: f"L'utente è alto {v} cm.",
            ],
        ),
    ),
    _Attr(
        "son_height",
        "height",
        lambda r: r.randint(150, 200),
        _num_other(150, 200, 4),
        _en_it(
            [lambda v, r: f"My son is {v} cm tall."],
            [lambda v, r: f"Mio figlio è alto {v} cm."],
        ),
    ),
    _Attr(
        "age",
        "age",
        lambda r: r.randint(18, 80),
        _num_other(18, 80, 2),
        _en_it(
            [
                lambda v, r: f"I am {v} years old.",
                lambda v, r: f"I'm {v}.",
                lambda v, r: f"The user is {v} years old.",
            ],
            [lambda v, r: f"Ho {v} anni.", lambda v, r: f"L'utente ha {v} anni."],
        ),
    ),
    _Attr(
        "daughter_age",
        "age",
        lambda r: r.randint(18, 80),
        _num_other(18, 80, 2),
        _en_it(
            [lambda v, r: f"My daughter is {v} years old.", lambda v, r: f"My daughter is {v}."],
            [lambda v, r: f"Mia figlia ha {v} anni.", lambda v, r: f"La mia bambina ha {v} anni."],
        ),
    ),
    _Attr(
        "colour",
        "colour",
        lambda r: r.choice(_COLOURS),
        _pick_other(_COLOURS),
        _en_it(
            [
                lambda v, r: f"My favourite colour is {v[0]}.",
                lambda v, r: f"I like {v[0]} more than any other colour.",
            ],  # type: ignore[index]
            [
                lambda v, r: f"Il mio colore preferito è il {v[1]}.",  # type: ignore[index]
                lambda v, r: f"Il colore che preferisco è il {v[1]}.",
            ],  # type: ignore[index]
        ),
    ),
    _Attr(
        "car_colour",
        "colour",
        lambda r: r.choice(_COLOURS),
        _pick_other(_COLOURS),
        _en_it(
            [lambda v, r: f"My car is {v[0]}."],  # type: ignore[index]
            [lambda v, r: f"La mia macchina è di colore {v[1]}."],  # type: ignore[index]
        ),
    ),
    _Attr(
        "food",
        "food",
        lambda r: r.choice(_FOODS),
        _pick_other(_FOODS),
        _en_it(
            [
                lambda v, r: f"My favourite food is {v[0]}.",
                lambda v, r: f"I like {v[0]} more than anything else.",
            ],  # type: ignore[index]
            [
                lambda v, r: f"Il mio cibo preferito è {v[1]}.",  # type: ignore[index]
                lambda v, r: f"Più di tutto mi piace {v[1]}.",
            ],  # type: ignore[index]
        ),
    ),
    _Attr(
        "sport",
        "sport",
        lambda r: r.choice(_SPORTS),
        _pick_other(_SPORTS),
        _en_it(
            [lambda v, r: f"My favourite sport is {v[0]}.", lambda v, r: f"The sport I love most is {v[0]}."],  # type: ignore[index]
            [
                lambda v, r: f"Il mio sport preferito è {v[1]}.",  # type: ignore[index]
                lambda v, r: f"Lo sport che amo di più è {v[1]}.",
            ],  # type: ignore[index]
        ),
    ),
    _Attr(
        "count",
        "count",
        lambda r: (r.randint(1, 4), r.choice(_PETS)),
        lambda r, v: (r.choice([n for n in range(1, 5) if n != v[0]]), v[1]),  # type: ignore[index]
        _en_it(
            [lambda v, r: f"I have {v[0]} {v[1][0]}.", lambda v, r: f"The user has {v[0]} {v[1][0]}."],  # type: ignore[index]
            [lambda v, r: f"Ho {v[0]} {v[1][1]}.", lambda v, r: f"L'utente ha {v[0]} {v[1][1]}."],  # type: ignore[index]
        ),
    ),
]

# events of different days are neutral even with different numbers ("ran 5 km Tuesday" vs "ran 3 km Wednesday")
_EVENT = {
    "en": [lambda km, day: f"I ran {km} km on {day[0]}.", lambda km, day: f"On {day[0]} I walked {km} km."],
    "it": [
        lambda km, day: (
            f"Martedì ho corso {km} km."
            if day[1] == "martedì"
            else f"{day[1].capitalize()} ho corso {km} km."
        ),
        lambda km, day: f"{day[1].capitalize()} ho camminato per {km} km.",
    ],
}

# (positive, negative) statement pairs: a statement and its negation contradict
_NEGATIONS = {
    "en": [
        ("I am married.", "I am not married."),
        ("I have a car.", "I don't have a car."),
        ("I smoke.", "I don't smoke."),
        ("I like {f}.", "I don't like {f}."),
        ("I love {f}.", "I hate {f}."),
        ("I eat meat.", "I am vegetarian."),
        ("I have children.", "I don't have any children."),
        ("I drink alcohol.", "I never drink alcohol."),
        ("I can drive.", "I can't drive."),
        ("I practise {s} every week.", "I have never practised {s}."),
        ("The user is married.", "The user is single."),
        ("I finished the project.", "The project is not finished yet."),
        ("I am allergic to {f}.", "I am not allergic to {f}."),
    ],
    "it": [
        ("Sono sposato.", "Non sono sposato."),
        ("Ho la macchina.", "Non ho la macchina."),
        ("Fumo.", "Non fumo."),
        ("Mi piace {f}.", "Non mi piace {f}."),
        ("Adoro {f}.", "Odio {f}."),
        ("Mangio carne.", "Sono vegetariano."),
        ("Ho dei figli.", "Non ho figli."),
        ("Bevo alcolici.", "Non bevo mai alcolici."),
        ("So guidare.", "Non so guidare."),
        ("Pratico {s}.", "Non ho mai praticato {s}."),
        ("L'utente è sposato.", "L'utente è single."),
        ("Ho finito il progetto.", "Il progetto non è ancora finito."),
        ("Sono allergico a {f}.", "Non sono allergico a {f}."),
    ],
}


# conversational wrappers (chit-chat style, as in persona dialogue): they add no claim, so the label is unchanged
_OPENERS = {
    "en": ["Yes,", "Oh,", "Haha,", "Well,", "Honestly,", "That's cool!", "Nice to meet you!", "Sure.", "Hmm,",
           "Oh really?", "I see.", "Same here!", "No way!"],
    "it": ["Sì,", "Beh,", "Ah,", "Haha,", "Guarda,", "Che bello!", "Piacere!", "Certo.", "Mah,", "Davvero?",
           "Capisco.", "Anch'io!"],
}
_CLOSERS = {
    "en": ["What about you?", "Do you have any hobbies?", "What do you do for a living?", "How about you?",
           "Do you like music?", "Where are you from?", "Have you ever been there?", "It's great.",
           "I love it.", "What's your favorite food?", "lol"],
    "it": ["E tu?", "Hai qualche hobby?", "Che lavoro fai?", "Tu di dove sei?", "Ti piace la musica?",
           "Ci sei mai stato?", "È fantastico.", "Mi piace molto.", "Qual è il tuo piatto preferito?"],
}


def _chitchat(text: str, lang: str, rng: random.Random) -> str:
    """Wrap a statement as a dialogue turn: an opener, the statement (sometimes lower-cased), a question."""
    out = text
    if rng.random() < 0.6:
        opener = rng.choice(_OPENERS[lang])
        body = text[0].lower() + text[1:] if opener.endswith(",") and not text.startswith("I ") else text
        out = f"{opener} {body}"
    if rng.random() < 0.7:
        out = f"{out} {rng.choice(_CLOSERS[lang])}"
    return out if rng.random() < 0.8 else out.lower()


def _render(attr: _Attr, value: object, lang: str, rng: random.Random) -> str:
    return rng.choice(list(attr.render[lang]))(value, rng)


def _one(rng: random.Random, lang: str) -> SyntheticPair:
    kind = rng.random()
    if kind < 0.08:  # negation
        pos, neg = rng.choice(_NEGATIONS[lang])
        i = 0 if lang == "en" else 1
        fill = {"f": rng.choice(_FOODS)[i], "s": rng.choice(_SPORTS)[i]}
        pos, neg = pos.format(**fill), neg.format(**fill)
        if rng.random() < 0.5:
            pos, neg = neg, pos
        return SyntheticPair(pos, neg, Label.CONTRADICTION, "negation", lang)
    if kind < 0.12:  # different events on different days: neutral even with different numbers
        d1, d2 = rng.sample(_WEEKDAYS, 2)
        k1, k2 = rng.sample(range(2, 21), 2)
        t1, t2 = rng.choice(_EVENT[lang]), rng.choice(_EVENT[lang])
        return SyntheticPair(t1(k1, d1), t2(k2, d2), Label.NEUTRAL, "event", lang)
    attr = rng.choice(_ATTRS)
    value = attr.sample(rng)
    premise = _render(attr, value, lang, rng)
    roll = rng.random()
    if roll < 1 / 3:
        return SyntheticPair(premise, _render(attr, value, lang, rng), Label.ENTAILMENT, attr.name, lang)
    if roll < 2 / 3:
        other = attr.differ(rng, value)
        return SyntheticPair(premise, _render(attr, other, lang, rng), Label.CONTRADICTION, attr.name, lang)
    # neutral: another attribute of the same family (same value type) when there is one, else any attribute
    same_family = [a for a in _ATTRS if a.family == attr.family and a.name != attr.name]
    other_attr = (
        rng.choice(same_family)
        if same_family and rng.random() < 0.8
        else rng.choice([a for a in _ATTRS if a.name != attr.name])
    )
    other_value = (
        attr.differ(rng, value)
        if other_attr.family == attr.family and rng.random() < 0.6
        else (other_attr.sample(rng))
    )
    return SyntheticPair(premise, _render(other_attr, other_value, lang, rng), Label.NEUTRAL, attr.name, lang)


def generate_pairs(
    n: int, *, seed: int = 0, languages: Sequence[str] = LANGUAGES, chitchat: float = 0.0
) -> list[SyntheticPair]:
    """Generate ``n`` labelled persona pairs, deterministically for a seed.

    Args:
        n: number of pairs (>= 0).
        seed: seed of the private ``random.Random`` generator (global random state is untouched).
        languages: any of :data:`LANGUAGES`; languages alternate uniformly at random.
        chitchat: share of pairs whose two sides are wrapped as chit-chat turns (an opener such as "Haha," and
            a closing question such as "What about you?", sometimes lower-cased), as persona dialogue turns are;
            the wrappers add no claim, so the label is kept. ``0`` (default) draws exactly the pairs of earlier
            versions for a seed.

    Returns:
        ``n`` :class:`SyntheticPair` objects (about one third per label, a few negation and event pairs).

    Raises:
        InvalidInputError: ``n`` negative or an unknown language.

    Example:
        >>> [p.label.value for p in generate_pairs(3, seed=1)] == [p.label.value for p in generate_pairs(3, seed=1)]
        True
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidInputError(
            f"The 'n' parameter of generate_pairs must be an int >= 0. Got {n!r} instead."
        )
    langs = list(languages)
    bad = [lang for lang in langs if lang not in LANGUAGES]
    if not langs or bad:
        raise InvalidInputError(
            f"The 'languages' parameter of generate_pairs must be a non-empty subset of {LANGUAGES}. "
            f"Got {languages!r} instead."
        )
    if isinstance(chitchat, bool) or not isinstance(chitchat, int | float) or not 0 <= chitchat <= 1:
        raise InvalidInputError(
            f"The 'chitchat' parameter of generate_pairs must be a float in [0, 1]. Got {chitchat!r} instead."
        )
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        lang = rng.choice(langs)
        if lang == "zh":
            premise, hypothesis, label, attribute = augment_zh.one_pair(rng)
            pair = SyntheticPair(premise, hypothesis, label, attribute, lang)
        else:
            pair = _one(rng, lang)
        if chitchat and rng.random() < chitchat:
            sides = [augment_zh.wrap(t, rng) if lang == "zh" else _chitchat(t, lang, rng)
                     for t in (pair.premise, pair.hypothesis)]
            pair = SyntheticPair(sides[0], sides[1], pair.label, pair.attribute, pair.language)
        out.append(pair)
    return out
