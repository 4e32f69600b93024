"""Loaders for the labelled datasets under ``datasets/`` (each folder has its SOURCE.md card).

Every loader reads the original file names and formats, takes ``data_dir`` (default: the repository's
``datasets/<name>``) so the same code scores another copy of the files, and raises
:class:`~memlab.errors.DatasetFormatError` naming file and line on malformed input.

Example:
    >>> from memlab.datasets import DATASETS, load_pairs
    >>> DATASETS["cdconv"].label_space
    'binary'
    >>> len(load_pairs("ci_tod", "test"))
    168
"""

from __future__ import annotations

from memlab.datasets.dialogues import (
    Dialogue,
    Turn,
    dialogue_pairs,
    load_dialogues,
    remove_contradicting_turn,
)
from memlab.datasets.locomo import (
    LOCOMO_CATEGORIES,
    LocomoConversation,
    LocomoObservation,
    LocomoQA,
    LocomoSession,
    LocomoTurn,
    load_locomo,
)
from memlab.datasets.pairs import (
    KVPI_LABELS,
    Pair,
    load_pairs,
    parse_kvpi_profile,
    render_kvpi_profile,
    sample_pairs,
)
from memlab.datasets.registry import (
    DATASETS,
    DatasetInfo,
    dataset_files,
    dataset_sha256,
    default_data_dir,
    get_dataset,
)
from memlab.datasets.situatedqa import AnswerAsOf, TemporalQuestion, Timeline, load_situatedqa

__all__ = [
    "AnswerAsOf",
    "DATASETS",
    "DatasetInfo",
    "Dialogue",
    "KVPI_LABELS",
    "LOCOMO_CATEGORIES",
    "LocomoConversation",
    "LocomoObservation",
    "LocomoQA",
    "LocomoSession",
    "LocomoTurn",
    "Pair",
    "TemporalQuestion",
    "Timeline",
    "Turn",
    "dataset_files",
    "dataset_sha256",
    "default_data_dir",
    "dialogue_pairs",
    "get_dataset",
    "load_dialogues",
    "load_locomo",
    "load_pairs",
    "load_situatedqa",
    "parse_kvpi_profile",
    "remove_contradicting_turn",
    "render_kvpi_profile",
    "sample_pairs",
]
