"""SituatedQA (temporal): questions whose answer changed over time (prev -> cur, with dates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.datasets._io import field as get_field
from memlab.datasets._io import iter_jsonl, text_field
from memlab.datasets.registry import dataset_files
from memlab.errors import DatasetFormatError

__all__ = [
    "AnswerAsOf",
    "TemporalQuestion",
    "Timeline",
    "load_situatedqa",
]


@dataclass(frozen=True, slots=True)
class Timeline:
    """One annotated change: the previous answer, the current one, and when each started.

    Attributes:
        prev_answers: answers before the change.
        cur_answers: answers after the change.
        prev_start: ``{"year", "month", "date"}`` (month/date may be ``None``).
        cur_start: same, for the current answer.
        prev_start_full: the start as written (``"25 July 2012"``).
        cur_start_full: same, for the current answer.
    """

    prev_answers: tuple[str, ...]
    cur_answers: tuple[str, ...]
    prev_start: Mapping[str, int | None]
    cur_start: Mapping[str, int | None]
    prev_start_full: str = ""
    cur_start_full: str = ""

    @property
    def is_change(self) -> bool:
        """True when both a previous and a current answer are annotated (a two-step version chain)."""
        return bool(self.prev_answers and self.cur_answers)


@dataclass(frozen=True, slots=True)
class AnswerAsOf:
    """A question edited with a date ("... as of 2018") and its answer at that date."""

    question: str
    answers: tuple[str, ...]
    date: str
    date_type: str


@dataclass(frozen=True, slots=True)
class TemporalQuestion:
    """One SituatedQA temporal question.

    Attributes:
        id: the NaturalQuestions id (as a string).
        question: the question text.
        is_dependent: whether the answer depends on time.
        cur_answers: current answers.
        prev_answers: previous answers (empty when not dependent).
        timelines: annotated changes (empty when not dependent).
        as_of: (question as of a date, answers) pairs.
        meta: ``nq_answers`` and ``source`` (``"<file>:<line>"``).
    """

    id: str
    question: str
    is_dependent: bool
    cur_answers: tuple[str, ...]
    prev_answers: tuple[str, ...]
    timelines: tuple[Timeline, ...] = ()
    as_of: tuple[AnswerAsOf, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


def _strs(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, list):
        return tuple(str(x) for x in v)
    return (str(v),)


def _start(v: Any) -> dict[str, int | None]:
    v = v if isinstance(v, dict) else {}
    return {k: (int(v[k]) if isinstance(v.get(k), int | float) else None) for k in ("year", "month", "date")}


def load_situatedqa(split: str = "test", *, data_dir: str | Path | None = None) -> list[TemporalQuestion]:
    """Load ``temp.<split>.jsonl``.

    Args:
        split: ``train``, ``dev`` or ``test``.
        data_dir: folder with the files; default ``datasets/situatedqa_temp``.

    Raises:
        InvalidInputError: unknown split.
        DatasetFormatError: a malformed file (names file and line).

    Example:
        >>> qs = load_situatedqa("test")
        >>> any(q.is_dependent and q.timelines for q in qs)
        True
    """
    out: list[TemporalQuestion] = []
    for path in dataset_files("situatedqa_temp", split, data_dir):
        for lineno, obj in iter_jsonl(path):
            dep = get_field(obj, "is_dependent", path, lineno)
            if not isinstance(dep, bool):
                raise DatasetFormatError(
                    f"unknown label {dep!r} in 'is_dependent'; expected true or false.",
                    path=str(path),
                    line=lineno,
                )
            timelines = tuple(
                Timeline(
                    prev_answers=_strs(t.get("prev_answers")),
                    cur_answers=_strs(t.get("cur_answers")),
                    prev_start=_start(t.get("prev_start")),
                    cur_start=_start(t.get("cur_start")),
                    prev_start_full=str(t.get("prev_start_full") or ""),
                    cur_start_full=str(t.get("cur_start_full") or ""),
                )
                for t in (obj.get("timelines") or [])
                if isinstance(t, dict)
            )
            as_of = tuple(
                AnswerAsOf(
                    str(c.get("edited_question", "")),
                    _strs(c.get("answers")),
                    str(c.get("date", "")),
                    str(c.get("date_type", "")),
                )
                for c in (obj.get("context_answer_pairs") or [])
                if isinstance(c, dict)
            )
            out.append(
                TemporalQuestion(
                    id=str(get_field(obj, "id", path, lineno)),
                    question=text_field(get_field(obj, "question", path, lineno), "question", path, lineno),
                    is_dependent=dep,
                    cur_answers=_strs(obj.get("cur_answers")),
                    prev_answers=_strs(obj.get("prev_answers")),
                    timelines=timelines,
                    as_of=as_of,
                    meta={"nq_answers": _strs(obj.get("nq_answers")), "source": f"{path.name}:{lineno}"},
                )
            )
    return out
