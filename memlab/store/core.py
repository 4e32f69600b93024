"""The store's rules, written once for every backend: validation, the version rule, records, context selection.

:class:`~memlab.store.memory.MemoryStore` applies them over a :class:`~memlab.store.backend.StoreBackend`
(SQLite + FAISS, or PostgreSQL + pgvector); nothing here knows where the rows live.

Conflict rule for keyed memories: a new item with the same ``(user_id, scope, type, key, project_id)`` as an active
item is a conflict. If the confidences differ by less than :data:`CONFIDENCE_TIE` the newer item wins; otherwise the
higher confidence wins. The loser is never deleted: it stays, inactive, linked by ``supersedes``/``superseded_by``,
with ``superseded_at`` set, in a version chain that ``MemoryStore.history`` returns from any member.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import (
    as_vectors,
    check_positive_int,
    check_text,
    check_unit_interval,
    check_unit_vectors,
    check_user_id,
)
from memlab.config import MAX_KEYWORD_CHARS, MAX_KEYWORDS, MAX_SOURCE_CHARS, MAX_TEXT_CHARS
from memlab.errors import InvalidInputError
from memlab.prompting import quote_data
from memlab.protocols import Embedder
from memlab.records import MemoryItem
from memlab.text import messages

__all__ = [
    "COLUMNS",
    "CONFIDENCE_TIE",
    "DEFAULT_EMBEDDER",
    "SEARCH_MODES",
    "MemoryEvent",
    "format_context",
    "item_from_row",
    "item_specs",
    "select_context",
    "spec_vectors",
    "validate_memory_spec",
    "version_rule",
]

#: Below this |Δconfidence| the newer keyed item wins; above it, the more confident one.
CONFIDENCE_TIE = 0.1
#: Embedder used when a store is built without one: the multilingual e5 (chosen by ``memlab bench embedders``;
#: the English MiniLM ranks Italian/Chinese memories poorly). Keep in sync with ``Settings.embedder``.
DEFAULT_EMBEDDER = "e5"
#: How ``MemoryStore.search`` ranks, on every backend: ``hybrid`` (dense + full-text, reciprocal rank fusion) or
#: ``dense`` (cosine only).
SEARCH_MODES = ("hybrid", "dense")
#: The columns of a memory row, in :class:`~memlab.records.MemoryItem`'s order (both backends' ``memories`` table).
COLUMNS = (
    "id, user_id, text, scope, type, key, value, confidence, project_id, source, keywords, topic, created_at, "
    "valid_from, valid_to, version, chain_id, supersedes, superseded_by, is_active, superseded_at, context, updated_at"
)
#: The fields a memory spec (``add_many``'s items) may carry.
SPEC_FIELDS = frozenset({"text", "scope", "type", "key", "value", "confidence", "project_id", "source", "valid_from",
                         "valid_to", "keywords", "topic", "correction"})


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One entry of a memory's audit log (creation, supersession, resolution, reactivation ...).

    Attributes:
        id: event id.
        memory_id: the memory the event is about.
        chain_id: its version chain.
        event: ``created``, ``superseded``, ``lost``, ``deactivated``, ``reactivated``, ``annotated`` ...
        actor: who did it (``system``, ``user``, ``version-rule`` ...).
        at: when (UTC).
        details: free JSON (reason, notification id, choice ...).
    """

    id: int
    memory_id: int
    chain_id: int | None
    event: str
    actor: str
    at: datetime
    details: Mapping[str, Any]


def aware(dt: datetime | None) -> datetime | None:
    """``dt`` in UTC (``None`` stays ``None``).

    Raises:
        InvalidInputError: a naive datetime (memlab stores only timezone-aware times).
    """
    if dt is None:
        return None
    if dt.tzinfo is None:
        raise InvalidInputError(f"Datetimes must be timezone-aware (UTC). Got naive {dt!r}.")
    return dt.astimezone(UTC)


