"""Fixtures for the lab tests, shared with the suites they came from: the judge tests' tiny random NLI model (the
training tests fine-tune it) and the embedding tests' tiny ``datasets/`` folder (calibration and candidate bench)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_TESTS = Path(__file__).resolve().parent.parent


def _conftest(suite: str) -> ModuleType:
    """Another suite's conftest module, loaded by path (the test folders are not packages)."""
    spec = importlib.util.spec_from_file_location(f"_memlab_tests_{suite}_conftest", _TESTS / suite / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make_data_dir(root: Path, *, with_test: bool) -> Any:
    return _conftest("embedding").make_data_dir(root, with_test=with_test)


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny 3-way NLI model whose config says CONTRADICTION / ENTAILMENT / NEUTRAL (any case)."""
    return _conftest("judges").build_tiny_model(  # type: ignore[no-any-return]
        tmp_path_factory.mktemp("tiny_nli"), {0: "ENTAILMENT", 1: "Neutral", 2: "contradiction"}
    )


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    """train/dev AND test files (for the held-out bench)."""
    return _make_data_dir(tmp_path / "datasets", with_test=True)  # type: ignore[no-any-return]


@pytest.fixture
def tiny_train_dev(tmp_path: Path) -> Path:
    """train/dev files only: the calibration must never need a test split."""
    return _make_data_dir(tmp_path / "datasets_nt", with_test=False)  # type: ignore[no-any-return]
