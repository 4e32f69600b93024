"""Hard negatives for the judge: two similar statements of ONE speaker that a dataset labels consistent.

NLI teaches "contradiction" as "these two captions cannot describe the same scene", so "My mom loved flowers" /
"My mom had a passion for cooking" looks like one. A memory store needs "these two cannot both be true of one
person", and it compares every new memory with its most similar older ones. This module mines exactly those
comparisons from dialogues whose labels say they hold no contradiction, so the judge sees them as
``not_contradiction``:

* ``decode/dev``: DECODE dev dialogues labelled ``not_contradiction`` (from ``decode_pairs``; research, no license
  stated). Every statement of a speaker is paired with that speaker's statements in EARLIER turns.
* ``ci_tod/train``: CI-ToD train dialogues with ``hi == 0`` and ``kbi == 0`` (MIT); same rule per speaker.
* ``gu_dnli/train``: rows labelled entailment or neutral whose hypothesis names exactly one speaker ("Person B
  ..."); the hypothesis holds (or may hold) given the whole context, so it contradicts none of that speaker's
  utterances in it: the pair is (that speaker's utterance, hypothesis) (MIT).
* ``prosecco/train``: the pairs labelled ``non_contradiction`` (one speaker by construction; CC BY-SA 4.0).

The rule (:func:`mine`): statements are sentences of a turn, without questions and with at least
``min_words`` words; a candidate pair is kept when its e5 cosine is at least the embedder's calibrated candidate
threshold for English (``thresholds.candidate_for("en")``: the pairs the integrity check would compare), and only
the ``top_k`` most similar earlier statements of each statement are kept (the check looks at its top-k
neighbours). Pairs that occur in an evaluation split (DECODE dev pairs and dev-rct, decode_pairs dev, gu_dnli
dev/test, prosecco test; lower-cased, non-word characters deleted, either order) are dropped, and so are repeats.
Then a seeded 10% of the dialogues (groups) form ``dev`` and ``train`` is capped by water-filling over sources.
No test split and no LoCoMo text is read.

``python -m memlab.lab.hard_negatives --out datasets/hard_negatives`` writes ``train.jsonl.gz``,
``dev.jsonl.gz`` and ``SOURCE.md``; the result is the registered dataset ``hard_negatives``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.errors import InvalidInputError
from memlab.protocols import Embedder

__all__ = [
    "SOURCES",
    "HardNegative",
    "MiningUnit",
    "build_hard_negatives",
    "cap_by_source",
    "ci_tod_units",
    "decode_units",
    "dialogue_unit",
    "gu_dnli_units",
    "main",
    "mine",
    "normalise",
    "prosecco_units",
    "sample_units",
    "split_dev",
    "split_statements",
]

SOURCES: Mapping[str, str] = {
    "decode/dev": "DECODE dev dialogues (decode_pairs): none stated (ParlAI MIT); research",
    "ci_tod/train": "CI-ToD train: MIT",
    "gu_dnli/train": "GU-CLASP DNLI train: MIT",
    "prosecco/train": "ProSeCCo train: CC BY-SA 4.0",
}
"""Origin split -> its stated license (the only splits this module reads for training rows)."""

EVAL_SPLITS: tuple[tuple[str, str], ...] = (
    ("decode", "dev"),
    ("decode", "dev-rct"),
    ("decode_pairs", "dev"),
    ("gu_dnli", "dev"),
    ("gu_dnli", "test"),
    ("prosecco", "test"),
)
"""Evaluation pairs no mined pair may repeat (read only to exclude them)."""

_QUESTION_START = re.compile(
    r"^(what|when|where|who|whom|whose|which|why|how|do|does|did|is|are|was|were|can|could|would|will|should|"
    r"shall|have|has|may|might)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_NON_WORD = re.compile(r"\W+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower-case and delete every non-word character (the shared sets' overlap rule).

    Example:
        >>> normalise("I live in Rome!  ")
        'iliveinrome'
    """
    return _NON_WORD.sub("", text.lower())


