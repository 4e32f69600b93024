"""Calibration of per-embedder thresholds, shipped calibration files, and the candidate-stage bench."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.embedding.base import EmbedderThresholds
from memlab.errors import InvalidInputError, NotFoundError, UnknownComponentError
from memlab.lab.calibrate import (
    _SENT_SPLIT,
    EmbedderCalibration,
    _drift_cases,
    bench_candidates,
    calibrate_embedder,
    calibration_pairs,
    calibration_path,
    candidate_cases,
    load_calibration,
    load_thresholds,
    save_calibration,
    threshold_for_recall,
)
from memlab.testing import FakeEmbedder


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=60), st.floats(0.01, 1.0))
@settings(max_examples=80, deadline=None)
def test_threshold_for_recall_is_the_largest_meeting_the_target(scores, target):
    t = threshold_for_recall(scores, target)
    s = np.asarray(scores)
    assert (s >= t).mean() >= target - 1e-9  # the target is met
    above = s[s > t + 1e-4]
    if above.size:  # and no larger score would still meet it
        assert (s >= above.min()).mean() < target


@pytest.mark.parametrize("target", [0.0, 1.5, -0.1])
def test_threshold_for_recall_rejects_bad_targets(target):
    with pytest.raises(InvalidInputError, match="recall_target"):
        threshold_for_recall([0.5], target)


def test_threshold_for_recall_rejects_empty():
    with pytest.raises(InvalidInputError):
        threshold_for_recall([], 0.9)


@pytest.mark.model
def test_calibration_uses_train_dev_only(tiny_train_dev):
    pairs = calibration_pairs(tiny_train_dev, limit=None)  # no test file exists in this folder
    assert {p.lang for p in pairs} == {"en", "it", "zh"}
    assert {p.kind for p in pairs} == {"related", "unrelated"}
    assert all("test" not in p.source for p in pairs)
    # the persona facts of one speaker are "unrelated" pairs; contradictions are "related"
    assert any(p.source == "msc_personas/train" and p.kind == "unrelated" for p in pairs)
    assert any(p.source == "cdconv/train" and p.kind == "related" for p in pairs)


@pytest.mark.model
def test_calibrate_fake_embedder_end_to_end(tiny_train_dev, tmp_path):
    emb = FakeEmbedder(dim=64, bag_of_words=True)
    cal = calibrate_embedder(emb, data_dir=tiny_train_dev, limit=None, recall_target=0.75)
    assert set(cal.by_language) == {"en", "it", "zh"}
    assert cal.candidate == min(c.threshold for c in cal.by_language.values())
    for c in cal.by_language.values():
        assert c.recall_at_candidate >= 0.75  # every language keeps the target at the shipped threshold
    assert cal.candidate_recall >= 0.75
    assert cal.sentences_per_s > 0
    path = save_calibration(cal, tmp_path / "fake.json")
    again = load_calibration(path)
    assert again == cal
    th = again.to_thresholds()
    assert th.candidate == cal.candidate and th.chat_search == cal.chat_search
    assert th.candidate_for("it") == cal.by_language["it"].threshold
    assert th.candidate_for(None) == th.candidate_for("xx") == cal.candidate
    assert "| fake | it |" in cal.to_markdown()
    assert set(cal.title_drift_by_language) == {"en", "it", "zh"}
    assert cal.title_drift == pytest.approx(float(np.median(list(cal.title_drift_by_language.values()))), abs=1e-4)
    assert th.title_drift == cal.title_drift and "title_drift" in cal.to_markdown()


@pytest.mark.model
def test_drift_cases_replace_a_share_of_one_subject(tiny_train_dev):
    cases = _drift_cases(tiny_train_dev, None, 0)
    assert {c.lang for c in cases} == {"en", "it", "zh"}
    for c in cases:
        assert c.share in (0.25, 0.5, 0.75)
        assert c.anchor != c.changed
        n = len(_SENT_SPLIT.split(c.anchor.strip())) if c.lang != "zh" else None
        assert n is None or n >= 2


def test_old_calibration_files_without_title_drift_keep_the_seed_default(tmp_path):
    raw = json.loads(calibration_path("minilm").read_text(encoding="utf-8"))
    for key in ("title_drift", "title_drift_by_language", "title_drift_keep_rate", "title_drift_change_rate"):
        raw.pop(key, None)
    p = tmp_path / "old.json"
    p.write_text(json.dumps(raw), encoding="utf-8")
    assert load_calibration(p).to_thresholds().title_drift == EmbedderThresholds().title_drift


@pytest.mark.model
def test_calibrate_rejects_bad_targets(tiny_train_dev):
    with pytest.raises(InvalidInputError, match="chat_recall_target"):
        calibrate_embedder(FakeEmbedder(), data_dir=tiny_train_dev, chat_recall_target=0)


def test_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(NotFoundError, match="snli"):
        calibration_pairs(tmp_path)


def test_uncalibrated_embedder_gets_seed_defaults():
    assert load_thresholds("no-such-embedder") == EmbedderThresholds()
    assert FakeEmbedder().thresholds.source == "seed default"


def test_corrupt_calibration_file_falls_back(tmp_path, caplog):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(Exception, match="invalid"):
        load_calibration(bad)
    with caplog.at_level(logging.WARNING):
        assert load_thresholds(str(bad)) == EmbedderThresholds()


@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_shipped_calibrations_are_valid_and_consistent(name):
    cal = load_calibration(name)
    assert calibration_path(name).is_file()
    assert cal.embedder == name
    assert cal.recall_target >= 0.9
    for lang in ("en", "it", "zh"):
        c = cal.by_language[lang]
        assert c.n_related > 0 and c.n_unrelated > 0
        assert c.recall_at_candidate >= cal.recall_target - 1e-9
    assert cal.candidate == min(c.threshold for c in cal.by_language.values())
    raw = json.loads(calibration_path(name).read_text(encoding="utf-8"))
    assert raw["sentences_per_s"] > 0
    # the title-drift threshold separates "a quarter changed" from "three quarters changed" on real texts
    assert cal.title_drift is not None and set(cal.title_drift_by_language) == {"en", "it", "zh"}
    assert cal.title_drift_keep_rate >= 0.6 and cal.title_drift_change_rate >= 0.6


@pytest.mark.model
def test_candidate_cases_cover_every_bench_set(tiny_data):
    for ds, lang in [("snli", "en"), ("gu_dnli", "en"), ("decode", "en"), ("rte3_ita", "it"), ("ocnli", "zh"),
                     ("cdconv", "zh"), ("kvpi", "zh")]:
        cases, pool, got_lang = candidate_cases(ds, tiny_data, limit=None)
        assert cases and pool and got_lang == lang, ds
    kv, _, _ = candidate_cases("kvpi", tiny_data, limit=None)
    assert {c.gold for c in kv} == {("我住在福建莆田",), ("我是男生",)}  # the contradicted attribute's memory
    dec, _, _ = candidate_cases("decode", tiny_data, limit=None)
    assert dec[0].new == "I have no pets." and "I have two cats." in dec[0].gold
    with pytest.raises(UnknownComponentError):
        candidate_cases("nope", tiny_data)


@pytest.mark.model
def test_bench_candidates_with_scripted_similarity(tiny_data):
    # aliases make each contradiction pair identical vectors: recall must be 1 at any threshold below 1
    cases = [c for ds in ("snli", "rte3_ita") for c in candidate_cases(ds, tiny_data, limit=None)[0]]
    emb = FakeEmbedder(dim=256, aliases=[(c.new, *c.gold) for c in cases])
    res = bench_candidates([emb], ["snli", "rte3_ita"], data_dir=tiny_data, limit=None, n_distractors=3,
                           thresholds={"fake": 0.9})
    assert [r.dataset for r in res.rows] == ["snli", "rte3_ita"]
    for r in res.rows:
        assert r.recall_at_10 == 1.0 and r.recall_at_10_thr == 1.0
        assert r.unrelated_pass_rate < 0.5
        assert r.threshold == 0.9
    assert "recall@10" in res.to_markdown()
    assert list(res.to_pandas().columns)[:2] == ["embedder", "dataset"]


def test_calibration_model_is_strict():
    with pytest.raises(ValueError):
        EmbedderCalibration.model_validate({"embedder": "x"})
