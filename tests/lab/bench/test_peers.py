"""``memlab bench peers``: the driver, the memlab side, results and the CLI (mem0 parts skip without mem0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from memlab.cli.main import main
from memlab.errors import MissingDependencyError, NotFoundError
from memlab.eval.runs import load_run
from memlab.lab.bench import peers
from memlab.lab.bench.peers import PeersConfig, PeersResult, SystemFigures, load_peers, mem0_config, run_peers
from memlab.testing import FakeEmbedder

needs_mem0 = pytest.mark.skipif(
    not peers.mem0_available(), reason="mem0 is not installed: pip install 'memlab[bench]' to run the comparison"
)


class _ScriptedPeer:
    """A stand-in peer with scripted costs, so the driver's bookkeeping can be checked exactly."""

    def __init__(self, add_ms: float, embed_ms: float, search_ms: float, fill_s_per_item: float = 0.001) -> None:
        self.add_ms, self.embed_ms, self.search_ms, self.fill_s = add_ms, embed_ms, search_ms, fill_s_per_item
        self.n = 0
        self.calls: list[str] = []

    def embed_corpus(self, texts: list[str]) -> dict[str, Any]:
        return {"s": 0.5, "vectors": np.zeros((len(texts), 4), dtype=np.float32)}

    def fill(self, texts: list[str], vectors: Any, want_vectors: bool) -> dict[str, Any]:
        self.n += len(texts)
        return {"s": self.fill_s * len(texts), "vectors": None}

    def add(self, text: str) -> dict[str, float]:
        self.n += 1
        self.calls.append(text)
        return {"ms": self.add_ms, "embed_ms": self.embed_ms}

    def search(self, query: str) -> dict[str, float]:
        return {"ms": self.search_ms, "embed_ms": self.embed_ms, "n": min(10, self.n)}

    def stats(self) -> dict[str, float]:
        return {"n_items": self.n, "disk_mb": self.n / 1000, "rss_mb": 100.0, "peak_rss_mb": 120.0,
                "baseline_rss_mb": 90.0, "persist_ms": 0.0}

    def info(self) -> dict[str, Any]:
        return {"note": "", "checker": None}

    def quality(self) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        pass


def _local_memlab(tmp_path: Path, rep: int, **kw: Any) -> peers._Local:
    system = peers._MemlabSystem(workdir=str(tmp_path / f"m{rep}"), embedder_obj=FakeEmbedder(dim=16), **kw)
    return peers._Local("memlab", system)


# ------------------------------------------------------------------------------------------- config
def test_config_defaults_are_the_issue_sizes() -> None:
    cfg = PeersConfig()
    assert cfg.sizes == (1_000, 10_000, 100_000)
    assert cfg.queries == 200
    assert cfg.systems == ("memlab", "mem0")


@pytest.mark.parametrize("sizes", [(), (10, 5), (10, 10), (1,), (0, 10)])
def test_config_rejects_bad_sizes(sizes: tuple[int, ...]) -> None:
    with pytest.raises(ValidationError, match="strictly increasing"):
        PeersConfig(sizes=sizes)


@pytest.mark.parametrize("systems", [("mem0",), ("memlab", "letta")])
def test_config_rejects_bad_systems(systems: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError, match="memlab"):
        PeersConfig(systems=systems)


def test_config_rejects_unknown_field_and_bad_counts() -> None:
    with pytest.raises(ValidationError):
        PeersConfig(queries=0)
    with pytest.raises(ValidationError):
        PeersConfig(limit=3)  # type: ignore[call-arg]


def test_probe_adds_are_capped_for_tiny_sizes() -> None:
    cfg = PeersConfig(sizes=(4, 1000), probe_adds=100)
    assert cfg.n_probes(4) == 2
    assert cfg.n_probes(1000) == 100


# ------------------------------------------------------------------------------------------- helpers
def test_timed_embedder_bypasses_the_cache_by_default() -> None:
    inner = FakeEmbedder(dim=8)
    emb = peers._TimedEmbedder(inner, cache=False)
    emb.embed(["Abito a Roma"])
    emb.embed(["Abito a Roma"])
    assert inner.n_encoded == 2  # the repeated text was embedded again, as mem0 would
    cached = peers._TimedEmbedder(FakeEmbedder(dim=8), cache=True)
    cached.embed(["Abito a Roma"])
    cached.embed(["Abito a Roma"])
    assert cached.inner.n_encoded == 1
    assert emb.last_ms >= 0.0 and emb.dim == 8


