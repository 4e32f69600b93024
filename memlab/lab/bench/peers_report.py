"""Results of ``memlab bench peers``: the figures, the tables, the plot and the run directory.

:class:`PeersResult` holds one :class:`SystemFigures` row per (repeat, system, size) and the :class:`QualityRow`
of each duplicate/update scenario; it renders them as Markdown (median [min–max] over repeats, memlab/mem0
ratios), as eval-run metrics, and writes the run directory (:meth:`PeersResult.write`, read back by
:func:`load_peers`).

Example:
    >>> r = PeersResult(spec={}, figures=[SystemFigures(repeat=0, system="memlab", size=10, reached=True,
    ...                                                 n_items=10, add_p50_ms=2.0)])
    >>> r.systems(), r.summary("memlab", 10, "add_p50_ms")
    (['memlab'], 2.0)
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memlab.errors import InvalidInputError, MissingDependencyError, NotFoundError
from memlab.lab.bench.peers_systems import SCENARIOS, SYSTEMS

__all__ = ["PeersResult", "QualityRow", "SystemFigures", "load_peers", "plot_cost_vs_n"]


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
            order = {sc["name"]: i for i, sc in enumerate(SCENARIOS)}
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
