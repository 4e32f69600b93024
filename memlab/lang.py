"""Language detection for routing (thresholds, extractors, prompt language), over ``lingua-language-detector``.

The detector is restricted to a small set of languages (Italian, English, Chinese, and the other large European
languages a user may mix in), which makes it faster and more accurate on short texts than an all-language
model. It is built lazily on first use (one per language set, shared by the process) and is thread-safe.

Short-text rules: text with no letters (numbers, emoji, punctuation) gives ``None``; text containing Han
characters and no Latin letters is ``"zh"`` without asking the model (lingua is unreliable on 1-2 Han
characters); otherwise lingua decides, and ``None`` is returned when it is not confident (the two best
languages are closer than ``min_relative_distance``).

Example:
    >>> from memlab.lang import detect_language
    >>> detect_language("L'utente è nato il 12 luglio 1990")
    'it'
    >>> detect_language("The user was born on 12 July 1990")
    'en'
    >>> detect_language("我住在上海")
    'zh'
    >>> detect_language("12345 !!") is None
    True
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from memlab.errors import InvalidInputError, MissingDependencyError

__all__ = ["DEFAULT_LANGUAGES", "detect_language", "detect_languages"]

#: ISO 639-1 codes the default detector chooses among.
DEFAULT_LANGUAGES: tuple[str, ...] = ("it", "en", "zh", "fr", "de", "es", "pt")

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]")
_LOCK = threading.Lock()


def _has_letters(text: str) -> bool:
    return any(unicodedata.category(ch).startswith("L") for ch in text)


@lru_cache(maxsize=8)
def _detector(languages: tuple[str, ...], min_relative_distance: float) -> Any:
    try:
        from lingua import IsoCode639_1, LanguageDetectorBuilder
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingDependencyError("lingua-language-detector", "core") from exc
    codes = []
    for code in languages:
        iso = getattr(IsoCode639_1, code.upper(), None)
        if iso is None:
            raise InvalidInputError(f"The 'languages' parameter of detect_language must hold ISO 639-1 codes known "
                                    f"to lingua. Got {code!r} instead.")
        codes.append(iso)
    if len(codes) < 2:
        raise InvalidInputError(
            f"The 'languages' parameter of detect_language must hold at least 2 codes. Got {list(languages)} instead.")
    builder = LanguageDetectorBuilder.from_iso_codes_639_1(*codes)
    if min_relative_distance > 0:
        builder = builder.with_minimum_relative_distance(min_relative_distance)
    return builder.build()


def _norm_langs(languages: Iterable[str] | None) -> tuple[str, ...]:
    if languages is None:
        return DEFAULT_LANGUAGES
    if isinstance(languages, str):
        raise InvalidInputError("The 'languages' parameter of detect_language must be a sequence of codes, not a str.")
    return tuple(sorted({str(x).lower() for x in languages}))


def detect_language(
    text: str, *, languages: Sequence[str] | None = None, min_relative_distance: float = 0.0
) -> str | None:
    """The ISO 639-1 code of ``text``'s language (``"it"``, ``"en"``, ``"zh"`` ...), or ``None`` if unknown.

    Args:
        text: any text; short texts are fine.
        languages: codes to choose among (default :data:`DEFAULT_LANGUAGES`).
        min_relative_distance: lingua's confidence margin in [0, 0.99]; higher returns ``None`` more often on
            ambiguous short texts.

    Returns:
        A lowercase ISO 639-1 code, or ``None`` for text without letters or when lingua is not confident.

    Raises:
        InvalidInputError: ``text`` is not a str, or bad ``languages`` / ``min_relative_distance``.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"The 'text' parameter of detect_language must be a str. Got {type(text).__name__} "
                                "instead.")
    if not 0.0 <= min_relative_distance <= 0.99:
        raise InvalidInputError("The 'min_relative_distance' parameter of detect_language must be a float in "
                                f"[0, 0.99]. Got {min_relative_distance!r} instead.")
    langs = _norm_langs(languages)
    text = text[:2000]  # the first 2000 characters decide; keeps huge inputs cheap
    if not _has_letters(text):
        return None
    if "zh" in langs and _HAN.search(text) and not _LATIN.search(text):
        return "zh"
    with _LOCK:  # building is the expensive part; the lock also serialises the first build
        det = _detector(langs, round(float(min_relative_distance), 4))
    lang = det.detect_language_of(text)
    if lang is None:
        return None
    return str(lang.iso_code_639_1.name).lower()


def detect_languages(texts: Sequence[str], **kwargs: Any) -> list[str | None]:
    """:func:`detect_language` over a batch, order kept.

    Raises:
        InvalidInputError: ``texts`` is a bare str, or an item is not a str.
    """
    if isinstance(texts, str):
        raise InvalidInputError("The 'texts' parameter of detect_languages must be a sequence of str, not a str.")
    return [detect_language(t, **kwargs) for t in texts]
