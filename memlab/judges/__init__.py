"""Pairwise contradiction judges: "does statement B contradict statement A?", with a calibrated probability.

- ``load_judge("default")``: memlab's own judges, trained offline by ``memlab train-judge`` on permissively
  licensed data and calibrated: a :class:`LanguageRoutedJudge` that sends English pairs to the ``english``
  :class:`DefaultJudge` (MiniLM-L6, ``weights/default/``) and every other pair to the ``multilingual`` one
  (multilingual-e5-small, ``weights/multilingual/``); each folder has its card.
- ``load_judge("ensemble")``: as ``default``, but English pairs get the mean of both judges' calibrated
  probabilities (:class:`AveragedJudge`): more accurate on every English dev set, about 4x slower.
- :class:`HFJudge` (``load_judge("hf:<model id or path>")``): any Hugging Face NLI sequence classifier.
- :class:`LLMJudge` (``load_judge("llm", llm=...)``): an LLM with a structured answer.
- ``majority`` / ``lexical``: baselines (:mod:`memlab.judges.baselines`).

Example:
    >>> from memlab.judges import load_judge
    >>> load_judge("default").name
    'default'
"""

from __future__ import annotations

from memlab.judges.default import DEFAULT_WEIGHTS, MULTILINGUAL_WEIGHTS, DefaultJudge, read_judge_meta
from memlab.judges.ensemble import ENSEMBLE_THRESHOLD, AveragedJudge
from memlab.judges.hf import HFJudge, check_pairs, label_from_name
from memlab.judges.llm import LLMJudge, LLMVerdict
from memlab.judges.registry import available_judges, load_judge, register_judge, resolve_judge
from memlab.judges.routed import LanguageRoutedJudge

__all__ = [
    "DEFAULT_WEIGHTS",
    "ENSEMBLE_THRESHOLD",
    "AveragedJudge",
    "DefaultJudge",
    "HFJudge",
    "LLMJudge",
    "LLMVerdict",
    "LanguageRoutedJudge",
    "MULTILINGUAL_WEIGHTS",
    "available_judges",
    "check_pairs",
    "label_from_name",
    "load_judge",
    "read_judge_meta",
    "register_judge",
    "resolve_judge",
]
