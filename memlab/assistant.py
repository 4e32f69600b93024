"""The :class:`Assistant`: one user turn, end to end.

For a user message:

1. If it answers an open contradiction ("A", "la prima", "C: uno è il compleanno di mia madre", ...), the
   answer is applied (:meth:`memlab.notify.NotificationService.resolve`) and confirmed; if it answers a
   MEDIUM offer ("sì"/"no"), the notification is shown or left in the bell. Such answers are not stored as
   memories and need no model call.
2. Otherwise, the pending notifications are collected **first** (so a check finished during this turn is
   shown in the next one, as in the seed) and planned by urgency (:func:`memlab.notify.plan_turn`, with the
   fatigue rule).
3. The message joins the chat, then goes through fact extraction into the memory store (an
   :class:`~memlab.ingestors.Ingestor`), with the current topic: the chat's title as it stands with this message
   ("Generale" while the chat has none); this never waits for a check.
4. An integrity check of every new memory is enqueued on the :class:`~memlab.agent.BackgroundAgent`.
5. The reply comes from the configured LLM; with none, the reply part is the explicit marker
   ``(nessun modello configurato)``. The model sees: the system prompt, the ``format_for_prompt``
   block of the conversation memory, ``build_context`` (the user's active memories relevant to the
   message), the chat's ``assistant_history`` (never ``full_history``), then the message.
6. The response is ``HIGH block + reply + MEDIUM offer``; :class:`AssistantResponse` also carries
   ``notifications_count`` (the bell badge) and ``high_urgency_notifications``. The reply is appended to the chat;
   it becomes summary and title material only when a model wrote it.

:meth:`Assistant.start_turn` (steps 1-4) and :meth:`Assistant.finish_turn` (step 6) let another writer produce the
reply: ``POST /v1/chat`` runs the same turn with its tool-using agent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from memlab._validation import check_text, check_user_id
from memlab.errors import InvalidInputError, MemlabError
from memlab.ingestors import ConversationIngestor, Ingestor, IngestResult, SentenceIngestor, default_ingestor
from memlab.notify import (
    Notification,
    NotificationService,
    NotificationType,
    TurnPlan,
    declined_text,
    format_high_block,
    format_notification,
    format_resolution,
    medium_offer,
    parse_choice,
    parse_yes_no,
    plan_turn,
)
from memlab.prompting import data_notice, quote_data
from memlab.protocols import LLM
from memlab.records import MemoryItem, Urgency
from memlab.store.memory import MemoryStore, format_context
from memlab.text import (
    LANGS,
    MESSAGES,
    check_lang,
    detect_language,
    display_text,
    messages,
    word_count,
)

__all__ = [
    "NO_MODEL_MARKER",
    "Assistant",
    "AssistantResponse",
    "ConversationIngestor",
    "Ingestor",
    "IngestResult",
    "SentenceIngestor",
    "TurnStart",
    "default_ingestor",
]

log = logging.getLogger(__name__)

#: Longest user message kept as the words a memory was said in (the ``said`` event).
_MAX_SAID_CHARS = 1000

#: The reply part when no LLM is configured: explicit, never invented text.
NO_MODEL_MARKER: dict[str, str] = {lang: MESSAGES[lang]["no_model"] for lang in LANGS}
#: Longest user message accepted by a turn (characters).
MAX_MESSAGE_CHARS = 100_000

#: The system prompt of each language (from :data:`memlab.text.MESSAGES`).
DEFAULT_SYSTEM_PROMPT: dict[str, str] = {lang: MESSAGES[lang]["system_prompt"] for lang in LANGS}


_ORDINALS = (
    ("1", "uno", "prima", "primo", "first", "one", "第一", "第一个", "一"),
    ("2", "due", "seconda", "secondo", "second", "two", "第二", "第二个", "二"),
    ("3", "tre", "terza", "terzo", "third", "three", "第三", "第三个", "三"),
)
_CHOICE_NOISE = re.compile(r"^(?:la|il|quella|quello|the|that|one|chat|选|要)\s*|\s*(?:chat|one|please|grazie|thanks|吧|个)?[\s.!?。！？)]*$",
                           re.IGNORECASE)


def choose_candidate(message: str, titles: Sequence[str]) -> int | None:
    """Which of ``titles`` (numbered from 1 in the question) ``message`` picks: a number, an ordinal (it/en/zh)
    or a title; ``None`` when it picks none of them.

    Example:
        >>> choose_candidate("2", ["Tokyo", "Osaka"]), choose_candidate("la seconda", ["Tokyo", "Osaka"])
        (1, 1)
        >>> choose_candidate("Tokyo", ["Viaggio a Tokyo", "Osaka"]), choose_candidate("Che ore sono?", ["Tokyo"])
        (0, None)
    """
    text = message.strip().casefold()
    core = text
    for _ in range(2):
        core = _CHOICE_NOISE.sub("", core).strip()
    for i, words in enumerate(_ORDINALS[: len(titles)]):
        if core in words:
            return i
    if len(text) <= 80:
        hits = [i for i, t in enumerate(titles) if t and (t.casefold() == text or (len(core) >= 4 and core in t.casefold()))]
        if len(hits) == 1:
            return hits[0]
    return None


class AssistantResponse(BaseModel):
    """The result of one turn.

    Attributes:
        response: what the user sees: HIGH block, then the reply, then the MEDIUM offer.
        notifications_count: the bell badge after the turn (pending notifications of this user).
        high_urgency_notifications: the HIGH notifications shown in this turn (``Notification.to_dict()``).
        reply: the model's reply (or the no-model marker); None when the turn was an answer to a notification.
        medium_offer: the MEDIUM notification offered after the reply, if any.
        resolved: the notification resolved by this message, if it was an answer.
        memory_ids: memories stored from this message.
        job_ids: background checks enqueued for them.
        chat_id: the chat the turn was appended to.
        llm_error: the model's error, when it failed (the turn still completes).
        kind: ``chat``, ``resolution``, ``offer_shown``, ``offer_declined`` or ``chat_switch`` (the message asked to
            move to another chat: nothing is stored, ``switch`` says what was decided).
        switch: for ``chat_switch``: ``{"decision": "switch"|"ask"|"none", "topic", "candidates": [...]}``.
    """

    model_config = ConfigDict(frozen=True)

    response: str
    notifications_count: int
    high_urgency_notifications: list[dict[str, Any]] = Field(default_factory=list)
    reply: str | None = None
    medium_offer: dict[str, Any] | None = None
    resolved: dict[str, Any] | None = None
    memory_ids: list[int] = Field(default_factory=list)
    job_ids: list[int] = Field(default_factory=list)
    chat_id: str | None = None
    llm_error: str | None = None
    kind: Literal["chat", "resolution", "offer_shown", "offer_declined", "chat_switch"] = "chat"
    switch: dict[str, Any] | None = None


@dataclass(frozen=True)
class TurnStart:
    """A turn up to its reply (:meth:`Assistant.start_turn`); :meth:`Assistant.finish_turn` completes it.

    Attributes:
        done: the whole turn when the message needed no reply (an answer to a notification, a chat switch).
        high_block: the HIGH notifications to show before the reply ("" when none).
        prompt_block: the conversation-memory block for the model's prompt.
        memory_ids: memories stored from the message; ``job_ids``: their integrity checks, enqueued.
    """

    user_id: str
    message: str
    chat_id: str | None
    lang: str
    done: AssistantResponse | None = None
    plan: TurnPlan | None = None
    high_block: str = ""
    prompt_block: str = ""
    memory_ids: list[int] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)


class _Scheduler(Protocol):
    def process_new_knowledge(self, user_id: str, memory_id: int) -> int: ...


class Assistant:
    """Runs the turn flow over a memory store, notifications, the background agent and an optional LLM.

    Args:
        store: the memory store.
        notifications: the notification service (default: one on ``store``).
        agent: where integrity checks are enqueued (a :class:`~memlab.agent.BackgroundAgent`); None: no checks.
        ingestor: the fact-extraction step (default: :func:`default_ingestor`).
        llm: any :class:`~memlab.protocols.LLM`; None: the reply is :data:`NO_MODEL_MARKER`.
        chats: a :class:`memlab.chats.ChatStore`; when given, turns are appended to the user's chat and the
            model sees its ``assistant_history``.
        system_prompt: the model's system prompt (default: a short one in ``lang``).
        lang: ``it`` (default), ``en`` or ``zh``: notification texts, markers, prompt headings.
        detect_user_lang: show each user the texts of the turn (notification blocks, offers, answers, the "no
            model" marker, chat-switch replies) in the language of their own messages (:meth:`user_lang`), ``lang``
            when that cannot be told; False (default): always ``lang``. :func:`memlab.app.open_memlab` turns it on
            when no language was configured.
        project_id: passed to ``build_context`` (global memories plus this project's).
        agent_type: passed to ``build_context`` (names the consuming agent).
        context_k: memories listed by ``build_context``.
        history_k: archived passages of the current chat (turns compaction folded away) put in the prompt when
            they match the message (:meth:`memlab.chats.ChatStore.search_history`; 0: none searched).
        source_k: the first (best-ranked) memories of the context that bring the archived turns around the message
            they were said in: two before, two after, within its session (small-to-big:
            :meth:`memlab.chats.ChatStore.passages_at`, found by the memory's ``said`` event; on LoCoMo dev this
            raised multi-hop evidence recall@10 from 0.455 to 0.619). 10 matches the top-10 that
            ``memlab eval memory-recall`` scores; 0 turns it off.
        max_high_per_turn: HIGH notifications shown per turn (1 when the user is fatigued).

    Example:
        >>> from memlab.store import MemoryStore
        >>> from memlab.testing import FakeEmbedder
        >>> a = Assistant(MemoryStore(":memory:", embedder=FakeEmbedder()))
        >>> r = a.respond("u1", "Abito a Roma.")
        >>> r.response, r.notifications_count, len(r.memory_ids)
        ('(nessun modello configurato)', 0, 1)
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        notifications: NotificationService | None = None,
        agent: _Scheduler | None = None,
        ingestor: Ingestor | None = None,
        llm: LLM | None = None,
        chats: Any | None = None,
        system_prompt: str | None = None,
        lang: str = "it",
        detect_user_lang: bool = False,
        project_id: str | None = None,
        agent_type: str | None = "assistant",
        context_k: int = 20,
        history_k: int = 3,
        source_k: int = 10,
        max_high_per_turn: int = 3,
    ) -> None:
        check_lang(lang, "Assistant")
        for name, value, least in (("context_k", context_k, 1), ("history_k", history_k, 0), ("source_k", source_k, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidInputError(f"The '{name}' parameter of Assistant must be an int >= {least}. Got {value!r}.")
        self.store = store
        self.notifications = notifications or NotificationService(store)
        self.agent = agent
        self.ingestor = ingestor if ingestor is not None else default_ingestor(store, lang=lang, llm=llm)
        self.llm = llm
        self.chats = chats
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT[lang]
        self.lang = lang
        self.detect_user_lang = bool(detect_user_lang)
        self.project_id = project_id
        self.agent_type = agent_type
        self.context_k = context_k
        self.history_k = history_k
        self.source_k = source_k
        self.max_high_per_turn = max_high_per_turn
        # the candidates of the last chat-switch question per user ("quale intendi? 1) ... 2) ..."): the next
        # message may answer it; any other message lets it expire (kept in this process only)
        self._switch_asked: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ helpers
    def _chat_id(self, user_id: str, chat_id: str | None) -> str | None:
        if self.chats is None:
            return chat_id
        if chat_id is not None:
            self.chats.get(chat_id, user_id=user_id)  # NotFoundError for another user's chat
            return chat_id
        existing = self.chats.list(user_id)
        if existing:
            return str(existing[0].id)
        return str(self.chats.create(user_id).id)

    def _conversation_id(self, user_id: str, chat_id: str | None) -> str:
        return chat_id if chat_id is not None else f"{user_id}:default"

    def _history(self, user_id: str, chat_id: str | None, *, appended: bool = False) -> list[dict[str, Any]]:
        if self.chats is None or chat_id is None:
            return []
        turns = self.chats.history_for_model(chat_id, user_id=user_id)
        if appended and turns and turns[-1].get("role") == "user":
            turns = turns[:-1]  # the message of this turn, already in the chat: it is sent once, last
        # once compacted, the first turn is the summary of the turns folded away: user-authored material, sent in
        # the prompt's data form (memlab.prompting)
        summarized = bool(turns) and int(getattr(self.chats.get(chat_id, user_id=user_id), "compacted_until", 0)) > 0
        out = []
        for i, t in enumerate(turns):
            text = "\n".join(str(p.get("text", "")) for p in t.get("parts", []) if p.get("text"))
            if text and i == 0 and summarized:
                text = quote_data(text, kind="summary")
            if text:
                out.append({"role": "assistant" if t.get("role") == "model" else "user", "content": text})
        return out

    def _earlier(self, user_id: str, chat_id: str | None, message: str, facts: Sequence[MemoryItem] = ()) -> str:
        """The archived passages of this chat closest to ``message`` (what compaction folded out of the window),
        plus the turns around the message each of the first ``source_k`` retrieved ``facts`` was said in
        (small-to-big: the fact is the precise key, the passage the words around it), as a prompt section; empty
        before the first compaction."""
        if self.chats is None or chat_id is None:
            return ""
        hits = self.chats.search_history(user_id, message, k=self.history_k, chat_id=chat_id) if self.history_k else []
        hits += self.chats.passages_around(user_id, chat_id, self._said_at(user_id, chat_id, facts[: self.source_k]))
        unique = {(h.start, h.end): h for h in hits}  # a fact's passage may also be a search hit
        if not unique:
            return ""
        lines = [messages(self.lang)["history_head"]]
        lines += [f"- {quote_data(unique[span].text, kind='passage')}" for span in sorted(unique)]
        return "\n".join(lines)

    def _said_at(self, user_id: str, chat_id: str, facts: Sequence[MemoryItem]) -> list[int]:
        """Positions in ``chat_id`` of the user messages ``facts`` were extracted from (their ``said`` events)."""
        out = []
        for m in facts:
            said = [e for e in self.store.events(m.id, user_id=user_id, chain=False) if e.event == "said"]
            where = said[-1].details if said else {}
            if where.get("chat_id") == chat_id and isinstance(where.get("pos"), int):
                out.append(int(where["pos"]))
        return out

    def _append(self, user_id: str, chat_id: str | None, message: str, response: str, *,
                meta: tuple[bool, bool] = (True, True)) -> None:
        """Append the exchange to the chat. ``meta`` (user turn, model turn): the turn is the assistant's bookkeeping
        (a chat-switch request and its answer, an answer to a notification, a reply that is no model's reply): it
        stays in the histories but never becomes the chat's summary or title (:meth:`memlab.chats.ChatStore.append`)."""
        if self.chats is None or chat_id is None:
            return
        self.chats.append(chat_id, [
            {"role": "user", "parts": [{"text": message}]},
            {"role": "model", "parts": [{"text": response}]},
        ], user_id=user_id, meta=list(meta))

    def compose_messages(
        self, user_id: str, message: str, *, chat_id: str | None = None, prompt_block: str = "",
        appended: bool = False,
    ) -> list[dict[str, Any]]:
        """What the model sees for ``message`` : system prompt + conversation-memory block +
        ``build_context`` in one system message, then ``assistant_history``, then the message (``appended``: the
        message is already the last turn of the chat, as during :meth:`respond`; it is sent once)."""
        memory = self._memory_blocks(user_id, message, prompt_block=prompt_block, chat_id=chat_id)
        # the notice that the <memory>/<summary>/<passage> blocks are data, never instructions: always (the history's
        # summary turn is such a block too)
        system = "\n\n".join(p for p in (self.system_prompt, data_notice(self.lang), memory) if p)
        return [{"role": "system", "content": system}, *self._history(user_id, chat_id, appended=appended),
                {"role": "user", "content": message}]

    def _open_shown_contradictions(self, user_id: str) -> list[Notification]:
        return [n for n in self.notifications.pending(user_id, type=NotificationType.CONTRADICTION)
                if n.shown_at is not None]

    def user_lang(self, user_id: str, message: str, chat_id: str | None = None) -> str:
        """The language (``it``/``en``/``zh``) the texts of this turn are shown in.

        With ``detect_user_lang`` off: ``lang``. On: the language of ``message`` (:func:`memlab.text.detect_language`,
        the detector the judge router uses, among it/en/zh) when it has at least three words; for a shorter message
        ("ok", "2", "sì") the language of this message together with the user's last messages in ``chat_id``; ``lang``
        when neither tells. Per user: each user's own messages decide, whatever the database's default.
        """
        if not self.detect_user_lang:
            return self.lang
        texts = [message]
        if word_count(message) < 3:
            texts += self._recent_user_messages(user_id, chat_id)
        found = detect_language(" \n".join(texts)[:1000], languages=LANGS)
        return found if found in LANGS else self.lang

    def _recent_user_messages(self, user_id: str, chat_id: str | None, n: int = 4) -> list[str]:
        if self.chats is None or chat_id is None:
            return []
        try:
            turns = self.chats.get(chat_id, user_id=user_id).full_history
        except MemlabError:
            return []
        said = [str(p.get("text", "")) for t in turns if t.get("role") == "user" for p in t.get("parts", [])[:1]]
        return said[::-1][:n]

    def _offered(self, user_id: str) -> list[Notification]:
        """The notifications of the last offer still waiting for a yes/no (one offer may hold several)."""
        offered = [n for n in self.notifications.pending(user_id)
                   if n.offered_at is not None and n.shown_at is None and n.declined_at is None]
        return sorted(offered, key=lambda n: n.id)

    # ------------------------------------------------------------------ the turn
    def respond(self, user_id: str, message: str, *, chat_id: str | None = None) -> AssistantResponse:
        """Run one turn for ``user_id`` (see the module docstring for the flow).

        Raises:
            InvalidInputError: empty message, control characters, or longer than 100,000 characters.
                Nothing is stored.
            NotFoundError: ``chat_id`` is unknown or another user's.
        """
        start = self.start_turn(user_id, message, chat_id=chat_id)
        if start.done is not None:
            return start.done
        reply, llm_error = self._reply(start.user_id, start.message, start.chat_id, start.prompt_block, start.lang)
        return self.finish_turn(start, reply, llm_error=llm_error, from_model=self.llm is not None)

    def start_turn(self, user_id: str, message: str, *, chat_id: str | None = None, in_chat: bool = True,
                   conversation_id: str | None = None) -> TurnStart:
        """Everything of a turn that comes before the reply: an answer to a notification or a chat-switch request is
        handled completely (``TurnStart.done``); otherwise the pending notifications are planned, the message's
        facts are stored and their checks enqueued, and the HIGH block to show before the reply is ready
        (``TurnStart.high_block``). :meth:`finish_turn` completes the turn with a reply from anywhere (the LLM of
        :meth:`respond`, or the tool-using agent of ``POST /v1/chat``).

        Args:
            in_chat: False: the turn belongs to no chat (``/v1/chat``, whose client sends its own history): nothing
                is appended to a chat and chat switching does not apply.
            conversation_id: the conversation whose memory (fatigue, facts already known) the turn updates; default:
                the chat's id, else ``<user>:default``.

        Raises:
            InvalidInputError: empty message, control characters, or longer than 100,000 characters.
                Nothing is stored.
            NotFoundError: ``chat_id`` is unknown or another user's.
        """
        owner = "Assistant.respond"
        user_id = check_user_id(user_id, owner=owner)
        message = check_text(message, name="message", owner=owner, max_chars=MAX_MESSAGE_CHARS)
        chat_id = self._chat_id(user_id, chat_id) if in_chat else None
        conv = conversation_id or self._conversation_id(user_id, chat_id)
        lang = self.user_lang(user_id, message, chat_id)

        special = (
            (self._switch_choice(user_id, message, chat_id, lang) if in_chat else None)
            or self._answer(user_id, message, chat_id, lang)
            or (self._switch(user_id, message, chat_id, lang) if in_chat else None)
        )
        if special is not None:
            return TurnStart(user_id=user_id, message=message, chat_id=special.chat_id, lang=lang, done=special)
        # an offer not answered by this message has expired: it stays in the bell, it is not offered again
        for stale in self._offered(user_id):
            self.notifications.mark_declined(stale.id, user_id=user_id, expired=True)

        # 1. pending notifications first (a check finishing during this turn shows up in the next one)
        pending = self.notifications.pending(user_id)
        state = self._safe_state(user_id, conv)
        fatigue = state.fatigue or 0.0

        # 2. extraction into the store (never waits for checks). The current topic is the chat's title as it stands
        # with this message (the message joins the chat first: no lag behind a change of focus); "Generale" while
        # the chat has no topic yet (no title of the user's, and no title from an earlier message)
        n_turn = None
        topic = messages(lang)["general_topic"]
        if self.chats is not None and chat_id is not None:
            before = self.chats.get(chat_id, user_id=user_id)
            n_turn = len(before.full_history)
            chat = self.chats.append(chat_id, [{"role": "user", "parts": [{"text": message}]}], user_id=user_id)
            if chat.title and (before.title or chat.title_source == "user"):
                topic = chat.title
        ingest = self.ingestor.ingest(user_id, conv, message, turn=n_turn, topic=topic)
        if ingest.fatigue is not None:
            fatigue = ingest.fatigue
        plan = plan_turn(pending, fatigue=fatigue, max_high=self.max_high_per_turn)

        # the user's own words of each new memory, quoted when it is part of a contradiction
        for mid in ingest.memory_ids:
            self.store.record_event(mid, "said", actor=f"user:{user_id}", user_id=user_id,
                                    words=message[:_MAX_SAID_CHARS], chat_id=chat_id, pos=n_turn)

        # 3. background checks for every new memory
        job_ids: list[int] = []
        if self.agent is not None:
            for mid in ingest.memory_ids:
                job_ids.append(self.agent.process_new_knowledge(user_id, mid))
        return TurnStart(user_id=user_id, message=message, chat_id=chat_id, lang=lang, plan=plan,
                         high_block=format_high_block(plan.high, lang),
                         prompt_block=ingest.prompt_block or state.prompt_block,
                         memory_ids=list(ingest.memory_ids), job_ids=job_ids)

    def memory_prompt(self, user_id: str, message: str, *, prompt_block: str = "", chat_id: str | None = None,
                      max_chars: int | None = None) -> str:
        """The memory part of the model's system prompt for ``message``: the notice that its ``<memory>`` (and
        ``<passage>``) blocks are data, never instructions (:func:`memlab.prompting.data_notice`), then the
        conversation-memory block, the user's relevant active memories (``build_context``, values awaiting the
        user's answer marked provisional) and the archived passages of the chat that match it (``max_chars``: cut to
        at most that many characters, whole lines kept, most relevant first; every data block is one line, so a cut
        never splits one). ``""`` when there is nothing to say."""
        blocks = self._memory_blocks(user_id, message, prompt_block=prompt_block, chat_id=chat_id, max_chars=max_chars)
        return "\n\n".join((data_notice(self.lang), blocks)) if blocks else ""

    def _memory_blocks(self, user_id: str, message: str, *, prompt_block: str = "", chat_id: str | None = None,
                       max_chars: int | None = None) -> str:
        """:meth:`memory_prompt` without its notice (``max_chars`` counts the notice in)."""
        if max_chars is not None:
            max_chars -= len(data_notice(self.lang)) + 2
        awaiting = {i for n in self.notifications.pending(user_id) if n.type is NotificationType.CONTRADICTION
                    for i in n.memory_ids}
        query = message.strip()[: self.store.max_text_chars]  # a long message is searched by its beginning
        facts = self.store.context_items(user_id, query, project_id=self.project_id, k=self.context_k)
        ctx = format_context(facts, lang=self.lang, agent_type=self.agent_type, awaiting=awaiting)
        earlier = self._earlier(user_id, chat_id, query, facts)
        out = "\n\n".join(p for p in (prompt_block.strip(), ctx, earlier) if p)
        if max_chars is not None and len(out) > max_chars:
            kept: list[str] = []
            for line in out.splitlines():
                if sum(len(k) + 1 for k in kept) + len(line) > max_chars:
                    break
                kept.append(line)
            out = "\n".join(kept).strip()
        return out

    def finish_turn(self, start: TurnStart, reply: str | None, *, llm_error: str | None = None,
                    from_model: bool = True) -> AssistantResponse:
        """Complete a turn begun by :meth:`start_turn`: the HIGH block before ``reply``, the MEDIUM offer after it,
        the notifications marked shown/offered, the reply appended to the chat.

        Args:
            reply: the reply's text (a model's answer, or a marker).
            llm_error: the model's error, when it failed.
            from_model: a model wrote ``reply`` (it becomes chat material; a marker never does).
        """
        if start.done is not None:
            return start.done
        user_id, lang, plan = start.user_id, start.lang, start.plan
        assert plan is not None  # set whenever done is None
        # 5. assemble: HIGH block before, MEDIUM offer after
        shown = [self.notifications.mark_shown(n.id, user_id=user_id) for n in plan.high]
        parts = [p for p in (start.high_block, reply) if p]
        offer = None
        if plan.offer is not None:
            offer = self.notifications.mark_offered(plan.offer.id, user_id=user_id)
            for n in plan.offer_more:  # one question for every MEDIUM waiting: "yes" shows them all
                self.notifications.mark_offered(n.id, user_id=user_id)
            parts.append(medium_offer(lang, 1 + len(plan.offer_more)))
        response = "\n\n".join(parts)
        # the reply is conversation only when a model wrote it (never the "no model" marker)
        if self.chats is not None and start.chat_id is not None:
            self.chats.append(start.chat_id, [{"role": "model", "parts": [{"text": response}]}], user_id=user_id,
                              meta=not from_model or llm_error is not None)
        return AssistantResponse(
            response=response,
            notifications_count=self.notifications.count(user_id),
            high_urgency_notifications=[n.to_dict() for n in shown],
            reply=reply,
            medium_offer=offer.to_dict() if offer else None,
            memory_ids=list(start.memory_ids),
            job_ids=list(start.job_ids),
            chat_id=start.chat_id,
            llm_error=llm_error,
        )

    def _safe_state(self, user_id: str, conv: str) -> Any:
        try:
            return self.ingestor.state(user_id, conv)
        except (MemlabError, AttributeError) as exc:
            log.debug("assistant: no conversation state (%s)", exc)
            return IngestResult()

    def _reply(self, user_id: str, message: str, chat_id: str | None, prompt_block: str,
               lang: str) -> tuple[str, str | None]:
        if self.llm is None:
            return NO_MODEL_MARKER[lang], None
        chat = self.compose_messages(user_id, message, chat_id=chat_id, prompt_block=prompt_block,
                                     appended=self.chats is not None and chat_id is not None)
        try:
            return self.llm.chat(chat), None
        except MemlabError as exc:  # the turn completes: notifications and memories must not be lost
            log.warning("assistant: the LLM failed: %s", exc)
            err = f"{type(exc).__name__}: {exc}"
            return messages(lang)["llm_failed"].format(err=err), err

    def _switch(self, user_id: str, message: str, chat_id: str | None, lang: str) -> AssistantResponse | None:
        """A request to move to another chat ("Passiamo alla chat in cui parlavamo del viaggio a Tokyo"): switch
        when one chat clearly matches, ask with the candidates when several do, say so when none does. The
        request is not a fact about the user: no memory is stored; the exchange is appended to the chat the user
        is in afterwards (the target of a switch), which becomes the most recent chat."""
        from memlab.chats.switch import switch_request

        topic = switch_request(message) if self.chats is not None else None
        if topic is None or self.chats is None:
            return None
        sw = self.chats.search(user_id, topic, k=3)
        t = messages(lang)
        cands = [{"chat_id": c.id, "title": c.title, "score": round(float(sc), 4)} for c, sc in sw.candidates]
        if sw.decision == "switch" and sw.chat_id is not None:
            target = sw.chat_id
            text = t["switched"].format(title=display_text(self.chats.get(target, user_id=user_id).title or topic))
        elif sw.decision == "ask":
            target = chat_id
            self._switch_asked[user_id] = [c["chat_id"] for c in cands]
            options = "\n".join(f"{i}) «{display_text(c['title'] or c['chat_id'])}»" for i, c in enumerate(cands, 1))
            text = t["switch_ask"].format(topic=display_text(topic)) + "\n" + options
        else:
            target, text = chat_id, t["switch_none"].format(topic=display_text(topic))
        if target is not None:  # the exchange goes to the chat the user is now in (it becomes the most recent)
            self._append(user_id, target, message, text)
        return AssistantResponse(
            response=text, notifications_count=self.notifications.count(user_id), chat_id=target,
            kind="chat_switch", switch={"decision": sw.decision, "topic": topic, "candidates": cands},
        )

    def _switch_choice(self, user_id: str, message: str, chat_id: str | None, lang: str) -> AssistantResponse | None:
        """The answer to the last chat-switch question ("2", "la seconda", "the first", "第二个", or a chat's title):
        switch to that candidate. Asked once: any other message lets the question expire (None)."""
        asked = self._switch_asked.pop(user_id, None)
        if not asked or self.chats is None:
            return None
        chats = []
        for cid in asked:
            try:
                chats.append(self.chats.get(cid, user_id=user_id))
            except MemlabError:  # deleted since the question
                continue
        pick = choose_candidate(message, [c.title or "" for c in chats])
        if pick is None:
            return None
        target = chats[pick]
        text = messages(lang)["switched"].format(title=display_text(target.title or target.id))
        self._append(user_id, target.id, message, text)
        return AssistantResponse(
            response=text, notifications_count=self.notifications.count(user_id), chat_id=target.id,
            kind="chat_switch",
            switch={"decision": "switch", "topic": message.strip(), "candidates": [
                {"chat_id": c.id, "title": c.title, "score": None} for c in chats]},
        )

    def _answer(self, user_id: str, message: str, chat_id: str | None, lang: str) -> AssistantResponse | None:
        """Handle a message that answers a contradiction or a MEDIUM offer; None if it is a normal message."""
        open_shown = self._open_shown_contradictions(user_id)
        if open_shown:
            parsed = parse_choice(message)
            if parsed is not None:
                choice, note, ref = parsed
                target = None
                if ref is not None:
                    target = next((n for n in open_shown if n.id == ref), None)
                    if target is None:
                        return None  # not an open contradiction of this user: an ordinary message
                else:
                    target = min(open_shown, key=lambda n: n.id)
                resolved = self.notifications.resolve(target.id, choice, note, user_id=user_id)
                text = format_resolution(resolved, lang)
                rest = [n for n in self.notifications.pending(user_id)
                        if n.urgency is Urgency.HIGH and n.shown_at is None]
                plan = plan_turn(rest, fatigue=self._safe_state(user_id, self._conversation_id(user_id, chat_id))
                                 .fatigue or 0.0, max_high=self.max_high_per_turn)
                shown = [self.notifications.mark_shown(n.id, user_id=user_id) for n in plan.high]
                response = "\n\n".join(p for p in (text, format_high_block(plan.high, lang)) if p)
                self._append(user_id, chat_id, message, response)
                return AssistantResponse(
                    response=response, notifications_count=self.notifications.count(user_id),
                    high_urgency_notifications=[n.to_dict() for n in shown], resolved=resolved.to_dict(),
                    chat_id=chat_id, kind="resolution")
        offered = self._offered(user_id)
        if offered:
            yes = parse_yes_no(message)
            if yes is True:
                shown = [self.notifications.mark_shown(n.id, user_id=user_id) for n in offered]
                several = len(shown) > 1
                response = "\n\n".join(format_notification(n, lang, with_ref=several) for n in shown)
                self._append(user_id, chat_id, message, response)
                return AssistantResponse(
                    response=response, notifications_count=self.notifications.count(user_id),
                    high_urgency_notifications=[], chat_id=chat_id, kind="offer_shown",
                    medium_offer=shown[0].to_dict())
            if yes is False:
                # declined: they stay in the bell and are not offered again
                response = declined_text(lang, len(offered))
                for n in offered:
                    self.notifications.mark_declined(n.id, user_id=user_id)
                self._append(user_id, chat_id, message, response)
                return AssistantResponse(
                    response=response, notifications_count=self.notifications.count(user_id),
                    chat_id=chat_id, kind="offer_declined")
        return None
