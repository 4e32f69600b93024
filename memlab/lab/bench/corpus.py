"""A seeded corpus of short first-person facts (Italian and English) for benchmarks."""

from __future__ import annotations

import numpy as np

__all__ = ["fact_corpus"]

_IT = [
    "Mi chiamo {name}", "Abito a {city}", "Lavoro da {org} come {job}", "Sono nato il {day} {month_it} {year}",
    "Il mio colore preferito è il {color_it}", "Ho {n} gatti", "Sono alto {h} cm", "Preferisco il {drink_it}",
    "Mia sorella vive a {city}", "Il mio compleanno è il {day} {month_it}",
]
_EN = [
    "My name is {name}", "I live in {city}", "I work at {org} as a {job}", "I was born on {day} {month_en} {year}",
    "My favourite colour is {color_en}", "I have {n} cats", "I am {h} cm tall", "I prefer {drink_en}",
    "My sister lives in {city}", "My birthday is on {day} {month_en}",
]
_SLOTS = {
    "name": ["Anna", "Marco", "Giulia", "Luca", "Zhang San", "Li Si", "Sofia", "Paolo", "Emma", "Noah"],
    "city": ["Roma", "Milano", "Torino", "Napoli", "Tokyo", "London", "Berlin", "Paris", "Bologna", "Firenze"],
    "org": ["Fiat", "ENI", "Google", "Ferrari", "Barilla", "IBM", "Luxottica", "Intesa", "Siemens", "Airbus"],
    "job": ["ingegnere", "medico", "designer", "insegnante", "analyst", "chef", "pilot", "nurse", "lawyer", "writer"],
    "month_it": ["gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre",
                 "ottobre", "novembre", "dicembre"],
    "month_en": ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                 "November", "December"],
    "color_it": ["rosso", "blu", "verde", "giallo", "nero"],
    "color_en": ["red", "blue", "green", "yellow", "black"],
    "drink_it": ["caffè", "tè", "vino", "succo"],
    "drink_en": ["coffee", "tea", "wine", "juice"],
}


def fact_corpus(n: int, *, seed: int = 0) -> list[str]:
    """``n`` short first-person facts, half Italian half English, deterministic for a seed.

    A numeric suffix-free template fill gives realistic near-duplicates, as in a real memory.
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        tpl = (_IT if i % 2 == 0 else _EN)[int(rng.integers(len(_IT)))]
        fill = {k: v[int(rng.integers(len(v)))] for k, v in _SLOTS.items()}
        fill.update(day=int(rng.integers(1, 29)), year=int(rng.integers(1950, 2010)), n=int(rng.integers(1, 6)),
                    h=int(rng.integers(150, 200)))
        out.append(tpl.format(**fill))
    return out
