"""The bounds on the judge work of one check: the cap (most similar pairs first) and the early exit.

Vectors are set by hand (``MemoryStore.add(..., embedding=...)``) so every cosine to the checked memory is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlab.config import Settings
from memlab.errors import InvalidInputError
from memlab.integrity import SemanticIntegrityChecker
from memlab.integrity.checker import _Candidate, _Pair
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge

DIM = 32
#: statements with no entity or pattern fact: every pair between them is left to the judge
OLD_TEXTS = [
    "We watched a film together at the cinema",
    "I went for a walk along the river",
    "My neighbour plays the piano in the evening",
    "The garden needs some work this spring",
    "I repainted the kitchen last weekend",
    "The train was crowded this morning",
]
NEW_TEXT = "The weather was nice during the trip"


def _vec(cos: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine with the first basis vector is ``cos`` (the rest on basis vector ``axis``)."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0], v[axis] = cos, np.sqrt(1.0 - cos * cos)
    return v


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=DIM))
    yield s
    s.close()


def _fill(store: MemoryStore, cosines: list[float]) -> tuple[list[Any], Any]:
    olds = [store.add("u1", t, embedding=_vec(c, i + 1)) for i, (t, c) in enumerate(zip(OLD_TEXTS, cosines,
                                                                                          strict=False))]
    new = store.add("u1", NEW_TEXT, embedding=_vec(1.0, 31))
    return olds, new


def test_all_pairs_reach_the_judge_without_a_cap(store: MemoryStore) -> None:
    olds, new = _fill(store, [0.9, 0.5, 0.7, 0.3, 0.8, 0.6])
    judge = ScriptedJudge()
    res = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, max_judged_pairs=None).check(new)
    assert res.n_candidates == len(olds) and res.n_judged == len(olds) == len(judge.calls)


def test_the_cap_keeps_the_most_similar_pairs(store: MemoryStore) -> None:
    olds, new = _fill(store, [0.9, 0.5, 0.7, 0.3, 0.8, 0.6])
    judge = ScriptedJudge()
    res = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, max_judged_pairs=3).check(new)
    assert res.n_candidates == 6 and res.n_judged == 3
    # cosines 0.9, 0.8, 0.7: OLD_TEXTS[0], [4], [2]
    assert {a for a, _ in judge.calls} == {OLD_TEXTS[0], OLD_TEXTS[4], OLD_TEXTS[2]}
    assert all(b == NEW_TEXT for _, b in judge.calls)


def test_a_contradiction_beyond_the_cap_is_not_reported(store: MemoryStore) -> None:
    olds, new = _fill(store, [0.9, 0.2, 0.8])
    judge = ScriptedJudge({(OLD_TEXTS[1], NEW_TEXT): 0.99})  # only the least similar pair contradicts
    capped = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, max_judged_pairs=2,
                                      judge_needs_cue=False).check(new)
    assert not capped.has_contradiction and capped.n_judged == 2
    full = SemanticIntegrityChecker(store, ScriptedJudge(dict(judge.script)), similarity_threshold=-1.0, judge_needs_cue=False,
                                    max_judged_pairs=3).check(new)
    assert full.has_contradiction and full.contradictions[0].other_id == olds[1].id


def test_a_never_statement_gets_the_wider_cap(store: MemoryStore) -> None:
    """"I've never ..." contradicts any earlier event of its kind, which may be any of its neighbours: its pairs get
    ``absolute_max_judged_pairs``; another statement keeps ``max_judged_pairs``."""
    olds = [store.add("u1", t, embedding=_vec(c, i + 1))
            for i, (t, c) in enumerate(zip(OLD_TEXTS, [0.9, 0.8, 0.7, 0.6, 0.5], strict=False))]
    never = store.add("u1", "I've never been on a trip in my life", embedding=_vec(1.0, 31))
    judge = ScriptedJudge({(OLD_TEXTS[4], never.text): 0.99})  # the least similar pair is the contradiction
    checker = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, max_judged_pairs=2,
                                       absolute_max_judged_pairs=5, judge_needs_cue=False)
    res = checker.check(never)
    assert res.n_judged == 5 and res.has_contradiction and res.contradictions[0].other_id == olds[4].id
    assert checker.check(store.add("u1", NEW_TEXT, embedding=_vec(0.0, 30))).n_judged == 2
    # unset, the statement keeps the common cap and the far pair is not judged
    narrow = SemanticIntegrityChecker(store, ScriptedJudge(dict(judge.script)), similarity_threshold=-1.0,
                                      max_judged_pairs=2, absolute_max_judged_pairs=None,
                                      judge_needs_cue=False).check(never)
    assert narrow.n_judged == 2 and not narrow.has_contradiction


def test_cap_order_computes_missing_cosines_and_ranks_links_first(store: MemoryStore) -> None:
    olds, new = _fill(store, [0.2, 0.9, 0.5, 0.7])
    checker = SemanticIntegrityChecker(store, ScriptedJudge())
    pairs = [_Pair(new, _Candidate(m, None, {"attribute"})) for m in olds]  # no cosine known yet
    assert [p.old.item.id for p in checker._judge_order(new, pairs)] == [olds[i].id for i in (1, 3, 2, 0)]
    # a version link ranks first, then a same-key memory, whatever their cosines
    pairs[0].old.sources = {"version"}
    pairs[2].old.sources = {"same_key"}
    assert [p.old.item.id for p in checker._judge_order(new, pairs)] == [olds[i].id for i in (0, 2, 1, 3)]
    # a known cosine is used as is (not recomputed); ties go to the newest memory
    pairs = [_Pair(new, _Candidate(m, 0.5, {"faiss"})) for m in olds]
    assert [p.old.item.id for p in checker._judge_order(new, pairs)] == [m.id for m in reversed(olds)]


def test_early_exit_after_a_cheap_contradiction(store: MemoryStore) -> None:
    born = store.add("u1", "Sono nato il 12 luglio 1990", embedding=_vec(0.9, 1))
    store.add("u1", OLD_TEXTS[0], embedding=_vec(0.8, 2))
    new = store.add("u1", "Il mio compleanno è il 15 agosto", embedding=_vec(1.0, 31))
    judge = ScriptedJudge(default=0.99)
    res = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0).check(new)
    assert res.has_contradiction and res.n_judged == 0 and judge.calls == []
    assert [c.other_id for c in res.contradictions] == [born.id]
    judge = ScriptedJudge(default=0.99)
    res = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, judge_after_hit=True,
                                   judge_needs_cue=False).check(new)
    assert res.n_judged == 1 and judge.calls == [(OLD_TEXTS[0], new.text)]
    assert {c.decided_by for c in res.contradictions} == {"patterns", "judge"}


def test_no_early_exit_below_the_confidence_threshold(store: MemoryStore) -> None:
    store.add("u1", "Sono nato il 12 luglio 1990", embedding=_vec(0.9, 1))
    store.add("u1", OLD_TEXTS[0], embedding=_vec(0.8, 2))
    new = store.add("u1", "Il mio compleanno è il 15 agosto", embedding=_vec(1.0, 31))
    judge = ScriptedJudge()
    # the date rule's confidence is below a threshold of 1.0: it is no hit, so the other pair is judged
    res = SemanticIntegrityChecker(store, judge, similarity_threshold=-1.0, confidence_threshold=1.0).check(new)
    assert not res.has_contradiction and res.n_judged == 1


def test_check_all_is_not_capped(store: MemoryStore) -> None:
    _fill(store, [0.9, 0.5, 0.7, 0.3])
    judge = ScriptedJudge()
    res = SemanticIntegrityChecker(store, judge, max_judged_pairs=1).check_all("u1", progress=False)
    assert res[-1].n_judged == 4  # the last memory against the 4 earlier ones, all judged
    assert len(judge.calls) == sum(r.n_judged for r in res) == 4 * 5 // 2


def test_exhaustive_check_is_not_capped(store: MemoryStore) -> None:
    _, new = _fill(store, [0.9, 0.5, 0.7, 0.3])
    res = SemanticIntegrityChecker(store, ScriptedJudge(), exhaustive=True, max_judged_pairs=1).check(new)
    assert res.n_judged == 4


def test_settings_carry_the_bounds(store: MemoryStore) -> None:
    s = Settings(integrity_max_judged_pairs=3, integrity_judge_after_hit=True)
    c = SemanticIntegrityChecker(store, ScriptedJudge(), s)
    assert (c.config.max_judged_pairs, c.config.judge_after_hit) == (3, True)
    assert SemanticIntegrityChecker(store, ScriptedJudge(), Settings(integrity_max_judged_pairs=None)) \
        .config.max_judged_pairs is None
    with pytest.raises(InvalidInputError):
        SemanticIntegrityChecker(store, ScriptedJudge(), max_judged_pairs=0)


def test_candidate_sub_stages_are_timed(store: MemoryStore) -> None:
    _, new = _fill(store, [0.9, 0.5])
    res = SemanticIntegrityChecker(store, ScriptedJudge()).check(new)
    subs = {k: v for k, v in res.stage_ms.items() if k.startswith("candidates.")}
    assert set(subs) == {"candidates.search", "candidates.attribute_sql", "candidates.attribute_facts",
                         "candidates.other"}
    assert all(v >= 0 for v in subs.values())
    assert sum(subs.values()) <= res.stage_ms["candidates"] + 1e-6


def test_warm_up_runs_every_language_through_the_judge(store: MemoryStore) -> None:
    judge = ScriptedJudge()
    SemanticIntegrityChecker(store, judge).warm_up()
    assert len(judge.calls) == 3
    none = ScriptedJudge()
    SemanticIntegrityChecker(store, none, levels=("entities", "patterns")).warm_up()
    assert none.calls == []
