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
