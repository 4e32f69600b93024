"""Shared fixtures. Every test runs offline, with MEMLAB_* variables stripped from the environment."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The default llm_backend "auto" runs the in-process llama.cpp model (memlab[llm-local]) wherever memlab is opened
# without a model: doctests, notebooks, CLI subprocesses. The suite runs without one; real-model tests opt in.
os.environ["MEMLAB_LLM_BACKEND"] = "none"

# Temporary folders in RAM when the machine has /dev/shm: the tests open ~450 real SQLite files, and a commit there
# costs ~0.3 ms instead of ~6 ms of disk fsync. The files are still real SQLite files (and survive a killed process
# the same way). MEMLAB_TEST_TMPDIR names another folder; an explicit TMPDIR from the caller is kept.
if "TMPDIR" not in os.environ:
    _ram = os.environ.get("MEMLAB_TEST_TMPDIR", "/dev/shm")
    if os.path.isdir(_ram) and os.access(_ram, os.W_OK):
        import tempfile

        os.environ["TMPDIR"] = _ram
        tempfile.tempdir = None  # recomputed from TMPDIR on next use

# read once at import, before the autouse fixture strips MEMLAB_* variables
_SEED = int(os.environ.get("MEMLAB_TEST_SEED", "0"))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strip MEMLAB_* variables so tests never depend on the caller's shell.

    ``MEMLAB_LLM_BACKEND=none``: the default ``auto`` would give every ``open_memlab`` the in-process llama.cpp
    model when ``memlab[llm-local]`` is installed; tests that want the real model opt in (marked ``model``).
    """
    for k in list(os.environ):
        if k.startswith("MEMLAB_"):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MEMLAB_LLM_BACKEND", "none")


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


# ---------------------------------------------------------------------------------------------------------------
# The `model` marker: the fast inner loop (`make test-fast`) leaves out `model` tests, so a test that runs a real
# model (the packaged embedders, a trained judge) must say so. This fixture enforces it: it wraps the real models'
# inference entry points for the duration of each test and fails an unmarked test that reached one.
# ---------------------------------------------------------------------------------------------------------------

_MODEL_ENTRY_POINTS = (
    ("memlab.embedding.sentence_transformers", "SentenceTransformerEmbedder", "_encode"),
    ("memlab.embedding.e5", "E5Embedder", "encode_raw"),
    ("memlab.judges.hf", "HFJudge", "logits"),
    ("memlab.llm.llamacpp", "LlamaCppLLM", "_complete_once"),
)


@pytest.fixture(autouse=True)
def _enforce_model_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    import importlib

    if request.node.get_closest_marker("model") is not None:
        yield
        return
    used: list[str] = []
    for mod_name, cls_name, attr in _MODEL_ENTRY_POINTS:
        cls = getattr(importlib.import_module(mod_name), cls_name)
        original = getattr(cls, attr)

        def wrapper(self, *args, __original=original, __what=f"{cls_name}.{attr}", **kwargs):
            used.append(__what)
            return __original(self, *args, **kwargs)

        monkeypatch.setattr(cls, attr, wrapper)
    yield
    if used:
        pytest.fail(f"This test runs a real model ({used[0]}) but is not marked @pytest.mark.model; mark it so "
                    "`make test-fast` stays the fast loop.", pytrace=False)


# ---------------------------------------------------------------------------------------------------------------
# The `subprocess` marker: a test that starts another Python process (the CLI, a stdio MCP server, a kill -9 crash
# test, `make dashboard`) pays an interpreter start and memlab's imports each time, so the one-minute loop
# `pytest -m "not model and not subprocess"` (`make test-fast`) leaves it out. This fixture fails a test outside both
# markers that started one. Short helper programs (git, chattr, uname) are not counted.
# ---------------------------------------------------------------------------------------------------------------

_INTERPRETERS = ("python", "make", "memlab", "streamlit")


def _starts_interpreter(args: object) -> bool:
    """True when ``Popen(args)`` runs Python (this interpreter, any ``python*``) or a launcher of it."""
    import sys

    first = args if isinstance(args, str | bytes | os.PathLike) else (list(args) or [""])[0]  # type: ignore[call-overload]
    words = os.fsdecode(first).split()
    program = words[0] if words else ""
    if program and os.path.realpath(program) == os.path.realpath(sys.executable):
        return True
    return os.path.basename(program).startswith(_INTERPRETERS)


@pytest.fixture(autouse=True)
def _enforce_subprocess_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    import subprocess

    if request.node.get_closest_marker("subprocess") or request.node.get_closest_marker("model"):
        yield
        return
    started: list[str] = []
    original = subprocess.Popen.__init__

    def init(self, args, *rest, **kwargs):
        if _starts_interpreter(args):
            started.append(str(args)[:200])
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", init)
    yield
    if started:
        pytest.fail(f"This test starts another Python process ({started[0]}) but is not marked "
                    "@pytest.mark.subprocess; mark it so `make test-fast` stays the one-minute loop.", pytrace=False)
