"""The benchmark suite (``memlab eval suite``) and the CI regression gate (``memlab eval gate``).

``eval/suite.yaml`` lists entries ``{task, dataset, split, limit, judges: [...], ...}``; each entry runs once
per judge through the task registry (:mod:`memlab.eval.tasks`) and writes its own run directory under
``<out>/<task>-<dataset>-<split>-<judge>/``. The suite prints one summary table and writes ``suite.json`` and
``suite.md`` next to the runs.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memlab.errors import InvalidInputError, MemlabError, NotFoundError
from memlab.eval.runs import EvalRun, markdown_table
from memlab.eval.tasks import get_task, resolve_runner

__all__ = [
    "GateCheck",
    "GateResult",
    "SuiteEntry",
    "SuiteResult",
    "load_suite",
    "run_contradiction_task",
    "run_gate",
    "run_suite",
    "suite_table",
]

log = logging.getLogger(__name__)

#: judges used when a suite entry gives none.
DEFAULT_JUDGES = ("majority", "lexical", "default")

#: tasks that take a :class:`memlab.config.Settings` for their checker (the suite gives them the environment's, as
#: their own CLIs do; the ``alarms`` task builds its own from the environment).
_SETTINGS_TASKS = frozenset({"integrity", "scenarios"})

_SECRET_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "DSN")


def _memlab_environment() -> dict[str, str]:
    """The ``MEMLAB_*`` variables of this process (values of keys, tokens, passwords and DSNs masked): what a suite
    or gate run measured besides memlab's defaults."""
    return {
        k: ("***" if any(part in k for part in _SECRET_PARTS) else v)
        for k, v in sorted(os.environ.items())
        if k.startswith("MEMLAB_")
    }


def _environment_line(environment: Mapping[str, str]) -> str:
    """``K=V, K=V`` of :func:`_memlab_environment`'s result."""
    return ", ".join(f"{k}={v}" for k, v in environment.items())


def _environment_settings() -> Any:
    """``Settings()`` from the environment, a bad value being a :class:`~memlab.errors.InvalidInputError`."""
    from memlab.config import Settings

    try:
        return Settings()
    except ValidationError as exc:
        raise InvalidInputError(f"A MEMLAB_* environment variable is invalid: {exc}") from exc


class SuiteEntry(BaseModel):
    """One entry of ``eval/suite.yaml``."""

    model_config = ConfigDict(extra="allow")

    task: str
    """Task name in :mod:`memlab.eval.tasks`."""
    judges: list[str] | None = None
    """Run once per judge (``judge=<name>`` passed to the runner); ``None``: run once without a judge."""
    runner: str | None = None
    """Optional ``"module:function"`` overriding the registry."""
    name: str | None = None
    """Optional run name (default ``<task>-<dataset>-<split>-<judge>``)."""

    def params(self) -> dict[str, Any]:
        """Keyword arguments for the runner (every extra key of the entry)."""
        return dict(self.model_extra or {})


class SuiteConfig(BaseModel):
    """``eval/suite.yaml``."""

    model_config = ConfigDict(extra="forbid")

    name: str = "default"
    """Suite name."""
    seed: int = 0
    """Seed passed to every task."""
    tasks: list[SuiteEntry] = Field(default_factory=list)
    """Entries, run in order."""


class SuiteResult(BaseModel):
    """What a suite run produced."""

    name: str
    """Suite name."""
    seconds: float
    """Wall time."""
    cpu_seconds: float = 0.0
    """CPU time of this process and its threads (the figure to trust on a shared, overloaded machine)."""
    rows: list[dict[str, Any]]
    """One summary row per run (``EvalRun.summary_row()`` + ``name``), or an error row."""
    failures: list[str] = Field(default_factory=list)
    """Entries that failed to run (error messages)."""
    skipped: list[str] = Field(default_factory=list)
    """Runs skipped because their judge cannot be loaded here (e.g. no trained default judge yet)."""
    environment: dict[str, str] = Field(default_factory=dict)
    """The ``MEMLAB_*`` variables set for the run (secrets masked): the integrity, scenarios and alarms tasks check
    with the environment's settings, as their own commands do, so a ``MEMLAB_INTEGRITY_*`` value changes figures."""

    @property
    def ok(self) -> bool:
        """No failed entry and every run's status is ``ok``."""
        return not self.failures and all(r.get("status") == "ok" for r in self.rows)

    def to_markdown(self) -> str:
        """The one summary table of the suite."""
        return (
            suite_table(self.rows)
            + f"\n\n{len(self.rows)} runs in {self.seconds:.0f} s wall ({self.cpu_seconds:.0f} s CPU)"
            + ("".join(f"\n- FAILED: {f}" for f in self.failures))
            + "".join(f"\n- skipped: {f}" for f in self.skipped)
            + "".join(f"\n- environment: {k}={v}" for k, v in self.environment.items())
        )


