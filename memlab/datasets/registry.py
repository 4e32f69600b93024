"""The dataset registry: which files make each split, language, license class and label space."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memlab.errors import InvalidInputError, UnknownComponentError

__all__ = [
    "DATASETS",
    "DatasetInfo",
    "dataset_files",
    "dataset_sha256",
    "default_data_dir",
    "get_dataset",
]

Kind = Literal["pairs", "dialogues", "conversations", "temporal_qa", "scenarios"]
LabelSpace = Literal["3-way", "binary", "entailment", "none"]
LicenseClass = Literal["permissive", "research", "non-commercial"]


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """What memlab knows about one dataset folder under ``datasets/``.

    Attributes:
        name: registry name, also the folder name.
        kind: ``pairs`` (premise/hypothesis, scored by ``memlab eval contradiction``), ``dialogues``
            (DECODE: whole dialogues, also exposed as pairs), ``conversations`` (LoCoMo) or
            ``temporal_qa`` (SituatedQA).
        language: ISO code of the text (``en``, ``zh``, ``it``).
        license: the license as stated by the source (see the folder's SOURCE.md).
        license_class: ``permissive`` (may ship weights trained on it), ``research`` (the authors state no
            license and the set is published for research training: weights may be trained on its non-test
            splits, and every judge card lists it) or ``non-commercial`` (evaluation only; also used for
            unlicensed sets that are test sets or that memlab only evaluates on).
        label_space: ``3-way`` (contradiction/entailment/neutral), ``binary`` (contradiction /
            not_contradiction), ``entailment`` (entailment / neutral = "not entailed"; no contradiction
            label), ``none`` (not a labelled pair set).
        splits: split name -> files (relative to the dataset folder), in load order.
        group_aggregation: ``"max"`` when several pairs share one gold label (``meta["group"]``) and a
            prediction is the max contradiction probability over the group; ``None`` otherwise.
        default_split: the split scored when none is given.
        notes: how the set is mapped (free text).
        category_key: ``Pair.meta`` key used to break results down (``raw_label`` for CDConv, ``round`` for
            ANLI ...), or ``None``.
    """

    name: str
    kind: Kind
    language: str
    license: str
    license_class: LicenseClass
    label_space: LabelSpace
    splits: Mapping[str, tuple[str, ...]]
    group_aggregation: Literal["max"] | None = None
    default_split: str = "test"
    notes: str = field(default="")
    category_key: str | None = None
    """``Pair.meta`` key whose values break results down by category (e.g. CDConv's contradiction type)."""

    @property
    def is_pairwise(self) -> bool:
        """Whether :func:`memlab.datasets.load_pairs` can load it."""
        return self.kind in ("pairs", "dialogues")


def _info(**kw: object) -> DatasetInfo:
    return DatasetInfo(**kw)  # type: ignore[arg-type]


DATASETS: Mapping[str, DatasetInfo] = {
    d.name: d
    for d in [
        _info(
            name="snli",
            kind="pairs",
            language="en",
            license="MIT (e-SNLI repo); SNLI CC BY-SA 4.0",
            license_class="permissive",
            label_space="3-way",
            splits={"dev": ("dev.tsv",), "test": ("test.tsv",)},
        ),
        _info(
            name="anli",
            kind="pairs",
            language="en",
            license="CC BY-NC 4.0",
            license_class="non-commercial",
            label_space="3-way",
            splits={
                "dev": ("R1/dev.jsonl", "R2/dev.jsonl", "R3/dev.jsonl"),
                "test": ("R1/test.jsonl", "R2/test.jsonl", "R3/test.jsonl"),
            },
            notes="dev/test concatenate rounds R1-R3; meta['round'] tells them apart.",
            category_key="round",
        ),
        _info(
            name="sick",
            kind="pairs",
            language="en",
            license="CC BY-NC-SA 3.0",
            license_class="non-commercial",
            label_space="3-way",
            splits={
                "train": ("SICK_train.txt",),
                "trial": ("SICK_trial.txt",),
                "test": ("SICK_test_annotated.txt",),
            },
        ),
        _info(
            name="control",
            kind="pairs",
            language="en",
            license="CC BY-NC-SA 4.0",
            license_class="non-commercial",
            label_space="3-way",
            splits={"dev": ("dev.jsonl",), "test": ("test.jsonl",)},
        ),
        _info(
            name="gu_dnli",
            kind="pairs",
            language="en",
            license="MIT",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train_5_data.tsv",), "dev": ("dev_5_data.tsv",), "test": ("test_5_data.tsv",)},
        ),
        _info(
            name="ci_tod",
            kind="pairs",
            language="en",
            license="MIT (README badge)",
            license_class="permissive",
            label_space="binary",
            splits={
                "train": ("calendar_train.jsonl", "navigate_train.jsonl"),
                "dev": ("calendar_dev.jsonl", "navigate_dev.jsonl", "weather_new_dev.jsonl"),
                "test": ("calendar_test.jsonl", "navigate_test.jsonl", "weather_new_test.jsonl"),
            },
            notes="contradiction iff hi == 1 or kbi == 1 (qi, inconsistency with the query, is not a contradiction "
            "of memory). weather_new_train is absent upstream.",
            category_key="domain",
        ),
        _info(
            name="kvpi",
            kind="pairs",
            language="zh",
            license="Apache-2.0",
            license_class="permissive",
            label_space="3-way",
            splits={"test": ("KvPI_test.txt",)},
            notes="test only: evaluation-only set.",
            category_key="domain",
        ),
        _info(
            name="cdconv",
            kind="pairs",
            language="zh",
            license="CC BY-NC 4.0",
            license_class="non-commercial",
            label_space="binary",
            splits={"train": ("train.jsonl",), "dev": ("dev.jsonl",), "test": ("test.jsonl",)},
            category_key="raw_label",
        ),
        _info(
            name="ocnli",
            kind="pairs",
            language="zh",
            license="CC BY-NC 2.0",
            license_class="non-commercial",
            label_space="3-way",
            splits={"train": ("train.10k.jsonl",), "dev": ("dev.jsonl",)},
            default_split="dev",
            notes="no labelled test split: dev is the evaluation split; '-' rows skipped.",
            category_key="genre",
        ),
        _info(
            name="rte3_ita",
            kind="pairs",
            language="it",
            license="CC BY 3.0",
            license_class="permissive",
            label_space="entailment",
            splits={"dev": ("dev.jsonl",), "test": ("test.jsonl",)},
            notes="YES -> entailment, NO -> neutral (meaning 'not entailed': contradiction or unknown).",
            category_key="task",
        ),
        _info(
            name="decode",
            kind="dialogues",
            language="en",
            license="none stated (ParlAI MIT); research use",
            license_class="non-commercial",
            label_space="binary",
            splits={
                "human-bot": ("human-bot.jsonl",),
                "rct": ("rct.jsonl",),
                "dev": ("../decode_pairs/dev_dialogues.jsonl.gz",),
                "dev-rct": ("../decode_pairs/dev_dialogues.jsonl.gz",),
            },
            group_aggregation="max",
            default_split="human-bot",
            notes="pairs = (earlier turn of the last speaker, last turn), grouped by dialogue; score = max. "
            "'dev' = DECODE's dev dialogues (from decode_pairs): the only split the detector may be tuned on. "
            "'dev-rct' = RCT's construction applied to dev: each dev contradiction dialogue with its contradicting "
            "turn and the turn before it removed (all non-contradictions).",
        ),
        _info(
            name="decode_pairs",
            kind="pairs",
            language="en",
            license="none stated (ParlAI is MIT); research use",
            license_class="research",
            label_space="binary",
            splits={"train": ("train.jsonl.gz",), "dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="DECODE train/dev as (earlier utterance of the last speaker, last utterance) pairs. The dev "
            "dialogues with their turns are the 'dev' split of 'decode' (load_dialogues).",
        ),
        _info(
            name="lingnli",
            kind="pairs",
            language="en",
            license="none stated; research use",
            license_class="research",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",), "dev": ("dev.jsonl.gz",)},
            default_split="dev",
            category_key="protocol",
        ),
        _info(
            name="taxinli",
            kind="pairs",
            language="en",
            license="C-UDA v1.0 (trained models unrestricted)",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",)},
            default_split="train",
            notes="MultiNLI pairs (train + dev) with reasoning categories; one split. Shares MultiNLI material "
            "with xnli and cmnli_zh: never evaluate on those after training on it.",
            category_key="genre",
        ),
        _info(
            name="cad_snli",
            kind="pairs",
            language="en",
            license="Apache-2.0 (SNLI CC BY-SA 4.0)",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",)},
            default_split="train",
            category_key="variant",
        ),
        _info(
            name="breaking_nli",
            kind="pairs",
            language="en",
            license="CC BY-SA 4.0",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",)},
            default_split="train",
            notes="published as a test set; 87% contradictions (lexical substitutions). One split.",
            category_key="category",
        ),
        _info(
            name="negation_nli",
            kind="pairs",
            language="en",
            license="MIT",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",)},
            default_split="train",
            category_key="source",
        ),
        _info(
            name="cnli_zh",
            kind="pairs",
            language="zh",
            license="none stated; research use",
            license_class="research",
            label_space="3-way",
            splits={"dev": ("dev.jsonl.gz",), "test": ("test.jsonl.gz",)},
        ),
        _info(
            name="cmnli_zh",
            kind="pairs",
            language="zh",
            license="academic research only",
            license_class="non-commercial",
            label_space="3-way",
            splits={"dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="CLUE CMNLI dev (MultiNLI translated): overlaps taxinli's MultiNLI pairs.",
        ),
        _info(
            name="xnli",
            kind="pairs",
            language="en+zh",
            license="CC BY-NC 4.0 (upstream)",
            license_class="non-commercial",
            label_space="3-way",
            splits={"dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="XNLI dev, English then Chinese (same pairs, meta['lang'] tells them apart); MultiNLI-derived.",
            category_key="lang",
        ),
        _info(
            name="cinlid",
            kind="pairs",
            language="zh",
            license="academic research only",
            license_class="non-commercial",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",)},
            default_split="train",
            notes="Chinese idiom NLI, one split (off-domain).",
        ),
        _info(
            name="tenp",
            kind="pairs",
            language="en",
            license="CC BY-SA 3.0 / GFDL (Wikipedia; README)",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",), "dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="Textual Entailment: New Protocols (Bowman et al. 2020). No test split: 'dev' is the evaluation "
            "split (choose settings and report figures on it; never train on it then).",
            category_key="protocol",
        ),
        _info(
            name="semi_auto_nli",
            kind="pairs",
            language="en",
            license="CC BY-SA 3.0 / GFDL (Wikipedia; README)",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",), "test": ("test.jsonl.gz",)},
            notes="Vania et al. 2020, Wikipedia protocols only (base_wiki, sim_wiki, translate_wiki). No dev split.",
            category_key="protocol",
        ),
        _info(
            name="conjnli",
            kind="pairs",
            language="en",
            license="MIT",
            license_class="permissive",
            label_space="3-way",
            splits={"train": ("train.jsonl.gz",), "dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="ConjNLI: synthetic adversarial train, human-labelled dev. No labelled test split: 'dev' is the "
            "evaluation split (never train on it then).",
        ),
        _info(
            name="prosecco",
            kind="pairs",
            language="en",
            license="CC BY-SA 4.0",
            license_class="permissive",
            label_space="binary",
            splits={"train": ("train.jsonl.gz",), "test": ("test.jsonl.gz",)},
            notes="same-speaker self-contradiction in debates (propositions; the utterances are in the rows too). "
            "non_contradiction -> not_contradiction. Fixed 80/20 split: 'test' is evaluation only.",
            category_key="source",
        ),
        _info(
            name="hard_negatives",
            kind="pairs",
            language="en",
            license="derived: decode_pairs (none stated, research), gu_dnli (MIT), ci_tod (MIT), prosecco (CC BY-SA 4.0)",
            license_class="research",
            label_space="binary",
            splits={"train": ("train.jsonl.gz",), "dev": ("dev.jsonl.gz",)},
            default_split="dev",
            notes="mined by memlab.lab.hard_negatives: two similar statements of one speaker from dialogues "
            "labelled consistent (all not_contradiction). 'dev' is a seeded 10% by dialogue.",
            category_key="source",
        ),
        _info(
            name="locomo",
            kind="conversations",
            language="en",
            license="CC BY-NC 4.0",
            license_class="non-commercial",
            label_space="none",
            splits={"test": ("locomo10.json",), "personas": ("msc_personas_all.json",)},
        ),
        _info(
            name="situatedqa_temp",
            kind="temporal_qa",
            language="en",
            license="none stated; research use",
            license_class="non-commercial",
            label_space="none",
            splits={"train": ("temp.train.jsonl",), "dev": ("temp.dev.jsonl",), "test": ("temp.test.jsonl",)},
        ),
        _info(
            name="scenarios_dev",
            kind="pairs",
            language="it+en+zh",
            license="CC BY 4.0 (written for memlab)",
            license_class="permissive",
            label_space="binary",
            splits={"train": ("pairs.jsonl",), "dev": ("pairs.jsonl",), "train-en": ("pairs.jsonl",),
                    "dev-en": ("pairs.jsonl",)},
            default_split="dev",
            notes="the scenario suite's DEVELOPMENT pairs (datasets/scenarios_dev/README.md) as premise = earlier "
            "memory a, hypothesis = new memory b; compatible -> not_contradiction. One file, split by batch "
            "(memlab.datasets.pairs.SCENARIOS_DEV_SPLITS): 'train' = the first two batches (dev-, devb-), "
            "'dev' = the third (devc-), kept out of training to choose and measure; 'train-en' / 'dev-en' their English "
            "pairs.",
            category_key="kind",
        ),
        _info(
            name="scenarios",
            kind="scenarios",
            language="it+en+zh",
            license="CC BY 4.0 (written for memlab)",
            license_class="permissive",
            label_space="binary",
            splits={"test": ("pairs.jsonl",)},
            notes="hand-written seed-style memory pairs (earlier memory a, new memory b) in it/en/zh, 12 kinds; "
            "loaded by memlab.eval.scenarios.load_scenarios, scored by `memlab eval scenarios`. A TEST set: "
            "never train or tune on it.",
            category_key="kind",
        ),
    ]
}


def get_dataset(name: str) -> DatasetInfo:
    """The registry entry of ``name``.

    Raises:
        UnknownComponentError: ``name`` is not registered (the message lists valid names).
    """
    try:
        return DATASETS[name]
    except (KeyError, TypeError):
        raise UnknownComponentError("dataset", str(name), list(DATASETS)) from None


def default_data_dir(name: str) -> Path:
    """The repository copy of a dataset: ``<repo>/datasets/<name>`` (next to the ``memlab`` package)."""
    get_dataset(name)
    return Path(__file__).resolve().parents[2] / "datasets" / name


def _resolve(name: str, split: str, data_dir: str | Path | None) -> tuple[DatasetInfo, Path]:
    info = get_dataset(name)
    if split not in info.splits:
        raise InvalidInputError(
            f"The 'split' parameter of {name} must be one of {sorted(info.splits)}. Got {split!r} instead."
        )
    root = Path(data_dir) if data_dir is not None else default_data_dir(name)
    return info, root


def dataset_files(name: str, split: str, data_dir: str | Path | None = None) -> list[Path]:
    """Absolute paths of the files making ``split`` of ``name`` (they may not exist).

    Raises:
        UnknownComponentError: unknown dataset.
        InvalidInputError: unknown split.
    """
    info, root = _resolve(name, split, data_dir)
    return [root / rel for rel in info.splits[split]]


def dataset_sha256(name: str, split: str, data_dir: str | Path | None = None) -> str:
    """SHA-256 over the split's files (relative name + bytes, in registry order).

    Two copies of the same files give the same digest wherever they live, so a run records exactly
    which data it scored.

    Raises:
        DatasetFormatError: a file is missing.
    """
    from memlab.datasets._io import check_file

    info, root = _resolve(name, split, data_dir)
    h = hashlib.sha256()
    for rel in info.splits[split]:
        path = root / rel
        check_file(path)
        h.update(rel.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()
