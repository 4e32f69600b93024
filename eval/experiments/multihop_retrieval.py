"""Can retrieval alone lift LoCoMo multi-hop evidence recall@10? Variants of the compacted memory's ranking, dev only.

    .venv/bin/python eval/experiments/multihop_retrieval.py            # ~5 min on 2 cores
    .venv/bin/python eval/experiments/multihop_retrieval.py --reranker DIR   # + ~12 min (qa_reranker.py)

Builds the ``compacted`` memory of LoCoMo's two **dev** conversations exactly as ``memlab eval memory-recall``
does (:func:`memlab.eval.memory_recall.build_memories`: summary, archived 3-turn passages, rule facts bringing the
turns around them), then ranks it for every QA item (categories 1-4) in several ways and prints evidence
recall@10 per category and the share of the conversation's turns the top-10 puts in front of the model:

- ``shipped``: dense (e5) + FTS5 BM25 fused by reciprocal rank (k=10), overlapping units moved back.
- ``prf``: pseudo-relevance feedback, a second hop: the question + the first hop's top unit is searched again
  (dense and BM25) and the four rankings are fused.
- ``mmr 0.85``: maximal marginal relevance over the fused top-60 (cosine to the query vs to units already chosen).
- ``session cap 2``: at most two units of one session in the top-10 (the rest move back).
- ``e5 + MiniLM + BM25``: a second dense ranking (the packaged MiniLM) in the fusion.
- ``+ turn keys``: every replayed turn is also a key (its own text) that brings the turns around it, two before
  and two after in its session, as a fact does.
- ``units +-2 turns``: every unit covers two more turns on each side in its session (a bigger prompt).
- ``passages bring 2 after``: an archived passage (a turn and two before it) also brings the two turns after it,
  as a fact does.
- ``named speaker x0.5``: 97% of the dev evidence turns are said by the person the question names; the units said
  by that person (a fact's turn, a passage's last turn), in fused order, join the fusion as a third ranking
  (weight 0.5). Questions naming nobody or both keep the shipped ranking.
- ``+ fact clusters``: each speaker's facts clustered by e5 cosine (average linkage, distance 0.08), every cluster
  of two or more a unit (its facts' text, the centroid vector) covering its facts' turns.
- with ``--reranker DIR`` (a cross-encoder, e.g. ``eval/experiments/qa_reranker.py``'s): the fused top 40 ordered
  by the reranker alone, and the reranker's order fused with dense and BM25 as a third ranking.

Nothing here is tuned on LoCoMo's test conversations; the shipped ranking is the first row. Last, where the
multi-hop evidence the shipped top 10 misses sits in the same fusion taken 100 deep (``_retrieve`` with k=100: its
lists are 400 deep, so its first ten differ a little from the shipped ones), in questions' worth (a question with 3
evidence turns, 2 of them missed, counts 2/3).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from memlab.chats.passages import drop_overlapping
from memlab.embedding import load_embedder
from memlab.eval.memory_recall import CATEGORIES, LOCOMO_NAME, MemoryRecallTask, _retrieve, build_memories
from memlab.extraction import RuleExtractor
from memlab.store.lexical import LexicalIndex, reciprocal_rank_fusion

K, DEPTH = 10, 40


class Conversation:
    """One dev conversation's compacted memory, embedded once, with its QA items."""

    def __init__(self, conv, task: MemoryRecallTask, minilm) -> None:
        memories, _, _ = build_memories(conv, task.chats, user_id=task.user, extractor=RuleExtractor())
        self.units = memories["compacted"]
        self.facts = memories["facts"]
        self.texts = [u.text for u in self.units]
        self.spans = [u.dia_ids for u in self.units]
        self.known = {t.dia_id for s in conv.sessions for t in s.turns}
        self.turns = {s.index: [t.dia_id for t in s.turns] for s in conv.sessions}
        self.where = {d: (session, i) for session, ids in self.turns.items() for i, d in enumerate(ids)}
        self.speaker = {t.dia_id: t.speaker for s in conv.sessions for t in s.turns}
        self.names = [conv.speaker_a, conv.speaker_b]
        # who said each unit: a fact's own turn (compacted = the units without facts, then one unit per fact), else
        # the last turn it covers (a passage is a turn and the two before it)
        n_plain = len(memories["compacted_no_facts"])
        self.said_by = [
            self.speaker[next(iter(self.facts[j - n_plain].dia_ids))]
            if j >= n_plain
            else self.speaker[max(u.dia_ids, key=self.where.__getitem__)]
            for j, u in enumerate(self.units)
        ]
        self.qas = [
            (qa.question, qa.category, frozenset(e for e in qa.evidence if e in self.known))
            for qa in conv.qa
            if qa.category in CATEGORIES
        ]
        self.qas = [x for x in self.qas if x[2]]
        self.emb = task.emb
        self.vecs = np.asarray(task.emb.embed(self.texts, mode="passage"), dtype=np.float32)
        self.fact_vecs = self.vecs[n_plain:]  # a fact's unit has the fact's own text
        self.q = np.asarray(task.emb.embed([x[0] for x in self.qas], mode="query"), dtype=np.float32)
        self.mini_vecs = np.asarray(minilm.embed(self.texts, mode="passage"), dtype=np.float32)
        self.mini_q = np.asarray(minilm.embed([x[0] for x in self.qas], mode="query"), dtype=np.float32)
        self.lex = LexicalIndex()
        self.lex.add(enumerate(self.texts))
        questions = [x[0] for x in self.qas]
        self.shipped = _retrieve(self.units, self.vecs, self.q, K, queries=questions, mode="hybrid")
        keys = [(u.text, self.widen(u.dia_ids, 2)) for u in memories["raw"]]
        self.key_vecs = np.asarray(task.emb.embed([t for t, _ in keys], mode="passage"), dtype=np.float32)
        self.key_spans = [span for _, span in keys]
        self.key_lex = LexicalIndex()
        self.key_lex.add(enumerate([*self.texts, *(t for t, _ in keys)]))

    def widen(self, span: frozenset[str], by: int) -> frozenset[str]:
        """``span`` with ``by`` more turns before its first and after its last turn, within their sessions."""
        first, last = min(span, key=self.where.__getitem__), max(span, key=self.where.__getitem__)
        (s0, i0), (s1, i1) = self.where[first], self.where[last]
        return span | frozenset(self.turns[s0][max(0, i0 - by) : i0] + self.turns[s1][i1 + 1 : i1 + 1 + by])

    def dense(self, q: np.ndarray, vecs: np.ndarray | None = None) -> list[int]:
        scores = (self.vecs if vecs is None else vecs) @ q
        return [int(i) for i in np.argsort(-scores, kind="stable")[:DEPTH]]

    def fused(self, i: int) -> list[int]:
        """Question ``i``'s dense and BM25 rankings fused by reciprocal rank (overlaps not moved)."""
        return [j for j, _ in reciprocal_rank_fusion([self.dense(self.q[i]), self.lex.search(self.qas[i][0], DEPTH)])]

    def top(self, i: int, *extra: Sequence[int], weights: Sequence[float] | None = None) -> list[int]:
        """The top ``K`` of question ``i``'s dense and BM25 rankings fused with ``extra`` rankings (each weighted by
        ``weights``, default 1), overlapping units moved back."""
        lists = [self.dense(self.q[i]), self.lex.search(self.qas[i][0], DEPTH), *extra]
        return drop_overlapping([j for j, _ in reciprocal_rank_fusion(lists, weights=weights)], self.spans)[:K]


