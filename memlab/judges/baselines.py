"""Baseline judges that give every eval number context: majority class and lexical rules.

- :class:`MajorityJudge`: always the most frequent label of the labels it was fitted on (a non-test split),
  with the contradiction share of those labels as its probability.
- :class:`LexicalJudge`: negation mismatch, number mismatch and word overlap, in English, Italian and
  Chinese (CJK characters count as words). No training, no model.
"""

from __future__ import annotations

import collections
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from memlab.errors import InvalidInputError
from memlab.judges.hf import check_pairs
from memlab.records import Label, Verdict

__all__ = [
    "LexicalJudge",
    "MajorityJudge",
]


class MajorityJudge:
    """Always predicts the majority label of its fitting data.

    Args:
        label: the label to predict (default ``neutral`` until :meth:`fit` is called).
        probability: contradiction probability reported with every verdict (default: the contradiction
            share of the fitted labels, or 0.0).

    Example:
        >>> j = MajorityJudge().fit(["neutral", "contradiction", "neutral"])
        >>> v = j.judge([("a", "b")])[0]
        >>> v.label.value, round(v.probability, 3)
        ('neutral', 0.333)
    """

    name = "majority"

    def __init__(self, label: Label | str | None = None, *, probability: float | None = None) -> None:
        self.label = Label(label) if label is not None else Label.NEUTRAL
        self.probability = float(probability) if probability is not None else 0.0
        if not 0.0 <= self.probability <= 1.0:
            raise InvalidInputError(
                f"The 'probability' parameter of MajorityJudge must be in [0, 1]. Got {probability!r} instead."
            )
        self.fitted = label is not None
        self.fitted_on: str | None = None

    def fit(self, labels: Iterable[Label | str], *, source: str | None = None) -> MajorityJudge:
        """Set the label to the most frequent one (ties: alphabetical) and the probability to the contradiction share.

        Raises:
            InvalidInputError: no labels.
        """
        counts = collections.Counter(Label(x) for x in labels)
        if not counts:
            raise InvalidInputError(
                "The 'labels' parameter of MajorityJudge.fit must not be empty. Got no labels instead."
            )
        top = max(counts.values())
        self.label = sorted((lab for lab, c in counts.items() if c == top), key=lambda lab: lab.value)[0]
        self.probability = counts[Label.CONTRADICTION] / sum(counts.values())
        self.fitted = True
        self.fitted_on = source
        return self

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """The same verdict for every pair."""
        return [
            Verdict(self.label, self.probability, self.name)
            for _ in check_pairs(pairs, owner="MajorityJudge.judge")
        ]

    def get_params(self) -> dict[str, Any]:
        """Parameters recorded in runs."""
        return {"label": self.label.value, "probability": self.probability, "fitted_on": self.fitted_on}


_NEG_WORDS = {
    # English
    "not",
    "no",
    "never",
    "nobody",
    "nothing",
    "none",
    "neither",
    "nor",
    "without",
    "cannot",
    "nowhere",
    # Italian
    "non",
    "mai",
    "nessuno",
    "nessuna",
    "niente",
    "nulla",
    "né",
    "senza",
    "neanche",
    "nemmeno",
    "neppure",
}
# contractions ("don't", "can't") are counted by their "n't", not by the stem token
_NEG_CONTRACTION = re.compile(r"n't\b|n’t\b", re.IGNORECASE)
_NEG_ZH = re.compile(r"不|没|無|无|未|别|非|莫")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)?", re.UNICODE)
_NUM = re.compile(r"\d+(?:[.,]\d+)?")
_STOP = {
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "of",
    "to",
    "in",
    "on",
    "at",
    "and",
    "or",
    "it",
    "this",
    "that",
    "with",
    "for",
    "as",
    "by",
    "his",
    "her",
    "their",
    "its",
    "s",
    "il",
    "lo",
    "la",
    "i",
    "gli",
    "le",
    "un",
    "uno",
    "una",
    "di",
    "da",
    "del",
    "della",
    "e",
    "è",
    "che",
    "per",
    "con",
    "su",
    "al",
    "alla",
    "nel",
    "nella",
    "mi",
    "si",
    "ha",
    "ho",
    "sono",
    "的",
    "了",
    "是",
    "在",
    "我",
    "你",
    "他",
    "她",
    "吗",
    "呢",
    "啊",
    "吧",
}


