"""Every bad ``--db``, ``--port`` or path is one line on stderr, exit code 1, no traceback, and leaves nothing behind
(issue 41). Each case runs the real ``memlab`` command in a subprocess (bounded by a timeout)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.cli.common import check_db, error_line
from memlab.errors import InvalidInputError
from memlab.testing import free_port

pytestmark = pytest.mark.subprocess

NOT_SQLITE = "Lista della spesa: pane, latte.\n" * 50


def memlab(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEMLAB_DATA_DIR": str(cwd / ".data")}
    return subprocess.run([sys.executable, "-m", "memlab.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit code 1, nothing on stdout, and exactly one ``memlab: error:`` line holding every needle."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("memlab: error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_serve_on_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    notes = tmp_path / "notsqlite.db"
    notes.write_text(NOT_SQLITE, encoding="utf-8")
    for cmd in (["serve"], ["mcp", "serve", "memory"], ["users", "list"]):
        proc = memlab(tmp_path, *cmd, "--db", "notsqlite.db", "--port", str(free_port()), "--log-level", "warning"
                      ) if cmd[0] != "users" else memlab(tmp_path, *cmd, "--db", "notsqlite.db")
        assert_one_line_error(proc, "notsqlite.db", "not a memlab database")
    assert notes.read_text(encoding="utf-8") == NOT_SQLITE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notsqlite.db"]


@pytest.mark.parametrize("cmd", [["serve"], ["mcp", "serve", "datetime"]])
@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_port_out_of_range(tmp_path: Path, cmd: list[str], port: str) -> None:
    proc = memlab(tmp_path, *cmd, "--port", port)
    assert_one_line_error(proc, "--port must be a TCP port in [1, 65535]", port)
    assert list(tmp_path.iterdir()) == []  # nothing created (not even the default data folder)


def test_port_in_use_and_unknown_host(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for cmd in (["serve"], ["mcp", "serve", "datetime"]):
            proc = memlab(tmp_path, *cmd, "--port", port)
            assert_one_line_error(proc, f"cannot listen on 127.0.0.1:{port}", "in use")
    proc = memlab(tmp_path, "serve", "--host", "no-such-host.invalid", "--port", str(free_port()))
    assert_one_line_error(proc, "--host 'no-such-host.invalid'")


def test_qdrant_path_that_cannot_hold_a_store(tmp_path: Path) -> None:
    if not Path("/proc/self").is_dir():
        pytest.skip("LOUD SKIP: needs Linux /proc (a folder no process can write in)")
    a_file = tmp_path / "qdrant.txt"
    a_file.write_text("x", encoding="utf-8")
    for path, needle in (("/proc/self", "cannot write in the folder '/proc/self'"),
                         (str(a_file), "is a file"),
                         (str(tmp_path / "missing" / "q"), "does not exist")):
        for transport in ("ws", "stdio"):
            extra = ["--port", str(free_port())] if transport == "ws" else ["--user", "alice"]
            proc = memlab(tmp_path, "mcp", "serve", "semantic", "--transport", transport, "--qdrant-path", path,
                          "--db", str(tmp_path / "k.db"), *extra)
            assert_one_line_error(proc, "--qdrant-path", needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qdrant.txt"]


def test_db_url_does_not_create_a_folder(tmp_path: Path) -> None:
    """``--db postgresql://...`` used to create ./postgresql:/user@127.0.0.1:5432/ and a SQLite file in it. Now it
    opens PostgreSQL: a server that is not there is one line naming the URL (its password masked), and a URL of
    another scheme is refused."""
    port = free_port()  # nothing listens there
    for cmd in (["users", "add", "alice"], ["users", "list"], ["chat", "--user", "alice", "--message", "ciao"]):
        proc = memlab(tmp_path, *cmd, "--db", f"postgresql://user:secret@127.0.0.1:{port}/app")
        line = assert_one_line_error(proc, "cannot be reached", f"postgresql://user:***@127.0.0.1:{port}/app")
        assert "secret" not in line  # the URL's password is not echoed
        proc = memlab(tmp_path, *cmd, "--db", "mysql://user:secret@127.0.0.1:3306/app")
        line = assert_one_line_error(proc, "--db must be a SQLite file path or a postgresql:// URL", "mysql://")
        assert "secret" not in line
    assert list(tmp_path.iterdir()) == []


def test_db_in_a_missing_or_unwritable_folder(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "deeper" / "x.db"
    for cmd in (["users", "add", "alice"], ["serve", "--port", "18999"], ["chat", "--user", "a", "--message", "ciao"]):
        proc = memlab(tmp_path, *cmd, "--db", str(missing))
        assert_one_line_error(proc, "does not exist (create it first)")
    assert list(tmp_path.iterdir()) == []
    if Path("/proc/self").is_dir():  # a folder that refuses every write, even root's
        assert_one_line_error(memlab(tmp_path, "users", "add", "alice", "--db", "/proc/x.db"),
                              "cannot write in the folder '/proc'")
    proc = memlab(tmp_path, "users", "add", "alice", "--db", str(tmp_path))
    assert_one_line_error(proc, "is a directory")


def test_a_failed_server_startup_is_one_line(tmp_path: Path) -> None:
    """An error raised while the app starts (inside uvicorn's lifespan) is reported by the CLI, not as uvicorn's
    traceback and exit code 3."""
    proc = memlab(tmp_path, "serve", "--db", str(tmp_path / "new.db"), "--judge", "nope", "--port", str(free_port()))
    assert_one_line_error(proc, "Unknown judge 'nope'")
    assert "Application startup failed" not in proc.stderr


def test_error_line_is_one_line() -> None:
    assert error_line(PermissionError(13, "Permission denied", "/srv/x.db")) == \
        "memlab: error: Permission denied: /srv/x.db"
    assert error_line(InvalidInputError("bad\nvalue:\n  here")) == "memlab: error: bad value: here"
    with pytest.raises(InvalidInputError, match="must be a file path"):
        check_db("  ")


def test_lookalike_user_id_is_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    for name in ("ali\u200bce", "\u202eecila"):
        proc = memlab(tmp_path, "users", "add", name, "--db", db)
        assert_one_line_error(proc, "'user_id'", "invisible character")
    assert memlab(tmp_path, "users", "list", "--db", db).stderr.startswith("no API keys")
