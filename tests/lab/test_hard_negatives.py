"""The hard-negative miner's rule (FakeEmbedder: bag-of-words vectors, so shared words mean similarity)."""

from __future__ import annotations

import collections
import gzip
from pathlib import Path

import pytest

from memlab.datasets import Dialogue, Pair, Turn, default_data_dir, load_pairs
from memlab.errors import InvalidInputError
from memlab.lab.hard_negatives import (
    HardNegative,
    MiningUnit,
    build_hard_negatives,
    cap_by_source,
    ci_tod_units,
    decode_units,
    dialogue_unit,
    gu_dnli_units,
    mine,
    prosecco_units,
    sample_units,
    split_dev,
    split_statements,
)
from memlab.records import Label
from memlab.testing import FakeEmbedder


def test_statements_are_sentences_without_questions_or_short_ones() -> None:
    text = "That sucks! What were they upset about? I have two dogs at home. My dogs love the beach."
    assert split_statements(text) == ["I have two dogs at home.", "My dogs love the beach."]
    assert split_statements("can you find a cafe near me") == []  # a question without "?"
    assert split_statements("it is at 5 miles") == ["it is at 5 miles"]
    assert split_statements("yes of course", min_words=4) == []


def test_dialogue_unit_pairs_a_speaker_with_its_earlier_turns_only() -> None:
    u = dialogue_unit(
        "s",
        "g",
        [
            ("a", "I live in a big city. I work in a small bakery."),
            ("b", "I live in a small village near the sea."),
            ("a", "I love my big city very much."),
        ],
        min_words=4,
    )
    assert u is not None
    pairs = {(u.texts[i], u.texts[j]) for i, j in u.candidates}
    assert pairs == {
        ("I live in a big city.", "I love my big city very much."),
        ("I work in a small bakery.", "I love my big city very much."),
    }  # never across speakers, never two sentences of one turn
    assert (
        dialogue_unit("s", "g", [("a", "I live in a big city."), ("b", "I live in a village by the sea.")])
        is None
    )


def _unit(texts: list[str], cands: list[tuple[int, int]], source: str = "s", group: str = "g") -> MiningUnit:
    return MiningUnit(source, group, tuple(texts), ("0",) * len(texts), tuple(cands))


def test_mine_keeps_similar_pairs_top_k_and_drops_eval_pairs_and_repeats() -> None:
    emb = FakeEmbedder(dim=256, bag_of_words=True)
    texts = [
        "my mom loved red flowers",  # 0
        "my mom loved cooking pasta",  # 1: shares 3 words with 0 and 2
        "quantum tunnelling puzzles physicists",  # 2: unrelated
        "my mom loved red roses",  # 3: closest to 0
        "My mom loved red flowers!",  # 4: same as 0 once normalised
    ]
    u = _unit(texts, [(0, 3), (1, 3), (2, 3), (0, 4), (0, 1)])
    rows, stats = mine([u], emb, threshold=0.3, top_k=1)
    assert [(r.premise, r.hypothesis) for r in rows] == [(texts[0], texts[1]), (texts[0], texts[3])]
    st = stats["s"]
    assert st["candidates"] == 5 and st["above_threshold"] == 3 and st["top_k"] == 2 and st["kept"] == 2
    assert all(r.cosine >= 0.3 for r in rows)

    # top_k=2 keeps both similar earlier statements of texts[3]; an eval pair (either order) is dropped
    rows, stats = mine(
        [u, _unit(texts, [(1, 3)], group="h")],
        emb,
        threshold=0.3,
        top_k=2,
        exclude=[("MY MOM LOVED RED ROSES", "my mom loved red flowers")],
    )
    assert [(r.premise, r.hypothesis) for r in rows] == [(texts[0], texts[1]), (texts[1], texts[3])]
    assert stats["s"]["excluded_eval"] == 1 and stats["s"]["duplicate"] == 1  # the second unit repeats (1, 3)
    assert mine([u], emb, threshold=0.3, top_k=2) == mine([u], emb, threshold=0.3, top_k=2)  # deterministic
    with pytest.raises(InvalidInputError, match="top_k"):
        mine([u], emb, threshold=0.3, top_k=0)


