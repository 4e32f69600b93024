"""`memlab calibrate-embedder` and `memlab bench embedders` end to end on a tiny datasets folder."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.cli.main import main
from memlab.embedding import register_embedder
from memlab.eval.runs import load_run
from memlab.lab.calibrate import load_calibration
from memlab.testing import FakeEmbedder


def _fake_bow() -> FakeEmbedder:
    emb = FakeEmbedder(dim=64, bag_of_words=True)
    emb.name = "fake-bow"
    return emb


@pytest.fixture(autouse=True)
def _fake_registered():
    register_embedder("fake-bow", _fake_bow)


def test_calibrate_embedder_writes_json_and_prints_table(tiny_train_dev, tmp_path, capsys):
    out = tmp_path / "cal" / "fake-bow.json"
    rc = main(["calibrate-embedder", "fake-bow", "--data-dir", str(tiny_train_dev), "--out", str(out),
               "--limit", "0", "--recall-target", "0.9"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "| fake-bow | it |" in text and "chat_search" in text and str(out) in text
    cal = load_calibration(out)
    assert cal.embedder == "fake-bow" and cal.recall_target == 0.9


def test_calibrate_dry_run_writes_nothing(tiny_train_dev, tmp_path, capsys):
    rc = main(["calibrate-embedder", "fake-bow", "--data-dir", str(tiny_train_dev), "--dry-run",
               "--out", str(tmp_path / "x.json")])
    assert rc == 0 and not (tmp_path / "x.json").exists()


def test_bench_embedders(tiny_data, tmp_path, capsys):
    rc = main(["bench", "embedders", "--embedders", "fake-bow", "--datasets", "snli,rte3_ita,kvpi",
               "--data-dir", str(tiny_data), "--limit", "0", "--distractors", "2", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "| snli | en | fake-bow |" in out and "| kvpi | zh | fake-bow |" in out
    run = load_run(tmp_path)  # an eval run, read like any other
    assert run.spec.task == "bench-embedders" and run.spec.params["embedders"] == ["fake-bow"]
    assert {e.meta["dataset"] for e in run.examples()} == {"snli", "rte3_ita", "kvpi"}
    assert run.metric() == pytest.approx(
        np.mean([run.metric(f"{d}.fake-bow.recall_at_10_thr") for d in ("snli", "rte3_ita", "kvpi")]))
    assert "| snli | en | fake-bow |" in (tmp_path / "bench.md").read_text(encoding="utf-8")


def test_errors_are_clean(tmp_path, capsys):
    assert main(["calibrate-embedder", "no-such-embedder", "--data-dir", str(tmp_path)]) == 1
    assert "Unknown embedder" in capsys.readouterr().err
    assert main(["calibrate-embedder", "fake-bow", "--data-dir", str(tmp_path)]) == 1  # no dataset files
    assert "not found" in capsys.readouterr().err
    assert main(["bench", "embedders", "--embedders", "fake-bow", "--datasets", "nope",
                 "--data-dir", str(tmp_path)]) == 1
