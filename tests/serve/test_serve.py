"""`memlab serve` over a real uvicorn on 127.0.0.1: the seeds' flows, auth, isolation, validation, concurrency, /health,
on an SQLite file and on PostgreSQL (the ``lab`` fixture below runs every test of this module on both)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from memlab.app import Memlab, open_memlab
from memlab.serve import ApiKeys, create_app
from memlab.testing import FakeEmbedder, free_port
from tests.serve.conftest import NO_LLM, TIMEOUT, birthday_judge, key_client, wait_healthy

Client = Callable[[str], httpx.Client]

TOKYO = [
    "Sto organizzando un viaggio a Tokyo per maggio.",
    "Vorrei vedere i ciliegi in fiore a Tokyo e Kyoto.",
    "Il JR pass conviene per andare da Tokyo a Kyoto?",
]
COOKING = ["Come si fa la carbonara senza panna?", "Meglio guanciale o pancetta per la carbonara?"]


@pytest.fixture(params=["sqlite", "postgresql"])
def lab(request: pytest.FixtureRequest, tmp_path: Path):
    """The served app on an SQLite file, and on PostgreSQL (the whole app: memories, chats, notifications, the
    agent's queue, API keys)."""
    where = tmp_path / "serve.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    lab = open_memlab(where, embedder=FakeEmbedder(dim=64), judge=birthday_judge(), settings=NO_LLM)
    yield lab
    lab.close()


def _turns(texts: list[str]) -> list[dict]:
    out = []
    for i, t in enumerate(texts):
        out.append({"role": "user", "parts": [{"text": t}]})
        out.append({"role": "model", "parts": [{"text": f"Risposta {i}: ne parliamo."}]})
    return out


def test_api_needs_a_valid_bearer_key(server, client_for: Client) -> None:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as anon:
        r = anon.get("/api/memory")
        assert r.status_code == 401 and "memlab users add" in r.json()["detail"]
        assert r.json()["error"] == "AuthenticationError" and r.headers["www-authenticate"] == "Bearer"
        assert anon.get("/api/memory", headers={"Authorization": "Bearer mlk_not-a-key"}).status_code == 401
        assert anon.get("/api/memory", headers={"Authorization": "Basic YWxpY2U6eA=="}).status_code == 401
        assert anon.get("/health").status_code == 200  # /health needs no key
        assert anon.get("/openapi.json").json()["info"]["title"] == "memlab"
    assert client_for("alice").get("/api/memory").json() == []


@pytest.mark.model
def test_chat_flow_create_append_35_compact_search_delete(minilm_server) -> None:
    server, lab = minilm_server
    c = key_client(server, lab, "alice")
    tokyo = c.post("/api/chats", json={"turns": _turns(TOKYO[:1])}).json()
    assert tokyo["full_history"] == tokyo["assistant_history"] and tokyo["compacted_until"] == 0
    cooking = c.post("/api/chats", json={"title": "Carbonara", "turns": _turns(COOKING)}).json()
    # 35 more turns: past the 30-turn window, the head of assistant_history becomes the summary turn
    turns = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": f"{TOKYO[i % 3]} ({i})"}]}
             for i in range(35)]
    after = c.patch(f"/api/chats/{tokyo['id']}", json={"turns": turns}).json()
    assert len(after["full_history"]) == 37
    assert after["compacted_until"] > 0 and after["n_compactions"] >= 1
    assert len(after["assistant_history"]) <= lab.settings.summary_window_size
    head = after["assistant_history"][0]
    assert head["role"] == "model" and "Tokyo" in head["parts"][0]["text"]
    assert after["assistant_history"][1:] == after["full_history"][after["compacted_until"]:]

    found = c.get("/api/chats", params={"q": "la chat in cui parlavamo del viaggio a Tokyo"}).json()
    assert found["candidates"][0]["chat_id"] == tokyo["id"]
    assert found["query"] and found["decision"] in {"switch", "ask"}
    assert {ch["id"] for ch in c.get("/api/chats").json()} == {tokyo["id"], cooking["id"]}

    # a turn in the chat creates its conversation memory; DELETE removes both (seed 001: onDelete cascade)
    assert c.post("/api/turn", json={"message": "Abito a Roma.", "chat_id": tokyo["id"]}).status_code == 200
    assert lab.store.db.query_one("SELECT 1 FROM conv_memory WHERE conversation_id = ?", (tokyo["id"],))
    assert c.delete(f"/api/chats/{tokyo['id']}").status_code == 204
    assert c.get(f"/api/chats/{tokyo['id']}").status_code == 404
    assert lab.store.db.query_one("SELECT 1 FROM conv_memory WHERE conversation_id = ?", (tokyo["id"],)) is None
    assert [m["text"] for m in c.get("/api/memory").json()] == ["L'utente vive a Roma"]  # memories stay


