"""LoCoMo (very long-term conversational memory): conversations, sessions, observations, events, QA."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.datasets._io import check_file
from memlab.datasets.registry import dataset_files
from memlab.errors import DatasetFormatError, InvalidInputError

__all__ = [
    "LOCOMO_CATEGORIES",
    "LocomoConversation",
    "LocomoObservation",
    "LocomoQA",
    "LocomoSession",
    "LocomoTurn",
    "LOCOMO_SPLITS",
    "load_locomo",
    "locomo_split",
    "session_date",
]

#: QA category ids -> names (the mapping commonly used with locomo10.json; see datasets/locomo/SOURCE.md).
LOCOMO_CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """One turn.

    Attributes:
        dia_id: dialogue id such as ``"D1:3"`` (session 1, turn 3): QA evidence points at these.
        speaker: speaker name.
        text: what was said.
        blip_caption: caption of a shared image, if any.
    """

    dia_id: str
    speaker: str
    text: str
    blip_caption: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoObservation:
    """A model-generated fact about a speaker, with the dia_ids supporting it."""

    speaker: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LocomoSession:
    """One dated session.

    Attributes:
        index: session number (1-based).
        date_time: the session timestamp as written (``"1:56 pm on 8 May, 2023"``).
        turns: the turns.
        observations: generated per-speaker facts with evidence.
        events: annotated events per speaker (``event_summary``), ``{speaker: [event, ...]}``.
        summary: generated session summary (may be empty).
    """

    index: int
    date_time: str
    turns: tuple[LocomoTurn, ...]
    observations: tuple[LocomoObservation, ...] = ()
    events: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    summary: str = ""


@dataclass(frozen=True, slots=True)
class LocomoQA:
    """One QA item.

    Attributes:
        question: the question.
        answer: gold answer as text (``None`` for adversarial items, which have ``adversarial_answer``).
        evidence: dia_ids of the supporting turns.
        category: 1-5 (see :data:`LOCOMO_CATEGORIES`).
        adversarial_answer: the tempting wrong answer of category-5 items.
    """

    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int
    adversarial_answer: str | None = None

    @property
    def category_name(self) -> str:
        """Category name (``temporal``, ``single-hop`` ...)."""
        return LOCOMO_CATEGORIES.get(self.category, str(self.category))


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """One LoCoMo sample: a multi-session conversation between two speakers with its annotations."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    qa: tuple[LocomoQA, ...]

    def turn(self, dia_id: str) -> LocomoTurn:
        """The turn with this dia_id.

        Raises:
            KeyError: no such turn.
        """
        for s in self.sessions:
            for t in s.turns:
                if t.dia_id == dia_id:
                    return t
        raise KeyError(dia_id)


_SESSION = re.compile(r"^session_(\d+)$")


