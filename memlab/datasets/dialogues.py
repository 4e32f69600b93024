"""DECODE dialogues (dialogue-level records) and their pairwise form for a judge.

Pairwise form: for each dialogue, one pair ``(earlier turn of the same speaker as the last turn, last
turn)`` per earlier turn of that speaker, all sharing ``meta["group"] = dialogue id`` and the dialogue's
gold label. When the last speaker has no earlier turn (2-turn Human-Bot dialogues), the earlier turns
of the other speaker are used instead (``meta["fallback"] = True``). The eval scores one prediction
per dialogue: the max contradiction probability over its pairs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.datasets._io import field as get_field
from memlab.datasets._io import iter_jsonl, text_field
from memlab.datasets.pair import Pair
from memlab.datasets.registry import dataset_files, get_dataset
from memlab.errors import DatasetFormatError, InvalidInputError
from memlab.records import Label

__all__ = [
    "Dialogue",
    "Turn",
    "dialogue_pairs",
    "load_dialogues",
    "remove_contradicting_turn",
]


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn.

    Attributes:
        index: 0-based position in the dialogue (DECODE ``turn_id``).
        speaker: speaker id as a string (DECODE ``agent_id``: ``"0"`` or ``"1"``).
        text: what was said.
        contradiction: the turn-level annotation when present (``None`` when not annotated).
    """

    index: int
    speaker: str
    text: str
    contradiction: bool | None = None


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One labelled dialogue: does the LAST turn contradict something said earlier?

    Attributes:
        id: the DECODE ``record_id``.
        turns: the turns in order.
        label: ``contradiction`` or ``not_contradiction`` (``is_contradiction``).
        evidence: ``aggregated_contradiction_indices`` (turn indices; may be empty).
        meta: ``conversation_id``, ``agents`` (is_human, persona_lines), ``auxiliary``, ``source``
            (``"<file>:<line>"``).
    """

    id: str
    turns: tuple[Turn, ...]
    label: Label
    evidence: tuple[int, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


def parse_decode(path: Path) -> Iterator[Dialogue]:
    """Parse one DECODE JSON-lines file (``human-bot.jsonl``, ``rct.jsonl`` or the dev dialogues of decode_pairs)."""
    for lineno, obj in iter_jsonl(path):
        if "is_contradiction" not in obj and obj.get("label") in ("contradiction", "not_contradiction"):
            # DECODE dev dialogues as converted in decode_pairs: a label string, an ``id``, no evidence
            obj = {**obj, "is_contradiction": obj["label"] == "contradiction", "record_id": obj.get("id")}
        raw_label = get_field(obj, "is_contradiction", path, lineno)
        if not isinstance(raw_label, bool):
            raise DatasetFormatError(
                f"unknown label {raw_label!r} in 'is_contradiction'; expected true or false.",
                path=str(path),
                line=lineno,
            )
        raw_turns = get_field(obj, "turns", path, lineno)
        if not isinstance(raw_turns, list) or len(raw_turns) < 2:
            raise DatasetFormatError(
                "'turns' must be a list of at least 2 turns.", path=str(path), line=lineno
            )
        turns = []
        for pos, t in enumerate(raw_turns):
            if not isinstance(t, dict):
                raise DatasetFormatError("each turn must be an object.", path=str(path), line=lineno)
            aux = t.get("auxiliary") or {}
            flag = aux.get("contradiction") if isinstance(aux, dict) else None
            turns.append(
                Turn(
                    index=int(t.get("turn_id", pos)),
                    speaker=str(get_field(t, "agent_id", path, lineno)),
                    text=text_field(get_field(t, "text", path, lineno), "text", path, lineno),
                    contradiction=flag if isinstance(flag, bool) else None,
                )
            )
        evidence = obj.get("aggregated_contradiction_indices") or []
        yield Dialogue(
            id=str(get_field(obj, "record_id", path, lineno)),
            turns=tuple(turns),
            label=Label.CONTRADICTION if raw_label else Label.NOT_CONTRADICTION,
            evidence=tuple(int(i) for i in evidence),
            meta={
                "conversation_id": obj.get("conversation_id"),
                "agents": obj.get("agents"),
                "auxiliary": obj.get("auxiliary"),
                "source": f"{path.name}:{lineno}",
            },
        )


def dialogue_pairs(dialogue: Dialogue) -> list[Pair]:
    """The pairwise form of one dialogue (see the module docstring), all with ``meta["group"]``.

    Example:
        >>> d = Dialogue("d1", (Turn(0, "0", "I am a nurse."), Turn(1, "1", "Hi."), Turn(2, "0", "I am a pilot.")),
        ...              Label.CONTRADICTION)
        >>> [(p.premise, p.hypothesis) for p in dialogue_pairs(d)]
        [('I am a nurse.', 'I am a pilot.')]
    """
    last = dialogue.turns[-1]
    earlier = [t for t in dialogue.turns[:-1] if t.speaker == last.speaker]
    fallback = not earlier
    if fallback:
        earlier = list(dialogue.turns[:-1])
    return [
        Pair(
            id=f"{dialogue.id}#t{t.index}",
            premise=t.text,
            hypothesis=last.text,
            label=dialogue.label,
            meta={
                "group": dialogue.id,
                "turn": t.index,
                "last_turn": last.index,
                "fallback": fallback,
                "evidence": list(dialogue.evidence),
                "source": dialogue.meta.get("source"),
            },
        )
        for t in earlier
    ]


def load_dialogues(
    name: str = "decode", split: str = "human-bot", *, data_dir: str | Path | None = None
) -> list[Dialogue]:
    """Load DECODE dialogues (dialogue-level records).

    Args:
        name: ``"decode"`` (the only dialogue-level set).
        split: ``"human-bot"`` (contradiction and not), ``"rct"`` (all non-contradictions: false
            positives), ``"dev"`` (DECODE's dev dialogues, 4,003: the split to tune a detector on) or
            ``"dev-rct"`` (RCT's construction on dev, see :func:`remove_contradicting_turn`: 2,013 negatives).
        data_dir: folder with ``human-bot.jsonl`` / ``rct.jsonl``; default ``datasets/decode``.

    Raises:
        UnknownComponentError: unknown dataset.
        InvalidInputError: a dataset that has no dialogue form, or an unknown split.
        DatasetFormatError: a malformed file (names file and line).

    Example:
        >>> ds = load_dialogues("decode", "human-bot")
        >>> ds[0].turns[-1].speaker in {"0", "1"}
        True
    """
    info = get_dataset(name)
    if info.kind != "dialogues":
        raise InvalidInputError(
            f"The 'name' parameter of load_dialogues must be 'decode'. Got {name!r} instead."
        )
    out: list[Dialogue] = []
    for path in dataset_files(name, split, data_dir):
        out.extend(parse_decode(path))
    if split == "dev-rct":
        out = [r for d in out if (r := remove_contradicting_turn(d)) is not None]
    return out


def remove_contradicting_turn(d: Dialogue) -> Dialogue | None:
    """RCT's construction ("remove contradicting turn") for a contradiction dialogue: a non-contradiction.

    DECODE's RCT test group holds contradiction dialogues truncated before the contradicting turn, ending on an
    earlier turn of the same side (the turns of a DECODE dialogue stop at its first contradiction, so that earlier
    turn contradicts nothing). Dropping the last turn and the other speaker's turn before it does the same on any
    split: the new last turn is the contradicting speaker's previous turn. On DECODE dev this gives dialogues of
    6.7 turns with 2.6 earlier same-speaker turns on average (RCT: 6.9 and 2.6), so a detector can be checked for
    false alarms on RCT-like dialogues without touching RCT.

    Returns:
        The truncated dialogue (label ``not_contradiction``, no evidence, ``meta["rct_of"]`` = the source id), or
        ``None`` for a non-contradiction or a dialogue too short to keep one earlier turn of the last speaker.
    """
    if d.label is not Label.CONTRADICTION or len(d.turns) < 3:
        return None
    turns = d.turns[:-2]
    last = turns[-1]
    if turns[-1].speaker != d.turns[-1].speaker or not any(t.speaker == last.speaker for t in turns[:-1]):
        return None
    return Dialogue(
        id=f"{d.id}#rct",
        turns=turns,
        label=Label.NOT_CONTRADICTION,
        evidence=(),
        meta={**dict(d.meta), "rct_of": d.id},
    )
