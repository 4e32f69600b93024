"""A thin, thread-safe SQLite wrapper shared by the store and the services that live in the same file.

One :class:`Database` per file per process. WAL journal, foreign keys on, one re-entrant lock around
every statement (the background agent touches the database from worker threads). Schema migrations are
versioned per component in the ``memlab_schema`` table; the memory store's version is also mirrored in
``PRAGMA user_version``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.errors import BackendError

__all__ = ["Database"]


class Database:
    """A SQLite connection with a lock, transactions and per-component migrations.

    Args:
        path: a file path, or ``":memory:"`` for a private in-memory database.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.in_memory = self.path == ":memory:"
        if not self.in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise BackendError(f"Cannot open SQLite database {self.path}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        if not self.in_memory:
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS memlab_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        self.closed = False

    # -- statements ---------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run one statement (inside the current transaction, if any)."""
        with self._lock:
            return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        """Run one statement over many parameter rows."""
        with self._lock:
            return self._conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a SELECT and return all rows."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Row | None:
        """Run a SELECT and return the first row (or None)."""
        with self._lock:
            return self._conn.execute(sql, params).fetchone()

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error). Nested calls join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._depth = 0

    # -- migrations ---------------------------------------------------------------------------
    def migrate(self, component: str, migrations: Sequence[str]) -> int:
        """Apply the not-yet-applied ``migrations`` (SQL scripts, in order) of ``component``.

        Returns:
            The component's schema version after migrating (``len(migrations)``).
        """
        with self._lock:
            row = self.query_one("SELECT version FROM memlab_schema WHERE component = ?", (component,))
            current = int(row["version"]) if row else 0
            if current > len(migrations):
                raise BackendError(
                    f"{self.path}: schema of {component!r} is version {current}, newer than this memlab "
                    f"knows ({len(migrations)}). Upgrade memlab."
                )
            for version in range(current, len(migrations)):
                with self.transaction():
                    for stmt in _split_sql(migrations[version]):
                        self._conn.execute(stmt)
                    self._conn.execute(
                        "INSERT INTO memlab_schema(component, version) VALUES (?, ?) "
                        "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                        (component, version + 1),
                    )
            return len(migrations)

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes whenever another connection commits to the file."""
        row = self.query_one("PRAGMA data_version")
        return int(row[0]) if row else 0

    def user_version(self) -> int:
        """``PRAGMA user_version``."""
        row = self.query_one("PRAGMA user_version")
        return int(row[0]) if row else 0

    def set_user_version(self, version: int) -> None:
        """Set ``PRAGMA user_version``."""
        self.execute(f"PRAGMA user_version = {int(version)}")

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self.closed:
                self._conn.close()
                self.closed = True


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
