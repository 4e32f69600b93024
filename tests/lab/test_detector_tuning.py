"""memlab tune-detector: the replayed decision rule, the choice under the false-alarm cap, the split guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.errors import InvalidInputError
from memlab.lab.detector_tuning import UnitTrace, collect_traces, sweep, tune_detector


def _traces() -> list[UnitTrace]:
    return [
        # a contradiction the judge is sure of, between dissimilar turns (cosine 0.05)
        UnitTrace("c1", True, (("judge", 0.95, 0.05, True),)),
        # a contradiction at medium confidence
        UnitTrace("c2", True, (("judge", 0.60, 0.40, True),)),
        # a contradiction the pattern level decided (its source is a shared attribute, not FAISS alone)
        UnitTrace("c3", True, (("patterns", 0.90, None, False),)),
        # consistent dialogues: one confident false alarm, one weak one
        UnitTrace("n1", False, (("judge", 0.70, 0.30, True),)),
        UnitTrace("n2", False, (("judge", 0.20, 0.50, True),)),
        UnitTrace("n3", False, ()),
    ]


def test_replay_applies_both_thresholds() -> None:
    grid = {(g.similarity_threshold, g.confidence_threshold): g for g in sweep(_traces(), [0.0, 0.1], [0.5, 0.8])}
    # cosine > 0.0 and confidence >= 0.5: c1, c2, c3 and the false alarm n1
    g = grid[(0.0, 0.5)]
    assert (g.flagged, g.recall, g.false_contradiction_rate) == (4, 1.0, pytest.approx(1 / 3, abs=1e-4))
    # cosine > 0.1 drops c1 (FAISS only, 0.05): the pattern pair stays (not a FAISS-only candidate)
    assert grid[(0.1, 0.5)].flagged == 3 and grid[(0.1, 0.5)].recall == pytest.approx(2 / 3, abs=1e-4)
    # confidence >= 0.8: c1 and c3 only, no false alarm
    assert grid[(0.0, 0.8)].flagged == 2 and grid[(0.0, 0.8)].false_contradiction_rate == 0.0


def test_choice_respects_the_false_alarm_cap(tmp_path: Path) -> None:
    best, grid = tune_detector(
        _traces(), max_false_contradiction_rate=0.0, similarity=[0.0], confidence=[0.5, 0.72, 0.9],
        out=tmp_path / "t.json",
    )
    assert best.false_contradiction_rate == 0.0
    # 0.72 and 0.9 both find c1 + c3 without a false alarm: the tie goes to the stricter threshold
    assert best.confidence_threshold == 0.9
    assert best.f1 == pytest.approx(0.8, abs=1e-4)
    saved = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert saved["best"]["confidence_threshold"] == 0.9 and len(saved["grid"]) == len(grid) == 3
    with pytest.raises(InvalidInputError):
        tune_detector(_traces(), max_false_contradiction_rate=0.0, similarity=[0.0], confidence=[0.1])
    with pytest.raises(InvalidInputError):
        tune_detector([], similarity=[0.0], confidence=[0.5])


def test_rct_like_negatives_cap_the_choice() -> None:
    # RCT-like consistent units: one false alarm at 0.75 among two
    negatives = [UnitTrace("r1", False, (("judge", 0.75, 0.3, True),)), UnitTrace("r2", False, ())]
    grid = {g.confidence_threshold: g for g in sweep(_traces(), [0.0], [0.5, 0.8], negatives=negatives)}
    assert grid[0.5].rct_false_contradiction_rate == 0.5 and grid[0.8].rct_false_contradiction_rate == 0.0
    assert sweep(_traces(), [0.0], [0.5])[0].rct_false_contradiction_rate is None
    free, _ = tune_detector(_traces(), max_false_contradiction_rate=0.5, similarity=[0.0], confidence=[0.5, 0.8])
    capped, _ = tune_detector(_traces(), max_false_contradiction_rate=0.5, similarity=[0.0], confidence=[0.5, 0.8],
                              negatives=negatives, max_rct_false_contradiction_rate=0.1)
    assert (free.confidence_threshold, capped.confidence_threshold) == (0.5, 0.8)
    with pytest.raises(InvalidInputError, match="RCT-like"):
        tune_detector(_traces(), similarity=[0.0], confidence=[0.5], negatives=negatives,
                      max_rct_false_contradiction_rate=0.1)


@pytest.mark.parametrize("split", ["human-bot", "rct", "test"])
def test_blind_and_test_splits_are_refused(split: str) -> None:
    with pytest.raises(InvalidInputError, match="dev/train splits only"):
        collect_traces("decode", split, judge="none", embedder="minilm", limit=2, progress=False)


@pytest.mark.model
def test_traces_come_from_the_real_checker_on_dev_dialogues() -> None:
    from memlab.testing import ScriptedJudge

    traces = collect_traces("decode", "dev", judge=ScriptedJudge(default=0.3), embedder="minilm", limit=6,
                            progress=False)
    assert len(traces) == 6
    judged = [p for t in traces for p in t.pairs if p[0] == "judge"]
    assert judged and all(p[1] == pytest.approx(0.3) and p[2] is not None for p in judged)
