"""Fixtures for the LLM backend tests: a real HTTP server on loopback per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memlab.llm.fake_server import FakeLLMServer


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A fresh loopback server (127.0.0.1, free port, own thread)."""
    with FakeLLMServer() as srv:
        yield srv