def _hn(source: str, group: str) -> HardNegative:
    return HardNegative("a", group, source, group, "0", 0.5, "")


def test_dev_split_is_seeded_and_by_group() -> None:
    rows = [_hn("x", f"g{i // 3}") for i in range(300)] + [_hn("y", f"h{i}") for i in range(50)]
    train, dev = split_dev(rows, fraction=0.1, seed=5)
    assert (train, dev) == split_dev(rows, fraction=0.1, seed=5)
    assert {r.group for r in train}.isdisjoint({r.group for r in dev})
    assert collections.Counter(r.source for r in dev) == {"x": 30, "y": 5}  # 10% of each source's groups
    assert split_dev(rows, fraction=0.1, seed=6) != (train, dev)


def test_caps_fill_small_sources_first() -> None:
    rows = [_hn("big", str(i)) for i in range(100)] + [_hn("small", str(i)) for i in range(5)]
    kept = cap_by_source(rows, 25, seed=0)
    assert collections.Counter(r.source for r in kept) == {"big": 20, "small": 5}
    assert kept == cap_by_source(rows, 25, seed=0) and cap_by_source(rows, None) == rows
    units = [_unit(["a", "b", "c"], [(0, 1)], "big", str(i)) for i in range(10)] + [
        _unit(["a", "b"], [(0, 1)], "small", str(i)) for i in range(2)
    ]
    sampled = sample_units(units, 16, seed=0)
    assert collections.Counter(u.source for u in sampled) == {"big": 4, "small": 2}
    assert sum(len(u.texts) for u in sampled) <= 16


def test_unit_builders_take_consistent_material_only() -> None:
    turns = (
        Turn(0, "0", "I have two dogs at home."),
        Turn(1, "1", "Nice."),
        Turn(2, "0", "My dogs are both old."),
    )
    ok = Dialogue("ok", turns, Label.NOT_CONTRADICTION)
    bad = Dialogue("bad", turns, Label.CONTRADICTION)
    assert [u.group for u in decode_units([ok, bad])] == ["decode:ok"]

    dialogue = [
        {"turn": "assistant", "utterance": "your yoga class is at 7pm on friday"},
        {"turn": "driver", "utterance": "thanks"},
        {"turn": "assistant", "utterance": "the yoga class is with tom on friday"},
    ]
    ci = [
        Pair(
            f"f:{i}", "h", "x", Label.NOT_CONTRADICTION, {"hi": hi, "kbi": kbi, "qi": 1, "dialogue": dialogue}
        )
        for i, (hi, kbi) in enumerate([(0, 0), (1, 0), (0, 1)])
    ]
    assert [u.origin for u in ci_tod_units(ci)] == ["f:0"]  # qi does not matter, hi and kbi do

    ctx = "<A> we moved to leeds last year <B> oh right did you? <A> it is a lovely city to live in"
    gu = [
        Pair("g:1", ctx, "Person A lives in Leeds now", Label.ENTAILMENT),
        Pair("g:2", ctx, "Person A lives in London now", Label.CONTRADICTION),
        Pair("g:3", ctx, "Person A and Person B are friends", Label.NEUTRAL),  # two speakers named
        Pair("g:4", ctx, "Speaker B has never been to Leeds", Label.NEUTRAL),  # B's only turn is a question
    ]
    (u,) = gu_dnli_units(gu)
    assert [(u.texts[i], u.texts[j]) for i, j in u.candidates] == [
        ("we moved to leeds last year", "Person A lives in Leeds now"),
        ("it is a lovely city to live in", "Person A lives in Leeds now"),
    ]
    pro = [
        Pair("p:1", "taxes must rise", "we will not raise taxes", Label.CONTRADICTION, {"speaker_id": "s1"}),
        Pair(
            "p:2",
            "schools need money",
            "teachers are underpaid",
            Label.NOT_CONTRADICTION,
            {"speaker_id": "s2"},
        ),
    ]
    assert [(u.texts, u.speakers) for u in prosecco_units(pro)] == [
        (("schools need money", "teachers are underpaid"), ("s2", "s2"))
    ]


