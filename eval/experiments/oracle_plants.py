"""How many planted contradictions could a perfect judge catch? The ceiling the judge cannot lift.

``memlab eval alarms`` catches a plant when a HIGH or MEDIUM contradiction notification pairs a memory made from
the planted line with one made from the turn it contradicts. Three stages stand before the judge: the two lines
must leave memories (extraction), the new memory must be compared with the old one (candidate pairing: cosine,
attribute and rare-word candidates, at most ``max_judged_pairs`` sent to the judge), and the verdict must pass the
urgency rule. This script replaces the judge with an oracle and replays the conversations twice:

1. with a judge that finds nothing (the structured layers still run), to learn which memory texts each planted
   line and each contradicted turn leave (extraction does not depend on the judge);
2. with the oracle: probability 1.0 for a pair (old, new) whose texts come from a plant's ``contradicts`` turn and
   from that planted line (either order), 0.0 for every other pair. It never raises a false alarm of its own, so
   only the plants' figures of this run mean anything.

What the oracle run catches is the ceiling of planted recall with the shipped extraction and candidate pairing;
what it misses is lost before any judge. Use it on the dev plants (the test plants are not for choosing anything).

    python eval/experiments/oracle_plants.py --split dev --plants datasets/locomo_plants/dev.jsonl \
        [--max-judged-pairs N|none] [--similarity-threshold T] [--max-similar N] [--rank-shared-stems]
        [--max-plain-facts N] [--exhaustive] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from memlab.cli.integrity_cmd import _max_pairs
from memlab.records import Label, Verdict


class OracleJudge:
    """Contradiction (1.0) exactly for the (old, new) texts of a planted contradiction, neutral (0.0) otherwise."""

    name = "oracle"

    def __init__(self, pairs: set[tuple[str, str]]) -> None:
        self.pairs = pairs
        self.calls = 0
        self.hits = 0

    def judge(self, pairs: Any, /) -> list[Verdict]:
        out = []
        for a, b in pairs:
            self.calls += 1
            hit = (a, b) in self.pairs or (b, a) in self.pairs
            self.hits += hit
            out.append(Verdict(Label.CONTRADICTION if hit else Label.NEUTRAL, 1.0 if hit else 0.0, self.name))
        return out

    def get_params(self) -> dict[str, Any]:
        return {"pairs": len(self.pairs)}


def memory_texts(split: str, plants: list[Any], data_dir: str | None, emb: Any) -> dict[tuple[int, str], list[str]]:
    """(conversation, dia_id or ``plant:<id>``) -> texts of the memories made from it (a judge that finds nothing)."""
    from memlab.datasets import load_locomo
    from memlab.datasets.locomo import locomo_split
    from memlab.eval.alarms import replay_conversation

    out: dict[tuple[int, str], list[str]] = {}
    by_conv: dict[int, list[Any]] = defaultdict(list)
    for p in plants:
        by_conv[p.conv].append(p)
    for i, conv in locomo_split(list(enumerate(load_locomo(data_dir=data_dir))), split):
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "replay.db")
            rl = replay_conversation(conv, i, by_conv.get(i, []), embedder=emb, judge=OracleJudge(set()), path=db)
            con = sqlite3.connect(db)
            text_of = dict(con.execute("SELECT id, text FROM memories").fetchall())
            con.close()
        for ref, ids in rl.memories.items():
            out[(i, ref)] = [text_of[m] for m in ids if m in text_of]
        print(f"conversation {i}: {rl.n_messages} messages, {len(rl.memories)} lines left memories", file=sys.stderr)
    return out


def rank_cap_by_shared_stems() -> None:
    """Experiment (not the product's order): rank the pairs the judge cap keeps by the weight of the new memory's
    rarest content-word stems (:func:`memlab.integrity.patterns.content_stems`) found in the old memory, after the
    version link, same key and absolute sources and before the cosine."""
    from memlab.integrity.checker import SemanticIntegrityChecker
    from memlab.integrity.patterns import content_stems

    shipped = SemanticIntegrityChecker._judge_order

    def judge_order(self: Any, item: Any, pairs: Any) -> list[Any]:
        by_cos = shipped(self, item, pairs)  # the shipped order, kept as the tie-break
        pos = {id(p): i for i, p in enumerate(by_cos)}
        stems = content_stems(item.text)

        def rank(p: Any) -> tuple[int, int, int, float, int]:
            src, old = p.old.sources, p.old.item.text.casefold()
            shared = sum(w for s, w in stems if s in old)
            return (0 if "version" in src else 1, 0 if "same_key" in src else 1, 0 if "absolute" in src else 1,
                    -shared, pos[id(p)])

        return sorted(pairs, key=rank)

    SemanticIntegrityChecker._judge_order = judge_order  # type: ignore[method-assign]


def keep_plain_facts(n: int) -> None:
    """Experiment: every :class:`~memlab.extraction.RuleExtractor` made without ``max_plain_facts`` keeps ``n``."""
    from memlab.extraction import RuleExtractor

    shipped = RuleExtractor.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_plain_facts", n)
        shipped(self, *args, **kwargs)

    RuleExtractor.__init__ = init  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    ap.add_argument("--plants", required=True)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--max-judged-pairs", type=_max_pairs, default=argparse.SUPPRESS, metavar="N|none",
                    help="most pairs of one memory sent to the judge (default: the settings', 4)")
    ap.add_argument("--similarity-threshold", type=float, default=None,
                    help="candidate cosine threshold (default: the embedder's calibrated one; -1: every FAISS neighbour)")
    ap.add_argument("--max-similar", type=int, default=None, help="FAISS neighbours looked at (default: the settings')")
    ap.add_argument("--rank-shared-stems", action="store_true",
                    help="experiment: the judge cap keeps the candidates sharing most of the new memory's rarest "
                         "content-word stems first (then cosine), instead of cosine first")
    ap.add_argument("--max-plain-facts", type=int, default=None,
                    help="experiment: RuleExtractor keeps this many plain facts per message (shipped: 1)")
    ap.add_argument("--exhaustive", action="store_true",
                    help="compare each memory with every earlier one (no candidate pairing): the extraction-only ceiling")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from memlab.config import Settings
    from memlab.embedding import resolve_embedder
    from memlab.eval.alarms import AlarmsTask, load_plants
    from memlab.eval.task import run_task

    if args.max_plain_facts is not None:
        keep_plain_facts(args.max_plain_facts)
    plants = [p for p in load_plants(args.plants) if p.label == "contradiction"]
    settings = Settings(llm_backend="none")
    emb = resolve_embedder(settings.embedder, settings=settings)  # one embedder for both passes
    texts = memory_texts(args.split, plants, args.data_dir, emb)
    pairs = {(o, n) for p in plants for o in texts.get((p.conv, p.contradicts), [])
             for n in texts.get((p.conv, f"plant:{p.id}"), [])}
    both = sum(bool(texts.get((p.conv, p.contradicts))) and bool(texts.get((p.conv, f"plant:{p.id}"))) for p in plants)
    oracle = OracleJudge(pairs)
    overrides: dict[str, Any] = {}
    if hasattr(args, "max_judged_pairs"):
        overrides["integrity_max_judged_pairs"] = args.max_judged_pairs
    if args.similarity_threshold is not None:
        overrides["similarity_threshold"] = args.similarity_threshold
    if args.max_similar is not None:
        overrides["integrity_max_similar_memories"] = args.max_similar
    if args.exhaustive:
        overrides["integrity_check_exhaustive"] = True
    if args.rank_shared_stems:
        rank_cap_by_shared_stems()
    task = AlarmsTask(split=args.split, plants=args.plants, data_dir=args.data_dir, embedder=emb, judge=oracle,
                      settings=overrides)
    run = run_task(task, out_dir=args.out or tempfile.mkdtemp(prefix="oracle-plants-"), progress=True)
    print(json.dumps({"plants": len(plants), "both_stored_pass1": both, "oracle_pairs": len(pairs),
                      "judge_calls": oracle.calls, "oracle_hits": oracle.hits,
                      "metrics": run.metrics.get("plants", run.metrics)}, indent=1, default=str))


if __name__ == "__main__":
    main()
