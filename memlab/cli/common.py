"""What every command shares: the checks of ``--db``, ``--port`` and folder paths, the server socket, and the one
line a failure prints.

A bad argument or an environment that refuses it (a missing or read-only folder, a port out of range or in use,
a file that is not SQLite) is reported as ``memlab: error: <one line>`` on stderr with exit code 1, never a
traceback: :func:`error_line` is what :func:`memlab.cli.main.main` prints for every :class:`MemlabError` and
:class:`OSError`. The checks run before anything is created, so a bad ``--db`` leaves no file or folder behind
(``--db postgresql://...`` used to create a folder named ``postgresql:``).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any

from memlab.errors import InvalidInputError, MemlabError

__all__ = ["bind", "check_db", "check_folder", "check_port", "error_line", "run_server"]

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def error_line(exc: BaseException) -> str:
    """``memlab: error: ...`` on one line: the message of a :class:`MemlabError`, or an :class:`OSError`'s reason
    and file (``[Errno 13] Permission denied: '/x'`` becomes ``Permission denied: /x``)."""
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc.strerror)
    else:
        text = str(exc) or type(exc).__name__
    return "memlab: error: " + " ".join(text.split())


def _probe_writable(folder: Path, flag: str) -> None:
    """Create and delete a file in ``folder`` (``os.access`` says yes to root on /proc and read-only mounts)."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".memlab-probe-"):
            pass
    except OSError as exc:
        raise InvalidInputError(f"{flag}: cannot write in the folder {str(folder)!r} "
                                f"({exc.strerror or exc}).") from None


def check_db(value: str | os.PathLike[str], *, flag: str = "--db") -> Path | str:
    """The database of ``--db``, checked before anything is opened or created: an SQLite file path, or a
    ``postgresql://`` URL (returned as it is; the server is reached when the command opens it).

    Raises:
        InvalidInputError: an empty value, a URL of another scheme, a directory, an existing file that is not
            SQLite, or a new file whose folder is missing or not writable.
    """
    from memlab.store.memory import is_postgres_url

    raw = os.fspath(value)
    if not raw.strip():
        raise InvalidInputError(f"{flag} must be a file path (got an empty string).")
    if is_postgres_url(raw):
        return raw
    if _URL.match(raw):
        scheme = raw.split("://", 1)[0]
        raise InvalidInputError(f"{flag} must be a SQLite file path or a postgresql:// URL; got a {scheme}:// URL.")
    path = Path(raw)
    if path.is_dir():
        raise InvalidInputError(f"{flag} {raw!r} is a directory; give a SQLite file path.")
    if path.exists():
        _check_sqlite(path, flag)
        return path
    parent = path.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise InvalidInputError(f"{flag} {raw!r}: the folder {str(parent)!r} {what} (create it first).")
    _probe_writable(parent, flag)
    return path


def _check_sqlite(path: Path, flag: str) -> None:
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return  # unreadable: opening it reports why (e.g. a read-only database is served and reported by /health)
    if head and head != SQLITE_HEADER:
        raise InvalidInputError(f"{flag} {str(path)!r} is not a memlab database (not an SQLite file).")


def check_folder(value: str | os.PathLike[str], *, flag: str) -> Path:
    """A folder memlab may create files in (``--qdrant-path``): an existing writable folder, or a new one whose
    parent exists and is writable.

    Raises:
        InvalidInputError: an empty value, a file, a missing parent, or a folder that refuses a write.
    """
    raw = os.fspath(value)
    if not raw.strip():
        raise InvalidInputError(f"{flag} must be a folder path (got an empty string).")
    path = Path(raw)
    if path.exists() and not path.is_dir():
        raise InvalidInputError(f"{flag} {raw!r} is a file; give a folder.")
    if path.is_dir():
        _probe_writable(path, flag)
        return path
    if not path.parent.is_dir():
        raise InvalidInputError(f"{flag} {raw!r}: the folder {str(path.parent)!r} does not exist (create it first).")
    _probe_writable(path.parent, flag)
    return path


def check_port(port: Any, *, flag: str = "--port") -> int:
    """A TCP port to listen on, in [1, 65535].

    Raises:
        InvalidInputError: anything else.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidInputError(f"{flag} must be a TCP port in [1, 65535]. Got {port!r} instead.")
    return port


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket bound to ``host:port`` (before any model or database is loaded, so a port in use
    fails at once).

    Raises:
        InvalidInputError: a bad port.
        OSError: the host does not resolve, the port is in use or needs privileges (one line via :func:`error_line`).
    """
    check_port(port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InvalidInputError(f"--host {host!r} is not an address of this machine ({exc.strerror}).") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class _StartupGuard:
    """ASGI wrapper that keeps the exception of a failed startup (a database that cannot be opened ...) for the
    CLI to report in one line, instead of uvicorn's traceback."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.error: BaseException | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def quiet_send(message: Any) -> None:
            if message.get("type") == "lifespan.startup.failed":
                message = {"type": "lifespan.startup.failed", "message": ""}  # the traceback text: reported by us
            await send(message)

        try:
            await self.app(scope, receive, quiet_send)
        except Exception as exc:
            self.error = exc
            raise

    def filter(self, record: logging.LogRecord) -> bool:
        """A logging filter: drop uvicorn's own startup-failure lines once the error is kept for the CLI."""
        return not (self.error is not None and isinstance(self.error, MemlabError | OSError))


def run_server(app: Any, sock: socket.socket, *, host: str, port: int, log_level: str, **config: Any) -> None:
    """Serve ``app`` with uvicorn on the bound ``sock`` until stopped (SIGINT/SIGTERM).

    Raises:
        MemlabError, OSError: the app's startup failed (re-raised here, reported in one line by the CLI).
    """
    import uvicorn

    guard = _StartupGuard(app)
    server = uvicorn.Server(uvicorn.Config(guard, host=host, port=port, log_level=log_level, **config))
    uv_log = logging.getLogger("uvicorn.error")
    uv_log.addFilter(guard.filter)
    try:
        server.run(sockets=[sock])
    except SystemExit:  # uvicorn exits (code 3) when the app's startup failed: report the startup's own error
        if guard.error is None:
            raise
    finally:
        uv_log.removeFilter(guard.filter)
        sock.close()
    if guard.error is not None and not server.started:
        raise guard.error
