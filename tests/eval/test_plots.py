"""Plot functions return plotly figures built from the run's own numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from memlab.errors import InvalidInputError
from memlab.eval import metrics as M
from memlab.eval import plots
from memlab.eval.contradiction import evaluate_contradiction
from memlab.judges.baselines import LexicalJudge


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("run")
    return evaluate_contradiction(
        "sick", "test", judge=LexicalJudge(), limit=200, seed=0, out_dir=out, n_resamples=50
    )


def test_pr_curve(run) -> None:
    fig = plots.pr_curve(run)
    assert isinstance(fig, go.Figure)
    ex = [e for e in run.examples() if e.score is not None]
    p, r, _ = M.pr_curve([e.gold for e in ex], [e.score for e in ex])
    np.testing.assert_allclose(fig.data[0].y, p)
    assert "AP = " in fig.data[0].name


def test_reliability_diagram(run) -> None:
    fig = plots.reliability_diagram(run)
    assert f"ECE = {run.metrics['ece']:.3f}" in fig.layout.title.text
    assert sum(fig.data[2].y) == pytest.approx(1.0)


def test_confusion_matrix(run) -> None:
    fig = plots.confusion_matrix(run)
    z = np.asarray(fig.data[0].z)
    assert z.sum() == run.spec.n
    assert list(fig.data[0].y) == list(run.confusion)
    assert np.allclose(np.asarray(plots.confusion_matrix(run, normalize=True).data[0].z).sum(axis=1), 1.0)


def test_empty_input_raises(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        plots.reliability_diagram([])
    with pytest.raises(InvalidInputError):
        plots.pr_curve([])
