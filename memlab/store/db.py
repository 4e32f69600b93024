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

from memlab.errors import BackendError, InvalidInputError

__all__ = ["Database", "is_database"]


class Database:
    """A SQLite connection with a lock, transactions and per-component migrations.

    Args:
        path: a file path, or ``":memory:"`` for a private in-memory database.

    Raises:
        InvalidInputError: an empty path (SQLite would silently use a throw-away temporary database), a
            directory, or a file that is not an SQLite database.
        BackendError: the file cannot be opened or written (permissions, disk full ...).
    """

    #: The SQL dialect (:class:`~memlab.store.pg_db.PgDatabase` is ``"postgresql"``), for the few statements that
    #: differ between the two (full-text queries, the agent's claim, the write probe).
    dialect = "sqlite"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.in_memory = self.path == ":memory:"
        if not self.path.strip():
            raise InvalidInputError(
                f"The database path must be a file path (or ':memory:'). Got {self.path!r} instead."
            )
        if not self.in_memory:
            if Path(self.path).is_dir():
                raise InvalidInputError(f"{self.path} is a directory, not a memlab database file.")
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BackendError(f"Cannot create the folder of the database {self.path}: {exc}") from exc
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise BackendError(f"Cannot open SQLite database {self.path}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        self.closed = False
        try:
            if not self.in_memory:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS memlab_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
        except sqlite3.Error as exc:
            self._conn.close()
            self.closed = True
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
                raise InvalidInputError(f"{self.path} is not a memlab database (not an SQLite file).") from exc
            raise _backend_error(self.path, exc) from exc

    def reopen(self) -> None:
        """Replace the connection with a fresh one (no-op in memory, when closed or inside a transaction).

        SQLite opens a file that cannot be written read-only and keeps it so for the life of the connection: after
        the file becomes writable again only a new connection can write (``memlab serve`` calls this when its write
        probe finds it so). Connection-level pragmas set by hand (``query_only``, ``max_page_count``) are not kept.

        Raises:
            BackendError: the file cannot be opened.
        """
        with self._lock:
            if self.in_memory or self.closed or self._depth or self._conn.in_transaction:
                return
            try:
                conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
                conn.row_factory = sqlite3.Row
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise _backend_error(self.path, exc) from exc
            old, self._conn = self._conn, conn
            old.close()

    @property
    def lock(self) -> threading.RLock:
        """The re-entrant lock held around every statement and transaction. Hold it to make a transaction and
        in-memory bookkeeping about its outcome (e.g. a store's caches) one atomic step for other threads."""
        return self._lock

    @property
    def in_transaction(self) -> bool:
        """True while a transaction of this connection is open (on any thread)."""
        return self._depth > 0 or self._conn.in_transaction

    # -- statements ---------------------------------------------------------------------------
    # A database that cannot be written (read-only file, full disk, I/O error, corrupt file, lock timeout) raises
    # BackendError naming the file; constraint violations (sqlite3.IntegrityError) and misuse
    # (sqlite3.ProgrammingError) stay as they are: they are bugs or handled by the caller.
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run one statement (inside the current transaction, if any)."""
        with self._lock, self._errors():
            return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        """Run one statement over many parameter rows."""
        with self._lock, self._errors():
            return self._conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a SELECT and return all rows."""
        with self._lock, self._errors():
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Row | None:
        """Run a SELECT and return the first row (or None)."""
        with self._lock, self._errors():
            cur = self._conn.execute(sql, params)
            try:
                return cur.fetchone()  # type: ignore[no-any-return]
            finally:
                cur.close()  # the statement is finished (an INSERT ... RETURNING is not left open)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError):
                raise
            raise _backend_error(self.path, exc) from exc

    def _rollback(self) -> None:
        # SQLite may already have rolled back by itself (e.g. on SQLITE_FULL): then there is nothing to undo
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error). Nested calls join the outer one.

        Raises:
            BackendError: the database cannot be written (read-only, disk full ...); nothing of the
                transaction is kept.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            with self._errors():
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                try:
                    yield self
                except BaseException:
                    self._rollback()
                    raise
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    self._rollback()
                    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
                        raise _backend_error(self.path, exc) from exc
                    raise
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
                with self.transaction(), self._errors():
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


def _backend_error(path: str, exc: sqlite3.Error) -> BackendError:
    """A one-line :class:`BackendError` for a failed SQLite statement, saying what happened in plain words."""
    code = getattr(exc, "sqlite_errorname", "")
    what = {
        "SQLITE_READONLY": "the database is read-only",
        "SQLITE_FULL": "the disk (or the database's size limit) is full",
        "SQLITE_IOERR": "a disk I/O error occurred",
        "SQLITE_CORRUPT": "the database file is corrupt",
        "SQLITE_NOTADB": "the file is not a memlab database (not an SQLite file)",
        "SQLITE_BUSY": "the database is locked by another process",
        "SQLITE_CANTOPEN": "the database file cannot be opened",
    }.get("_".join(code.split("_")[:2]), "")  # SQLITE_IOERR_WRITE -> SQLITE_IOERR
    return BackendError(f"Database {path}: {what} ({exc})." if what else f"Database {path}: {exc}.")


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def is_database(obj: object) -> bool:
    """Whether ``obj`` is one of memlab's databases: SQLite's :class:`Database` or PostgreSQL's
    :class:`~memlab.store.pg_db.PgDatabase` (the same interface).

    Example:
        >>> is_database(Database(":memory:")), is_database(":memory:")
        (True, False)
    """
    from memlab.store.pg_db import PgDatabase

    return isinstance(obj, Database | PgDatabase)
