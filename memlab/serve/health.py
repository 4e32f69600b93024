"""Write health of ``memlab serve``: can the database be written right now, and if not, why.

``/health`` used to read the database only, so a server on a read-only file or a full disk answered "ok" while every
write answered 503. :func:`write_health` makes a real write in a transaction that is always rolled back (a table and a
few pages of data: the size of a typical batch, so a database at its size limit fails it), and reports the reason
when it fails. SQLite keeps a connection that opened a read-only file read-only for good: when the probe (or a
request) fails with ``SQLITE_READONLY`` and a fresh connection can write, the store's connection is reopened, so the
server recovers without a restart as soon as the file is writable again (:func:`recover_writes`).

Example:
    >>> from memlab.store.db import Database
    >>> write_health(Database(":memory:"))["ok"]
    True
"""

from __future__ import annotations

import logging
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any

from memlab.errors import BackendError

__all__ = ["PROBE_PAGES", "WriteLog", "is_read_only", "recover_writes", "write_health"]

log = logging.getLogger(__name__)

#: Pages of data the probe writes (then rolls back): a database that cannot grow by this much fails the probe.
PROBE_PAGES = 4
_PROBE_TABLE = "memlab_write_probe"


class _RollBack(Exception):  # noqa: N818 - a private signal that never leaves this module, not an error
    """Raised inside the probe's transaction to roll it back."""


class WriteLog:
    """The last failed write of the server (the health check's second witness beside the probe)."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.at: str | None = None

    def record(self, exc: BaseException) -> None:
        self.error = str(exc)
        self.at = datetime.now(UTC).isoformat(timespec="seconds")


def is_read_only(exc: BaseException) -> bool:
    """True when ``exc`` (or its cause) is SQLite's ``SQLITE_READONLY``."""
    cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__
    return str(getattr(cause, "sqlite_errorname", "")).startswith("SQLITE_READONLY")


def _probe(db: Any) -> None:
    """A write that is always rolled back (raises :class:`BackendError` when the database cannot be written)."""
    try:
        with db.transaction():
            if db.dialect == "postgresql":  # a server that refuses writes (read-only standby, disk full) fails here
                db.execute(f"CREATE TABLE IF NOT EXISTS {_PROBE_TABLE} (x bytea)")
                db.execute(f"INSERT INTO {_PROBE_TABLE} VALUES (?)", (bytes(PROBE_PAGES * 8192),))
                raise _RollBack
            db.execute(f"CREATE TABLE IF NOT EXISTS {_PROBE_TABLE} (x BLOB)")
            page = int(db.query_one("PRAGMA page_size")[0])
            db.execute(f"INSERT INTO {_PROBE_TABLE} VALUES (zeroblob(?))", (PROBE_PAGES * page,))
            raise _RollBack
    except _RollBack:
        return


def _fresh_connection_writes(path: str) -> bool:
    """Can a new connection write the file (the probe, on a connection of its own)?"""
    try:
        con = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute(f"CREATE TABLE IF NOT EXISTS {_PROBE_TABLE} (x BLOB)")
        con.execute("ROLLBACK")
        return True
    except sqlite3.Error:
        return False
    finally:
        con.close()


def recover_writes(db: Any) -> bool:
    """Reopen ``db``'s connection when the file has become writable again; True when it did."""
    if db.in_memory or db.closed or db.dialect != "sqlite" or not _fresh_connection_writes(db.path):
        return False
    db.reopen()
    log.warning("database %s is writable again: connection reopened", db.path)
    return True


def write_health(db: Any, writes: WriteLog | None = None) -> dict[str, Any]:
    """The ``writes`` entry of ``/health``: ``ok``, ``ms``, and on failure ``error`` (why), plus the last failed
    write of the server (``last_error``, ``last_error_at``) when there was one. Never raises."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"ok": True}
    try:
        _probe(db)
    except BackendError as exc:
        if not (is_read_only(exc) and recover_writes(db)):
            out = {"ok": False, "error": f"writes fail: {exc}"}
        else:
            try:
                _probe(db)
                out["recovered"] = True
            except BackendError as again:
                out = {"ok": False, "error": f"writes fail: {again}"}
    except Exception as exc:  # noqa: BLE001 - misuse, a constraint, a foreign store: reported, never raised
        out = {"ok": False, "error": f"writes fail: {type(exc).__name__}: {exc}"}
    out["ms"] = round((time.perf_counter() - t0) * 1000, 2)
    if writes is not None and writes.error is not None:
        out["last_error"], out["last_error_at"] = writes.error, writes.at
    return out
