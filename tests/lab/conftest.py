"""Fixtures for the lab tests: the judge tests' tiny random NLI model (the training tests fine-tune it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_JUDGES_CONFTEST = Path(__file__).resolve().parent.parent / "judges" / "conftest.py"


def _build_tiny_model(path: Path, id2label: dict[int, str]) -> Path:
    spec = importlib.util.spec_from_file_location("_memlab_tests_judges_conftest", _JUDGES_CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tiny_model(path, id2label)  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny 3-way NLI model whose config says CONTRADICTION / ENTAILMENT / NEUTRAL (any case)."""
    return _build_tiny_model(
        tmp_path_factory.mktemp("tiny_nli"), {0: "ENTAILMENT", 1: "Neutral", 2: "contradiction"}
    )
