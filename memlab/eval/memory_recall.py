"""``memlab eval memory-recall``: does a memory still hold the evidence a question needs? (LoCoMo).

For each LoCoMo conversation, memory is built several ways; every memory unit keeps the set of dia_ids
(turns) it was built from (provenance):

``raw``
    Every turn is one unit: ``"<speaker>: <text>"`` (plus ``[shares <image caption>]`` when the turn shares
    an image), provenance = its dia_id.
``facts``
    Facts found by ``memlab.extraction.RuleExtractor`` in each turn, in the third person with the speaker's
    name (``to_third_person``), the session's day in front and relative dates resolved
    (:func:`memlab.extraction.resolve_relative_dates`), provenance = the turn's dia_id.
``compacted``
    All sessions replayed through :meth:`memlab.chats.ChatStore.append` (one append per session, the clock set
    to the session's date; the first speaker's turns as ``user``, the second's as ``model``, window 30), then:
    every sentence of the final compaction summary (provenance = the turns it came from) + the turns left in
    ``assistant_history`` + the dated 3-turn passages compaction archived (:mod:`memlab.chats.passages`,
    provenance = their turns) + the ``facts`` units, each retrieved by its own text and bringing the archived
    turns around the turn it was said in (two before, two after, within the session: provenance = those turns; a
    fact of a turn still in the window keeps its turn), as :class:`memlab.assistant.Assistant` puts them into the
    prompt for its context's first ``source_k`` memories. This is what an assistant built on memlab would still have.
``compacted_no_facts``
    The same without the facts: what compaction keeps by itself (summary, window, archive).
``summary_only``
    The summary sentences + the window only: compaction without its archive (what it kept before the archive).
``observations`` (reference, clearly not a memlab system)
    LoCoMo's own model-generated per-session ``observation`` facts with their dia_id evidence.

For every QA item of categories 1-4 (5 = adversarial, unanswerable, is skipped), the question retrieves the
top-10 units of that conversation in two ways: ``hybrid`` (the default everywhere in memlab: exact cosine and
FTS5 BM25 fused by reciprocal rank, :mod:`memlab.store.lexical`) and ``dense`` (exact cosine only, under
``metrics["dense"]``), and
``evidence recall@10 = |gold ∩ provenance(top-10)| / |gold|`` (gold = the item's evidence dia_ids that exist in
the conversation; items without any are skipped and counted). Reported per category and overall, with a
bootstrap 95% CI; recall@{1,5,10} per category and MRR (first unit holding a gold turn) per mode under
``recall_at`` and ``mrr``; ``turns_in_top10``: the share of the conversation's turns the top-10 units cover (a
3-turn passage covers 3: the price of coarser units, reported beside their recall); plus ``evidence_coverage`` (the same ratio over ALL units: what survives regardless of
retrieval) and the retention loss of compaction (``raw - compacted``, absolute and relative; and
``raw - compacted_no_facts`` for compaction alone).

Chat switch: every conversation is one chat of the same user; each event of a conversation's
``event_summary`` is a query. ``top1`` = share of queries whose first :meth:`ChatStore.search` candidate (chat
summary and archived passages) is that conversation's chat (``top1_summary_only``: the nearest chat summary
alone, no threshold, for reference); ``switch_accuracy`` = share where :meth:`ChatStore.search` decides
``switch`` to the right chat (threshold, margin; ``ask``/``none`` count as misses). Both also with the
speakers' names masked ("someone"), since events name them.

Splits: LoCoMo has no official split and only 8 conversations here; like ``memlab eval extraction``,
``dev`` = the first two conversations in file order, ``test`` = the other six (default), ``all`` = all.
Nothing in memlab was trained or tuned on LoCoMo's test conversations.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memlab.datasets.locomo import UNDATED_SESSION, locomo_split, session_date
from memlab.errors import InvalidInputError
from memlab.eval.runs import EvalRun, Example
from memlab.eval.task import EvalTask, Scored, run_task, seeded_sample

__all__ = [
    "MemoryRecallTask",
    "MemoryUnit",
    "ReplayClock",
    "build_memories",
    "evaluate_memory_recall",
    "run_memory_recall_task",
]

log = logging.getLogger(__name__)

SPLITS = ("dev", "test", "all")
MEMORIES = ("raw", "facts", "compacted", "compacted_no_facts", "summary_only", "observations")
MODES = ("hybrid", "dense")
AT = (1, 5, 10)
CATEGORIES = (1, 2, 3, 4)
K = 10
_SWITCH_TIME = datetime(2030, 1, 1, tzinfo=UTC)  # switch queries come long after every replayed chat


@dataclass(frozen=True, slots=True)
class MemoryUnit:
    """One retrievable memory with its provenance.

    Attributes:
        text: what is embedded and retrieved.
        dia_ids: LoCoMo turns it covers (for a fact in ``compacted``, the turns it brings).
        kind: ``turn``, ``fact``, ``summary`` or ``observation``.
    """

    text: str
    dia_ids: frozenset[str]
    kind: str


def _turn_text(turn: Any) -> str:
    text = (turn.text or "").strip()
    if turn.blip_caption:
        text = f"{text} [shares {turn.blip_caption.strip()}]".strip()
    return f"{turn.speaker}: {text}" if text else ""


def _facts(conv: Any, extractor: Any) -> list[MemoryUnit]:
    """Rule facts of every turn, in the third person, dated with their session's day (relative dates resolved)."""
    from memlab.entities import format_day
    from memlab.eval.extraction_task import to_third_person
    from memlab.extraction import resolve_relative_dates

    out = []
    for session in conv.sessions:
        when = session_date(session)
        day = format_day(when, "en")
        for turn in session.turns:
            if not (turn.text or "").strip():
                continue
            for fact in extractor.extract(turn.text, lang="en").facts:
                text = resolve_relative_dates(to_third_person(fact.content, turn.speaker), when, lang="en")
                out.append(MemoryUnit(f"[{day}] {text}", frozenset({turn.dia_id}), "fact"))
    return out