def load_suite(path: str | Path) -> SuiteConfig:
    """Parse a suite YAML file.

    Raises:
        NotFoundError: no such file.
        InvalidInputError: not valid YAML or not a valid suite.
    """
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"No suite file at {p}.")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        return SuiteConfig.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise InvalidInputError(f"{p} is not a valid suite definition: {exc}") from exc


#: judges loaded once per suite/gate run (a model loads once, not once per dataset); cleared after each run.
_JUDGE_CACHE: dict[str, Any] = {}


def _shared_judge(name: str) -> Any:
    """The judge ``name``, shared within one suite run. Judges that fit state per dataset (majority) are not shared."""
    if name in _JUDGE_CACHE:
        return _JUDGE_CACHE[name]
    from memlab.judges import load_judge

    judge = load_judge(name)
    if not callable(getattr(judge, "fit", None)):
        _JUDGE_CACHE[name] = judge
    return judge


def run_contradiction_task(
    *,
    out_dir: Path,
    seed: int,
    dataset: str,
    split: str | None = None,
    judge: str = "default",
    limit: int | None = None,
    data_dir: str | None = None,
    **kwargs: Any,
) -> EvalRun:
    """Suite runner of the ``contradiction`` task (see :func:`memlab.eval.evaluate_contradiction`)."""
    from memlab.eval.contradiction import evaluate_contradiction

    return evaluate_contradiction(
        dataset, split, judge=judge, data_dir=data_dir, limit=limit, seed=seed, out_dir=out_dir, **kwargs
    )


def _judge_available(name: str, cache: dict[str, str | None]) -> str | None:
    """``None`` when ``load_judge(name)`` works, else the reason (cached per suite run)."""
    if name not in cache:
        try:
            from memlab.judges import load_judge

            load_judge(name)
            cache[name] = None
        except (MemlabError, ImportError) as exc:
            cache[name] = f"{type(exc).__name__}: {exc}"
    return cache[name]


def _slug(*parts: Any) -> str:
    return "-".join(str(p).replace("/", "_") for p in parts if p not in (None, ""))


def run_suite(
    suite: str | Path | SuiteConfig = "eval/suite.yaml",
    *,
    out: str | Path = "runs/suite",
    full: bool = False,
    only: Sequence[str] | None = None,
    judges: Sequence[str] | None = None,
    echo: Callable[[str], None] | None = None,
) -> SuiteResult:
    """Run every entry of a suite and collect one summary row per run.

    Args:
        suite: path of the YAML file, or a parsed config.
        out: directory for the run directories, ``suite.json`` and ``suite.md``.
        full: drop every ``limit`` (score whole splits; slow).
        only: run only entries whose task or dataset is in this list.
        judges: override the judges of every entry that has judges.
        echo: called with a line of progress per run (the CLI prints it).

    The integrity and scenarios entries check with ``Settings()`` of the environment, as the alarms entry and the
    single-task commands do, so ``MEMLAB_INTEGRITY_*`` apply; every ``MEMLAB_*`` variable set is echoed and kept in
    :attr:`SuiteResult.environment`.

    Returns:
        A :class:`SuiteResult`; an entry that raises is recorded in ``failures`` and the suite goes on.

    Raises:
        InvalidInputError: a ``MEMLAB_*`` variable has an invalid value.
    """
    cfg = suite if isinstance(suite, SuiteConfig) else load_suite(suite)
    try:
        return _run_suite(cfg, out=out, full=full, only=only, judges=judges, echo=echo)
    finally:
        _JUDGE_CACHE.clear()