def _is_question(sentence: str) -> bool:
    s = sentence.rstrip()
    if s.endswith("?"):
        return True
    return not s.endswith((".", "!")) and bool(_QUESTION_START.match(s))


def split_statements(text: str, *, min_words: int = 4) -> list[str]:
    """The statements of one turn: its sentences, without questions and without ones under ``min_words`` words.

    Example:
        >>> split_statements("That sucks! What were they upset about? I have two dogs at home.")
        ['I have two dogs at home.']
        >>> split_statements("what date is that on")
        []
    """
    out = []
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = " ".join(sentence.split())
        if sentence and not _is_question(sentence) and len(_WORD.findall(sentence)) >= min_words:
            out.append(sentence)
    return out


@dataclass(frozen=True, slots=True)
class MiningUnit:
    """One group of statements and the pairs among them that may be compared.

    Attributes:
        source: origin split (a key of :data:`SOURCES`).
        group: dialogue (or row) id: the unit of the dev split.
        texts: the statements.
        speakers: speaker of each statement.
        candidates: ``(earlier, later)`` index pairs into ``texts`` (same speaker, labelled consistent).
        origin: the origin row or dialogue id.
    """

    source: str
    group: str
    texts: tuple[str, ...]
    speakers: tuple[str, ...]
    candidates: tuple[tuple[int, int], ...]
    origin: str = ""


@dataclass(frozen=True, slots=True)
class HardNegative:
    """One mined pair (always ``not_contradiction``)."""

    premise: str
    hypothesis: str
    source: str
    group: str
    speaker_id: str
    cosine: float
    origin: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self, split: str, index: int) -> dict[str, Any]:
        """The JSON-lines row (``memlab.datasets`` shared form)."""
        return {
            "id": f"hard-negatives-{split}-{index:05d}",
            "premise": self.premise,
            "hypothesis": self.hypothesis,
            "label": "not_contradiction",
            "source": self.source,
            "speaker_id": self.speaker_id,
            "cosine": round(self.cosine, 4),
            "group": self.group,
            "origin": self.origin,
        }


def dialogue_unit(
    source: str, group: str, turns: Iterable[tuple[str, str]], *, min_words: int = 4, origin: str = ""
) -> MiningUnit | None:
    """A consistent dialogue as a unit: every statement paired with the same speaker's statements in earlier turns.

    Args:
        turns: ``(speaker, text)`` in order.

    Example:
        >>> u = dialogue_unit("x", "d1", [("a", "I have two dogs."), ("b", "Nice, I have cats."),
        ...                                ("a", "My dogs are both old.")], min_words=3)
        >>> [(u.texts[i], u.texts[j]) for i, j in u.candidates]
        [('I have two dogs.', 'My dogs are both old.')]
    """
    texts: list[str] = []
    speakers: list[str] = []
    turn_of: list[int] = []
    for t, (speaker, text) in enumerate(turns):
        for s in split_statements(text, min_words=min_words):
            texts.append(s)
            speakers.append(str(speaker))
            turn_of.append(t)
    cands = tuple(
        (i, j)
        for j in range(len(texts))
        for i in range(j)
        if speakers[i] == speakers[j] and turn_of[i] < turn_of[j]
    )
    if not cands:
        return None
    return MiningUnit(source, group, tuple(texts), tuple(speakers), cands, origin or group)


def decode_units(dialogues: Iterable[Any], *, min_words: int = 4) -> list[MiningUnit]:
    """Units of the DECODE dialogues labelled ``not_contradiction`` (others are skipped)."""
    from memlab.records import Label

    out = []
    for d in dialogues:
        if d.label is not Label.NOT_CONTRADICTION:
            continue
        u = dialogue_unit(
            "decode/dev",
            f"decode:{d.id}",
            ((t.speaker, t.text) for t in d.turns),
            min_words=min_words,
            origin=d.id,
        )
        if u is not None:
            out.append(u)
    return out


