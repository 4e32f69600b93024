"""Evaluation harness: metrics, run directories, tasks and the suite (``memlab eval ...``).

Example:
    >>> from memlab.eval import load_run, compare_runs, write_run, make_spec
    >>> compare_runs([]).empty
    True
"""

from __future__ import annotations

from memlab.eval.contradiction import evaluate_contradiction, score_contradiction
from memlab.eval.metrics import (
    ClassMetrics,
    accuracy,
    average_precision,
    bootstrap_ci,
    confusion,
    coverage,
    expected_calibration_error,
    false_contradiction_rate,
    macro_f1,
    per_class,
    pr_curve,
    reliability_curve,
)
from memlab.eval.runs import (
    EvalRun,
    Example,
    MetricValue,
    RunSpec,
    compare_runs,
    default_run_dir,
    load_run,
    make_spec,
    markdown_table,
    write_run,
)

__all__ = [
    "ClassMetrics",
    "EvalRun",
    "Example",
    "MetricValue",
    "RunSpec",
    "accuracy",
    "average_precision",
    "bootstrap_ci",
    "compare_runs",
    "confusion",
    "coverage",
    "default_run_dir",
    "evaluate_contradiction",
    "expected_calibration_error",
    "false_contradiction_rate",
    "load_run",
    "macro_f1",
    "make_spec",
    "markdown_table",
    "per_class",
    "pr_curve",
    "reliability_curve",
    "score_contradiction",
    "write_run",
]
