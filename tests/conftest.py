"""Shared fixtures. Every test runs offline, with MEMLAB_* variables stripped from the environment."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# read once at import, before the autouse fixture strips MEMLAB_* variables
_SEED = int(os.environ.get("MEMLAB_TEST_SEED", "0"))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strip MEMLAB_* variables so tests never depend on the caller's shell."""
    for k in list(os.environ):
        if k.startswith("MEMLAB_"):
            monkeypatch.delenv(k, raising=False)


@pytest.fixture
def seed() -> int:
    """Random seed for a test; set MEMLAB_TEST_SEED to reproduce another one (sklearn pattern)."""
    return _SEED


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A seeded numpy generator."""
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def minilm():
    """The real packaged MiniLM embedder, loaded once per session."""
    from memlab.embedding import load_embedder

    return load_embedder("minilm")


@pytest.fixture
def fake_embedder():
    """A deterministic fake embedder (unit tests of logic only)."""
    from memlab.testing import FakeEmbedder

    return FakeEmbedder(dim=32)
