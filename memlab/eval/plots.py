"""Plots of a run as plotly figures (used by notebooks and the dashboard; nothing is shown or saved here).

Each function takes an :class:`~memlab.eval.runs.EvalRun` (its ``examples.jsonl`` is read) or a list of
:class:`~memlab.eval.runs.Example`, and returns a ``plotly.graph_objects.Figure``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.errors import InvalidInputError, MissingDependencyError
from memlab.eval import metrics as M
from memlab.eval.runs import EvalRun, Example

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

__all__ = [
    "confusion_matrix",
    "pr_curve",
    "reliability_diagram",
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
