"""Lexical retrieval (SQLite FTS5, BM25) and reciprocal rank fusion with dense retrieval.

Dense search finds paraphrases but misses rare exact words (names, places, dates: "Caroline", "Tokyo",
"2023"); BM25 finds exactly those. :func:`reciprocal_rank_fusion` merges the two rankings by rank only (no score
scales to reconcile)::

    rrf(d) = sum over rankings r of  weight_r / (k + rank_r(d))          (rank from 1)

The ranking maths of BM25 is SQLite's own (``bm25()`` of FTS5); nothing here scores text.

Text goes into FTS5 through :func:`lexical_text`: Chinese, Japanese and Korean characters are split apart (FTS5's
``unicode61`` tokenizer would keep a whole run of Han characters as one token), and queries are built by
:func:`fts_query`: every word quoted (no FTS5 syntax from user text ever reaches ``MATCH``), joined by ``OR``, CJK
as adjacent-character phrases (bigrams).

``RRF_K = 10`` was chosen on LoCoMo's dev conversations (the first two; ``k`` 10 vs the customary 60: evidence
recall@10 of 3-turn passages 0.852 vs 0.838); nothing was tuned on the test conversations.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from memlab.errors import BackendError

__all__ = [
    "FTS_TOKENIZER",
    "RRF_K",
    "LexicalIndex",
    "fts_query",
    "fuse_with_cosines",
    "hybrid_rank",
    "lexical_text",
    "owner_token",
    "query_terms",
    "search_depth",
    "websearch_query",
    "reciprocal_rank_fusion",
    "terms_query",
]

#: FTS5 tokenizer of every memlab full-text table (Porter stemming over unicode61, accents folded).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The ``k`` of reciprocal rank fusion (module docstring).
RRF_K = 10

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words that only add noise to an OR query (English and Italian); content words are all kept.
_STOP = frozenset(
    "a an the of to in on at for and or is are was were be been being do did does done what when where who whom "
    "how why which with her his she he they their them it its that this these those as by from about you your i "
    "my me we our us have has had will would can could should there here than then so not no yes "
    "il lo la i gli le un uno una di da del della dello dei degli delle al allo alla ai agli alle nel nella nei "
    "nelle sul sulla sui e ed o è sono era erano che chi cosa come quando dove perché quale quali con per tra fra "
    "mi ti si ci vi mio mia tuo tua suo sua non ho hai ha abbiamo avete hanno".split()
)
_MAX_QUERY_TERMS = 64


def lexical_text(text: str) -> str:
    """``text`` as FTS5 should index it: CJK characters separated by spaces, everything else unchanged.

    Example:
        >>> lexical_text("我住在北京 ok")
        '我 住 在 北 京  ok'
    """
    return _CJK_RUN.sub(lambda m: " ".join(m.group(0)) + " ", text)


def owner_token(user_id: str) -> str:
    """The FTS5 token standing for ``user_id`` in an ``owner`` column: a query reads only that user's postings."""
    return "u" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:24]


def query_terms(text: str) -> list[str]:
    """The search terms of free text: CJK runs as adjacent-character pairs (``"东 京"``), then the words
    (casefolded, stop words dropped unless nothing else is left), each once, at most 64.

    Example:
        >>> query_terms("Quando è partita per Tokyo? 东京")
        ['东 京', 'partita', 'tokyo']
    """
    terms: list[str] = []
    for run in _CJK_RUN.findall(text):
        chars = list(run)
        terms += [f"{a} {b}" for a, b in zip(chars, chars[1:], strict=False)] if len(chars) > 1 else chars
    words = [w.casefold() for w in _WORD.findall(_CJK.sub(" ", text))]
    content = [w for w in words if w not in _STOP]
    terms += content or words
    return list(dict.fromkeys(terms))[:_MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """An FTS5 ``MATCH`` expression for free text: its words quoted and ORed; ``None`` when no word is left.

    Stop words are dropped (unless nothing else is left), repeated words count once, CJK runs become phrases of
    adjacent characters. At most 64 terms.

    Example:
        >>> fts_query("When did Caroline go to the LGBTQ support group?")
        '"caroline" OR "go" OR "lgbtq" OR "support" OR "group"'
        >>> fts_query("东京旅行")
        '"东 京" OR "京 旅" OR "旅 行"'
        >>> fts_query("?!") is None
        True
    """
    return terms_query(query_terms(text))


def terms_query(terms: Sequence[str]) -> str | None:
    """An FTS5 ``MATCH`` expression for terms already chosen (:func:`query_terms`' output or a subset of it): each
    quoted, joined by ``OR``; ``None`` for no terms.

    Example:
        >>> terms_query(["tokyo", "东 京"])
        '"tokyo" OR "东 京"'
    """
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def websearch_query(terms: Sequence[str]) -> str | None:
    """The PostgreSQL ``websearch_to_tsquery('simple', ...)`` text of terms already chosen: each quoted (a CJK pair
    is a phrase of two characters), joined by ``or``; ``None`` for no terms.

    Example:
        >>> websearch_query(["tokyo", "东 京"])
        '"tokyo" or "东 京"'
    """
    if not terms:
        return None
    return " or ".join('"' + t.replace('"', " ") + '"' for t in terms)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """Fuse rankings of ids (best first) by reciprocal rank: ``(id, fused score)``, best first.

    Ties keep the order in which ids were first seen (the first ranking wins a tie).

    Example:
        >>> [i for i, _ in reciprocal_rank_fusion([[1, 2, 3], [3, 1]])]
        [1, 3, 2]
    """
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"reciprocal_rank_fusion got {len(weights)} weights for {len(rankings)} rankings.")
    scores: dict[int, float] = {}
    for r, ranking in enumerate(rankings):
        w = 1.0 if weights is None else float(weights[r])
        for pos, item in enumerate(dict.fromkeys(ranking)):
            scores[item] = scores.get(item, 0.0) + w / (k + pos + 1)
    return sorted(scores.items(), key=lambda kv: -kv[1])


