"""``memlab eval memory-recall``: does a memory still hold the evidence a question needs? (LoCoMo, issue 8).

For each LoCoMo conversation, memory is built several ways; every memory unit keeps the set of dia_ids
(turns) it was built from (provenance):

``raw``
    Every turn is one unit: ``"<speaker>: <text>"`` (plus ``[shares <image caption>]`` when the turn shares
    an image), provenance = its dia_id.
``facts``
    Facts found by ``memlab.extraction.RuleExtractor`` in each turn, in the third person with the speaker's
    name (``to_third_person``), provenance = the turn's dia_id.
``compacted``
    All sessions replayed through :meth:`memlab.chats.ChatStore.append` (one append per session; the first
    speaker's turns as ``user``, the second's as ``model``, window 30), then: every sentence of the final
    compaction summary (provenance = the turns it came from) + the turns left in ``assistant_history`` + the
    ``facts`` units. This is what an assistant built on memlab would still have.
``compacted_no_facts``
    The same without the facts: what compaction alone keeps (isolates its retention loss).
``observations`` (reference, clearly not a memlab system)
    LoCoMo's own model-generated per-session ``observation`` facts with their dia_id evidence.

For every QA item of categories 1-4 (5 = adversarial, unanswerable, is skipped), the question is embedded
(query mode), the 10 most similar units of that conversation are retrieved (exact cosine), and
``evidence recall@10 = |gold ∩ provenance(top-10)| / |gold|`` (gold = the item's evidence dia_ids that exist in
the conversation; items without any are skipped and counted). Reported per category and overall, with a
bootstrap 95% CI, plus ``evidence_coverage`` (the same ratio over ALL units: what survives regardless of
retrieval) and the retention loss of compaction (``raw - compacted``, absolute and relative; and
``raw - compacted_no_facts`` for compaction alone).

Chat switch: every conversation is one chat of the same user; each event of a conversation's
``event_summary`` is a query. ``top1`` = share of queries whose nearest chat summary (query-mode cosine, no
threshold) is that conversation's chat; ``switch_accuracy`` = share where :meth:`ChatStore.search` decides
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

from memlab.errors import InvalidInputError

__all__ = ["MemoryUnit", "build_memories", "evaluate_memory_recall", "run_memory_recall_task"]

log = logging.getLogger(__name__)

SPLITS = ("dev", "test", "all")
MEMORIES = ("raw", "facts", "compacted", "compacted_no_facts", "observations")
CATEGORIES = (1, 2, 3, 4)
K = 10
_REPLAY_TIME = datetime(2024, 1, 1, tzinfo=UTC)  # one fixed clock: recency is equal for every chat


@dataclass(frozen=True, slots=True)
class MemoryUnit:
    """One retrievable memory with its provenance.

    Attributes:
        text: what is embedded and retrieved.
        dia_ids: LoCoMo turns it was built from.
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


def _split(conversations: Sequence[Any], split: str) -> list[Any]:
    if split not in SPLITS:
        raise InvalidInputError(
            f"The 'split' parameter of memory-recall must be one of {SPLITS}. Got {split!r} instead."
        )
    if split == "dev":
        return list(conversations[:2])
    if split == "test":
        return list(conversations[2:])
    return list(conversations)


def _facts(conv: Any, extractor: Any) -> list[MemoryUnit]:
    from memlab.eval.extraction_task import to_third_person

    out = []
    for session in conv.sessions:
        for turn in session.turns:
            if not (turn.text or "").strip():
                continue
            for fact in extractor.extract(turn.text, lang="en").facts:
                out.append(
                    MemoryUnit(to_third_person(fact.content, turn.speaker), frozenset({turn.dia_id}), "fact")
                )
    return out


def build_memories(
    conv: Any, chats: Any, *, user_id: str, extractor: Any
) -> tuple[dict[str, list[MemoryUnit]], str, dict[str, Any]]:
    """Build the four memories of one conversation (replaying it into ``chats`` as one chat of ``user_id``).

    Returns:
        ``(memories by name, chat id, replay statistics)``.
    """
    raw: list[MemoryUnit] = []
    positions: list[str] = []  # full_history position -> dia_id
    chat = chats.create(user_id)
    n_appends = 0
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
            chat = chats.append(chat.id, turns)
            n_appends += 1
    facts = _facts(conv, extractor)
    compacted: list[MemoryUnit] = []
    summary = chats.compaction_summary(chat.id)
    if summary is not None:
        for s in summary.sentences:
            compacted.append(
                MemoryUnit(
                    s.text, frozenset(positions[p] for p in s.sources if p < len(positions)), "summary"
                )
            )
    for pos in range(chat.compacted_until, len(chat.full_history)):
        compacted.append(
            MemoryUnit(chat.full_history[pos]["parts"][0]["text"], frozenset({positions[pos]}), "turn")
        )
    compacted_no_facts = list(compacted)
    compacted += facts
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
        "observations": observations,
    }
    return memories, chat.id, stats


