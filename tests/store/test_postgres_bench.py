"""``memlab bench integrity --backend postgres`` (and side by side with SQLite) at a smoke size, on the session's
throwaway server (tests/store/conftest.py; skipped loudly without one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.errors import InvalidInputError
from memlab.lab.bench.pg_integrity import HNSW_SETTINGS, recall_at_k, server_memory_mb
from memlab.testing import FakeEmbedder

pytest.importorskip("psycopg", reason="psycopg not installed: pip install -e '.[pgserver]'")


def test_recall_counts_ties_with_the_exact_last_distance() -> None:
    exact = [[(1, 0.1), (2, 0.2), (3, 0.3)], [(7, 0.5)], []]
    approx = [[(1, 0.1), (9, 0.3), (4, 0.9)], [(7, 0.5)], [(5, 0.1)]]
    plain, ties = recall_at_k(exact, approx)
    # query 1: 1 of 3 ids, but id 9 ties the exact 3rd distance; query 2: 1/1; query 3 has no exact hit (skipped)
    assert plain == pytest.approx((1 / 3 + 1) / 2) and ties == pytest.approx((2 / 3 + 1) / 2)


def test_server_memory_of_the_running_server(pg_server) -> None:
    if pg_server is None:
        pytest.skip("PostgreSQL tests skipped: no server")
    mem = server_memory_mb(pg_server.datadir)
    assert mem["processes"] >= 2 and mem["rss_mb"] >= mem["pss_mb"] > 0


def test_bench_postgres_smoke(pg_dsn: str, tmp_path: Path) -> None:
    from memlab.lab.bench.integrity import compare_markdown, run_integrity_bench

    kw = dict(n=4000, n_queries=20, judge="none", embedder=FakeEmbedder(), store_limit=2000, users=4,
              indexes=["Flat"], seed=0)  # fmt: skip
    lines: list[str] = []
    pg = run_integrity_bench(**kw, backend="postgres", pg_dsn=pg_dsn, out=tmp_path / "pg", log=lines.append)
    f = pg.figures
    assert f["backend"] == "postgres" and f["users"] == 4 and f["users_with_real_memories"] == 2
    assert f["pg_copy_s"] > 0 and f["pg_hnsw_build_s"] > 0 and f["pg_hnsw_mb_hnsw_built"] > 0
    assert f["pg_hnsw_mb_loaded"] == 0  # the checks ran before the HNSW index existed
    assert {"faiss", "store_add", "check", "store_add (HNSW in place)"} <= set(pg.stages)
    assert {x["user"] for x in pg.facts} == {"user-00000", "user-00001"}
    rows = pg.indexes
    assert len(rows) == 2 * (1 + len(HNSW_SETTINGS))  # real and random queries: exact, then every HNSW setting
    assert [r["recall_at_10"] for r in rows if r["factory"].startswith("PostgreSQL exact")] == [1.0, 1.0]
    assert all(0 <= r["recall_at_10"] <= r["recall_at_10_ties"] <= 1 for r in rows)
    # the figures so far were logged before the HNSW build, then one line per setting
    assert any("figures so far (exact search)" in x for x in lines) and any("HNSW built" in x for x in lines)
    assert "| recall@10 with ties |" in (tmp_path / "pg" / "bench.md").read_text()
    sq = run_integrity_bench(**kw, backend="sqlite")
    table = compare_markdown([sq, pg])
    assert table.count("\n") == 3 and "| sqlite | 4,000 / 4 |" in table and "| postgres | 4,000 / 4 |" in table


def test_bench_refuses_an_unknown_backend() -> None:
    from memlab.lab.bench.integrity import run_integrity_bench

    with pytest.raises(InvalidInputError, match="backend"):
        run_integrity_bench(n=10, n_queries=1, judge="none", embedder=FakeEmbedder(), backend="mysql")
    with pytest.raises(InvalidInputError, match="store_index"):
        run_integrity_bench(n=10, n_queries=1, judge="none", embedder=FakeEmbedder(), users=2, backend="postgres",
                            store_index="global")


@pytest.mark.model
def test_cli_bench_side_by_side(pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memlab.cli.main import main

    code = main(["bench", "integrity", "--memories", "800", "--users", "4", "--store-limit", "400", "--queries", "4",
                 "--judge", "none", "--embedder", "minilm", "--indexes", "Flat", "--backend", "sqlite,postgres",
                 "--pg-dsn", pg_dsn, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "## backend: sqlite" in out and "## backend: postgres" in out and "## side by side" in out
    assert (tmp_path / "sqlite" / "bench.md").exists() and (tmp_path / "postgres" / "bench.md").exists()
    assert main(["bench", "integrity", "--memories", "10", "--backend", "sqlite,oracle"]) == 2
