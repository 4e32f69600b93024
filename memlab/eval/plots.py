"""Plots of a run as plotly figures (used by notebooks and the dashboard; nothing is shown or saved here).

Each function takes an :class:`~memlab.eval.runs.EvalRun` (its ``examples.jsonl`` is read) or a list of
:class:`~memlab.eval.runs.Example`, and returns a ``plotly.graph_objects.Figure``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.errors import InvalidInputError, MissingDependencyError
from memlab.eval import metrics as M
from memlab.eval.runs import EvalRun, Example

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

__all__ = [
    "alarms_overview",
    "confusion_matrix",
    "pr_curve",
    "recall_at_k",
    "recall_by_category",
    "reliability_diagram",
    "switch_decisions",
]


def _go() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("plotly", "eval") from exc
    return go


def _scored(source: EvalRun | Sequence[Example]) -> tuple[list[str], np.ndarray, str]:
    examples = source.examples() if isinstance(source, EvalRun) else list(source)
    title = ""
    if isinstance(source, EvalRun):
        s = source.spec
        title = f"{s.task} · {s.dataset}/{s.split} · {s.judge}"
    ok = [e for e in examples if e.score is not None and e.gold is not None]
    return [e.gold or "" for e in ok], np.asarray([e.score for e in ok], dtype=np.float64), title


def pr_curve(source: EvalRun | Sequence[Example]) -> go.Figure:
    """Precision-recall curve of the contradiction class, with average precision in the legend.

    Raises:
        InvalidInputError: no scored example with a gold contradiction.

    Example:
        >>> ex = [Example(id=str(i), gold=g, pred=g, score=s) for i, (g, s) in
        ...       enumerate([("contradiction", 0.9), ("neutral", 0.2), ("contradiction", 0.6)])]
        >>> len(pr_curve(ex).data)
        1
    """
    go = _go()
    gold, scores, title = _scored(source)
    p, r, _ = M.pr_curve(gold, scores)
    ap = M.average_precision(gold, scores)
    fig = go.Figure(go.Scatter(x=r, y=p, mode="lines", line_shape="hv", name=f"AP = {ap:.3f}"))
    fig.update_layout(
        title=f"Precision-recall (contradiction) {title}".strip(),
        xaxis_title="recall",
        yaxis_title="precision",
        xaxis_range=[0, 1],
        yaxis_range=[0, 1.05],
        showlegend=True,
    )
    return fig


def reliability_diagram(source: EvalRun | Sequence[Example], *, n_bins: int = 15) -> go.Figure:
    """Observed contradiction frequency vs mean predicted probability per bin, with ECE in the title.

    Example:
        >>> ex = [Example(id=str(i), gold="contradiction" if i % 2 else "neutral", pred="neutral", score=i / 10)
        ...       for i in range(10)]
        >>> [t.name for t in reliability_diagram(ex).data]
        ['perfect calibration', 'observed', 'examples per bin']
    """
    go = _go()
    gold, scores, title = _scored(source)
    if len(gold) == 0:
        raise InvalidInputError("reliability_diagram needs scored examples. Got none instead.")
    mean_p, frac, counts = M.reliability_curve(gold, scores, n_bins=n_bins)
    ece = M.expected_calibration_error(gold, scores, n_bins=n_bins)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            line={"dash": "dash", "color": "grey"},
            name="perfect calibration",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=mean_p,
            y=frac,
            mode="lines+markers",
            name="observed",
            text=[f"n={c}" for c in counts],
            hovertemplate="p=%{x:.2f} freq=%{y:.2f} %{text}",
        )
    )
    fig.add_trace(
        go.Bar(
            x=mean_p,
            y=counts / counts.sum(),
            name="examples per bin",
            opacity=0.3,
            yaxis="y2",
            width=1 / n_bins,
        )
    )
    fig.update_layout(
        title=f"Reliability (ECE = {ece:.3f}, {n_bins} bins) {title}".strip(),
        xaxis_title="predicted contradiction probability",
        yaxis_title="observed contradiction frequency",
        xaxis_range=[0, 1],
        yaxis_range=[0, 1],
        yaxis2={"overlaying": "y", "side": "right", "range": [0, 1], "title": "share of examples"},
    )
    return fig


def confusion_matrix(source: EvalRun | Sequence[Example], *, normalize: bool = False) -> go.Figure:
    """Heatmap of gold (rows) vs predicted (columns) counts, or row-normalised shares.

    Example:
        >>> ex = [Example(id="1", gold="contradiction", pred="neutral"), Example(id="2", gold="neutral", pred="neutral")]
        >>> confusion_matrix(ex).data[0].z.tolist()
        [[0, 1], [0, 1]]
    """
    go = _go()
    if isinstance(source, EvalRun) and source.confusion:
        cm = source.confusion
        title = f"{source.spec.dataset}/{source.spec.split} · {source.spec.judge}"
    else:
        examples = source.examples() if isinstance(source, EvalRun) else list(source)
        cm = M.confusion([e.gold or "" for e in examples], [e.pred or "abstain" for e in examples])
        title = ""
    rows = list(cm)
    cols = list(dict.fromkeys(c for r in cm.values() for c in r))
    z = np.array([[cm[r].get(c, 0) for c in cols] for r in rows], dtype=np.int64)
    shown = z / np.maximum(z.sum(axis=1, keepdims=True), 1) if normalize else z
    fig = go.Figure(
        go.Heatmap(
            z=shown,
            x=cols,
            y=rows,
            colorscale="Blues",
            text=z,
            texttemplate="%{text}",
            hovertemplate="gold=%{y} pred=%{x}: %{text}",
        )
    )
    fig.update_layout(
        title=f"Confusion matrix {title}".strip(),
        xaxis_title="predicted",
        yaxis_title="gold",
        yaxis_autorange="reversed",
    )
    return fig


_CATS = ("multi-hop", "temporal", "open-domain", "single-hop", "all")


def _recall_metrics(source: EvalRun | dict[str, Any]) -> tuple[dict[str, Any], str]:
    m = source.metrics if isinstance(source, EvalRun) else source
    if "evidence_recall@10" not in m:
        raise InvalidInputError("Not a memory-recall run: its metrics have no 'evidence_recall@10'.")
    title = ""
    if isinstance(source, EvalRun):
        title = f"{source.spec.dataset}/{source.spec.split} · {source.spec.n} questions"
    return m, title


def recall_by_category(source: EvalRun | dict[str, Any], *, memories: Sequence[str] | None = None) -> go.Figure:
    """Grouped bars: evidence recall@10 per LoCoMo category for each memory, hybrid (solid) and dense (hatched).

    ``source`` is a ``memory-recall`` run (or its metrics dict).

    Example:
        >>> m = {"evidence_recall@10": {"raw": {"temporal": 0.5, "all": 0.4}},
        ...      "dense": {"evidence_recall@10": {"raw": {"temporal": 0.3, "all": 0.2}}}}
        >>> [t.name for t in recall_by_category(m).data]
        ['raw · hybrid', 'raw · dense']
    """
    go = _go()
    m, title = _recall_metrics(source)
    names = [n for n in (memories or list(m["evidence_recall@10"])) if n in m["evidence_recall@10"]]
    dense = m.get("dense", {}).get("evidence_recall@10", {})
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    fig = go.Figure()
    for i, name in enumerate(names):
        color = palette[i % len(palette)]
        for mode, table, pattern in (("hybrid", m["evidence_recall@10"], ""), ("dense", dense, "/")):
            if name not in table:
                continue
            cats = [c for c in _CATS if c in table[name]]
            fig.add_bar(
                x=cats,
                y=[table[name][c] for c in cats],
                name=f"{name} · {mode}",
                marker_color=color,
                marker_pattern_shape=pattern,
                hovertemplate=f"{name} ({mode}) %{{x}}: %{{y:.3f}}<extra></extra>",
            )
    fig.update_layout(
        barmode="group",
        title=f"Evidence recall@10 by question category {title}".strip(),
        yaxis_title="evidence recall@10",
        yaxis_range=[0, 1.05],
    )
    return fig


def recall_at_k(source: EvalRun | dict[str, Any], *, category: str = "all") -> go.Figure:
    """Evidence recall@1/5/10 for each memory: hybrid (solid) and dense (dashed) lines.

    Example:
        >>> m = {"evidence_recall@10": {"raw": {}}, "recall_at": {"hybrid": {"raw": {"1": {"all": 0.2},
        ...      "5": {"all": 0.5}, "10": {"all": 0.6}}}}}
        >>> recall_at_k(m).data[0].y
        (0.2, 0.5, 0.6)
    """
    go = _go()
    m, title = _recall_metrics(source)
    fig = go.Figure()
    for mode, dash in (("hybrid", "solid"), ("dense", "dash")):
        for name, at in m.get("recall_at", {}).get(mode, {}).items():
            ks = sorted(at, key=int)
            fig.add_scatter(
                x=[int(k) for k in ks],
                y=[at[k][category] for k in ks],
                mode="lines+markers",
                name=f"{name} · {mode}",
                line_dash=dash,
            )
    fig.update_layout(
        title=f"Evidence recall@k ({category}) {title}".strip(),
        xaxis_title="k (memory units retrieved)",
        yaxis_title="evidence recall",
        yaxis_range=[0, 1.05],
    )
    return fig


def switch_decisions(source: EvalRun | dict[str, Any]) -> go.Figure:
    """The chat-switch confusion: how many event queries ended in a right switch, a wrong switch, ``ask`` or
    ``none``.

    Example:
        >>> m = {"evidence_recall@10": {}, "chat_switch": {"decisions": {"switch_right": 5, "none": 1}}}
        >>> switch_decisions(m).data[0].y
        (5, 0, 0, 1)
    """
    go = _go()
    m, title = _recall_metrics(source)
    decisions = m.get("chat_switch", {}).get("decisions", {})
    order = ["switch_right", "switch_wrong", "ask", "none"]
    colors = ["#2ca02c", "#d62728", "#ff7f0e", "#7f7f7f"]
    fig = go.Figure(go.Bar(x=order, y=[decisions.get(o, 0) for o in order], marker_color=colors))
    fig.update_layout(
        title=f"Chat switch decisions {title}".strip(),
        xaxis_title="decision",
        yaxis_title="event queries",
    )
    return fig


_URGENCY_COLORS = (("high", "#d62728"), ("medium", "#ff7f0e"), ("low", "#9e9e9e"))


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _over_conversations(alarms: Mapping[str, Any]) -> str:
    """", 95% 1.53–3.45 over conversations" when the run has the interval (runs of before 2026-11-29 do not)."""
    ci = (alarms.get("ci95") or {}).get("per_100")
    return f", 95% {ci[0]:.2f}–{ci[1]:.2f} over conversations" if ci else ""


def alarms_overview(
    source: EvalRun | dict[str, Any], *, budget: float = 3.0, high_budget: float = 1.0
) -> go.Figure:
    """How often memlab interrupts, per replayed conversation (an ``alarms`` run, or its metrics dict).

    Left: contradiction notifications per 100 messages of each conversation, stacked by urgency, with the budgets as
    dashed lines (``budget`` for all notifications, ``high_budget`` for HIGH; by default the targets memlab is
    measured against, 3 and 1 per 100 messages). Right, when the run had a plants file: the planted contradictions of
    each kind, caught (by a HIGH or MEDIUM notification) and missed, with the recall and the decoys' false-alarm rate
    in the title.

    Raises:
        InvalidInputError: not an alarms run.

    Example:
        >>> m = {"alarms": {"per_100": 1.5, "per_conversation": {"0": {"sample_id": "conv-26", "messages": 400,
        ...      "per_100": 1.5, "high_per_100": 0.25, "medium_per_100": 1.0, "low_per_100": 0.25}}},
        ...      "plants": {"recall": 0.5, "decoy_false_alarm_rate": 0.0,
        ...      "by_kind": {"date": {"n": 4, "caught": 2, "recall": 0.5}}}}
        >>> fig = alarms_overview(m)
        >>> [t.name for t in fig.data]
        ['HIGH', 'MEDIUM', 'LOW', 'caught', 'missed']
        >>> fig.data[0].y
        (0.25,)
        >>> del m["alarms"]["per_conversation"]["0"]["medium_per_100"]  # a run of before the split
        >>> [t.name for t in alarms_overview(m).data][:2]
        ['HIGH', 'MEDIUM + LOW']
    """
    _go()  # plotly present, else MissingDependencyError
    from plotly.subplots import make_subplots

    m = source.metrics if isinstance(source, EvalRun) else source
    if "alarms" not in m or "per_conversation" not in m["alarms"]:
        raise InvalidInputError("Not an alarms run: its metrics have no 'alarms.per_conversation'.")
    a, plants = m["alarms"], m.get("plants")
    convs = a["per_conversation"]
    names = [str(c.get("sample_id") or k) for k, c in convs.items()]
    title = ""
    if isinstance(source, EvalRun):
        title = f" · {source.spec.dataset}/{source.spec.split} · {source.spec.judge}"
    fig = make_subplots(
        rows=1,
        cols=2 if plants else 1,
        column_widths=[0.55, 0.45] if plants else None,
        subplot_titles=(
            f"notifications / 100 messages (all {a.get('per_100', 0):.2f}{_over_conversations(a)})",
            *(
                [
                    f"planted contradictions caught {_share(plants.get('recall'))}, "
                    f"decoys alarmed {_share(plants.get('decoy_false_alarm_rate'))}"
                ]
                if plants
                else []
            ),
        ),
    )
    if all("medium_per_100" in c for c in convs.values()):
        series = [(u.upper(), color, [c[f"{u}_per_100"] for c in convs.values()]) for u, color in _URGENCY_COLORS]
    else:  # a run written before the per-conversation MEDIUM / LOW split
        series = [("HIGH", _URGENCY_COLORS[0][1], [c["high_per_100"] for c in convs.values()]),
                  ("MEDIUM + LOW", _URGENCY_COLORS[1][1],
                   [round(c["per_100"] - c["high_per_100"], 3) for c in convs.values()])]
    for name, color, ys in series:
        fig.add_bar(x=names, y=ys, name=name, marker_color=color, row=1, col=1,
                    hovertemplate=f"%{{x}} {name}: %{{y:.2f}} / 100 messages<extra></extra>")
    for level, label in ((budget, "budget (all)"), (high_budget, "budget (HIGH)")):
        fig.add_hline(y=level, line_dash="dash", line_color="#555", annotation_text=label, row=1, col=1)
    if plants:
        kinds = sorted(plants.get("by_kind", {}))
        by_kind = plants["by_kind"]
        caught = [by_kind[k]["caught"] for k in kinds]
        fig.add_bar(x=kinds, y=caught, name="caught", marker_color="#2171b5", row=1, col=2)
        fig.add_bar(x=kinds, y=[by_kind[k]["n"] - c for k, c in zip(kinds, caught, strict=True)], name="missed",
                    marker_color="#c6dbef", row=1, col=2)
        fig.update_yaxes(title_text="planted contradictions", row=1, col=2)
    fig.update_layout(barmode="stack", legend_traceorder="normal", title=f"How often memlab interrupts{title}")
    fig.update_yaxes(title_text="per 100 messages", row=1, col=1)
    return fig
