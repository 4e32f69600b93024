"""Chats: full history for the UI, a compacted history for the model, a theme summary for search.

A chat's ``full_history`` holds every turn ever appended, in order; turn ``i`` is at position ``i``
forever. The model never reads it: it reads ``assistant_history``, which is at most
``summary_window_size`` (30) turns. When an append makes it longer, the old part is folded into ONE
summary turn ``{"role": "model", "parts": [{"text": summary}]}`` at the head, and the last
``summary_window_size - 1`` turns stay. An earlier summary is passed to the summariser as consolidated
truth and replaced by the new one (never stacked). So at all times::

    assistant_history == [summary turn] + full_history[compacted_until:]   (after the first compaction)
    assistant_history == full_history                                       (before it)

Every sentence of an extractive summary remembers which ``full_history`` positions it came from
(:meth:`ChatStore.compaction_summary`), so provenance survives any number of compactions.

Each chat also has a theme (what the chat is about, ``style="theme"``), refreshed at every append, with its
embedding (of exactly that text), and a ``title`` derived from it. As in the seed's chats table, the chat's
``summary_text`` and ``summary_embedding`` are empty until the first compaction and are the theme from then on;
before it the theme (``Chat.theme``) already gives the chat its title and makes it findable by the chat switch.
An automatic title changes only when the focus changes: when the cosine between the current theme embedding and
the embedding the title was derived from (``title_anchor``, stored with its text ``title_anchor_text``) falls
below ``title_min_similarity`` (default: the embedder's own calibrated drift threshold
``embedder.thresholds.title_drift``: the median cosine between a text and the same text with half of its
sentences on another subject). The first title is the summary sentence closest to the summary's own embedding; a
new title names the new focus: the sentence closest to the current summary and farthest from the summary the old
title came from. Only what the user said names a chat (or a theme an LLM summariser wrote): the assistant's
replies never do, and ``meta`` turns (the assistant's bookkeeping: chat-switch exchanges, answers to
notifications, the "no model" marker) are never summary, title or archive material. Titles are cut to 60
characters. A title given by the user is never replaced.

Compaction also archives the folded turns as dated 3-turn passages (:mod:`memlab.chats.passages`), embedded and
full-text indexed, so :meth:`ChatStore.search_history` still finds what was said after the window moved on.

Tables (in the memory store's SQLite file, component ``chats``): ``chats``, ``chat_turns``, ``chat_passages`` and
``chat_passages_fts``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import check_positive_int, check_text, check_user_id
from memlab.chats import retrieval
from memlab.chats.passages import PASSAGE_TURNS, PassageHit, passage_text, passage_windows
from memlab.chats.retrieval import TURNS_AFTER
from memlab.chats.summarize import ExtractiveSummarizer, Passage, Summarizer, Summary, SummarySentence
from memlab.chats.switch import LEXICAL_WEIGHT, ChatSwitch
from memlab.clock import utcnow
from memlab.errors import InvalidInputError, NotFoundError
from memlab.protocols import Embedder
from memlab.store.db import is_database
from memlab.store.lexical import FTS_TOKENIZER, lexical_text, owner_token
from memlab.store.opening import open_database
from memlab.text import split_sentences

__all__ = ["SUMMARY_WINDOW_SIZE", "TURNS_AFTER", "Chat", "ChatStore", "validate_turns"]

#: Max turns in ``assistant_history`` (the window sent to the model after the summary turn).
SUMMARY_WINDOW_SIZE = 30
#: Longest text of one turn (all parts together), in characters.
MAX_TURN_CHARS = 100_000
_TITLE_CHARS = 60

SCHEMA: list[str] = [
    """
    CREATE TABLE chats (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        title TEXT,
        title_source TEXT NOT NULL DEFAULT 'auto',
        title_anchor BLOB,
        n_turns INTEGER NOT NULL DEFAULT 0,
        compacted_until INTEGER NOT NULL DEFAULT 0,
        compaction_text TEXT,
        compaction_sentences TEXT NOT NULL DEFAULT '[]',
        compaction_summarizer TEXT,
        n_compactions INTEGER NOT NULL DEFAULT 0,
        summary_text TEXT,
        summary_embedding BLOB,
        summary_embedder TEXT,
        created_at TEXT NOT NULL,
        last_activity_at TEXT NOT NULL
    );
    CREATE INDEX idx_chats_user ON chats(user_id, last_activity_at);
    CREATE TABLE chat_turns (
        chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
        pos INTEGER NOT NULL,
        role TEXT NOT NULL,
        parts TEXT NOT NULL,
        thinking TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (chat_id, pos)
    )
    """,
    # 2: the passage archive of compacted turns (memlab.chats.passages) and its full-text index (rowid = passage
    # id, ``owner`` = a token of the user id); ``archived_until`` = positions already archived.
    f"""
    ALTER TABLE chats ADD COLUMN archived_until INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE chat_passages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        start_pos INTEGER NOT NULL,
        end_pos INTEGER NOT NULL,
        text TEXT NOT NULL,
        at TEXT NOT NULL,
        embedding BLOB NOT NULL,
        embedder TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX idx_passages_user ON chat_passages(user_id);
    CREATE INDEX idx_passages_chat ON chat_passages(chat_id);
    CREATE VIRTUAL TABLE chat_passages_fts USING fts5(owner, text, tokenize='{FTS_TOKENIZER}')
    """,
    # 3: ``meta`` turns (the assistant's own bookkeeping: chat-switch exchanges, answers to notifications, the
    # "no model" marker) are kept in the histories but are never summary, title or archive material; the title
    # anchor keeps the text it is the embedding of (an anchor written before this migration, whose text is lost, is
    # moved to the current summary: the title stays, only the point drift is measured from moves).
    """
    ALTER TABLE chat_turns ADD COLUMN meta INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE chats ADD COLUMN title_anchor_text TEXT;
    UPDATE chats SET title_anchor_text = summary_text WHERE title_anchor IS NOT NULL AND title_anchor = summary_embedding;
    UPDATE chats SET title_anchor = summary_embedding, title_anchor_text = summary_text
        WHERE title_anchor IS NOT NULL AND title_anchor_text IS NULL
    """,
]

_ROLES = ("user", "model")
_TURN_KEYS = frozenset({"role", "parts", "thinking"})


@dataclass(frozen=True, slots=True, eq=False)
class Chat:
    """One chat of one user: full history, compaction state, title and summary embedding.

    Attributes:
        id: chat id.
        user_id: owner. No method returns another user's chat.
        title: the chat's title (user-given, or derived from ``summary_text``).
        full_history: every turn, oldest first, as ``{"role", "parts": [{"text"}], "thinking"?}`` dicts (UI).
        assistant_history: what the model sees (at most ``summary_window_size`` turns; after the first
            compaction the head is the summary turn). ``thinking`` is never included.
        summary_text: what the chat is about, as the seed's chats table has it: ``None`` until the first
            compaction, then the chat's theme (refreshed at every append).
        summary_embedding: float32 embedding of exactly ``summary_text`` (passage mode); ``None`` with it.
        last_activity_at: time of the last append (UTC).
        created_at: creation time (UTC).
        title_source: ``user`` (never changed automatically) or ``auto``.
        compacted_until: number of ``full_history`` turns folded into the summary turn (0 = not compacted).
        n_compactions: how many times the chat was compacted.
        theme: what the chat is about now, from its first turn (or its user title) on: the title and the chat
            switch work from it; ``summary_text`` is the same text once the chat has been compacted.
    """

    id: str
    user_id: str
    title: str | None
    full_history: tuple[dict[str, Any], ...]
    assistant_history: tuple[dict[str, Any], ...]
    summary_text: str | None
    summary_embedding: NDArray[np.float32] | None = field(repr=False)
    last_activity_at: datetime
    created_at: datetime
    title_source: str = "auto"
    compacted_until: int = 0
    n_compactions: int = 0
    theme: str | None = None

    @property
    def is_compacted(self) -> bool:
        """True once the head of ``assistant_history`` is a summary turn."""
        return self.compacted_until > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chat):
            return NotImplemented
        same_emb = (self.summary_embedding is None and other.summary_embedding is None) or (
            self.summary_embedding is not None
            and other.summary_embedding is not None
            and np.array_equal(self.summary_embedding, other.summary_embedding)
        )
        return same_emb and all(
            getattr(self, f) == getattr(other, f)
            for f in (
                "id",
                "user_id",
                "title",
                "full_history",
                "assistant_history",
                "summary_text",
                "last_activity_at",
                "created_at",
                "title_source",
                "compacted_until",
                "n_compactions",
                "theme",
            )
        )

    __hash__ = None  # type: ignore[assignment]


def _utcnow() -> datetime:
    return utcnow()  # the wall clock, or a replayed message's time (memlab.clock)


def _turn_text(turn: Mapping[str, Any]) -> str:
    return "\n".join(p["text"] for p in turn["parts"])


def validate_turns(
    turns: Any, *, owner: str = "ChatStore.append", max_chars: int = MAX_TURN_CHARS
) -> list[dict[str, Any]]:
    """Validate chat turns and return clean copies (text NFC-normalised and stripped).

    A turn is ``{"role": "user"|"model", "parts": [{"text": str}, ...], "thinking": str (optional)}``.

    Raises:
        InvalidInputError: not a list of mappings, unknown keys, a bad role, no parts, a part without
            text, empty text, control characters, or more than ``max_chars`` characters in a turn.

    Example:
        >>> validate_turns([{"role": "user", "parts": [{"text": " Ciao "}]}])
        [{'role': 'user', 'parts': [{'text': 'Ciao'}]}]
    """
    if isinstance(turns, Mapping | str | bytes) or not isinstance(turns, Sequence):
        raise InvalidInputError(
            f"The 'turns' parameter of {owner} must be a list of turn dicts. Got {type(turns).__name__} instead."
        )
    out = []
    for i, turn in enumerate(turns):
        where = f"turns[{i}]"
        if not isinstance(turn, Mapping):
            raise InvalidInputError(f"{where} of {owner} must be a dict. Got {type(turn).__name__} instead.")
        extra = set(turn) - _TURN_KEYS
        if extra:
            raise InvalidInputError(
                f"{where} of {owner} has unknown keys {sorted(map(str, extra))}; allowed: role, parts, thinking."
            )
        role = turn.get("role")
        if role not in _ROLES:
            raise InvalidInputError(
                f"The role of {where} of {owner} must be 'user' or 'model'. Got {role!r} instead."
            )
        parts = turn.get("parts")
        if isinstance(parts, Mapping | str) or not isinstance(parts, Sequence) or not parts:
            raise InvalidInputError(
                f"The parts of {where} of {owner} must be a non-empty list. Got {parts!r} instead."
            )
        clean_parts = []
        total = 0
        for j, part in enumerate(parts):
            if not isinstance(part, Mapping) or set(part) != {"text"}:
                raise InvalidInputError(
                    f"{where}.parts[{j}] of {owner} must be a dict with exactly one key 'text'. Got {part!r} instead."
                )
            text = check_text(part["text"], name=f"{where}.parts[{j}].text", owner=owner, max_chars=max_chars)
            total += len(text)
            clean_parts.append({"text": text})
        if total > max_chars:
            raise InvalidInputError(
                f"The text of {where} of {owner} must be at most {max_chars} characters. Got {total} instead."
            )
        clean: dict[str, Any] = {"role": role, "parts": clean_parts}
        thinking = turn.get("thinking")
        if thinking is not None:
            if not isinstance(thinking, str):
                raise InvalidInputError(
                    f"The thinking of {where} of {owner} must be a str. Got {thinking!r} instead."
                )
            if thinking.strip():
                clean["thinking"] = check_text(
                    thinking, name=f"{where}.thinking", owner=owner, max_chars=max_chars
                )
        out.append(clean)
    return out


class ChatStore:
    """User-scoped chats in the memory store's SQLite file, with compaction, summaries and chat switch.

    Args:
        store_or_db: a :class:`~memlab.store.MemoryStore` (its database and, by default, its embedder are
            used), a :class:`~memlab.store.db.Database`, or a SQLite path.
        embedder: embeds chat summaries (passage mode) and switch queries (query mode). Default: the store's.
        summarizer: default :class:`~memlab.chats.ExtractiveSummarizer` over ``embedder``.
        summary_window_size: max turns in ``assistant_history`` (>= 2; seed value 30).
        clock: returns "now" (tz-aware); injectable for tests.
        summary_max_chars: budget of the compaction summary turn.
        chat_summary_max_chars: budget of the chat-level ``summary_text``.
        title_min_similarity: an automatic title is re-derived when cos(title's summary, current summary)
            drops below this. Default: ``embedder.thresholds.title_drift`` (0.7 if the embedder has none).
        min_similarity: chat-switch candidate threshold ``tau``. Default: ``embedder.thresholds.chat_search``
            (0.3 if none).
        switch_margin: a switch needs ``score_1 - score_2 >= switch_margin`` (see :mod:`memlab.chats.switch`).
        recency_weight: weight of recency in the switch score.
        recency_half_life_days: half-life of the recency term.
        lexical_weight: weight of the lexical evidence (the request's distinctive words) in the switch score.
        max_turn_chars: longest accepted turn text.

    Example:
        >>> from memlab.store import MemoryStore
        >>> from memlab.testing import FakeEmbedder
        >>> chats = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder()), summary_window_size=4)
        >>> c = chats.create("u1", turns=[{"role": "user", "parts": [{"text": f"Messaggio numero {i}."}]}
        ...                               for i in range(6)])
        >>> len(c.full_history), len(c.assistant_history), c.compacted_until
        (6, 4, 3)
    """

    def __init__(
        self,
        store_or_db: Any,
        embedder: Embedder | None = None,
        summarizer: Summarizer | None = None,
        *,
        summary_window_size: int = SUMMARY_WINDOW_SIZE,
        clock: Callable[[], datetime] | None = None,
        summary_max_chars: int = 1500,
        chat_summary_max_chars: int = 300,
        title_min_similarity: float | None = None,
        min_similarity: float | None = None,
        switch_margin: float = 0.1,
        recency_weight: float = 0.05,
        recency_half_life_days: float = 14.0,
        lexical_weight: float = LEXICAL_WEIGHT,
        max_turn_chars: int = MAX_TURN_CHARS,
    ) -> None:
        owner = "ChatStore"
        if is_database(store_or_db):
            db = store_or_db
        elif isinstance(store_or_db, str | os.PathLike):
            db = open_database(store_or_db)
        elif is_database(getattr(store_or_db, "db", None)):
            db = store_or_db.db
            embedder = embedder or getattr(store_or_db, "embedder", None)
        else:
            raise InvalidInputError(
                f"The 'store_or_db' parameter of {owner} must be a MemoryStore, a Database or a path. "
                f"Got {type(store_or_db).__name__} instead."
            )
        if embedder is None:
            raise InvalidInputError(
                f"The 'embedder' parameter of {owner} is required when no MemoryStore is given."
            )
        if (
            isinstance(summary_window_size, bool)
            or not isinstance(summary_window_size, int)
            or summary_window_size < 2
        ):
            raise InvalidInputError(
                f"The 'summary_window_size' parameter of {owner} must be an int in [2, inf). Got {summary_window_size!r} instead."
            )
        for name, value in (
            ("summary_max_chars", summary_max_chars),
            ("chat_summary_max_chars", chat_summary_max_chars),
            ("max_turn_chars", max_turn_chars),
        ):
            check_positive_int(value, name=name, owner=owner)
        for name, fvalue in (("switch_margin", switch_margin), ("recency_weight", recency_weight),
                             ("lexical_weight", lexical_weight)):
            if isinstance(fvalue, bool) or not isinstance(fvalue, int | float) or fvalue < 0:
                raise InvalidInputError(
                    f"The {name!r} parameter of {owner} must be a float >= 0. Got {fvalue!r} instead."
                )
        if not isinstance(recency_half_life_days, int | float) or recency_half_life_days <= 0:
            raise InvalidInputError(
                f"The 'recency_half_life_days' parameter of {owner} must be a float > 0. Got {recency_half_life_days!r} instead."
            )
        for name, sim in (("title_min_similarity", title_min_similarity), ("min_similarity", min_similarity)):
            if sim is not None and (not isinstance(sim, int | float) or not -1.0 <= sim < 1.0):
                raise InvalidInputError(
                    f"The {name!r} parameter of {owner} must be a float in [-1, 1) or None. Got {sim!r} instead."
                )
        self.db = db
        self.embedder = embedder
        self.summarizer: Summarizer = summarizer if summarizer is not None else ExtractiveSummarizer(embedder)
        self.summary_window_size = summary_window_size
        self.clock = clock or _utcnow
        self.summary_max_chars = summary_max_chars
        self.chat_summary_max_chars = chat_summary_max_chars
        self.title_min_similarity = title_min_similarity
        self.min_similarity = min_similarity
        self.switch_margin = float(switch_margin)
        self.recency_weight = float(recency_weight)
        self.recency_half_life_days = float(recency_half_life_days)
        self.lexical_weight = float(lexical_weight)
        self.max_turn_chars = max_turn_chars
        self.db.migrate("chats", SCHEMA)

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """JSON-able parameters (recorded in eval runs)."""
        get = getattr(self.summarizer, "get_params", None)
        return {
            "summary_window_size": self.summary_window_size,
            "summary_max_chars": self.summary_max_chars,
            "chat_summary_max_chars": self.chat_summary_max_chars,
            "title_min_similarity": self._title_threshold(),
            "min_similarity": self._tau(),
            "switch_margin": self.switch_margin,
            "recency_weight": self.recency_weight,
            "lexical_weight": self.lexical_weight,
            "recency_half_life_days": self.recency_half_life_days,
            "embedder": getattr(self.embedder, "name", type(self.embedder).__name__),
            "summarizer": get() if callable(get) else getattr(self.summarizer, "name", "?"),
        }

    def _thresholds(self) -> Any:
        return getattr(self.embedder, "thresholds", None)

    def _tau(self) -> float:
        if self.min_similarity is not None:
            return float(self.min_similarity)
        return float(getattr(self._thresholds(), "chat_search", 0.3))

    def _title_threshold(self) -> float:
        if self.title_min_similarity is not None:
            return float(self.title_min_similarity)
        return float(getattr(self._thresholds(), "title_drift", 0.7))

    def _now(self) -> datetime:
        now = self.clock()
        if now.tzinfo is None:
            raise InvalidInputError(f"The clock of ChatStore must return tz-aware datetimes. Got {now!r}.")
        return now.astimezone(UTC)

    # ------------------------------------------------------------------ rows
    def _row(self, chat_id: Any, user_id: str | None, owner: str) -> Any:
        if not isinstance(chat_id, str) or not chat_id:
            raise NotFoundError(f"{owner}: chat id must be a non-empty str. Got {chat_id!r}.")
        row = self.db.query_one("SELECT * FROM chats WHERE id = ?", (chat_id,))
        if row is None or (user_id is not None and row["user_id"] != user_id):
            raise NotFoundError(
                f"No chat with id {chat_id!r}" + (f" for user {user_id!r}" if user_id else "") + "."
            )
        return row

    def _turns(self, chat_id: str, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        return [t for _, t in self._turns_meta(chat_id, start, stop)]

    def _content_turns(self, chat_id: str, start: int = 0, stop: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """``(position, turn)`` of the turns in ``[start, stop)`` that are conversation, not ``meta`` bookkeeping:
        the material of summaries and titles."""
        return [(start + i, t) for i, (meta, t) in enumerate(self._turns_meta(chat_id, start, stop)) if not meta]

    def _turns_meta(self, chat_id: str, start: int = 0, stop: int | None = None) -> list[tuple[bool, dict[str, Any]]]:
        sql = "SELECT role, parts, thinking, meta FROM chat_turns WHERE chat_id = ? AND pos >= ?"
        params: list[Any] = [chat_id, start]
        if stop is not None:
            sql += " AND pos < ?"
            params.append(stop)
        out = []
        for r in self.db.query(sql + " ORDER BY pos", params):
            t: dict[str, Any] = {"role": r["role"], "parts": json.loads(r["parts"])}
            if r["thinking"]:
                t["thinking"] = r["thinking"]
            out.append((bool(r["meta"]), t))
        return out

    @staticmethod
    def _sentences(row: Any) -> list[SummarySentence]:
        return [
            SummarySentence(s["text"], s["role"], tuple(s["sources"]), float(s.get("score", 0.0)))
            for s in json.loads(row["compaction_sentences"])
        ]

    def _to_chat(self, row: Any) -> Chat:
        full = self._turns(row["id"])
        c = int(row["compacted_until"])
        visible = [{"role": t["role"], "parts": t["parts"]} for t in full[c:]]
        assistant = ([{"role": "model", "parts": [{"text": row["compaction_text"]}]}] if c > 0 else []) + [
            {"role": t["role"], "parts": [dict(p) for p in t["parts"]]} for t in visible
        ]
        emb = row["summary_embedding"]
        compacted = int(row["n_compactions"]) > 0  # the seed's summary fields are empty until the first compaction
        return Chat(
            id=row["id"],
            user_id=row["user_id"],
            title=row["title"],
            full_history=tuple(full),
            assistant_history=tuple(assistant),
            summary_text=row["summary_text"] if compacted else None,
            summary_embedding=None if emb is None or not compacted else np.frombuffer(emb, dtype=np.float32).copy(),
            last_activity_at=datetime.fromisoformat(row["last_activity_at"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            title_source=row["title_source"],
            compacted_until=c,
            n_compactions=int(row["n_compactions"]),
            theme=row["summary_text"],
        )

    # ------------------------------------------------------------------ public API
    def create(self, user_id: str, title: str | None = None, turns: Sequence[Mapping[str, Any]] = ()) -> Chat:
        """Create a chat for ``user_id`` (optionally with a user title and first turns).

        Raises:
            InvalidInputError: bad user id, title or turns (nothing is created).
        """
        user_id = check_user_id(user_id, owner="ChatStore.create")
        if title is not None:
            title = check_text(title, name="title", owner="ChatStore.create", max_chars=200)
        clean = validate_turns(list(turns), owner="ChatStore.create", max_chars=self.max_turn_chars)
        chat_id = uuid.uuid4().hex
        now = self._now().isoformat()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO chats (id, user_id, title, title_source, created_at, last_activity_at) VALUES (?,?,?,?,?,?)",
                (chat_id, user_id, title, "user" if title else "auto", now, now),
            )
            if title and not clean:
                self._set_summary(chat_id, title)
            if clean:
                self._append(chat_id, clean)
        return self.get(chat_id)

    def get(self, chat_id: str, *, user_id: str | None = None) -> Chat:
        """The chat (``full_history`` for the UI, ``assistant_history`` for the model).

        Raises:
            NotFoundError: unknown id, or owned by another user when ``user_id`` is given.
        """
        return self._to_chat(self._row(chat_id, user_id, "ChatStore.get"))

    def history_for_model(self, chat_id: str, *, user_id: str | None = None) -> list[dict[str, Any]]:
        """What the assistant receives: ``assistant_history`` only (never ``full_history``), as new dicts."""
        return [json.loads(json.dumps(t)) for t in self.get(chat_id, user_id=user_id).assistant_history]

    def compaction_summary(self, chat_id: str, *, user_id: str | None = None) -> Summary | None:
        """The current summary turn with per-sentence provenance (``None`` before the first compaction)."""
        row = self._row(chat_id, user_id, "ChatStore.compaction_summary")
        if int(row["compacted_until"]) == 0:
            return None
        return Summary(
            row["compaction_text"], tuple(self._sentences(row)), row["compaction_summarizer"] or ""
        )

    def append(self, chat_id: str, turns: Sequence[Mapping[str, Any]], *, user_id: str | None = None,
               meta: bool | Sequence[bool] = False) -> Chat:
        """Append turns; compact ``assistant_history`` if it exceeds the window; refresh summary and title.

        All or nothing: turns are validated first, and the turns, the compaction and the summary are written
        in one transaction (if the summariser fails, nothing is written and the error propagates).

        Args:
            meta: the turns are the assistant's bookkeeping rather than conversation (a chat-switch request and
                its answer, an answer to a notification, the "no model" marker): they stay in ``full_history``
                and ``assistant_history`` but never become summary, title or archive material, so they can never
                rename the chat. One bool for all the turns, or one per turn.

        Raises:
            NotFoundError: unknown chat (or another user's).
            InvalidInputError: a bad turn (nothing is appended).
        """
        row = self._row(chat_id, user_id, "ChatStore.append")
        clean = validate_turns(turns, owner="ChatStore.append", max_chars=self.max_turn_chars)
        flags = [meta] * len(clean) if isinstance(meta, bool) else list(meta)
        if len(flags) != len(clean) or not all(isinstance(f, bool) for f in flags):
            raise InvalidInputError(
                f"The 'meta' parameter of ChatStore.append must be a bool or one bool per turn. Got {meta!r}.")
        if not clean:
            return self._to_chat(row)
        with self.db.transaction():
            self._append(chat_id, clean, meta=flags)
        return self.get(chat_id)

    def compact(self, chat_id: str, *, user_id: str | None = None) -> Chat:
        """Compact now if ``assistant_history`` is over the window (a no-op otherwise: idempotent).

        Useful after lowering ``summary_window_size`` on an existing database.
        """
        self._row(chat_id, user_id, "ChatStore.compact")
        with self.db.transaction():
            if self._compact(chat_id):
                self._refresh_summary(chat_id)
        return self.get(chat_id)

    def delete(self, chat_id: str, *, user_id: str) -> None:
        """Delete a chat of ``user_id`` and its turns (a user action; memories extracted from it are not touched).

        Raises:
            NotFoundError: unknown chat, or another user's (the owner is required).
        """
        user_id = check_user_id(user_id, owner="ChatStore.delete")
        self._row(chat_id, user_id, "ChatStore.delete")
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM chat_passages_fts WHERE rowid IN (SELECT id FROM chat_passages WHERE chat_id = ?)",
                (chat_id,),
            )
            self.db.execute("DELETE FROM chat_passages WHERE chat_id = ?", (chat_id,))
            self.db.execute("DELETE FROM chat_turns WHERE chat_id = ?", (chat_id,))
            self.db.execute("DELETE FROM chats WHERE id = ?", (chat_id,))

    def list(self, user_id: str) -> list[Chat]:
        """The user's chats, most recently active first."""
        user_id = check_user_id(user_id, owner="ChatStore.list")
        rows = self.db.query(
            "SELECT * FROM chats WHERE user_id = ? ORDER BY last_activity_at DESC, created_at DESC, id",
            (user_id,),
        )
        return [self._to_chat(r) for r in rows]

    # ------------------------------------------------------------------ retrieval (memlab.chats.retrieval)
    def search(self, user_id: str, query: str, k: int = 5) -> ChatSwitch:
        """Natural-language chat switch: which of the user's chats does ``query`` mean?

        The request wrapper ("la chat in cui parlavamo del ...") is stripped, the topic is embedded in query
        mode, compared with the user's chat summaries, and scored with recency (formula and decision rule in
        :mod:`memlab.chats.switch`).

        Returns:
            ``ChatSwitch(decision="switch"|"ask"|"none", chat_id, candidates)``; only this user's chats.

        Raises:
            InvalidInputError: bad user id, empty query, or ``k`` < 1.
        """
        return retrieval.search_chats(self, user_id, query, k)

    def search_history(
        self,
        user_id: str,
        query: str,
        k: int = 10,
        *,
        chat_id: str | None = None,
        mode: str = "hybrid",
    ) -> list[PassageHit]:
        """The ``k`` archived passages of the user's chats that best match ``query`` (what compaction folded away).

        Args:
            chat_id: search only this chat (it must be the user's).
            mode: ``hybrid`` (dense + FTS5 BM25, reciprocal rank fusion; default) or ``dense`` (cosine only).

        Returns:
            Hits best first; only this user's chats. Chats compacted before the archive existed are archived
            first (once).

        Raises:
            InvalidInputError: bad user id, empty query, ``k`` < 1, unknown mode.
            NotFoundError: ``chat_id`` is not one of the user's chats.
        """
        return retrieval.search_history(self, user_id, query, k, chat_id=chat_id, mode=mode)

    def passages_at(self, user_id: str, chat_id: str, positions: Sequence[int]) -> list[PassageHit]:
        """The archived passages of ``chat_id`` that end at ``positions`` (each folded turn's passage: the turn and up
        to two before it in its session), in the order of ``positions``; positions not archived (still in the
        window, or unknown) are skipped. ``score`` is 0: nothing was compared.

        This is how a memory retrieved for the prompt brings the words it came from (the Assistant's
        small-to-big retrieval: a fact is a precise key, its passage the context the model reads).

        Raises:
            InvalidInputError: bad user id or a position that is not an int >= 0.
            NotFoundError: ``chat_id`` is not one of the user's chats.
        """
        return retrieval.passages_at(self, user_id, chat_id, positions)

    def passages_around(self, user_id: str, chat_id: str, positions: Sequence[int]) -> list[PassageHit]:
        """The archived turns around each of ``positions``: the passage ending there and the one ending
        ``TURNS_AFTER`` turns later when it still holds the position (the same session) — two turns before, two
        after. What a memory said at that position brings into the Assistant's prompt (small-to-big), and what
        ``memlab eval memory-recall`` scores it for. Chosen on LoCoMo dev over the passage alone.

        Raises:
            InvalidInputError: bad user id or a position that is not an int >= 0.
            NotFoundError: ``chat_id`` is not one of the user's chats.
        """
        return retrieval.passages_around(self, user_id, chat_id, positions)

    def _embedder_name(self) -> str:
        return str(getattr(self.embedder, "name", type(self.embedder).__name__))

    # ------------------------------------------------------------------ internals (inside a transaction)
    def _summary_vector(self, row: Any) -> NDArray[np.float32]:
        """Stored summary embedding; re-embedded from its text if another embedder wrote it."""
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        emb = row["summary_embedding"]
        vec = None if emb is None else np.frombuffer(emb, dtype=np.float32)
        if vec is None or row["summary_embedder"] != name or vec.shape[0] != self.embedder.dim:
            vec = np.asarray(self.embedder.embed([row["summary_text"]], mode="passage"), dtype=np.float32)[0]
            self.db.execute(
                "UPDATE chats SET summary_embedding = ?, summary_embedder = ? WHERE id = ?",
                (vec.tobytes(), name, row["id"]),
            )
        return vec

    def _title_sentence(
        self,
        text: str,
        vec: NDArray[np.float32],
        summary: Summary | None,
        old_anchor: NDArray[np.float32] | None = None,
        user_texts: Sequence[str] = (),
    ) -> str | None:
        """The sentence that best names what the chat is about now; ``None`` when there is none to take.

        Only what the user said (or a theme written by an LLM summariser, or the user's own title) can name a chat:
        the assistant's replies never do. The candidates are the summary's sentences that are not the model's, else
        the sentences of the user's turns. First title: the candidate closest to the whole summary's embedding (the
        most "on theme" one). After a drift: the candidate maximising ``cos(s, summary) - cos(s, old title's
        summary)``, so the new title names the new focus rather than what is left of the old one.
        """
        sents = [s.text for s in summary.sentences if s.role != "model"] if summary is not None else [text]
        if not sents:
            sents = [x for t in user_texts for x in split_sentences(t, max_chars=400)]
        sents = list(dict.fromkeys(x for x in sents if x.strip()))
        if not sents:
            return None
        if len(sents) == 1:
            return sents[0]
        sv = np.asarray(self.embedder.embed(sents, mode="passage"), dtype=np.float32)
        score = np.einsum("id,d->i", sv, vec)
        if old_anchor is not None and old_anchor.shape == vec.shape:
            score = score - np.einsum("id,d->i", sv, old_anchor)
        return sents[int(np.argmax(score))]

    def _append(self, chat_id: str, clean: list[dict[str, Any]], *, meta: Sequence[bool] = ()) -> None:
        row = self.db.query_one("SELECT n_turns FROM chats WHERE id = ?", (chat_id,))
        n = int(row["n_turns"]) if row else 0
        now = self._now().isoformat()
        self.db.executemany(
            "INSERT INTO chat_turns (chat_id, pos, role, parts, thinking, created_at, meta) VALUES (?,?,?,?,?,?,?)",
            [
                (
                    chat_id,
                    n + i,
                    t["role"],
                    json.dumps(t["parts"], ensure_ascii=False),
                    t.get("thinking"),
                    now,
                    int(bool(meta[i])) if i < len(meta) else 0,
                )
                for i, t in enumerate(clean)
            ],
        )
        self.db.execute(
            "UPDATE chats SET n_turns = ?, last_activity_at = ? WHERE id = ?", (n + len(clean), now, chat_id)
        )
        compacted = self._compact(chat_id)
        if compacted or not all(bool(meta[i]) if i < len(meta) else False for i in range(len(clean))):
            self._refresh_summary(chat_id)  # bookkeeping alone changes nothing the summary is made of

    def _compact(self, chat_id: str) -> bool:
        row = self.db.query_one("SELECT * FROM chats WHERE id = ?", (chat_id,))
        n, c = int(row["n_turns"]), int(row["compacted_until"])
        visible = (1 if c > 0 else 0) + (n - c)
        if visible <= self.summary_window_size:
            return False
        new_c = n - (self.summary_window_size - 1)
        passages = [Passage(s.text, s.role, s.sources, prior=True) for s in self._sentences(row)]
        if c > 0 and not passages and row["compaction_text"]:
            passages = [Passage(row["compaction_text"], "summary", tuple(range(c)), prior=True)]
        folded = self._content_turns(chat_id, c, new_c)
        if not folded and not passages:  # only bookkeeping was folded: it still must leave a trace
            folded = [(c + i, t) for i, t in enumerate(self._turns(chat_id, c, new_c))]
        passages += [Passage(_turn_text(t), t["role"], (pos,)) for pos, t in folded]
        summary = self.summarizer.summarize(passages, max_chars=self.summary_max_chars, style="compaction")
        if not summary.text.strip():  # a summariser must never make the old turns vanish without a trace
            text = " ".join(p.text for p in passages)[: self.summary_max_chars]
            summary = Summary(text, (SummarySentence(text, "summary", tuple(range(new_c)), 0.0),), "truncate")
        sentences = json.dumps(
            [
                {"text": s.text, "role": s.role, "sources": list(s.sources), "score": s.score}
                for s in summary.sentences
            ],
            ensure_ascii=False,
        )
        self.db.execute(
            "UPDATE chats SET compacted_until = ?, compaction_text = ?, compaction_sentences = ?, "
            "compaction_summarizer = ?, n_compactions = n_compactions + 1 WHERE id = ?",
            (new_c, summary.text, sentences, summary.summarizer, chat_id),
        )
        self._archive(chat_id, new_c)
        return True

    def _archive_stale(self, user_id: str) -> None:
        """Archive the folded turns of the user's chats compacted before the archive existed (once)."""
        stale = self.db.query(
            "SELECT id, compacted_until FROM chats WHERE user_id = ? AND archived_until < compacted_until",
            (user_id,),
        )
        if stale:
            with self.db.transaction():
                for r in stale:
                    self._archive(r["id"], int(r["compacted_until"]))

    def _archive(self, chat_id: str, upto: int) -> int:
        """Archive positions ``[archived_until, upto)`` as passages (embedded + full-text indexed); returns how many."""
        row = self.db.query_one("SELECT user_id, archived_until FROM chats WHERE id = ?", (chat_id,))
        start = int(row["archived_until"])
        if upto <= start:
            return 0
        first = max(0, start - (PASSAGE_TURNS - 1))
        rows = self.db.query(
            "SELECT pos, parts, created_at, meta FROM chat_turns WHERE chat_id = ? AND pos >= ? AND pos < ? "
            "ORDER BY pos",
            (chat_id, first, upto),
        )
        times = {int(r["pos"]): datetime.fromisoformat(r["created_at"]) for r in rows}
        # bookkeeping turns (meta) are not what was talked about: they are left out of the archive
        texts = {int(r["pos"]): "" if r["meta"] else "\n".join(p["text"] for p in json.loads(r["parts"])) for r in rows}
        dense_times = [times.get(i, times[min(times)]) for i in range(upto)] if times else []
        windows = [(a, b) for a, b in passage_windows(dense_times, start, upto)
                   if any(texts.get(i, "").strip() for i in range(a, b + 1))]
        passages = [(a, b, passage_text([texts[i] for i in range(a, b + 1)], times[b])) for a, b in windows]
        vecs = (np.asarray(self.embedder.embed([t for _, _, t in passages], mode="passage"), dtype=np.float32)
                if passages else np.zeros((0, self.embedder.dim), dtype=np.float32))
        user = row["user_id"]
        for (a, b, text), vec in zip(passages, vecs, strict=True):
            new = self.db.query_one(
                "INSERT INTO chat_passages(chat_id, user_id, start_pos, end_pos, text, at, embedding, embedder) "
                "VALUES (?,?,?,?,?,?,?,?) RETURNING id",
                (chat_id, user, a, b, text, times[b].isoformat(), vec.tobytes(), self._embedder_name()),
            )
            self.db.execute(
                "INSERT INTO chat_passages_fts(rowid, owner, text) VALUES (?, ?, ?)",
                (int(new["id"]), owner_token(user), lexical_text(text)),
            )
        self.db.execute("UPDATE chats SET archived_until = ? WHERE id = ?", (upto, chat_id))
        return len(passages)

    def _refresh_summary(self, chat_id: str) -> None:
        row = self.db.query_one("SELECT * FROM chats WHERE id = ?", (chat_id,))
        c = int(row["compacted_until"])
        passages: list[Passage] = []
        if row["title_source"] == "user" and row["title"]:
            passages.append(Passage(row["title"], "summary", (), prior=True))
        passages += [Passage(s.text, s.role, s.sources, prior=True) for s in self._sentences(row)]
        said = [Passage(_turn_text(t), t["role"], (pos,)) for pos, t in self._content_turns(chat_id, c)]
        passages += said
        summary = self.summarizer.summarize(passages, max_chars=self.chat_summary_max_chars, style="theme")
        if summary.text.strip():
            self._set_summary(chat_id, summary.text, summary, [p.text for p in said if p.role == "user"])

    def _set_summary(self, chat_id: str, text: str, summary: Summary | None = None,
                     user_texts: Sequence[str] = ()) -> None:
        vec = np.asarray(self.embedder.embed([text], mode="passage"), dtype=np.float32)[0]
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        row = self.db.query_one(
            "SELECT title, title_source, title_anchor, title_anchor_text FROM chats WHERE id = ?", (chat_id,)
        )
        self.db.execute(
            "UPDATE chats SET summary_text = ?, summary_embedding = ?, summary_embedder = ? WHERE id = ?",
            (text, vec.tobytes(), name, chat_id),
        )
        if row["title_source"] == "user":
            return
        anchor = row["title_anchor"]
        drifted, old = True, None
        if row["title"] and anchor is not None:
            a = np.frombuffer(anchor, dtype=np.float32)
            if a.shape != vec.shape and row["title_anchor_text"]:  # another embedder wrote it: embed its text again
                a = np.asarray(self.embedder.embed([row["title_anchor_text"]], mode="passage"), dtype=np.float32)[0]
                self.db.execute("UPDATE chats SET title_anchor = ? WHERE id = ?", (a.tobytes(), chat_id))
            drifted = a.shape != vec.shape or float(np.dot(a, vec)) < self._title_threshold()
            old = a
        if drifted:
            sentence = self._title_sentence(text, vec, summary, old, user_texts)
            if sentence is None:  # nothing the user said yet: the title (if any) stays
                return
            # the anchor is the embedding of exactly ``title_anchor_text``: every stored embedding has its text
            self.db.execute(
                "UPDATE chats SET title = ?, title_anchor = ?, title_anchor_text = ? WHERE id = ?",
                (make_title(sentence), vec.tobytes(), text, chat_id),
            )


def make_title(text: str, *, max_chars: int = _TITLE_CHARS) -> str:
    """A short title from a summary sentence: first line, role tag removed, cut at a word boundary.

    Example:
        >>> make_title("[user] Sto organizzando un viaggio a Tokyo per maggio con mia sorella e due amici.")
        'Sto organizzando un viaggio a Tokyo per maggio con mia…'
    """
    t = text.strip().splitlines()[0] if text.strip() else ""
    if t.startswith("[") and "] " in t[:12]:
        t = t.split("] ", 1)[1]
    t = t.strip().rstrip(".!?。！？")
    if len(t) <= max_chars:
        return t or "Chat"
    cut = t.rfind(" ", 0, max_chars)
    return t[: cut if cut > max_chars // 2 else max_chars].rstrip(" ,;:") + "…"
