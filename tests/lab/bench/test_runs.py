"""Every benchmark writes an eval run: ``load_run`` reads it, its task is ``bench-<name>``, its headline metric exists,
and ``memlab eval show/compare`` print it. Real stores, real loopback server, fake embedder (no model) unless marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.embedding import register_embedder
from memlab.errors import NotFoundError
from memlab.eval.runs import load_run
from memlab.lab.bench.judge import JudgeBenchResult
from memlab.lab.bench.runs import BENCH_MARKDOWN, write_bench_run
from memlab.testing import FakeEmbedder

_FAKE = "fake-bench"


def _fake() -> FakeEmbedder:
    emb = FakeEmbedder(dim=32)
    emb.name = _FAKE
    return emb


@pytest.fixture(autouse=True)
def _fake_registered() -> None:
    register_embedder(_FAKE, _fake)


def test_write_bench_run_refuses_a_headline_it_does_not_have(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="search.p99_ms"):
        write_bench_run(tmp_path, "demo", params={}, seed=0, n=1, metrics={"search": {"p50_ms": 1.0}},
                        primary_metric="search.p99_ms")
    assert not (tmp_path / "run.json").exists()


def test_bench_store_writes_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "store"
    assert main(["bench", "store", "--memories", "60", "--queries", "5", "--embedder", _FAKE, "--seed", "3",
                 "--out", str(out)]) == 0
    run = load_run(out)
    assert run.spec.task == "bench-store" and run.spec.n == 60 and run.spec.seed == 3
    assert run.spec.params["embedder"] == _FAKE
    assert run.metric() == run.metric("search_top10_p50_ms") > 0
    assert run.metric("add_many_items_per_s (precomputed vectors)") > 0
    groups = [e.group for e in run.examples()]
    assert groups.count("search") == 5 and groups.count("add_single") == 200
    assert all(e.latency_ms is not None and e.latency_ms > 0 for e in run.examples())
    assert "store benchmark: N=60" in (out / BENCH_MARKDOWN).read_text(encoding="utf-8")
    assert f"wrote {out}" in capsys.readouterr().out


def test_bench_agent_writes_a_run(tmp_path: Path) -> None:
    out = tmp_path / "agent"
    assert main(["bench", "agent", "--messages", "3", "--embedder", _FAKE, "--judge", "lexical",
                 "--out", str(out)]) == 0
    run = load_run(out)
    assert run.spec.task == "bench-agent" and run.spec.n == 3 and run.spec.judge == "lexical"
    assert run.primary_metric == "with_agent.turn_p50_ms" and run.metric() > 0
    assert run.metric("inline_check.checks_total") >= 1
    by_mode: dict[str, int] = {}
    for e in run.examples():
        by_mode[e.group or ""] = by_mode.get(e.group or "", 0) + 1
    assert by_mode == {"no_agent": 3, "with_agent": 3, "inline_check": 3}


def test_bench_integrity_writes_a_run(tmp_path: Path) -> None:
    out = tmp_path / "integrity"
    assert main(["bench", "integrity", "--memories", "80", "--queries", "4", "--store-limit", "50",
                 "--embedder", _FAKE, "--judge", "lexical", "--indexes", "Flat;HNSW32", "--out", str(out)]) == 0
    run = load_run(out)
    assert run.spec.task == "bench-integrity" and run.spec.n == 80 and run.spec.params["store_n"] == 50
    assert run.metric() == run.metric("stages.check.p50") > 0
    assert run.metric("figures.mean_candidates") >= 0
    facts = [e for e in run.examples() if e.group == "check"]
    assert len(facts) == 4 and all(e.pred in {"contradiction", "none"} for e in facts)
    indexes = {e.id for e in run.examples() if e.group == "index"}
    assert indexes == {f"index/real {_FAKE} corpus/Flat", f"index/real {_FAKE} corpus/HNSW32",
                       "index/random unit/Flat", "index/random unit/HNSW32"}
    assert any("RANDOM unit vectors" in n for n in run.notes)


def test_bench_serve_writes_a_run(tmp_path: Path) -> None:
    out = tmp_path / "serve"
    assert main(["bench", "serve", "--requests", "4", "--clients", "2", "--embedder", _FAKE, "--judge", "lexical",
                 "--out", str(out)]) == 0
    run = load_run(out)
    assert run.spec.task == "bench-serve" and run.spec.n == 4 and run.spec.params["clients"] == 2
    assert run.spec.command == "memlab bench serve --requests 4 --clients 2"
    assert run.metric() == run.metric("add.requests_per_s") > 0
    assert [e.id for e in run.examples()] == ["add", "search", "turn"]
    assert all(run.metric(f"{op}.errors") == 0 for op in ("add", "search", "turn"))


def test_judge_bench_result_writes_a_run(tmp_path: Path) -> None:
    res = JudgeBenchResult(n_pairs=10, batch_size=4, num_threads=1, pairs_per_second={"fp32": 50.0, "int8": 80.0},
                           load_seconds={"fp32": 0.5, "int8": 0.7}, label_agreement=0.9, max_probability_gap=0.1,
                           mean_chars=40.0, seed=0)
    run = load_run(res.write(tmp_path, command="memlab bench judge --pairs 10"))
    assert run.spec.task == "bench-judge" and run.spec.n == 10 and run.spec.command == "memlab bench judge --pairs 10"
    assert run.metric() == 50.0 and run.metric("pairs_per_second.int8") == 80.0
    assert {e.id: e.meta["load_seconds"] for e in run.examples()} == {"fp32": 0.5, "int8": 0.7}


@pytest.mark.model
def test_bench_judge_cli_writes_a_run(tiny_nli: Path, tmp_path: Path) -> None:
    from memlab.lab.judge_training import TrainJudgeConfig, train_judge

    weights = tmp_path / "judge"
    config = TrainJudgeConfig.model_validate({
        "seed": 0, "base_model": str(tiny_nli), "train": [{"dataset": "snli", "split": "dev", "limit": 16}],
        "dev": [], "holdout_size": 0, "synthetic_train": 0, "synthetic_dev": 0, "max_length": 32,
        "batch_size": 8, "max_steps": 1, "quantize": None,
    })
    train_judge(config, weights, progress=False)
    out = tmp_path / "bench"
    assert main(["bench", "judge", "--weights", str(weights), "--pairs", "6", "--batch-size", "4", "--threads", "1",
                 "--out", str(out)]) == 0
    run = load_run(out)
    assert run.spec.task == "bench-judge" and run.spec.n == 6 and run.spec.params["weights"] == str(weights)
    assert run.metric() > 0 and 0.0 <= run.metric("label_agreement") <= 1.0
    assert "--weights" in (run.spec.command or "")


def test_eval_show_and_compare_read_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, judge = tmp_path / "store", tmp_path / "judge"
    assert main(["bench", "store", "--memories", "20", "--queries", "3", "--embedder", _FAKE,
                 "--out", str(store)]) == 0
    JudgeBenchResult(n_pairs=4, batch_size=2, num_threads=1, pairs_per_second={"fp32": 12.5}, load_seconds={"fp32": 1.0},
                     label_agreement=1.0, max_probability_gap=0.0, mean_chars=30.0).write(judge)
    capsys.readouterr()
    assert main(["eval", "show", str(store)]) == 0
    assert "bench-store" in capsys.readouterr().out
    assert main(["eval", "compare", str(store), str(judge)]) == 0
    table = capsys.readouterr().out
    assert "| bench-store |" in table and "search_top10_p50_ms" in table
    assert "| bench-judge |" in table and "pairs_per_second.fp32" in table and "12.5" in table
