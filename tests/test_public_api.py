"""The public API: `__all__` sorted, complete and documented (httpx test_exported_members pattern)."""

from __future__ import annotations

import inspect

import memlab


def test_all_is_sorted_and_exported():
    names = [n for n in memlab.__all__ if n != "__version__"]
    assert names == sorted(names, key=str)
    for name in memlab.__all__:
        assert hasattr(memlab, name), name


def test_every_public_name_has_a_docstring():
    for name in memlab.__all__:
        obj = getattr(memlab, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"
