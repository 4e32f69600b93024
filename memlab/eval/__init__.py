"""Evaluation harness: metrics, run directories, the task layer (:class:`EvalTask`, :func:`run_task`) and the suite.

Example:
    >>> from memlab.eval import load_run, compare_runs, write_run, make_spec
    >>> compare_runs([]).empty
    True
"""

from __future__ import annotations

from memlab.eval.contradiction import ContradictionTask, evaluate_contradiction, score_contradiction
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
from memlab.eval.task import EvalTask, Scored, run_task, seeded_sample

__all__ = [
    "ClassMetrics",
    "ContradictionTask",
    "EvalRun",
    "EvalTask",
    "Example",
    "MetricValue",
    "RunSpec",
    "Scored",
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
    "run_task",
    "score_contradiction",
    "seeded_sample",
    "write_run",
]
