"""Text metrics for summary, extraction and retrieval tasks: thin wrappers over ragas' NON-LLM metrics.

- :func:`rouge_l`: ragas ``RougeScore(rouge_type="rougeL")`` (the ``rouge_score`` package, Porter stemmer) for
  ASCII text. ``rouge_score``'s tokenizer keeps only ``[a-z0-9]``, so Chinese text scores 0 and Italian words
  lose their accented letters; for non-ASCII text the same ``rouge_score`` LCS scorer runs with a Unicode
  tokenizer instead (words; each CJK character is a token; no stemming).
- :func:`string_similarity`: ragas ``NonLLMStringSimilarity`` (rapidfuzz; Levenshtein, Hamming, Jaro,
  Jaro-Winkler), 1 = identical.
- :func:`context_precision` / :func:`context_recall`: ragas ``NonLLMContextPrecisionWithReference`` /
  ``NonLLMContextRecall`` (a retrieved context matches a reference one at string similarity >= threshold).
- :func:`id_context_precision` / :func:`id_context_recall`: ragas ``IDBasedContextPrecision`` / ``Recall``
  (e.g. retrieved memory sources vs LoCoMo evidence dia_ids).

ragas is imported on first use (it takes seconds to import). Empty inputs return ``zero_division`` with an
:class:`~memlab.errors.UndefinedMetricWarning`, as in :mod:`memlab.eval.metrics`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from memlab.errors import InvalidInputError, MissingDependencyError, UndefinedMetricWarning

__all__ = [
    "context_precision",
    "context_recall",
    "id_context_precision",
    "id_context_recall",
    "rouge_l",
    "string_similarity",
    "unicode_tokens",
]

Measure = Literal["levenshtein", "hamming", "jaro", "jaro_winkler"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"\w+", re.UNICODE)


def unicode_tokens(text: str) -> list[str]:
    """Casefolded word tokens; each CJK character is a token of its own.

    Example:
        >>> unicode_tokens("Città di Roma, 我喜欢猫")
        ['città', 'di', 'roma', '我', '喜', '欢', '猫']
    """
    out: list[str] = []
    for w in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK.search(w):
            buf = ""
            for ch in w:
                if _CJK.match(ch):
                    if buf:
                        out.append(buf)
                        buf = ""
                    out.append(ch)
                else:
                    buf += ch
            if buf:
                out.append(buf)
        else:
            out.append(w)
    return out


class _UnicodeTokenizer:
    """A ``rouge_score`` tokenizer that keeps every script."""

    def tokenize(self, text: str) -> list[str]:
        return unicode_tokens(text)


def _check_str(value: Any, name: str, owner: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be a str. Got {type(value).__name__} instead."
        )
    return value


def _check_list(value: Any, name: str, owner: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be a list of str. Got {type(value).__name__} instead."
        )
    return [_check_str(v, name, owner) for v in value]


def _undefined(what: str, zero_division: float) -> float:
    warnings.warn(
        f"{what} is ill-defined (empty input); returning {zero_division}.",
        UndefinedMetricWarning,
        stacklevel=3,
    )
    return float(zero_division)


@functools.lru_cache(maxsize=1)
def _ragas() -> Any:
    try:
        import ragas.metrics.collections as collections
        from ragas.dataset_schema import SingleTurnSample

        with (
            warnings.catch_warnings()
        ):  # the legacy non-LLM context metrics live in private modules in ragas 0.4
            warnings.simplefilter("ignore", DeprecationWarning)
            from ragas.metrics._context_precision import (
                IDBasedContextPrecision,
                NonLLMContextPrecisionWithReference,
            )
            from ragas.metrics._context_recall import IDBasedContextRecall, NonLLMContextRecall
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("ragas", "eval") from exc
    return {
        "collections": collections,
        "Sample": SingleTurnSample,
        "NonLLMContextPrecision": NonLLMContextPrecisionWithReference,
        "NonLLMContextRecall": NonLLMContextRecall,
        "IDPrecision": IDBasedContextPrecision,
        "IDRecall": IDBasedContextRecall,
    }


@functools.lru_cache(maxsize=4)
def _unicode_rouge(mode: str) -> Any:
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("rouge-score", "eval") from exc
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_UnicodeTokenizer())


def rouge_l(
    reference: str,
    response: str,
    *,
    mode: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    zero_division: float = 0.0,
) -> float:
    """ROUGE-L (longest common subsequence) between a reference and a response, in [0, 1].

    Args:
        reference: the gold text.
        response: the text to score.
        mode: ``fmeasure``, ``precision`` (share of the response in the LCS) or ``recall``.
        zero_division: returned (with a warning) when either text has no token.

    Raises:
        InvalidInputError: a text is not a str, or an unknown mode.

    Example:
        >>> round(rouge_l("The capital of France is Paris.", "Paris is the capital of France."), 3)
        0.667
        >>> rouge_l("我喜欢猫", "我喜欢猫")
        1.0
    """
    reference = _check_str(reference, "reference", "rouge_l")
    response = _check_str(response, "response", "rouge_l")
    if mode not in ("fmeasure", "precision", "recall"):
        raise InvalidInputError(
            f"The 'mode' parameter of rouge_l must be 'fmeasure', 'precision' or 'recall'. Got {mode!r} instead."
        )
    if not unicode_tokens(reference) or not unicode_tokens(response):
        return _undefined("ROUGE-L", zero_division)
    if reference.isascii() and response.isascii():
        metric = _ragas()["collections"].RougeScore(rouge_type="rougeL", mode=mode)
        try:
            return float(metric.score(reference=reference, response=response).value)
        except ImportError as exc:  # pragma: no cover
            raise MissingDependencyError("rouge-score", "eval") from exc
    return float(getattr(_unicode_rouge(mode).score(reference, response)["rougeL"], mode))


def string_similarity(reference: str, response: str, *, measure: Measure = "levenshtein") -> float:
    """Normalised string similarity (1 = identical) with ragas ``NonLLMStringSimilarity`` (rapidfuzz).

    Raises:
        InvalidInputError: a text is not a str, or an unknown measure.

    Example:
        >>> string_similarity("Abito a Roma", "Abito a Roma")
        1.0
        >>> round(string_similarity("città bella", "città bela"), 3)
        0.909
    """
    reference = _check_str(reference, "reference", "string_similarity")
    response = _check_str(response, "response", "string_similarity")
    coll = _ragas()["collections"]
    from ragas.metrics.collections._string import DistanceMeasure

    try:
        dm = DistanceMeasure(measure)
    except ValueError:
        raise InvalidInputError(
            f"The 'measure' parameter of string_similarity must be one of {[m.value for m in DistanceMeasure]}. "
            f"Got {measure!r} instead."
        ) from None
    metric = coll.NonLLMStringSimilarity(distance_measure=dm)
    try:
        return float(metric.score(reference=reference, response=response).value)
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("rapidfuzz", "eval") from exc


def _context_metric(
    kind: str,
    retrieved: Sequence[str],
    reference: Sequence[str],
    threshold: float,
    zero_division: float,
    owner: str,
) -> float:
    retrieved = _check_list(retrieved, "retrieved_contexts", owner)
    reference = _check_list(reference, "reference_contexts", owner)
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInputError(
            f"The 'threshold' parameter of {owner} must be in [0, 1]. Got {threshold!r} instead."
        )
    if not retrieved or not reference:
        return _undefined(owner, zero_division)
    r = _ragas()
    metric = r[kind](threshold=threshold)
    sample = r["Sample"](retrieved_contexts=list(retrieved), reference_contexts=list(reference))
    return float(metric.single_turn_score(sample))


def context_precision(
    retrieved_contexts: Sequence[str],
    reference_contexts: Sequence[str],
    *,
    threshold: float = 0.5,
    zero_division: float = 0.0,
) -> float:
    """Non-LLM context precision (ragas ``NonLLMContextPrecisionWithReference``): rank-weighted share of the
    retrieved contexts that match some reference context (string similarity >= ``threshold``).

    Example:
        >>> round(context_precision(["Abito a Roma", "Mi piace il caffè"], ["Abito a Roma"]), 3)
        1.0
    """
    return _context_metric(
        "NonLLMContextPrecision",
        retrieved_contexts,
        reference_contexts,
        threshold,
        zero_division,
        "context_precision",
    )


def context_recall(
    retrieved_contexts: Sequence[str],
    reference_contexts: Sequence[str],
    *,
    threshold: float = 0.5,
    zero_division: float = 0.0,
) -> float:
    """Non-LLM context recall (ragas ``NonLLMContextRecall``): share of the reference contexts matched by some
    retrieved context (string similarity > ``threshold``).

    Example:
        >>> context_recall(["Abito a Roma"], ["Abito a Roma", "Il mio cane si chiama Fido"])
        0.5
    """
    return _context_metric(
        "NonLLMContextRecall",
        retrieved_contexts,
        reference_contexts,
        threshold,
        zero_division,
        "context_recall",
    )


def _id_metric(
    kind: str, retrieved: Sequence[Any], reference: Sequence[Any], zero_division: float, owner: str
) -> float:
    if (
        isinstance(retrieved, str)
        or isinstance(reference, str)
        or not isinstance(retrieved, Sequence)
        or not isinstance(reference, Sequence)
    ):
        raise InvalidInputError(
            f"The id parameters of {owner} must be lists of ids. Got a string or a non-sequence instead."
        )
    if not retrieved or not reference:
        return _undefined(owner, zero_division)
    r = _ragas()
    sample = r["Sample"](
        retrieved_context_ids=[str(x) for x in retrieved], reference_context_ids=[str(x) for x in reference]
    )
    return float(r[kind]().single_turn_score(sample))


def id_context_precision(
    retrieved_ids: Sequence[Any], reference_ids: Sequence[Any], *, zero_division: float = 0.0
) -> float:
    """Share of the retrieved ids that are reference ids (ragas ``IDBasedContextPrecision``).

    Example:
        >>> id_context_precision(["D1:3", "D2:1"], ["D1:3"])
        0.5
    """
    return _id_metric("IDPrecision", retrieved_ids, reference_ids, zero_division, "id_context_precision")


def id_context_recall(
    retrieved_ids: Sequence[Any], reference_ids: Sequence[Any], *, zero_division: float = 0.0
) -> float:
    """Share of the reference ids that were retrieved (ragas ``IDBasedContextRecall``).

    Example:
        >>> id_context_recall(["D1:3", "D2:1"], ["D1:3", "D5:5"])
        0.5
    """
    return _id_metric("IDRecall", retrieved_ids, reference_ids, zero_division, "id_context_recall")
