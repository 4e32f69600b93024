"""BackgroundAgent: durable queue, retries/parking, restart after stop and after kill -9, periodic hooks."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from memlab.agent import BackgroundAgent, JobStatus, NotificationDraft
from memlab.errors import BackendError, InvalidInputError, NotFoundError
from memlab.notify import NotificationService, NotificationType
from memlab.records import IntegrityResult, Urgency
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedChecker

ROOT = Path(__file__).resolve().parents[1]


def _seed(store: MemoryStore) -> tuple[list[int], set[tuple[int, int]]]:
    """Keyed memories whose same-key pairs conflict (ScriptedChecker's default rule)."""
    ids = [
        store.add("u1", "Abito a Roma", key="home_city", value="roma").id,
        store.add("u1", "Vivo a Milano", key="home_city", value="milano").id,
        store.add("u1", "Mi sono trasferito a Torino", key="home_city", value="torino").id,
        store.add("u1", "Chiamami Zhang San", key="preferred_name", value="Zhang San").id,
        store.add("u1", "叫我李四", key="preferred_name", value="李四").id,
        store.add("u2", "Abito a Napoli", key="home_city", value="napoli").id,
    ]
    pairs = {(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2]), (ids[3], ids[4])}
    return ids, pairs


def _pairs(svc: NotificationService, user: str) -> list[tuple[int, int]]:
    return [tuple(n.memory_ids) for n in svc.list(user, include_resolved=True)]  # type: ignore[misc]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32))
    yield s
    s.close()


def test_checks_create_high_notifications_once_per_pair(store):
    ids, pairs = _seed(store)
    agent = BackgroundAgent(store, ScriptedChecker(store), poll_interval_s=0.05)

    async def go():
        async with agent:
            jobs = [agent.process_new_knowledge("u1" if i != ids[5] else "u2", i) for i in ids]
            assert await agent.wait_idle(jobs, timeout=30)

    run(go())
    svc = agent.notifications
    assert sorted(_pairs(svc, "u1")) == sorted(pairs)  # each pair once although both sides were checked
    assert all(n.urgency is Urgency.HIGH and n.type is NotificationType.CONTRADICTION for n in svc.pending("u1"))
    assert svc.count("u2") == 0
    assert agent.stats()["done"] == len(ids)
    done = agent.jobs("done")
    assert sum(len(j.result["notification_ids"]) for j in done) >= len(pairs)


def test_enqueue_does_not_wait_for_a_running_check(store):
    release = threading.Event()
    started = threading.Event()

    class Blocking:
        def check(self, item):
            started.set()
            release.wait(30)
            return IntegrityResult(item_id=item.id, has_contradiction=False)

    agent = BackgroundAgent(store, Blocking(), poll_interval_s=0.05)

    async def go():
        async with agent:
            agent.process_new_knowledge("u1", store.add("u1", "primo messaggio").id)
            await asyncio.to_thread(started.wait, 30)
            # while the check is blocked, ingestion + enqueue keep working
            new = [agent.process_new_knowledge("u1", store.add("u1", f"messaggio {i}").id) for i in range(20)]
            assert agent.stats()["running"] == 1
            assert all(agent.job(j).status is JobStatus.PENDING for j in new)
            release.set()
            assert await agent.wait_idle(timeout=30)

    run(go())
    assert agent.stats()["done"] == 21


def test_failing_check_is_retried_then_parked_without_blocking_others(store):
    ids, _ = _seed(store)
    bad = ids[1]
    calls: dict[int, int] = {}
    inner = ScriptedChecker(store)

    class Flaky:
        def check(self, item):
            calls[item.id] = calls.get(item.id, 0) + 1
            if item.id == bad:
                raise RuntimeError("judge crashed")
            if item.id == ids[0] and calls[item.id] < 3:
                raise TimeoutError("slow backend")
            return inner.check(item)

    agent = BackgroundAgent(store, Flaky(), max_attempts=3, backoff_s=0.01, poll_interval_s=0.02)

    async def go():
        async with agent:
            for i in ids[:5]:
                agent.process_new_knowledge("u1", i)
            assert await agent.wait_idle(timeout=30)

    run(go())
    parked = agent.jobs("parked")
    assert [j.memory_id for j in parked] == [bad]
    assert parked[0].attempts == 3 and "RuntimeError: judge crashed" in (parked[0].last_error or "")
    ok = next(j for j in agent.jobs("done") if j.memory_id == ids[0])
    assert ok.attempts == 3 and ok.last_error is None
    assert calls[bad] == 3
    assert agent.stats()["done"] == 4
    # a parked job can be put back
    assert agent.retry(parked[0].id).status is JobStatus.PENDING