def ci_tod_units(pairs: Iterable[Any], *, min_words: int = 4) -> list[MiningUnit]:
    """Units of the CI-ToD dialogues consistent with their history and KB (``hi == 0 and kbi == 0``)."""
    out = []
    for p in pairs:
        if p.meta["hi"] or p.meta["kbi"]:
            continue
        turns = [(str(t["turn"]), str(t["utterance"])) for t in p.meta["dialogue"]]
        u = dialogue_unit("ci_tod/train", f"ci_tod:{p.id}", turns, min_words=min_words, origin=str(p.id))
        if u is not None:
            out.append(u)
    return out


_SPEAKER_TAG = re.compile(r"<([A-Z])>\s*([^<]*)")
_NAMED = re.compile(r"\b(?:person|speaker)(?:'s)?\s+([A-Za-z])\b|^([A-E])(?:'s)?\s", re.IGNORECASE)


def _named_speakers(hypothesis: str) -> set[str]:
    return {(a or b).upper() for a, b in _NAMED.findall(hypothesis.strip())}


def gu_dnli_units(pairs: Iterable[Any], *, min_words: int = 4) -> list[MiningUnit]:
    """Units of gu_dnli rows labelled entailment/neutral whose hypothesis names exactly one speaker.

    The candidates pair each utterance of that speaker in the context with the hypothesis.

    Example:
        >>> from memlab.datasets import Pair
        >>> from memlab.records import Label
        >>> p = Pair("f:1", "<A> we moved to leeds last year <B> oh right", "Person A lives in Leeds", Label.ENTAILMENT)
        >>> u = gu_dnli_units([p])[0]
        >>> [(u.texts[i], u.texts[j]) for i, j in u.candidates]
        [('we moved to leeds last year', 'Person A lives in Leeds')]
    """
    from memlab.records import Label

    out = []
    for p in pairs:
        if p.label not in (Label.ENTAILMENT, Label.NEUTRAL):
            continue
        named = _named_speakers(p.hypothesis)
        if len(named) != 1 or len(_WORD.findall(p.hypothesis)) < min_words:
            continue
        (who,) = named
        utterances = []
        for speaker, text in _SPEAKER_TAG.findall(p.premise):
            if speaker == who:
                utterances += split_statements(text, min_words=min_words)
        utterances = list(dict.fromkeys(utterances))
        if not utterances:
            continue
        texts = (*utterances, p.hypothesis.strip())
        h = len(texts) - 1
        out.append(
            MiningUnit(
                "gu_dnli/train",
                f"gu_dnli:{p.id}",
                texts,
                (who,) * len(texts),
                tuple((i, h) for i in range(h)),
                str(p.id),
            )
        )
    return out


def prosecco_units(pairs: Iterable[Any]) -> list[MiningUnit]:
    """One unit per ProSeCCo pair labelled ``non_contradiction`` (propositions of one speaker)."""
    from memlab.records import Label

    out = []
    for p in pairs:
        if p.label is not Label.NOT_CONTRADICTION:
            continue
        speaker = str(p.meta.get("speaker_id", ""))
        out.append(
            MiningUnit(
                "prosecco/train",
                f"prosecco:{p.meta.get('uid', p.id)}",
                (p.premise, p.hypothesis),
                (speaker, speaker),
                ((0, 1),),
                str(p.meta.get("uid", p.id)),
            )
        )
    return out


def _pair_key(a: str, b: str) -> tuple[str, str]:
    x, y = normalise(a), normalise(b)
    return (x, y) if x <= y else (y, x)


