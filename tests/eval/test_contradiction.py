"""The contradiction task end to end with scripted and baseline judges (quality is never measured with fakes)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memlab.datasets import default_data_dir, load_pairs
from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.eval import metrics as M
from memlab.eval.contradiction import (
    _binary_bootstrap,
    evaluate_contradiction,
    map_to_space,
    score_contradiction,
)
from memlab.eval.runs import load_run
from memlab.judges.baselines import LexicalJudge, MajorityJudge
from memlab.records import Label, Verdict
from memlab.testing import ScriptedJudge


def oracle(dataset: str, split: str) -> ScriptedJudge:
    """A judge that answers the gold label (for checking the bookkeeping, not quality)."""
    gold = {(p.premise, p.hypothesis): p.label for p in load_pairs(dataset, split)}
    return ScriptedJudge(lambda a, b: 0.95 if gold[(a, b)] is Label.CONTRADICTION else 0.05, name="oracle")


class FlakyJudge:
    """Fails on every pair whose hypothesis contains ``bad`` (batch raises, single pair raises)."""

    name = "flaky"

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        if any(b in self.bad for _, b in pairs):
            raise RuntimeError("model crashed")
        return [Verdict(Label.NEUTRAL, 0.1, self.name) for _ in pairs]

    def get_params(self) -> dict[str, object]:
        return {"bad": len(self.bad)}


def test_oracle_scores_perfectly_and_writes_issue_keys(tmp_path: Path) -> None:
    run = evaluate_contradiction(
        "ci_tod", "test", judge=oracle("ci_tod", "test"), out_dir=tmp_path, n_resamples=100
    )
    c = run.metrics["contradiction"]
    n_contra = sum(p.label is Label.CONTRADICTION for p in load_pairs("ci_tod", "test"))
    assert (c["precision"], c["recall"], c["f1"], c["support"]) == (1.0, 1.0, 1.0, n_contra)
    assert c["ci95"]["f1"] == [1.0, 1.0]
    assert run.metrics["false_contradiction_rate"] == 0.0 and run.metrics["coverage"] == 1.0
    data = json.loads((tmp_path / "run.json").read_text())
    assert {
        "contradiction",
        "accuracy",
        "macro_f1",
        "ece",
        "false_contradiction_rate",
        "coverage",
        "pairs_per_second",
    } <= set(data["metrics"])
    assert data["spec"]["n"] == 168 and data["spec"]["judge"] == "oracle"
    assert data["confusion"]["contradiction"]["contradiction"] == n_contra
    assert data["per_level"]["judge"]["precision"] == 1.0
    rows = (tmp_path / "examples.jsonl").read_text().splitlines()
    assert len(rows) == 168 and {"id", "gold", "pred", "score", "decided_by", "latency_ms", "error"} <= set(
        json.loads(rows[0])
    )


def test_data_dir_copy_scores_exactly_the_same(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(default_data_dir("snli"), copy)
    a = evaluate_contradiction(
        "snli", "test", judge=LexicalJudge(), limit=300, seed=3, out_dir=tmp_path / "a"
    )
    b = evaluate_contradiction(
        "snli", "test", judge=LexicalJudge(), limit=300, seed=3, out_dir=tmp_path / "b", data_dir=copy
    )
    strip = {"pairs_per_second", "seconds"}
    assert {k: v for k, v in a.metrics.items() if k not in strip} == {
        k: v for k, v in b.metrics.items() if k not in strip
    }
    assert a.spec.data_sha256 == b.spec.data_sha256 and b.spec.data_dir == str(copy)
    assert a.confusion == b.confusion


def test_sampling_is_seeded(tmp_path: Path) -> None:
    a = evaluate_contradiction(
        "gu_dnli", "test", judge=LexicalJudge(), limit=50, seed=1, out_dir=tmp_path / "a"
    )
    b = evaluate_contradiction(
        "gu_dnli", "test", judge=LexicalJudge(), limit=50, seed=1, out_dir=tmp_path / "b"
    )
    c = evaluate_contradiction(
        "gu_dnli", "test", judge=LexicalJudge(), limit=50, seed=2, out_dir=tmp_path / "c"
    )
    ids = lambda r: [e.id for e in r.examples()]  # noqa: E731
    assert ids(a) == ids(b) != ids(c)
    assert a.spec.limit == 50 and a.spec.n == 50


def test_failures_become_abstain_and_count_in_coverage(tmp_path: Path) -> None:
    pairs = load_pairs("ci_tod", "test")
    bad = {pairs[0].hypothesis, pairs[5].hypothesis}
    n_bad = sum(p.hypothesis in bad for p in pairs)
    run = evaluate_contradiction(
        "ci_tod", "test", judge=FlakyJudge(bad), out_dir=tmp_path / "ok", batch_size=16, max_error_rate=0.5
    )
    assert run.status == "ok"
    assert run.metrics["coverage"] == pytest.approx(1 - n_bad / len(pairs))
    failed = [e for e in run.examples() if e.pred == "abstain"]
    assert len(failed) == n_bad and all("model crashed" in (e.error or "") for e in failed)
    assert len(run.examples()) == len(pairs)  # nothing dropped
    strict = evaluate_contradiction(
        "ci_tod", "test", judge=FlakyJudge(bad), out_dir=tmp_path / "fail", max_error_rate=0.0
    )
    assert strict.status == "failed" and any("max_error_rate" in n for n in strict.notes)
    assert load_run(tmp_path / "fail").status == "failed"


def test_decode_aggregates_max_per_dialogue(tmp_path: Path) -> None:
    pairs = load_pairs("decode", "human-bot")
    target = pairs[0].meta["group"]
    flagged = {(p.premise, p.hypothesis) for p in pairs if p.meta["group"] == target}
    first = next(iter(flagged))
    judge = ScriptedJudge(lambda a, b: 0.9 if (a, b) == first else 0.2)
    run = evaluate_contradiction("decode", "human-bot", judge=judge, limit=40, seed=0, out_dir=tmp_path)
    examples = run.examples()
    assert run.spec.n == len(examples) == 40
    assert len({e.id for e in examples}) == 40 and all(e.group == e.id for e in examples)
    assert run.metrics["n_pairs"] == sum(e.meta["n_pairs"] for e in examples) >= 40
    for e in examples:
        assert e.pred in {"contradiction", "not_contradiction"}
        if e.id == target:
            assert e.score == 0.9 and e.pred == "contradiction"
        else:
            assert e.score == 0.2 and e.pred == "not_contradiction"


def test_label_space_mapping() -> None:
    assert map_to_space("entailment", "binary") is Label.NOT_CONTRADICTION
    assert map_to_space("neutral", "3-way") is Label.NEUTRAL
    assert map_to_space("not_contradiction", "entailment") is Label.NEUTRAL
    assert map_to_space("abstain", "binary") is Label.ABSTAIN


def test_rte3_ita_has_no_gold_contradiction_and_says_so(tmp_path: Path) -> None:
    run = evaluate_contradiction("rte3_ita", "test", judge=LexicalJudge(), limit=60, out_dir=tmp_path)
    assert run.metrics["contradiction"]["support"] == 0
    assert set(run.metrics["per_class"]) == {"entailment", "neutral"}
    assert any("ill-defined" in n for n in run.notes)


def test_majority_fits_on_a_non_test_split(tmp_path: Path) -> None:
    run = evaluate_contradiction("cdconv", "test", judge=MajorityJudge(), limit=100, out_dir=tmp_path / "c")
    assert run.spec.params["judge"]["fitted_on"] == "cdconv/train"
    assert run.spec.params["judge"]["label"] == "not_contradiction"
    kv = evaluate_contradiction("kvpi", "test", judge=MajorityJudge(), limit=50, out_dir=tmp_path / "k")
    assert any("fitted on the evaluated split" in n for n in kv.notes)


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="labelled pair set"):
        evaluate_contradiction("locomo", judge=LexicalJudge(), out_dir=tmp_path)
    with pytest.raises(UnknownComponentError):
        evaluate_contradiction("nope", judge=LexicalJudge(), out_dir=tmp_path)
    with pytest.raises(InvalidInputError, match="max_error_rate"):
        evaluate_contradiction("snli", judge=LexicalJudge(), max_error_rate=2.0, out_dir=tmp_path)
    with pytest.raises(InvalidInputError, match="label_space"):
        score_contradiction([], [], [], label_space="4-way")


def test_vectorised_bootstrap_agrees_with_generic(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gold = rng.random(200) < 0.4
    pred = np.where(rng.random(200) < 0.7, gold, ~gold)
    fast = _binary_bootstrap(gold, pred, n_resamples=400, seed=5)
    f1 = lambda g, p: M.per_class(g, p, labels=[True])["True"].f1  # noqa: E731
    slow = M.bootstrap_ci(f1, gold.tolist(), pred.tolist(), n_resamples=400, seed=5)
    assert fast["f1"] == pytest.approx(list(slow), abs=1e-9)


def test_score_contradiction_matches_metric_functions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = ["contradiction", "entailment", "neutral"]
    gold = list(rng.choice(labels, 120))
    pred = list(rng.choice(labels + ["abstain"], 120))
    prob = [None if p == "abstain" else float(x) for p, x in zip(pred, rng.random(120), strict=True)]
    m, cm, _ = score_contradiction(gold, pred, prob, n_resamples=50)
    assert m["accuracy"] == pytest.approx(M.accuracy(gold, pred))
    assert m["contradiction"]["f1"] == pytest.approx(
        M.per_class(gold, pred, labels=["contradiction"])["contradiction"].f1
    )
    assert m["coverage"] == pytest.approx(M.coverage(pred))
    covered = [i for i, p in enumerate(prob) if p is not None]
    assert m["ece"] == pytest.approx(
        M.expected_calibration_error([gold[i] for i in covered], [prob[i] for i in covered])
    )
    assert sum(sum(r.values()) for r in cm.values()) == 120


def test_per_category_breakdown_counts_add_up(tmp_path: Path) -> None:
    run = evaluate_contradiction("cdconv", "test", judge=LexicalJudge(), limit=200, seed=0, out_dir=tmp_path)
    cats = run.per_category["raw_label"]
    assert set(cats) <= {"0", "1", "2", "3"}
    assert sum(c["n"] for c in cats.values()) == 200
    assert sum(c["contradictions"] for c in cats.values()) == run.metrics["contradiction"]["support"]
    assert cats["0"]["contradictions"] == 0 and cats["0"]["recall"] is None
    assert "| raw_label | n | accuracy |" in run.to_markdown()


def test_progress_bar_does_not_change_results(tmp_path: Path) -> None:
    a = evaluate_contradiction("ci_tod", "test", judge=LexicalJudge(), limit=30, out_dir=tmp_path / "a", progress=True)
    b = evaluate_contradiction("ci_tod", "test", judge=LexicalJudge(), limit=30, out_dir=tmp_path / "b")
    assert a.metrics["contradiction"] == b.metrics["contradiction"]