def shipped(c: Conversation, i: int) -> list[int]:
    """What ``memlab eval memory-recall`` ranks (:func:`memlab.eval.memory_recall._retrieve`, hybrid)."""
    return c.shipped[i]


def prf(c: Conversation, i: int) -> list[int]:
    first = shipped(c, i)
    text = c.qas[i][0] + "\n" + c.texts[first[0]]
    q2 = np.asarray(c.emb.embed([text], mode="query"), dtype=np.float32)[0]
    return c.top(i, c.dense(q2), c.lex.search(text, DEPTH))


def mmr(c: Conversation, i: int, lam: float = 0.85) -> list[int]:
    candidates, chosen = c.fused(i)[:60], []
    rel = c.vecs @ c.q[i]
    while candidates and len(chosen) < K:
        best = max(
            candidates,
            key=lambda j: (
                lam * rel[j] - (1 - lam) * max((c.vecs[j] @ c.vecs[s] for s in chosen), default=0.0)
            ),
        )
        chosen.append(best)
        candidates.remove(best)
    return chosen


def session_cap(c: Conversation, i: int, cap: int = 2) -> list[int]:
    count: dict[int, int] = defaultdict(int)
    kept, later = [], []
    for j in drop_overlapping(c.fused(i), c.spans):
        sessions = {c.where[d][0] for d in c.spans[j]}
        if any(count[s] >= cap for s in sessions):
            later.append(j)
            continue
        kept.append(j)
        for s in sessions:
            count[s] += 1
    return (kept + later)[:K]