def mine(
    units: Sequence[MiningUnit],
    embedder: Embedder,
    *,
    threshold: float,
    top_k: int = 2,
    exclude: Iterable[tuple[str, str]] = (),
    batch_size: int = 256,
    progress: bool = False,
) -> tuple[list[HardNegative], dict[str, Counter[str]]]:
    """Apply the mining rule to ``units``.

    Keeps a candidate ``(earlier, later)`` when cosine >= ``threshold``, it is among the ``top_k`` most similar
    earlier statements of ``later``, the two texts differ (normalised), and neither the pair nor a repeat of it is
    in ``exclude`` (normalised, either order).

    Returns:
        The pairs in unit order, and per source the counts of each step (``units``, ``candidates``,
        ``above_threshold``, ``top_k``, ``excluded_eval``, ``duplicate``, ``kept``).
    """
    if top_k < 1:
        raise InvalidInputError(
            f"The 'top_k' parameter of mine must be an int in [1, inf). Got {top_k!r} instead."
        )
    from tqdm.auto import tqdm

    excluded = {_pair_key(a, b) for a, b in exclude}
    texts = list(dict.fromkeys(t for u in units for t in u.texts))
    index = {t: i for i, t in enumerate(texts)}
    vecs = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    bar = tqdm(total=len(texts), desc="embedding statements", unit="sent", disable=not progress)
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        vecs[start : start + len(chunk)] = embedder.embed(chunk)
        bar.update(len(chunk))
    bar.close()
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs / np.where(norms > 0, norms, 1.0)

    stats: dict[str, Counter[str]] = defaultdict(Counter)
    seen: set[tuple[str, str]] = set()
    out: list[HardNegative] = []
    for u in tqdm(units, desc="pairing", unit="unit", disable=not progress):
        st = stats[u.source]
        st["units"] += 1
        st["candidates"] += len(u.candidates)
        ids = np.array([index[t] for t in u.texts])
        sims = vecs[ids] @ vecs[ids].T
        by_later: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for i, j in u.candidates:
            c = float(sims[i, j])
            if c >= threshold and normalise(u.texts[i]) != normalise(u.texts[j]):
                by_later[j].append((c, i))
        for j in sorted(by_later):
            st["above_threshold"] += len(by_later[j])
            best = sorted(by_later[j], key=lambda ci: (-ci[0], ci[1]))[:top_k]
            for c, i in sorted(best, key=lambda ci: ci[1]):
                st["top_k"] += 1
                key = _pair_key(u.texts[i], u.texts[j])
                if key in excluded:
                    st["excluded_eval"] += 1
                    continue
                if key in seen:
                    st["duplicate"] += 1
                    continue
                seen.add(key)
                st["kept"] += 1
                out.append(
                    HardNegative(u.texts[i], u.texts[j], u.source, u.group, u.speakers[j], c, u.origin)
                )
    return out, dict(stats)


def split_dev(
    rows: Sequence[HardNegative], *, fraction: float = 0.1, seed: int = 13
) -> tuple[list[HardNegative], list[HardNegative]]:
    """Seeded split by group: ``fraction`` of the groups (dialogues) of each source go to dev, whole.

    Example:
        >>> rows = [HardNegative("a", "b", "s", f"g{i // 2}", "0", 0.5, "") for i in range(40)]
        >>> train, dev = split_dev(rows, fraction=0.1, seed=0)
        >>> len(dev), {r.group for r in train} & {r.group for r in dev}
        (4, set())
    """
    if not 0 <= fraction < 1:
        raise InvalidInputError(
            f"The 'fraction' parameter of split_dev must be in [0, 1). Got {fraction!r} instead."
        )
    groups_by_source: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r.group not in groups_by_source[r.source]:
            groups_by_source[r.source].append(r.group)
    rng = random.Random(seed)
    dev_groups: set[str] = set()
    for source in sorted(groups_by_source):
        groups = sorted(groups_by_source[source])
        rng.shuffle(groups)
        dev_groups.update(groups[: round(fraction * len(groups))])
    train = [r for r in rows if r.group not in dev_groups]
    dev = [r for r in rows if r.group in dev_groups]
    return train, dev


