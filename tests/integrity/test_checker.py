"""SemanticIntegrityChecker logic: candidates, levels, purity, isolation, judge batching, settings, errors.

Unit tests of logic use FakeEmbedder / ScriptedJudge; quality is measured by ``memlab eval integrity``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlab.config import Settings
from memlab.errors import InvalidInputError, JudgeError, NotFoundError
from memlab.integrity import SemanticIntegrityChecker
from memlab.records import ConflictType, Label, Urgency, Verdict
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32, bag_of_words=True))
    yield s
    s.close()


def _snapshot(store: MemoryStore) -> tuple[Any, ...]:
    rows = store.db.query("SELECT * FROM memories ORDER BY id")
    events = store.db.query("SELECT COUNT(*) AS n FROM memory_events")[0]["n"]
    return tuple(tuple(r) for r in rows), events


def test_seed_scenario_it(store: MemoryStore) -> None:
    a = store.add("u1", "L'utente è nato il 12 luglio 1990")
    b = store.add("u1", "Il compleanno dell'utente è il 15 agosto")
    res = SemanticIntegrityChecker(store, ScriptedJudge()).check(b)
    assert res.has_contradiction and res.item_id == b.id
    c = res.contradictions[0]
    assert (c.memory_id, c.other_id, c.type, c.urgency, c.decided_by) == (b.id, a.id, ConflictType.DATE, Urgency.HIGH,
                                                                          "patterns")
    assert c.confidence >= 0.8 and res.confidence == c.confidence
    assert "12 luglio 1990" in c.explanation and "15 agosto" in c.explanation
    assert c.memory_text == b.text and c.other_text == a.text


def test_english_explanation(store: MemoryStore) -> None:
    store.add("u1", "The user was born on 12 July 1990")
    b = store.add("u1", "The user's birthday is on 15 August")
    c = SemanticIntegrityChecker(store, ScriptedJudge(), lang="en").check(b).contradictions[0]
    assert "12 July 1990" in c.explanation and "15 August" in c.explanation


def test_check_is_pure(store: MemoryStore) -> None:
    store.add("u1", "Sono alto 180 cm")
    b = store.add("u1", "Sono alto 175 cm")
    before = _snapshot(store)
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=0.95))
    r1, r2 = checker.check(b), checker.check(b.id)
    assert _snapshot(store) == before
    assert r1.contradictions == r2.contradictions


def test_other_users_memories_are_never_candidates(store: MemoryStore) -> None:
    other = store.add("u2", "Sono alto 180 cm", key="height_cm", value="180")
    b = store.add("u1", "Sono alto 175 cm", key="height_cm", value="175")
    checker = SemanticIntegrityChecker(store, ScriptedJudge(default=1.0), exhaustive=True)
    res = checker.check(b)
    assert not res.has_contradiction and res.n_candidates == 0
    assert other.id not in {m.id for m, _, _ in checker.candidates(b)}
    assert checker.check_all("u2")[0].n_candidates == 0


def test_user_id_is_read_from_the_store_not_the_argument(store: MemoryStore) -> None:
    from dataclasses import replace

    store.add("u2", "Sono alto 180 cm")
    b = store.add("u1", "Sono alto 175 cm")
    forged = replace(b, user_id="u2")
    assert not SemanticIntegrityChecker(store, ScriptedJudge(default=1.0)).check(forged).has_contradiction


def test_candidate_sources(store: MemoryStore) -> None:
    same = store.add("u1", "alpha beta gamma delta")
    keyed = store.add("u1", "Chiamami Zhang San", key="preferred_name", value="Zhang San", confidence=0.9)
    attr = store.add("u1", "Sono nato il 12 luglio 1990")
    store.add("u1", "omega psi")
    new = store.add("u1", "Chiamami Li Si, il mio compleanno è il 15 agosto. alpha beta gamma delta",
                    key="preferred_name", value="Li Si", confidence=0.9)
    checker = SemanticIntegrityChecker(store, ScriptedJudge(), similarity_threshold=0.3)
    cands = {m.id: srcs for m, _, srcs in checker.candidates(new)}
    assert "faiss" in cands[same.id]
    assert {"version"} <= cands[keyed.id]  # superseded by the new item (same slot)
    assert "attribute" in cands[attr.id]
    assert len(cands) == 3


def test_lost_to_item_is_a_candidate(store: MemoryStore) -> None:
    winner = store.add("u1", "Call me Zhang San", key="preferred_name", value="Zhang San", confidence=0.95)
    loser = store.add("u1", "Call me Li Si", key="preferred_name", value="Li Si", confidence=0.5)
    assert not loser.is_active and loser.lost_to == winner.id
    res = SemanticIntegrityChecker(store, ScriptedJudge()).check(loser)
    assert res.has_contradiction and res.contradictions[0].other_id == winner.id
    assert res.contradictions[0].type is ConflictType.NAME


def test_similarity_threshold_none_uses_the_embedders_calibration(store: MemoryStore) -> None:
    from dataclasses import replace

    store.embedder.thresholds = replace(store.embedder.thresholds, candidate=0.123)
    checker = SemanticIntegrityChecker(store, ScriptedJudge(), similarity_threshold=None)
    assert checker.candidate_threshold == pytest.approx(0.123)
    assert SemanticIntegrityChecker(store, ScriptedJudge()).candidate_threshold == pytest.approx(0.123)  # default
    assert SemanticIntegrityChecker(store, ScriptedJudge(), Settings()).candidate_threshold == pytest.approx(0.123)
    assert SemanticIntegrityChecker(store, ScriptedJudge(), similarity_threshold=0.7).candidate_threshold == 0.7


def test_settings_are_used_and_overrides_win(store: MemoryStore) -> None:
    s = Settings(integrity_confidence_threshold=0.9, integrity_max_similar_memories=3, lang="en",
                 similarity_threshold=0.5)
    c = SemanticIntegrityChecker(store, ScriptedJudge(), s, max_similar=5)
    assert (c.config.confidence_threshold, c.config.max_similar, c.config.lang, c.config.similarity_threshold) == (
        0.9, 5, "en", 0.5)


@pytest.mark.parametrize("bad", [{"confidence_threshold": 1.5}, {"max_similar": 0}, {"levels": ("magic",)},
                                 {"nonsense": 1}])
def test_bad_overrides_raise(store: MemoryStore, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        SemanticIntegrityChecker(store, ScriptedJudge(), **bad)


@pytest.mark.parametrize("bad", [999_999, "7", None, True])
def test_unknown_item_raises_not_found(store: MemoryStore, bad: Any) -> None:
    store.add("u1", "ciao")
    with pytest.raises(NotFoundError):
        SemanticIntegrityChecker(store, ScriptedJudge()).check(bad)


def test_judge_gets_undecided_pairs_in_one_batch_and_threshold_applies(store: MemoryStore) -> None:
    a = store.add("u1", "alpha beta gamma one")
    b = store.add("u1", "alpha beta gamma two")
    c = store.add("u1", "alpha beta gamma three")
    new = store.add("u1", "alpha beta gamma four")
    calls: list[int] = []

    class Spy(ScriptedJudge):
        def judge(self, pairs: Any, /) -> list[Verdict]:
            calls.append(len(pairs))
            return super().judge(pairs)

    script = {(a.text, new.text): 0.95, (b.text, new.text): 0.75, (c.text, new.text): 0.1}
    res = SemanticIntegrityChecker(store, Spy(script), similarity_threshold=0.2,
                                   judge_needs_cue=False).check(new)  # the judge mechanics, without the cue gate
    assert calls == [3]
    assert [x.other_id for x in res.contradictions] == [a.id]  # 0.75 < 0.78 (the default threshold) is not reported
    top = res.contradictions[0]
    assert top.decided_by == "judge" and top.confidence == pytest.approx(0.95)
    assert "alpha beta gamma one" in top.explanation


def test_pairs_decided_by_rules_do_not_reach_the_judge(store: MemoryStore) -> None:
    store.add("u1", "Sono alto 180 cm")
    new = store.add("u1", "Sono alto 175 cm")
    judge = ScriptedJudge(default=0.0)
    res = SemanticIntegrityChecker(store, judge).check(new)
    assert res.contradictions[0].decided_by == "entities" and judge.calls == []


def test_levels_can_be_disabled(store: MemoryStore) -> None:
    store.add("u1", "Sono alto 180 cm")
    new = store.add("u1", "Sono alto 175 cm")
    judge = ScriptedJudge(default=0.99)
    res = SemanticIntegrityChecker(store, judge, levels=("judge",)).check(new)
    assert res.contradictions[0].decided_by == "judge"
    res = SemanticIntegrityChecker(store, judge, levels=("patterns",)).check(new)
    assert not res.has_contradiction


def test_abstaining_judge_reports_nothing(store: MemoryStore) -> None:
    class Abstain:
        name = "abstain"

        def judge(self, pairs: Any, /) -> list[Verdict]:
            return [Verdict(Label.ABSTAIN, 0.0, "abstain") for _ in pairs]

    store.add("u1", "alpha beta")
    new = store.add("u1", "alpha beta gamma")
    assert not SemanticIntegrityChecker(store, Abstain(), similarity_threshold=0.1).check(new).has_contradiction


def test_failing_judge_raises_judge_error(store: MemoryStore) -> None:
    class Broken:
        name = "broken"

        def judge(self, pairs: Any, /) -> list[Verdict]:
            raise RuntimeError("boom")

    class Short:
        name = "short"

        def judge(self, pairs: Any, /) -> list[Verdict]:
            return []

    store.add("u1", "alpha beta")
    new = store.add("u1", "alpha beta gamma")
    n_before = store.count()
    for j in (Broken(), Short()):
        with pytest.raises(JudgeError):
            SemanticIntegrityChecker(store, j, similarity_threshold=0.1).check(new)
    assert store.count() == n_before


def test_judge_by_name_is_loaded_lazily(store: MemoryStore) -> None:
    from memlab.judges import register_judge

    register_judge("test-always-yes", lambda **kw: ScriptedJudge(default=0.9, name="test-always-yes"))
    store.add("u1", "alpha beta")
    new = store.add("u1", "alpha beta gamma")
    checker = SemanticIntegrityChecker(store, "test-always-yes", similarity_threshold=0.1, judge_needs_cue=False)
    assert checker._judge is None
    res = checker.check(new)
    assert res.contradictions[0].details["judge"] == "test-always-yes"


def test_exhaustive_mode_checks_every_active_memory(store: MemoryStore) -> None:
    ids = [store.add("u1", f"unrelated memory number {w}").id for w in ("uno", "due", "tre", "quattro")]
    new = store.add("u1", "completely different words")
    res = SemanticIntegrityChecker(store, ScriptedJudge(), exhaustive=True).check(new)
    assert res.n_candidates == len(ids)
    assert SemanticIntegrityChecker(store, ScriptedJudge()).check(new).n_candidates == 0


def test_check_all_reports_each_pair_once(store: MemoryStore) -> None:
    store.add("u1", "Sono alto 180 cm")
    store.add("u1", "Mi piace il caffè")
    store.add("u1", "Sono alto 175 cm")
    store.add("u2", "Sono alto 160 cm")
    results = SemanticIntegrityChecker(store, ScriptedJudge()).check_all("u1", batch_size=2, progress=False)
    assert len(results) == 3
    found = [(c.memory_id, c.other_id) for r in results for c in r.contradictions]
    assert len(found) == 1


def test_check_all_validates_user(store: MemoryStore) -> None:
    with pytest.raises(InvalidInputError):
        SemanticIntegrityChecker(store, ScriptedJudge()).check_all("")


def test_stage_times_are_reported(store: MemoryStore) -> None:
    store.add("u1", "alpha")
    new = store.add("u1", "alpha beta")
    res = SemanticIntegrityChecker(store, ScriptedJudge(), similarity_threshold=0.1).check(new)
    assert {"candidates", "entities", "patterns", "judge"} <= set(res.stage_ms)
    assert all(np.isfinite(v) and v >= 0 for v in res.stage_ms.values())


def test_get_params_is_json_able(store: MemoryStore) -> None:
    import json

    params = SemanticIntegrityChecker(store, ScriptedJudge()).get_params()
    assert json.loads(json.dumps(params))["confidence_threshold"] == Settings().integrity_confidence_threshold == 0.78


@pytest.mark.model
def test_italian_pair_found_without_the_cosine(tmp_path: Path, minilm: Any) -> None:
    """MiniLM scores "Abito a Roma"/"Vivo a Milano" 0.44 (DESIGN §3): the attribute pull must find it anyway."""
    with MemoryStore(tmp_path / "it.db", embedder=minilm) as s:
        a = s.add("u1", "Abito a Roma")
        for t in ("Mi piace il caffè", "Ho un cane", "Lavoro molto"):
            s.add("u1", t)
        b = s.add("u1", "Vivo a Milano")
        sim = float(s.vectors([a.id])[0] @ s.vectors([b.id])[0])
        assert sim < 0.7
        checker = SemanticIntegrityChecker(s, ScriptedJudge(), similarity_threshold=0.7)  # the seed's filter
        srcs = {m.id: src for m, _, src in checker.candidates(b)}
        assert srcs[a.id] == {"attribute"}
        res = checker.check(b)
        assert res.contradictions[0].type is ConflictType.PLACE
        assert "Roma" in res.contradictions[0].explanation and "Milano" in res.contradictions[0].explanation


def test_consistent_short_pairs_never_reach_the_judge(store: MemoryStore) -> None:
    store.add("u1", "I like tea")
    new = store.add("u1", "I like biscuits")
    judge = ScriptedJudge(default=0.99)
    res = SemanticIntegrityChecker(store, judge, exhaustive=True).check(new)
    assert not res.has_contradiction and judge.calls == []


def test_judge_stage_time_is_charged_to_the_item(store: MemoryStore) -> None:
    import time as _time

    class Slow(ScriptedJudge):
        def judge(self, pairs: Any, /) -> list[Verdict]:
            _time.sleep(0.05)
            return super().judge(pairs)

    store.add("u1", "alpha beta")
    new = store.add("u1", "alpha beta gamma")
    res = SemanticIntegrityChecker(store, Slow(), similarity_threshold=0.1).check(new)
    assert res.stage_ms["judge"] > 0.0  # was 0.0 when the share was computed after the judge ran


def test_memories_of_different_slots_never_reach_the_judge():
    """home_city vs employer: the judge (here always 0.99) is not asked; same slot still is."""
    from memlab.integrity import SemanticIntegrityChecker
    from memlab.store import MemoryStore
    from memlab.testing import FakeEmbedder, ScriptedJudge

    store = MemoryStore(":memory:", embedder=FakeEmbedder())
    judge = ScriptedJudge(lambda a, b: 0.99)
    checker = SemanticIntegrityChecker(store, judge, exhaustive=True, judge_needs_cue=False)
    store.add("u1", "L'utente vive a Roma", key="home_city", value="Roma")
    job = store.add("u1", "L'utente lavora presso Ferrari", key="employer", value="Ferrari")
    res = checker.check(job)
    assert not res.has_contradiction and judge.calls == []
    free = store.add("u1", "L'utente ama il mare")
    assert checker.check(free).has_contradiction and judge.calls  # unkeyed pairs still go to the judge


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Do you like country music? What is your favourite band?", "I hate country music."),
        ("I am a doctor.", "Are you a doctor?"),
        ("Sei alto 180 cm?", "Sono alto 175 cm"),
        ("你喜欢茶吗？", "我不喜欢茶。"),
    ],
)
def test_a_question_is_never_a_contradiction(store: MemoryStore, old: str, new: str) -> None:
    store.add("u1", old)
    b = store.add("u1", new)
    judge = ScriptedJudge(default=1.0)
    res = SemanticIntegrityChecker(store, judge, exhaustive=True).check(b)
    assert not res.has_contradiction and res.n_candidates == 1
    assert judge.calls == []  # decided before the judge


def test_a_statement_after_a_question_is_still_checked(store: MemoryStore) -> None:
    store.add("u1", "Do you have pets? I have two dogs.")
    b = store.add("u1", "I have never had a pet.")
    judge = ScriptedJudge(default=0.95)
    res = SemanticIntegrityChecker(store, judge, exhaustive=True).check(b)
    assert res.has_contradiction and len(judge.calls) == 1
