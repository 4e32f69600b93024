"""Side-by-side benchmark of memlab against mem0 on the same machine, in the same run (``memlab bench peers``).

What is compared, and how:

* The same seeded sentences (:func:`memlab.lab.bench.corpus.fact_corpus`) go into memlab's :class:`MemoryStore`
  (real SQLite + FAISS, packaged MiniLM) and into mem0 2.2.1 (``add(..., infer=False)``: no LLM call, the same
  packaged MiniLM through its ``huggingface`` provider, its ``faiss`` vector store, a SQLite history).
* Every system runs in **its own worker process** (``multiprocessing`` spawn), so peak RSS is per system and
  mem0's import-time environment reads (``MEM0_TELEMETRY``, ``MEM0_DIR``) are set only inside its worker.
  A third worker holds memlab with the synchronous integrity check (``SemanticIntegrityChecker``), so the
  judge model's memory does not inflate the plain memlab figures.
* The parent drives the workers **interleaved** (fill chunks alternate A/B, each probe add and each query
  goes to every system in a rotating order), so machine drift hits all systems alike. Latencies are timed
  inside the workers around the library call only.
* Embedding is timed on its own: each worker wraps its embedder with a timer, so every add and search
  reports its own embedding time and the store's overhead (``add - embed``) is exact per operation.
  memlab's text-hash embedding cache is bypassed by default (the corpus repeats texts; mem0 has no cache),
  so both systems embed every text (``embedding_cache=True`` turns it back on).
* Per checkpoint size N the store is filled through each system's bulk public path (memlab
  ``add_many``; mem0 has none, so one ``add`` per fact), then ``probe_adds`` single adds and ``queries``
  top-10 searches are timed. mem0 rewrites its whole FAISS index and a JSON docstore on every add, so its
  cost grows with N: each system has a time budget, and a size it cannot reach is reported as such.

The code is split by job: :mod:`memlab.lab.bench.peers_systems` (the compared systems),
:mod:`memlab.lab.bench.peers_workers` (one worker process per system), :mod:`memlab.lab.bench.peers_report`
(figures, tables, plot, run directory) and this module (the run's parameters and the driver); every name is
importable from here.

Example:
    >>> from memlab.lab.bench.peers import PeersConfig
    >>> PeersConfig(sizes=(50,), queries=5).probe_adds
    100
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlab.config import Settings
from memlab.errors import InvalidInputError, MissingDependencyError
from memlab.lab.bench.corpus import fact_corpus
from memlab.lab.bench.peers_report import PeersResult, QualityRow, SystemFigures, load_peers, plot_cost_vs_n
from memlab.lab.bench.peers_systems import (
    BENCH_USER,
    MEM0_INSTALL_HINT,
    SYSTEMS,
    Mem0System,
    MemlabSystem,
    TimedEmbedder,
    mem0_available,
    mem0_config,
)
from memlab.lab.bench.peers_workers import Local, Remote

__all__ = [
    "MEM0_INSTALL_HINT",
    "PeersConfig",
    "PeersResult",
    "QualityRow",
    "SYSTEMS",
    "SystemFigures",
    "load_peers",
    "mem0_available",
    "mem0_config",
    "plot_cost_vs_n",
    "run_peers",
]

log = logging.getLogger(__name__)

_FILL_CHUNK = 100
# the names these had before the systems and the workers moved to their own modules
_BENCH_USER = BENCH_USER
_Local, _Remote = Local, Remote
_MemlabSystem, _Mem0System, _TimedEmbedder = MemlabSystem, Mem0System, TimedEmbedder


# ---------------------------------------------------------------------------------------------- config
class PeersConfig(BaseModel):
    """Parameters of one ``memlab bench peers`` run (written into ``run.json``).

    Attributes:
        sizes: checkpoint store sizes N, increasing (items of the benchmark user).
        queries: top-10 searches timed per size.
        probe_adds: single adds timed per size and system (capped at N // 2 for tiny N).
        seed: corpus seed (facts use ``seed``, queries ``seed + 1``, probe adds ``seed + 2``).
        budget_s: wall-time budget per system (fill + timed operations, summed over sizes).
        repeats: independent runs (fresh stores); figures are reported as median and [min, max].
        systems: which systems to drive (``memlab`` is always included).
        embedding_cache: keep memlab's embedding cache on (off by default: both systems embed every text).
        integrity: also time memlab add + synchronous integrity check (needs ``memlab.integrity``).
        judge: the integrity checker's judge (``memlab.judges.load_judge`` name; ``default`` = memlab's own).
        embedder: memlab embedder name; mem0 gets the same packaged model when it is ``minilm``.
        embedder_backend: how memlab runs ``minilm``: ``fast`` (default, its own engine:
            :class:`~memlab.embedding.bert_engine.BertMeanPoolEngine`, bfloat16 weights where the CPU has them) or
            ``sentence-transformers`` (the float32 path mem0 runs: embedding then costs both systems the same).
        threads: torch and FAISS threads in every worker (``None``: library defaults). 1 by default: on a
            shared machine, multi-threaded torch on oversubscribed cores stalls (measured here: single-text
            MiniLM p50 250 ms with the default threads under load vs 13 ms with one thread).
        mem0_fill: how mem0 is filled between checkpoints. ``add``: one public ``add(infer=False)`` per fact
            (its real ingest path; O(N²) because every add rewrites the index and the JSON docstore).
            ``bulk`` (default): mem0's own batch-persist path, the one its ``infer=True`` pipeline uses
            (``embed_batch`` → one ``vector_store.insert`` → ``db.batch_add_history``), writing the same
            payload and history rows as ``add(infer=False)``. Timed probe adds always use the public ``add``.
        fill_vectors: ``precomputed`` (default): the fill corpus is embedded once per run (by the memlab
            worker, same model) and both systems bulk-insert those vectors (memlab ``add_many(embeddings=)``,
            mem0's batch persist), so filling to N costs one embedding pass for all systems and repeats; the
            fill figure is then the store-only bulk insert rate. ``embed``: each system embeds its own fill.
            Timed adds and searches always embed for real.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    queries: int = Field(200, ge=1)
    probe_adds: int = Field(100, ge=1)
    seed: int = 0
    budget_s: float = Field(1_200.0, gt=0)
    repeats: int = Field(1, ge=1)
    systems: tuple[str, ...] = ("memlab", "mem0")
    embedding_cache: bool = False
    integrity: bool = True
    embedder: str = "minilm"
    embedder_backend: Literal["fast", "sentence-transformers"] = "fast"
    threads: int | None = Field(1, ge=1)
    judge: str = "default"
    mem0_fill: Literal["bulk", "add"] = "bulk"
    fill_vectors: Literal["precomputed", "embed"] = "precomputed"

    @field_validator("sizes")
    @classmethod
    def _check_sizes(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any((not isinstance(n, int)) or n < 2 for n in v) or list(v) != sorted(set(v)):
            raise ValueError(f"must be strictly increasing ints >= 2. Got {v!r} instead.")
        return v

    @field_validator("systems")
    @classmethod
    def _check_systems(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [s for s in v if s not in ("memlab", "mem0")]
        if bad or "memlab" not in v:
            raise ValueError(f"must name 'memlab' and optionally 'mem0'. Got {v!r} instead.")
        return tuple(dict.fromkeys(v))

    def n_probes(self, size: int) -> int:
        """Probe adds timed at checkpoint ``size``."""
        return max(1, min(self.probe_adds, size // 2))


def _pct(xs: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) if len(xs) else None


# ---------------------------------------------------------------------------------------------- driver
def _spec(config: PeersConfig) -> dict[str, Any]:
    def version(pkg: str) -> str | None:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    commit, dirty = None, None
    try:
        root = Path(__file__).resolve().parents[2]
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                                    timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "task": "bench-peers",
        "task_version": 1,
        "config": config.model_dump(mode="json"),
        "seed": config.seed,
        "corpus": "memlab.lab.bench.corpus.fact_corpus",
        "created_at": datetime.now(UTC).isoformat(),
        "memlab_version": version("memlab"),
        "git_commit": commit,
        "git_dirty": dirty,
        "packages": {p: version(p) for p in ("mem0ai", "faiss-cpu", "torch", "sentence-transformers",
                                              "transformers", "numpy", "psutil")},
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
    }


def run_peers(
    config: PeersConfig | None = None,
    *,
    settings: Settings | None = None,
    workdir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    on_checkpoint: Callable[[PeersResult], None] | None = None,
    _handles: Callable[[int, Path], dict[str, Any]] | None = None,
) -> PeersResult:
    """Run the side-by-side benchmark and return its figures (call ``result.write(dir)`` to save them).

    Args:
        config: the run parameters (defaults: sizes 1k/10k/100k, 200 queries, memlab and mem0).
        settings: memlab settings for the integrity checker (built once at the edge; defaults without
            reading the environment).
        workdir: where the stores go (default: a temporary directory, removed afterwards).
        progress: called with one-line progress messages.
        on_checkpoint: called with the partial result after every size (e.g. to save it, so a long run
            that is stopped keeps what it measured).

    Returns:
        The :class:`PeersResult`.

    Raises:
        MissingDependencyError: mem0 is requested and not installed (the message gives the pip command).
    """
    config = config or PeersConfig()
    say = progress or (lambda msg: log.info(msg))
    # scripted handles (tests) stand in for the real systems: only real mem0 workers need the package
    if "mem0" in config.systems and _handles is None and not mem0_available():
        raise MissingDependencyError("mem0ai", "bench")
    if "mem0" in config.systems and config.embedder != "minilm":
        raise InvalidInputError(
            f"The 'embedder' parameter of PeersConfig must be 'minilm' when comparing with mem0 (both systems must "
            f"embed with the same packaged model). Got {config.embedder!r} instead.")
    result = PeersResult(spec=_spec(config))
    settings = settings if settings is not None else Settings.model_construct()
    tmp = tempfile.TemporaryDirectory(prefix="memlab-peers-") if workdir is None else None
    root = Path(tmp.name if tmp is not None else workdir)  # type: ignore[union-attr,arg-type]
    shared: dict[str, Any] = {}
    try:
        for rep in range(config.repeats):
            rep_dir = root / f"repeat{rep}"
            if rep_dir.exists():
                shutil.rmtree(rep_dir)
            handles = _handles(rep, rep_dir) if _handles is not None else _start_workers(config, settings, rep_dir, say)
            try:
                _run_one(config, rep, handles, result, say, with_quality=(rep == 0), on_checkpoint=on_checkpoint,
                         shared=shared)
            finally:
                for h in handles.values():
                    h.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    return result


def _start_workers(config: PeersConfig, settings: Settings, rep_dir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    handles: dict[str, Any] = {}
    common = {"embedder": config.embedder, "embedding_cache": config.embedding_cache, "settings": settings,
              "judge": config.judge, "embedder_backend": config.embedder_backend}
    th = config.threads
    try:
        say("starting worker: memlab")
        handles["memlab"] = Remote("memlab", "memlab", dict(common, workdir=str(rep_dir / "memlab")), th)
        if config.integrity:
            say("starting worker: memlab+check")
            handles["memlab+check"] = Remote(
                "memlab+check", "memlab", dict(common, workdir=str(rep_dir / "memlab_check"), integrity=True), th)
        if "mem0" in config.systems:
            say("starting worker: mem0")
            model_path = None  # the packaged MiniLM, the model memlab's "minilm" embedder loads
            handles["mem0"] = Remote("mem0", "mem0", {"workdir": str(rep_dir / "mem0"), "model_path": model_path,
                                                     "fill_mode": config.mem0_fill}, th)
    except BaseException:
        for h in handles.values():
            h.close()
        raise
    return handles


def _order(names: list[str], i: int) -> list[str]:
    """Rotate ``names`` by ``i`` (each system goes first equally often)."""
    k = i % len(names)
    return names[k:] + names[:k]


def _run_one(config: PeersConfig, rep: int, handles: dict[str, Any], result: PeersResult,
             say: Callable[[str], None], *, with_quality: bool,
             on_checkpoint: Callable[[PeersResult], None] | None = None,
             shared: dict[str, Any] | None = None) -> None:
    shared = {} if shared is None else shared  # state kept across repeats (the fill corpus vectors)
    names = _live_systems(handles, result)
    if with_quality:
        _run_quality(handles, names, result, say)
    run = _Repeat(config, rep, handles, names, result, say)
    if config.fill_vectors == "precomputed":
        run.corpus_vecs = _corpus_vectors(run, shared)
    for size in config.sizes:
        run.measure(size)
        say(f"[repeat {rep}] N={size:,}: done")
        if on_checkpoint is not None:
            on_checkpoint(result)


def _live_systems(handles: dict[str, Any], result: PeersResult) -> list[str]:
    """The systems to drive: the checked memlab worker is closed and left out when it has no checker."""
    names = list(handles)
    emb = handles["memlab"].call("info").get("embedder", {})
    if emb.get("backend"):
        note = (f"memlab embeds with {emb.get('name')} on its {emb['backend']!r} backend"
                + (f" ({emb['dtype']} weights)" if emb.get("dtype") else "")
                + (f", search queries on {emb['query_backend']!r}" if emb.get("query_backend", "same") != "same" else "")
                + ("; mem0 with sentence-transformers (float32), same weights" if "mem0" in handles else ""))
        if note not in result.notes:
            result.notes.append(note)
    if "memlab+check" in handles:
        info = handles["memlab+check"].call("info")
        if info["note"] and info["note"] not in result.notes:
            result.notes.append(info["note"])
        if info["checker"] is None:
            handles.pop("memlab+check").close()
            names.remove("memlab+check")
    return names


def _run_quality(handles: dict[str, Any], names: list[str], result: PeersResult, say: Callable[[str], None]) -> None:
    """The quality scenarios (duplicates, updates); memlab's are run by its checked worker when there is one."""
    say("quality scenarios (duplicates, updates)")
    for name in names:
        if name == "memlab+check" or (name == "memlab" and "memlab+check" in names):
            continue
        rows = handles[name].call("quality")
        result.quality.extend(QualityRow(**r) for r in rows)
    if "memlab+check" in names:
        rows = handles["memlab+check"].call("quality")
        result.quality.extend(QualityRow(**r) for r in rows)


def _corpus_vectors(run: _Repeat, shared: dict[str, Any]) -> Any:
    """The fill corpus's vectors, embedded once (memlab worker, batched) and kept in ``shared`` across repeats."""
    max_n = run.config.sizes[-1]
    if "vectors" not in shared:
        run.say(f"embedding the fill corpus once ({max_n:,} texts, memlab worker)")
        r = run.handles["memlab"].call("embed_corpus", run.texts)
        shared.update(vectors=r["vectors"], s=r["s"])
        run.result.notes.append(f"fill corpus embedded once: {max_n:,} texts in {r['s']:.1f} s "
                                f"({max_n / r['s']:.0f} texts/s, batched); both systems bulk-insert these vectors")
    return shared["vectors"]


class _Repeat:
    """One repeat of the size sweep: the systems' state (items inside, busy time, budget stops) across sizes."""

    def __init__(self, config: PeersConfig, rep: int, handles: dict[str, Any], names: list[str],
                 result: PeersResult, say: Callable[[str], None]) -> None:
        self.config, self.rep, self.handles, self.names, self.result, self.say = (
            config, rep, handles, names, result, say)
        self.texts = fact_corpus(config.sizes[-1], seed=config.seed)
        self.queries = fact_corpus(config.queries, seed=config.seed + 1)
        self.probes = fact_corpus(sum(config.n_probes(n) for n in config.sizes), seed=config.seed + 2)
        self.fillers = [n for n in names if n != "memlab+check"]
        self.corpus_vecs: Any = None
        self.busy = dict.fromkeys(names, 0.0)
        self.stopped: dict[str, int] = {}
        self.n_in = dict.fromkeys(names, 0)  # corpus texts already inside each system
        self.probe_pos = 0

    def _stop(self, s: str) -> None:
        self.stopped[s] = self.n_in[s] + self.probe_pos
        self.result.notes.append(f"{s}: time budget {self.config.budget_s:.0f}s reached at {self.stopped[s]:,} "
                                 f"items (repeat {self.rep}); larger sizes not measured.")

    def measure(self, size: int) -> None:
        """Fill every system up to ``size``, time the probe adds and the searches, and record the figures."""
        for s in self.names:
            if s not in self.fillers and s not in self.stopped and self.busy[s] > self.config.budget_s:
                self._stop(s)
        n_probe = self.config.n_probes(size)
        target = size - n_probe - self.probe_pos  # corpus facts so that, after this size's probes, it holds `size`
        self.say(f"[repeat {self.rep}] N={size:,}: filling")
        fill_s, filled = self._fill(target)
        if "memlab+check" in self.names:
            self.n_in["memlab+check"] = self.n_in["memlab"]
            if "memlab" in self.stopped:
                self.stopped.setdefault("memlab+check", self.stopped["memlab"])
        live = [s for s in self.names if s not in self.stopped]
        if "memlab+check" in live:  # not timed: the bulk fill skipped the check (see MemlabSystem.warm)
            self.handles["memlab+check"].call("warm")
        self.say(f"[repeat {self.rep}] N={size:,}: {n_probe} probe adds, {len(self.queries)} searches "
                 f"({', '.join(live)})")
        lat, parts = self._probe(live, n_probe)
        for s in self.names:
            if s not in live:
                self.result.figures.append(SystemFigures(repeat=self.rep, system=s, size=size, reached=False,
                                                         n_items=self.stopped[s], note="time budget reached"))
            else:
                self.result.figures.append(self._figures(s, size, lat[s], parts.get(s, {}), fill_s[s], filled[s]))

    def _fill(self, target: int) -> tuple[dict[str, float], dict[str, int]]:
        """Bulk-fill the systems up to ``target`` corpus facts in alternating chunks; seconds and items per system."""
        config, handles = self.config, self.handles
        fill_s = dict.fromkeys(self.names, 0.0)
        filled = dict.fromkeys(self.names, 0)
        # big chunks keep mem0's per-call index/docstore rewrite from dominating a bulk fill; small ones keep
        # the budget check responsive when mem0 is filled through its public add
        chunk_size = _FILL_CHUNK if config.mem0_fill == "add" else max(_FILL_CHUNK, min(5_000, target // 20))
        step = 0
        while any(self.n_in[s] < target for s in self.fillers if s not in self.stopped):
            for s in _order(self.fillers, step):
                if s in self.stopped or self.n_in[s] >= target:
                    continue
                if self.busy[s] > config.budget_s:
                    self._stop(s)
                    continue
                start = self.n_in[s]
                chunk = self.texts[start : min(target, start + chunk_size)]
                feed_check = s == "memlab" and "memlab+check" in self.names and "memlab+check" not in self.stopped
                given = None if self.corpus_vecs is None else self.corpus_vecs[start : start + len(chunk)]
                r = handles[s].call("fill", chunk, given, feed_check and given is None)
                if given is not None:
                    r["vectors"] = given
                if feed_check:
                    handles["memlab+check"].call("fill", chunk, r["vectors"], False)
                self.n_in[s] += len(chunk)
                filled[s] += len(chunk)
                fill_s[s] += r["s"]
                self.busy[s] += r["s"]
            step += 1
        return fill_s, filled

    def _probe(self, live: list[str], n_probe: int) -> tuple[dict[str, dict[str, list[float]]],
                                                            dict[str, dict[str, list[float]]]]:
        """Time ``n_probe`` single adds and the searches, interleaved; latencies and add-path parts per system."""
        lat: dict[str, dict[str, list[float]]] = {s: {"ms": [], "embed_ms": [], "check_ms": [], "s_ms": [],
                                                      "s_embed_ms": []} for s in live}
        parts: dict[str, dict[str, list[float]]] = {}
        for i, text in enumerate(self.probes[self.probe_pos : self.probe_pos + n_probe]):
            for s in _order(live, i):
                r = self.handles[s].call("add", text)
                lat[s]["ms"].append(r["ms"])
                lat[s]["embed_ms"].append(r["embed_ms"])
                if "check_ms" in r:
                    lat[s]["check_ms"].append(r["check_ms"])
                for k, v in r.get("parts", {}).items():
                    parts.setdefault(s, {}).setdefault(k, []).append(v)
                self.busy[s] += r["ms"] / 1000
        self.probe_pos += n_probe
        search_sys = [s for s in live if s != "memlab+check"]
        for i, q in enumerate(self.queries):
            for s in _order(search_sys, i):
                r = self.handles[s].call("search", q)
                lat[s]["s_ms"].append(r["ms"])
                lat[s]["s_embed_ms"].append(r["embed_ms"])
                self.busy[s] += r["ms"] / 1000
        return lat, parts

    def _figures(self, s: str, size: int, d: dict[str, list[float]], parts: dict[str, list[float]],
                 fill_s: float, filled: int) -> SystemFigures:
        """One system's figures at ``size`` (latency percentiles, store overhead, disk and memory)."""
        st = self.handles[s].call("stats")
        over = [a - e for a, e in zip(d["ms"], d["embed_ms"], strict=True)]
        if d["check_ms"]:
            over = [o - c for o, c in zip(over, d["check_ms"], strict=True)]
        s_over = [a - e for a, e in zip(d["s_ms"], d["s_embed_ms"], strict=True)]
        filler = s in self.fillers
        return SystemFigures(
            repeat=self.rep, system=s, size=size, reached=True, n_items=int(st["n_items"]),
            fill_s=fill_s if filler else None,
            fill_items_per_s=(filled / fill_s) if filler and fill_s > 0 else None,
            add_p50_ms=_pct(d["ms"], 50), add_p95_ms=_pct(d["ms"], 95),
            embed_p50_ms=_pct(d["embed_ms"], 50), embed_p95_ms=_pct(d["embed_ms"], 95),
            overhead_p50_ms=_pct(over, 50), overhead_p95_ms=_pct(over, 95),
            check_p50_ms=_pct(d["check_ms"], 50), check_p95_ms=_pct(d["check_ms"], 95),
            search_p50_ms=_pct(d["s_ms"], 50), search_p95_ms=_pct(d["s_ms"], 95),
            search_overhead_p50_ms=_pct(s_over, 50),
            parts_p50_ms={k: float(np.percentile(v, 50)) for k, v in parts.items()},
            persist_ms=st["persist_ms"], disk_mb=st["disk_mb"], wal_mb=st.get("wal_mb"),
            baseline_rss_mb=st["baseline_rss_mb"], rss_mb=st["rss_mb"], peak_rss_mb=st["peak_rss_mb"],
        )