def test_mem0_config_has_the_offline_facts(tmp_path: Path) -> None:
    cfg = mem0_config(tmp_path, "/models/minilm")
    assert cfg["embedder"] == {"provider": "huggingface", "config": {"model": "/models/minilm", "embedding_dims": 384}}
    vs = cfg["vector_store"]["config"]
    assert vs["embedding_model_dims"] == 384 and vs["distance_strategy"] == "cosine"
    assert vs["path"].startswith(str(tmp_path))
    assert cfg["llm"]["config"]["openai_base_url"].startswith("http://127.0.0.1:")
    assert cfg["history_db_path"].startswith(str(tmp_path))


def test_order_rotates_so_each_system_goes_first() -> None:
    names = ["memlab", "memlab+check", "mem0"]
    firsts = [peers._order(names, i)[0] for i in range(3)]
    assert sorted(firsts) == sorted(names)


# ------------------------------------------------------------------------------------------- memlab side
def test_memlab_system_adds_searches_and_reports(tmp_path: Path) -> None:
    system = peers._MemlabSystem(workdir=str(tmp_path), embedder_obj=FakeEmbedder(dim=16))
    try:
        r = system.fill(["Abito a Roma", "I live in Rome", "Mi chiamo Anna"], None, True)
        assert r["vectors"].shape == (3, 16)
        a = system.add("Ho 2 gatti")
        assert a["ms"] >= a["embed_ms"] >= 0.0
        s = system.search("dove abito?")
        assert s["n"] == 4
        st = system.stats()
        assert st["n_items"] == 4
        assert st["disk_mb"] > 0
        assert st["peak_rss_mb"] >= st["baseline_rss_mb"] > 0
    finally:
        system.close()


def test_memlab_quality_keeps_the_version_chain(tmp_path: Path) -> None:
    system = peers._MemlabSystem(workdir=str(tmp_path), embedder_obj=FakeEmbedder(dim=16))
    try:
        rows = system.quality()
    finally:
        system.close()
    by = {(r["scenario"], r["system"]): r for r in rows}
    free = by[("update (it)", "memlab")]
    keyed = by[("update (it)", "memlab (key=preferred_name)")]
    assert (free["items_active"], free["items_total"]) == (2, 2)
    assert (keyed["items_active"], keyed["items_total"]) == (1, 2)
    assert [t for t, _ in keyed["top"]] == ["Chiamami Li Si"]  # the superseded name is not returned
    assert "v1 'Chiamami Zhang San' (superseded)" in keyed["version_chain"]
    assert "v2 'Chiamami Li Si' (active)" in keyed["version_chain"]
    dup = by[("duplicate (en)", "memlab (key=home_city)")]
    assert (dup["items_active"], dup["items_total"]) == (1, 2)
    zh = by[("update (zh)", "memlab (key=preferred_name)")]
    assert [t for t, _ in zh["top"]] == ["叫我李四"]


def test_integrity_variant_reports_why_when_the_judge_is_missing(tmp_path: Path) -> None:
    system = peers._MemlabSystem(workdir=str(tmp_path), embedder_obj=FakeEmbedder(dim=16), integrity=True,
                                 judge="no-such-judge")
    try:
        info = system.info()
        assert info["checker"] is None
        assert info["note"].startswith("memlab add+check: n/a (")
        assert "no-such-judge" in info["note"]
    finally:
        system.close()


def test_integrity_variant_times_the_check(tmp_path: Path) -> None:
    pytest.importorskip("memlab.integrity", reason="the integrity checker (issue 5) is not in this tree yet")
    system = peers._MemlabSystem(workdir=str(tmp_path), embedder_obj=FakeEmbedder(dim=16), integrity=True,
                                 judge="lexical")
    try:
        assert system.info()["checker"] == "SemanticIntegrityChecker", system.info()["note"]
        system.fill(["Sono nato il 12 luglio 1990", "Abito a Roma"], None, False)
        r = system.add("Il mio compleanno è il 15 agosto")
        assert r["check_ms"] >= 0.0 and r["ms"] >= r["check_ms"] + r["embed_ms"] - 1e-9
        rows = system.quality()
        assert all(q["contradiction"] is not None and q["contradiction"].startswith("check: ") for q in rows)
    finally:
        system.close()


