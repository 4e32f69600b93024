"""Task registry: ``memlab eval suite`` dispatches each entry of ``eval/suite.yaml`` on its ``task`` field.

A task runner is a function ``runner(*, out_dir: Path, seed: int, **params) -> EvalRun`` (or a list of runs):
``params`` are the suite entry's keys other than ``task``, ``judges`` and ``runner`` (typically ``dataset``,
``split``, ``limit``, ``judge``, ``data_dir``). Register one with :func:`register_task`, either with the
function or with a lazy ``"package.module:function"`` string (imported on first use, so the registry stays
cheap and the import direction eval <- services is kept). A suite entry may also name its runner directly
with ``runner: "package.module:function"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from memlab.errors import InvalidInputError, UnknownComponentError

__all__ = [
    "TaskRunner",
    "available_tasks",
    "get_task",
    "register_task",
    "resolve_runner",
]

TaskRunner = Callable[..., Any]

_TASKS: dict[str, TaskRunner | str] = {
    "contradiction": "memlab.eval.suite:run_contradiction_task",
    "integrity": "memlab.eval.integrity:run_integrity_task",
    "memory-recall": "memlab.eval.memory_recall:run_memory_recall_task",
    "extraction": "memlab.eval.extraction_task:run_extraction_task",
    "alarms": "memlab.eval.alarms:run_alarms_task",
    "scenarios": "memlab.eval.scenarios:run_scenarios_task",
    # other engineers: add "name": "memlab.<package>.<module>:<function>" here, or call register_task()
}


def register_task(name: str, runner: TaskRunner | str) -> None:
    """Register ``runner`` (a callable or ``"module:function"``) under ``name`` (replaces an existing entry).

    Raises:
        InvalidInputError: empty name, or a string runner without ``":"``.

    Example:
        >>> register_task("demo", "memlab.eval.suite:run_contradiction_task")
        >>> "demo" in available_tasks()
        True
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(
            f"The 'name' parameter of register_task must be a non-empty str. Got {name!r} instead."
        )
    if isinstance(runner, str) and ":" not in runner:
        raise InvalidInputError(
            f"The 'runner' parameter of register_task must be a callable or 'module:function'. Got {runner!r} instead."
        )
    _TASKS[name] = runner


def available_tasks() -> list[str]:
    """Registered task names, sorted."""
    return sorted(_TASKS)


def resolve_runner(ref: TaskRunner | str) -> TaskRunner:
    """Import a ``"module:function"`` reference (callables are returned as they are).

    Raises:
        UnknownComponentError: the module or function does not exist.
    """
    if callable(ref):
        return ref
    module, _, attr = str(ref).partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownComponentError("task runner", str(ref), [str(v) for v in _TASKS.values()]) from exc
    if not callable(fn):
        raise UnknownComponentError("task runner", str(ref), [str(v) for v in _TASKS.values()])
    return fn


def get_task(name: str) -> TaskRunner:
    """The runner registered as ``name``.

    Raises:
        UnknownComponentError: unknown task (lists valid names).

    Example:
        >>> callable(get_task("contradiction"))
        True
    """
    if name not in _TASKS:
        raise UnknownComponentError("task", str(name), available_tasks())
    return resolve_runner(_TASKS[name])
