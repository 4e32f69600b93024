"""Shipped embedder calibrations: the file format and how runtime code reads it.

Each embedder carries its own similarity thresholds (a cosine of 0.7 means different things for different
models), measured on labelled train/dev data by :mod:`memlab.lab.calibrate` (``memlab calibrate-embedder``) and
shipped as ``memlab/embedding/calibration/<name>.json``. This module only *reads* those files; nothing here
measures or writes anything.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memlab.errors import DatasetFormatError, NotFoundError
from memlab.protocols import Embedder

__all__ = [
    "EmbedderThresholds",
    "EmbedderCalibration",
    "LanguageCalibration",
    "calibration_path",
    "candidate_threshold",
    "load_calibration",
    "load_thresholds",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EmbedderThresholds:
    """Similarity thresholds expressed in one embedder's own cosine scale.

    Attributes:
        candidate: cosine above which two memories are "similar enough to check" for contradictions.
        chat_search: minimum cosine for a chat summary to be offered as a chat-switch candidate.
        title_drift: an automatic chat title is re-derived when the cosine between the summary it was derived
            from and the current summary falls below this: the median cosine between a text and the same text
            with half of its sentences replaced by another subject's (see
            :func:`memlab.lab.calibrate.calibrate_embedder`), i.e. "at least half of it is about
            something else now".
        source: how the values were obtained (a calibration file, or "seed default").
        by_language: per-language candidate thresholds (ISO 639-1 code -> cosine) from the calibration; the
            shipped ``candidate`` is their minimum, so it keeps the recall target in every language.
    """

    candidate: float = 0.7
    chat_search: float = 0.3
    title_drift: float = 0.7
    source: str = "seed default"
    by_language: Mapping[str, float] = field(default_factory=dict)

    def candidate_for(self, lang: str | None) -> float:
        """The candidate threshold for text in ``lang`` (falls back to ``candidate`` for unknown/None).

        Example:
            >>> EmbedderThresholds(candidate=0.8, by_language={"it": 0.85}).candidate_for("it")
            0.85
        """
        if lang is None:
            return self.candidate
        return float(self.by_language.get(lang, self.candidate))


class LanguageCalibration(BaseModel):
    """Calibration figures for one language."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lang: str
    """ISO 639-1 code."""
    n_related: int
    """Related (contradiction / same-subject) pairs."""
    n_unrelated: int
    """Unrelated (same person or voice, different topic) pairs."""
    threshold: float
    """This language's own threshold at the recall target."""
    related_median: float
    """Median cosine of related pairs."""
    unrelated_median: float
    """Median cosine of unrelated pairs."""
    recall_at_candidate: float
    """Share of related pairs at or above the shipped (all-language) candidate threshold."""
    unrelated_pass_rate_at_candidate: float
    """Share of unrelated pairs at or above the shipped candidate threshold."""
    sources: list[str]
    """``dataset/split`` of the pairs."""