def test_driver_runs_the_check_variant_and_fills_it_with_the_same_vectors(tmp_path: Path) -> None:
    pytest.importorskip("memlab.integrity", reason="the integrity checker (issue 5) is not in this tree yet")

    def handles(rep: int, d: Path) -> dict[str, Any]:
        plain = peers._MemlabSystem(workdir=str(d / "a"), embedder_obj=FakeEmbedder(dim=16))
        check = peers._MemlabSystem(workdir=str(d / "b"), embedder_obj=FakeEmbedder(dim=16), integrity=True,
                                    judge="lexical")
        return {"memlab": peers._Local("memlab", plain), "memlab+check": peers._Local("memlab+check", check)}

    cfg = PeersConfig(sizes=(12, 30), queries=2, probe_adds=3, systems=("memlab",), judge="lexical")
    res = run_peers(cfg, workdir=tmp_path, _handles=handles)
    by = {(f.system, f.size): f for f in res.figures}
    assert by[("memlab+check", 30)].n_items == by[("memlab", 30)].n_items == 30
    assert by[("memlab+check", 30)].check_p50_ms is not None
    assert by[("memlab+check", 30)].search_p50_ms is None  # searches are timed once, on the plain store
    assert any(n.startswith("memlab add+check: SemanticIntegrityChecker") for n in res.notes)
    assert "integrity check p50" in res.to_markdown()


# ------------------------------------------------------------------------------------------- driver
def test_driver_interleaves_and_computes_ratios(tmp_path: Path) -> None:
    a = _ScriptedPeer(add_ms=5.0, embed_ms=4.0, search_ms=2.0)
    b = _ScriptedPeer(add_ms=20.0, embed_ms=4.0, search_ms=8.0)
    cfg = PeersConfig(sizes=(20, 60), queries=4, probe_adds=5, systems=("memlab", "mem0"), integrity=False)
    seen: list[int] = []
    res = run_peers(cfg, workdir=tmp_path, on_checkpoint=lambda partial: seen.append(len(partial.figures)),
                    _handles=lambda rep, d: {"memlab": peers._Local("memlab", a), "mem0": peers._Local("mem0", b)})
    assert seen == [2, 4]  # the partial result after each size (what a stopped long run keeps)
    assert a.calls == b.calls  # the same probe sentences went into both
    assert [f.n_items for f in res.figures if f.system == "memlab"] == [20, 60]
    assert [f.n_items for f in res.figures if f.system == "mem0"] == [20, 60]
    assert res.ratio(60, "add_p50_ms") == pytest.approx(5.0 / 20.0)
    assert res.ratio(60, "overhead_p50_ms") == pytest.approx((5.0 - 4.0) / (20.0 - 4.0))
    assert res.ratio(20, "search_p50_ms") == pytest.approx(2.0 / 8.0)
    md = res.to_markdown()
    assert "### N = 60" in md and "| add p50 (ms) |" in md and "0.25" in md


def test_driver_stops_a_system_at_its_budget(tmp_path: Path) -> None:
    fast = _ScriptedPeer(add_ms=1.0, embed_ms=0.5, search_ms=1.0, fill_s_per_item=0.0)
    slow = _ScriptedPeer(add_ms=1.0, embed_ms=0.5, search_ms=1.0, fill_s_per_item=1.0)  # 100 s per fill chunk
    cfg = PeersConfig(sizes=(150, 400), queries=2, probe_adds=2, budget_s=50.0, integrity=False)
    res = run_peers(cfg, workdir=tmp_path, _handles=lambda rep, d: {"memlab": peers._Local("memlab", fast),
                                                                      "mem0": peers._Local("mem0", slow)})
    by = {(f.system, f.size): f for f in res.figures}
    assert by[("memlab", 400)].reached and by[("memlab", 400)].n_items == 400
    assert not by[("mem0", 150)].reached and by[("mem0", 150)].n_items == 100
    assert any("mem0: time budget" in n for n in res.notes)
    assert "not reached" in res.to_markdown()


