"""memlab bench crash on a tiny scale: one turn killed at once, one left to finish, one restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.eval.runs import load_run
from memlab.lab.bench.crash import run_crash_bench


@pytest.mark.model
def test_killed_and_finished_turns_then_restart(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    finished = run_crash_bench(runs=1, max_delay_s=600.0, db_path=str(db), progress=False)
    assert (finished.killed, finished.acknowledged, finished.acknowledged_present) == (0, 1, 1)
    killed = run_crash_bench(runs=1, max_delay_s=0.05, db_path=str(db), seed=1, out=str(tmp_path / "run"),
                             progress=False)
    assert killed.killed == 1 and killed.integrity_ok
    assert killed.memories >= 1 and killed.memories_checked == killed.memories
    run = load_run(tmp_path / "run")
    assert run.spec.task == "bench-crash" and run.metric() == killed.memories_checked


@pytest.mark.subprocess  # a process killed with SIGKILL, two new processes reopening what it left
def test_restart_after_kill_loads_the_file_and_catches_up_instead_of_rebuilding(tmp_path: Path) -> None:
    from memlab.lab.bench.crash import run_restart_bench

    res = run_restart_bench(memories=300, users=3, unflushed=20, db_path=str(tmp_path / "r.db"))
    assert (res.before_source, res.after_source, res.after_caught_up) == ("rebuilt", "file", 20)
    assert res.before_open_s > 0 and res.after_open_s > 0
    assert "background writes + catch-up" in res.to_markdown()
