"""Run directories: write/load round trip, views, comparison, validation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from memlab.errors import InvalidInputError, NotFoundError
from memlab.eval.runs import EvalRun, Example, compare_runs, default_run_dir, load_run, make_spec, write_run

METRICS = {
    "contradiction": {
        "precision": 0.5,
        "recall": 1.0,
        "f1": 0.6667,
        "support": 2,
        "tp": 2,
        "fp": 2,
        "fn": 0,
        "ci95": {"f1": [0.4, 0.9]},
    },
    "per_class": {
        "neutral": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 4, "tp": 2, "fp": 0, "fn": 2}
    },
    "accuracy": 0.75,
    "ece": float("nan"),
    "coverage": 1.0,
}


def _write(tmp_path: Path, name: str = "r", **kw) -> EvalRun:
    spec = make_spec(
        "contradiction",
        dataset="ci_tod",
        split="test",
        n=3,
        judge="scripted",
        seed=1,
        params={"threshold": 0.5},
    )
    examples = [
        Example(
            id="a", gold="contradiction", pred="contradiction", score=0.9, decided_by="judge", latency_ms=1.0
        ),
        {
            "id": "b",
            "gold": "neutral",
            "pred": "abstain",
            "error": "JudgeError: boom",
            "meta": {"lang": "it"},
        },
        {
            "id": "c",
            "gold": "neutral",
            "pred": "neutral",
            "score": 0.1,
            "meta": {"testo": "Città di Roma 我"},
        },
    ]
    return write_run(
        tmp_path / name,
        spec=spec,
        metrics=kw.pop("metrics", METRICS),
        examples=examples,
        confusion={"contradiction": {"contradiction": 1}},
        per_level={"judge": {"n": 2}},
        **kw,
    )


def test_round_trip(tmp_path: Path) -> None:
    run = _write(tmp_path)
    loaded = load_run(tmp_path / "r")
    assert loaded.spec == run.spec
    assert loaded.metrics == run.metrics
    assert loaded.metrics["ece"] is None  # NaN -> null, valid JSON
    json.loads((tmp_path / "r" / "run.json").read_text())  # strict JSON
    assert [e.id for e in loaded.examples()] == ["a", "b", "c"]
    assert loaded.examples()[2].meta["testo"] == "Città di Roma 我"
    assert load_run(tmp_path / "r" / "run.json").path == tmp_path / "r"


def test_spec_records_provenance(tmp_path: Path) -> None:
    spec = _write(tmp_path).spec
    assert len(spec.data_sha256 or "") == 64
    assert spec.memlab_version and spec.created_at.endswith("+00:00")
    assert "numpy" in spec.packages and "torch" in spec.packages
    assert spec.git_commit is None or len(spec.git_commit) == 40
    assert spec.params == {"threshold": 0.5}


def test_issue_keys_present(tmp_path: Path) -> None:
    data = json.loads((_write(tmp_path).path / "run.json").read_text())  # type: ignore[operator]
    for key in (
        "task",
        "dataset",
        "data_sha256",
        "n",
        "judge",
        "params",
        "seed",
        "memlab_version",
        "git_commit",
        "packages",
    ):
        assert key in data["spec"]
    assert {"metrics", "confusion", "per_level"} <= set(data)


def test_views(tmp_path: Path) -> None:
    run = _write(tmp_path)
    m = run.to_pandas("metrics")
    assert list(m.columns) == ["run_id", "group", "name", "value", "ci_low", "ci_high", "higher_is_better"]
    f1 = m[(m.group == "contradiction") & (m.name == "f1")].iloc[0]
    assert (f1.value, f1.ci_low, f1.ci_high) == (0.6667, 0.4, 0.9)
    assert not m[(m.name == "ece")].higher_is_better.iloc[0]
    ex = run.to_pandas("examples")
    assert list(ex.columns[:7]) == ["id", "gold", "pred", "score", "decided_by", "latency_ms", "error"]
    assert ex.loc[1, "pred"] == "abstain" and "boom" in ex.loc[1, "error"]
    md = run.to_markdown()
    assert "| contradiction | 0.500 | 1.000 | 0.667 | [0.400, 0.900] | 2 | 2 | 2 | 0 |" in md
    assert "| accuracy | 0.750 |" in md
    assert run.metric() == 0.6667 and run.metric("per_class.neutral.support") == 4
    with pytest.raises(InvalidInputError, match="'kind'"):
        run.to_pandas("nope")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        run.metric("contradiction.nope")


def test_compare_runs(tmp_path: Path) -> None:
    a = _write(tmp_path, "a")
    b = _write(tmp_path, "b", metrics={**METRICS, "accuracy": 0.5})
    df = compare_runs([tmp_path / "a", b])
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert df["accuracy"].tolist() == [0.75, 0.5]
    assert df["contradiction.f1.ci_low"].tolist() == [0.4, 0.4]
    assert df["run_id"].tolist() == [a.spec.run_id, b.spec.run_id]


def test_generic_task_run(tmp_path: Path) -> None:
    spec = make_spec("memory-recall", dataset="locomo", split="test", n=2, seed=0)
    run = write_run(
        tmp_path / "m",
        spec=spec,
        metrics={"recall_at_5": 0.4, "by_category": {"temporal": {"recall_at_5": 0.2}}},
        examples=[{"id": "q1", "gold": "x", "pred": "y"}],
        primary_metric="recall_at_5",
    )
    assert load_run(run.path).metric() == 0.4  # type: ignore[arg-type]
    assert "| by_category.temporal.recall_at_5 | 0.200 |" in run.to_markdown().replace("per_class.", "")


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="No run.json"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(InvalidInputError, match="not a valid memlab run"):
        load_run(tmp_path)
    spec = make_spec("x")
    with pytest.raises(InvalidInputError, match="Example #0"):
        write_run(tmp_path / "y", spec=spec, metrics={}, examples=[{"gold": "no id"}])
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(InvalidInputError, match="must be a directory"):
        write_run(f, spec=spec, metrics={})
    with pytest.raises(NotFoundError):
        EvalRun(spec=spec).examples()


def test_default_run_dir_is_unique() -> None:
    a, b = default_run_dir("contradiction"), default_run_dir("contradiction")
    assert a != b and a.name.split("_")[1] == "contradiction"


def test_examples_frame_converts_to_arrow(tmp_path: Path) -> None:
    import pyarrow as pa

    ex = _write(tmp_path).to_pandas("examples")
    assert json.loads(ex.loc[2, "meta"]) == {"testo": "Città di Roma 我"}
    pa.Table.from_pandas(ex)  # what st.dataframe does
    pa.Table.from_pandas(_write(tmp_path, "m").to_pandas("metrics"))
