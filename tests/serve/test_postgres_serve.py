"""The whole app on PostgreSQL through the CLI, as a user runs it: `memlab users add --db postgresql://…`, the README's
curl flows against `memlab serve --db postgresql://…`, and two `memlab serve` processes on one database serving the
same users at once (no memory lost, no check lost or run twice, users kept apart)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memlab.testing import free_port
from tests.serve.conftest import wait_healthy

pytestmark = [pytest.mark.model, pytest.mark.subprocess]


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memlab.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=180)


def _serve(url: str, port: int, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memlab.cli.main", "serve", "--db", url, "--port", str(port), "--embedder", "minilm",
         "--judge", "lexical", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so -SIGTERM is a clean exit here
    assert proc.returncode in (0, -signal.SIGTERM) and "Traceback" not in err, err[-3000:]
    return err


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "root" / "notes").mkdir(parents=True)
    (tmp_path / "root" / "notes" / "casa.txt").write_text("La caldaia va revisionata ogni anno a ottobre.\n")
    return {**os.environ, "OMP_NUM_THREADS": "1", "MEMLAB_LLM_BACKEND": "none", "MEMLAB_DATA_DIR": str(tmp_path),
            "MEMLAB_INGEST_ROOT": str(tmp_path / "root")}


@pytest.fixture
def two_servers(pg_url: str, env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    """Keys for alice and bob made with `memlab users add --db <url>`, and two `memlab serve` on that database."""
    keys = {}
    for user in ("alice", "bob"):
        add = _cli("users", "add", user, "--db", pg_url, env=env, cwd=tmp_path)
        assert add.returncode == 0, add.stderr
        keys[user] = add.stdout.strip()
    assert not any(p.name.startswith("postgres") for p in tmp_path.iterdir()), "an SQLite file named after the URL"
    ports = free_port(), free_port()
    # the first answers /v1/chat with the packaged local model (SmolLM2); the second runs without a chat model
    procs = [_serve(pg_url, ports[0], {**env, "MEMLAB_LLM_BACKEND": "auto"}, tmp_path),
             _serve(pg_url, ports[1], env, tmp_path)]
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    try:
        for proc, base in zip(procs, bases, strict=True):
            wait_healthy(proc, base)
        yield bases[0], bases[1], keys
    finally:
        for proc in procs:
            if proc.poll() is None:
                _stop(proc)


def test_the_readme_flows_on_postgresql(two_servers) -> None:
    api, other, keys = two_servers
    h = {"Authorization": f"Bearer {keys['alice']}"}
    with httpx.Client(base_url=api, headers=h, timeout=120) as c:
        chat = c.post("/api/chats", json={"title": "Tokyo", "turns": [
            {"role": "user", "parts": [{"text": "Sto organizzando un viaggio a Tokyo per maggio."}]}]})
        assert chat.status_code in (200, 201), chat.text
        found = c.get("/api/chats", params={"search": "il viaggio a Tokyo"})
        assert found.status_code == 200 and chat.json()["id"] in found.text
        assert c.get("/api/chats", params={"id": chat.json()["id"]}).status_code == 200
        ingest = c.post("/v1/ingest", json={"path_or_url": "notes", "tags": ["casa"]})
        assert ingest.status_code == 201 and ingest.json()["errors"] == 0 and ingest.json()["chunks"] == 1, ingest.text
        for text in ("Sono nato il 12 luglio 1990.", "Il mio compleanno è il 15 agosto."):
            r = c.post("/api/turn", json={"message": text})
            assert r.status_code == 200 and r.json()["checked"] is True, r.text
        with c.stream("POST", "/v1/chat", json={"messages": [{"role": "user", "content": "Che ore sono?"}]}) as s:
            body = "".join(s.iter_text())
        assert s.status_code == 200 and "IMPORTANTE" in body, body[:2000]
    # the other process serves the same database: the same notification, and alice's data only to alice
    with httpx.Client(base_url=other, headers=h, timeout=60) as c2:
        bell = c2.get("/api/notifications").json()
        assert len(bell["by_urgency"]["high"]) == 1 and bell["by_urgency"]["high"][0]["type"] == "contradiction", bell
    with httpx.Client(base_url=other, headers={"Authorization": f"Bearer {keys['bob']}"}, timeout=60) as bob:
        assert bob.get("/api/notifications").json()["count"] == 0 and bob.get("/api/memory").json() == []
        assert bob.get(f"/api/chats/{chat.json()['id']}").status_code == 404


def test_two_servers_on_one_database_lose_nothing_and_check_each_memory_once(two_servers, pg_url: str) -> None:
    a, b, keys = two_servers
    errors: list[str] = []
    created: dict[str, list[int]] = {"alice": [], "bob": []}
    lock = threading.Lock()

    def work(base: str, user: str, n: int) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys[user]}"}, timeout=120) as c:
            for j in range(n):
                r = c.post("/api/memory", json={"text": f"Fatto {j} di {user} scritto su {base[-5:]}"})
                if r.status_code not in (200, 201):
                    errors.append(f"{user}@{base}: {r.status_code} {r.text[:200]}")
                    continue
                with lock:
                    created[user].append(int(r.json()["memory"]["id"]))

    threads = [threading.Thread(target=work, args=(base, user, 15)) for base in (a, b) for user in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(created["alice"]) == 30 and len(created["bob"]) == 30
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as con:
        deadline = time.monotonic() + 180
        while con.execute("SELECT COUNT(*) FROM agent_queue WHERE status IN ('pending', 'running')").fetchone()[0]:
            assert time.monotonic() < deadline, "the checks did not finish"
            time.sleep(0.5)
        jobs = dict(con.execute("SELECT memory_id, COUNT(*) FROM agent_queue GROUP BY memory_id").fetchall())
        statuses = dict(con.execute("SELECT status, COUNT(*) FROM agent_queue GROUP BY status").fetchall())
        owners = {r[0] for r in con.execute("SELECT DISTINCT result IS NOT NULL FROM agent_queue").fetchall()}
        # a job claimed by both processes would have run twice: attempts 2
        attempts = {r[0] for r in con.execute("SELECT DISTINCT attempts FROM agent_queue").fetchall()}
        outbox = con.execute("SELECT COUNT(*) FROM memory_outbox").fetchone()[0]
    mine = created["alice"] + created["bob"]
    assert all(jobs.get(i) == 1 for i in mine), {i: jobs.get(i) for i in mine if jobs.get(i) != 1}
    assert statuses.get("parked", 0) == 0 and outbox == 0 and owners == {True} and attempts == {1}
    for user, base in (("alice", a), ("bob", b)):
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys[user]}"}, timeout=60) as c:
            listed = {m["id"] for m in c.get("/api/memory", params={"limit": 1000}).json()}
        assert listed == set(created[user])
