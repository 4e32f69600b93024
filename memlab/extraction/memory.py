"""The per-conversation memory (anti-redundancy: known facts, explored topics, unanswered areas), persisted in the store's SQLite file.

One :class:`ConversationMemoryService` serves one user: every conversation it creates or reads belongs
to that user, and a conversation id of another user is reported as not found (isolation). After each user
message, :meth:`ConversationMemoryService.update_after_user_message`:

1. extracts facts, tone and a fatigue signal (any :class:`~memlab.extraction.Extractor`);
2. drops facts the user's memory already holds (**semantic dedupe**, not string equality): a keyed fact
   is known when an active memory of the same slot has the same value (case-insensitive); a free fact is
   known when its embedding has cosine >= ``dedupe_threshold`` with an active memory of the user (or with an
   earlier fact of the same message) and both state the same numbers;
3. stores the new facts in the :class:`~memlab.store.MemoryStore` as memories of the user (keyed facts under
   their slot, so the version rule applies; provenance ``source="conv:<id>/msg:<n>"``);
4. folds fatigue as ``0.7 * old + 0.3 * new``, updates the running mean message length and the emoji flag,
   and keeps the last detected tone when the message shows none.

Everything is validated before anything is written: a bad message leaves the memory as it was.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memlab._validation import check_enum, check_text, check_user_id, strip_control
from memlab.clock import utcnow
from memlab.config import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from memlab.errors import InvalidInputError, NotFoundError
from memlab.extraction.base import Extractor
from memlab.extraction.dates import resolve_relative_dates
from memlab.extraction.records import (
    ConversationMemory,
    Coverage,
    ExtractionResult,
    Fact,
    Priority,
    SkipReason,
    StoredFact,
    Tone,
    TopicState,
    UnansweredArea,
)
from memlab.extraction.rules import MAX_MESSAGE_CHARS, RuleExtractor
from memlab.records import MemoryItem
from memlab.store import MemoryStore

__all__ = ["FATIGUE_DECAY", "SCHEMA", "ConversationMemoryService", "UpdateResult"]

log = logging.getLogger(__name__)

#: Weight of the previous fatigue score when folding a new signal (``0.7 * old + 0.3 * new``: a tired message moves the score, one message never flips it).
FATIGUE_DECAY = 0.7

SCHEMA: list[str] = [
    """
    CREATE TABLE conv_memory (
        conversation_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        fatigue REAL NOT NULL DEFAULT 0,
        tone TEXT,
        avg_response_length REAL NOT NULL DEFAULT 0,
        n_messages INTEGER NOT NULL DEFAULT 0,
        emoji_used INTEGER NOT NULL DEFAULT 0,
        lang TEXT NOT NULL DEFAULT 'it',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX idx_conv_memory_user ON conv_memory(user_id);
    CREATE TABLE conv_facts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id TEXT NOT NULL REFERENCES conv_memory(conversation_id),
        content TEXT NOT NULL,
        topic TEXT,
        extracted_at TEXT NOT NULL,
        confidence REAL NOT NULL,
        keywords TEXT NOT NULL DEFAULT '[]',
        key TEXT,
        value TEXT,
        type TEXT NOT NULL DEFAULT 'fact',
        memory_id INTEGER,
        source TEXT NOT NULL,
        message_index INTEGER NOT NULL
    );
    CREATE INDEX idx_conv_facts_conv ON conv_facts(conversation_id);
    CREATE TABLE conv_topics (
        conversation_id TEXT NOT NULL REFERENCES conv_memory(conversation_id),
        topic_id TEXT NOT NULL,
        label TEXT NOT NULL,
        coverage TEXT NOT NULL,
        covered TEXT NOT NULL DEFAULT '[]',
        missing TEXT NOT NULL DEFAULT '[]',
        last_explored_at TEXT,
        PRIMARY KEY (conversation_id, topic_id)
    );
    CREATE TABLE conv_unanswered (
        conversation_id TEXT NOT NULL REFERENCES conv_memory(conversation_id),
        area TEXT NOT NULL,
        priority INTEGER NOT NULL DEFAULT 3,
        attempts INTEGER NOT NULL DEFAULT 1,
        skip_reason TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (conversation_id, area)
    )
    """,
]

_NUM = re.compile(r"\d+(?:[.,]\d+)?")


def _numbers(text: str) -> list[str]:
    return sorted(n.replace(",", ".") for n in _NUM.findall(text))


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-ZÀ-Ý][\w'’-]+")


def _details(text: str) -> tuple[list[str], list[str]]:
    """What two near-identical sentences must share to be one fact: their numbers (dates included) and their
    capitalised words after the first ("Ho visto Marco" and "Ho visto Luca" are two facts, however close)."""
    return _numbers(text), sorted({m.casefold() for m in _NAME.findall(text.strip())})


def _same_value(key: str | None, a: str | None, b: str | None) -> bool:
    """Slot values equal, case-insensitively; a date without a year equals a full date on the same day-month."""
    x, y = (a or "").strip().casefold(), (b or "").strip().casefold()
    if x == y:
        return True
    iso = re.compile(r"^(?:\d{4}|-)-(\d{2})-(\d{2})$")
    mx, my = iso.match(x), iso.match(y)
    if key == "birthday" and mx and my and (x.startswith("--") or y.startswith("--")):
        return mx.groups() == my.groups()
    return False


#: Stored rank of each priority (the column is an integer so areas sort by it; older files used 1..5).
_PRIORITY_RANK = {Priority.HIGH: 1, Priority.MEDIUM: 3, Priority.LOW: 5}


def _unanswered(r: Any) -> UnansweredArea:
    """A stored row (ranks 1..5 of older files: 1-2 high, 3 medium, 4-5 low; an older free-text skip reason that
    is not one of the three reads as ``None`` and stays in the file)."""
    rank = int(r["priority"])
    prio = Priority.HIGH if rank <= 2 else Priority.MEDIUM if rank == 3 else Priority.LOW
    raw = r["skip_reason"]
    reason = SkipReason(raw) if raw in {x.value for x in SkipReason} else None
    return UnansweredArea(area=r["area"], priority=prio, attempts=int(r["attempts"]), skip_reason=reason,
                          updated_at=_dt(r["updated_at"]))


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat()


def _dt(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """What one user message changed.

    Attributes:
        memory: the conversation memory after the update.
        extraction: the extractor's raw result.
        new_facts: facts stored for the first time (each with its ``memory_id``).
        known: ``(fact, memory id)`` pairs dropped as already known (semantic dedupe).
        memories: the :class:`~memlab.records.MemoryItem` rows written to the store, in order (``is_active``
            and ``supersedes`` show what the version rule did). Feed their ids to the integrity check.
    """

    memory: ConversationMemory
    extraction: ExtractionResult
    new_facts: tuple[StoredFact, ...]
    known: tuple[tuple[Fact, int], ...]
    memories: tuple[MemoryItem, ...]


class ConversationMemoryService:
    """Per-conversation memory of one user, stored beside the user's memories.

    Args:
        store: the memory store (its SQLite file also holds the conversation tables; its embedder is used
            for semantic dedupe).
        extractor: any :class:`~memlab.extraction.Extractor`; default :class:`~memlab.extraction.RuleExtractor`.
        user_id: the owner of every conversation this service touches.
        dedupe_threshold: cosine (in the store embedder's scale) at or above which a free fact repeats a
            known memory. 0.9 by default (MiniLM: paraphrases of one fact score 0.85-0.95, related but
            different facts 0.5-0.8).
        scope: scope of the memories written.
        project_id: project of the memories written.
        max_message_chars: longest message accepted; longer messages are truncated by the extractor.
        clock: returns "now" (tz-aware); injectable for tests.

    Example:
        >>> from memlab.testing import FakeEmbedder
        >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
        >>> svc = ConversationMemoryService(store, user_id="u1")
        >>> r = svc.update_after_user_message("c1", "Chiamami Zhang San")
        >>> r = svc.update_after_user_message("c1", "anzi chiamami Li Si")
        >>> [m.value for m in store.history(r.memories[0].id)]
        ['Zhang San', 'Li Si']
    """

    def __init__(
        self,
        store: MemoryStore,
        extractor: Extractor | None = None,
        *,
        user_id: str,
        dedupe_threshold: float = 0.9,
        scope: str = "global",
        project_id: str | None = None,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        owner = "ConversationMemoryService"
        if isinstance(dedupe_threshold, bool) or not isinstance(dedupe_threshold, int | float) or not (
            -1.0 <= float(dedupe_threshold) <= 1.0
        ):
            raise InvalidInputError(
                f"The 'dedupe_threshold' parameter of {owner} must be a float in [-1, 1]. "
                f"Got {dedupe_threshold!r} instead.")
        self.store = store
        self.extractor: Extractor = extractor if extractor is not None else RuleExtractor(max_chars=max_message_chars)
        self.user_id = check_user_id(user_id, owner=owner)
        self.dedupe_threshold = float(dedupe_threshold)
        self.scope = scope
        self.project_id = project_id
        self.max_message_chars = max_message_chars
        self.clock = clock or utcnow  # the wall clock, or a replayed message's time
        self.db = store.db
        self.db.migrate("conversation_memory", SCHEMA)

    def get_params(self) -> dict[str, Any]:
        """JSON-able description."""
        ex = getattr(self.extractor, "get_params", None)
        return {"dedupe_threshold": self.dedupe_threshold, "scope": self.scope, "project_id": self.project_id,
                "extractor": ex() if callable(ex) else type(self.extractor).__name__}

    # ------------------------------------------------------------------ conversations
    def _check_conv(self, conversation_id: Any) -> str:
        return check_text(conversation_id, name="conversation_id", owner="ConversationMemoryService", max_chars=256)

    def _row(self, conversation_id: str) -> Any:
        row = self.db.query_one("SELECT * FROM conv_memory WHERE conversation_id = ?", (conversation_id,))
        if row is None or row["user_id"] != self.user_id:
            return None
        return row

    def _owned_elsewhere(self, conversation_id: str) -> bool:
        row = self.db.query_one("SELECT user_id FROM conv_memory WHERE conversation_id = ?", (conversation_id,))
        return row is not None and row["user_id"] != self.user_id

    def start(self, conversation_id: str) -> ConversationMemory:
        """Create the conversation's memory if it does not exist (idempotent) and return it.

        Raises:
            InvalidInputError: bad id, or the id belongs to another user's conversation.
        """
        cid = self._check_conv(conversation_id)
        if self._owned_elsewhere(cid):
            raise InvalidInputError(f"Conversation {cid!r} belongs to another user; choose another conversation_id.")
        now = _ts(self.clock())
        self.db.execute(
            "INSERT INTO conv_memory(conversation_id, user_id, created_at, updated_at) VALUES (?,?,?,?) "
            "ON CONFLICT DO NOTHING",
            (cid, self.user_id, now, now))
        return self.get(cid)

    def conversations(self) -> list[str]:
        """This user's conversation ids, oldest first."""
        # ties of created_at (one clock tick) in insertion order: SQLite's rowid; PostgreSQL's table has no such
        # column, and its conversations of one tick come in id order
        tie = "rowid" if self.db.dialect == "sqlite" else "conversation_id"
        rows = self.db.query(f"SELECT conversation_id FROM conv_memory WHERE user_id = ? ORDER BY created_at, {tie}",
                             (self.user_id,))
        return [r["conversation_id"] for r in rows]

    def forget(self, conversation_id: str) -> bool:
        """Delete the conversation's memory (facts, topics, unanswered areas, state); the user's memories stay.

        Seed 001's ``onDelete: Cascade``: deleting a chat deletes its conversation memory. Returns whether
        there was anything to delete (another user's conversation counts as nothing).
        """
        cid = self._check_conv(conversation_id)
        with self.db.transaction():
            if self._row(cid) is None:
                return False
            for table in ("conv_facts", "conv_topics", "conv_unanswered", "conv_memory"):
                self.db.execute(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
        return True

    def get(self, conversation_id: str) -> ConversationMemory:
        """The conversation's memory (facts, topics, unanswered areas, fatigue, style).

        Raises:
            NotFoundError: unknown conversation, or one of another user.
        """
        cid = self._check_conv(conversation_id)
        row = self._row(cid)
        if row is None:
            raise NotFoundError(f"No conversation {cid!r} for user {self.user_id!r}.")
        frows = self.db.query("SELECT * FROM conv_facts WHERE conversation_id = ? ORDER BY id", (cid,))
        mem_ids = [int(r["memory_id"]) for r in frows if r["memory_id"] is not None]
        active = self._active_ids(mem_ids)
        facts = tuple(
            StoredFact(
                id=int(r["id"]), content=r["content"], topic=r["topic"], extracted_at=_dt(r["extracted_at"]) or self.clock(),
                confidence=float(r["confidence"]), keywords=tuple(json.loads(r["keywords"])), key=r["key"],
                value=r["value"], type=r["type"], memory_id=r["memory_id"], source=r["source"],
                message_index=int(r["message_index"]),
                is_active=r["memory_id"] is None or int(r["memory_id"]) in active,
            )
            for r in frows
        )
        topics = tuple(
            TopicState(topic_id=r["topic_id"], label=r["label"], coverage=Coverage(r["coverage"]),
                       covered=tuple(json.loads(r["covered"])), missing=tuple(json.loads(r["missing"])),
                       last_explored_at=_dt(r["last_explored_at"]))
            for r in self.db.query("SELECT * FROM conv_topics WHERE conversation_id = ? ORDER BY last_explored_at",
                                   (cid,))
        )
        unanswered = tuple(
            _unanswered(r)
            for r in self.db.query(
                "SELECT * FROM conv_unanswered WHERE conversation_id = ? ORDER BY priority, area", (cid,))
        )
        return ConversationMemory(
            conversation_id=cid, user_id=row["user_id"], facts=facts, topics=topics, unanswered=unanswered,
            fatigue=float(row["fatigue"]), tone=Tone(row["tone"]) if row["tone"] else None,
            avg_response_length=float(row["avg_response_length"]), n_messages=int(row["n_messages"]),
            emoji_used=bool(row["emoji_used"]), lang=row["lang"], created_at=_dt(row["created_at"]),
            updated_at=_dt(row["updated_at"]),
        )

    def _active_ids(self, ids: Sequence[int]) -> set[int]:
        return self.store.active_ids(self.user_id, ids)

    # ------------------------------------------------------------------ the update
    def update_after_user_message(
        self,
        conversation_id: str,
        message: str,
        topic: str | None = None,
        *,
        ref_time: datetime | None = None,
    ) -> UpdateResult:
        """Read one user message into the conversation memory and the store.

        Args:
            conversation_id: the conversation (created on first use, owned by this service's user).
            message: the user's message; control characters are removed; longer than ``max_message_chars``
                is truncated by the extractor (flagged in ``extraction.truncated``).
            topic: topic label for the facts, if known.
            ref_time: resolves relative dates (default: now).

        Returns:
            An :class:`UpdateResult` (new facts, known facts, store items, the updated memory).

        Raises:
            InvalidInputError: empty message, bad ids, or a conversation of another user; nothing changes.
        """
        cid = self._check_conv(conversation_id)
        clean, topic = self._check_message(message, topic)
        if self._owned_elsewhere(cid):
            raise InvalidInputError(f"Conversation {cid!r} belongs to another user; choose another conversation_id.")
        now = self.clock()
        row = self._row(cid)
        known = [f.content for f in self.get(cid).facts if f.is_active] if row is not None else []
        result = self.extractor.extract(clean, ref_time=ref_time or now, topic=topic, known=known)
        msg_index = (int(row["n_messages"]) if row else 0) + 1
        source = f"conv:{cid}/msg:{msg_index}"
        # "ieri" said today is a date tomorrow: the stored text keeps the words and gains the absolute date
        dated = [
            replace(f, topic=f.topic or topic,
                    content=resolve_relative_dates(f.content, ref_time or now, lang=result.lang or "it"))
            for f in result.facts
        ]
        new, known = self._dedupe(dated)
        items: list[MemoryItem] = []
        if new:
            specs = [
                dict(text=f.content, key=f.key, value=f.value, type=f.type, confidence=f.confidence,
                     keywords=[k for k in f.keywords if len(k) <= MAX_KEYWORD_CHARS][:MAX_KEYWORDS],
                     topic=f.topic, source=source, scope=self.scope,
                     project_id=self.project_id, correction=f.correction and f.key is not None)
                for f, _ in new
            ]
            items = self.store.add_many(self.user_id, specs, embeddings=np.stack([v for _, v in new]))
        rows_to_add = [(f, it.id) for (f, _), it in zip(new, items, strict=True)] + list(known)
        new_ids = self._write_conversation(cid, row, result, _ts(now), source, msg_index, rows_to_add)
        memory = self.get(cid)
        stored = tuple(sf for sf in memory.facts if sf.id in set(new_ids) and sf.memory_id in {i.id for i in items})
        if result.truncated:
            log.warning("conversation %s message %d was truncated before extraction", cid, msg_index)
        return UpdateResult(memory=memory, extraction=result, new_facts=stored, known=tuple(known),
                            memories=tuple(items))

    @staticmethod
    def _check_message(message: Any, topic: str | None) -> tuple[str, str | None]:
        """The message without control characters, and the checked topic."""
        if not isinstance(message, str):
            raise InvalidInputError(
                f"The 'message' parameter of ConversationMemoryService.update_after_user_message must be a str. "
                f"Got {type(message).__name__} instead.")
        clean = strip_control(message).strip()
        if not clean:
            raise InvalidInputError(
                "The 'message' parameter of ConversationMemoryService.update_after_user_message must be a "
                f"non-empty string. Got {message[:40]!r} instead.")
        if topic is not None:
            topic = check_text(topic, name="topic", owner="ConversationMemoryService", max_chars=200)
        return clean, topic

    def _write_conversation(
        self, cid: str, row: Any, result: Any, ts: str, source: str, msg_index: int,
        facts: Sequence[tuple[Fact, int]],
    ) -> list[int]:
        """Fold the message's signals into the conversation row and link its facts, in one transaction.

        The store's own write of new memories is already committed; a fact whose memory is already linked to
        this conversation is not linked twice. Returns the new ``conv_facts`` ids.
        """
        n_prev = msg_index - 1
        fatigue = FATIGUE_DECAY * (float(row["fatigue"]) if row else 0.0) + (1.0 - FATIGUE_DECAY) * float(
            result.fatigue_signal)
        avg = ((float(row["avg_response_length"]) if row else 0.0) * n_prev + result.n_chars) / msg_index
        tone = result.tone.value if result.tone is not None else (row["tone"] if row else None)
        emoji = (bool(row["emoji_used"]) if row else False) or result.has_emoji
        existing = {int(r["memory_id"]) for r in self.db.query(
            "SELECT memory_id FROM conv_facts WHERE conversation_id = ? AND memory_id IS NOT NULL", (cid,))}
        new_ids: list[int] = []
        with self.db.transaction():
            if row is None:
                self.db.execute(
                    "INSERT INTO conv_memory(conversation_id, user_id, created_at, updated_at) VALUES (?,?,?,?)",
                    (cid, self.user_id, ts, ts))
            self.db.execute(
                "UPDATE conv_memory SET fatigue = ?, tone = ?, avg_response_length = ?, n_messages = ?, "
                "emoji_used = ?, lang = ?, updated_at = ? WHERE conversation_id = ?",
                (fatigue, tone, avg, msg_index, int(emoji), result.lang, ts, cid))
            for f, mid in facts:
                if mid in existing:
                    continue
                existing.add(mid)
                row = self.db.query_one(
                    "INSERT INTO conv_facts(conversation_id, content, topic, extracted_at, confidence, keywords, key, "
                    "value, type, memory_id, source, message_index) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                    (cid, f.content, f.topic, ts, f.confidence, json.dumps(list(f.keywords), ensure_ascii=False),
                     f.key, f.value, f.type, mid, source, msg_index))
                new_ids.append(int(row["id"]))
        return new_ids

    def _dedupe(self, facts: list[Fact]) -> tuple[list[tuple[Fact, np.ndarray]], list[tuple[Fact, int]]]:
        """Split facts into new ones (with their vectors) and known ones (with the memory they repeat)."""
        if not facts:
            return [], []
        vecs = self.store.embedder.embed([f.content for f in facts])
        new: list[tuple[Fact, np.ndarray]] = []
        known: list[tuple[Fact, int]] = []
        for f, v in zip(facts, vecs, strict=True):
            if f.key is not None:
                match = self._same_slot_value(f)
                if match is not None:
                    known.append((f, match))
                    continue
                if any(g.key == f.key and _same_value(f.key, g.value, f.value) for g, _ in new):
                    continue
                new.append((f, v))
                continue
            hit = self._similar_memory(f, v)
            if hit is not None:
                known.append((f, hit))
                continue
            if any(float(v @ w) >= self.dedupe_threshold and _details(f.content) == _details(g.content)
                   for g, w in new if g.key is None):
                continue
            new.append((f, v))
        return new, known

    def _same_slot_value(self, f: Fact) -> int | None:
        spec_type = f.type
        for m in self.store.list(self.user_id, key=f.key, type=spec_type, scope=self.scope, project_id=self.project_id):
            if _same_value(f.key, m.value, f.value):
                return m.id
        return None

    def _similar_memory(self, f: Fact, v: np.ndarray) -> int | None:
        hits = self.store.search_by_vector(self.user_id, v, k=3, min_score=self.dedupe_threshold)
        for item, _score in hits:
            if _details(item.text) == _details(f.content):
                return item.id
        return None

    # ------------------------------------------------------------------ topics & unanswered areas
    def mark_topic_explored(
        self,
        conversation_id: str,
        topic_id: str,
        coverage: Coverage | str = Coverage.SHALLOW,
        *,
        label: str | None = None,
        covered: Sequence[str] = (),
        missing: Sequence[str] = (),
    ) -> TopicState:
        """Record that a topic was explored (upsert).

        Covered sub-goals accumulate across calls; a sub-goal once covered is removed from ``missing``.

        Args:
            conversation_id: the conversation (created if new).
            topic_id: stable topic id.
            coverage: ``shallow``, ``moderate`` or ``deep``.
            label: human label (default: the topic id, or the stored label).
            covered: sub-goals covered now.
            missing: sub-goals still to cover.

        Raises:
            InvalidInputError: bad coverage or ids.
        """
        owner = "ConversationMemoryService.mark_topic_explored"
        try:
            cov = Coverage(coverage)
        except ValueError:
            raise InvalidInputError(
                f"The 'coverage' parameter of {owner} must be one of {[c.value for c in Coverage]}. "
                f"Got {coverage!r} instead.") from None
        tid = check_text(topic_id, name="topic_id", owner=owner, max_chars=200)
        for name, seq in (("covered", covered), ("missing", missing)):
            if isinstance(seq, str):
                raise InvalidInputError(f"The {name!r} parameter of {owner} must be a sequence of str, not a str.")
        cov_new = [check_text(s, name="covered", owner=owner, max_chars=200) for s in covered]
        mis_new = [check_text(s, name="missing", owner=owner, max_chars=200) for s in missing]
        mem = self.start(conversation_id)
        prev = next((t for t in mem.topics if t.topic_id == tid), None)
        all_cov = list(dict.fromkeys([*(prev.covered if prev else ()), *cov_new]))
        all_mis = [m for m in dict.fromkeys([*(prev.missing if prev else ()), *mis_new]) if m not in all_cov]
        lab = check_text(label, name="label", owner=owner, max_chars=200) if label else (prev.label if prev else tid)
        now = self.clock()
        self.db.execute(
            "INSERT INTO conv_topics(conversation_id, topic_id, label, coverage, covered, missing, last_explored_at) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT(conversation_id, topic_id) DO UPDATE SET label = excluded.label, "
            "coverage = excluded.coverage, covered = excluded.covered, missing = excluded.missing, "
            "last_explored_at = excluded.last_explored_at",
            (mem.conversation_id, tid, lab, cov.value, json.dumps(all_cov, ensure_ascii=False),
             json.dumps(all_mis, ensure_ascii=False), _ts(now)))
        return TopicState(tid, lab, cov, tuple(all_cov), tuple(all_mis), now)

    def record_unanswered(
        self, conversation_id: str, area: str, *, priority: Priority | str = Priority.MEDIUM,
        skip_reason: SkipReason | str | None = None,
    ) -> UnansweredArea:
        """Record an area the user did not answer; asking again increments ``attempts``.

        Args:
            conversation_id: the conversation (created if new).
            area: what was asked.
            priority: ``high``, ``medium`` or ``low``.
            skip_reason: ``user_declined``, ``off_topic`` or ``time_limit``, when it was skipped.

        Raises:
            InvalidInputError: bad priority, skip reason or text.
        """
        owner = "ConversationMemoryService.record_unanswered"
        prio = check_enum(Priority, priority, name="priority", owner=owner)
        reason = None if skip_reason is None else check_enum(SkipReason, skip_reason, name="skip_reason", owner=owner)
        area = check_text(area, name="area", owner=owner, max_chars=300)
        mem = self.start(conversation_id)
        now = self.clock()
        self.db.execute(
            "INSERT INTO conv_unanswered(conversation_id, area, priority, attempts, skip_reason, updated_at) "
            "VALUES (?,?,?,1,?,?) ON CONFLICT(conversation_id, area) DO UPDATE SET priority = excluded.priority, "
            "attempts = attempts + 1, skip_reason = COALESCE(excluded.skip_reason, skip_reason), "
            "updated_at = excluded.updated_at",
            (mem.conversation_id, area, _PRIORITY_RANK[prio], reason.value if reason else None, _ts(now)))
        row = self.db.query_one("SELECT * FROM conv_unanswered WHERE conversation_id = ? AND area = ?",
                                (mem.conversation_id, area))
        if row is None:  # pragma: no cover - just written in the same connection
            raise NotFoundError(f"Unanswered area {area!r} vanished from conversation {mem.conversation_id!r}.")
        return _unanswered(row)

    def resolve_unanswered(self, conversation_id: str, area: str) -> None:
        """Remove an area once the user has answered it (unknown areas are ignored).

        Raises:
            NotFoundError: unknown conversation (or another user's).
        """
        mem = self.get(conversation_id)
        self.db.execute("DELETE FROM conv_unanswered WHERE conversation_id = ? AND area = ?",
                        (mem.conversation_id, area))
