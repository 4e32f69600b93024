"""The traps that must fire / must not fire (issue 5), one parametrized test per case in
``tests/data/contradiction_cases.jsonl``, on a real SQLite store with the real packaged MiniLM.

The first variant uses a judge that always says 0.0, so the levels before the judge are what is tested.
The second uses memlab's trained default judge when it loads (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlab.integrity import SemanticIntegrityChecker
from memlab.records import Urgency
from memlab.store import MemoryStore
from memlab.testing import ScriptedJudge

pytestmark = pytest.mark.model  # every test here runs a real model

CASES = [json.loads(line) for line in (Path(__file__).parents[1] / "data" / "contradiction_cases.jsonl").read_text(
    encoding="utf-8").splitlines() if line.strip()]


def _run(case: dict[str, Any], tmp_path: Path, embedder: Any, judge: Any) -> Any:
    store = MemoryStore(tmp_path / "m.db", embedder=embedder)
    try:
        for m in case["memories"]:
            spec = {k: v for k, v in m.items() if k != "user"}
            store.add(m.get("user", "u1"), **spec)
        new = store.add("u1", **case["new"])
        before = (store.count(include_inactive=True), store.db.query_one("SELECT COUNT(*) AS n FROM memory_events")["n"])
        result = SemanticIntegrityChecker(store, judge).check(new)
        after = (store.count(include_inactive=True), store.db.query_one("SELECT COUNT(*) AS n FROM memory_events")["n"])
        assert before == after, "check() must not write"
        other_ids = {m.id for m in store.list("u2", include_inactive=True)} if store.users().count("u2") else set()
        assert not {c.other_id for c in result.contradictions} & other_ids, "another user's memory was a candidate"
        return result
    finally:
        store.close()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_levels_only(case: dict[str, Any], tmp_path: Path, minilm: Any) -> None:
    result = _run(case, tmp_path, minilm, ScriptedJudge(default=0.0))
    assert result.has_contradiction is case["fire"], [c.explanation for c in result.contradictions]
    if case["fire"]:
        top = result.contradictions[0]
        assert top.type.value == case["type"]
        assert top.confidence >= 0.8
        assert top.urgency is Urgency.HIGH
        assert top.decided_by in ("entities", "patterns")
        assert top.explanation


@pytest.fixture(scope="module")
def default_judge() -> Any:
    """The shipped judge (both of its models), loaded once for the module."""
    from memlab.judges import load_judge

    judge = load_judge("default")
    judge.judge([("I live in Rome.", "I have a dog."), ("Abito a Roma.", "Ho un cane.")])
    return judge


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_with_default_judge(case: dict[str, Any], tmp_path: Path, minilm: Any, default_judge: Any) -> None:
    result = _run(case, tmp_path, minilm, default_judge)
    assert result.has_contradiction is case["fire"], [c.explanation for c in result.contradictions]