def search_depth(k: int) -> int:
    """How deep each ranking of a hybrid search goes for ``k`` results: ``max(4k, 40)`` (every hybrid caller's).

    Example:
        >>> search_depth(5), search_depth(20)
        (40, 80)
    """
    return max(4 * int(k), 40)


def hybrid_rank(dense: Sequence[int], lexical: Sequence[int]) -> list[int]:
    """Hybrid search's ranking, the one every caller uses (memories, chat passages, the recall eval): a dense
    ranking and a lexical one (ids or positions, best first) fused by reciprocal rank (``k`` = :data:`RRF_K`).

    Example:
        >>> hybrid_rank([1, 2, 3], [3, 1])
        [1, 3, 2]
    """
    return [i for i, _ in reciprocal_rank_fusion([dense, lexical])]


def fuse_with_cosines(
    dense: Sequence[tuple[int, float]],
    lexical: Sequence[int],
    query: NDArray[np.float32],
    vectors: Callable[[list[int]], NDArray[np.float32]],
    *,
    k: int,
    min_score: float | None = None,
) -> list[tuple[int, float]]:
    """Hybrid search's last step, shared by the stores: fuse a dense ranking (``(id, cosine)``, best first) and a
    lexical one (ids) by reciprocal rank, keep each hit's cosine to ``query`` (lexical-only hits get it from
    ``vectors(ids)``, one call for all of them), drop cosines below ``min_score``, cut to ``k``.

    Example:
        >>> vecs = {3: np.array([0.0, 1.0], dtype=np.float32)}
        >>> fuse_with_cosines([(1, 0.9), (2, 0.5)], [3, 2], np.array([1.0, 0.0], dtype=np.float32),
        ...                   lambda ids: np.stack([vecs[i] for i in ids]), k=2)
        [(2, 0.5), (1, 0.9)]
    """
    fused = hybrid_rank([i for i, _ in dense], lexical)
    cos = dict(dense)
    if min_score is None:
        fused = fused[:k]
    extra = [i for i in fused if i not in cos]
    if extra:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        for i, v in zip(extra, np.asarray(vectors(extra), dtype=np.float32), strict=True):
            cos[i] = float(v @ q)
    if min_score is not None:
        fused = [i for i in fused if cos[i] >= min_score]
    return [(i, cos[i]) for i in fused[:k]]


class LexicalIndex:
    """An in-memory BM25 index of short texts under integer ids (SQLite FTS5), for evaluation and small sets.

    The stores keep their full-text tables in their own database (``memories_fts``, ``chat_passages_fts``);
    this class serves units that live nowhere else (e.g. ``memlab eval memory-recall``'s memory units).

    Example:
        >>> idx = LexicalIndex()
        >>> idx.add([(1, "Caroline went to a support group"), (2, "Melanie paints a sunset")])
        >>> idx.search("When did Caroline go to the support group?", 5)
        [1]
    """

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE units USING fts5(text, tokenize='{FTS_TOKENIZER}')")

    def add(self, items: Iterable[tuple[int, str]]) -> None:
        """Index ``(id, text)`` pairs."""
        self._db.executemany(
            "INSERT INTO units(rowid, text) VALUES (?, ?)", [(int(i), lexical_text(t)) for i, t in items]
        )

    def search(self, query: str, k: int) -> list[int]:
        """Ids of the ``k`` best BM25 matches of ``query``, best first (``[]`` when no word matches)."""
        return self.search_terms(query_terms(query), k)

    def search_terms(self, terms: Sequence[str], k: int) -> list[int]:
        """Ids of the ``k`` best BM25 matches of ``terms`` (:func:`query_terms`' form), best first."""
        expr = terms_query(terms)
        if expr is None:
            return []
        try:
            rows = self._db.execute(
                "SELECT rowid FROM units WHERE units MATCH ? ORDER BY bm25(units) LIMIT ?", (expr, int(k))
            ).fetchall()
        except sqlite3.Error as exc:  # pragma: no cover - fts_query quotes every term
            raise BackendError(f"Full-text search failed for {expr[:80]!r}: {exc}") from exc
        return [int(r[0]) for r in rows]