def two_dense(c: Conversation, i: int) -> list[int]:
    return c.top(i, c.dense(c.mini_q[i], c.mini_vecs))


def turn_keys(c: Conversation, i: int) -> list[frozenset[str]]:
    spans = [*c.spans, *c.key_spans]
    dense = c.dense(c.q[i], np.vstack([c.vecs, c.key_vecs]))
    fused = [j for j, _ in reciprocal_rank_fusion([dense, c.key_lex.search(c.qas[i][0], DEPTH)])]
    return [spans[j] for j in drop_overlapping(fused, spans)[:K]]


def named_speaker(c: Conversation, i: int, weight: float = 0.5) -> list[int]:
    who = named(c, c.qas[i][0])
    if len(who) != 1:
        return shipped(c, i)
    theirs = [j for j in c.fused(i) if c.said_by[j] == who[0]]
    return c.top(i, theirs, weights=[1, 1, weight])


def passages_bring_after(c: Conversation, i: int) -> list[frozenset[str]]:
    out = []
    for j in shipped(c, i):
        span = c.spans[j]
        if c.units[j].kind == "passage":
            session, last = c.where[max(span, key=c.where.__getitem__)]
            span = span | frozenset(c.turns[session][last + 1 : last + 3])
        out.append(span)
    return out


class Clustered:
    """A conversation's compacted units plus one unit per cluster of a speaker's facts (module docstring)."""

    def __init__(self, c: Conversation, distance: float = 0.08) -> None:
        from sklearn.cluster import AgglomerativeClustering

        self.spans, vecs, texts = list(c.spans), [c.vecs], list(c.texts)
        for name in c.names:
            mine = [j for j, f in enumerate(c.facts) if c.speaker[next(iter(f.dia_ids))] == name]
            if len(mine) < 2:
                continue
            labels = AgglomerativeClustering(
                n_clusters=None, distance_threshold=distance, metric="cosine", linkage="average"
            ).fit_predict(c.fact_vecs[mine])
            groups: dict[int, list[int]] = defaultdict(list)
            for j, label in zip(mine, labels, strict=True):
                groups[int(label)].append(j)
            for group in groups.values():
                if len(group) < 2:
                    continue
                texts.append(" ".join(c.facts[j].text for j in group))
                self.spans.append(frozenset().union(*(c.facts[j].dia_ids for j in group)))
                centroid = c.fact_vecs[group].mean(axis=0)
                vecs.append((centroid / np.linalg.norm(centroid))[None])
        self.vecs = np.vstack(vecs)
        self.lex = LexicalIndex()
        self.lex.add(enumerate(texts))


def with_clusters(c: Conversation, i: int) -> list[frozenset[str]]:
    if not hasattr(c, "clustered"):
        c.clustered = Clustered(c)
    k = c.clustered
    dense = [int(j) for j in np.argsort(-(k.vecs @ c.q[i]), kind="stable")[:DEPTH]]
    fused = [j for j, _ in reciprocal_rank_fusion([dense, k.lex.search(c.qas[i][0], DEPTH)])]
    return [k.spans[j] for j in drop_overlapping(fused, k.spans)[:K]]


class Reranked:
    """The fused top 40 of every question ordered by a cross-encoder (scores computed once per conversation)."""

    _DATE = re.compile(r"^\[[^\]]*\]\s*")

    def __init__(self, folder: str) -> None:
        from sentence_transformers.cross_encoder import CrossEncoder

        self.model = CrossEncoder(folder, max_length=256)
        self.orders: dict[tuple[int, int], list[int]] = {}

    def order(self, c: Conversation, i: int) -> list[int]:
        key = (id(c), i)
        if key not in self.orders:
            candidates = c.fused(i)[:DEPTH]
            pairs = [(c.qas[i][0], self._DATE.sub("", c.texts[j])) for j in candidates]
            scores = self.model.predict(pairs, batch_size=64, show_progress_bar=False)
            self.orders[key] = [candidates[j] for j in np.argsort(-scores, kind="stable")]
        return self.orders[key]

    def alone(self, c: Conversation, i: int) -> list[int]:
        return drop_overlapping(self.order(c, i), c.spans)[:K]

    def fused(self, c: Conversation, i: int) -> list[int]:
        return c.top(i, self.order(c, i))


Ranking = Callable[[Conversation, int], list[int]]