def _when(value: Any) -> datetime | None:
    """A stored time as an aware UTC datetime: ISO text (SQLite) or a ``timestamptz`` value (PostgreSQL)."""
    if value is None or value == "":
        return None
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).astimezone(UTC)


def item_from_row(row: Mapping[str, Any]) -> MemoryItem:
    """A :class:`~memlab.records.MemoryItem` from a ``memories`` row of either backend (times as ISO text or
    datetimes, keywords as JSON text or a list)."""
    keywords = row["keywords"]
    if isinstance(keywords, str):
        keywords = json.loads(keywords or "[]")
    return MemoryItem(
        id=int(row["id"]),
        user_id=row["user_id"],
        text=row["text"],
        scope=row["scope"],
        type=row["type"],
        key=row["key"],
        value=row["value"],
        confidence=float(row["confidence"]),
        project_id=row["project_id"],
        source=row["source"],
        keywords=tuple(keywords or ()),
        topic=row["topic"],
        created_at=_when(row["created_at"]),
        valid_from=_when(row["valid_from"]),
        valid_to=_when(row["valid_to"]),
        version=int(row["version"]),
        chain_id=None if row["chain_id"] is None else int(row["chain_id"]),
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        is_active=bool(row["is_active"]),
        superseded_at=_when(row["superseded_at"]),
        context=row["context"],
        updated_at=_when(row["updated_at"]),
    )


def event_from_row(row: Mapping[str, Any]) -> MemoryEvent:
    """A :class:`MemoryEvent` from a ``memory_events`` row of either backend."""
    details = row["details"]
    return MemoryEvent(
        id=int(row["id"]),
        memory_id=int(row["memory_id"]),
        chain_id=row["chain_id"],
        event=row["event"],
        actor=row["actor"],
        at=_when(row["at"]),  # type: ignore[arg-type]
        details=json.loads(details) if isinstance(details, str) else details,
    )


