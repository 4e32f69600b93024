"""memlab.datasets and memlab.eval: ``__all__`` sorted, exported and documented."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

import memlab.datasets
import memlab.eval
import memlab.eval.contradiction
import memlab.eval.plots
import memlab.eval.runs
import memlab.eval.suite
import memlab.eval.tasks
import memlab.eval.text_metrics
import memlab.judges.baselines

MODULES = [
    memlab.datasets,
    memlab.eval,
    memlab.eval.contradiction,
    memlab.eval.plots,
    memlab.eval.runs,
    memlab.eval.suite,
    memlab.eval.tasks,
    memlab.eval.text_metrics,
    memlab.judges.baselines,
]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_sorted_exported_documented(module: ModuleType) -> None:
    names = list(module.__all__)
    assert names == sorted(names)
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"
