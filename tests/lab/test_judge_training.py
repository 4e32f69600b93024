"""memlab train-judge end to end on a tiny config (tiny random base model, a few dozen pairs, a few steps)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from memlab.cli.main import main
from memlab.errors import InvalidInputError
from memlab.eval.metrics import expected_calibration_error
from memlab.judges import DefaultJudge
from memlab.lab.judge_training import (
    DataSource,
    TrainJudgeConfig,
    fit_temperature,
    load_config,
    train_judge,
)


def _tiny(base: Path, **kw: object) -> dict[str, object]:
    cfg: dict[str, object] = {
        "seed": 3,
        "base_model": str(base),
        "train": [
            {"dataset": "snli", "split": "dev", "limit": 40},
            {"dataset": "gu_dnli", "split": "train", "limit": 16},
            {"dataset": "ci_tod", "split": "train", "limit": 8},
        ],
        "dev": [{"dataset": "gu_dnli", "split": "dev", "limit": 12}],
        "holdout_size": 10,
        "synthetic_train": 16,
        "synthetic_dev": 8,
        "max_length": 64,
        "batch_size": 8,
        "max_steps": 3,
        "quantize": None,
    }
    cfg.update(kw)
    return cfg


@pytest.mark.model
def test_train_judge_cli_end_to_end(
    tiny_nli: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump(_tiny(tiny_nli)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["train-judge", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
    assert '"steps": 3' in capsys.readouterr().out
    report = json.loads((out / "train_report.json").read_text(encoding="utf-8"))
    assert report["steps"] == 3
    assert report["sizes"]["train"] == 40 + 16 + 8 + 16  # snli: 40 of what the 10-row holdout leaves
    assert report["sizes"]["dev:snli/dev-holdout"] == 10
    assert {d["dataset"] for d in report["data"]} == {"snli", "gu_dnli", "ci_tod", "synthetic"}
    assert all(len(d["sha256"]) == 64 for d in report["data"] if "sha256" in d)
    assert report["wall_time_s"]["total"] > 0 and report["temperature"] > 0
    assert set(report["dev_metrics"]) == {"snli/dev-holdout", "gu_dnli/dev", "synthetic"}
    assert report["config"]["lr"] == pytest.approx(TrainJudgeConfig().lr)
    judge = DefaultJudge(out, quantize=None)
    assert judge.temperature == pytest.approx(report["temperature"], abs=1e-3)
    verdicts = judge.judge([("I was born on 12 July 1990.", "My birthday is on 15 August.")])
    assert 0.0 <= verdicts[0].probability <= 1.0


@pytest.mark.model
def test_training_is_seeded(tiny_nli: Path, tmp_path: Path) -> None:
    cfg = TrainJudgeConfig.model_validate(_tiny(tiny_nli, max_steps=2, synthetic_dev=0, dev=[]))
    a = train_judge(cfg, tmp_path / "a", progress=False)
    b = train_judge(cfg, tmp_path / "b", progress=False)
    assert a.weights_sha256 == b.weights_sha256
    assert a.temperature == b.temperature


@pytest.mark.model
@pytest.mark.parametrize(
    "source",
    [
        {"dataset": "snli", "split": "test"},
        {"dataset": "anli", "split": "dev"},
        {"dataset": "sick", "split": "train"},
        {"dataset": "gu_dnli", "split": "nope"},
        {"dataset": "cmnli_zh", "split": "dev"},
        {"dataset": "xnli", "split": "dev"},
        {"dataset": "cnli_zh", "split": "test"},
        {"dataset": "decode", "split": "dev"},
    ],
)
def test_forbidden_sources_are_refused(tiny_nli: Path, tmp_path: Path, source: dict[str, str]) -> None:
    cfg = TrainJudgeConfig.model_validate(_tiny(tiny_nli, train=[source]))
    with pytest.raises(InvalidInputError):
        train_judge(cfg, tmp_path / "x", progress=False)


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: -1\n", encoding="utf-8")
    with pytest.raises(InvalidInputError):
        load_config(bad)
    bad.write_text("unknown_key: 1\n", encoding="utf-8")
    with pytest.raises(InvalidInputError):
        load_config(bad)


def _without_new_source_options(dumped: dict[str, object]) -> dict[str, object]:
    """Source options added after a run (``holdout``) at their "off" value are not in its recorded config."""
    for role in ("train", "dev"):
        dumped[role] = [{k: v for k, v in src.items() if not (k == "holdout" and v == 0)}
                        for src in dumped[role]]  # type: ignore[attr-defined]
    return dumped


def test_shipped_config_is_the_default_and_valid() -> None:
    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "eval" / "judge.yaml")
    assert cfg == TrainJudgeConfig()
    assert all(s.split != "test" for s in (*cfg.train, *cfg.dev))
    assert {(s.dataset, s.split) for s in cfg.train} == {
        ("snli", "dev"),
        ("gu_dnli", "train"),
        ("ci_tod", "train"),
    }
    assert all(isinstance(s, DataSource) for s in cfg.train)


def test_english_weights_come_from_the_v3_config() -> None:
    """The shipped English weights were trained with exactly eval/judge_v3.yaml (continued from v2), with v1/v2's seed,
    so the SNLI dev holdout (seeded by it) is the same rows no version ever trained on."""
    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "eval" / "judge_v3.yaml")
    assert cfg.seed == load_config(repo / "eval" / "judge_v2.yaml").seed == load_config(repo / "eval" / "judge.yaml").seed
    meta = json.loads((repo / "memlab" / "judges" / "weights" / "default" / "train_report.json").read_text())
    dumped = cfg.model_dump(mode="json")
    assert {k: dumped[k] for k in meta["config"]} == meta["config"]
    # the decision threshold follows the v1 rule (pooled dev fcr <= 0.07 on these sets)
    assert cfg.threshold_dev == ("snli/dev-holdout", "gu_dnli/dev", "synthetic")
    assert all(s.split != "test" for s in (*cfg.train, *cfg.dev))
    assert {s.dataset for s in cfg.train} >= {"decode_pairs", "lingnli", "snli", "gu_dnli"}


def test_multilingual_weights_come_from_the_e5_v2_config() -> None:
    """The shipped multilingual weights were trained with exactly eval/judge_e5_v2.yaml (continued from v1)."""
    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "eval" / "judge_e5_v2.yaml").model_dump(mode="json")
    meta = json.loads((repo / "memlab" / "judges" / "weights" / "multilingual" / "train_report.json").read_text())
    assert {k: cfg[k] for k in meta["config"]} == meta["config"]
    assert cfg["base_model"].endswith("weights/multilingual") and cfg["lr"] == pytest.approx(3e-5)
    assert ("cnli_zh", "dev") in {(s["dataset"], s["split"]) for s in cfg["train"]}
    assert all(s["split"] != "test" for s in (*cfg["train"], *cfg["dev"]))


@pytest.mark.parametrize("folder", ["judge_v2_ablation", "judge_e5_v2_ablation"])
def test_ablation_configs_differ_from_all_only_by_the_sets_left_out(folder: str) -> None:
    """Each judge card's contribution table compares runs that differ only by the training sets named in the file
    name: same base, seed, steps and hyper-parameters, a strict subset of the sources of ``all.yaml``, no test split."""
    root = Path(__file__).resolve().parents[2] / "eval" / "experiments" / folder
    full = load_config(root / "all.yaml").model_dump(mode="json")
    others = sorted(root.glob("without_*.yaml"))
    assert others, f"no ablation configs in {root}"
    for path in others:
        cfg = load_config(path).model_dump(mode="json")
        assert all(s["split"] != "test" for s in (*cfg["train"], *cfg["dev"]))
        assert cfg["train"] and all(s in full["train"] for s in cfg["train"]), path.name
        left_out = [s for s in full["train"] if s not in cfg["train"]]
        assert left_out, f"{path.name} trains on every set of all.yaml"
        same = {k for k in full if k not in {"train", "dev", "threshold_dev"}}
        assert {k: cfg[k] for k in same} == {k: full[k] for k in same}, path.name
        assert cfg["max_steps"] is not None and cfg["max_steps"] == full["max_steps"]


def test_v1_multilingual_config_still_validates() -> None:
    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "eval" / "judge_e5.yaml")
    assert cfg.base_model == "e5" and cfg.lr == pytest.approx(5e-5)


def test_fit_temperature_recovers_overconfidence(rng: np.random.Generator) -> None:
    n = 4000
    true_logit = rng.normal(0, 2, n)
    y = rng.random(n) < 1 / (1 + np.exp(-true_logit))
    logits = np.stack([true_logit * 3.0, np.zeros(n)], axis=1)  # 3x over-confident
    t = fit_temperature(logits, y)
    assert 2.4 < t < 3.6
    p_raw = 1 / (1 + np.exp(-logits[:, 0]))
    p_cal = 1 / (1 + np.exp(-logits[:, 0] / t))
    assert expected_calibration_error(y, p_cal) < expected_calibration_error(y, p_raw)


@pytest.mark.model
def test_calibrate_only_keeps_weights(tiny_nli: Path, tmp_path: Path) -> None:
    cfg = TrainJudgeConfig.model_validate(_tiny(tiny_nli, max_steps=2))
    out = tmp_path / "j"
    first = train_judge(cfg, out, progress=False)
    again = train_judge(cfg.model_copy(update={"quantize": "int8"}), out, progress=False, calibrate_only=True)
    assert again.weights_sha256 == first.weights_sha256
    assert again.steps == first.steps
    assert json.loads((out / "judge.json").read_text(encoding="utf-8"))["quantize"] == "int8"
    assert DefaultJudge(out).quantize == "int8"  # "auto" follows judge.json
    with pytest.raises(InvalidInputError):
        train_judge(cfg, tmp_path / "empty", progress=False, calibrate_only=True)


@pytest.mark.model
def test_research_sets_may_train(tiny_nli: Path, tmp_path: Path) -> None:
    train = [{"dataset": "decode_pairs", "split": "train", "limit": 12}, {"dataset": "cnli_zh", "split": "dev", "limit": 8}]
    cfg = TrainJudgeConfig.model_validate(_tiny(tiny_nli, train=train, max_steps=1, synthetic_train=0))
    report = train_judge(cfg, tmp_path / "r", progress=False)
    assert report.sizes["train"] == 20
    assert {d["dataset"] for d in report.data if d.get("role") == "train"} == {"decode_pairs", "cnli_zh"}


class _Interrupted(Exception):
    pass


@pytest.mark.model
def test_training_resumes_from_its_checkpoint(
    tiny_nli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed after step 2 and started again ends with the same weights as a run never interrupted."""
    from memlab.lab import judge_training

    cfg = TrainJudgeConfig.model_validate(_tiny(tiny_nli, max_steps=4, checkpoint_every=2, dev=[], synthetic_dev=0))
    whole = train_judge(cfg, tmp_path / "whole", progress=False)

    real_save = judge_training._Checkpoint.save
    steps_done: list[int] = []

    def save_then_die(self: object, step: int, *args: object, **kw: object) -> None:
        real_save(self, step, *args, **kw)  # type: ignore[arg-type]
        steps_done.append(step)
        if step == 2:
            raise _Interrupted

    ckpt = tmp_path / "ckpt"  # outside the output directory, as the CLI's --checkpoint-dir
    monkeypatch.setattr(judge_training._Checkpoint, "save", save_then_die)
    with pytest.raises(_Interrupted):
        train_judge(cfg, tmp_path / "again", progress=False, checkpoint_dir=ckpt)
    assert (ckpt / "train_state.pt").is_file() and steps_done == [1, 2]
    monkeypatch.setattr(judge_training._Checkpoint, "save", real_save)
    resumed = train_judge(cfg, tmp_path / "again", progress=False, checkpoint_dir=ckpt)
    assert resumed.steps == 4
    assert resumed.weights_sha256 == whole.weights_sha256

    # another config (other lr) ignores the stale state and trains from the start
    other = cfg.model_copy(update={"lr": cfg.lr / 2})
    fresh = train_judge(other, tmp_path / "other", progress=False, checkpoint_dir=ckpt)
    assert fresh.weights_sha256 != whole.weights_sha256


