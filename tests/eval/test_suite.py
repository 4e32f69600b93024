"""Task registry, suite runner, CI gate, and the eval CLI commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets import default_data_dir
from memlab.errors import InvalidInputError, NotFoundError, UnknownComponentError
from memlab.eval import load_run
from memlab.eval.runs import make_spec, write_run
from memlab.eval.suite import load_suite, run_gate, run_suite
from memlab.eval.tasks import available_tasks, get_task, register_task, resolve_runner

REPO = Path(__file__).resolve().parents[2]


def _toy_task(
    *, out_dir: Path, seed: int, dataset: str = "toy", judge: str | None = None, scale: float = 1.0
):
    spec = make_spec("toy", dataset=dataset, n=1, judge=judge, seed=seed)
    return write_run(
        out_dir,
        spec=spec,
        metrics={"score": 0.5 * scale},
        primary_metric="score",
        examples=[{"id": "1", "gold": "a", "pred": "a"}],
    )


def test_registry() -> None:
    assert "contradiction" in available_tasks()
    register_task("toy", _toy_task)
    assert get_task("toy") is _toy_task
    with pytest.raises(UnknownComponentError, match="Valid names"):
        get_task("nope")
    with pytest.raises(InvalidInputError, match="module:function"):
        register_task("bad", "no_colon")
    with pytest.raises(UnknownComponentError):
        resolve_runner("memlab.eval.suite:does_not_exist")


def test_repo_suite_definition_is_valid() -> None:
    cfg = load_suite(REPO / "eval" / "suite.yaml")
    contradiction = [e for e in cfg.tasks if e.task == "contradiction"]
    datasets = {e.params()["dataset"] for e in contradiction}
    assert {
        "snli",
        "gu_dnli",
        "decode",
        "anli",
        "sick",
        "control",
        "ci_tod",
        "kvpi",
        "cdconv",
        "ocnli",
    } <= datasets
    assert all(set(e.judges or []) >= {"majority", "lexical", "default"} for e in contradiction)
    for e in cfg.tasks:
        get_task(e.task)  # every task of the suite is registered


def test_suite_runs_entries_per_judge(tmp_path: Path) -> None:
    register_task("toy", _toy_task)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: t\nseed: 3\ntasks:\n"
        "  - {task: contradiction, dataset: ci_tod, split: test, limit: 30, judges: [majority, lexical, no-such-judge]}\n"
        "  - {task: toy, dataset: toy, scale: 2.0}\n"
        "  - {task: toy, runner: 'tests.nowhere:nothing'}\n"
    )
    lines: list[str] = []
    result = run_suite(suite, out=tmp_path / "out", echo=lines.append)
    names = [r["name"] for r in result.rows]
    assert names == ["contradiction-ci_tod-test-majority", "contradiction-ci_tod-test-lexical", "toy-toy"]
    assert result.rows[2]["primary"] == 1.0
    assert len(result.skipped) == 1 and "no-such-judge" in result.skipped[0]
    assert len(result.failures) == 1 and not result.ok
    assert all(r["seed"] == 3 for r in result.rows)
    assert load_run(tmp_path / "out" / "contradiction-ci_tod-test-lexical").spec.n == 30
    md = (tmp_path / "out" / "suite.md").read_text()
    assert md.count("| contradiction |") == 2 and "skipped" in md
    assert json.loads((tmp_path / "out" / "suite.json").read_text())["name"] == "t"
    assert len([line for line in lines if not line.startswith("measuring with MEMLAB_*")]) == 3  # one per run
    full = run_suite(suite, out=tmp_path / "full", full=True, only=["ci_tod"], judges=["lexical"])
    assert [r["n"] for r in full.rows] == [168]


def test_suite_file_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_suite(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [{dataset: snli}]\n")
    with pytest.raises(InvalidInputError, match="not a valid suite"):
        load_suite(bad)


def _baseline(tmp_path: Path, value: float, tolerance: float = 0.02, check_tolerance: float | None = None) -> Path:
    p = tmp_path / "base.json"
    extra = {} if check_tolerance is None else {"tolerance": check_tolerance}
    p.write_text(
        json.dumps(
            {
                "name": "t",
                "judge": "lexical",
                "seed": 0,
                "tolerance": tolerance,
                "checks": [
                    {
                        "dataset": "ci_tod",
                        "split": "test",
                        "limit": 60,
                        "metric": "contradiction.f1",
                        "baseline": value,
                        **extra,
                    }
                ],
            }
        )
    )
    return p


def test_gate_passes_then_catches_a_regression(tmp_path: Path) -> None:
    base = _baseline(tmp_path, 0.0)
    first = run_gate(base, out=tmp_path / "g", update=True)
    measured = json.loads(base.read_text())["checks"][0]["baseline"]
    assert first.passed and measured > 0
    assert run_gate(base, out=tmp_path / "g2").passed  # same seed, same judge -> same number
    high = _baseline(tmp_path, measured + 0.05)
    res = run_gate(high, out=tmp_path / "g3")
    assert not res.passed and "FAIL" in res.to_markdown()
    assert main(["eval", "gate", "--baseline", str(high), "--out", str(tmp_path / "g4")]) == 1
    # a check's own tolerance overrides the file's: the same drop of 0.05 passes within 0.06, fails within 0.04
    wide = run_gate(_baseline(tmp_path, measured + 0.05, check_tolerance=0.06), out=tmp_path / "g5")
    assert wide.passed and wide.rows[0]["tolerance"] == 0.06
    assert not run_gate(_baseline(tmp_path, measured + 0.05, check_tolerance=0.04), out=tmp_path / "g6").passed


def test_repo_gate_baseline_is_valid() -> None:
    from memlab.eval.suite import load_baseline

    base = load_baseline(REPO / "eval" / "baselines" / "ci_smoke.json")
    assert {(c.task, c.dataset) for c in base.checks} == {
        ("contradiction", "snli"), ("contradiction", "gu_dnli"), ("contradiction", "rte3_ita"),
        ("integrity", "decode"), ("scenarios", "scenarios"), ("alarms", "locomo")}
    assert all(c.limit and 100 <= c.limit <= 1000 for c in base.checks if c.task != "alarms")
    # alarms replays whole conversations: its limit counts them (one, ~660 messages)
    assert [c.limit for c in base.checks if c.task == "alarms"] == [1]
    # the detector (issue 5) is gated on both sides: finding DECODE contradictions, staying quiet on RCT
    integrity = {(c.split, c.metric, c.higher_is_better) for c in base.checks if c.task == "integrity"}
    assert integrity == {("human-bot", "contradiction.f1", True), ("rct", "false_contradiction_rate", False)}
    # Italian has no contradiction gold: the gate watches the false-contradiction rate, lower is better
    (ita,) = [c for c in base.checks if c.dataset == "rte3_ita"]
    assert ita.metric == "false_contradiction_rate" and not ita.higher_is_better


def test_cli_contradiction_prints_table_and_data_dir_copy_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "eval",
                "contradiction",
                "--dataset",
                "ci_tod",
                "--judge",
                "lexical",
                "--out",
                str(tmp_path / "r1"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| class | precision | recall | f1 |" in out and "run written to" in out
    copy = tmp_path / "copy"
    shutil.copytree(default_data_dir("ci_tod"), copy)
    assert (
        main(
            [
                "eval",
                "contradiction",
                "--dataset",
                "ci_tod",
                "--judge",
                "lexical",
                "--data-dir",
                str(copy),
                "--out",
                str(tmp_path / "r2"),
            ]
        )
        == 0
    )
    a, b = load_run(tmp_path / "r1"), load_run(tmp_path / "r2")
    assert (
        a.metric() == b.metric() and a.metrics["contradiction"]["ci95"] == b.metrics["contradiction"]["ci95"]
    )
    assert a.spec.data_sha256 == b.spec.data_sha256
    assert a.spec.command and "contradiction" in a.spec.command
    assert main(["eval", "show", str(tmp_path / "r1")]) == 0
    assert main(["eval", "compare", str(tmp_path / "r1"), str(tmp_path / "r2")]) == 0
    assert capsys.readouterr().out.count("| contradiction | ci_tod |") >= 2


def test_cli_malformed_file_gives_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "test.tsv").write_bytes(b"premise\thypothesis\tlabel\nA\tB\tmaybe\n")
    rc = main(
        [
            "eval",
            "contradiction",
            "--dataset",
            "snli",
            "--data-dir",
            str(tmp_path),
            "--judge",
            "lexical",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "test.tsv, line 2" in err and "unknown label 'maybe'" in err


def test_cli_datasets_lists_everything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "| kvpi | pairs | zh |" in out and "non-commercial" in out


def test_suite_checks_with_the_environment_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `memlab eval integrity|scenarios|alarms` read MEMLAB_INTEGRITY_*; the suite's integrity and scenarios entries
    # took IntegrityConfig's defaults instead, while its alarms entry read them: one suite, two configurations
    monkeypatch.setenv("MEMLAB_INTEGRITY_JUDGE_NO_CUE_THRESHOLD", "0.99")
    monkeypatch.setenv("MEMLAB_LLM_API_KEY", "sk-not-for-the-report")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: t\nseed: 0\ntasks:\n"
        "  - {task: integrity, dataset: decode, split: human-bot, limit: 3, judge: none, exhaustive: true,"
        " embedder: fake}\n"
    )
    lines: list[str] = []
    result = run_suite(suite, out=tmp_path / "out", echo=lines.append)
    assert result.ok, result.failures
    assert load_run(tmp_path / "out" / "integrity-decode-human-bot").spec.params["judge_no_cue_threshold"] == 0.99
    env = result.environment  # the test session's own MEMLAB_* (conftest) are there too
    assert env["MEMLAB_INTEGRITY_JUDGE_NO_CUE_THRESHOLD"] == "0.99" and env["MEMLAB_LLM_API_KEY"] == "***"
    md = (tmp_path / "out" / "suite.md").read_text()
    assert "environment: MEMLAB_INTEGRITY_JUDGE_NO_CUE_THRESHOLD=0.99" in md and "sk-not" not in md
    assert lines[0].startswith("measuring with MEMLAB_* from the environment") and "sk-not" not in lines[0]
    assert "sk-not" not in (tmp_path / "out" / "suite.json").read_text()

    monkeypatch.delenv("MEMLAB_LLM_API_KEY")
    base = _baseline(tmp_path, 0.0)
    gate = run_gate(base, out=tmp_path / "g")
    assert any("MEMLAB_INTEGRITY_JUDGE_NO_CUE_THRESHOLD=0.99" in n for n in gate.notes)
    assert "note: the baseline was measured with memlab's defaults" in gate.to_markdown()

    monkeypatch.setenv("MEMLAB_INTEGRITY_MAX_JUDGED_PAIRS", "zero")
    with pytest.raises(InvalidInputError, match="MEMLAB_"):
        run_suite(suite, out=tmp_path / "bad")


def test_suite_without_memlab_variables_reports_no_environment(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for k in [k for k in os.environ if k.startswith("MEMLAB_")]:
        monkeypatch.delenv(k)
    register_task("toy", _toy_task)
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: t\nseed: 0\ntasks:\n  - {task: toy, dataset: toy}\n")
    result = run_suite(suite, out=tmp_path / "out")
    assert result.environment == {} and "environment:" not in result.to_markdown()
