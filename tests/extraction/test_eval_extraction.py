"""`memlab eval extraction` on a small seeded LoCoMo sample (real MiniLM, real ragas ROUGE-L)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memlab.cli.main import main
from memlab.errors import InvalidInputError
from memlab.eval.extraction_task import SentenceBaseline, evaluate_extraction, match_units, to_third_person


def test_match_units_is_one_to_one() -> None:
    # one prediction close to two gold facts can match only one of them
    tp, fp, fn, pairs = match_units([np.array([[0.9, 0.8]]), np.zeros((0, 2)), np.array([[0.2]])], 0.6)
    assert (tp, fp, fn) == (1, 1, 4) and pairs[0] == [(0, 0, 0.9)]


def test_hungarian_beats_greedy() -> None:
    s = np.array([[0.9, 0.8], [0.85, 0.1]])  # greedy would take (0,0) and leave row 1 unmatched
    tp, _, _, pairs = match_units([s], 0.6)
    assert tp == 2 and sorted(pairs[0]) == [(0, 1, 0.8), (1, 0, 0.85)]


def test_third_person() -> None:
    assert to_third_person("I've got my own studio", "Jon") == "Jon has got Jon's own studio"
    assert to_third_person("The user's birthday is on 15 August", "Anna") == "Anna's birthday is on 15 August"


def test_baseline_every_sentence() -> None:
    assert len(SentenceBaseline().extract("Hi! I live in Rome. 😀").facts) == 2


@pytest.mark.model
@pytest.mark.slow
def test_cli_small_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert (
        main(
            ["eval", "extraction", "--dataset", "locomo", "--split", "dev", "--limit", "2", "--out", str(out)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| extractor |" in printed and "| baseline |" in printed
    run = json.loads((out / "run.json").read_text())
    m = run["metrics"]
    for name in ("extractor", "baseline"):
        assert m[name]["tp"] + m[name]["fn"] == sum(
            len(json.loads(line)["gold"].split("\n")) if json.loads(line)["gold"] else 0
            for line in (out / "examples.jsonl").read_text().splitlines()
        )
        assert 0.0 <= m[name]["f1"] <= 1.0 and set(m[name]["by_threshold"]) == {"0.50", "0.60", "0.70"}
        assert m[name]["rouge_l"] is not None
    assert run["spec"]["params"]["subset"] == "dev" and run["spec"]["seed"] == 0


def test_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="split"):
        evaluate_extraction(split="train")
    with pytest.raises(InvalidInputError, match="limit"):
        evaluate_extraction(limit=0)


class _BrokenExtractor:
    name = "broken"

    def extract(self, text: str) -> object:
        raise RuntimeError("backend down")


@pytest.mark.model
def test_failing_extractor_fails_the_run(tmp_path: Path) -> None:
    """Every unit failing used to be written as status 'ok'; the task runner now decides the status."""
    run = evaluate_extraction(
        _BrokenExtractor(),
        split="dev",
        limit=1,
        baseline=False,
        rouge=False,  # type: ignore[arg-type]
        out_dir=tmp_path,
    )
    assert run.status == "failed"
    assert run.metrics["error_rate"] == 1.0 and run.metrics["extractor"]["coverage"] == 0.0
    assert all(e.error == "RuntimeError: backend down" for e in run.examples())
    assert any("max_error_rate" in n for n in run.notes)
