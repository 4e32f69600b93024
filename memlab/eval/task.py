"""The eval task layer: a task supplies samples, a solver and a scorer; :func:`run_task` does the rest.

In the spirit of inspect_ai's ``Task(dataset, solver, scorer)``: every ``evaluate_*`` function of memlab is a
small :class:`EvalTask` subclass plus one call to :func:`run_task`, which owns what used to be repeated (and had
drifted) in each of them:

* validation of the run options (``limit``, ``max_error_rate``);
* timing of the solve step (``seconds`` is handed to the scorer; tasks that time a narrower step, such as
  judge calls only, report their own figure);
* abstentions: a unit whose example carries an ``error`` or the ``abstain`` prediction counts against
  ``error_rate``, which is always written to the metrics; the run is ``failed`` past ``max_error_rate``
  and a note says why;
* the spec (versions, git state, data digest, seed, limit, command, the task's own fields) and
  :func:`~memlab.eval.runs.write_run`.

Metrics are pure functions of labels and scores (:mod:`memlab.eval.metrics`), shared with judge training.

Example:
    >>> import tempfile
    >>> class Echo(EvalTask):
    ...     name = "echo"
    ...     primary_metric = "accuracy"
    ...     def samples(self, limit, seed):
    ...         return seeded_sample(["a", "b", "c"], limit, seed)
    ...     def solve(self, samples, *, progress):
    ...         return list(samples)
    ...     def score(self, samples, solved, *, seed, seconds):
    ...         ex = [Example(id=s, gold=s, pred=p) for s, p in zip(samples, solved)]
    ...         return Scored(metrics={"accuracy": 1.0}, examples=ex)
    ...     def spec(self):
    ...         return {}
    >>> run = run_task(Echo(), limit=2, out_dir=tempfile.mkdtemp())
    >>> run.spec.n, run.metrics["error_rate"], run.status
    (2, 0.0, 'ok')
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from memlab.errors import InvalidInputError
from memlab.eval.runs import EvalRun, Example, default_run_dir, make_spec, write_run
from memlab.records import Label

__all__ = ["EvalTask", "Scored", "check_limit", "run_task", "seeded_sample"]

T = TypeVar("T")


@dataclass
class Scored:
    """What a task's scorer returns: the figures and per-unit rows of one run.

    Attributes:
        metrics: nested metrics (``error_rate`` is added by :func:`run_task`).
        examples: one row per scored unit.
        notes: warnings worth keeping with the numbers.
        confusion: ``{gold: {pred: count}}``, when the task has labels.
        per_level: per decision level figures.
        per_category: per data category figures.
        n: number of scored units for the spec (default ``len(examples)``).
    """

    metrics: dict[str, Any]
    examples: list[Example]
    notes: list[str] = field(default_factory=list)
    confusion: Mapping[str, Mapping[str, int]] | None = None
    per_level: Mapping[str, Any] | None = None
    per_category: Mapping[str, Any] | None = None
    n: int | None = None


class EvalTask(abc.ABC):
    """One evaluation: subclasses set :attr:`name` and :attr:`primary_metric` and implement four methods.

    The runner calls them in order: :meth:`samples` (the seeded units to score), :meth:`solve` (timed),
    :meth:`score`, then :meth:`spec` (so parameters discovered while solving can be recorded).
    """

    name: ClassVar[str]
    primary_metric: ClassVar[str] = "contradiction.f1"

    @abc.abstractmethod
    def samples(self, limit: int | None, seed: int) -> Sequence[Any]:
        """The units to score: all of them, or a seeded sample of at most ``limit``."""

    @abc.abstractmethod
    def solve(self, samples: Sequence[Any], *, progress: bool) -> Any:
        """Run the system under test on ``samples``; never raise for one failing unit (record it)."""

    @abc.abstractmethod
    def score(self, samples: Sequence[Any], solved: Any, *, seed: int, seconds: float) -> Scored:
        """Turn the solver's output into metrics and examples (``seconds``: wall time of :meth:`solve`)."""

    @abc.abstractmethod
    def spec(self) -> dict[str, Any]:
        """Spec fields: ``dataset``, ``split``, ``data_dir``, ``judge``, ``params`` and any extra field."""

    def error_rate(self, scored: Scored) -> float:
        """Share of units that failed: an ``error`` text or the ``abstain`` prediction."""
        if not scored.examples:
            return 0.0
        bad = sum(1 for e in scored.examples if e.error is not None or e.pred == Label.ABSTAIN.value)
        return bad / len(scored.examples)