def test_birthday_contradiction_notification_resolve_and_history(server, client_for: Client) -> None:
    c = client_for("alice")
    first = c.post("/api/memory", json={"text": "Il mio compleanno è il 12 luglio", "wait": True}).json()
    assert first["checked"] and first["notifications_count"] == 0
    second = c.post("/api/memory", json={"text": "Il mio compleanno è il 15 agosto", "wait": True}).json()
    assert second["checked"] and second["notifications_count"] == 1
    bell = c.get("/api/notifications").json()
    assert bell["count"] == 1 and len(bell["by_urgency"]["high"]) == 1
    n = bell["by_urgency"]["high"][0]
    assert n["type"] == "contradiction" and set(n["memory_ids"]) == {first["memory"]["id"], second["memory"]["id"]}

    resolved = c.post(f"/api/notifications/{n['id']}/resolve", json={"choice": "A", "note": "è il 12"}).json()
    assert resolved["status"] == "resolved" and resolved["choice"] == "A"
    assert c.get("/api/notifications").json()["count"] == 0
    assert c.get(f"/api/memory/{first['memory']['id']}").json()["is_active"] is True
    assert c.get(f"/api/memory/{second['memory']['id']}").json()["is_active"] is False
    again = c.post(f"/api/notifications/{n['id']}/resolve", json={"choice": "B"})  # a state conflict: 409
    assert again.status_code == 409 and again.json()["error"] == "ConflictError"
    assert "already resolved" in again.json()["detail"]
    undone = c.post(f"/api/notifications/{n['id']}/undo").json()
    assert undone["status"] != "resolved" and c.get(f"/api/memory/{second['memory']['id']}").json()["is_active"]
    twice = c.post(f"/api/notifications/{n['id']}/undo")
    assert twice.status_code == 409 and "nothing to undo" in twice.json()["detail"]


def test_version_history_seed_004(server, client_for: Client) -> None:
    c = client_for("alice")
    ids = [c.post("/api/memory", json={"text": t, "key": "preferred_name", "value": v, "type": "preference",
                                       "confidence": 0.9}).json()["memory"]["id"]
           for t, v in (("Chiamami Zhang San", "Zhang San"), ("Chiamami Li Si", "Li Si"), ("Chiamami Wang Wu", "Wang Wu"))]
    for any_id in ids:  # the same chain from any point
        hist = c.get(f"/api/memory/{any_id}/history").json()
        assert [h["version"] for h in hist] == [1, 2, 3]
        assert [h["value"] for h in hist] == ["Zhang San", "Li Si", "Wang Wu"]
        assert [h["is_active"] for h in hist] == [False, False, True]
        assert hist[0]["superseded_by"] == ids[1] and hist[1]["supersedes"] == ids[0]
        for field in ("id", "confidence", "created_at", "updated_at", "superseded_at"):
            assert field in hist[0]
        assert hist[0]["updated_at"] == hist[0]["superseded_at"] and hist[2]["updated_at"] == hist[2]["created_at"]
    assert [m["value"] for m in c.get("/api/memory").json()] == ["Wang Wu"]
    assert len(c.get("/api/memory", params={"all": "true"}).json()) == 3
    hits = c.post("/api/memory/search", json={"query": "Chiamami Wang Wu", "k": 3}).json()
    assert hits[0]["memory"]["id"] == ids[2]
    dense = c.post("/api/memory/search", json={"query": "Chiamami Wang Wu", "k": 3, "mode": "dense"}).json()
    assert dense[0]["memory"]["id"] == ids[2]
    assert c.post("/api/memory/search", json={"query": "x", "mode": "bm25"}).status_code == 422


def test_other_users_ids_are_404_everywhere(server, client_for: Client, lab: Memlab) -> None:
    alice, bob = client_for("alice"), client_for("bob")
    chat = alice.post("/api/chats", json={"turns": _turns(TOKYO)}).json()
    m1 = alice.post("/api/memory", json={"text": "Il mio compleanno è il 12 luglio", "wait": True}).json()["memory"]
    alice.post("/api/memory", json={"text": "Il mio compleanno è il 15 agosto", "wait": True})
    note = alice.get("/api/notifications").json()["by_urgency"]["high"][0]
    attempts = [
        bob.get(f"/api/chats/{chat['id']}"),
        bob.patch(f"/api/chats/{chat['id']}", json={"turns": _turns(["ciao"])}),
        bob.delete(f"/api/chats/{chat['id']}"),
        bob.get(f"/api/memory/{m1['id']}"),
        bob.get(f"/api/memory/{m1['id']}/history"),
        bob.post(f"/api/notifications/{note['id']}/resolve", json={"choice": "D"}),
        bob.post(f"/api/notifications/{note['id']}/undo"),
        bob.post("/api/turn", json={"message": "ciao", "chat_id": chat["id"]}),
    ]
    assert [r.status_code for r in attempts] == [404] * len(attempts)
    assert {r.json()["error"] for r in attempts[:-1]} == {"NotFoundError"}
    unknown = bob.get("/api/memory/999999")
    assert attempts[3].json()["detail"].split()[0:2] == unknown.json()["detail"].split()[0:2]  # same wording
    assert bob.get("/api/memory").json() == [] and bob.get("/api/chats").json() == []
    assert bob.get("/api/notifications").json()["count"] == 0
    assert bob.get("/api/chats", params={"q": "viaggio a Tokyo"}).json()["candidates"] == []
    assert bob.post("/api/memory/search", json={"query": "compleanno"}).json() == []
    # nothing of alice's changed
    assert len(alice.get(f"/api/chats/{chat['id']}").json()["full_history"]) == 6
    assert alice.get("/api/notifications").json()["count"] == 1