def _water_fill(sizes: Mapping[str, int], cap: int) -> dict[str, int]:
    """Largest equal share per source (small sources keep all) so that the total is at most ``cap``."""
    alloc = dict.fromkeys(sizes, 0)
    left = dict(sizes)
    budget = cap
    while left and budget > 0:
        share = budget // len(left)
        small = {k: n for k, n in left.items() if n <= share}
        if not small:
            for i, k in enumerate(sorted(left)):
                alloc[k] = share + (1 if i < budget - share * len(left) else 0)
            return alloc
        for k, n in small.items():
            alloc[k] = n
            budget -= n
            del left[k]
    return alloc


def cap_by_source(rows: Sequence[HardNegative], cap: int | None, *, seed: int = 13) -> list[HardNegative]:
    """At most ``cap`` rows: each source keeps all its rows or an equal share (water-filling), sampled seeded.

    Example:
        >>> rows = [HardNegative("a", str(i), s, str(i), "0", 0.5, "") for s, n in (("x", 10), ("y", 2))
        ...         for i in range(n)]
        >>> Counter(r.source for r in cap_by_source(rows, 6, seed=0))
        Counter({'x': 4, 'y': 2})
    """
    if cap is None or len(rows) <= cap:
        return list(rows)
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_source[r.source].append(i)
    alloc = _water_fill({k: len(v) for k, v in by_source.items()}, cap)
    rng = random.Random(seed)
    keep: set[int] = set()
    for source in sorted(by_source):
        keep.update(rng.sample(by_source[source], alloc[source]))
    return [rows[i] for i in sorted(keep)]