def test_end_to_end_memlab_only_in_process(tmp_path: Path) -> None:
    cfg = PeersConfig(sizes=(10, 30), queries=3, probe_adds=4, systems=("memlab",), integrity=False, repeats=2)
    res = run_peers(cfg, workdir=tmp_path, _handles=lambda rep, d: {"memlab": _local_memlab(tmp_path, rep)})
    assert {(f.repeat, f.size) for f in res.figures} == {(0, 10), (0, 30), (1, 10), (1, 30)}
    assert all(f.reached and f.n_items == f.size for f in res.figures)
    assert len(res.values("memlab", 30, "add_p50_ms")) == 2
    assert res.quality and all(q.system.startswith("memlab") for q in res.quality)
    out = res.write(tmp_path / "out")
    loaded = load_peers(out)
    assert loaded.figures == res.figures
    assert loaded.spec["task"] == "bench-peers" and loaded.spec["config"]["repeats"] == 2
    run = load_run(out)  # the eval tooling (and the dashboard) read it like any eval run
    assert run.spec.task == "bench-peers"
    assert run.metric() == pytest.approx(res.summary("memlab", 10, "add_p50_ms"))
    assert run.metric("n30_memlab.add_p50_ms_min") == pytest.approx(min(res.values("memlab", 30, "add_p50_ms")))
    assert {e.group for e in run.examples()} == {"memlab", "quality"}
    assert (out / "results.md").read_text().startswith("## memlab vs mem0")
    assert (out / "cost_vs_n.png").stat().st_size > 0
    frame = res.to_pandas()
    assert set(frame["system"]) == {"memlab"} and len(frame) == 4


def test_load_peers_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="peers.json"):
        load_peers(tmp_path)


def test_to_pandas_rejects_unknown_kind() -> None:
    from memlab.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="'kind'"):
        PeersResult(spec={}).to_pandas("examples")


def test_missing_mem0_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "mem0_available", lambda: False)
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlab\[bench\]'"):
        run_peers(PeersConfig(sizes=(10,)))


@needs_mem0
def test_comparison_needs_the_same_embedder() -> None:
    from memlab.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="'embedder'"):
        run_peers(PeersConfig(sizes=(10,), embedder="e5"))


def test_cli_reports_missing_mem0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(peers, "mem0_available", lambda: False)
    assert main(["bench", "peers", "--sizes", "10"]) == 1
    assert "pip install 'memlab[bench]'" in capsys.readouterr().err


def test_cli_help_says_how_to_install_mem0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "peers", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "pip install 'memlab[bench]'" in out and "--sizes" in out and "--budget-s" in out


def test_cli_rejects_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "peers", "--sizes", "100,10"]) == 1
    assert "strictly increasing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "peers", "--sizes", "ten"])


def test_summary_ignores_unreached_rows() -> None:
    res = PeersResult(spec={}, figures=[
        SystemFigures(repeat=0, system="mem0", size=10, reached=False, n_items=5),
        SystemFigures(repeat=0, system="memlab", size=10, reached=True, n_items=10, add_p50_ms=3.0),
    ])
    assert res.summary("mem0", 10, "add_p50_ms") is None
    assert res.ratio(10, "add_p50_ms") is None
    assert res._cell("mem0", 10, "add_p50_ms") == "not reached"


# ------------------------------------------------------------------------------------------- real components
@pytest.mark.model  # runs a real model in a subprocess
@pytest.mark.slow
def test_real_memlab_worker_process(tmp_path: Path) -> None:
    """memlab alone in its worker process, real MiniLM + SQLite + FAISS (no mem0 needed)."""
    cfg = PeersConfig(sizes=(20,), queries=3, probe_adds=3, systems=("memlab",), integrity=False)
    res = run_peers(cfg, workdir=tmp_path)
    (f,) = res.figures
    assert f.reached and f.n_items == 20
    assert f.add_p50_ms is not None and f.embed_p50_ms is not None and f.add_p50_ms >= f.embed_p50_ms
    assert f.peak_rss_mb is not None and f.peak_rss_mb > 0
    assert (tmp_path / "repeat0" / "memlab" / "memlab.db").exists()