def check_limit(limit: Any, where: str) -> int | None:
    """Validate a sampling limit (``None`` or an int >= 1).

    Raises:
        InvalidInputError: anything else (bools included).

    Example:
        >>> check_limit(3, "demo"), check_limit(None, "demo")
        (3, None)
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 1:
        raise InvalidInputError(
            f"The 'limit' parameter of {where} must be an int in [1, inf) or None. Got {limit!r} instead."
        )
    return int(limit)


def seeded_sample(items: Sequence[T], limit: int | None, seed: int) -> list[T]:
    """At most ``limit`` items drawn without replacement with ``numpy.random.default_rng(seed)``, in order.

    Example:
        >>> seeded_sample(list("abcdef"), 3, 0) == seeded_sample(list("abcdef"), 3, 0)
        True
    """
    if limit is None or limit >= len(items):
        return list(items)
    pick = sorted(np.random.default_rng(seed).choice(len(items), size=limit, replace=False).tolist())
    return [items[i] for i in pick]


def run_task(
    task: EvalTask,
    *,
    limit: int | None = None,
    seed: int = 0,
    out_dir: str | Path | None = None,
    max_error_rate: float = 0.05,
    command: str | None = None,
    progress: bool = False,
) -> EvalRun:
    """Sample, solve (timed), score, decide the status, build the spec and write the run directory.

    Args:
        task: the task.
        limit: score a seeded sample of at most this many units.
        seed: seed of the sample (and of the scorer's bootstrap).
        out_dir: run directory (default ``runs/<ts>_<task>_<id>``).
        max_error_rate: the run is ``failed`` when a larger share of units failed.
        command: the command line, recorded in the spec.
        progress: let the solver show a progress bar.

    Returns:
        The written :class:`~memlab.eval.runs.EvalRun`.

    Raises:
        InvalidInputError: bad ``limit`` or ``max_error_rate``.
    """
    import time

    limit = check_limit(limit, f"the {task.name} task")
    if (
        isinstance(max_error_rate, bool)
        or not isinstance(max_error_rate, int | float)
        or not 0 <= max_error_rate <= 1
    ):
        raise InvalidInputError(
            f"The 'max_error_rate' parameter of the {task.name} task must be a float in [0, 1]. "
            f"Got {max_error_rate!r} instead."
        )
    samples = task.samples(limit, seed)
    t0 = time.perf_counter()
    solved = task.solve(samples, progress=progress)
    seconds = time.perf_counter() - t0
    scored = task.score(samples, solved, seed=seed, seconds=seconds)
    error_rate = task.error_rate(scored)
    notes = list(scored.notes)
    status = "failed" if error_rate > max_error_rate else "ok"
    if status == "failed":
        notes.append(f"error rate {error_rate:.3f} exceeds max_error_rate {max_error_rate}")
    fields = dict(task.spec())
    fields["params"] = {**dict(fields.get("params") or {}), "max_error_rate": max_error_rate}
    spec = make_spec(
        task.name,
        n=scored.n if scored.n is not None else len(scored.examples),
        seed=seed,
        limit=limit,
        command=command,
        **fields,
    )
    return write_run(
        out_dir if out_dir is not None else default_run_dir(task.name),
        spec=spec,
        metrics={**scored.metrics, "error_rate": error_rate},
        examples=scored.examples,
        confusion=scored.confusion,
        per_level=scored.per_level,
        per_category=scored.per_category,
        notes=notes,
        status=status,  # type: ignore[arg-type]
        primary_metric=task.primary_metric,
    )
