"""``/health`` reports write health and says why (issues 41 and 42): a real uvicorn server on loopback over real SQLite
files. A server started on a read-only database answers 503 with the reason from the start and recovers, without a
restart, when the file is writable again; a database that may not grow (``PRAGMA max_page_count``, SQLite's own
SQLITE_FULL) answers 503 with the reason, and 200 again when it may grow.

Read-only is made with ``chmod 444`` for a normal user and with ``chattr +i`` for root (root ignores file modes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from memlab.app import Memlab, open_memlab
from memlab.serve import ApiKeys, create_app
from memlab.serve.runner import ThreadedServer
from memlab.testing import FakeEmbedder

from .conftest import NO_LLM, birthday_judge


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` cannot be written while inside (``writable(path)`` may end it early)."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("LOUD SKIP: running as root and chattr +i is not available (needs an ext4-like filesystem)")
    else:
        path.chmod(0o444)
    try:
        yield
    finally:
        writable(path)


def writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run([shutil.which("chattr") or "chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o644)


def _seed(db: Path) -> str:
    with open_memlab(db, embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM) as lab:
        lab.remember("alice", "Abito a Roma")
        return ApiKeys(lab.store.db).add("alice")


def test_server_started_on_a_read_only_database_says_so_and_recovers_when_writable(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    key = _seed(db)
    with read_only(db):
        app = create_app(db=db, embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM)
        with ThreadedServer(app) as server, httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            h = c.get("/health")
            assert h.status_code == 503, h.json()
            body = h.json()
            assert body["status"] == "degraded" and body["checks"]["writes"]["ok"] is False
            assert "read-only" in body["checks"]["writes"]["error"]
            assert any(r.startswith("writes:") and "read-only" in r for r in body["reasons"])
            assert body["checks"]["store"]["ok"] is True  # reads still work
            assert c.get("/api/memory").status_code == 200
            failed = c.post("/api/memory", json={"text": "Abito a Milano"})
            assert failed.status_code == 503 and "read-only" in failed.json()["detail"]
            assert "read-only" in c.get("/health").json()["checks"]["writes"]["last_error"]

            writable(db)  # no restart: /health reopens the connection and says ok
            h = c.get("/health")
            assert h.status_code == 200, h.json()
            assert h.json()["checks"]["writes"]["ok"] is True and h.json()["reasons"] == []
            assert c.post("/api/memory", json={"text": "Abito a Napoli"}).status_code == 201
    with open_memlab(db, embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM) as lab:
        assert sorted(m.text for m in lab.store.list("alice")) == ["Abito a Napoli", "Abito a Roma"]


def test_read_only_database_recovers_without_a_health_call_or_a_failed_request(tmp_path: Path) -> None:
    """The server's watcher probes while writes fail: the first write after the file is writable succeeds."""
    db = tmp_path / "ro2.db"
    key = _seed(db)
    with read_only(db):
        app = create_app(db=db, embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM)
        with ThreadedServer(app) as server, httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            svc = app.state.svc
            assert svc.write_failing is True  # found at startup
            writable(db)
            deadline = time.monotonic() + 60  # a bound for a slow machine, not a timing assertion
            while svc.write_failing and time.monotonic() < deadline:
                time.sleep(0.1)
            assert svc.write_failing is False
            assert c.post("/api/memory", json={"text": "Abito a Napoli"}).status_code == 201


def test_health_is_503_with_the_reason_when_the_database_may_not_grow(lab: Memlab, server: ThreadedServer) -> None:
    key = ApiKeys(lab.store.db).add("alice")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        assert c.post("/api/memory", json={"text": "Abito a Roma"}).status_code == 201
        assert c.get("/health").status_code == 200
        pages = int(lab.store.db.query_one("PRAGMA page_count")[0])
        lab.store.db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite refuses to grow the file: SQLITE_FULL
        try:
            h = c.get("/health")
            assert h.status_code == 503, h.json()
            assert "full" in h.json()["checks"]["writes"]["error"]
            assert any("full" in r for r in h.json()["reasons"])
        finally:
            lab.store.db.execute("PRAGMA max_page_count = 1073741823")
        h = c.get("/health")
        assert h.status_code == 200 and h.json()["status"] == "ok"
        assert c.post("/api/memory", json={"text": "Abito a Milano"}).status_code == 201
        assert [m.text for m in lab.store.list("alice")] == ["Abito a Roma", "Abito a Milano"]
