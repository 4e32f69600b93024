"""The ``scenarios`` task: the hand-written it/en/zh pair file, its loader, the task's logic, and one real run."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from memlab.datasets import DATASETS, dataset_files
from memlab.errors import DatasetFormatError, InvalidInputError
from memlab.eval.runs import load_run
from memlab.eval.scenarios import (
    SCENARIO_KINDS,
    SCENARIO_LANGS,
    evaluate_scenarios,
    load_scenarios,
    run_scenarios_task,
    scenario_counts,
)
from memlab.eval.tasks import get_task
from memlab.testing import FakeEmbedder, ScriptedJudge

PAIRS = dataset_files("scenarios", "test")[0]


# --- the data file ------------------------------------------------------------------------------------------------


def test_file_is_registered_as_a_test_only_dataset() -> None:
    info = DATASETS["scenarios"]
    assert list(info.splits) == ["test"] and info.label_space == "binary" and not info.is_pairwise
    assert PAIRS.is_file() and PAIRS.name == "pairs.jsonl"
    card = (PAIRS.parent / "README.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in card and "TEST set" in card and "never train" in card.lower()


def test_file_schema_ids_and_coverage() -> None:
    rows = load_scenarios()
    assert len(rows) >= 150
    assert len({r.id for r in rows}) == len(rows)
    for r in rows:
        assert r.id.startswith(f"{r.lang}-{r.kind}-"), r.id
        assert r.a.strip() != r.b.strip(), r.id
    counts = scenario_counts(rows)
    for lang in SCENARIO_LANGS:
        assert sum(sum(v.values()) for v in counts[lang].values()) >= 45, lang
        for kind in SCENARIO_KINDS:
            assert counts[lang][kind]["contradiction"] >= 1, (lang, kind)
            assert counts[lang][kind]["compatible"] >= 1, (lang, kind)
    share = sum(r.label == "contradiction" for r in rows) / len(rows)
    assert 0.40 <= share <= 0.60


def test_card_counts_match_the_file() -> None:
    """The card's per language x kind table (``c / n``) and its totals are the file's counts."""
    counts = scenario_counts(load_scenarios())
    card = (PAIRS.parent / "README.md").read_text(encoding="utf-8")
    for kind in SCENARIO_KINDS:
        line = next(x for x in card.splitlines() if x.startswith(f"| {kind} |"))
        cells = [c.strip() for c in line.strip("|").split("|")][1:4]
        want = [
            f"{counts[la][kind]['contradiction']} / {counts[la][kind]['compatible']}" for la in SCENARIO_LANGS
        ]
        assert cells == want, kind


def test_text_looks_like_its_language() -> None:
    rows = load_scenarios()
    for r in rows:
        has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in r.a + r.b)
        assert has_cjk == (r.lang == "zh"), r.id
    italian = " ".join(r.a + " " + r.b for r in rows if r.lang == "it").lower()
    assert "è" in italian  # accents are real characters, never an apostrophe or a bare vowel
    assert not re.search(r"\b(e'|e`|perche|piu|citta|gia|cosi|eta|caffe)\b", italian)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("not json", "not JSON"),
        ('["a"]', "not a JSON object"),
        ('{"id": "x", "lang": "it", "kind": "date", "a": "A", "b": "B", "label": "contradiction"}', "fields"),
        (
            '{"id": "x", "lang": "fr", "kind": "date", "a": "A", "b": "B", "label": "compatible", "note": "n"}',
            "lang",
        ),
        (
            '{"id": "x", "lang": "it", "kind": "mood", "a": "A", "b": "B", "label": "compatible", "note": "n"}',
            "kind",
        ),
        (
            '{"id": "x", "lang": "it", "kind": "date", "a": "A", "b": "B", "label": "neutral", "note": "n"}',
            "label",
        ),
        (
            '{"id": "x", "lang": "it", "kind": "date", "a": " ", "b": "B", "label": "compatible", "note": "n"}',
            "'a'",
        ),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, line: str, match: str) -> None:
    good = PAIRS.read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "pairs.jsonl").write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=match) as info:
        load_scenarios(tmp_path)
    assert info.value.line == 2 and info.value.path == str(tmp_path / "pairs.jsonl")


def test_duplicate_id_and_missing_file(tmp_path: Path) -> None:
    good = PAIRS.read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "pairs.jsonl").write_text(good + "\n" + good + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="duplicate id"):
        load_scenarios(tmp_path)
    with pytest.raises(DatasetFormatError, match="not found"):
        load_scenarios(tmp_path / "nowhere")


# --- the task's logic (fake embedder, scripted judge) --------------------------------------------------------------


def _tiny(tmp_path: Path) -> tuple[Path, list[dict[str, str]]]:
    rows = [
        {
            "id": "it-name-01",
            "lang": "it",
            "kind": "name",
            "a": "Mi chiamo Anna.",
            "b": "Vado in ufficio a piedi.",
            "label": "contradiction",
            "note": "scripted",
        },
        {
            "id": "en-health-01",
            "lang": "en",
            "kind": "health",
            "a": "I like tea.",
            "b": "I read every night.",
            "label": "contradiction",
            "note": "scripted",
        },
        {
            "id": "zh-place-01",
            "lang": "zh",
            "kind": "place",
            "a": "我喜欢猫。",
            "b": "我每天跑步。",
            "label": "compatible",
            "note": "scripted",
        },
        {
            "id": "en-update-01",
            "lang": "en",
            "kind": "update",
            "a": "I play chess.",
            "b": "I cook on Sundays.",
            "label": "compatible",
            "note": "scripted",
        },
    ]
    d = tmp_path / "data"
    d.mkdir()
    (d / "pairs.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return d, rows


def test_task_logic_with_a_scripted_judge(tmp_path: Path) -> None:
    data, rows = _tiny(tmp_path)
    # the judge says "contradiction" for the Italian pair and for the Chinese pair only: one tp, one fn, one fp, one tn
    script = {(rows[0]["a"], rows[0]["b"]): 0.99, (rows[2]["a"], rows[2]["b"]): 0.99}
    judge = ScriptedJudge(script, name="scripted")
    run = evaluate_scenarios(
        judge=judge,
        embedder=FakeEmbedder(dim=32),
        exhaustive=True,
        data_dir=data,
        out_dir=tmp_path / "run",
        progress=False,
        n_resamples=20,
    )
    assert run.status == "ok" and run.spec.task == "scenarios" and run.spec.n == 4
    assert run.primary_metric == "accuracy" and run.metric() == pytest.approx(0.5)
    assert run.metric("contradiction.f1") == pytest.approx(0.5)
    assert run.metric("false_contradiction_rate") == pytest.approx(0.5)
    assert run.metrics["accuracy_by_lang"] == {"it": 1.0, "en": 0.5, "zh": 0.0}
    assert run.metrics["accuracy_by_kind"] == {"place": 0.0, "health": 0.0, "name": 1.0, "update": 1.0}
    assert list(run.metrics["accuracy_by_kind"]) == [
        "place",
        "health",
        "name",
        "update",
    ]  # the card's kind order
    lk = run.per_category["lang_kind"]
    assert list(lk) == ["it/name", "en/health", "en/update", "zh/place"]
    assert lk["zh/place"] == {
        "n": 1,
        "contradictions": 0,
        "accuracy": 0.0,
        "recall": None,
        "f1": None,
        "false_alarm_rate": 1.0,
    }
    assert run.per_category["lang"]["en"]["n"] == 2 and run.per_category["lang"]["en"]["contradictions"] == 1
    assert run.metric("urgency.tp.high") + run.metric("urgency.tp.medium") + run.metric("urgency.tp.low") == 1
    assert sum(run.metrics["urgency"]["fp"].values()) == 1
    assert "evidence_accuracy" not in run.metrics
    ex = {e.id: e for e in load_run(run.path).examples()}
    assert ex["it-name-01"].pred == "contradiction" and ex["it-name-01"].decided_by == "judge"
    assert ex["it-name-01"].meta["urgency"] in {"high", "medium", "low"}
    assert ex["en-health-01"].pred == "not_contradiction" and ex["en-health-01"].meta["urgency"] is None
    assert ex["zh-place-01"].meta["lang"] == "zh" and ex["zh-place-01"].meta["kind"] == "place"
    assert ex["en-update-01"].meta["a"] == rows[3]["a"] and ex["en-update-01"].meta["b"] == rows[3]["b"]
    # the judge saw the earlier memory and the new one (in either order)
    assert {frozenset(p) for p in judge.calls} == {frozenset((r["a"], r["b"])) for r in rows}


def test_limit_is_a_seeded_sample(tmp_path: Path) -> None:
    kw = {
        "judge": "none",
        "embedder": FakeEmbedder(dim=32),
        "exhaustive": True,
        "progress": False,
        "n_resamples": 10,
        "limit": 5,
        "seed": 1,
    }
    a = evaluate_scenarios(out_dir=tmp_path / "a", **kw)
    b = evaluate_scenarios(out_dir=tmp_path / "b", **kw)
    ids = [e.id for e in load_run(a.path).examples()]
    assert len(ids) == 5 and ids == [e.id for e in load_run(b.path).examples()]
    assert a.spec.limit == 5 and a.spec.dataset == "scenarios" and a.spec.split == "test"
    assert a.spec.data_sha256 and len(a.spec.data_sha256) == 64


def test_registered_runner_and_its_arguments(tmp_path: Path) -> None:
    assert get_task("scenarios") is run_scenarios_task
    with pytest.raises(InvalidInputError, match="scenarios"):
        run_scenarios_task(out_dir=tmp_path, seed=0, dataset="snli")
    with pytest.raises(InvalidInputError, match="fake"):  # a fake embedder only where vectors cannot matter
        run_scenarios_task(out_dir=tmp_path, seed=0, judge="none", embedder="fake", limit=2)
    # a misspelt keyword (out= for out_dir=) is refused before any pair is checked, naming it
    with pytest.raises(InvalidInputError, match=r"\['out'\].*confidence_threshold"):
        evaluate_scenarios(out=tmp_path, judge="none", embedder=FakeEmbedder(dim=32), exhaustive=True, limit=2)
    assert not list(tmp_path.iterdir())


def test_suite_and_gate_name_the_task() -> None:
    from memlab.eval.suite import load_baseline, load_suite

    root = Path(__file__).resolve().parents[2]
    suite = load_suite(root / "eval" / "suite.yaml")
    assert any(e.task == "scenarios" and e.judges == ["default"] for e in suite.tasks)
    gate = load_baseline(root / "eval" / "baselines" / "ci_smoke.json")
    checks = [c for c in gate.checks if c.task == "scenarios"]
    assert checks and checks[0].dataset == "scenarios" and checks[0].metric == "accuracy"
    assert checks[0].limit is None or checks[0].limit >= len(load_scenarios())  # the gate scores every pair


# --- the real default (embedder + judge) on a handful of rows -------------------------------------------------------


@pytest.mark.model
def test_real_default_metrics_are_well_formed(tmp_path: Path) -> None:
    from memlab.cli.main import main

    assert main(["eval", "scenarios", "--limit", "6", "--seed", "3", "--out", str(tmp_path / "run")]) in (
        0,
        1,
    )
    run = load_run(tmp_path / "run")
    assert run.spec.n == 6 and run.spec.judge == "default" and run.status == "ok"
    assert run.spec.params["embedder"] != "fake" and "memlab eval scenarios" in (run.spec.command or "")
    for key in ("accuracy", "false_contradiction_rate"):
        assert 0.0 <= run.metric(key) <= 1.0
    assert 0.0 <= run.metric("contradiction.f1") <= 1.0
    assert set(run.metrics["accuracy_by_lang"]) <= set(SCENARIO_LANGS)
    assert all(0.0 <= v <= 1.0 for v in run.metrics["accuracy_by_kind"].values())
    assert sum(v["n"] for v in run.per_category["lang_kind"].values()) == 6
    hs = run.metrics["urgency"]["high_share"]
    assert hs is None or 0.0 <= hs <= 1.0
    for e in run.examples():
        assert e.pred in {"contradiction", "not_contradiction"} and e.error is None
        assert (e.decided_by != "none") == (e.pred == "contradiction")
        assert e.meta["urgency"] is None or e.pred == "contradiction"
        assert not math.isnan(e.score or 0.0)


@pytest.mark.model
def test_cli_checks_with_the_settings_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `memlab eval alarms` and `memlab eval integrity` read MEMLAB_INTEGRITY_*; the scenarios command ignored them
    from memlab.cli.main import main

    monkeypatch.setenv("MEMLAB_INTEGRITY_JUDGE_NO_CUE_THRESHOLD", "0.99")
    monkeypatch.setenv("MEMLAB_INTEGRITY_MAX_JUDGED_PAIRS", "2")
    assert main(["eval", "scenarios", "--judge", "none", "--limit", "2", "--out", str(tmp_path / "run")]) in (0, 1)
    params = load_run(tmp_path / "run").spec.params
    assert params["judge_no_cue_threshold"] == 0.99 and params["max_judged_pairs"] == 2


def test_public_names_sorted_and_documented() -> None:
    import inspect

    import memlab.eval.scenarios as mod

    assert list(mod.__all__) == sorted(mod.__all__)
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), name