def test_bad_bodies_get_422_and_nothing_is_written(server, client_for: Client, lab: Memlab) -> None:
    c = client_for("alice")
    bad = [
        c.post("/api/memory", json={"text": ""}),
        c.post("/api/memory", json={"text": "x", "confidence": 2}),
        c.post("/api/memory", json={"text": "x", "colour": "red"}),
        c.post("/api/memory", content=b"{not json", headers={"Content-Type": "application/json"}),
        c.post("/api/memory", json={"text": "ciao \x07 mondo"}),
        c.post("/api/memory", json={"text": "a" * (lab.store.max_text_chars + 1)}),
        c.post("/api/chats", json={"turns": [{"role": "bot", "parts": [{"text": "x"}]}]}),
        c.post("/api/chats", json={"turns": [{"role": "user", "parts": []}]}),
        c.post("/api/memory/search", json={"query": "x", "k": 0}),
        c.post("/api/turn", json={"message": ""}),
    ]
    assert [r.status_code for r in bad] == [422] * len(bad), [r.text[:200] for r in bad]
    assert all(r.json()["error"] == "InvalidInputError" and r.json()["detail"] for r in bad)
    assert "control" in bad[4].json()["detail"].lower()
    assert bad[0].json()["errors"][0]["loc"] == ["body", "text"]  # one error model: each field that failed
    assert "a" * 100 not in bad[5].text and len(bad[5].content) < 2000  # the input is never echoed
    assert c.get("/api/memory").json() == [] and c.get("/api/chats").json() == []
    assert c.get("/api/memory/999").status_code == 404
    assert c.get(f"/api/memory/{2**63}").status_code == 422  # beyond SQLite's ids: the schema's maximum, not a 500
    assert c.get("/api/memory/abc").status_code == 404  # not an id: another path (none), documented as 404


