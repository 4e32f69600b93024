"""The fast loop's guard: tests/conftest.py fails a test that starts another Python process without the
``subprocess`` marker, by subprocess or as a spawned multiprocessing worker (and lets a marked one, or a short helper
program like ``git``, through)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

SUITE = '''
import multiprocessing
import os
import subprocess
import sys

import pytest


def test_unmarked_starts_python():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.subprocess
def test_marked_starts_python():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_runs_a_helper_program():
    subprocess.run(["true"], check=True)


def test_unmarked_spawns_a_multiprocessing_worker():
    worker = multiprocessing.get_context("spawn").Process(target=os.getpid)
    worker.start()
    worker.join(timeout=120)
    assert worker.exitcode == 0
'''


@pytest.mark.subprocess
def test_an_unmarked_test_starting_python_fails(tmp_path: Path) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(textwrap.dedent("""
        [pytest]
        addopts = --strict-markers -p no:langsmith_plugin
        markers =
            model: loads a real model
            subprocess: starts another Python process
    """), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 1, out
    # the check runs when the test is over, so pytest reports it as an error at teardown
    assert "4 passed, 2 errors" in out, out
    assert "ERROR test_suite.py::test_unmarked_starts_python" in out, out
    assert "ERROR test_suite.py::test_unmarked_spawns_a_multiprocessing_worker" in out, out
    assert "a multiprocessing worker" in out, out
    assert "not marked @pytest.mark.subprocess" in out, out
    assert "PASSED test_suite.py::test_marked_starts_python" in out, out
    assert "PASSED test_suite.py::test_unmarked_runs_a_helper_program" in out, out