class ReplayClock:
    """The replay's clock: the date of the session being appended (so turns and passages carry it)."""

    def __init__(self) -> None:
        self.now = UNDATED_SESSION

    def __call__(self) -> datetime:
        return self.now


def build_memories(
    conv: Any, chats: Any, *, user_id: str, extractor: Any
) -> tuple[dict[str, list[MemoryUnit]], str, dict[str, Any]]:
    """Build the memories of one conversation (replaying it into ``chats`` as one chat of ``user_id``).

    When ``chats.clock`` is a :class:`ReplayClock` it is set to each session's date while that session is
    appended (turns, and the passages compaction archives, carry the day it was said).

    Returns:
        ``(memories by name, chat id, replay statistics)``.
    """
    raw, positions, chat, n_appends = _replay(conv, chats, user_id)
    facts = _facts(conv, extractor)
    summary = chats.compaction_summary(chat.id)
    summary_only = _summary_and_window(summary, chat, positions)
    passages = _archived_passages(chats, chat.id, positions)
    compacted_no_facts = summary_only + passages
    # small-to-big, as the Assistant does (source_k): a fact retrieved after compaction brings the archived turns
    # around the turn it was said in, so it covers them (a fact of a turn still in the window: its turn)
    position = {d: i for i, d in enumerate(positions)}
    compacted = compacted_no_facts + [
        _brings_passage(f, chats.passages_around(user_id, chat.id, [position[next(iter(f.dia_ids))]]), positions)
        for f in facts
    ]
    observations = [
        MemoryUnit(o.text, frozenset(o.evidence), "observation")
        for s in conv.sessions
        for o in s.observations
        if o.text.strip()
    ]
    stats = {
        "n_turns": len(raw),
        "n_appends": n_appends,
        "n_compactions": chat.n_compactions,
        "n_passages": len(passages),
        "summary_chars": len(summary.text) if summary is not None else 0,
        "summary_sentences": len(summary.sentences) if summary is not None else 0,
        "assistant_history": len(chat.assistant_history),
        "title": chat.title,
    }
    memories = {
        "raw": raw,
        "facts": facts,
        "compacted": compacted,
        "compacted_no_facts": compacted_no_facts,
        "summary_only": summary_only,
        "observations": observations,
    }
    return memories, chat.id, stats