def _write_jsonl_gz(path: Path, rows: Sequence[HardNegative], split: str) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:  # byte-identical reruns
        for i, r in enumerate(rows, 1):
            gz.write((json.dumps(r.to_json(split, i), ensure_ascii=False) + "\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())


def _eval_pairs(data_dir: str | Path | None) -> list[tuple[str, str]]:
    from memlab.datasets import load_pairs

    out = []
    for name, split in EVAL_SPLITS:
        sub = Path(data_dir) / name if data_dir else None
        out += [(p.premise, p.hypothesis) for p in load_pairs(name, split, data_dir=sub)]
    return out


def _load_units(data_dir: str | Path | None, *, min_words: int) -> list[MiningUnit]:
    from memlab.datasets import load_dialogues, load_pairs

    def sub(name: str) -> Path | None:
        return Path(data_dir) / name if data_dir else None

    units = (
        decode_units(load_dialogues("decode", "dev", data_dir=sub("decode")), min_words=min_words)
        + ci_tod_units(load_pairs("ci_tod", "train", data_dir=sub("ci_tod")), min_words=min_words)
        + gu_dnli_units(load_pairs("gu_dnli", "train", data_dir=sub("gu_dnli")), min_words=min_words)
        + prosecco_units(load_pairs("prosecco", "train", data_dir=sub("prosecco")))
    )
    return units


def sample_units(
    units: Sequence[MiningUnit], max_statements: int | None, *, seed: int = 13
) -> list[MiningUnit]:
    """Whole units, seeded, with at most ``max_statements`` statements in all (the embedding time budget).

    Each source keeps all its units or an equal share of the budget (water-filling over statement counts); inside
    a source, units are taken in a seeded order until its share is used. Unit order is kept.

    Example:
        >>> u = [MiningUnit(s, f"{s}{i}", ("a", "b"), ("0", "0"), ((0, 1),)) for s, n in (("x", 10), ("y", 2))
        ...      for i in range(n)]
        >>> Counter(x.source for x in sample_units(u, 12, seed=0))
        Counter({'x': 4, 'y': 2})
    """
    if max_statements is None or sum(len(u.texts) for u in units) <= max_statements:
        return list(units)
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, u in enumerate(units):
        by_source[u.source].append(i)
    alloc = _water_fill(
        {k: sum(len(units[i].texts) for i in v) for k, v in by_source.items()}, max_statements
    )
    rng = random.Random(seed)
    keep: list[int] = []
    for source in sorted(by_source):
        order = list(by_source[source])
        rng.shuffle(order)
        used = 0
        for i in order:
            if used + len(units[i].texts) > alloc[source]:
                break
            used += len(units[i].texts)
            keep.append(i)
    return [units[i] for i in sorted(keep)]


#: The card's schema section (fixed text).
_CARD_SCHEMA = [
    "",
    "## Schema (JSON lines, gzip)",
    "",
    "`id` (`hard-negatives-<split>-<n>`), `premise` (the earlier statement), `hypothesis` (the later one), "
    "`label` (`not_contradiction`), `source` (origin split), `speaker_id`, `cosine` (e5), `group` (dialogue or "
    "row id: the dev-split unit), `origin` (origin dialogue / row id).",
]


def _card_intro(cfg: Mapping[str, Any]) -> list[str]:
    """The card's license banner, title, summary bullets and origins (with their licenses)."""
    lines = [
        "> **License class: research — derived from decode_pairs (no license stated; research) with MIT and "
        "CC BY-SA 4.0 sets: the training-data rule allows training on it (no test split; judge cards list it and "
        "its origins)**. Loader: `memlab.datasets` (see `datasets/README.md`).",
        "",
        "# Hard negatives: similar statements of one speaker, labelled consistent",
        "",
        "- **Short name:** `hard_negatives`",
        '- **Task fit:** (a) teaches the judge what "cannot both be true of one person" is NOT: two statements of '
        "the same speaker that the integrity check would compare (e5 cosine above its candidate threshold) but that "
        "come from dialogues labelled consistent. Binary, every row `not_contradiction`. English.",
        "- **Made by:** `python -m memlab.lab.hard_negatives --out datasets/hard_negatives` "
        f"(`memlab.lab.hard_negatives`; seed {cfg['seed']}; deterministic).",
        "- **Origins and licenses (as stated):**",
    ]
    lines += [f"  - `{k}`: {v}" for k, v in SOURCES.items()]
    lines.append(
        "  The rows from `prosecco/train` are CC BY-SA 4.0 (share-alike): this derived file is distributed under the "
        "same terms for those rows. No test split, no LoCoMo text and no non-commercial set is read for rows."
    )
    return lines


def _card_mining_rule(cfg: Mapping[str, Any]) -> list[str]:
    """The card's mining rule section (the numbered steps with the run's settings) and its caveat."""
    return [
        "",
        "## Mining rule",
        "",
        "1. Consistent material only: DECODE dev dialogues labelled `not_contradiction` (the file "
        "`decode_pairs/dev_dialogues.jsonl.gz`); CI-ToD train dialogues with `hi == 0 and kbi == 0`; GU-DNLI train "
        'rows labelled Entailment or Neutral whose hypothesis names exactly one speaker ("Person B ..."), paired '
        "with that speaker's utterances in the context; ProSeCCo train pairs labelled `non_contradiction`.",
        f"2. Time budget: at most {cfg['max_statements']} statements are embedded; whole units (dialogues, rows) "
        "are sampled, seeded: each source keeps all its units or an equal share of the budget (water-filling).",
        f"3. Statements: sentences of a turn, questions dropped (a `?`, or no final punctuation and a question word "
        f"first), at least {cfg['min_words']} words. In a dialogue, each statement is paired with the same speaker's "
        "statements in earlier turns.",
        f"4. Similar: cosine of `{cfg['embedder']}` passage embeddings >= {cfg['threshold']:.4f} (the embedder's "
        'calibrated English candidate threshold, `thresholds.candidate_for("en")`), identical texts dropped, and '
        f"only the {cfg['top_k']} most similar earlier statements of each statement kept (the check's top-k).",
        "5. Dropped: any pair that occurs in an evaluation split ("
        + ", ".join(f"{n}/{s}" for n, s in EVAL_SPLITS)
        + "; lower-cased, non-word characters deleted, either order), and repeats.",
        f"6. Split: a seeded {cfg['dev_fraction']:.0%} of the groups (dialogues; GU-DNLI and ProSeCCo rows) of each "
        f"source form `dev`, whole; `train` is capped at {cfg['max_train']} rows by water-filling over sources "
        "(each source keeps all its rows or an equal share, seeded sample).",
        "",
        "Caveat: the DECODE dev dialogues are also memlab's tuning dialogues (`decode` split `dev`, `dev-rct`). The "
        "exact evaluation pairs are excluded, but turn texts are shared (non-contradiction and contradiction "
        "dialogues of DECODE dev share context turns), so a judge trained on this set tunes the detector on "
        "dialogues whose text it has seen. Blind DECODE (human-bot, rct) is untouched.",
    ]


def _card_counts(report: Mapping[str, Any]) -> list[str]:
    """The card's file table, per-source counts table and mining time."""
    stats = report["stats"]
    lines = [
        "",
        "## Files here and counts",
        "",
        "| file | split | rows | labels | bytes |",
        "|---|---|---|---|---|",
    ]
    for split in ("train", "dev"):
        n = report["counts"][split]["total"]
        lines.append(
            f"| `{split}.jsonl.gz` | {split} | {n} | `not_contradiction`: {n} | {report['bytes'][split]} |"
        )
    lines += [
        "",
        "By source:",
        "",
        "| source | units (available) | candidate pairs | >= threshold | top-k | excluded (eval) | repeats | mined | train | dev | "
        "median cosine |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for source in SOURCES:
        st = stats.get(source, {})
        lines.append(
            f"| {source} | {st.get('units', 0)} ({st.get('available_units', 0)}) | {st.get('candidates', 0)} | {st.get('above_threshold', 0)} | "
            f"{st.get('top_k', 0)} | {st.get('excluded_eval', 0)} | {st.get('duplicate', 0)} | {st.get('kept', 0)} | "
            f"{report['counts']['train'].get(source, 0)} | {report['counts']['dev'].get(source, 0)} | "
            f"{report['median_cosine'].get(source, float('nan')):.3f} |"
        )
    lines += [
        "",
        f"Mining time: {report['seconds']:.0f} s on this machine ({report['statements']} statements embedded).",
        "",
    ]
    return lines


def _card_examples(report: Mapping[str, Any]) -> list[str]:
    """The card's examples section: each example row as indented JSON in a code block."""
    lines = ["## Examples", ""]
    for ex in report["examples"]:
        lines += ["```", json.dumps(ex, ensure_ascii=False, indent=1), "```"]
    return lines


def _card(report: Mapping[str, Any]) -> str:
    """The dataset card (``SOURCE.md``) of a mining run, as markdown, from its report."""
    cfg = report["config"]
    lines = (
        _card_intro(cfg)
        + _card_mining_rule(cfg)
        + _CARD_SCHEMA
        + _card_counts(report)
        + _card_examples(report)
    )
    return "\n".join(lines) + "\n"


def build_hard_negatives(
    out: str | Path,
    *,
    embedder: Embedder | str = "e5",
    data_dir: str | Path | None = None,
    seed: int = 13,
    top_k: int = 2,
    min_words: int = 4,
    max_train: int | None = 12_000,
    dev_fraction: float = 0.1,
    max_statements: int | None = 12_000,
    threshold: float | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Mine, split, cap and write ``train.jsonl.gz``, ``dev.jsonl.gz`` and ``SOURCE.md`` into ``out``.

    Args:
        embedder: an embedder or its name (default ``e5``).
        data_dir: root of the ``<dataset>/`` folders (default: the repository's ``datasets/``).
        max_statements: embed at most this many statements (time budget: ~90 sentences/s with e5 on 2 quiet
            cores, 20/s on loaded ones): whole units are sampled, seeded (:func:`sample_units`).
        threshold: cosine threshold (default: the embedder's English candidate threshold).

    Returns:
        The report written into the card (config, stats per source, counts per split, time).
    """
    from memlab.embedding import resolve_embedder

    t0 = time.perf_counter()
    emb = resolve_embedder(embedder)
    thr = float(threshold) if threshold is not None else float(emb.thresholds.candidate_for("en"))
    available = _load_units(data_dir, min_words=min_words)
    units = sample_units(available, max_statements, seed=seed)
    rows, stats = mine(
        units, emb, threshold=thr, top_k=top_k, exclude=_eval_pairs(data_dir), progress=progress
    )
    train, dev = split_dev(rows, fraction=dev_fraction, seed=seed)
    train = cap_by_source(train, max_train, seed=seed)
    if max_train is not None and dev_fraction > 0:
        dev = cap_by_source(dev, round(max_train * dev_fraction / (1 - dev_fraction)), seed=seed + 1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl_gz(out / "train.jsonl.gz", train, "train")
    _write_jsonl_gz(out / "dev.jsonl.gz", dev, "dev")
    by_source: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_source[r.source].append(r.cosine)
    rng = random.Random(seed)
    examples = []
    for source in SOURCES:
        idx = [i for i, r in enumerate(train) if r.source == source]
        if idx:
            i = rng.choice(idx)
            examples.append(train[i].to_json("train", i + 1))
    for source, n in Counter(u.source for u in available).items():
        stats.setdefault(source, Counter())["available_units"] = n
    report: dict[str, Any] = {
        "config": {
            "embedder": getattr(emb, "name", str(embedder)),
            "threshold": thr,
            "seed": seed,
            "top_k": top_k,
            "min_words": min_words,
            "max_train": max_train,
            "dev_fraction": dev_fraction,
            "max_statements": max_statements,
        },
        "stats": {k: dict(v) for k, v in stats.items()},
        "counts": {
            name: {"total": len(part), **Counter(r.source for r in part)}
            for name, part in (("train", train), ("dev", dev))
        },
        "bytes": {s: (out / f"{s}.jsonl.gz").stat().st_size for s in ("train", "dev")},
        "median_cosine": {k: float(np.median(v)) for k, v in by_source.items()},
        "statements": len({t for u in units for t in u.texts}),
        "seconds": time.perf_counter() - t0,
        "examples": examples,
    }
    (out / "SOURCE.md").write_text(_card(report), encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memlab.lab.hard_negatives --out datasets/hard_negatives``."""
    ap = argparse.ArgumentParser(
        prog="python -m memlab.lab.hard_negatives", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--out", required=True, help="output folder (train.jsonl.gz, dev.jsonl.gz, SOURCE.md)")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument(
        "--data-dir", default=None, help="root of the <dataset>/ folders (default: the repo's datasets/)"
    )
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--min-words", type=int, default=4)
    ap.add_argument("--max-train", type=int, default=12_000)
    ap.add_argument("--dev-fraction", type=float, default=0.1)
    ap.add_argument(
        "--max-statements",
        type=int,
        default=12_000,
        help="embed at most N statements (seeded sample of units)",
    )
    ap.add_argument(
        "--threshold", type=float, default=None, help="cosine threshold (default: the embedder's)"
    )
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    report = build_hard_negatives(
        args.out,
        embedder=args.embedder,
        data_dir=args.data_dir,
        seed=args.seed,
        top_k=args.top_k,
        min_words=args.min_words,
        max_train=args.max_train,
        dev_fraction=args.dev_fraction,
        max_statements=args.max_statements,
        threshold=args.threshold,
        progress=not args.no_progress,
    )
    print(
        json.dumps({k: report[k] for k in ("config", "stats", "counts", "seconds")}, indent=1),
        file=sys.stdout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