@pytest.mark.model
def test_continued_training_from_a_trained_judge(tiny_nli: Path, tmp_path: Path) -> None:
    """A trained judge directory is a valid base: its head is kept, the new run starts from its weights."""
    first = train_judge(TrainJudgeConfig.model_validate(_tiny(tiny_nli, max_steps=2)), tmp_path / "v1", progress=False)
    cfg = TrainJudgeConfig.model_validate(
        _tiny(tmp_path / "v1", max_steps=1, train=[{"dataset": "decode_pairs", "split": "train", "limit": 8,
                                                    "holdout": 3}])
    )
    second = train_judge(cfg, tmp_path / "v2", progress=False)
    assert second.weights_sha256 != first.weights_sha256
    assert second.sizes["dev:decode_pairs/train-holdout"] == 3 and second.sizes["train"] == 8 + 16
    assert DefaultJudge(tmp_path / "v2").judge([("I am a nurse.", "I am a pilot.")])[0].probability >= 0.0


def test_holdout_is_drawn_from_the_whole_source_whatever_the_limit() -> None:
    """A limit samples what the holdout leaves: the held-out rows are the same with any limit (or none), so a judge
    continued from one trained on the whole source is never measured on rows it trained on."""
    from memlab.lab.judge_training import DataSource, _add_train_source, _Data, _load_source

    cfg = TrainJudgeConfig.model_validate({"holdout_size": 50})
    total = len(_load_source(DataSource(dataset="snli", split="dev"), None, 0))
    held = []
    for limit in (None, 120, 30):
        data = _Data([], {}, [])
        _add_train_source(cfg, DataSource(dataset="snli", split="dev", limit=limit), data)
        dev = data.dev["snli/dev-holdout"]
        held.append([(r.premise, r.hypothesis) for r in dev])
        assert len(dev) == 50 and len(data.train) == (limit or total - 50)
        rows = {(r.premise, r.hypothesis, r.label) for r in data.train}
        assert not {(r.premise, r.hypothesis, r.label) for r in dev} & rows
    assert held[0] == held[1] == held[2]


def test_e5_judge_directories_are_recognised(tmp_path: Path) -> None:
    from memlab.lab.judge_training import _is_e5

    (tmp_path / "judge.json").write_text('{"base": "e5"}', encoding="utf-8")
    assert _is_e5(TrainJudgeConfig(base_model=str(tmp_path)))
    assert _is_e5(TrainJudgeConfig(base_model="e5"))
    assert not _is_e5(TrainJudgeConfig(base_model="minilm"))
    repo = Path(__file__).resolve().parents[2]
    assert _is_e5(TrainJudgeConfig(base_model=str(repo / "memlab/judges/weights/multilingual")))
    assert not _is_e5(TrainJudgeConfig(base_model=str(repo / "memlab/judges/weights/default")))