def test_deleted_memory_is_parked_at_once(store):
    m = store.add("u1", "Abito a Roma")
    agent = BackgroundAgent(store, ScriptedChecker(store), backoff_s=0.01, poll_interval_s=0.02)
    job = agent.process_new_knowledge("u1", m.id)
    store.db.execute("UPDATE agent_queue SET memory_id = 987654 WHERE id = ?", (job,))  # simulate a vanished row

    async def go():
        async with agent:
            assert await agent.wait_idle(timeout=30)

    run(go())
    j = agent.job(job)
    assert j.status is JobStatus.PARKED and j.attempts == 1 and "NotFoundError" in (j.last_error or "")


def test_enqueue_validates_owner_and_id(store):
    m = store.add("u1", "Abito a Roma")
    agent = BackgroundAgent(store, ScriptedChecker(store))
    with pytest.raises(NotFoundError):
        agent.process_new_knowledge("u2", m.id)  # another user's memory
    with pytest.raises(NotFoundError):
        agent.process_new_knowledge("u1", 12345)
    with pytest.raises(InvalidInputError):
        agent.process_new_knowledge("", m.id)
    assert agent.jobs() == []
    with pytest.raises(InvalidInputError):
        BackgroundAgent(store, object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        BackgroundAgent(store, ScriptedChecker(store), max_attempts=0)


def test_wait_idle_needs_a_running_worker(store):
    agent = BackgroundAgent(store, ScriptedChecker(store))
    agent.process_new_knowledge("u1", store.add("u1", "Abito a Roma").id)
    with pytest.raises(BackendError):
        run(agent.wait_idle(timeout=1))


def test_pending_checks_at_shutdown_run_at_next_start(tmp_path):
    path = tmp_path / "m.db"
    store = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    ids, pairs = _seed(store)
    first = BackgroundAgent(store, ScriptedChecker(store, delay_s=0.2), poll_interval_s=0.02)

    async def part1():
        async with first:
            for i in ids[:5]:
                first.process_new_knowledge("u1", i)
            while first.stats()["done"] < 1:
                await asyncio.sleep(0.02)
        # leaving the context stops after the check in flight

    run(part1())
    left = first.stats()["pending"]
    assert left >= 1 and first.stats()["running"] == 0
    store.close()

    store2 = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    second = BackgroundAgent(store2, ScriptedChecker(store2), poll_interval_s=0.02)

    async def part2():
        async with second:
            assert await second.wait_idle(timeout=30)

    run(part2())
    assert second.stats() == {"pending": 0, "running": 0, "done": 5, "parked": 0}
    assert sorted(_pairs(second.notifications, "u1")) == sorted(pairs)
    store2.close()


CRASH_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from memlab.agent import BackgroundAgent
    from memlab.store import MemoryStore
    from memlab.testing import FakeEmbedder, ScriptedChecker

    store = MemoryStore(sys.argv[1], embedder=FakeEmbedder(dim=32))
    agent = BackgroundAgent(store, ScriptedChecker(store, delay_s=float(sys.argv[2])), poll_interval_s=0.02)

    async def main():
        async with agent:
            print("started", flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def _status_counts(path: Path) -> dict[str, int]:
    con = sqlite3.connect(path, timeout=30)
    try:
        return dict(con.execute("SELECT status, COUNT(*) FROM agent_queue GROUP BY status").fetchall())
    finally:
        con.close()


@pytest.mark.subprocess
def test_kill_minus_9_with_queued_checks_then_restart(tmp_path):
    path = tmp_path / "m.db"
    store = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    ids, pairs = _seed(store)
    agent = BackgroundAgent(store, ScriptedChecker(store))
    for i in ids[:5]:
        agent.process_new_knowledge("u1", i)  # queued, no worker in this process
    store.close()

    script = tmp_path / "worker.py"
    script.write_text(CRASH_WORKER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(path), "0.4"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill while one check is done and another in flight
            c = _status_counts(path)
            if c.get("done", 0) >= 1 and c.get("running", 0) == 1:
                break
            assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
            time.sleep(0.02)
        else:
            pytest.fail(f"worker never reached the kill point: {_status_counts(path)}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    before = _status_counts(path)
    assert before.get("running", 0) == 1 and before.get("pending", 0) >= 1

    store2 = MemoryStore(path, embedder=FakeEmbedder(dim=32))
    agent2 = BackgroundAgent(store2, ScriptedChecker(store2), poll_interval_s=0.02)
    notifications_before = len(agent2.notifications.list("u1", include_resolved=True))

    async def restart():
        async with agent2:
            assert await agent2.wait_idle(timeout=60)

    run(restart())
    assert agent2.stats() == {"pending": 0, "running": 0, "done": 5, "parked": 0}
    got = _pairs(agent2.notifications, "u1")
    assert sorted(got) == sorted(pairs)  # none lost ...
    assert len(got) == len(set(got))  # ... none duplicated
    assert len(got) >= notifications_before
    store2.close()


class _Calendar:
    name = "calendar"

    def __init__(self, drafts):
        self.drafts = drafts
        self.calls = 0

    def fetch(self):
        self.calls += 1
        return list(self.drafts)


class _Broken:
    name = "broken"

    def fetch(self):
        raise ConnectionError("calendar server down")


def test_periodic_registry_and_hooks(store):
    agent = BackgroundAgent(store, ScriptedChecker(store), poll_interval_s=0.02)
    assert set(agent.periodic_checks()) == {"external_events", "todo_list"}
    assert agent.check_external_events() == [] and agent.check_todo_list() == []  # no source: no fake data
    cal = _Calendar([NotificationDraft("u1", NotificationType.EVENT, Urgency.MEDIUM, "Volo per Tokyo alle 9:00",
                                       dedupe_key="calendar:evt-1")])
    agent.add_event_source(cal)

    async def go():
        async with agent:
            await agent.run_periodic_now("external_events")
            await agent.run_periodic_now("external_events")

    run(go())
    events = agent.notifications.pending("u1", type="event")
    assert [n.content for n in events] == ["Volo per Tokyo alle 9:00"]  # polled 3+ times, notified once
    assert cal.calls >= 2
    agent.add_todo_source(_Broken())  # type: ignore[arg-type]

    async def go2():
        async with agent:
            out = await agent.run_periodic_now("todo_list")
            assert out == {"todo_list": 0}

    run(go2())
    assert "ConnectionError" in (agent.periodic_checks()["todo_list"].last_error or "")
    with pytest.raises(NotFoundError):
        run(agent.run_periodic_now("nope"))
    with pytest.raises(InvalidInputError):
        agent.register_periodic("x", lambda: [], interval_s=0)


@pytest.mark.model
@pytest.mark.slow
def test_agent_bench_tiny_run(tmp_path):
    """`memlab bench agent` end to end on 4 messages (real MiniLM, real extraction and detector)."""
    from memlab.eval.runs import load_run
    from memlab.lab.bench.agent import run_agent_bench

    res = run_agent_bench(4, judge="lexical", out=str(tmp_path), modes=("no_agent", "with_agent"))
    for mode in ("no_agent", "with_agent"):
        r = res.runs[mode]
        assert r["memories"] >= 1 and r["turn_p50_ms"] > 0
    w = res.runs["with_agent"]
    assert w["checks_total"] == w["memories"]  # every stored memory was checked
    assert w["checks_done_during_ingest"] + w["checks_queued_at_end_of_ingest"] == w["checks_total"]
    run = load_run(tmp_path)  # an eval run: `memlab eval show/compare` read it
    assert run.spec.task == "bench-agent" and run.spec.n == 4
    assert run.metric("with_agent.checks_total") == w["checks_total"]
    assert len([e for e in run.examples() if e.group == "with_agent"]) == 4
    assert "| turn_p50_ms |" in res.to_markdown()