def _run_suite(
    cfg: SuiteConfig,
    *,
    out: str | Path,
    full: bool,
    only: Sequence[str] | None,
    judges: Sequence[str] | None,
    echo: Callable[[str], None] | None,
) -> SuiteResult:
    out_root = Path(out)
    out_root.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), _cpu()
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    skipped: list[str] = []
    judge_cache: dict[str, str | None] = {}
    environment = _memlab_environment()
    settings = _environment_settings()  # the checker a user runs, as `memlab eval integrity|scenarios|alarms` do
    if environment and echo is not None:
        echo("measuring with MEMLAB_* from the environment: " + _environment_line(environment))
    for entry in cfg.tasks:
        params = entry.params()
        if only and entry.task not in only and params.get("dataset") not in only:
            continue
        if full:
            params.pop("limit", None)
        entry_judges: list[str | None] = list(judges or entry.judges) if entry.judges else [None]
        for judge in entry_judges:
            name = entry.name or _slug(entry.task, params.get("dataset"), params.get("split"), judge)
            if judge is not None:
                reason = _judge_available(judge, judge_cache)
                if reason is not None:
                    skipped.append(name)
                    continue
            kwargs = dict(params)
            if judge is not None:
                kwargs["judge"] = judge
            if entry.task in _SETTINGS_TASKS and not entry.runner:
                kwargs.setdefault("settings", settings)
            t1, c1 = time.perf_counter(), _cpu()
            try:
                runner = resolve_runner(entry.runner) if entry.runner else get_task(entry.task)
                result = runner(out_dir=out_root / name, seed=cfg.seed, **kwargs)
            except MemlabError as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                log.warning("suite entry %s failed: %s", name, exc)
                continue
            for run in result if isinstance(result, list) else [result]:
                rows.append(_summary_row(name, run, t1, c1, echo))
    reasons = {j: r for j, r in judge_cache.items() if r is not None}
    skipped = [
        f"judge {j!r} unavailable ({r}): {sum(n.endswith('-' + j) for n in skipped)} runs skipped"
        for j, r in reasons.items()
    ]
    result = SuiteResult(
        name=cfg.name,
        seconds=time.perf_counter() - t0,
        cpu_seconds=_cpu() - c0,
        rows=rows,
        failures=failures,
        skipped=skipped,
        environment=environment,
    )
    (out_root / "suite.json").write_text(
        json.dumps(result.model_dump(), indent=2, default=str) + "\n", encoding="utf-8"
    )
    (out_root / "suite.md").write_text(result.to_markdown() + "\n", encoding="utf-8")
    return result


def _summary_row(
    name: str, run: EvalRun, t1: float, c1: float, echo: Callable[[str], None] | None
) -> dict[str, Any]:
    """The suite's row of one run (started at wall ``t1``, CPU ``c1``), echoed as a line of progress."""
    row = {
        "name": name,
        **run.summary_row(),
        "seconds_wall": time.perf_counter() - t1,
        "cpu_seconds": _cpu() - c1,
    }
    try:
        row["primary"] = run.metric()
        row["primary_metric"] = run.primary_metric
    except NotFoundError:
        row["primary"] = None
    if echo is not None:
        echo(
            f"{name}: {row['primary_metric'] if row.get('primary') is not None else 'primary'}="
            f"{_fmt(row.get('primary'))} n={row.get('n')} ({row['seconds_wall']:.1f} s wall, "
            f"{row['cpu_seconds']:.1f} s CPU)"
        )
    return row


def _cpu() -> float:
    """CPU seconds used by this process (all threads), children included."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


_COLUMNS = [
    ("task", "task"),
    ("dataset", "dataset"),
    ("split", "split"),
    ("judge", "judge"),
    ("n", "n"),
    ("primary_metric", "metric"),
    ("primary", "value"),
    ("contradiction.f1.ci_low", "ci_lo"),
    ("contradiction.f1.ci_high", "ci_hi"),
    ("contradiction.precision", "P"),
    ("contradiction.recall", "R"),
    ("accuracy", "acc"),
    ("macro_f1", "macro_f1"),
    ("ece", "ece"),
    ("false_contradiction_rate", "fcr"),
    ("coverage", "coverage"),
    ("pairs_per_second", "pairs/s"),
    ("status", "status"),
]


def suite_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The suite's summary table in markdown (fixed columns, 3 decimals; missing values left empty)."""
    rows = list(rows)
    header = [label for _, label in _COLUMNS]
    body = []
    for r in rows:
        line = []
        for key, _ in _COLUMNS:
            v = r.get(key)
            if key == "pairs_per_second" and isinstance(v, float):
                v = int(round(v))
            line.append(v)
        body.append(line)
    return markdown_table(header, body)


# --- CI regression gate --------------------------------------------------------------------------


class GateCheck(BaseModel):
    """One gated measurement in ``eval/baselines/<name>.json``."""

    model_config = ConfigDict(extra="forbid")

    task: str = "contradiction"
    """Task name."""
    dataset: str
    """Dataset."""
    split: str = "test"
    """Split."""
    limit: int | None = 300
    """Seeded sample size."""
    metric: str = "contradiction.f1"
    """Dotted metric path in the run."""
    baseline: float
    """Committed value."""
    higher_is_better: bool = True
    """Direction (the gate fails when the value moves the wrong way by more than the tolerance)."""
    tolerance: float | None = Field(default=None, ge=0)
    """This check's allowed move in the wrong direction; ``None`` uses the file's ``tolerance``. A small sample
    (e.g. 100 dialogues, where one flipped verdict moves F1 by ~0.01) may need a wider one."""


