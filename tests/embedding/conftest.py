"""A tiny datasets/ folder in the original formats (for calibration and bench tests without the real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EN = [("A man plays the guitar on a stage .", "A woman sleeps at home .", "A man is playing music ."),
      ("Two dogs run in the park .", "The cats sit on a sofa .", "Animals are running outside ."),
      ("A child eats an apple .", "The child is asleep .", "A kid has food ."),
      ("People walk on the beach .", "Nobody is outside .", "Some people are outdoors .")]
IT = [("L'utente è nato a Roma nel 1990 e lavora come medico.", "L'utente è nato a Milano."),
      ("Il museo apre alle nove e chiude alle diciotto.", "Il museo è chiuso la mattina."),
      ("La squadra ha vinto il campionato nel 2006.", "La squadra non ha mai vinto."),
      ("Il treno per Napoli parte dal binario tre.", "Il treno parte per Torino.")]
ZH = [("我住在北京,每天骑车上班", "我住在上海"), ("他今年三十岁,是一名老师", "他是医生"),
      ("这家餐厅晚上十点关门", "这家餐厅全天营业"), ("我养了一只猫,叫小白", "我没有养宠物")]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def make_data_dir(root: Path, *, with_test: bool) -> Path:
    """Write every file the calibration reads (train/dev), and the held-out ones when ``with_test``."""
    splits = ["dev", "test"] if with_test else ["dev"]
    for split in splits:
        p = root / "snli" / f"{split}.tsv"
        p.parent.mkdir(parents=True, exist_ok=True)
        lines = ["premise\thypothesis\tlabel"]
        for prem, contra, ent in EN:
            lines += [f"{prem}\t{contra}\tcontradiction", f"{prem}\t{ent}\tentailment"]
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for split in ["train", "dev"] + (["test"] if with_test else []):
        p = root / "gu_dnli" / f"{split}_5_data.tsv"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(f"<A> {prem.lower()} <B> yeah \tPerson A said: {contra}\tContradiction\n"
                             f"<A> {prem.lower()} \tPerson A said: {ent}\tEntailment\n"
                             for prem, contra, ent in EN), encoding="utf-8")
    (root / "locomo").mkdir(parents=True, exist_ok=True)
    personas = [{"Speaker 1": ["I like metal music.", "I have a dog.", "I am a nurse."],
                 "Speaker 2": ["I live in Rome.", "I play tennis."]}] * 3
    (root / "locomo" / "msc_personas_all.json").write_text(
        json.dumps({"train": personas, "valid": [], "test": []}), encoding="utf-8")
    for split in splits:
        _write_jsonl(root / "rte3_ita" / f"{split}.jsonl",
                     [{"id": str(i), "task": "IE", "length": "short", "entailment": "NO", "t": t, "h": h}
                      for i, (t, h) in enumerate(IT)])
    for _split, name in [("train", "train.10k.jsonl")] + ([("dev", "dev.jsonl")] if with_test else []):
        _write_jsonl(root / "ocnli" / name,
                     [{"sentence1": a, "sentence2": b, "label": "contradiction", "prem_id": f"p{i}", "id": i}
                      for i, (a, b) in enumerate(ZH)] + [{"sentence1": "x", "sentence2": "y", "label": "-"}])
    for split in ["train"] + (["dev"] if with_test else []):
        _write_jsonl(root / "cdconv" / f"{split}.jsonl",
                     [{"u1": "你住哪", "b1": a, "u2": "你住哪里", "b2": b, "label": 3} for a, b in ZH]
                     + [{"u1": "你好", "b1": "你好呀", "u2": "吃了吗", "b2": "吃了", "label": 0}])
    if with_test:
        (root / "kvpi").mkdir(parents=True, exist_ok=True)
        (root / "kvpi" / "KvPI_test.txt").write_text(
            # KvPI labels as its rows say: 0 irrelevant, 1 entailed, 2 contradicted (memlab.datasets.KVPI_LABELS)
            "{'constellation': '射手座', 'loc': '福建 莆田', 'gender': 'female'} <SEP> 我在北京工作\t2\t1\n"
            "{'constellation': 水瓶座, 'loc': 湖北 潜江, 'gender': male} <SEP> 我是女生\t2\t0\n"
            "{'constellation': '天秤座', 'loc': '河南 洛阳', 'gender': 'female'} <SEP> 今天天气不错\t0\t1\n",
            encoding="utf-8")
        turns = [{"turn_id": i, "agent_id": i % 2, "text": t} for i, t in
                 enumerate(["Hi!", "I am a nurse.", "Cool, I teach.", "I have two cats.", "Nice.", "I have no pets."])]
        _write_jsonl(root / "decode" / "human-bot.jsonl",
                     [{"record_id": "d1", "is_contradiction": True, "turns": turns},
                      {"record_id": "d2", "is_contradiction": False, "turns": turns[:4]}])
    return root


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    """train/dev AND test files (for the held-out bench)."""
    return make_data_dir(tmp_path / "datasets", with_test=True)


@pytest.fixture
def tiny_train_dev(tmp_path: Path) -> Path:
    """train/dev files only: calibration must never need a test split."""
    return make_data_dir(tmp_path / "datasets_nt", with_test=False)
