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

Example:
    >>> from memlab.lab.bench.peers import PeersConfig
    >>> PeersConfig(sizes=(50,), queries=5).probe_adds
    100
"""

from __future__ import annotations

import logging
import math
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlab.config import Settings
from memlab.errors import BackendError, InvalidInputError, MissingDependencyError, NotFoundError
from memlab.lab.bench.corpus import fact_corpus

__all__ = [
    "MEM0_INSTALL_HINT",
    "PeersConfig",
    "PeersResult",
    "QualityRow",
    "SystemFigures",
    "load_peers",
    "mem0_available",
    "plot_cost_vs_n",
    "run_peers",
]

log = logging.getLogger(__name__)

#: How to get the optional comparison target.
MEM0_INSTALL_HINT = "pip install 'memlab[bench]'  (mem0ai==2.2.1, psutil)"
#: Names of the systems a run can drive.
SYSTEMS = ("memlab", "memlab+check", "mem0")
_BENCH_USER = "bench-user"
_FILL_CHUNK = 100


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


# ---------------------------------------------------------------------------------------------- results
class SystemFigures(BaseModel):
    """Figures of one system at one checkpoint size in one repeat (times in ms unless named ``_s``).

    ``overhead`` is an add's own time minus the embedding time inside that same add: the store's cost.
    """

    model_config = ConfigDict(extra="forbid")

    repeat: int
    system: str
    size: int
    reached: bool
    n_items: int
    note: str = ""
    fill_s: float | None = None
    fill_items_per_s: float | None = None
    add_p50_ms: float | None = None
    add_p95_ms: float | None = None
    embed_p50_ms: float | None = None
    embed_p95_ms: float | None = None
    overhead_p50_ms: float | None = None
    overhead_p95_ms: float | None = None
    check_p50_ms: float | None = None
    check_p95_ms: float | None = None
    parts_p50_ms: dict[str, float] = Field(default_factory=dict)
    search_p50_ms: float | None = None
    search_p95_ms: float | None = None
    search_overhead_p50_ms: float | None = None
    persist_ms: float | None = None
    disk_mb: float | None = None
    wal_mb: float | None = None
    baseline_rss_mb: float | None = None
    rss_mb: float | None = None
    peak_rss_mb: float | None = None


class QualityRow(BaseModel):
    """What one system holds and returns in one duplicate/update scenario."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    system: str
    added: list[str]
    query: str
    items_active: int
    items_total: int
    top: list[tuple[str, float]]
    version_chain: str | None = None
    contradiction: str | None = None


#: Rows of the per-size table: (SystemFigures field, label).
_TABLE_METRICS: list[tuple[str, str]] = [
    ("add_p50_ms", "add p50 (ms)"),
    ("add_p95_ms", "add p95 (ms)"),
    ("embed_p50_ms", "  of which embedding p50 (ms)"),
    ("overhead_p50_ms", "  store overhead p50 (ms)"),
    ("overhead_p95_ms", "  store overhead p95 (ms)"),
    ("check_p50_ms", "  integrity check p50 (ms)"),
    ("check_p95_ms", "  integrity check p95 (ms)"),
    ("search_p50_ms", "search top-10 p50 (ms)"),
    ("search_p95_ms", "search top-10 p95 (ms)"),
    ("search_overhead_p50_ms", "  search overhead p50 (ms)"),
    ("fill_items_per_s", "bulk fill (items/s; see fill_vectors)"),
    ("persist_ms", "persist/flush (ms)"),
    ("disk_mb", "on-disk size (MB)"),
    ("wal_mb", "  of which SQLite WAL/SHM (MB)"),
    ("baseline_rss_mb", "RSS after model load (MB)"),
    ("peak_rss_mb", "peak RSS (MB)"),
]


