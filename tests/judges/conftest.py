"""Fixtures for the judge tests: a tiny randomly initialised BERT classifier saved to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

_WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] i was born on my birthday is july august the a . , 12 15 1990 "
    "sono nato il compleanno luglio agosto we are our wedding anniversary man dog cat"
).split()


def build_tiny_model(path: Path, id2label: dict[int, str]) -> Path:
    """Save a tiny random BERT sequence classifier + WordPiece tokenizer to ``path``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(_WORDS) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    config = BertConfig(
        vocab_size=len(_WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=160,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny 3-way NLI model whose config says CONTRADICTION / ENTAILMENT / NEUTRAL (any case)."""
    return build_tiny_model(
        tmp_path_factory.mktemp("tiny_nli"), {0: "ENTAILMENT", 1: "Neutral", 2: "contradiction"}
    )
