"""Golden run.json summary of an end-to-end eval with a scripted judge, compared with a numeric tolerance.

Regenerate (then review the diff) with: ``MEMLAB_UPDATE_GOLDENS=1 .venv/bin/pytest tests/eval/test_golden.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from memlab.eval.contradiction import evaluate_contradiction
from memlab.testing import ScriptedJudge

# read at import: the autouse fixture strips MEMLAB_* variables while tests run
UPDATE = os.environ.get("MEMLAB_UPDATE_GOLDENS") == "1"
GOLDEN = Path(__file__).parent / "golden" / "contradiction_ci_tod_scripted.json"
VOLATILE = {"pairs_per_second", "seconds"}


def _hash_prob(a: str, b: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{a}\x00{b}".encode()).digest()[:4], "little") / 2**32


def _summary(run: Any) -> dict[str, Any]:
    return {
        "n": run.spec.n,
        "data_sha256": run.spec.data_sha256,
        "metrics": {k: v for k, v in run.metrics.items() if k not in VOLATILE},
        "confusion": run.confusion,
        "per_level": run.per_level,
    }


def _close(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, abs=1e-6), path
    else:
        assert a == b, path


def test_golden_run_summary(tmp_path: Path) -> None:
    judge = ScriptedJudge(_hash_prob, name="hash")
    run = evaluate_contradiction("ci_tod", "test", judge=judge, seed=0, out_dir=tmp_path, n_resamples=200)
    got = json.loads(json.dumps(_summary(run)))
    if UPDATE or not GOLDEN.exists():
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"golden file was missing and has been written to {GOLDEN}; review and re-run")
    _close(got, json.loads(GOLDEN.read_text(encoding="utf-8")))