class EmbedderCalibration(BaseModel):
    """What ``memlab calibrate-embedder NAME`` measured and ships as ``calibration/<name>.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str
    """Registry name."""
    params: dict[str, Any]
    """The embedder's ``get_params()``."""
    recall_target: float
    """Required recall of related pairs for the candidate threshold."""
    candidate: float
    """Candidate threshold: min over languages of the per-language thresholds."""
    candidate_recall: float
    """Recall of related (contradiction) pairs at ``candidate``, all languages pooled."""
    candidate_unrelated_pass_rate: float
    """Share of unrelated pairs at or above ``candidate``, all languages pooled."""
    by_language: dict[str, LanguageCalibration]
    """Per-language figures."""
    chat_recall_target: float
    """Required recall of same-topic pairs (query -> passage) for the chat-search threshold."""
    chat_search: float
    """Chat-search threshold (query-mode text vs passage-mode summary)."""
    chat_search_recall: float
    """Recall of same-topic pairs at ``chat_search``."""
    chat_search_unrelated_pass_rate: float
    """Share of shuffled (different-topic) pairs at or above ``chat_search``."""
    title_drift: float | None = None
    """Chat-title drift threshold: median cosine (passage mode) between a text and the same text with half of
    its sentences replaced by another subject's, median over languages (``None`` in files older than it)."""
    title_drift_by_language: dict[str, float] = Field(default_factory=dict)
    """Per-language medians behind ``title_drift``."""
    title_drift_keep_rate: float | None = None
    """Share of texts with a quarter of their sentences replaced that stay at or above ``title_drift``."""
    title_drift_change_rate: float | None = None
    """Share of texts with three quarters of their sentences replaced that fall below ``title_drift``."""
    sentences_per_s: float
    """Encoding speed measured during calibration (cache disabled, batched)."""
    n_texts_timed: int
    """Texts encoded for the speed figure."""
    seed: int
    """Sampling seed."""
    limit: int | None
    """Max pairs per (source, kind)."""
    created_at: str
    """UTC timestamp."""
    command: str = Field(default="memlab calibrate-embedder")
    """How to reproduce it."""

    def to_thresholds(self) -> EmbedderThresholds:
        """The :class:`EmbedderThresholds` an embedder carries."""
        return EmbedderThresholds(
            candidate=self.candidate,
            chat_search=self.chat_search,
            **({"title_drift": self.title_drift} if self.title_drift is not None else {}),
            source=f"calibration/{self.embedder}.json (recall>={self.recall_target}, {self.created_at[:10]})",
            by_language={k: v.threshold for k, v in self.by_language.items()},
        )

    def to_markdown(self) -> str:
        """One row per language plus the pooled row, 3 decimals."""
        head = ("| embedder | lang | threshold (own) | contradiction recall @cand | unrelated pass @cand "
                "| n related | n unrelated |\n|---|---|---|---|---|---|---|")
        rows = [head]
        for lang, c in sorted(self.by_language.items()):
            rows.append(f"| {self.embedder} | {lang} | {c.threshold:.3f} | {c.recall_at_candidate:.3f} | "
                        f"{c.unrelated_pass_rate_at_candidate:.3f} | {c.n_related} | {c.n_unrelated} |")
        rows.append(f"| {self.embedder} | **all** | **{self.candidate:.3f}** | {self.candidate_recall:.3f} | "
                    f"{self.candidate_unrelated_pass_rate:.3f} | "
                    f"{sum(c.n_related for c in self.by_language.values())} | "
                    f"{sum(c.n_unrelated for c in self.by_language.values())} |")
        rows.append("")
        rows.append(f"chat_search = {self.chat_search:.3f} (same-topic recall {self.chat_search_recall:.3f}, "
                    f"unrelated pass {self.chat_search_unrelated_pass_rate:.3f}); "
                    f"speed {self.sentences_per_s:.1f} sentences/s")
        if self.title_drift is not None:
            rows.append(f"title_drift = {self.title_drift:.3f} (kept at 1/4 replaced: {self.title_drift_keep_rate}, "
                        f"changed at 3/4 replaced: {self.title_drift_change_rate})")
        return "\n".join(rows)


def candidate_threshold(embedder: Embedder, text: str | None = None, similarity_threshold: float | None = None) -> float:
    """The candidate threshold in force for a new memory ``text``: what the integrity check should use.

    ``similarity_threshold`` (``Settings.similarity_threshold``) wins when set; otherwise the embedder's
    calibrated threshold for the detected language of ``text`` (:func:`memlab.text.detect_language`), falling
    back to its all-language ``candidate`` (and to 0.7 for an embedder without thresholds).

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> candidate_threshold(FakeEmbedder(), "Abito a Roma", similarity_threshold=0.5)
        0.5
    """
    if similarity_threshold is not None:
        return float(similarity_threshold)
    th = getattr(embedder, "thresholds", None)
    if not isinstance(th, EmbedderThresholds):
        return 0.7
    if text is None or not th.by_language:
        return th.candidate
    from memlab.text import detect_language

    return th.candidate_for(detect_language(text))


def calibration_path(name: str) -> Path:
    """Path of the shipped calibration file of embedder ``name`` (it may not exist)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    return Path(str(resources.files("memlab.embedding").joinpath("calibration", f"{safe}.json")))


def load_calibration(name_or_path: str | Path) -> EmbedderCalibration:
    """Read a calibration file by embedder name (the shipped one) or by path.

    Raises:
        NotFoundError: no such file.
        DatasetFormatError: the file does not validate.
    """
    p = Path(name_or_path)
    if not (p.suffix == ".json" and p.exists()):
        p = calibration_path(str(name_or_path))
    if not p.is_file():
        raise NotFoundError(f"No calibration file for {str(name_or_path)!r} (looked at {p}).")
    try:
        return EmbedderCalibration.model_validate_json(p.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DatasetFormatError(f"Calibration file {p} is invalid: {exc}") from exc


def load_thresholds(name: str) -> EmbedderThresholds:
    """The calibrated thresholds of embedder ``name``, or the seed defaults when it was never calibrated."""
    try:
        return load_calibration(name).to_thresholds()
    except NotFoundError:
        return EmbedderThresholds()
    except DatasetFormatError as exc:
        log.warning("Ignoring %s; using seed-default thresholds.", exc)
        return EmbedderThresholds()