class PeersResult(BaseModel):
    """Everything one run measured (saved as ``peers.json``; ``run.json`` is its eval-run view).

    Attributes:
        spec: task, config, seed, versions, git commit, machine.
        figures: one row per (repeat, system, size).
        quality: duplicate and update scenarios per system.
        notes: why something is ``n/a`` (missing component, budget reached ...).
    """

    model_config = ConfigDict(extra="forbid")

    spec: dict[str, Any]
    figures: list[SystemFigures] = Field(default_factory=list)
    quality: list[QualityRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    # -- views ---------------------------------------------------------------------------------
    def systems(self) -> list[str]:
        """Systems present in the figures, in canonical order."""
        seen = {f.system for f in self.figures}
        return [s for s in SYSTEMS if s in seen]

    def sizes(self) -> list[int]:
        """Checkpoint sizes, increasing."""
        return sorted({f.size for f in self.figures})

    def values(self, system: str, size: int, field: str) -> list[float]:
        """The values of ``field`` over repeats (reached checkpoints only)."""
        out = []
        for f in self.figures:
            if f.system == system and f.size == size and f.reached:
                v = getattr(f, field)
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    out.append(float(v))
        return out

    def summary(self, system: str, size: int, field: str) -> float | None:
        """Median of ``field`` over repeats, or None when not measured."""
        vals = self.values(system, size, field)
        return float(np.median(vals)) if vals else None

    def ratio(self, size: int, field: str, a: str = "memlab", b: str = "mem0") -> float | None:
        """``a / b`` of the medians of ``field`` (below 1: ``a`` is cheaper)."""
        x, y = self.summary(a, size, field), self.summary(b, size, field)
        if x is None or y is None or y == 0:
            return None
        return x / y

    def to_pandas(self, kind: str = "figures") -> Any:
        """Tidy DataFrame of ``figures`` or ``quality`` (imports pandas lazily)."""
        import pandas as pd

        if kind == "figures":
            return pd.DataFrame([f.model_dump() for f in self.figures])
        if kind == "quality":
            return pd.DataFrame([q.model_dump() for q in self.quality])
        raise InvalidInputError(f"The 'kind' parameter of to_pandas must be 'figures' or 'quality'. Got {kind!r} instead.")

    def _cell(self, system: str, size: int, field: str) -> str:
        vals = self.values(system, size, field)
        if not vals:
            reached = [f for f in self.figures if f.system == system and f.size == size]
            if reached and not any(f.reached for f in reached):
                return "not reached"
            return "n/a"
        med = float(np.median(vals))
        s = _fmt(med)
        if len(vals) > 1:
            s += f" [{_fmt(min(vals))}–{_fmt(max(vals))}]"
        return s

    def to_markdown(self) -> str:
        """Per-size tables (median [min–max] over repeats), the ratios, the quality table and the notes."""
        cfg = self.spec.get("config", {})
        systems = self.systems()
        out = [
            f"## memlab vs mem0 — side by side (repeats={cfg.get('repeats', 1)}, queries={cfg.get('queries')}, "
            f"probe adds={cfg.get('probe_adds')}, seed={cfg.get('seed')}, "
            f"embedding cache {'on' if cfg.get('embedding_cache') else 'off'})",
            "",
            "Lower is better except bulk fill. Cells: median over repeats [min–max]. memlab/mem0 < 1: memlab cheaper.",
            "",
            f"Method: each system in its own process ({cfg.get('threads') or 'default'} torch/FAISS thread(s)), calls "
            "interleaved in rotating order, timed inside the worker around the library call. Both embed every text "
            "with the same packaged MiniLM weights (each through its own inference path, see the notes); 'store overhead' = an add's time minus the embedding time inside that "
            "same add. memlab: SQLite WAL (synchronous=NORMAL) + FAISS, index file written on flush. mem0 2.2.1: "
            "add(infer=False), FAISS + JSON docstore rewritten on every add, SQLite history (rollback journal, "
            f"synchronous=FULL). mem0 filled between sizes by {cfg.get('mem0_fill', 'bulk')!r} "
            "('bulk' = its own batch-persist path; timed adds always use the public add()).",
        ]
        for size in self.sizes():
            reached = {s: [f.n_items for f in self.figures if f.system == s and f.size == size] for s in systems}
            out += ["", f"### N = {size:,}", ""]
            vs = "mem0" in systems
            out.append("| metric | " + " | ".join(systems) + (" | memlab/mem0 |" if vs else " |"))
            out.append("|---|" + "---|" * (len(systems) + int(vs)))
            for field, label in _TABLE_METRICS:
                cells = [self._cell(s, size, field) for s in systems]
                if all(c == "n/a" for c in cells):
                    continue
                r = self.ratio(size, field) if vs else None
                ratio = (f" {'' if r is None else f'{r:.2f}'} |") if vs else ""
                out.append(f"| {label} | " + " | ".join(cells) + " |" + ratio)
            for s in systems:
                keys = sorted({k for f in self.figures if f.system == s and f.size == size for k in f.parts_p50_ms})
                if keys:
                    bits = []
                    for k in keys:
                        vals = [f.parts_p50_ms[k] for f in self.figures
                                if f.system == s and f.size == size and k in f.parts_p50_ms]
                        bits.append(f"{k.replace('_', ' ')} {_fmt(float(np.median(vals)))} ms")
                    out.append(f"\n{s} add, non-embedding parts (p50): " + ", ".join(bits) + ".")
            for s in systems:
                if any(not f.reached for f in self.figures if f.system == s and f.size == size):
                    out.append(f"\n{s}: N={size:,} not reached within the budget (reached {max(reached[s]):,} items).")
        if self.quality:
            out += ["", "### Duplicates and updates (same run, no LLM)", "",
                    "| scenario | system | stored (active/total) | query → top results | version chain / integrity |",
                    "|---|---|---|---|---|"]
            order = {sc["name"]: i for i, sc in enumerate(_SCENARIOS)}
            for q in sorted(self.quality, key=lambda r: order.get(r.scenario, len(order))):
                top = "; ".join(f"{t!r} {s:.2f}" for t, s in q.top[:3]) or "—"
                extra = " ; ".join(x for x in (q.version_chain, q.contradiction) if x) or "—"
                out.append(f"| {q.scenario} | {q.system} | {q.items_active}/{q.items_total} | {q.query!r} → {top} | {extra} |")
        if self.notes:
            out += ["", "### Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(out)

    def eval_metrics(self) -> dict[str, dict[str, float | None]]:
        """Medians per size and system (and ``_min``/``_max`` over repeats), plus memlab/mem0 ratios.

        Groups are ``n<N>_<system>`` and ``n<N>_ratio_memlab_over_mem0``: the ``metrics`` of ``run.json``.
        """
        fields = [f for f, _ in _TABLE_METRICS] + ["n_items"]
        out: dict[str, dict[str, float | None]] = {}
        systems = self.systems()
        for size in self.sizes():
            for system in systems:
                g: dict[str, float | None] = {}
                for f in fields:
                    vals = self.values(system, size, f)
                    if not vals:
                        continue
                    g[f] = float(np.median(vals))
                    if len(vals) > 1:
                        g[f + "_min"], g[f + "_max"] = min(vals), max(vals)
                g["reached"] = float(bool(self.values(system, size, "n_items")))
                out[f"n{size}_{system}"] = g
            if "mem0" in systems:
                out[f"n{size}_ratio_memlab_over_mem0"] = {f: self.ratio(size, f) for f, _ in _TABLE_METRICS}
        return out

    def write(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write the run directory; returns it.

        Files: ``run.json`` + ``examples.jsonl`` through :func:`memlab.eval.runs.write_run` (so the eval
        tooling and the dashboard read it like any eval run: metrics per ``n<N>_<system>`` group, one
        example per (repeat, system, size) row and per quality row), ``peers.json`` (this model, see
        :func:`load_peers`), ``results.md`` (:meth:`to_markdown`) and ``cost_vs_n.png``.
        """
        from memlab.eval.runs import Example, make_spec, write_run

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        try:
            plot_cost_vs_n(self, out / "cost_vs_n.png")
        except MissingDependencyError as exc:
            self.notes.append(f"plot skipped: {exc}")
        cfg = self.spec.get("config", {})
        spec = make_spec(
            "bench-peers", n=max(self.sizes(), default=0), judge=cfg.get("judge") if cfg.get("integrity") else None,
            params=cfg, seed=self.spec.get("seed"), corpus=self.spec.get("corpus"),
            machine=self.spec.get("machine"), mem0_version=self.spec.get("packages", {}).get("mem0ai"),
        )
        examples = [
            Example(id=f"r{f.repeat}/{f.system}/n{f.size}", group=f.system, latency_ms=f.add_p50_ms,
                    pred="reached" if f.reached else "not reached", error=None if f.reached else f.note,
                    meta=f.model_dump())
            for f in self.figures
        ] + [
            # no ``score``: these are not classifier outputs (the eval page would draw PR curves from them)
            Example(id=f"quality/{q.scenario}/{q.system}", group="quality", pred=q.top[0][0] if q.top else None,
                    meta=q.model_dump())
            for q in self.quality
        ]
        first = min(self.sizes(), default=0)
        primary = (f"n{first}_ratio_memlab_over_mem0.add_p50_ms" if "mem0" in self.systems()
                   else f"n{first}_memlab.add_p50_ms")
        write_run(out, spec=spec, metrics=self.eval_metrics(), examples=examples, notes=self.notes,
                  primary_metric=primary)
        (out / "peers.json").write_text(self.model_dump_json(indent=2), encoding="utf-8")
        (out / "results.md").write_text(self.to_markdown() + "\n", encoding="utf-8")
        return out


def load_peers(path: str | os.PathLike[str]) -> PeersResult:
    """Read the :class:`PeersResult` of a run directory written by :meth:`PeersResult.write`.

    Raises:
        NotFoundError: no ``peers.json`` there.
    """
    f = Path(path) / "peers.json"
    if not f.is_file():
        raise NotFoundError(f"No peers.json in {path}.")
    return PeersResult.model_validate_json(f.read_text(encoding="utf-8"))


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def plot_cost_vs_n(result: PeersResult, path: str | os.PathLike[str]) -> Path:
    """Log-log plot of add/search/overhead p50 against N per system; saved as PNG at ``path``.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "eval") from exc
    panels = [("add_p50_ms", "add p50 (ms)"), ("overhead_p50_ms", "add − own embedding, p50 (ms)"),
              ("search_overhead_p50_ms", "search − own embedding, p50 (ms)"), ("disk_mb", "on-disk size (MB)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6))
    for ax, (field, label) in zip(axes, panels, strict=True):
        for system in result.systems():
            xs, ys, lo, hi = [], [], [], []
            for size in result.sizes():
                vals = result.values(system, size, field)
                if vals and min(vals) > 0:
                    xs.append(size)
                    ys.append(float(np.median(vals)))
                    lo.append(ys[-1] - min(vals))
                    hi.append(max(vals) - ys[-1])
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=system)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (items in store)")
        ax.set_title(label, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------- helpers
def mem0_available() -> bool:
    """True when mem0 (``mem0ai``) is installed (checked without importing it: its import reads the environment)."""
    import importlib.util

    return importlib.util.find_spec("mem0") is not None


def _pct(xs: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) if len(xs) else None


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _rss() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    cur = peak = float("nan")
    try:
        import psutil

        cur = psutil.Process().memory_info().rss / 1e6
    except ImportError:  # psutil is part of memlab[bench]; fall back to /proc
        try:
            cur = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
        except (OSError, ValueError):
            pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux
    except ImportError:  # pragma: no cover - Windows
        peak = cur
    # the kernel updates ru_maxrss lazily (hiwater marks), so it can trail the current RSS by a few pages
    return cur, max(peak, cur) if cur == cur else peak


class _TimedEmbedder:
    """Wraps a memlab embedder: times every call, and optionally bypasses its text cache."""

    def __init__(self, inner: Any, *, cache: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.last_ms = 0.0

    @property
    def thresholds(self) -> Any:
        return getattr(self.inner, "thresholds", None)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def get_params(self) -> dict[str, object]:
        return dict(self.inner.get_params(), cache=self.cache)

    def embed(self, texts: Sequence[str], /, *, mode: str = "passage") -> NDArray[np.float32]:
        t = time.perf_counter()
        out = self.inner.embed(texts, mode=mode)
        if not self.cache:
            clear = getattr(getattr(self.inner, "_cache", None), "clear", None)
            if clear is not None:  # forget what was just embedded, so a repeated text costs again
                clear()
        self.last_ms = (time.perf_counter() - t) * 1000
        return np.asarray(out, dtype=np.float32)


# ---------------------------------------------------------------------------------------------- systems
class _MemlabSystem:
    """memlab's MemoryStore (SQLite + FAISS) in one directory; optionally with the integrity check."""

    def __init__(self, *, workdir: str, embedder: str = "minilm", embedding_cache: bool = False,
                 integrity: bool = False, settings: Settings | None = None, embedder_obj: Any = None,
                 judge: str = "default", embedder_backend: str = "fast") -> None:
        from memlab.embedding import MiniLMEmbedder, load_embedder
        from memlab.store import MemoryStore

        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if embedder_obj is not None:
            inner = embedder_obj
        elif embedder == "minilm":
            inner = MiniLMEmbedder(backend=embedder_backend)
        else:
            inner = load_embedder(embedder, shared=False)
        self.emb = _TimedEmbedder(inner, cache=embedding_cache)
        self.emb.embed(["warm-up"])
        self.store = MemoryStore(self.dir / "memlab.db", embedder=self.emb)
        self.settings = settings if settings is not None else Settings.model_construct()
        self.checker: Any = None
        self.note = ""
        self.judge_name = judge
        if integrity:
            self.checker, self.note = _build_checker(self.store, self.settings, judge)
        self.store.search("warm-up", "warm-up query", k=10)
        self.baseline_rss = _rss()[0]

    def fill(self, texts: list[str], vectors: NDArray[np.float32] | None, want_vectors: bool) -> dict[str, Any]:
        t = time.perf_counter()
        items = self.store.add_many(_BENCH_USER, texts, embeddings=vectors)
        dt = time.perf_counter() - t
        vecs = self.store.vectors([m.id for m in items]) if want_vectors else None
        return {"s": dt, "vectors": vecs}

    def embed_corpus(self, texts: list[str]) -> dict[str, Any]:
        t = time.perf_counter()
        vecs = self.emb.inner.embed(texts)
        clear = getattr(getattr(self.emb.inner, "_cache", None), "clear", None)
        if clear is not None:
            clear()
        return {"s": time.perf_counter() - t, "vectors": np.asarray(vecs, dtype=np.float32)}

    def add(self, text: str) -> dict[str, float]:
        t = time.perf_counter()
        item = self.store.add(_BENCH_USER, text)
        add_ms = (time.perf_counter() - t) * 1000
        embed_ms = self.emb.last_ms
        out = {"ms": add_ms, "embed_ms": embed_ms}
        if self.checker is not None:
            t = time.perf_counter()
            self.checker.check(item)
            out["check_ms"] = (time.perf_counter() - t) * 1000
            out["ms"] += out["check_ms"]
        return out

    def warm(self) -> dict[str, float]:
        """Untimed, after a fill: the checker reads the facts of the user's newest memories and the store loads its
        per-user caches (:meth:`SemanticIntegrityChecker.warm_user`), as in a process that checked them on arrival."""
        t = time.perf_counter()
        n = self.checker.warm_user(_BENCH_USER) if self.checker is not None else 0
        return {"s": time.perf_counter() - t, "n": n}

    def search(self, query: str) -> dict[str, float]:
        t = time.perf_counter()
        hits = self.store.search(_BENCH_USER, query, k=10)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.emb.last_ms, "n": len(hits)}

    def stats(self) -> dict[str, float]:
        t = time.perf_counter()
        self.store.flush()
        persist_ms = (time.perf_counter() - t) * 1000
        cur, peak = _rss()
        wal = sum(p.stat().st_size for p in self.dir.glob("*.db-*") if p.is_file())
        return {"n_items": self.store.count(_BENCH_USER), "disk_mb": _dir_bytes(self.dir) / 1e6, "rss_mb": cur,
                "wal_mb": wal / 1e6,
                "peak_rss_mb": peak, "baseline_rss_mb": self.baseline_rss, "persist_ms": persist_ms}

    def info(self) -> dict[str, Any]:
        return {"note": self.note, "checker": None if self.checker is None else type(self.checker).__name__,
                "embedder": self.emb.inner.get_params()}

    def quality(self) -> list[dict[str, Any]]:
        from memlab.store import MemoryStore

        rows: list[dict[str, Any]] = []
        with MemoryStore(self.dir / "quality.db", embedder=self.emb) as qs:
            checker = None
            if self.checker is not None:
                checker, _ = _build_checker(qs, self.settings, self.judge_name)
            for sc in _SCENARIOS:
                for keyed in (False, True):
                    user = f"q-{sc['id']}-{'k' if keyed else 'f'}"
                    items = [qs.add(user, text, key=sc["key"] if keyed else None, value=val if keyed else None)
                             for text, val in zip(sc["texts"], sc["values"], strict=True)]
                    active = qs.count(user)
                    total = qs.count(user, include_inactive=True)
                    top = [(m.text, round(s, 3)) for m, s in qs.search(user, sc["query"], k=10)]
                    chain = None
                    if keyed:
                        hist = qs.history(items[-1].id)
                        chain = " → ".join(f"v{m.version} {m.text!r} ({'active' if m.is_active else 'superseded'})"
                                           for m in hist)
                    contra = None
                    if checker is not None:
                        res = checker.check(qs.get(items[-1].id, user_id=items[-1].user_id))
                        contra = (f"check: contradiction p={res.confidence:.2f} by "
                                  f"{','.join(c.decided_by for c in res.contradictions)}"
                                  if res.has_contradiction else "check: no contradiction")
                    rows.append(dict(scenario=sc["name"], system="memlab (key=" + sc["key"] + ")" if keyed else "memlab",
                                     added=list(sc["texts"]), query=sc["query"], items_active=active,
                                     items_total=total, top=top, version_chain=chain, contradiction=contra))
        return rows

    def close(self) -> None:
        self.store.close()


def _build_checker(store: Any, settings: Settings, judge_name: str = "default") -> tuple[Any, str]:
    """The integrity checker with the named judge, warmed up (judge loaded), or (None, why not)."""
    try:
        from memlab.integrity import SemanticIntegrityChecker
    except ImportError as exc:
        return None, f"memlab add+check: n/a (memlab.integrity.SemanticIntegrityChecker not importable: {exc})"
    try:
        from memlab.judges import load_judge

        judge = load_judge(judge_name)
    except Exception as exc:  # not trained yet, weights missing, registry not there ...
        return None, f"memlab add+check: n/a (judge {judge_name!r} unavailable: {type(exc).__name__}: {exc})"
    try:
        checker = SemanticIntegrityChecker(store, judge, settings)
        # one-off loads now (language detector, date parser, unit registry, every judge model), so they are not
        # timed as an add; then a check on a private user
        checker.warm_up()
        item = store.add("warm-up-integrity", "Sono nato il 12 luglio 1990")
        store.add("warm-up-integrity", "Il mio compleanno è il 15 agosto")
        checker.check(item)
    except Exception as exc:
        return None, f"memlab add+check: n/a (SemanticIntegrityChecker failed: {type(exc).__name__}: {exc})"
    return checker, (f"memlab add+check: SemanticIntegrityChecker with judge {judge_name!r} "
                     f"({getattr(judge, 'name', type(judge).__name__)}), synchronous after each add")


class _Mem0System:
    """mem0 2.2.1 ``Memory`` offline: ``add(infer=False)``, huggingface embedder, faiss store, SQLite history."""

    def __init__(self, *, workdir: str, model_path: str | None = None, fill_mode: str = "bulk") -> None:
        self.fill_mode = fill_mode
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        # mem0 reads these at import time: set them here, inside this (worker) process, before importing it
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(self.dir / "mem0_home")
        for name in ("mem0", "mem0.memory.main", "mem0.utils.spacy_models", "mem0.vector_stores.faiss"):
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            from mem0 import Memory
        except ImportError as exc:
            raise MissingDependencyError("mem0ai", "bench") from exc
        if model_path is None:
            from memlab.embedding.sentence_transformers import minilm_path

            model_path = str(minilm_path())
        self.config = mem0_config(self.dir, model_path)
        self.m = Memory.from_config(self.config)
        inner = self.m.embedding_model.embed
        self.last_embed_ms = 0.0

        def timed_embed(text: Any, memory_action: Any = None) -> Any:
            t = time.perf_counter()
            out = inner(text, memory_action)
            self.last_embed_ms = (time.perf_counter() - t) * 1000
            return out

        self.m.embedding_model.embed = timed_embed
        # where an add's non-embedding time goes: the vector store insert (FAISS + JSON docstore rewrite)
        # and the history commit (SQLite, default rollback journal + synchronous=FULL)
        self.parts: dict[str, float] = {}
        for obj, attr, key in ((self.m.vector_store, "insert", "vector_store_insert"),
                               (self.m.db, "add_history", "history_commit")):
            setattr(obj, attr, self._timed(getattr(obj, attr), key))
        timed_embed("warm-up", "add")
        self.m.search("warm-up query", filters={"user_id": _BENCH_USER}, top_k=10)
        self.baseline_rss = _rss()[0]

    def _timed(self, fn: Callable[..., Any], key: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.parts[key] = (time.perf_counter() - t) * 1000

        return wrapper

    def fill(self, texts: list[str], vectors: Any, want_vectors: bool) -> dict[str, Any]:
        t = time.perf_counter()
        if self.fill_mode == "add":
            for text in texts:
                self.m.add(text, user_id=_BENCH_USER, infer=False)
        else:
            self._bulk_persist(texts, vectors)
        return {"s": time.perf_counter() - t, "vectors": None}

    def _bulk_persist(self, texts: list[str], vectors: Any = None) -> None:
        """mem0's batch-persist phase (``Memory._add_to_vector_store``, infer=True, phase 6) without the LLM.

        Payloads and history rows are those ``add(text, user_id=..., infer=False)`` writes.
        """
        import hashlib
        import uuid

        from mem0.utils.lemmatization import lemmatize_for_bm25

        if vectors is None:
            vectors = self.m.embedding_model.embed_batch(texts, "add")
        else:
            vectors = np.asarray(vectors, dtype=np.float32).tolist()
        ids, payloads = [], []
        for text in texts:
            now = datetime.now(UTC).isoformat()
            ids.append(str(uuid.uuid4()))
            payloads.append({"user_id": _BENCH_USER, "role": "user", "data": text,
                             "hash": hashlib.md5(text.encode()).hexdigest(), "created_at": now, "updated_at": now,
                             "text_lemmatized": lemmatize_for_bm25(text)})
        self.m.vector_store.insert(vectors=vectors, ids=ids, payloads=payloads)
        self.m.db.batch_add_history([
            {"memory_id": i, "old_memory": None, "new_memory": p["data"], "event": "ADD", "created_at": p["created_at"],
             "updated_at": p["updated_at"], "is_deleted": 0, "actor_id": None, "role": "user"}
            for i, p in zip(ids, payloads, strict=True)])

    def add(self, text: str) -> dict[str, Any]:
        self.parts = {}
        t = time.perf_counter()
        self.m.add(text, user_id=_BENCH_USER, infer=False)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.last_embed_ms, "parts": dict(self.parts)}

    def search(self, query: str) -> dict[str, float]:
        t = time.perf_counter()
        res = self.m.search(query, filters={"user_id": _BENCH_USER}, top_k=10)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.last_embed_ms, "n": len(res["results"])}

    def stats(self) -> dict[str, float]:
        cur, peak = _rss()
        n_user = sum(1 for p in self.m.vector_store.docstore.values() if p.get("user_id") == _BENCH_USER)
        return {"n_items": n_user, "disk_mb": _dir_bytes(self.dir) / 1e6, "rss_mb": cur,
                "peak_rss_mb": peak, "baseline_rss_mb": self.baseline_rss, "persist_ms": 0.0}

    def info(self) -> dict[str, Any]:
        return {"note": "", "mem0_version": metadata.version("mem0ai")}

    def quality(self) -> list[dict[str, Any]]:
        rows = []
        for sc in _SCENARIOS:
            user = f"q-{sc['id']}"
            for text in sc["texts"]:
                self.m.add(text, user_id=user, infer=False)
            held = self.m.get_all(filters={"user_id": user})["results"]
            top = [(r["memory"], round(float(r["score"]), 3))
                   for r in self.m.search(sc["query"], filters={"user_id": user}, top_k=10)["results"]]
            rows.append(dict(scenario=sc["name"], system="mem0 (infer=False)", added=list(sc["texts"]),
                             query=sc["query"], items_active=len(held), items_total=len(held), top=top,
                             version_chain=None, contradiction=None))
        return rows

    def close(self) -> None:
        close = getattr(self.m, "close", None)
        if close is not None:
            close()


def mem0_config(workdir: str | os.PathLike[str], model_path: str) -> dict[str, Any]:
    """The mem0 2.2.1 config that runs offline (what it needs was found by running it here).

    ``embedding_model_dims`` is required (without it mem0 builds a 1536-d index and fails with a bare
    AssertionError); an ``llm`` entry is required at init even with ``infer=False``: it points at a closed
    loopback port, so any call would fail fast instead of reaching a network.
    """
    d = Path(workdir)
    return {
        "embedder": {"provider": "huggingface", "config": {"model": str(model_path), "embedding_dims": 384}},
        "vector_store": {"provider": "faiss", "config": {
            "collection_name": "bench", "path": str(d / "faiss"), "distance_strategy": "cosine",
            "embedding_model_dims": 384}},
        "llm": {"provider": "openai", "config": {
            "model": "unused", "api_key": "sk-unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(d / "history.db"),
    }


_SCENARIOS: list[dict[str, Any]] = [
    {"id": "dup-en", "name": "duplicate (en)", "texts": ["I live in Rome", "I live in Rome"],
     "values": ["Rome", "Rome"], "key": "home_city", "query": "Where do I live?"},
    {"id": "dup-it", "name": "duplicate (it)", "texts": ["Abito a Roma", "Abito a Roma"],
     "values": ["Roma", "Roma"], "key": "home_city", "query": "Dove abito?"},
    {"id": "upd-en", "name": "update (en)", "texts": ["Call me Zhang San", "Call me Li Si"],
     "values": ["Zhang San", "Li Si"], "key": "preferred_name", "query": "What is my name?"},
    {"id": "upd-it", "name": "update (it)", "texts": ["Chiamami Zhang San", "Chiamami Li Si"],
     "values": ["Zhang San", "Li Si"], "key": "preferred_name", "query": "Come mi chiamo?"},
    {"id": "upd-zh", "name": "update (zh)", "texts": ["叫我张三", "叫我李四"],
     "values": ["张三", "李四"], "key": "preferred_name", "query": "我叫什么名字？"},
]


_FACTORIES: dict[str, Callable[..., Any]] = {"memlab": _MemlabSystem, "mem0": _Mem0System}


# ---------------------------------------------------------------------------------------------- workers
def _set_threads(threads: int | None) -> None:
    if threads is None:
        return
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def _serve(conn: Any, kind: str, params: dict[str, Any], threads: int | None = None) -> None:
    """Worker process main loop: build one system, then answer ``(method, args)`` calls until ``close``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - core dependency
        pass
    try:
        _set_threads(threads)
        system = _FACTORIES[kind](**params)
    except BaseException as exc:  # report any failure to the parent instead of dying silently
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                   isinstance(exc, MissingDependencyError)))
        conn.close()
        return
    conn.send(("ok", None))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:
            break
        if method == "close":
            system.close()
            conn.send(("ok", None))
            break
        try:
            conn.send(("ok", getattr(system, method)(*args)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(), False))
    conn.close()


class _Remote:
    """Parent-side handle of a worker process (one system)."""

    def __init__(self, name: str, kind: str, params: dict[str, Any], threads: int | None = None) -> None:
        self.name = name
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, kind, params, threads), name=f"memlab-peers-{name}", daemon=True)
        self.proc.start()
        child.close()
        self._check(self.conn.recv())

    def _check(self, msg: tuple[Any, ...]) -> Any:
        if msg[0] == "ok":
            return msg[1]
        if msg[3] and self.name == "mem0":
            raise MissingDependencyError("mem0ai", "bench")
        raise BackendError(f"benchmark worker {self.name!r} failed: {msg[1]}\n{msg[2]}")

    def call(self, method: str, *args: Any) -> Any:
        self.conn.send((method, args))
        return self._check(self.conn.recv())

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.call("close")
            except (BackendError, EOFError, OSError, BrokenPipeError):
                pass
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=10)


class _Local:
    """In-process handle with the same ``call`` interface (tests; no honest per-system RSS)."""

    def __init__(self, name: str, system: Any) -> None:
        self.name = name
        self.system = system

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.system, method)(*args)

    def close(self) -> None:
        self.system.close()


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
        handles["memlab"] = _Remote("memlab", "memlab", dict(common, workdir=str(rep_dir / "memlab")), th)
        if config.integrity:
            say("starting worker: memlab+check")
            handles["memlab+check"] = _Remote(
                "memlab+check", "memlab", dict(common, workdir=str(rep_dir / "memlab_check"), integrity=True), th)
        if "mem0" in config.systems:
            say("starting worker: mem0")
            model_path = None  # the packaged MiniLM, the model memlab's "minilm" embedder loads
            handles["mem0"] = _Remote("mem0", "mem0", {"workdir": str(rep_dir / "mem0"), "model_path": model_path,
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
        if "memlab+check" in live:  # not timed: the bulk fill skipped the check (see _MemlabSystem.warm)
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
