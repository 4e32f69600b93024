"""Every benchmark writes an eval run: ``run.json`` + ``examples.jsonl`` (:mod:`memlab.eval.runs`) and ``bench.md``.

So ``memlab eval show DIR``, ``memlab eval compare DIR...``, :func:`memlab.eval.runs.load_run` and the dashboard read
a benchmark like any evaluation: the spec's task is ``bench-<name>``, ``metrics`` holds the figures (nested groups),
and the examples are the benchmark's per-case rows (one timed operation, one configuration, one phase ...).

Example:
    >>> import tempfile
    >>> from memlab.eval.runs import load_run
    >>> d = tempfile.mkdtemp()
    >>> _ = write_bench_run(d, "demo", params={"k": 1}, seed=0, n=2, metrics={"search": {"p50_ms": 1.5}},
    ...                     primary_metric="search.p50_ms", markdown="| search p50 | 1.5 |")
    >>> run = load_run(d)
    >>> run.spec.task, run.metric()
    ('bench-demo', 1.5)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memlab.errors import NotFoundError
from memlab.eval.runs import EvalRun, Example, make_spec, write_run

__all__ = ["BENCH_MARKDOWN", "metric_key", "write_bench_run"]

#: The human-readable table written next to ``run.json``.
BENCH_MARKDOWN = "bench.md"


def metric_key(name: str) -> str:
    """``name`` usable as one step of a dotted metric path (dots become underscores).

    Example:
        >>> metric_key("hf:intfloat/e5.small")
        'hf:intfloat/e5_small'
    """
    return str(name).replace(".", "_")


def _lookup(metrics: Mapping[str, Any], dotted: str) -> bool:
    node: Any = metrics
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def write_bench_run(
    out_dir: str | Path,
    name: str,
    *,
    params: Mapping[str, Any],
    seed: int | None,
    n: int,
    metrics: Mapping[str, Any],
    primary_metric: str,
    examples: Iterable[Example | Mapping[str, Any]] = (),
    notes: Sequence[str] = (),
    markdown: str | None = None,
    **spec_extra: Any,
) -> EvalRun:
    """Write one benchmark's run directory (created; existing files replaced).

    Args:
        out_dir: the run directory.
        name: the benchmark (the spec's task is ``bench-<name>``).
        params: the benchmark's options and components (JSON-serialisable).
        seed: corpus / sampling seed (``None`` when nothing is random).
        n: units measured (memories, messages, requests per operation, pairs ...).
        metrics: the figures, nested by group.
        primary_metric: dotted path of the headline figure in ``metrics``.
        examples: per-case rows.
        notes: caveats worth keeping with the numbers.
        markdown: the benchmark's own table, written to ``bench.md``.
        **spec_extra: more spec fields (``judge``, ``command``, ``machine`` ...).

    Returns:
        The written :class:`~memlab.eval.runs.EvalRun`.

    Raises:
        NotFoundError: ``primary_metric`` is not in ``metrics``.
    """
    if not _lookup(metrics, primary_metric):
        raise NotFoundError(f"The primary metric {primary_metric!r} of bench-{name} is not among its metrics.")
    spec = make_spec(f"bench-{name}", params=params, seed=seed, n=n, **spec_extra)
    run = write_run(out_dir, spec=spec, metrics=metrics, examples=examples, notes=notes,
                    primary_metric=primary_metric)
    if markdown is not None:
        (Path(out_dir) / BENCH_MARKDOWN).write_text(markdown + "\n", encoding="utf-8")
    return run