def _replay(conv: Any, chats: Any, user_id: str) -> tuple[list[MemoryUnit], list[str], Any, int]:
    """Append every session of ``conv`` to a new chat of ``user_id`` (one append per non-empty session).

    The first speaker's turns go in as ``user``, the other's as ``model``; a :class:`ReplayClock` on ``chats`` is
    set to each session's date first.

    Returns:
        ``(raw turn units, dia_id of each full_history position, the chat after the last append, appends)``.
    """
    raw: list[MemoryUnit] = []
    positions: list[str] = []  # full_history position -> dia_id
    chat = chats.create(user_id)
    n_appends = 0
    clock = chats.clock if isinstance(chats.clock, ReplayClock) else None
    for session in conv.sessions:
        turns = []
        for t in session.turns:
            text = _turn_text(t)
            if not text:
                continue
            raw.append(MemoryUnit(text, frozenset({t.dia_id}), "turn"))
            positions.append(t.dia_id)
            turns.append(
                {"role": "user" if t.speaker == conv.speaker_a else "model", "parts": [{"text": text}]}
            )
        if turns:
            if clock is not None:
                clock.now = session_date(session)
            chat = chats.append(chat.id, turns)
            n_appends += 1
    return raw, positions, chat, n_appends


def _summary_and_window(summary: Any, chat: Any, positions: Sequence[str]) -> list[MemoryUnit]:
    """The ``summary_only`` memory: each sentence of the compaction ``summary`` (``None``: none) with the turns it
    came from, then each turn still in the chat's window (after ``chat.compacted_until``)."""
    units: list[MemoryUnit] = []
    if summary is not None:
        for s in summary.sentences:
            units.append(
                MemoryUnit(
                    s.text, frozenset(positions[p] for p in s.sources if p < len(positions)), "summary"
                )
            )
    for pos in range(chat.compacted_until, len(chat.full_history)):
        units.append(
            MemoryUnit(chat.full_history[pos]["parts"][0]["text"], frozenset({positions[pos]}), "turn")
        )
    return units


def _archived_passages(chats: Any, chat_id: str, positions: Sequence[str]) -> list[MemoryUnit]:
    """The passages compaction archived for ``chat_id``, in position order, each covering its turns."""
    return [
        MemoryUnit(r["text"], frozenset(positions[p] for p in range(r["start_pos"], r["end_pos"] + 1)), "passage")
        for r in chats.db.query(
            "SELECT start_pos, end_pos, text FROM chat_passages WHERE chat_id = ? ORDER BY start_pos, end_pos",
            (chat_id,),
        )
    ]


def _brings_passage(fact: MemoryUnit, around: Sequence[Any], positions: Sequence[str]) -> MemoryUnit:
    """``fact`` covering what :class:`memlab.assistant.Assistant` shows with it: the archived turns ``around`` its
    turn (:meth:`memlab.chats.ChatStore.passages_around`); a turn not archived yet: the turn itself."""
    turns = {positions[i] for h in around for i in h.positions}
    return MemoryUnit(fact.text, frozenset(turns) if turns else fact.dia_ids, fact.kind)


def _retrieve(
    units: list[MemoryUnit], vecs: np.ndarray, q: np.ndarray, k: int, *, queries: Sequence[str] = (), mode: str = "dense"
) -> list[list[int]]:
    """Top-k unit indices per query, best first.

    ``dense``: exact cosine (what a FAISS Flat index returns; ties by unit order). ``hybrid``: the dense ranking and
    FTS5 BM25 over the units' texts fused by reciprocal rank, exactly as :meth:`memlab.store.MemoryStore.search`
    and :meth:`memlab.chats.ChatStore.search_history` do (:mod:`memlab.store.lexical`). In both, a unit sharing two
    turns with a better one goes behind the rest (:func:`memlab.chats.passages.drop_overlapping`).
    """
    from memlab.chats.passages import drop_overlapping
    from memlab.store.lexical import LexicalIndex, hybrid_rank, search_depth

    if not units:
        return [[] for _ in range(len(q))]
    spans = [u.dia_ids for u in units]
    # einsum rather than BLAS: multithreaded BLAS is pathological on a loaded 2-core machine
    scores = np.einsum("qd,nd->qn", q, vecs)
    depth = search_depth(k)
    dense = [[int(i) for i in np.argsort(-row, kind="stable")[:depth]] for row in scores]
    if mode == "dense":
        return [drop_overlapping(d, spans)[:k] for d in dense]
    lex = LexicalIndex()
    lex.add(enumerate(u.text for u in units))
    return [
        drop_overlapping(hybrid_rank(d, lex.search(text, depth)), spans)[:k]
        for d, text in zip(dense, queries, strict=True)
    ]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