def _evidence(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(x for x in re.split(r"[;,\s]+", value) if x)
    if isinstance(value, list):
        return tuple(e for v in value for e in _evidence(v))
    return ()


def _parse_sample(obj: Any, path: Path, i: int) -> LocomoConversation:
    where = f"sample #{i}"
    if not isinstance(obj, dict) or "conversation" not in obj or "qa" not in obj:
        raise DatasetFormatError(f"{where} must be an object with 'conversation' and 'qa'.", path=str(path))
    conv = obj["conversation"]
    observations = obj.get("observation") or {}
    events = obj.get("event_summary") or {}
    summaries = obj.get("session_summary") or {}
    sessions = []
    for key, turns in conv.items():
        m = _SESSION.match(key)
        if not m or not isinstance(turns, list):
            continue
        n = int(m.group(1))
        try:
            parsed = tuple(
                LocomoTurn(str(t["dia_id"]), str(t["speaker"]), str(t["text"]), t.get("blip_caption"))
                for t in turns
            )
        except (KeyError, TypeError) as exc:
            raise DatasetFormatError(f"{where}, {key}: a turn lacks {exc}.", path=str(path)) from exc
        obs = tuple(
            LocomoObservation(str(speaker), str(item[0]), _evidence(item[1]))
            for speaker, items in (observations.get(f"{key}_observation") or {}).items()
            for item in items
            if isinstance(item, list) and len(item) >= 2
        )
        ev = events.get(f"events_{key}") or {}
        sessions.append(
            LocomoSession(
                index=n,
                date_time=str(conv.get(f"{key}_date_time", "")),
                turns=parsed,
                observations=obs,
                events={k: tuple(v) for k, v in ev.items() if k != "date" and isinstance(v, list)},
                summary=str(summaries.get(f"{key}_summary", "")),
            )
        )
    sessions.sort(key=lambda s: s.index)
    qa = []
    for q in obj["qa"]:
        try:
            answer = q.get("answer")
            adv = q.get("adversarial_answer")
            qa.append(
                LocomoQA(
                    question=str(q["question"]),
                    answer=None if answer is None else str(answer),
                    evidence=_evidence(q.get("evidence", [])),
                    category=int(q["category"]),
                    adversarial_answer=None if adv is None else str(adv),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetFormatError(f"{where}: a QA item is malformed ({exc!r}).", path=str(path)) from exc
    return LocomoConversation(
        sample_id=str(obj.get("sample_id", i)),
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        sessions=tuple(sessions),
        qa=tuple(qa),
    )


def load_locomo(data_dir: str | Path | None = None) -> list[LocomoConversation]:
    """Load ``locomo10.json`` (8 of the 10 conversations here; 2 are held out).

    Args:
        data_dir: folder holding ``locomo10.json``; default ``datasets/locomo``.

    Raises:
        DatasetFormatError: missing/empty file, not UTF-8, not JSON, or a malformed sample.

    Example:
        >>> convs = load_locomo()
        >>> convs[0].sessions[0].turns[0].dia_id
        'D1:1'
    """
    (path,) = dataset_files("locomo", "test", data_dir)
    check_file(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(
            f"the file is not valid UTF-8 (byte offset {exc.start}).", path=str(path)
        ) from exc
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"not valid JSON ({exc.msg}).", path=str(path), line=exc.lineno) from exc
    if not isinstance(data, list) or not data:
        raise DatasetFormatError("the file must hold a non-empty JSON array of samples.", path=str(path))
    return [_parse_sample(obj, path, i) for i, obj in enumerate(data)]


#: LoCoMo has no official split: ``dev`` = the first two conversations in file order (settings are chosen there),
#: ``test`` = the others (figures are reported there), ``all`` = every one.
LOCOMO_SPLITS: tuple[str, ...] = ("dev", "test", "all")
#: The date a session gets when its ``date_time`` cannot be parsed.
UNDATED_SESSION = datetime(2024, 1, 1, tzinfo=UTC)


def locomo_split(conversations: Sequence[Any], split: str, *, owner: str = "LoCoMo") -> list[Any]:
    """The conversations of one split (see :data:`LOCOMO_SPLITS`).

    Raises:
        InvalidInputError: an unknown split.

    Example:
        >>> locomo_split(["c0", "c1", "c2"], "test")
        ['c2']
    """
    if split not in LOCOMO_SPLITS:
        raise InvalidInputError(f"The 'split' parameter of {owner} must be one of {LOCOMO_SPLITS}. Got {split!r} instead.")
    if split == "dev":
        return list(conversations[:2])
    if split == "test":
        return list(conversations[2:])
    return list(conversations)


def session_date(session: LocomoSession) -> datetime:
    """When a session happened (its ``date_time`` parsed, UTC); :data:`UNDATED_SESSION` when it cannot be parsed.

    Example:
        >>> session_date(LocomoSession(1, "1:56 pm on 8 May, 2023", ())).isoformat()
        '2023-05-08T13:56:00+00:00'
    """
    import dateparser

    when = dateparser.parse(session.date_time or "", languages=["en"], settings={"TIMEZONE": "UTC"})
    if when is None:
        return UNDATED_SESSION
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