def _retrieve(units: list[MemoryUnit], vecs: np.ndarray, q: np.ndarray, k: int) -> list[list[int]]:
    """Exact top-k by cosine (what a FAISS Flat index returns), best first, ties by unit order."""
    if not units:
        return [[] for _ in range(len(q))]
    # einsum rather than BLAS: multithreaded BLAS is pathological on a loaded 2-core machine
    scores = np.einsum("qd,nd->qn", q, vecs)
    out = []
    for row in scores:
        top = np.argsort(-row, kind="stable")[:k]
        out.append([int(i) for i in top])
    return out


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


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
) -> Any:
    """Run the memory-recall evaluation and write a run directory (see the module docstring).

    Args:
        out_dir: run directory (``run.json`` + ``examples.jsonl``).
        data_dir: folder with ``locomo10.json`` (default: the repository copy).
        split: ``dev`` / ``test`` / ``all`` (conversations; see the module docstring).
        limit: evaluate at most this many conversations of the split (seeded sample).
        seed: sampling seed.
        embedder: an embedder name, an :class:`~memlab.protocols.Embedder`, or ``None`` (the store's default).
        summary_window_size: ChatStore window.
        summary_max_chars: budget of the compaction summary turn.
        k: retrieval depth.
        llm: when given (a :class:`memlab.protocols.LLM`), compaction uses :class:`~memlab.chats.LLMSummarizer`
            with the extractive summariser as fallback (its single summary sentence then has the union of the
            summarised turns as provenance).
        max_sessions: replay only the first N sessions of each conversation (a cheap smoke run); QA items
            with evidence outside them are skipped and counted (``n_questions_skipped_out_of_range``).

    Returns:
        The written :class:`memlab.eval.runs.EvalRun`.
    """
    from memlab.chats import ChatStore, ExtractiveSummarizer
    from memlab.datasets import dataset_sha256, load_locomo
    from memlab.embedding import load_embedder
    from memlab.eval.metrics import bootstrap_ci
    from memlab.eval.runs import Example, make_spec, write_run
    from memlab.extraction import RuleExtractor
    from memlab.store.db import Database
    from memlab.store.memory import DEFAULT_EMBEDDER

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(
            f"The 'limit' parameter of memory-recall must be an int in [1, inf). Got {limit!r} instead."
        )
    if max_sessions is not None and (
        isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1
    ):
        raise InvalidInputError(
            f"The 'max_sessions' parameter of memory-recall must be an int in [1, inf). Got {max_sessions!r} instead."
        )
    t_start = time.perf_counter()
    full = _split(load_locomo(data_dir), split)
    if limit is not None and limit < len(full):
        pick = sorted(np.random.default_rng(seed).choice(len(full), size=limit, replace=False).tolist())
        full = [full[i] for i in pick]
    full_known = {c.sample_id: {t.dia_id for s in c.sessions for t in s.turns} for c in full}
    convs = [dataclasses.replace(c, sessions=c.sessions[:max_sessions]) if max_sessions else c for c in full]
    emb = (
        load_embedder(embedder or DEFAULT_EMBEDDER)
        if embedder is None or isinstance(embedder, str)
        else embedder
    )
    summarizer: Any = ExtractiveSummarizer(emb)
    if llm is not None:
        from memlab.chats import LLMSummarizer

        summarizer = LLMSummarizer(llm, fallback=summarizer)
    chats = ChatStore(
        Database(":memory:"),
        emb,
        summarizer,
        summary_window_size=summary_window_size,
        summary_max_chars=summary_max_chars,
        clock=lambda: _REPLAY_TIME,
    )
    extractor = RuleExtractor()
    user = "locomo"

    examples: list[Example] = []
    recalls: dict[str, dict[int, list[float]]] = {m: defaultdict(list) for m in MEMORIES}
    coverage: dict[str, list[float]] = {m: [] for m in MEMORIES}
    n_units: dict[str, int] = dict.fromkeys(MEMORIES, 0)
    n_questions: dict[int, int] = dict.fromkeys(CATEGORIES, 0)
    skipped_no_evidence = 0
    skipped_out_of_range = 0
    chat_of: dict[str, str] = {}
    replay: dict[str, Any] = {}
    seconds_replay = 0.0
    for conv in convs:
        t0 = time.perf_counter()
        memories, chat_id, stats = build_memories(conv, chats, user_id=user, extractor=extractor)
        seconds_replay += time.perf_counter() - t0
        chat_of[conv.sample_id] = chat_id
        replay[conv.sample_id] = stats
        known = {t.dia_id for s in conv.sessions for t in s.turns}
        qas = []
        for i, qa in enumerate(conv.qa):
            if qa.category not in CATEGORIES:
                continue
            if any(e in full_known[conv.sample_id] and e not in known for e in qa.evidence):
                skipped_out_of_range += 1
                continue
            gold = frozenset(e for e in qa.evidence if e in known)
            if not gold:
                skipped_no_evidence += 1
                continue
            qas.append((i, qa, gold))
            n_questions[qa.category] += 1
        if not qas:
            continue
        q = np.asarray(emb.embed([qa.question for _, qa, _ in qas], mode="query"), dtype=np.float32)
        for name in MEMORIES:
            units = memories[name]
            n_units[name] += len(units)
            vecs = np.asarray(emb.embed([u.text for u in units], mode="passage"), dtype=np.float32)
            hits = _retrieve(units, vecs, q, k)
            everything = frozenset().union(*(u.dia_ids for u in units)) if units else frozenset()
            for (i, qa, gold), top in zip(qas, hits, strict=True):
                got = frozenset().union(*(units[j].dia_ids for j in top)) if top else frozenset()
                r = len(gold & got) / len(gold)
                recalls[name][qa.category].append(r)
                coverage[name].append(len(gold & everything) / len(gold))
                examples.append(
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

    # chat switch: every conversation is one chat of the same user
    switch_rows = []
    for conv in convs:
        for session in conv.sessions:
            for speaker, events in session.events.items():
                for ev in events:
                    if ev.strip():
                        switch_rows.append((conv, session.index, speaker, ev.strip()))
    names = sorted({n for c in convs for n in (c.speaker_a, c.speaker_b) if n}, key=len, reverse=True)
    mask = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b") if names else None
    top1: dict[str, list[float]] = {"named": [], "masked": []}
    switch_ok: dict[str, list[float]] = {"named": [], "masked": []}
    decisions: dict[str, int] = defaultdict(int)
    sid_of = {cid: sid for sid, cid in chat_of.items()}
    cids = [chat_of[c.sample_id] for c in convs]
    cvecs = [chats.get(cid).summary_embedding for cid in cids]
    t0 = time.perf_counter()
    for j, (conv, sidx, speaker, ev) in enumerate(switch_rows):
        own = chat_of[conv.sample_id]
        for variant in ("named", "masked"):
            query = ev if variant == "named" or mask is None else mask.sub("someone", ev)
            # ranking: nearest chat summary, no threshold (recency is equal for every replayed chat)
            qv = np.asarray(emb.embed([query], mode="query"), dtype=np.float32)[0]
            sims = [float(np.dot(v, qv)) if v is not None else -np.inf for v in cvecs]
            best = cids[int(np.argmax(sims))]
            # the switch decision as the assistant would take it (threshold, margin, ask)
            res = chats.search(user, query, k=1)
            top1[variant].append(float(best == own))
            switch_ok[variant].append(float(res.decision == "switch" and res.chat_id == own))
            outcome = (
                f"switch_{'right' if res.chat_id == own else 'wrong'}"
                if res.decision == "switch"
                else res.decision
            )
            if variant == "named":
                decisions[outcome] += 1
            examples.append(
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
    seconds_switch = time.perf_counter() - t0

    metrics: dict[str, Any] = {
        "evidence_recall@10": {},
        "evidence_recall@10_ci95": {},
        "evidence_coverage": {},
    }
    for name in MEMORIES:
        per_cat = {LOCOMO_NAME[c]: _mean(recalls[name][c]) for c in CATEGORIES}
        flat = [r for c in CATEGORIES for r in recalls[name][c]]
        per_cat["all"] = _mean(flat)
        metrics["evidence_recall@10"][name] = per_cat
        metrics["evidence_recall@10_ci95"][name] = (
            list(bootstrap_ci(_mean, flat, seed=seed)) if flat else [None, None]
        )
        metrics["evidence_coverage"][name] = _mean(coverage[name])
    raw_all = metrics["evidence_recall@10"]["raw"]["all"]
    comp_all = metrics["evidence_recall@10"]["compacted"]["all"]
    metrics["retention_loss"] = {
        "recall@10_abs": raw_all - comp_all,
        "recall@10_rel": (raw_all - comp_all) / raw_all if raw_all else float("nan"),
        "coverage_lost": 1.0 - metrics["evidence_coverage"]["compacted"],
        "compaction_only_recall@10_abs": raw_all - metrics["evidence_recall@10"]["compacted_no_facts"]["all"],
        "compaction_only_coverage_lost": 1.0 - metrics["evidence_coverage"]["compacted_no_facts"],
        "per_category_abs": {
            LOCOMO_NAME[c]: metrics["evidence_recall@10"]["raw"][LOCOMO_NAME[c]]
            - metrics["evidence_recall@10"]["compacted"][LOCOMO_NAME[c]]
            for c in CATEGORIES
        },
    }
    metrics["chat_switch"] = {
        "top1": _mean(top1["named"]),
        "top1_names_masked": _mean(top1["masked"]),
        "switch_accuracy": _mean(switch_ok["named"]),
        "switch_accuracy_names_masked": _mean(switch_ok["masked"]),
        "n_queries": len(switch_rows),
        "n_chats": len(convs),
        "decisions": dict(decisions),
        "seconds": seconds_switch,
    }
    metrics["n_units"] = n_units
    metrics["n_questions"] = {LOCOMO_NAME[c]: n for c, n in n_questions.items()}
    metrics["n_questions_skipped_no_evidence"] = skipped_no_evidence
    metrics["n_questions_skipped_out_of_range"] = skipped_out_of_range
    metrics["n_conversations"] = len(convs)
    metrics["compaction"] = {
        "n_compactions_mean": _mean([s["n_compactions"] for s in replay.values()]),
        "summary_chars_mean": _mean([s["summary_chars"] for s in replay.values()]),
        "summary_sentences_mean": _mean([s["summary_sentences"] for s in replay.values()]),
        "assistant_history_max": max((s["assistant_history"] for s in replay.values()), default=0),
        "replay_seconds": seconds_replay,
    }
    metrics["seconds"] = time.perf_counter() - t_start
    spec = make_spec(
        "memory-recall",
        dataset="locomo",
        split=split,
        data_dir=data_dir,
        n=sum(n_questions.values()),
        judge=None,
        params={
            "chats": chats.get_params(),
            "k": k,
            "extractor": "RuleExtractor",
            "conversations": [c.sample_id for c in convs],
            "max_sessions": max_sessions,
        },
        seed=seed,
        limit=limit,
        data_sha256=dataset_sha256("locomo", "test", data_dir),
        embedder=emb.name,
    )
    notes = [
        "evidence recall@10: share of a QA item's gold evidence turns covered by the provenance of the top-10 "
        "retrieved memory units (categories 1-4).",
        "'observations' are LoCoMo's own model-generated facts (a reference, not a memlab system).",
        "chat switch: each event_summary event queries all conversations' chats of one user; top-1 accuracy.",
        "replay: "
        + ", ".join(
            f"{sid}: {st['n_compactions']} compactions, title {st['title']!r}" for sid, st in replay.items()
        ),
    ]
    return write_run(
        out_dir,
        spec=spec,
        metrics=metrics,
        examples=examples,
        notes=notes,
        primary_metric="evidence_recall@10.compacted.all",
    )


LOCOMO_NAME = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def recall_table(run: Any) -> str:
    """Markdown table: evidence recall@10 per memory and category, plus chat-switch top-1."""
    m = run.metrics
    cols = [*LOCOMO_NAME.values(), "all"]
    lines = ["| memory | " + " | ".join(cols) + " | coverage | units |", "|---" * (len(cols) + 3) + "|"]
    for name in MEMORIES:
        r = m["evidence_recall@10"][name]
        lines.append(
            f"| {name} | "
            + " | ".join(_f(r[c]) for c in cols)
            + f" | {_f(m['evidence_coverage'][name])} | {m['n_units'][name]} |"
        )
    lines.append(
        "| n questions | "
        + " | ".join(str(m["n_questions"].get(c, "")) for c in cols[:-1])
        + f" | {sum(m['n_questions'].values())} | | |"
    )
    rl = m["retention_loss"]
    cs = m["chat_switch"]
    lines += [
        "",
        f"retention loss of compaction (raw - compacted recall@10): {_f(rl['recall@10_abs'])} "
        f"({_f(100 * rl['recall@10_rel'])}% relative); evidence no longer anywhere in memory: {_f(rl['coverage_lost'])}",
        f"compaction alone (no facts): recall@10 loss {_f(rl.get('compaction_only_recall@10_abs'))}, "
        f"evidence no longer anywhere: {_f(rl.get('compaction_only_coverage_lost'))}",
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
