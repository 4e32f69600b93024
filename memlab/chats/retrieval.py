"""Chat retrieval: finding archived passages and the chat a switch request means.

* :func:`search_history`: the archived passages of a user's chats that best match a query, by hybrid retrieval
  (dense cosine + SQLite FTS5 BM25, fused by reciprocal rank; a passage repeating a better one moves behind the
  rest, see :func:`memlab.chats.passages.drop_overlapping`);
* :func:`passages_at` / :func:`passages_around`: the passages around given ``full_history`` positions (what a
  memory was said in, for the Assistant's small-to-big retrieval);
* :func:`search_chats`: the natural-language chat switch, each chat scored by its theme summary, its closest
  archived passage, the request's distinctive words and recency (formula and decision rule in
  :mod:`memlab.chats.switch`).

Each function takes the :class:`~memlab.chats.ChatStore` whose database it reads and whose parameters (embedder,
thresholds, weights) it applies; :class:`~memlab.chats.ChatStore` exposes them as ``search``,
``search_history``, ``passages_at`` and ``passages_around``.

Example:
    >>> from memlab.chats import ChatStore
    >>> from memlab.store import MemoryStore
    >>> from memlab.testing import FakeEmbedder
    >>> chats = ChatStore(MemoryStore(":memory:", embedder=FakeEmbedder()), summary_window_size=4)
    >>> chat = chats.create("u1", turns=[{"role": "user", "parts": [{"text": t}]} for t in (
    ...     "Parto per Tokyo il 3 maggio.", "Ho prenotato un albergo a Shinjuku.", "Porto la macchina fotografica.",
    ...     "Domani compro lo yen.", "Che tempo fa a Tokyo?", "Ci vediamo al ritorno.")])
    >>> hits = search_history(chats, "u1", "albergo a Shinjuku", k=1)
    >>> hits[0].chat_id == chat.id, "Shinjuku" in hits[0].text
    (True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlab._validation import check_positive_int, check_text, check_user_id
from memlab.chats.passages import PassageHit, drop_overlapping
from memlab.chats.switch import (
    ChatSwitch,
    background_reference,
    decide_switch,
    recency_factor,
    strip_switch_phrase,
    switch_score,
)
from memlab.errors import InvalidInputError
from memlab.store.lexical import (
    LexicalIndex,
    hybrid_rank,
    owner_token,
    query_terms,
    search_depth,
    terms_query,
    websearch_query,
)

if TYPE_CHECKING:
    from memlab.chats.store import ChatStore

__all__ = [
    "TURNS_AFTER",
    "history_hits",
    "lexical_matches",
    "passage_matches",
    "passages_around",
    "passages_at",
    "search_chats",
    "search_history",
]

#: Turns after a message that come with it in :meth:`ChatStore.passages_around` (with the two before it).
TURNS_AFTER = 2
#: Archived passages consulted by the chat switch (the best hybrid hits over all the user's chats).
_SWITCH_PASSAGES = 20


def search_chats(chats: ChatStore, user_id: str, query: str, k: int = 5) -> ChatSwitch:
    """Natural-language chat switch: which of the user's chats does ``query`` mean?

    The request wrapper ("la chat in cui parlavamo del ...") is stripped, the topic is embedded in query
    mode, compared with the user's chat summaries, and scored with recency (formula and decision rule in
    :mod:`memlab.chats.switch`).

    Returns:
        ``ChatSwitch(decision="switch"|"ask"|"none", chat_id, candidates)``; only this user's chats.

    Raises:
        InvalidInputError: bad user id, empty query, or ``k`` < 1.
    """
    user_id = check_user_id(user_id, owner="ChatStore.search")
    query = check_text(query, name="query", owner="ChatStore.search", max_chars=chats.max_turn_chars)
    k = check_positive_int(k, name="k", owner="ChatStore.search")
    topic = strip_switch_phrase(query)
    rows = chats.db.query(
        "SELECT id, title, summary_text, summary_embedding, summary_embedder, last_activity_at FROM chats "
        "WHERE user_id = ? AND summary_text IS NOT NULL ORDER BY id",
        (user_id,),
    )
    if not rows:
        return ChatSwitch("none", None, (), topic)
    vecs = np.stack([chats._summary_vector(r) for r in rows])
    q = np.asarray(chats.embedder.embed([topic], mode="query"), dtype=np.float32)[0]
    sims = np.einsum("id,d->i", vecs, q)  # not BLAS: small products, see ExtractiveSummarizer
    # a chat is also as close as its closest archived passage: a 300-character theme summary cannot name
    # every event of a long chat, its archive can
    best: dict[str, float] = {}
    for hit in history_hits(chats, user_id, topic, q, _SWITCH_PASSAGES, chat_id=None, mode="hybrid"):
        best[hit.chat_id] = max(best.get(hit.chat_id, -1.0), hit.score)
    sims = np.asarray([max(float(v), best.get(r["id"], -1.0)) for r, v in zip(rows, sims, strict=True)])
    lex = lexical_matches(chats, user_id, topic, rows) if chats.lexical_weight > 0 else {}
    tau = chats._tau()
    ref = background_reference(sims, tau)
    now = chats._now()
    scored = []
    for r, sim in zip(rows, sims, strict=True):
        if float(sim) < tau:
            continue
        rec = recency_factor(
            datetime.fromisoformat(r["last_activity_at"]), now, chats.recency_half_life_days
        )
        scored.append((switch_score(float(sim), ref, rec, chats.recency_weight, lex.get(r["id"], 0.0),
                                    chats.lexical_weight), r["id"]))
    scored.sort(key=lambda x: (-x[0], x[1]))
    decision = decide_switch([s for s, _ in scored], chats.switch_margin)
    top = scored[:k]
    candidates = tuple((chats.get(cid), float(s)) for s, cid in top)
    return ChatSwitch(decision, top[0][1] if decision == "switch" else None, candidates, topic)


def lexical_matches(chats: ChatStore, user_id: str, topic: str, rows: Sequence[Any]) -> dict[str, float]:
    """Each chat's share of the topic's distinctive terms (found in some of the user's chats but not in all) that
    its title, summary or archived passages contain, matched by SQLite FTS5 (memlab's tokenizer: stemming,
    accents folded, CJK as character pairs); ``{}`` when no term is distinctive (see :mod:`memlab.chats.switch`)."""
    terms = query_terms(topic)
    if not terms or len(rows) < 2:
        return {}
    ids = [str(r["id"]) for r in rows]
    heads = LexicalIndex()
    heads.add((i, f"{r['title'] or ''}\n{r['summary_text'] or ''}") for i, r in enumerate(rows))
    found: dict[str, set[str]] = {}
    for t in terms:
        in_passages = {r["chat_id"] for r in passage_matches(chats.db, user_id, [t], limit=None)}
        found[t] = {ids[i] for i in heads.search_terms([t], len(ids))} | {str(c) for c in in_passages}
    distinctive = [hit for hit in found.values() if 0 < len(hit & set(ids)) < len(ids)]
    if not distinctive:
        return {}
    return {cid: sum(cid in hit for hit in distinctive) / len(distinctive) for cid in ids}


def search_history(
    chats: ChatStore,
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
    owner = "ChatStore.search_history"
    user_id = check_user_id(user_id, owner=owner)
    query = check_text(query, name="query", owner=owner, max_chars=chats.max_turn_chars)
    k = check_positive_int(k, name="k", owner=owner)
    if mode not in ("hybrid", "dense"):
        raise InvalidInputError(f"The 'mode' parameter of {owner} must be 'hybrid' or 'dense'. Got {mode!r}.")
    if chat_id is not None:
        chats._row(chat_id, user_id, owner)
    return history_hits(chats, user_id, query, None, k, chat_id=chat_id, mode=mode)


def passages_at(chats: ChatStore, user_id: str, chat_id: str, positions: Sequence[int]) -> list[PassageHit]:
    """The archived passages of ``chat_id`` that end at ``positions`` (each folded turn's passage: the turn and up
    to two before it in its session), in the order of ``positions``; positions not archived (still in the
    window, or unknown) are skipped. ``score`` is 0: nothing was compared.

    This is how a memory retrieved for the prompt brings the words it came from (the Assistant's
    small-to-big retrieval: a fact is a precise key, its passage the context the model reads).

    Raises:
        InvalidInputError: bad user id or a position that is not an int >= 0.
        NotFoundError: ``chat_id`` is not one of the user's chats.
    """
    owner = "ChatStore.passages_at"
    user_id = check_user_id(user_id, owner=owner)
    chats._row(chat_id, user_id, owner)
    wanted: list[int] = []
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or p < 0:
            raise InvalidInputError(f"The 'positions' of {owner} must be ints >= 0. Got {p!r}.")
        if p not in wanted:
            wanted.append(p)
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows = chats.db.query(
        f"SELECT chat_id, start_pos, end_pos, text, at FROM chat_passages WHERE chat_id = ? AND user_id = ? "
        f"AND end_pos IN ({marks})",
        (chat_id, user_id, *wanted),
    )
    by_end = {int(r["end_pos"]): r for r in rows}
    return [
        PassageHit(r["chat_id"], int(r["start_pos"]), int(r["end_pos"]), r["text"],
                   datetime.fromisoformat(r["at"]), 0.0)
        for r in (by_end.get(p) for p in wanted) if r is not None
    ]


def passages_around(chats: ChatStore, user_id: str, chat_id: str, positions: Sequence[int]) -> list[PassageHit]:
    """The archived turns around each of ``positions``: the passage ending there and the one ending
    ``TURNS_AFTER`` turns later when it still holds the position (the same session) — two turns before, two
    after. What a memory said at that position brings into the Assistant's prompt (small-to-big), and what
    ``memlab eval memory-recall`` scores it for. Chosen on LoCoMo dev over the passage alone.

    Raises:
        InvalidInputError: bad user id or a position that is not an int >= 0.
        NotFoundError: ``chat_id`` is not one of the user's chats.
    """
    hits = chats.passages_at(user_id, chat_id, [q for p in positions for q in (p, p + TURNS_AFTER)])
    return [h for h in hits if any(h.start <= p <= h.end for p in positions)]


def _passage_rows(chats: ChatStore, user_id: str, chat_id: str | None) -> tuple[list[Any], list[Any]]:
    """The user's archived passages (of ``chat_id`` only, when given), each embedded by the chats' embedder
    (passages written by another embedder are re-embedded once, like the chat summaries); also the SQL
    parameters ``(user_id[, chat_id])``."""
    where, params = "user_id = ?", [user_id]
    if chat_id is not None:
        where, params = where + " AND chat_id = ?", [*params, chat_id]
    sql = f"SELECT id, chat_id, start_pos, end_pos, text, at, embedding, embedder FROM chat_passages WHERE {where} ORDER BY id"
    rows = chats.db.query(sql, params)
    name = chats._embedder_name()
    other = [r for r in rows if r["embedder"] != name]
    if other:  # written by another embedder: re-embedded once, like the chat summaries
        vecs = np.asarray(chats.embedder.embed([r["text"] for r in other], mode="passage"), dtype=np.float32)
        with chats.db.transaction():
            chats.db.executemany(
                "UPDATE chat_passages SET embedding = ?, embedder = ? WHERE id = ?",
                [(v.tobytes(), name, r["id"]) for r, v in zip(other, vecs, strict=True)],
            )
        rows = chats.db.query(sql, params)
    return rows, params


def history_hits(
    chats: ChatStore, user_id: str, query: str, q: NDArray[np.float32] | None, k: int, *, chat_id: str | None,
    mode: str,
) -> list[PassageHit]:
    """:func:`search_history` after validation; ``q`` is the query's embedding when the caller has it (else it
    is embedded here, only when there are passages to compare)."""
    chats._archive_stale(user_id)
    rows, params = _passage_rows(chats, user_id, chat_id)
    if not rows:
        return []
    vecs = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    if q is None:
        q = np.asarray(chats.embedder.embed([query], mode="query"), dtype=np.float32)[0]
    sims = np.einsum("id,d->i", vecs, q)  # not BLAS: see ExtractiveSummarizer
    depth = search_depth(k)
    dense = [int(i) for i in np.argsort(-sims, kind="stable")[:depth]]
    order = dense
    if mode == "hybrid":
        pos = {int(r["id"]): i for i, r in enumerate(rows)}
        found = passage_matches(chats.db, user_id, query_terms(query), chat_id=chat_id, limit=depth)
        order = hybrid_rank(dense, [pos[int(f["id"])] for f in found if int(f["id"]) in pos])
    spans = [
        frozenset((r["chat_id"], p) for p in range(int(r["start_pos"]), int(r["end_pos"]) + 1)) for r in rows
    ]
    order = drop_overlapping(order, spans)
    return [
        PassageHit(
            rows[i]["chat_id"],
            int(rows[i]["start_pos"]),
            int(rows[i]["end_pos"]),
            rows[i]["text"],
            datetime.fromisoformat(rows[i]["at"]),
            float(sims[i]),
        )
        for i in order[:k]
    ]


def passage_matches(db: Any, user_id: str, terms: Sequence[str], *, chat_id: str | None = None,
                    limit: int | None) -> list[Any]:
    """The user's archived passages matching any of ``terms`` (rows ``id``, ``chat_id``), best first: SQLite FTS5
    BM25 (memlab's tokenizer) or PostgreSQL ``ts_rank_cd`` over ``to_tsvector('simple', text)``; ``[]`` for no
    terms."""
    extra, params = ("AND p.chat_id = ? ", [chat_id]) if chat_id is not None else ("", [])
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    if db.dialect == "postgresql":
        q = websearch_query(terms)
        if q is None:
            return []
        tsv = "to_tsvector('simple', f.text)"
        return list(db.query(
            f"SELECT f.rowid AS id, p.chat_id FROM chat_passages_fts f JOIN chat_passages p ON p.id = f.rowid "
            f"WHERE {tsv} @@ websearch_to_tsquery('simple', ?) AND p.user_id = ? {extra}"
            f"ORDER BY ts_rank_cd({tsv}, websearch_to_tsquery('simple', ?)) DESC, f.rowid{cut}",
            (q, user_id, *params, q)))
    expr = terms_query(terms)
    if expr is None:
        return []
    return list(db.query(
        "SELECT f.rowid AS id, p.chat_id FROM chat_passages_fts f JOIN chat_passages p ON p.id = f.rowid "
        f"WHERE chat_passages_fts MATCH ? AND p.user_id = ? {extra}ORDER BY bm25(chat_passages_fts){cut}",
        (f'owner : "{owner_token(user_id)}" AND ({expr})', user_id, *params)))