class GateBaseline(BaseModel):
    """A committed baseline file."""

    model_config = ConfigDict(extra="allow")

    name: str
    """Baseline name."""
    judge: str
    """Judge measured."""
    seed: int = 0
    """Seed of the samples."""
    tolerance: float = 0.02
    """Allowed drop before the gate fails."""
    checks: list[GateCheck]
    """The measurements."""


class GateResult(BaseModel):
    """Outcome of a gate run."""

    passed: bool
    """Whether every check is within tolerance."""
    rows: list[dict[str, Any]]
    """One row per check: dataset, metric, baseline, value, delta, ok, run path."""
    notes: list[str] = Field(default_factory=list)
    """E.g. the judge's weights differ from those the baseline was measured with."""

    def to_markdown(self) -> str:
        """The gate table plus a PASS/FAIL line."""
        header = ["task", "dataset", "split", "n", "metric", "baseline", "value", "delta", "tolerance", "ok"]
        table = markdown_table(header, [[r.get(h) for h in header] for r in self.rows])
        notes = "".join(f"\n- note: {n}" for n in self.notes)
        return (
            table
            + notes
            + ("\n\ngate: PASS" if self.passed else "\n\ngate: FAIL (regression beyond tolerance)")
        )


def load_baseline(path: str | Path) -> GateBaseline:
    """Parse a baseline JSON file.

    Raises:
        NotFoundError: missing file.
        InvalidInputError: invalid content.
    """
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"No baseline file at {p}.")
    try:
        return GateBaseline.model_validate_json(p.read_bytes())
    except ValidationError as exc:
        raise InvalidInputError(f"{p} is not a valid gate baseline: {exc}") from exc


def run_gate(
    baseline: str | Path,
    *,
    out: str | Path = "runs/ci_gate",
    judge: str | None = None,
    update: bool = False,
) -> GateResult:
    """Run the seeded smoke checks of a baseline file and compare with the committed numbers.

    Args:
        baseline: ``eval/baselines/<name>.json``.
        out: directory for the run directories.
        judge: override the baseline's judge (then the comparison is informative only).
        update: rewrite the baseline file's numbers with the measured ones (explicit, reviewed in the diff).

    Returns:
        A :class:`GateResult`; ``passed`` is False when any check regressed beyond the tolerance.
    """
    try:
        return _run_gate(baseline, out=out, judge=judge, update=update)
    finally:
        _JUDGE_CACHE.clear()


def _run_gate(baseline: str | Path, *, out: str | Path, judge: str | None, update: bool) -> GateResult:
    base = load_baseline(baseline)
    judge_name = judge or base.judge
    out_root = Path(out)
    rows = []
    passed = True
    new_checks = []
    notes: list[str] = []
    weights: str | None = None
    for chk in base.checks:
        runner = get_task(chk.task)
        run = runner(
            out_dir=out_root / _slug(chk.task, chk.dataset, chk.split, judge_name),
            seed=base.seed,
            dataset=chk.dataset,
            split=chk.split,
            limit=chk.limit,
            judge=judge_name,
        )
        judge_params = run.spec.params.get("judge") if isinstance(run.spec.params.get("judge"), dict) else {}
        weights = judge_params.get("weights_sha256") or weights
        value = run.metric(chk.metric)
        value = float(value) if value is not None else float("nan")
        delta = value - chk.baseline
        tol = base.tolerance if chk.tolerance is None else chk.tolerance
        ok = (delta >= -tol) if chk.higher_is_better else (delta <= tol)
        ok = ok and run.status == "ok"
        passed = passed and ok
        rows.append(
            {
                "task": chk.task,
                "dataset": chk.dataset,
                "split": chk.split,
                "n": run.spec.n,
                "metric": chk.metric,
                "baseline": chk.baseline,
                "value": value,
                "delta": delta,
                "tolerance": tol,
                "ok": ok,
                "path": str(run.path),
            }
        )
        new_checks.append(chk.model_copy(update={"baseline": round(value, 4)}))
    measured_with = (base.model_extra or {}).get("judge_weights_sha256")
    environment = _memlab_environment()
    if environment:
        notes.append(
            f"the baseline was measured with memlab's defaults; set here: {_environment_line(environment)}"
            " (the alarms check reads them, the others do not)"
        )
    if weights and measured_with and weights != measured_with and not update:
        notes.append(
            f"the {judge_name!r} judge's weights ({weights[:12]}) differ from those of the baseline "
            f"({str(measured_with)[:12]}): if the new judge is meant to ship, refresh with --update"
        )
    if update:
        data = base.model_dump()
        data["checks"] = [c.model_dump(exclude_none=True) for c in new_checks]
        data["judge"] = judge_name
        if weights:
            data["judge_weights_sha256"] = weights
        Path(baseline).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return GateResult(passed=passed, rows=rows, notes=notes)
