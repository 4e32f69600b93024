"""``memlab eval integrity`` / ``memlab bench integrity`` end to end on tiny slices (real files, fake judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlab.errors import InvalidInputError
from memlab.eval.integrity import build_units, evaluate_integrity
from memlab.eval.runs import load_run
from memlab.records import Label
from memlab.testing import ScriptedJudge


@pytest.mark.parametrize(("dataset", "split"), [("decode", "human-bot"), ("decode", "rct"), ("cdconv", "test"),
                                               ("ci_tod", "test"), ("kvpi", "test")])
def test_build_units(dataset: str, split: str) -> None:
    units = build_units(dataset, split, limit=5, seed=0)
    assert len(units) == 5
    assert units == build_units(dataset, split, limit=5, seed=0)  # seeded
    for u in units:
        assert u.new["text"].strip() and u.gold in (Label.CONTRADICTION, Label.NOT_CONTRADICTION)
        assert len(u.memories) == len(u.memory_refs)
    if dataset == "kvpi":
        assert all(m.get("key") for u in units for m in u.memories)
    if split == "rct":
        assert all(u.gold is Label.NOT_CONTRADICTION for u in units)


def test_unknown_dataset_raises() -> None:
    with pytest.raises(InvalidInputError, match="'dataset' parameter"):
        build_units("snli")


def test_fake_embedder_only_in_exhaustive_mode(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="exhaustive"):
        evaluate_integrity("ci_tod", judge="none", embedder="fake", limit=2, out_dir=tmp_path)


def test_eval_run_layout_levels_only(tmp_path: Path) -> None:
    run = evaluate_integrity("decode", "human-bot", judge="none", embedder="fake", exhaustive=True, limit=12,
                             out_dir=tmp_path / "run", n_resamples=20, progress=False)
    data = json.loads((tmp_path / "run" / "run.json").read_text())
    assert data["spec"]["task"] == "integrity" and data["spec"]["n"] == 12
    assert data["spec"]["params"]["levels"] == ["values", "entities", "patterns"]
    assert {"contradiction", "false_contradiction_rate", "evidence_accuracy", "per_class"} <= set(data["metrics"])
    assert set(data["per_level"]) == {"top", "any"}
    rows = [json.loads(x) for x in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(r["decided_by"] in ("entities", "patterns", "none") or r["decided_by"].startswith(
        "values:") for r in rows)
    assert run.metric("contradiction.f1") is not None


@pytest.mark.model
def test_eval_embeds_with_the_product_default_when_none_is_given(tmp_path: Path, minilm: Any) -> None:
    from memlab.config import Settings

    # no embedder argument: the one a user of these settings gets (Settings().embedder, e5 by default), so the
    # detector's figures are the product's, not those of a model it does not use
    run = evaluate_integrity("ci_tod", "test", judge="none", settings=Settings(embedder="minilm"), limit=2,
                             out_dir=tmp_path, n_resamples=10, progress=False)
    assert run.spec.params["embedder"] == minilm.name


@pytest.mark.model
def test_eval_with_a_judge_and_real_minilm(tmp_path: Path, minilm: Any) -> None:
    judge = ScriptedJudge(lambda a, b: 0.9 if "not" in b.lower() else 0.1)
    run = evaluate_integrity("ci_tod", "test", judge=judge, embedder=minilm, limit=4, out_dir=tmp_path,
                             similarity_threshold=0.0, n_resamples=20, progress=False)
    assert run.spec.judge == "scripted" and run.spec.params["levels"] == ["values", "entities", "patterns", "judge"]
    assert run.metrics["mean_candidates"] > 0


def test_cli_eval_and_bench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memlab.cli.main import main

    code = main(["eval", "integrity", "--dataset", "kvpi", "--judge", "none", "--exhaustive", "--embedder", "fake",
                 "--limit", "6", "--out", str(tmp_path / "e")])
    out = capsys.readouterr().out
    assert code == 0 and "f1 (contradiction)" in out and (tmp_path / "e" / "run.json").exists()


@pytest.mark.model
@pytest.mark.slow
def test_bench_tiny(tmp_path: Path, minilm: Any) -> None:
    from memlab.lab.bench.integrity import run_integrity_bench

    res = run_integrity_bench(n=300, n_queries=5, judge=ScriptedJudge(), embedder=minilm, store_limit=200,
                              indexes=["Flat", "HNSW32"], out=tmp_path)
    assert {"embed", "faiss", "entities", "patterns", "judge", "check"} <= set(res.stages)
    assert any("RANDOM unit vectors" in n for n in res.notes)
    assert {r["factory"] for r in res.indexes} == {"Flat", "HNSW32"}
    assert all(r["recall_at_10"] == 1.0 for r in res.indexes if r["factory"] == "Flat")
    # the index table names the embedder whose vectors it searched
    assert {r["vectors"] for r in res.indexes} == {f"real {minilm.name} corpus", "random unit"}
    assert "| stage |" in res.to_markdown() and "| stage |" in (tmp_path / "bench.md").read_text()
    run = load_run(tmp_path)  # an eval run: `memlab eval show/compare` read it
    assert run.spec.task == "bench-integrity" and run.metric() == pytest.approx(res.stages["check"]["p50"])
    assert len([e for e in run.examples() if e.group == "check"]) == 5


def test_task_is_registered_for_the_suite(tmp_path: Path) -> None:
    from memlab.eval.tasks import get_task

    runner = get_task("integrity")
    run = runner(out_dir=tmp_path, seed=0, dataset="decode", split="rct", judge="none", limit=3, exhaustive=True,
                 embedder="fake", n_resamples=10)
    assert run.spec.task == "integrity" and run.spec.n == 3


@pytest.mark.parametrize("store_index", ["partitioned", "global"])
def test_bench_spreads_the_store_over_users(tmp_path: Path, store_index: str) -> None:
    from memlab.lab.bench.integrity import run_integrity_bench
    from memlab.testing import FakeEmbedder

    res = run_integrity_bench(n=650, n_queries=6, judge="none", embedder=FakeEmbedder(), store_limit=200,
                              indexes=["Flat"], users=6, store_index=store_index, out=tmp_path)
    f = res.figures
    # 650 over 6 users: 109,109,108,108,108,108; the 200 real texts fill whole users only (the first one)
    assert f["users"] == 6 and f["memories_per_user"] == 108 and f["users_with_real_memories"] == 1
    assert {x["user"] for x in res.facts} == {"user-00000"}  # checked facts go to users holding real memories
    assert {"faiss", "store_add", "check"} <= set(res.stages)
    assert f["rss_mb_store_open"] > 0 and f["peak_rss_mb"] >= f["rss_mb_after_checks"] > 0
    assert any("RANDOM unit vectors" in n for n in res.notes)
    if store_index == "partitioned":
        assert f["store_index"] == "PartitionedFaissIndex" and f["index_file_mb"] > 0
    else:
        assert f["store_index"] == "FaissIndex (one for all users)" and f["index_file_mb"] == 0
    assert "| rss_mb_store_open |" in (tmp_path / "bench.md").read_text()
    assert not any(r["vectors"] == "random unit" for r in res.indexes)  # no second random set in this mode


def test_bench_refuses_more_users_than_memories() -> None:
    from memlab.lab.bench.integrity import run_integrity_bench
    from memlab.testing import FakeEmbedder

    with pytest.raises(InvalidInputError, match="users=11"):
        run_integrity_bench(n=10, n_queries=1, judge="none", embedder=FakeEmbedder(), users=11)
    with pytest.raises(InvalidInputError, match="store_index"):
        run_integrity_bench(n=10, n_queries=1, judge="none", embedder=FakeEmbedder(), users=2, store_index="ivf")


@pytest.mark.model
def test_cli_bench_with_users(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memlab.cli.main import main

    code = main(["bench", "integrity", "--memories", "400", "--users", "4", "--store-limit", "200", "--queries", "4",
                 "--judge", "none", "--embedder", "minilm", "--indexes", "Flat", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "| users | 4 |" in out and "| users_with_real_memories | 2 |" in out
    assert "| store_index | PartitionedFaissIndex |" in out and "rss_mb_of_the_open_store" in out


def test_bench_reports_judged_pairs_within_the_cap(capsys: pytest.CaptureFixture[str]) -> None:
    from memlab.cli.main import main
    from memlab.lab.bench.integrity import run_integrity_bench
    from memlab.testing import FakeEmbedder

    def bench(**over: Any) -> Any:
        return run_integrity_bench(n=400, n_queries=8, judge=ScriptedJudge(), embedder=FakeEmbedder(), store_limit=400,
                                   indexes=["Flat"], users=2, checker_overrides=over)

    free = bench(max_judged_pairs=None, judge_after_hit=True)
    assert free.figures["max_judged_pairs_of_a_fact"] > 2  # the fact corpus leaves many pairs to the judge
    capped = bench(max_judged_pairs=2, judge_after_hit=True)
    assert 0 < capped.figures["max_judged_pairs_of_a_fact"] <= 2
    assert all(f["n_judged"] <= 2 for f in capped.facts)
    assert {"candidates.search", "candidates.attribute_sql", "candidates.attribute_facts"} <= set(capped.stages)
    from memlab.cli.integrity_cmd import _bound_overrides
    from memlab.cli.main import build_parser

    def overrides(*argv: str) -> dict[str, Any]:
        return _bound_overrides(build_parser().parse_args(["bench", "integrity", *argv]))

    assert overrides() == {}  # the Settings defaults
    assert overrides("--max-judged-pairs", "none", "--judge-after-hit") == {"max_judged_pairs": None,
                                                                           "judge_after_hit": True}
    assert overrides("--max-judged-pairs", "3") == {"max_judged_pairs": 3}
    with pytest.raises(SystemExit):
        main(["bench", "integrity", "--max-judged-pairs", "0"])
    capsys.readouterr()