@pytest.mark.model  # memlab's MiniLM and judge, and mem0's MiniLM, in the workers
@pytest.mark.subprocess  # each system in its own spawned worker process
@pytest.mark.slow
@needs_mem0
def test_tiny_side_by_side_run_end_to_end(tmp_path: Path) -> None:
    """sizes=50, queries=5: both systems for real, in their own processes, results written."""
    cfg = PeersConfig(sizes=(50,), queries=5, probe_adds=5)
    res = run_peers(cfg, workdir=tmp_path / "work")
    systems = res.systems()
    assert "memlab" in systems and "mem0" in systems
    for s in ("memlab", "mem0"):
        (f,) = [f for f in res.figures if f.system == s]
        assert f.reached and f.n_items == 50
        assert f.search_p50_ms is not None and f.disk_mb is not None and f.disk_mb > 0
    assert res.ratio(50, "add_p50_ms") is not None
    mem0_rows = {q.scenario: q for q in res.quality if q.system.startswith("mem0")}
    assert mem0_rows["duplicate (en)"].items_total == 2  # mem0 with infer=False keeps both copies
    texts = [t for t, _ in mem0_rows["update (en)"].top]
    assert set(texts) == {"Call me Zhang San", "Call me Li Si"}  # both names come back for "what is my name?"
    out = res.write(tmp_path / "out")
    run = json.loads((out / "run.json").read_text())
    assert run["spec"]["mem0_version"] == "2.2.1"
    assert load_run(out).metric() is not None  # primary: the memlab/mem0 add p50 ratio at the first size
    # mem0 wrote nothing outside the run's directory
    assert (tmp_path / "work" / "repeat0" / "mem0" / "faiss").exists()


@pytest.mark.model  # mem0's huggingface embedder runs the real MiniLM (sentence-transformers) in this process
@pytest.mark.slow
@needs_mem0
def test_mem0_bulk_prefill_writes_what_add_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk prefill leaves mem0 in the state its public add(infer=False) would: same payload, same history."""
    monkeypatch.setenv("MEM0_TELEMETRY", "False")  # restored after the test (the system sets them itself too)
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "home"))
    system = peers._Mem0System(workdir=str(tmp_path / "mem0"), fill_mode="bulk")
    try:
        system.fill(["Abito a Roma", "I have 2 cats"], None, False)
        system.add("Mi chiamo Anna")
        store = system.m.vector_store
        by_text = {p["data"]: (i, p) for i, p in store.docstore.items()}
        bulk_id, bulk = by_text["Abito a Roma"]
        add_id, added = by_text["Mi chiamo Anna"]
        assert set(bulk) == set(added)
        assert {k: bulk[k] for k in ("user_id", "role")} == {k: added[k] for k in ("user_id", "role")}
        h_bulk, h_add = system.m.history(bulk_id), system.m.history(add_id)
        assert len(h_bulk) == len(h_add) == 1
        assert set(h_bulk[0]) == set(h_add[0]) and h_bulk[0]["event"] == h_add[0]["event"] == "ADD"
        hits = system.m.search("Dove abito?", filters={"user_id": peers._BENCH_USER}, top_k=10)["results"]
        assert {h["memory"] for h in hits} >= {"Abito a Roma"}
        assert system.stats()["n_items"] == 3
    finally:
        system.close()


def test_config_rejects_an_unknown_embedder_backend() -> None:
    assert PeersConfig().embedder_backend == "fast"
    with pytest.raises(ValidationError):
        PeersConfig(embedder_backend="onnx")


@pytest.mark.model
def test_memlab_worker_runs_minilm_on_the_chosen_backend_and_says_so(tmp_path: Path) -> None:
    """The run's notes name the inference path memlab used (its engine or the sentence-transformers one)."""
    for backend in ("fast", "sentence-transformers"):
        def handles(rep: int, d: Path, backend: str = backend) -> dict[str, Any]:
            system = peers._MemlabSystem(workdir=str(d / "m"), embedder="minilm", embedder_backend=backend)
            assert system.info()["embedder"]["backend"] == backend
            return {"memlab": peers._Local("memlab", system)}

        cfg = PeersConfig(sizes=(12,), queries=2, probe_adds=2, systems=("memlab",), integrity=False,
                          embedder_backend=backend)
        res = run_peers(cfg, workdir=tmp_path / backend, _handles=handles)
        assert any(n.startswith(f"memlab embeds with minilm on its {backend!r} backend") for n in res.notes)
        assert [f.n_items for f in res.figures] == [12]