def report(
    name: str,
    convs: Sequence[Conversation],
    rank: Ranking,
    widen: int = 0,
    *,
    spans_of: Callable[[Conversation, int], list[frozenset[str]]] | None = None,
) -> str:
    recall: dict[int, list[float]] = defaultdict(list)
    turns: list[float] = []
    for c in convs:
        spans = [c.widen(s, widen) for s in c.spans] if widen else c.spans
        for i, (_, category, gold) in enumerate(c.qas):
            top = spans_of(c, i) if spans_of else [spans[j] for j in rank(c, i)]
            got = frozenset().union(*top)
            recall[category].append(len(gold & got) / len(gold))
            turns.append(len(got) / len(c.known))
    every = [r for rs in recall.values() for r in rs]
    cells = [f"{np.mean(recall[k]):.3f}" for k in CATEGORIES]
    return f"| {name} | " + " | ".join(cells) + f" | {np.mean(every):.3f} | {100 * np.mean(turns):.1f}% |"


BANDS = (("1-10", 10), ("11-20", 20), ("21-40", 40), ("41-100", 100))


def named(c: Conversation, question: str) -> list[str]:
    """The speakers of the conversation whose first name is in ``question``."""
    return [n for n in c.names if re.search(rf"\b{re.escape(n.split()[0])}\b", question)]


def named_share(convs: Sequence[Conversation]) -> str:
    """How much evidence is said by the one speaker its question names (the premise of ``named speaker``)."""
    theirs = total = 0
    for c in convs:
        for question, _, gold in c.qas:
            who = named(c, question)
            if len(who) == 1:
                theirs += sum(c.speaker[d] == who[0] for d in gold)
                total += len(gold)
    return f"evidence turns said by the one speaker the question names: {theirs} of {total} ({theirs / total:.0%})"


def missed_by_rank(convs: Sequence[Conversation]) -> str:
    """Where the multi-hop evidence missing from the shipped top 10 is in the same fusion taken 100 deep."""
    bands = {"1-10": 0.0, "11-20": 0.0, "21-40": 0.0, "41-100": 0.0, "beyond 100": 0.0}
    n = 0
    for c in convs:
        deep = _retrieve(c.units, c.vecs, c.q, 100, queries=[x[0] for x in c.qas], mode="hybrid")
        for i, (_, category, gold) in enumerate(c.qas):
            if category != 1:
                continue
            n += 1
            got = frozenset().union(*(c.spans[j] for j in c.shipped[i]))
            for turn in gold - got:
                rank = next((r for r, j in enumerate(deep[i], 1) if turn in c.spans[j]), None)
                band = next((b for b, top in BANDS if rank is not None and rank <= top), "beyond 100")
                bands[band] += 1 / len(gold)
    cells = ", ".join(f"{band}: {mass:.1f}" for band, mass in bands.items())
    return f"multi-hop evidence missed by the shipped top 10, by its rank 100 deep ({n} questions): {cells}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reranker", help="a cross-encoder folder: adds its two rows")
    args = parser.parse_args()
    task = MemoryRecallTask(split="dev")
    minilm = load_embedder("minilm")
    convs = [Conversation(conv, task, minilm) for conv in task.samples(None, 0)]
    n = defaultdict(int)
    for c in convs:
        for _, category, _ in c.qas:
            n[category] += 1
    print(
        "| ranking | "
        + " | ".join(f"{LOCOMO_NAME[k]} ({n[k]})" for k in CATEGORIES)
        + " | all | turns in top-10 |"
    )
    print("|---|" + "---|" * (len(CATEGORIES) + 2))
    print(report("shipped (e5 + BM25, RRF)", convs, shipped))
    print(report("prf (second hop)", convs, prf))
    print(report("mmr 0.85", convs, mmr))
    print(report("session cap 2", convs, session_cap))
    print(report("e5 + MiniLM + BM25", convs, two_dense))
    print(report("+ turn keys", convs, shipped, spans_of=turn_keys))
    print(report("units +-2 turns", convs, shipped, widen=2))
    print(report("passages bring 2 after", convs, shipped, spans_of=passages_bring_after))
    print(report("named speaker x0.5", convs, named_speaker))
    print(report("+ fact clusters", convs, shipped, spans_of=with_clusters))
    print()
    print(missed_by_rank(convs))
    print(named_share(convs))
    if args.reranker:
        print()
        reranker = Reranked(args.reranker)
        print(report("reranker alone (fused top 40)", convs, reranker.alone))
        print(report("e5 + BM25 + reranker", convs, reranker.fused))


if __name__ == "__main__":
    main()
