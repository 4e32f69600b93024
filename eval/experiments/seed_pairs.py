"""The seed acceptance pairs in Italian, English and Chinese: P(contradiction) of the routed default judge.

    python eval/experiments/seed_pairs.py [ENGLISH_DIR MULTILINGUAL_DIR]

Same date, different attribute (birthday vs wedding anniversary) must stay below 0.5; birth date vs a different
birthday must reach 0.8. Prints one line per pair with the judge that answered.
"""

from __future__ import annotations

import sys

from memlab.judges import DefaultJudge, LanguageRoutedJudge, load_judge

PAIRS = [
    # (language, kind, premise, hypothesis)
    ("it", "contradiction", "L'utente è nato il 12 luglio 1990.", "Il compleanno dell'utente è il 15 agosto."),
    ("it", "contradiction", "Sono nato il 12 luglio 1990.", "Il mio compleanno è il 15 agosto."),
    ("it", "different attribute", "Il mio compleanno è il 12 luglio.", "Il nostro anniversario di matrimonio è il 15 agosto."),
    ("en", "contradiction", "I was born on 12 July 1990.", "My birthday is on 15 August."),
    ("en", "different attribute", "My birthday is 12 July.", "Our wedding anniversary is 15 August."),
    ("zh", "contradiction", "我出生于1990年7月12日。", "我的生日是8月15日。"),
    ("zh", "different attribute", "我的生日是7月12日。", "我们的结婚纪念日是8月15日。"),
]


def main() -> None:
    if len(sys.argv) == 3:
        judge = LanguageRoutedJudge(DefaultJudge(sys.argv[1]), DefaultJudge(sys.argv[2]))
    else:
        judge = load_judge("default")
    verdicts = judge.judge([(p, h) for _, _, p, h in PAIRS])
    routes = judge.route([(p, h) for _, _, p, h in PAIRS])
    for (lang, kind, p, h), v, multi in zip(PAIRS, verdicts, routes, strict=True):
        want = ">= 0.8" if kind == "contradiction" else "< 0.5"
        ok = v.probability >= 0.8 if kind == "contradiction" else v.probability < 0.5
        who = "multilingual" if multi else "english"
        print(f"{lang} {kind:20s} P={v.probability:.3f} (want {want}) {'ok' if ok else 'MISS'} [{who}]  {p} / {h}")


if __name__ == "__main__":
    main()
