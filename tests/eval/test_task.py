"""The eval task layer: run_task owns sampling, timing, error rate, status, spec and write_run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memlab.errors import InvalidInputError
from memlab.eval.runs import Example, load_run
from memlab.eval.task import EvalTask, Scored, check_limit, run_task, seeded_sample


class Parity(EvalTask):
    """Predicts the parity of a number; numbers in ``broken`` fail (abstain with an error)."""

    name = "parity"
    primary_metric = "accuracy"

    def __init__(self, n: int = 20, broken: frozenset[int] = frozenset()) -> None:
        self.n, self.broken = n, broken
        self.seen_seconds: float | None = None

    def samples(self, limit: int | None, seed: int) -> list[int]:
        return seeded_sample(list(range(self.n)), limit, seed)

    def solve(self, samples: Sequence[int], *, progress: bool) -> list[str | None]:
        return [None if x in self.broken else ("even" if x % 2 == 0 else "odd") for x in samples]

    def score(self, samples: Sequence[int], solved: Any, *, seed: int, seconds: float) -> Scored:
        self.seen_seconds = seconds
        ex = [
            Example(
                id=str(x),
                gold="even" if x % 2 == 0 else "odd",
                pred=p or "abstain",
                error=None if p else "ValueError: broken",
            )
            for x, p in zip(samples, solved, strict=True)
        ]
        acc = sum(e.gold == e.pred for e in ex) / len(ex)
        return Scored(metrics={"accuracy": acc}, examples=ex, notes=["parity is easy"])

    def spec(self) -> dict[str, Any]:
        return {"judge": "modulo", "params": {"n": self.n}}


def test_ok_run_is_written_with_spec_and_error_rate(tmp_path: Path) -> None:
    task = Parity()
    run = run_task(task, limit=8, seed=3, out_dir=tmp_path, command="pytest")
    again = load_run(tmp_path)
    assert again.status == "ok" and again.metric() == 1.0 and again.metrics["error_rate"] == 0.0
    assert (
        again.spec.n == 8 and again.spec.limit == 8 and again.spec.seed == 3 and again.spec.judge == "modulo"
    )
    assert again.spec.params == {"n": 20, "max_error_rate": 0.05}
    assert again.notes == ["parity is easy"]
    assert task.seen_seconds is not None and task.seen_seconds >= 0.0
    assert [e.id for e in run.examples()] == [
        e.id for e in run_task(Parity(), limit=8, seed=3, out_dir=tmp_path / "b").examples()
    ]


def test_failures_past_max_error_rate_fail_the_run(tmp_path: Path) -> None:
    ok = run_task(Parity(n=10, broken=frozenset({1})), max_error_rate=0.2, out_dir=tmp_path / "ok")
    assert ok.status == "ok" and ok.metrics["error_rate"] == pytest.approx(0.1)
    bad = run_task(Parity(n=10, broken=frozenset({1, 2, 3})), max_error_rate=0.2, out_dir=tmp_path / "bad")
    assert bad.status == "failed" and bad.metrics["error_rate"] == pytest.approx(0.3)
    assert any("exceeds max_error_rate 0.2" in n for n in bad.notes)
    assert load_run(tmp_path / "bad").status == "failed"


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "3"])
def test_bad_limit_is_refused(limit: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="'limit' parameter of the parity task"):
        run_task(Parity(), limit=limit, out_dir=tmp_path)
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize("rate", [-0.1, 1.5, True, "0.1"])
def test_bad_max_error_rate_is_refused(rate: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="max_error_rate"):
        run_task(Parity(), max_error_rate=rate, out_dir=tmp_path)


def test_seeded_sample_is_reproducible_and_ordered() -> None:
    a = seeded_sample(list(range(100)), 10, 7)
    assert a == seeded_sample(list(range(100)), 10, 7) and a == sorted(a) and len(set(a)) == 10
    assert a != seeded_sample(list(range(100)), 10, 8)
    assert seeded_sample([1, 2], 5, 0) == [1, 2] and check_limit(None, "x") is None