def _norm_opt(value: Any, name: str, owner: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be a str or None. Got {value!r} instead.")
    return check_text(value, name=name, owner=owner, max_chars=512)


def _check_keywords(kws: Any, owner: str) -> list[str]:
    if isinstance(kws, str):
        raise InvalidInputError(f"The 'keywords' parameter of {owner} must be a sequence of str, not a str.")
    kws = list(kws or ())
    if len(kws) > MAX_KEYWORDS:
        raise InvalidInputError(
            f"The 'keywords' parameter of {owner} must have at most {MAX_KEYWORDS} items. Got {len(kws)} instead."
        )
    return [check_text(k, name="keywords", owner=owner, max_chars=MAX_KEYWORD_CHARS) for k in kws]


def _check_validity(spec: dict[str, Any], owner: str) -> None:
    for f in ("valid_from", "valid_to"):
        v = spec.get(f)
        if v is not None and not isinstance(v, datetime):
            raise InvalidInputError(f"The {f!r} parameter of {owner} must be a datetime or None. Got {v!r}.")
        spec[f] = aware(v)
    if spec["valid_from"] is not None and spec["valid_to"] is not None and spec["valid_from"] > spec["valid_to"]:
        raise InvalidInputError(
            f"The 'valid_from' parameter of {owner} must not be after 'valid_to'. "
            f"Got valid_from={spec['valid_from'].isoformat()} and valid_to={spec['valid_to'].isoformat()}."
        )


def validate_memory_spec(
    it: str | Mapping[str, Any], owner: str, max_text_chars: int = MAX_TEXT_CHARS
) -> dict[str, Any]:
    """One item of ``add_many`` checked and normalised (times as aware UTC datetimes).

    Raises:
        InvalidInputError: unknown field, bad text, confidence, keywords or validity interval.
    """
    spec: dict[str, Any] = {"text": it} if isinstance(it, str) else dict(it)
    unknown = set(spec) - SPEC_FIELDS
    if unknown:
        raise InvalidInputError(f"{owner} got unknown fields {sorted(unknown)}; allowed: {sorted(SPEC_FIELDS)}.")
    spec["text"] = check_text(spec.get("text"), name="text", owner=owner, max_chars=max_text_chars)
    spec["scope"] = check_text(spec.get("scope", "global"), name="scope", owner=owner, max_chars=64)
    spec["type"] = check_text(spec.get("type", "fact"), name="type", owner=owner, max_chars=64)
    spec["key"] = _norm_opt(spec.get("key"), "key", owner)
    value = spec.get("value")
    spec["value"] = None if value is None else check_text(str(value), name="value", owner=owner,
                                                           max_chars=max_text_chars)
    spec["project_id"] = _norm_opt(spec.get("project_id"), "project_id", owner)
    for f in ("source", "topic"):
        spec[f] = None if spec.get(f) is None else check_text(spec[f], name=f, owner=owner, max_chars=MAX_SOURCE_CHARS)
    spec["confidence"] = check_unit_interval(spec.get("confidence", 1.0), name="confidence", owner=owner)
    spec["keywords"] = _check_keywords(spec.get("keywords"), owner)
    spec["correction"] = bool(spec.get("correction", False))
    _check_validity(spec, owner)
    return spec


def item_specs(items: Any, owner: str, max_text_chars: int, *, what: str, hint: str = "") -> list[dict[str, Any]]:
    """Validated specs of ``items`` (a list of texts or mappings); a single text or mapping is refused (iterating it
    would store one memory per character, or per field name).

    Raises:
        InvalidInputError: a single item, or any bad item (nothing is stored).
    """
    if isinstance(items, str | bytes | Mapping):
        raise InvalidInputError(
            f"{what} must be a list of texts or mappings. Got a single {type(items).__name__} instead{hint}."
        )
    return [validate_memory_spec(it, owner, max_text_chars) for it in items]


def spec_vectors(
    specs: Sequence[Mapping[str, Any]], embeddings: Any, embedder: Embedder, owner: str, *, progress: bool = False
) -> NDArray[np.float32]:
    """The unit vectors of ``specs``: embedded in batches of 512 when ``embeddings`` is None, else the given ones
    checked (finite, of the embedder's dimension, one per item, unit norm).

    Raises:
        InvalidInputError: a wrong count, size or norm.
    """
    if embeddings is None:
        from tqdm.auto import tqdm

        chunks = [embedder.embed([s["text"] for s in specs[start : start + 512]])
                  for start in tqdm(range(0, len(specs), 512), desc="embedding", disable=not progress)]
        return np.ascontiguousarray(np.concatenate(chunks), dtype=np.float32)
    vecs = as_vectors(embeddings, embedder.dim, name="embedding", owner=owner)
    if len(vecs) != len(specs):
        raise InvalidInputError(f"{owner} got {len(vecs)} embeddings for {len(specs)} items.")
    vecs = check_unit_vectors(vecs, normalize=False, name="embedding", owner=owner)
    return np.ascontiguousarray(vecs, dtype=np.float32)


def version_rule(confidence: float, champion: Mapping[str, Any] | None) -> tuple[bool, int | None]:
    """The version rule between a new keyed memory and its slot's active version (``champion``: a row with ``id``
    and ``confidence``, or None for an empty slot): ``(wins, beaten_by)``. When the confidences differ by less than
    :data:`CONFIDENCE_TIE` the newer wins; otherwise the higher confidence wins (rounding guards 0.9 - 0.8 =
    0.0999..). ``beaten_by`` is the champion's id when the new memory loses.

    Example:
        >>> version_rule(0.85, {"id": 3, "confidence": 0.9}), version_rule(0.5, {"id": 3, "confidence": 0.9})
        ((True, None), (False, 3))
    """
    if champion is None:
        return True, None
    delta = confidence - float(champion["confidence"])
    wins = round(abs(delta), 9) < CONFIDENCE_TIE or delta > 0
    return wins, None if wins else int(champion["id"])


def select_context(
    store: Any, owner: str, user_id: str, query: str | None, *, project_id: str | None,
    types: Sequence[str] | None, k: int,
) -> list[MemoryItem]:
    """The memories a prompt context lists (``build_context``/``context_items``): with ``query``, the best of
    ``store.search`` (3k deep, so filters still leave k), else the newest; project and type filters; active only;
    at most ``k``."""
    user_id = check_user_id(user_id, owner=owner)
    k = check_positive_int(k, name="k", owner=owner)
    if query is not None:
        # the query is a user's message (a turn may be 100,000 characters): its head is searched, never refused
        query = query.strip()[: store.max_text_chars] if isinstance(query, str) else query
        items = [m for m, _ in store.search(user_id, query, k=max(k * 3, k))]
    else:
        items = store.list(user_id)[::-1]
    if project_id is not None:
        items = [m for m in items if m.project_id in (None, project_id)]
    if types is not None:
        items = [m for m in items if m.type in set(types)]
    return [m for m in items if m.is_active][:k]


#: A slot key shown as it is in a prompt (a vocabulary name); any other key is quoted like the memory's text.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def format_context(
    items: Sequence[MemoryItem], *, lang: str = "it", agent_type: str | None = None, awaiting: Collection[int] = ()
) -> str:
    """The prompt block of ``build_context``: a heading and one line per memory (``""`` when there are none)."""
    if not items:
        return ""
    head = messages(lang)["context_head"]
    if agent_type:
        head += f" ({agent_type})"
    lines = [head]
    for m in items:
        slot = "" if not m.key else f"[{m.key}] " if _PLAIN_KEY.fullmatch(m.key) else f"[{quote_data(m.key)}] "
        extra = f" ({quote_data(m.context)})" if m.context else ""
        if m.id in awaiting:
            extra += f" [{messages(lang)['provisional']}]"
        # the texts in the prompt's data form (memlab.prompting), one line each: no memory can open a section
        lines.append(f"- {slot}{quote_data(m.text)}{extra}")
    return "\n".join(lines)