def test_100_concurrent_requests_from_4_clients_lose_nothing(server, client_for: Client) -> None:
    clients = [client_for(f"user{i % 2}") for i in range(4)]  # two users, two clients each
    errors: list[str] = []
    created: list[tuple[str, int]] = []
    lock = threading.Lock()

    def work(ci: int) -> None:
        c = clients[ci]
        for j in range(25):
            if j % 5 == 4:
                r = c.post("/api/memory/search", json={"query": f"fatto {ci}"})
            else:
                r = c.post("/api/memory", json={"text": f"Fatto numero {j} del client {ci}"})
            if r.status_code not in (200, 201):
                errors.append(f"{ci}/{j}: {r.status_code} {r.text[:100]}")
            elif j % 5 != 4:
                with lock:
                    created.append((f"user{ci % 2}", r.json()["memory"]["id"]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(created) == 80 and len({i for _, i in created}) == 80
    for user, client in (("user0", clients[0]), ("user1", clients[1])):
        listed = {m["id"] for m in client.get("/api/memory", params={"limit": 1000}).json()}
        assert listed == {i for u, i in created if u == user}


def test_health_turns_503_when_the_database_is_unreadable(server, lab: Memlab) -> None:
    """SQLite: the file moved away, then back. PostgreSQL: the server ends the app's session (as a restart does):
    /health says so once, and the next request reconnects."""
    if lab.store.backend.kind == "postgresql":
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as c:
            assert c.get("/health").status_code == 200
            import psycopg

            with psycopg.connect(lab.store.backend.db.dsn, autocommit=True) as other:
                pid = lab.store.db.query_one("SELECT pg_backend_pid() AS pid")["pid"]
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
            down = c.get("/health")
            assert down.status_code == 503 and down.json()["checks"]["store"]["ok"] is False, down.text
            assert c.get("/health").status_code == 200
        return
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as c:
        ok = c.get("/health").json()
        assert ok["status"] == "ok" and set(ok["checks"]) >= {"store", "index", "embedder", "judge", "agent"}
        assert ok["checks"]["agent"]["running"] is True and ok["checks"]["agent"]["queue_depth"] == 0
        db = Path(lab.store.path)
        moved = db.with_suffix(".away")
        db.rename(moved)
        try:
            down = c.get("/health")
            assert down.status_code == 503 and down.json()["status"] == "degraded"
            assert down.json()["checks"]["store"]["ok"] is False
        finally:
            moved.rename(db)
        assert c.get("/health").status_code == 200


def test_create_app_needs_exactly_one_source(lab: Memlab) -> None:
    from memlab.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="exactly one"):
        create_app()
    with pytest.raises(InvalidInputError, match="exactly one"):
        create_app(lab, db="x.db")


def test_api_keys_are_stored_hashed_and_revocable(lab: Memlab) -> None:
    keys = ApiKeys(lab.store.db)
    key = keys.add("alice", label="laptop")
    rows = lab.store.db.query("SELECT * FROM api_keys")
    assert key not in str([dict(r) for r in rows])  # only the hash is stored
    assert keys.user_for(key) == "alice" and [k.label for k in keys.list("alice")] == ["laptop"]
    assert keys.revoke("alice") == 1 and keys.user_for(key) is None
    from memlab.errors import InvalidInputError, NotFoundError

    with pytest.raises(NotFoundError):
        keys.revoke("alice")
    with pytest.raises(InvalidInputError):
        keys.add("")


@pytest.mark.model
def test_memlab_serve_cli_end_to_end(tmp_path: Path) -> None:
    """`memlab users add` + `memlab serve` as a user runs them (real embedder and judge in a subprocess);
    SIGTERM drains the agent and exits cleanly."""
    db, port = tmp_path / "m.db", free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    add = subprocess.run([sys.executable, "-m", "memlab.cli.main", "users", "add", "alice", "--db", str(db)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert add.returncode == 0, add.stderr
    key = add.stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "memlab.cli.main", "serve", "--db", str(db), "--port", str(port),
                             "--embedder", "minilm", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, url)
        h = {"Authorization": f"Bearer {key}"}
        r = httpx.post(f"{url}/api/turn", json={"message": "Il mio compleanno è il 12 luglio."}, headers=h, timeout=120)
        assert r.status_code == 200 and r.json()["memory_ids"] and r.json()["checked"] is True
        assert httpx.get(f"{url}/health", timeout=10).json()["checks"]["embedder"]["name"] == "minilm"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so -SIGTERM is a clean exit here
    assert proc.returncode in (0, -signal.SIGTERM) and "Traceback" not in err, err[-2000:]
    import sqlite3

    con = sqlite3.connect(db)
    try:  # the lifespan drained the agent: no job left half-run
        assert con.execute("SELECT COUNT(*) FROM agent_queue WHERE status = 'running'").fetchone()[0] == 0
        assert con.execute("SELECT COUNT(*) FROM agent_queue WHERE status = 'done'").fetchone()[0] >= 1
    finally:
        con.close()


@pytest.mark.model
def test_bench_serve_tiny_run(tmp_path: Path) -> None:
    from memlab.cli.main import main

    assert main(["bench", "serve", "--requests", "6", "--clients", "2", "--embedder", "minilm", "--judge", "lexical",
                 "--out", str(tmp_path)]) == 0
    from memlab.eval.runs import load_run

    run = load_run(tmp_path)  # an eval run: `memlab eval show/compare` read it
    assert run.spec.task == "bench-serve" and run.spec.params["clients"] == 2 and run.metric() > 0
    rows = [e.meta for e in run.examples()]
    assert [r["op"] for r in rows] == ["add", "search", "turn"]
    assert all(r["errors"] == 0 and r["requests"] == 6 and r["requests_per_s"] > 0 for r in rows)
    assert all(0 < r["p50_ms"] <= r["p95_ms"] for r in rows)


def test_turn_at_the_time_the_message_was_said(client_for, lab: Memlab) -> None:
    """POST /api/turn with ``at``: relative dates and the memory's record time come from the message, not today;
    a bad ``at`` is a 422 with the documented body and nothing is stored."""
    c = client_for("alice")
    r = c.post("/api/turn", json={"message": "I went hiking last Friday with my sister.",
                                  "at": "2023-06-20T15:30:00Z"})
    assert r.status_code == 200, r.text
    m = lab.store.get(r.json()["memory_ids"][0], user_id="alice")
    assert m.created_at.isoformat() == "2023-06-20T15:30:00+00:00"
    assert "16 June 2023" in m.text or "2023-06-16" in m.text
    before = len(lab.store.list("alice"))
    for bad in ("yesterday", "1066-10-14T00:00:00Z", 12):
        r = c.post("/api/turn", json={"message": "I live in Rome.", "at": bad})
        assert r.status_code == 422 and r.json()["error"] == "InvalidInputError", r.text
    assert len(lab.store.list("alice")) == before
