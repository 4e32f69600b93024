"""Loaders: counts equal each SOURCE.md card, label mappings, data_dir copies, malformed files."""

from __future__ import annotations

import collections
import re
import shutil
from pathlib import Path

import pytest

from memlab.datasets import (
    DATASETS,
    Pair,
    dataset_sha256,
    default_data_dir,
    dialogue_pairs,
    load_dialogues,
    load_locomo,
    load_pairs,
    load_situatedqa,
    sample_pairs,
)
from memlab.errors import DatasetFormatError, InvalidInputError, UnknownComponentError
from memlab.records import Label

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|[^|]*\|\s*(\d+)\s*\|\s*(\d+)\s*\|(.*)\|\s*$")
_ROW_NEW = re.compile(r"^\|\s*`([^`]+)`\s*\|[^|]*\|\s*(\d+)\s*\|([^|]*)\|")  # file | split | rows | labels | ...
_LABEL = re.compile(r"`([^`]+)`:\s*(\d+)")


def card_rows(name: str) -> dict[str, tuple[int, dict[str, int]]]:
    """file -> (rows here, {raw label: count}) parsed from the card's "Files here and counts" table."""
    text = (default_data_dir(name) / "SOURCE.md").read_text(encoding="utf-8")
    section = text.split("## Files here and counts", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = _ROW.match(line)
        if m:
            out[m.group(1)] = (int(m.group(2)), {k: int(v) for k, v in _LABEL.findall(m.group(4))})
        elif m := _ROW_NEW.match(line):  # the newer cards: no held-out column
            out[m.group(1)] = (int(m.group(2)), {k: int(v) for k, v in _LABEL.findall(m.group(3))})
    return out


#: every split of a pair set whose card counts its files (scenarios_dev splits one file by batch: its own test below)
PAIR_SPLITS = [(n, s) for n, d in DATASETS.items() if d.kind == "pairs" and n != "scenarios_dev" for s in d.splits]


@pytest.fixture(scope="module")
def loaded(request: pytest.FixtureRequest) -> tuple[str, str, list[Pair]]:
    """``(name, split, load_pairs(name, split))``, parametrized indirectly: module scope makes pytest run the two card
    checks of one split one after the other on a single load (a large train split takes a second to parse), and
    drop it before the next split."""
    name, split = request.param
    return name, split, load_pairs(name, split)


@pytest.mark.parametrize("loaded", PAIR_SPLITS, ids=[f"{n}-{s}" for n, s in PAIR_SPLITS], indirect=True)
def test_pair_counts_match_card(loaded: tuple[str, str, list[Pair]]) -> None:
    name, split, pairs = loaded
    card = card_rows(name)
    files = DATASETS[name].splits[split]
    expected = sum(card[f][0] for f in files)
    skipped = sum(card[f][1].get("-", 0) for f in files) if name == "ocnli" else 0  # documented skip
    assert len(pairs) == expected - skipped
    assert len({p.id for p in pairs}) == len(pairs)
    assert all(p.premise.strip() and p.hypothesis.strip() for p in pairs)


_RAW_TO_LABEL = {
    "snli": {"contradiction": Label.CONTRADICTION, "entailment": Label.ENTAILMENT, "neutral": Label.NEUTRAL},
    "anli": {"c": Label.CONTRADICTION, "e": Label.ENTAILMENT, "n": Label.NEUTRAL},
    "control": {"c": Label.CONTRADICTION, "e": Label.ENTAILMENT, "n": Label.NEUTRAL},
    "sick": {"CONTRADICTION": Label.CONTRADICTION, "ENTAILMENT": Label.ENTAILMENT, "NEUTRAL": Label.NEUTRAL},
    "gu_dnli": {
        "Contradiction": Label.CONTRADICTION,
        "Entailment": Label.ENTAILMENT,
        "Neutral": Label.NEUTRAL,
    },
    "ocnli": {"contradiction": Label.CONTRADICTION, "entailment": Label.ENTAILMENT, "neutral": Label.NEUTRAL},
    "cdconv": {
        "0": Label.NOT_CONTRADICTION,
        "1": Label.CONTRADICTION,
        "2": Label.CONTRADICTION,
        "3": Label.CONTRADICTION,
    },
    "kvpi": {"0": Label.NEUTRAL, "1": Label.ENTAILMENT, "2": Label.CONTRADICTION},
    "rte3_ita": {"YES": Label.ENTAILMENT, "NO": Label.NEUTRAL},
    **{
        name: {label.value: label for label in Label}
        for name in (
            "decode_pairs", "lingnli", "taxinli", "cad_snli", "breaking_nli", "negation_nli",
            "cnli_zh", "cmnli_zh", "xnli", "cinlid", "tenp", "semi_auto_nli", "conjnli", "hard_negatives",
        )
    },
    "prosecco": {"contradiction": Label.CONTRADICTION, "non_contradiction": Label.NOT_CONTRADICTION},
}
LABEL_SPLITS = [(n, s) for n, s in PAIR_SPLITS if n in _RAW_TO_LABEL]


@pytest.mark.parametrize("loaded", LABEL_SPLITS, ids=[f"{n}-{s}" for n, s in LABEL_SPLITS], indirect=True)
def test_label_counts_match_card(loaded: tuple[str, str, list[Pair]]) -> None:
    name, split, pairs = loaded
    card = card_rows(name)
    expected: collections.Counter[Label] = collections.Counter()
    for f in DATASETS[name].splits[split]:
        for raw, n in card[f][1].items():
            if raw != "-":
                expected[_RAW_TO_LABEL[name][raw]] += n
    got = collections.Counter(p.label for p in pairs)
    assert got == expected


def test_ci_tod_rule_is_hi_or_kbi() -> None:
    for p in load_pairs("ci_tod", "test"):
        assert p.label.is_contradiction == bool(p.meta["hi"] or p.meta["kbi"])
        assert p.hypothesis == p.meta["dialogue"][-1]["utterance"].strip()


def test_kvpi_profile_and_rendering() -> None:
    pairs = load_pairs("kvpi")
    assert all(set(p.meta["profile"]) == {"constellation", "loc", "gender"} for p in pairs)
    first = pairs[0]
    assert first.meta["profile"]["loc"] in first.premise
    assert "性别：女" in first.premise  # gender female rendered in Chinese


def test_kvpi_labels_read_from_the_rows() -> None:
    # the origin repository's display names say 0/1/2 = entailed/contradicted/irrelevant; the rows say
    # 2 = contradicted: in the constellation domain, a contradicted reply names another sign than the profile's,
    # an entailed one names the profile's own sign (datasets/kvpi/SOURCE.md)
    signs = [s + "座" for s in "白羊 金牛 双子 巨蟹 狮子 处女 天秤 天蝎 射手 摩羯 水瓶 双鱼".split()]
    named: collections.Counter[tuple[Label, bool, bool]] = collections.Counter()
    for p in load_pairs("kvpi"):
        if p.meta["domain"] != "2":
            continue
        own = p.meta["profile"]["constellation"][:2]
        other = any(s[:2] in p.hypothesis for s in signs if s[:2] != own)
        named[(p.label, own in p.hypothesis, other)] += 1

    def share(label: Label, own: bool | None, other: bool | None) -> float:
        rows = {k: v for k, v in named.items() if k[0] is label}
        hit = sum(v for k, v in rows.items() if own in (None, k[1]) and other in (None, k[2]))
        return hit / sum(rows.values())

    assert share(Label.CONTRADICTION, False, True) > 0.8  # only another sign: 390 of 445
    assert share(Label.ENTAILMENT, True, None) > 0.95  # the profile's sign: 476 of 479
    assert share(Label.ENTAILMENT, False, True) == 0.0  # never only another sign


def test_cdconv_history_has_speaker_tags() -> None:
    p = load_pairs("cdconv", "test")[0]
    assert p.premise.startswith("用户：") and "\n机器人：" in p.premise
    assert p.meta["raw_label"] in {0, 1, 2, 3}


def test_anli_rounds_in_meta() -> None:
    rounds = collections.Counter(p.meta["round"] for p in load_pairs("anli", "dev"))
    card = card_rows("anli")
    assert rounds == {r: card[f"{r}/dev.jsonl"][0] for r in ("R1", "R2", "R3")}


@pytest.mark.parametrize("split", ["human-bot", "rct"])
def test_decode_dialogues_and_pairs(split: str) -> None:
    card = card_rows("decode")
    dialogues = load_dialogues("decode", split)
    assert len(dialogues) == card[f"{split}.jsonl"][0]
    pairs = load_pairs("decode", split)
    by_group: dict[str, list[Pair]] = collections.defaultdict(list)
    for p in pairs:
        by_group[p.meta["group"]].append(p)
    assert set(by_group) == {d.id for d in dialogues}  # every dialogue has at least one pair
    for d in dialogues:
        group = by_group[d.id]
        assert {p.label for p in group} == {d.label}
        assert {p.hypothesis for p in group} == {d.turns[-1].text}
        if not group[0].meta["fallback"]:
            speakers = {t.index: t.speaker for t in d.turns}
            assert {speakers[p.meta["turn"]] for p in group} == {d.turns[-1].speaker}


def test_decode_dev_dialogues_come_from_decode_pairs() -> None:
    card = card_rows("decode_pairs")
    dialogues = load_dialogues("decode", "dev")
    assert len(dialogues) == card["dev_dialogues.jsonl.gz"][0]
    labels = collections.Counter(d.label.value for d in dialogues)
    assert labels == card["dev_dialogues.jsonl.gz"][1]
    assert all(len(d.turns) >= 2 and d.turns[-1].text for d in dialogues)
    pairs = load_pairs("decode", "dev")
    assert {p.meta["group"] for p in pairs} == {d.id for d in dialogues}


def test_decode_dev_rct_is_rcts_construction_on_dev() -> None:
    dev = {d.id: d for d in load_dialogues("decode", "dev")}
    rct = load_dialogues("decode", "dev-rct")
    assert len(rct) == sum(d.label is Label.CONTRADICTION for d in dev.values())  # every dev contradiction
    for d in rct:
        src = dev[d.meta["rct_of"]]
        assert d.label is Label.NOT_CONTRADICTION and not d.evidence
        assert d.turns == src.turns[:-2]  # the contradicting turn and the turn before it removed
        assert d.turns[-1].speaker == src.turns[-1].speaker  # the same side speaks last
        assert any(t.speaker == d.turns[-1].speaker for t in d.turns[:-1])
    pairs = load_pairs("decode", "dev-rct")
    assert {p.meta["group"] for p in pairs} == {d.id for d in rct}
    assert {p.label for p in pairs} == {Label.NOT_CONTRADICTION}
    assert {p.hypothesis for p in pairs} == {d.turns[-1].text for d in rct}


def test_remove_contradicting_turn_keeps_only_what_it_can() -> None:
    from memlab.datasets import Dialogue, Turn, remove_contradicting_turn

    turns = tuple(Turn(i, str(i % 2), f"t{i}") for i in range(5))
    d = Dialogue("x", turns, Label.CONTRADICTION, evidence=(0,))
    r = remove_contradicting_turn(d)
    assert r is not None and r.turns == turns[:3] and r.label is Label.NOT_CONTRADICTION and r.evidence == ()
    assert r.id == "x#rct" and r.meta["rct_of"] == "x"
    assert remove_contradicting_turn(Dialogue("y", turns, Label.NOT_CONTRADICTION)) is None  # already consistent
    assert remove_contradicting_turn(Dialogue("z", turns[:3], Label.CONTRADICTION)) is None  # no earlier own turn
    same = tuple(Turn(i, "0", f"s{i}") for i in range(4))  # one speaker: the new last turn is still that speaker's
    assert remove_contradicting_turn(Dialogue("w", same, Label.CONTRADICTION)).turns == same[:2]


def test_research_and_non_commercial_classes_follow_the_training_rule() -> None:
    research = {n for n, d in DATASETS.items() if d.license_class == "research"}
    assert research == {"decode_pairs", "lingnli", "cnli_zh", "hard_negatives"}  # hard_negatives: from decode_pairs
    for name in ("cmnli_zh", "xnli", "cinlid", "decode", "locomo"):
        assert DATASETS[name].license_class == "non-commercial"
    for name in DATASETS:
        first = (default_data_dir(name) / "SOURCE.md").read_text(encoding="utf-8").splitlines()[0]
        want = {"permissive": "permissive", "research": "research", "non-commercial": "NON-COMMERCIAL"}
        assert want[DATASETS[name].license_class] in first, name


def test_new_permitted_sets_keep_their_evaluation_splits_out_of_training() -> None:
    """prosecco and semi_auto_nli have a fixed test split, tenp and conjnli only a dev split (their evaluation split):
    the judge trainer refuses the test splits; the dev-only sets are registered with dev as their default split."""
    from memlab.lab.judge_training import DataSource, _check_source

    for name in ("prosecco", "semi_auto_nli"):
        assert set(DATASETS[name].splits) == {"train", "test"} and DATASETS[name].default_split == "test"
        _check_source(DataSource(dataset=name, split="train"))
        with pytest.raises(InvalidInputError, match="test split"):
            _check_source(DataSource(dataset=name, split="test"))
    for name in ("tenp", "conjnli"):
        assert set(DATASETS[name].splits) == {"train", "dev"} and DATASETS[name].default_split == "dev"
    assert DATASETS["prosecco"].label_space == "binary"
    p = load_pairs("prosecco", "test")[0]
    assert p.meta["speaker_id"] and p.meta["source"] in {"QT30", "QT50", "US2016"}


def test_scenarios_dev_splits_by_batch_and_trains_only_on_the_first_two() -> None:
    """The scenario dev pairs: train = batches dev- and devb-, dev = devc- (never trained on), together the whole
    file as the scenario loader reads it; the -en splits are their English rows; the TEST suite is not a pair set."""
    from memlab.eval.scenarios import load_scenarios
    from memlab.lab.judge_training import DataSource, _check_source

    rows = {r.id: r for r in load_scenarios(default_data_dir("scenarios_dev"))}
    train, dev = load_pairs("scenarios_dev", "train"), load_pairs("scenarios_dev", "dev")
    assert {p.id for p in train} | {p.id for p in dev} == set(rows) and not {p.id for p in train} & {p.id for p in dev}
    assert {p.id.split("-")[0] for p in train} == {"dev", "devb"} and {p.id.split("-")[0] for p in dev} == {"devc"}
    for p in train + dev:
        r = rows[p.id]
        assert (p.premise, p.hypothesis, p.meta["lang"], p.meta["kind"]) == (r.a, r.b, r.lang, r.kind)
        assert p.label == (Label.CONTRADICTION if r.label == "contradiction" else Label.NOT_CONTRADICTION)
    for split, whole in (("train-en", train), ("dev-en", dev)):
        assert [p.id for p in load_pairs("scenarios_dev", split)] == [p.id for p in whole if p.meta["lang"] == "en"]
    _check_source(DataSource(dataset="scenarios_dev", split="train"))
    assert DATASETS["scenarios_dev"].license_class == "permissive" and DATASETS["scenarios"].kind == "scenarios"


def test_corrupt_gzip_is_a_format_error(tmp_path: Path) -> None:
    good = (default_data_dir("negation_nli") / "train.jsonl.gz").read_bytes()
    _write(tmp_path / "negation_nli", "train.jsonl.gz", good[: len(good) // 2])
    with pytest.raises(DatasetFormatError, match="cannot be read"):
        load_pairs("negation_nli", "train", data_dir=tmp_path / "negation_nli")


def test_decode_fallback_for_two_turn_dialogue() -> None:
    from memlab.datasets import Dialogue, Turn

    d = Dialogue(
        "x", (Turn(0, "0", "Hi!"), Turn(1, "1", "I live alone with my husband.")), Label.CONTRADICTION
    )
    (p,) = dialogue_pairs(d)
    assert p.meta["fallback"] and p.premise == "Hi!"


def test_locomo_structure() -> None:
    convs = load_locomo()
    assert len(convs) == card_rows("locomo")["locomo10.json"][0]
    for c in convs:
        dia_ids = {t.dia_id for s in c.sessions for t in s.turns}
        assert [s.index for s in c.sessions] == sorted(s.index for s in c.sessions)
        assert all(s.date_time for s in c.sessions)
        answerable = [q for q in c.qa if q.category != 5]
        assert answerable and all(q.answer is not None for q in answerable)
        # most evidence ids point at real turns (a few upstream ids are malformed)
        ev = [e for q in c.qa for e in q.evidence]
        assert sum(e in dia_ids for e in ev) / len(ev) > 0.95
    assert any(s.observations for c in convs for s in c.sessions)


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_situatedqa_counts(split: str) -> None:
    card = card_rows("situatedqa_temp")[f"temp.{split}.jsonl"]
    qs = load_situatedqa(split)
    assert len(qs) == card[0]
    assert collections.Counter(f"is_dependent={q.is_dependent}" for q in qs) == card[1]
    timelines = [t for q in qs for t in q.timelines]
    changes = [t for t in timelines if t.is_change]
    assert changes
    assert all(not q.timelines for q in qs if not q.is_dependent)


# --- data_dir copies and digests ----------------------------------------------------------------


def test_data_dir_copy_loads_the_same(tmp_path: Path) -> None:
    copy = tmp_path / "snli_copy"
    shutil.copytree(default_data_dir("snli"), copy)
    assert load_pairs("snli", "test", data_dir=copy) == load_pairs("snli", "test")
    assert dataset_sha256("snli", "test", copy) == dataset_sha256("snli", "test")
    assert dataset_sha256("snli", "dev") != dataset_sha256("snli", "test")


def test_sha_changes_with_content(tmp_path: Path) -> None:
    copy = tmp_path / "ci"
    shutil.copytree(default_data_dir("ci_tod"), copy)
    before = dataset_sha256("ci_tod", "test", copy)
    with (copy / "calendar_test.jsonl").open("ab") as fh:
        fh.write(b"\n")
    assert dataset_sha256("ci_tod", "test", copy) != before


def test_unknown_names() -> None:
    with pytest.raises(UnknownComponentError, match="Valid names"):
        load_pairs("nope")
    with pytest.raises(InvalidInputError, match="'split'"):
        load_pairs("snli", "train")
    with pytest.raises(UnknownComponentError):
        load_pairs("locomo")


# --- malformed files ---------------------------------------------------------------------------


def _write(dir_: Path, name: str, data: bytes) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    p = dir_ / name
    p.write_bytes(data)
    return p


GOOD_SNLI = b"premise\thypothesis\tlabel\nA man sleeps .\tA man is awake .\tcontradiction\n"


@pytest.mark.parametrize(
    ("name", "file", "data", "match", "line"),
    [
        ("snli", "test.tsv", b"", "empty", None),
        ("snli", "test.tsv", b"\n\n", "no data rows", None),
        ("snli", "test.tsv", b"premise\thypothesis\tgold\nA\tB\tcontradiction\n", "Missing \\['label'\\]", 1),
        (
            "snli",
            "test.tsv",
            GOOD_SNLI + b"A dog .\tA cat .\tcontradicts\n",
            "unknown label 'contradicts'",
            3,
        ),
        ("snli", "test.tsv", GOOD_SNLI + b"A dog .\tA cat .\n", "at least 3", 3),
        ("snli", "test.tsv", GOOD_SNLI + b"Caf\xe9 .\tA cat .\tneutral\n", "not valid UTF-8", 3),
        ("snli", "test.tsv", GOOD_SNLI + b"   \tA cat .\tneutral\n", "'premise' is empty", 3),
        (
            "control",
            "test.jsonl",
            b'{"uid": "1", "premise": "a", "hypothesis": "b"}\n',
            "missing column 'label'",
            1,
        ),
        (
            "control",
            "test.jsonl",
            b'{"uid": "1", "premise": "a", "hypothesis": "b", "label": "c"}\n{bad\n',
            "not valid JSON",
            2,
        ),
        ("control", "test.jsonl", b"[1, 2]\n", "JSON object", 1),
        (
            "ocnli",
            "dev.jsonl",
            b'{"sentence1": "a", "sentence2": "b", "label": "maybe"}\n',
            "unknown label 'maybe'",
            1,
        ),
        (
            "cdconv",
            "test.jsonl",
            b'{"u1": "a", "b1": "b", "u2": "c", "b2": "d", "label": 7}\n',
            "unknown label 7",
            1,
        ),
        ("kvpi", "KvPI_test.txt", "{'gender': 'female'} 你好\t0\t1\n".encode(), "<SEP>", 1),
        ("gu_dnli", "test_5_data.tsv", b"<A> hi\tPerson A said hi\tMaybe\n", "unknown label 'Maybe'", 1),
        (
            "decode",
            "human-bot.jsonl",
            b'{"record_id": "r", "is_contradiction": "yes", "turns": []}\n',
            "unknown label 'yes'",
            1,
        ),
        (
            "rte3_ita",
            "test.jsonl",
            b'{"id": "1", "t": "Abito a Roma.", "h": "Vivo a Milano.", "entailment": "FORSE"}\n',
            "FORSE",
            1,
        ),
    ],
)
def test_malformed_file_names_file_and_line(
    tmp_path: Path, name: str, file: str, data: bytes, match: str, line: int | None
) -> None:
    split = DATASETS[name].default_split
    path = _write(tmp_path / name, file, data)
    with pytest.raises(DatasetFormatError, match=match) as info:
        load_pairs(name, split, data_dir=tmp_path / name)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert file in str(info.value) and (line is None or f"line {line}" in str(info.value))


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetFormatError, match="not found"):
        load_pairs("snli", "test", data_dir=tmp_path)
    with pytest.raises(DatasetFormatError, match="not found"):
        load_locomo(tmp_path)


def test_locomo_malformed(tmp_path: Path) -> None:
    _write(tmp_path, "locomo10.json", b'[{"qa": [], "conversation": ')
    with pytest.raises(DatasetFormatError, match="not valid JSON"):
        load_locomo(tmp_path)
    _write(tmp_path, "locomo10.json", b"\xff\xfe[]")
    with pytest.raises(DatasetFormatError, match="UTF-8"):
        load_locomo(tmp_path)


def test_italian_and_chinese_text_survive(tmp_path: Path) -> None:
    data = '{"id": "1", "t": "L\'utente è nato il 12 luglio 1990.", "h": "Il compleanno è il 15 agosto.", "entailment": "NO"}\n'
    _write(tmp_path / "it", "test.jsonl", data.encode())
    (p,) = load_pairs("rte3_ita", "test", data_dir=tmp_path / "it")
    assert p.premise == "L'utente è nato il 12 luglio 1990." and p.label is Label.NEUTRAL


# --- sampling ----------------------------------------------------------------------------------


def test_sample_pairs_seeded_and_group_aware(seed: int) -> None:
    pairs = load_pairs("decode", "human-bot")
    a = sample_pairs(pairs, 50, seed=seed)
    assert a == sample_pairs(pairs, 50, seed=seed)
    groups = {p.meta["group"] for p in a}
    assert len(groups) == 50
    full = collections.Counter(p.meta["group"] for p in pairs)
    assert collections.Counter(p.meta["group"] for p in a) == {g: full[g] for g in groups}
    assert sample_pairs(pairs, None) == pairs
    assert len(sample_pairs(load_pairs("snli", "test"), 10, seed=seed)) == 10
    with pytest.raises(InvalidInputError, match="'limit'"):
        sample_pairs(pairs, 0)