#: The column types of the audit log per dialect: id, integers, memory reference, text, time, JSON.
_EVENT_TYPES = {
    "sqlite": ("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "", "TEXT", "TEXT", "TEXT"),
    "postgresql": ("bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "bigint", " REFERENCES memories(id)", "text",
                   "timestamptz", "jsonb"),
}


def events_table(dialect: str) -> str:
    """``CREATE TABLE memory_events`` (the audit log: one row per event of a memory) in ``dialect``'s types.

    Example:
        >>> print(events_table("sqlite")[:64])
        CREATE TABLE memory_events (id INTEGER PRIMARY KEY AUTOINCREMENT
    """
    pk, int_, ref, text, time, json_ = _EVENT_TYPES[dialect]
    cols = [f"id {pk}", f"memory_id {int_} NOT NULL{ref}", f"chain_id {int_}", f"user_id {text} NOT NULL",
            f"event {text} NOT NULL", f"actor {text} NOT NULL", f"at {time} NOT NULL",
            f"details {json_} NOT NULL DEFAULT '{{}}'"]
    return "CREATE TABLE memory_events (" + ", ".join(cols) + ")"


def new_row(user_id: str, spec: Mapping[str, Any], now: datetime, *, version: int, chain_id: int | None,
            supersedes: int | None, beaten_by: int | None) -> dict[str, Any]:
    """The ``memories`` row of a new memory (``chain_id`` None: the row starts its own chain, ``chain_id = id``)."""
    wins = beaten_by is None
    return {
        "user_id": user_id, "text": spec["text"], "scope": spec["scope"], "type": spec["type"], "key": spec["key"],
        "value": spec["value"], "confidence": spec["confidence"], "project_id": spec["project_id"],
        "source": spec["source"], "keywords": list(spec["keywords"]), "topic": spec["topic"], "created_at": now,
        "valid_from": spec["valid_from"], "valid_to": spec["valid_to"], "version": version, "chain_id": chain_id,
        "supersedes": supersedes, "superseded_by": beaten_by, "is_active": wins,
        "superseded_at": None if wins else now, "updated_at": now,
    }


Clock = Callable[[], datetime]
