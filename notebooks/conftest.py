"""Notebook tests (nbval): every notebook runs the real packaged models, so each cell carries the `model` marker
(`make test-fast` leaves them out; `make test` runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.model)