@dataclass
class _Tally:
    """What the solver of :class:`MemoryRecallTask` gathers for the scorer."""

    examples: list[Any] = dataclasses.field(default_factory=list)
    recalls: dict[str, dict[str, dict[int, list[float]]]] = dataclasses.field(
        default_factory=lambda: {mode: {m: defaultdict(list) for m in MEMORIES} for mode in MODES}
    )
    recall_at: dict[str, dict[str, dict[int, list[tuple[int, float]]]]] = dataclasses.field(
        default_factory=lambda: {mode: {m: defaultdict(list) for m in MEMORIES} for mode in MODES}
    )
    rr: dict[str, dict[str, list[float]]] = dataclasses.field(
        default_factory=lambda: {mode: {m: [] for m in MEMORIES} for mode in MODES}
    )
    turns_in_top: dict[str, dict[str, list[float]]] = dataclasses.field(
        default_factory=lambda: {mode: {m: [] for m in MEMORIES} for mode in MODES}
    )
    coverage: dict[str, list[float]] = dataclasses.field(default_factory=lambda: {m: [] for m in MEMORIES})
    n_units: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(MEMORIES, 0))
    n_questions: dict[int, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    skipped_no_evidence: int = 0
    skipped_out_of_range: int = 0
    chat_of: dict[str, str] = dataclasses.field(default_factory=dict)
    replay: dict[str, Any] = dataclasses.field(default_factory=dict)
    seconds_replay: float = 0.0
    switch: dict[str, Any] = dataclasses.field(default_factory=dict)


class MemoryRecallTask(EvalTask):
    """Evidence recall@10 of memories built from LoCoMo conversations, and the chat switch (module docstring).

    Args:
        data_dir: folder with ``locomo10.json`` (default: the repository copy).
        split: ``dev`` / ``test`` / ``all`` (conversations; see the module docstring).
        embedder: an embedder name, an :class:`~memlab.protocols.Embedder`, or ``None`` (the store's default).
        summary_window_size: ChatStore window.
        summary_max_chars: budget of the compaction summary turn.
        k: retrieval depth.
        llm: when given (a :class:`memlab.protocols.LLM`), compaction uses :class:`~memlab.chats.LLMSummarizer`
            with the extractive summariser as fallback (its single summary sentence then has the union of the
            summarised turns as provenance).
        max_sessions: replay only the first N sessions of each conversation (a cheap smoke run); QA items
            with evidence outside them are skipped and counted (``n_questions_skipped_out_of_range``).
    """

    name = "memory-recall"
    primary_metric = "evidence_recall@10.compacted.all"

    def __init__(
        self,
        *,
        data_dir: str | Path | None = None,
        split: str = "test",
        embedder: Any = None,
        summary_window_size: int = 30,
        summary_max_chars: int = 1500,
        k: int = K,
        llm: Any = None,
        max_sessions: int | None = None,
    ) -> None:
        from memlab.chats import ChatStore, ExtractiveSummarizer
        from memlab.embedding import load_embedder
        from memlab.store.db import Database
        from memlab.store.memory import DEFAULT_EMBEDDER

        if max_sessions is not None and (
            isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1
        ):
            raise InvalidInputError(
                f"The 'max_sessions' parameter of memory-recall must be an int in [1, inf). Got {max_sessions!r} instead."
            )
        self.data_dir, self.split, self.k, self.max_sessions = data_dir, split, k, max_sessions
        self.emb = (
            load_embedder(embedder or DEFAULT_EMBEDDER)
            if embedder is None or isinstance(embedder, str)
            else embedder
        )
        summarizer: Any = ExtractiveSummarizer(self.emb)
        if llm is not None:
            from memlab.chats import LLMSummarizer

            summarizer = LLMSummarizer(llm, fallback=summarizer)
        self.chats = ChatStore(
            Database(":memory:"),
            self.emb,
            summarizer,
            summary_window_size=summary_window_size,
            summary_max_chars=summary_max_chars,
            clock=ReplayClock(),
        )
        self.user = "locomo"
        self._convs: list[Any] = []

    def samples(self, limit: int | None, seed: int) -> list[Any]:
        from memlab.datasets import load_locomo

        convs = load_locomo(self.data_dir)
        chosen = locomo_split(convs, self.split, owner="memory-recall")
        if not chosen:  # e.g. --split test on a file with only the 2 dev conversations
            raise InvalidInputError(
                f"memory-recall: the split {self.split!r} is empty: the LoCoMo file holds {len(convs)} "
                f"conversation(s) (dev = the first 2, test = the others). Choose another --split."
            )
        return seeded_sample(chosen, limit, seed)

    def solve(self, samples: Sequence[Any], *, progress: bool) -> _Tally:
        from tqdm.auto import tqdm

        from memlab.extraction import RuleExtractor

        extractor = RuleExtractor()
        tally = _Tally()
        ms = self.max_sessions
        self._convs = [dataclasses.replace(c, sessions=c.sessions[:ms]) if ms else c for c in samples]
        for full, conv in tqdm(
            list(zip(samples, self._convs, strict=True)), desc="replay", disable=not progress
        ):
            t0 = time.perf_counter()
            memories, chat_id, stats = build_memories(
                conv, self.chats, user_id=self.user, extractor=extractor
            )
            tally.seconds_replay += time.perf_counter() - t0
            tally.chat_of[conv.sample_id], tally.replay[conv.sample_id] = chat_id, stats
            self._recall_one(full, conv, memories, tally)
        t0 = time.perf_counter()
        self.chats.clock.now = _SWITCH_TIME  # recency equal (and ~0) for every replayed chat
        tally.switch = self._chat_switch(tally)
        tally.switch["seconds"] = time.perf_counter() - t0
        return tally

    def _recall_one(self, full: Any, conv: Any, memories: dict[str, list[MemoryUnit]], tally: _Tally) -> None:
        """Evidence recall@k of every QA item of one conversation, for every memory."""
        full_known = {t.dia_id for s in full.sessions for t in s.turns}
        known = {t.dia_id for s in conv.sessions for t in s.turns}
        qas = []
        for i, qa in enumerate(conv.qa):
            if qa.category not in CATEGORIES:
                continue
            if any(e in full_known and e not in known for e in qa.evidence):
                tally.skipped_out_of_range += 1
                continue
            gold = frozenset(e for e in qa.evidence if e in known)
            if not gold:
                tally.skipped_no_evidence += 1
                continue
            qas.append((i, qa, gold))
            tally.n_questions[qa.category] += 1
        if not qas:
            return
        questions = [qa.question for _, qa, _ in qas]
        q = np.asarray(self.emb.embed(questions, mode="query"), dtype=np.float32)
        n_turns = len(known)
        for name in MEMORIES:
            units = memories[name]
            tally.n_units[name] += len(units)
            vecs = np.asarray(self.emb.embed([u.text for u in units], mode="passage"), dtype=np.float32)
            everything = frozenset().union(*(u.dia_ids for u in units)) if units else frozenset()
            for mode in MODES:
                tops = _retrieve(units, vecs, q, self.k, queries=questions, mode=mode)
                for (i, qa, gold), top in zip(qas, tops, strict=True):
                    got = frozenset().union(*(units[j].dia_ids for j in top)) if top else frozenset()
                    r = len(gold & got) / len(gold)
                    tally.recalls[mode][name][qa.category].append(r)
                    for at in AT:
                        seen = frozenset().union(*(units[j].dia_ids for j in top[:at])) if top else frozenset()
                        tally.recall_at[mode][name][at].append((qa.category, len(gold & seen) / len(gold)))
                    first = next((rank for rank, j in enumerate(top, 1) if units[j].dia_ids & gold), None)
                    tally.rr[mode][name].append(1.0 / first if first else 0.0)
                    tally.turns_in_top[mode][name].append(len(got) / n_turns if n_turns else 0.0)
                    if mode != MODES[0]:
                        continue
                    tally.coverage[name].append(len(gold & everything) / len(gold))
                    tally.examples.append(
                        Example(
                            id=f"{conv.sample_id}/qa{i}/{name}",
                            gold=" ".join(sorted(gold)),
                            pred=" ".join(sorted(got & gold)),
                            score=r,
                            decided_by=name,
                            group=conv.sample_id,
                            meta={
                                "category": qa.category_name,
                                "question": qa.question,
                                "retrieved": [units[j].text for j in top[:3]],
                            },
                        )
                    )

    def _chat_switch(self, tally: _Tally) -> dict[str, Any]:
        """Every conversation is one chat of the same user; each event of its summary is a query."""
        convs = self._convs
        rows = [
            (conv, session.index, speaker, ev.strip())
            for conv in convs
            for session in conv.sessions
            for speaker, events in session.events.items()
            for ev in events
            if ev.strip()
        ]
        names = sorted({n for c in convs for n in (c.speaker_a, c.speaker_b) if n}, key=len, reverse=True)
        mask = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b") if names else None
        top1: dict[str, list[float]] = {"named": [], "masked": []}
        top1_summary: dict[str, list[float]] = {"named": [], "masked": []}
        switch_ok: dict[str, list[float]] = {"named": [], "masked": []}
        decisions: dict[str, int] = defaultdict(int)
        sid_of = {cid: sid for sid, cid in tally.chat_of.items()}
        cids = [tally.chat_of[c.sample_id] for c in convs]
        cvecs = [self.chats.get(cid).summary_embedding for cid in cids]
        for j, (conv, sidx, speaker, ev) in enumerate(rows):
            own = tally.chat_of[conv.sample_id]
            for variant in ("named", "masked"):
                query = ev if variant == "named" or mask is None else mask.sub("someone", ev)
                # reference ranking: nearest chat summary alone, no threshold (what the switch used before passages)
                qv = np.asarray(self.emb.embed([query], mode="query"), dtype=np.float32)[0]
                best_summary = cids[
                    int(np.argmax([float(np.dot(v, qv)) if v is not None else -np.inf for v in cvecs]))
                ]
                # the switch as the assistant takes it (summary + archived passages, threshold, margin, ask)
                res = self.chats.search(self.user, query, k=len(cids))
                best = res.candidates[0][0].id if res.candidates else None
                top1_summary[variant].append(float(best_summary == own))
                top1[variant].append(float(best == own))
                switch_ok[variant].append(float(res.decision == "switch" and res.chat_id == own))
                right = "right" if res.chat_id == own else "wrong"
                outcome = f"switch_{right}" if res.decision == "switch" else res.decision
                if variant == "named":
                    decisions[outcome] += 1
                tally.examples.append(
                    Example(
                        id=f"switch/{conv.sample_id}/s{sidx}/{j}/{variant}",
                        gold=conv.sample_id,
                        pred=sid_of.get(best),
                        score=float(best == own),
                        decided_by=f"chat_switch_{variant}",
                        group=conv.sample_id,
                        meta={"query": query, "decision": outcome, "speaker": speaker},
                    )
                )
        return {
            "top1": _mean(top1["named"]),
            "top1_names_masked": _mean(top1["masked"]),
            "top1_summary_only": _mean(top1_summary["named"]),
            "switch_accuracy": _mean(switch_ok["named"]),
            "switch_accuracy_names_masked": _mean(switch_ok["masked"]),
            "n_queries": len(rows),
            "n_chats": len(convs),
            "decisions": dict(decisions),
        }

    def score(self, samples: Sequence[Any], solved: _Tally, *, seed: int, seconds: float) -> Scored:
        from memlab.eval.metrics import bootstrap_ci

        t = solved
        metrics: dict[str, Any] = {
            "evidence_recall@10": {},
            "evidence_recall@10_ci95": {},
            "evidence_coverage": {},
            "dense": {"evidence_recall@10": {}},
            "recall_at": {mode: {} for mode in MODES},
            "mrr": {mode: {} for mode in MODES},
            "turns_in_top10": {mode: {} for mode in MODES},
        }
        for mode in MODES:
            target = metrics if mode == "hybrid" else metrics["dense"]
            for name in MEMORIES:
                per_cat = {LOCOMO_NAME[c]: _mean(t.recalls[mode][name][c]) for c in CATEGORIES}
                flat = [r for c in CATEGORIES for r in t.recalls[mode][name][c]]
                per_cat["all"] = _mean(flat)
                target["evidence_recall@10"][name] = per_cat
                if mode == "hybrid":
                    metrics["evidence_recall@10_ci95"][name] = (
                        list(bootstrap_ci(_mean, flat, seed=seed)) if flat else [None, None]
                    )
                    metrics["evidence_coverage"][name] = _mean(t.coverage[name])
                metrics["recall_at"][mode][name] = {
                    str(at): {
                        **{LOCOMO_NAME[c]: _mean([r for cc, r in t.recall_at[mode][name][at] if cc == c]) for c in CATEGORIES},
                        "all": _mean([r for _, r in t.recall_at[mode][name][at]]),
                    }
                    for at in AT
                }
                metrics["mrr"][mode][name] = _mean(t.rr[mode][name])
                metrics["turns_in_top10"][mode][name] = _mean(t.turns_in_top[mode][name])
        recall = metrics["evidence_recall@10"]
        raw_all, comp_all = recall["raw"]["all"], recall["compacted"]["all"]
        metrics["retention_loss"] = {
            "recall@10_abs": raw_all - comp_all,
            "recall@10_rel": (raw_all - comp_all) / raw_all if raw_all else float("nan"),
            "coverage_lost": 1.0 - metrics["evidence_coverage"]["compacted"],
            "compaction_only_recall@10_abs": raw_all - recall["compacted_no_facts"]["all"],
            "compaction_only_coverage_lost": 1.0 - metrics["evidence_coverage"]["compacted_no_facts"],
            "summary_only_recall@10_abs": raw_all - recall["summary_only"]["all"],
            "summary_only_coverage_lost": 1.0 - metrics["evidence_coverage"]["summary_only"],
            "per_category_abs": {
                LOCOMO_NAME[c]: recall["raw"][LOCOMO_NAME[c]] - recall["compacted"][LOCOMO_NAME[c]]
                for c in CATEGORIES
            },
        }
        metrics["chat_switch"] = t.switch
        metrics["n_units"] = t.n_units
        metrics["n_questions"] = {LOCOMO_NAME[c]: n for c, n in t.n_questions.items()}
        metrics["n_questions_skipped_no_evidence"] = t.skipped_no_evidence
        metrics["n_questions_skipped_out_of_range"] = t.skipped_out_of_range
        metrics["n_conversations"] = len(self._convs)
        replay = t.replay.values()
        metrics["compaction"] = {
            "n_compactions_mean": _mean([s["n_compactions"] for s in replay]),
            "summary_chars_mean": _mean([s["summary_chars"] for s in replay]),
            "summary_sentences_mean": _mean([s["summary_sentences"] for s in replay]),
            "assistant_history_max": max((s["assistant_history"] for s in replay), default=0),
            "replay_seconds": t.seconds_replay,
        }
        metrics["seconds"] = seconds
        notes = [
            "evidence recall@10: share of a QA item's gold evidence turns covered by the provenance of the top-10 "
            "retrieved memory units (categories 1-4).",
            "'observations' are LoCoMo's own model-generated facts (a reference, not a memlab system).",
            "chat switch: each event_summary event queries all conversations' chats of one user; top-1 accuracy.",
            "replay: "
            + ", ".join(
                f"{sid}: {st['n_compactions']} compactions, title {st['title']!r}"
                for sid, st in t.replay.items()
            ),
        ]
        return Scored(metrics=metrics, examples=t.examples, notes=notes, n=sum(t.n_questions.values()))

    def spec(self) -> dict[str, Any]:
        from memlab.datasets import dataset_sha256

        params = {
            "chats": self.chats.get_params(),
            "k": self.k,
            "extractor": "RuleExtractor",
            "conversations": [c.sample_id for c in self._convs],
            "max_sessions": self.max_sessions,
        }
        return {
            "dataset": "locomo",
            "split": self.split,
            "data_dir": self.data_dir,
            "judge": None,
            "params": params,
            "data_sha256": dataset_sha256("locomo", "test", self.data_dir),
            "embedder": self.emb.name,
        }


def evaluate_memory_recall(
    *,
    out_dir: str | Path,
    data_dir: str | Path | None = None,
    split: str = "test",
    limit: int | None = None,
    seed: int = 0,
    embedder: Any = None,
    summary_window_size: int = 30,
    summary_max_chars: int = 1500,
    k: int = K,
    llm: Any = None,
    max_sessions: int | None = None,
    progress: bool = False,
    command: str | None = None,
) -> EvalRun:
    """Run the memory-recall evaluation and write a run directory (:class:`MemoryRecallTask` + :func:`run_task`).

    Args:
        out_dir: run directory (``run.json`` + ``examples.jsonl``).
        data_dir, split, embedder, summary_window_size, summary_max_chars, k, llm, max_sessions: see
            :class:`MemoryRecallTask`.
        limit: evaluate at most this many conversations of the split (seeded sample).
        seed: sampling seed.
        progress: show a tqdm bar over the replayed conversations.
        command: the command line, recorded in the spec.

    Returns:
        The written :class:`memlab.eval.runs.EvalRun`.
    """
    task = MemoryRecallTask(
        data_dir=data_dir,
        split=split,
        embedder=embedder,
        summary_window_size=summary_window_size,
        summary_max_chars=summary_max_chars,
        k=k,
        llm=llm,
        max_sessions=max_sessions,
    )
    return run_task(task, limit=limit, seed=seed, out_dir=out_dir, command=command, progress=progress)


LOCOMO_NAME = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def recall_table(run: Any) -> str:
    """Markdown tables: evidence recall@10 per memory and category (hybrid, the default), dense beside it, R@1/5,
    MRR and the share of turns in the top-10; then retention loss and the chat switch."""
    m = run.metrics
    cols = [*LOCOMO_NAME.values(), "all"]
    lines = [
        "| memory | " + " | ".join(cols) + " | dense all | R@1 | R@5 | MRR | turns in top-10 | coverage | units |",
        "|---" * (len(cols) + 8) + "|",
    ]
    dense = m.get("dense", {}).get("evidence_recall@10", {})
    at = m.get("recall_at", {}).get("hybrid", {})
    mrr = m.get("mrr", {}).get("hybrid", {})
    turns = m.get("turns_in_top10", {}).get("hybrid", {})
    for name in MEMORIES:
        if name not in m["evidence_recall@10"]:
            continue
        r = m["evidence_recall@10"][name]
        a = at.get(name, {})
        lines.append(
            f"| {name} | "
            + " | ".join(_f(r[c]) for c in cols)
            + f" | {_f(dense.get(name, {}).get('all'))} | {_f(a.get('1', {}).get('all'))} | {_f(a.get('5', {}).get('all'))}"
            + f" | {_f(mrr.get(name))} | {_f(turns.get(name))} | {_f(m['evidence_coverage'][name])} | {m['n_units'][name]} |"
        )
    lines.append(
        "| n questions | "
        + " | ".join(str(m["n_questions"].get(c, "")) for c in cols[:-1])
        + f" | {sum(m['n_questions'].values())} |" + " |" * 7
    )
    rl = m["retention_loss"]
    cs = m["chat_switch"]
    lines += [
        "",
        "retrieval: hybrid (cosine + FTS5 BM25, reciprocal rank fusion); 'dense all' = cosine only.",
        f"retention loss of compaction (raw - compacted recall@10): {_f(rl['recall@10_abs'])} "
        f"({_f(100 * rl['recall@10_rel'])}% relative); evidence no longer anywhere in memory: {_f(rl['coverage_lost'])}",
        f"compaction alone (no facts): recall@10 loss {_f(rl.get('compaction_only_recall@10_abs'))}, "
        f"evidence no longer anywhere: {_f(rl.get('compaction_only_coverage_lost'))}; summary + window only "
        f"(no archive): loss {_f(rl.get('summary_only_recall@10_abs'))}",
        f"chat switch top-1: {_f(cs['top1'])} ({cs['n_queries']} queries, {cs['n_chats']} chats); "
        f"names masked: {_f(cs['top1_names_masked'])}; switch decided right: {_f(cs.get('switch_accuracy'))} "
        f"(names masked: {_f(cs.get('switch_accuracy_names_masked'))}); decisions: {cs['decisions']}",
    ]
    return "\n".join(lines)


def _f(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "n/a"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def run_memory_recall_task(*, out_dir: Path, seed: int = 0, **params: Any) -> Any:
    """Suite runner (``memlab eval suite``): ``dataset`` must be ``locomo``; other keys go to :func:`evaluate_memory_recall`."""
    dataset = params.pop("dataset", "locomo")
    if dataset != "locomo":
        raise InvalidInputError(
            f"The 'dataset' parameter of memory-recall must be 'locomo'. Got {dataset!r} instead."
        )
    params.pop("judge", None)
    return evaluate_memory_recall(out_dir=out_dir, seed=seed, **params)