def _tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for w in _WORD.findall(text):
        if _CJK.search(w):
            out.extend(ch for ch in w if not ch.isspace())
        else:
            out.append(w)
    return out


def _negations(text: str) -> int:
    toks = _tokens(text)
    n = sum(1 for t in toks if t in _NEG_WORDS)
    n += len(_NEG_CONTRACTION.findall(text))
    n += len(_NEG_ZH.findall(text))
    return n


class LexicalJudge:
    """Negation / number / overlap rules (a lexical baseline, no model).

    The contradiction probability is ``base + w_neg * negation_mismatch * (0.5 + 0.5 * overlap) +
    w_num * number_mismatch``, clipped to [0, 1], where ``overlap`` is the share of the hypothesis' content words
    found in the premise. Labels: contradiction at ``probability >= threshold``; otherwise entailment when
    ``overlap >= entail_overlap``; otherwise neutral.

    Args:
        threshold: probability at which a pair is labelled a contradiction.
        entail_overlap: overlap at which a non-contradiction is labelled entailment.
        base: probability with no cue.
        w_neg: weight of a negation mismatch (one side negated, the other not).
        w_num: weight of a number mismatch (both sides have numbers, none shared).

    Example:
        >>> j = LexicalJudge()
        >>> [v.label.value for v in j.judge([("A man is sleeping.", "A man is not sleeping."),
        ...                                  ("Abito a Roma.", "Non abito a Roma."),
        ...                                  ("我喜欢猫。", "我不喜欢猫。"),
        ...                                  ("A man is sleeping.", "A man is sleeping.")])]
        ['contradiction', 'contradiction', 'contradiction', 'entailment']
    """

    name = "lexical"

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        entail_overlap: float = 0.8,
        base: float = 0.15,
        w_neg: float = 0.6,
        w_num: float = 0.4,
    ) -> None:
        for key, v in {
            "threshold": threshold,
            "entail_overlap": entail_overlap,
            "base": base,
            "w_neg": w_neg,
            "w_num": w_num,
        }.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= float(v) <= 1.0:
                raise InvalidInputError(
                    f"The {key!r} parameter of LexicalJudge must be a float in [0, 1]. Got {v!r} instead."
                )
        self.threshold = float(threshold)
        self.entail_overlap = float(entail_overlap)
        self.base = float(base)
        self.w_neg = float(w_neg)
        self.w_num = float(w_num)

    def features(self, premise: str, hypothesis: str) -> dict[str, float]:
        """The cues of one pair: ``overlap``, ``negation_mismatch``, ``number_mismatch`` (each in [0, 1])."""
        p_tok = [t for t in _tokens(premise) if t not in _STOP]
        h_tok = [t for t in _tokens(hypothesis) if t not in _STOP]
        p_set = set(p_tok)
        overlap = sum(1 for t in h_tok if t in p_set) / len(h_tok) if h_tok else 0.0
        neg = float((_negations(premise) > 0) != (_negations(hypothesis) > 0))
        p_num, h_num = set(_NUM.findall(premise)), set(_NUM.findall(hypothesis))
        num = float(bool(p_num) and bool(h_num) and not (p_num & h_num))
        return {"overlap": overlap, "negation_mismatch": neg, "number_mismatch": num}

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """One verdict per pair, in order.

        Raises:
            InvalidInputError: ``pairs`` is not a sequence of (str, str).
        """
        out = []
        for premise, hypothesis in check_pairs(pairs, owner="LexicalJudge.judge"):
            f = self.features(premise, hypothesis)
            p = (
                self.base
                + self.w_neg * f["negation_mismatch"] * (0.5 + 0.5 * f["overlap"])
                + self.w_num * f["number_mismatch"]
            )
            p = min(1.0, max(0.0, p))
            if p >= self.threshold:
                label = Label.CONTRADICTION
            elif f["overlap"] >= self.entail_overlap:
                label = Label.ENTAILMENT
            else:
                label = Label.NEUTRAL
            out.append(Verdict(label, p, self.name))
        return out

    def get_params(self) -> dict[str, Any]:
        """Parameters recorded in runs."""
        return {
            "threshold": self.threshold,
            "entail_overlap": self.entail_overlap,
            "base": self.base,
            "w_neg": self.w_neg,
            "w_num": self.w_num,
        }