def _head(src: Path, dst: Path, n: int) -> None:
    """The first ``n`` lines of a (gzip) data file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(n)]
    with opener(dst, "wt", encoding="utf-8") as out:
        out.writelines(lines)


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    root = tmp_path / "datasets"
    files = {
        "decode_pairs": ["dev_dialogues.jsonl.gz", "dev.jsonl.gz"],
        "ci_tod": ["calendar_train.jsonl", "navigate_train.jsonl"],
        "gu_dnli": ["train_5_data.tsv", "dev_5_data.tsv", "test_5_data.tsv"],
        "prosecco": ["train.jsonl.gz", "test.jsonl.gz"],
    }
    for name, names in files.items():
        for f in names:
            _head(default_data_dir(name) / f, root / name / f, 60)
    (root / "decode").mkdir()
    return root


def test_build_writes_a_loadable_deterministic_set(tiny_root: Path, tmp_path: Path) -> None:
    kw = {"embedder": FakeEmbedder(dim=64, bag_of_words=True), "data_dir": tiny_root, "progress": False}
    report = build_hard_negatives(tmp_path / "a", threshold=0.2, max_train=40, **kw)  # type: ignore[arg-type]
    build_hard_negatives(tmp_path / "b", threshold=0.2, max_train=40, **kw)  # type: ignore[arg-type]
    for f in ("train.jsonl.gz", "dev.jsonl.gz"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    cards = [(tmp_path / d / "SOURCE.md").read_text(encoding="utf-8").splitlines() for d in "ab"]
    assert [x for x in cards[0] if "Mining time" not in x] == [x for x in cards[1] if "Mining time" not in x]
    train = load_pairs("hard_negatives", "train", data_dir=tmp_path / "a")
    dev = load_pairs("hard_negatives", "dev", data_dir=tmp_path / "a")
    assert 0 < len(train) <= 40 and dev
    assert {p.label for p in train + dev} == {Label.NOT_CONTRADICTION}
    assert {p.meta["source"] for p in train} <= {
        "decode/dev",
        "ci_tod/train",
        "gu_dnli/train",
        "prosecco/train",
    }
    assert all(p.meta["cosine"] >= 0.2 for p in train + dev)
    assert report["counts"]["train"]["total"] == len(train)
    card = (tmp_path / "a" / "SOURCE.md").read_text(encoding="utf-8")
    assert card.splitlines()[0].startswith("> **License class: research")
    assert f"| `train.jsonl.gz` | train | {len(train)} | `not_contradiction`: {len(train)} |" in card
    # no mined pair repeats an evaluation pair
    evals = {
        frozenset((p.premise.lower(), p.hypothesis.lower()))
        for name, split in (("decode_pairs", "dev"), ("gu_dnli", "dev"), ("prosecco", "test"))
        for p in load_pairs(name, split, data_dir=tiny_root / name)
    }
    assert not any(frozenset((p.premise.lower(), p.hypothesis.lower())) in evals for p in train + dev)


def test_shipped_set_is_consistent_binary_and_disjoint_from_eval() -> None:
    folder = default_data_dir("hard_negatives")
    if not (folder / "train.jsonl.gz").exists():
        pytest.skip("datasets/hard_negatives not mined yet")
    train = load_pairs("hard_negatives", "train")
    dev = load_pairs("hard_negatives", "dev")
    assert len(train) <= 12_000 and len(dev) > 0
    assert {p.label for p in train + dev} == {Label.NOT_CONTRADICTION}
    assert "locomo" not in {str(p.meta["source"]).split("/")[0] for p in train + dev}
