"""eval/judge_v4.yaml: valid, only allowed non-test splits, v3's seed (so v3's SNLI holdout), the new sets in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.lab.judge_training import _check_source, load_config

REPO = Path(__file__).resolve().parents[2]


def test_v4_config_is_valid_and_keeps_evaluation_splits_out() -> None:
    v3 = load_config(REPO / "eval" / "judge_v3.yaml")
    v4 = load_config(REPO / "eval" / "judge_v4.yaml")
    assert (
        v4.seed == v3.seed and v4.holdout_dataset == v3.holdout_dataset and v4.holdout_size == v3.holdout_size
    )
    assert v4.lr == pytest.approx(1.5e-5) and v4.checkpoint_every == 200
    for src in (*v4.train, *v4.dev):
        _check_source(src)  # permissive / research, never a test split
    train = {(s.dataset, s.split) for s in v4.train}
    dev = {(s.dataset, s.split) for s in v4.dev}
    assert {
        ("hard_negatives", "train"),
        ("prosecco", "train"),
        ("tenp", "train"),
        ("conjnli", "train"),
        ("semi_auto_nli", "train"),
    } <= train
    assert {("hard_negatives", "dev"), ("tenp", "dev")} <= dev and not train & dev
    assert {(s.dataset, s.split) for s in v3.dev} <= dev
    assert ("conjnli", "dev") not in train and ("tenp", "dev") not in train
