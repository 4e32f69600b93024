"""One composition root: every service of a memlab database, wired the same way for the CLI, notebooks and dashboard.

Synchronous use (scripts, notebooks): each :meth:`Memlab.turn` starts the background agent, waits for the
turn's checks and stops it again.

Example:
    >>> from memlab.app import open_memlab
    >>> from memlab.testing import FakeEmbedder, ScriptedJudge
    >>> with open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge()) as lab:
    ...     lab.turn("u1", "Abito a Roma").notifications_count
    0

Asynchronous use (services): ``async with`` owns the agent for the whole block, so checks run in the
background between turns and :meth:`Memlab.turn_async` does not restart it.

Example:
    >>> import asyncio
    >>> async def main():
    ...     async with open_memlab(":memory:", embedder=FakeEmbedder(), judge=ScriptedJudge()) as lab:
    ...         resp, done = await lab.turn_async("u1", "Abito a Roma")
    ...         return lab.agent.running, done
    >>> asyncio.run(main())
    (True, True)
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab._sync import run_blocking
from memlab._validation import check_positive_float
from memlab.clock import check_time, message_time
from memlab.config import Settings
from memlab.protocols import LLM, Embedder, Judge
from memlab.store.memory import is_postgres_url

if TYPE_CHECKING:
    from memlab.agent import BackgroundAgent
    from memlab.assistant import Assistant, AssistantResponse
    from memlab.chats import ChatStore
    from memlab.integrity import SemanticIntegrityChecker
    from memlab.notify import NotificationService
    from memlab.records import MemoryItem
    from memlab.store import MemoryStore

__all__ = ["Memlab", "open_memlab", "stored_embedder_name"]


def stored_embedder_name(db_path: str | os.PathLike[str]) -> str | None:
    """The embedder a database (an SQLite file or a ``postgresql://`` URL) was built with (read-only peek), or None
    for a new/in-memory database."""
    path = str(db_path)
    if is_postgres_url(path):
        return _stored_embedder_pg(path)
    if path == ":memory:" or not Path(path).is_file():  # "", a directory: Database says what is wrong
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = con.execute("SELECT value FROM memlab_meta WHERE key = 'embedder'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return str(row[0]) if row else None


def _stored_embedder_pg(url: str) -> str | None:
    """The embedder a PostgreSQL database was built with (None: a new database, or unreachable: opening says why)."""
    from memlab.errors import MemlabError
    from memlab.store.pg_db import PgDatabase

    try:
        db = PgDatabase(url)
    except MemlabError:
        return None
    try:
        if db.query_one("SELECT to_regclass('memlab_meta') IS NOT NULL AS ok")["ok"]:  # type: ignore[index]
            row = db.query_one("SELECT value FROM memlab_meta WHERE key = 'embedder'")
            return None if row is None else str(row["value"])
        return None
    finally:
        db.close()


@dataclass
class Memlab:
    """The services of one database: store, notifications, chats, integrity checker, background agent, assistant.

    Attributes:
        store: the :class:`~memlab.store.MemoryStore`.
        notifications: the :class:`~memlab.notify.NotificationService` on the same file.
        chats: the :class:`~memlab.chats.ChatStore` on the same file.
        checker: the :class:`~memlab.integrity.SemanticIntegrityChecker` (None when checks are disabled).
        agent: the :class:`~memlab.agent.BackgroundAgent` feeding the checker (None when checks are disabled).
        assistant: the :class:`~memlab.assistant.Assistant` turn flow.
        settings: the settings everything was built from.
    """

    store: MemoryStore
    notifications: NotificationService
    chats: ChatStore
    checker: SemanticIntegrityChecker | None
    agent: BackgroundAgent | None
    assistant: Assistant
    settings: Settings = field(default_factory=Settings)
    _turn_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Memlab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Memlab:
        """Start the background agent in the running loop; it runs until the block ends."""
        if self.agent is not None:
            await self.agent.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop the agent (checks in flight finish; queued ones stay in SQLite) and close the database."""
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the agent if it runs, then close the database (idempotent)."""
        if self.agent is not None:
            await self.agent.stop()
        self.close()

    def close(self) -> None:
        """Close the database (and write the FAISS cache)."""
        self.store.close()

    # ------------------------------------------------------------------ turns
    def turn(self, user_id: str, message: str, *, chat_id: str | None = None, wait: bool = True,
             timeout: float = 300.0, at: datetime | str | None = None) -> AssistantResponse:
        """One assistant turn; with ``wait`` the turn's background checks finish before this returns.

        Works in a plain script and inside a running event loop (a Jupyter cell): there the turn runs on a
        worker thread with its own loop. Turns from several threads on one object (a dashboard) run one at a
        time: each owns the agent for its duration.

        Args:
            user_id: the user.
            message: what the user said.
            chat_id: the chat (default: the user's most recent one, created when there is none).
            wait: wait for the turn's integrity checks.
            timeout: longest wait for them, in seconds.
            at: when the message was said (a datetime, naive = UTC, or an ISO 8601 string); default now. Used for
                everything the turn writes: relative dates ("last Friday") are resolved against it, and the
                memories, their events, the chat turns and the notifications of the turn's checks carry it, so a
                logged conversation replays exactly (:mod:`memlab.clock`).

        Returns:
            The :class:`~memlab.assistant.AssistantResponse`; ``notifications_count`` is the badge after the checks.

        Raises:
            InvalidInputError: bad message, user id, ``timeout`` or ``at``; nothing is stored.
        """
        at = check_time(at, owner="Memlab.turn")

        def run() -> AssistantResponse:
            with self._turn_lock:
                resp, _ = asyncio.run(self.turn_async(user_id, message, chat_id=chat_id, wait=wait, timeout=timeout,
                                                      at=at))
            return resp

        return run_blocking(run, thread_name="memlab-turn")

    async def turn_async(self, user_id: str, message: str, *, chat_id: str | None = None, wait: bool = True,
                         timeout: float = 300.0, at: datetime | str | None = None) -> tuple[AssistantResponse, bool]:
        """Like :meth:`turn`, inside a running event loop; also says whether the turn's checks finished in time
        (unfinished checks stay queued in SQLite and run at the next start).

        Inside ``async with`` the agent already runs and is left running; otherwise, with ``wait``, it is
        started for this turn and stopped after it. ``at`` as in :meth:`turn`.
        """
        timeout = check_positive_float(timeout, name="timeout", owner="Memlab.turn")
        at = check_time(at, owner="Memlab.turn")
        done = True
        owned = self.agent is not None and wait and not self.agent.running
        with message_time(at):
            if owned:
                await self.agent.start()  # type: ignore[union-attr]
            try:
                resp = await asyncio.to_thread(self.assistant.respond, user_id, message, chat_id=chat_id)
                if self.agent is not None and wait:
                    done = await self.agent.wait_idle(resp.job_ids, timeout=timeout)
            finally:
                if owned:
                    await self.agent.stop()  # type: ignore[union-attr]
        return resp.model_copy(update={"notifications_count": self.notifications.count(user_id)}), done

    def remember(self, user_id: str, text: str, *, at: datetime | str | None = None,
                 **fields: Any) -> tuple[MemoryItem, list[int]]:
        """Store one memory (:meth:`MemoryStore.add` arguments) and queue its integrity check.

        ``at``: when it was said (as in :meth:`turn`): the memory's ``created_at`` and its check's notifications.

        Returns:
            ``(item, job_ids)``; ``job_ids`` is empty when checks are disabled.
        """
        with message_time(check_time(at, owner="Memlab.remember")):
            item = self.store.add(user_id, text, **fields)
            if self.agent is None:
                return item, []
            return item, [self.agent.process_new_knowledge(item.user_id, item.id)]

    def delete_chat(self, user_id: str, chat_id: str) -> None:
        """Delete a chat with its conversation memory, in one transaction (the user's memories stay).

        Raises:
            NotFoundError: unknown chat, or another user's.
        """
        from memlab.extraction import ConversationMemoryService

        conv = ConversationMemoryService(self.store, user_id=user_id)
        with self.store.db.transaction():
            self.chats.delete(chat_id, user_id=user_id)
            conv.forget(chat_id)


def open_memlab(
    path: str | os.PathLike[str],
    *,
    settings: Settings | None = None,
    embedder: Embedder | str | None = None,
    judge: Judge | str | None = None,
    llm: LLM | None = None,
    lang: str | None = None,
    checks: bool = True,
    reembed: bool = False,
) -> Memlab:
    """Open (or create) a memlab database with every service wired.

    Args:
        path: an SQLite file (``":memory:"`` for a throw-away one) or a ``postgresql://`` URL: the whole app (memories,
            chats, notifications, the agent's queue, API keys) lives there.
        settings: defaults to ``Settings()`` (reads ``MEMLAB_*``; build it once, at the edge).
        embedder: an Embedder or a name; default: the embedder the database was built with, else ``settings.embedder``.
        judge: a Judge or a name for :func:`memlab.judges.load_judge`; default ``settings.judge``.
        llm: a chat model; default: ``settings.llm_backend`` (none → the explicit "no model" marker; the default
            ``auto`` → the in-process llama.cpp model when ``memlab[llm-local]`` is installed, for the replies only).
        lang: language of user-facing texts; default ``settings.lang``. When neither sets one, each user gets the
            texts of a turn in the language of their own messages (``Assistant(detect_user_lang=True)``), the
            settings' default when that cannot be told.
        checks: run integrity checks in the background agent (False: ingestion only).
        reembed: allow ``embedder`` to differ from the one the database was built with: every memory is
            re-embedded and the database switched to it for good (default False: ``InvalidInputError``).
    """
    from memlab.agent import BackgroundAgent
    from memlab.assistant import Assistant
    from memlab.chats import ChatStore
    from memlab.embedding import resolve_embedder
    from memlab.notify import NotificationService
    from memlab.store import MemoryStore

    settings = settings or Settings()
    if embedder is None or isinstance(embedder, str):
        embedder = resolve_embedder(embedder or stored_embedder_name(path), settings=settings)
    reply_only = False
    if llm is None and settings.llm_backend != "none":
        from memlab.llm import load_llm

        llm = load_llm(settings)
        # the implicit default (auto: the packaged SmolLM2-135M when memlab[llm-local] is installed) writes the
        # replies only; extraction and summaries keep the offline rules it does not beat (docs/llm-local.md)
        reply_only = llm is not None and settings.llm_backend == "auto"
    judge_obj = None
    if checks:  # a bad judge is refused before the database is touched
        from memlab.judges import resolve_judge

        judge_obj, _ = resolve_judge(judge, settings=settings)
        if judge_obj is None:
            from memlab.errors import InvalidInputError

            raise InvalidInputError("judge='none' leaves nothing to check with; open with checks=False instead.")
    store = MemoryStore(path, embedder=embedder, max_text_chars=settings.max_text_chars, reembed=reembed)
    notifications = NotificationService(store)
    summarizer = None
    if llm is not None and not reply_only:  # with a model, compaction summaries and chat themes (and so titles) are written by it
        from memlab.chats import ExtractiveSummarizer, LLMSummarizer

        summarizer = LLMSummarizer(llm, fallback=ExtractiveSummarizer(embedder))
    chats = ChatStore(store, summarizer=summarizer, summary_window_size=settings.summary_window_size)
    checker = agent = None
    if checks:
        from memlab.integrity import SemanticIntegrityChecker

        checker = SemanticIntegrityChecker(store, judge_obj, settings)
        agent = BackgroundAgent(store, checker, notifications)
    ingestor = None
    if reply_only:
        from memlab.ingestors import default_ingestor

        ingestor = default_ingestor(store, lang=lang or settings.lang)
    assistant = Assistant(store, notifications=notifications, agent=agent, llm=llm, chats=chats, ingestor=ingestor,
                          lang=lang or settings.lang,
                          detect_user_lang=lang is None and "lang" not in settings.model_fields_set)
    return Memlab(store=store, notifications=notifications, chats=chats, checker=checker, agent=agent,
                  assistant=assistant, settings=settings)
