"""Pairwise loaders: every labelled set as ``(id, premise, hypothesis, label, meta)`` pairs.

Label mappings (documented in ``datasets/README.md``):

* 3-way sets (snli, anli, sick, control, gu_dnli, ocnli, kvpi) -> contradiction / entailment / neutral.
  OCNLI rows labelled ``-`` (no annotator majority) are skipped, as the OCNLI README says.
  KvPI: 0 -> neutral ("irrelevant"), 1 -> entailment, 2 -> contradiction (:data:`KVPI_LABELS`; read from the
  data itself, not from the origin repository's ``f1_acc.py`` display names, which say 0/1/2 = entailed /
  contradicted / irrelevant: in the constellation domain 390 of 445 rows labelled 2 name another sign than the
  profile's and none labelled 1 does; see ``datasets/kvpi/SOURCE.md``).
* the newer sets in one JSON-lines form (decode_pairs, lingnli, taxinli, cad_snli, breaking_nli, negation_nli,
  cnli_zh, cmnli_zh, xnli, cinlid, tenp, semi_auto_nli, conjnli, prosecco, hard_negatives; gzip) carry memlab's
  label names already (prosecco's ``non_contradiction`` -> not_contradiction); decode_pairs, prosecco and
  hard_negatives are binary.
* binary sets (ci_tod, cdconv, decode, decode_pairs) -> contradiction / not_contradiction.
  CDConv: label 1, 2, 3 -> contradiction, 0 -> not_contradiction. CI-ToD: contradiction iff
  ``hi == 1`` or ``kbi == 1`` (``qi`` = inconsistency with the current query is not a contradiction of
  memory). DECODE: the dialogue label ``is_contradiction``.
* rte3_ita (entailment only) -> entailment (YES) / neutral (NO, meaning "not entailed").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from memlab.datasets._io import field as get_field
from memlab.datasets._io import iter_jsonl, iter_tsv, text_field
from memlab.datasets.dialogues import dialogue_pairs, parse_decode
from memlab.datasets.pair import Pair
from memlab.datasets.registry import dataset_files, get_dataset
from memlab.errors import DatasetFormatError, InvalidInputError
from memlab.records import Label

__all__ = [
    "Pair",
    "load_pairs",
    "sample_pairs",
]


_E, _N, _C, _NC = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION, Label.NOT_CONTRADICTION

_SKIP = object()


def _map_label(raw: Any, mapping: Mapping[Any, Any], path: Path, lineno: int) -> Any:
    key = raw.strip() if isinstance(raw, str) else raw
    if key not in mapping:
        raise DatasetFormatError(
            f"unknown label {raw!r}; expected one of {sorted(map(str, mapping))}.",
            path=str(path),
            line=lineno,
        )
    return mapping[key]


# --- per-set row parsers: (path, rel, split) -> iterator of Pair ---------------------------------


def _snli(path: Path, rel: str) -> Iterator[Pair]:
    mapping = {"entailment": _E, "neutral": _N, "contradiction": _C}
    for lineno, f in iter_tsv(path, n_columns=3, header=("premise", "hypothesis", "label")):
        yield Pair(
            f"{rel}:{lineno}",
            text_field(f[0], "premise", path, lineno),
            text_field(f[1], "hypothesis", path, lineno),
            _map_label(f[2], mapping, path, lineno),
            {"raw_label": f[2]},
        )


def _sick(path: Path, rel: str) -> Iterator[Pair]:
    mapping = {"ENTAILMENT": _E, "NEUTRAL": _N, "CONTRADICTION": _C}
    header = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")
    for lineno, f in iter_tsv(path, n_columns=5, header=header):
        yield Pair(
            f"{rel}:{lineno}",
            text_field(f[1], "sentence_A", path, lineno),
            text_field(f[2], "sentence_B", path, lineno),
            _map_label(f[4], mapping, path, lineno),
            {"raw_label": f[4], "pair_id": f[0], "relatedness": f[3]},
        )


def _gu_dnli(path: Path, rel: str) -> Iterator[Pair]:
    mapping = {"Entailment": _E, "Neutral": _N, "Contradiction": _C}
    for lineno, f in iter_tsv(path, n_columns=3):
        yield Pair(
            f"{rel}:{lineno}",
            text_field(f[0], "context", path, lineno),
            text_field(f[1], "hypothesis", path, lineno),
            _map_label(f[2], mapping, path, lineno),
            {"raw_label": f[2]},
        )


def _enc_jsonl(premise_key: str, id_key: str) -> Callable[[Path, str], Iterator[Pair]]:
    mapping = {"e": _E, "n": _N, "c": _C}

    def parse(path: Path, rel: str) -> Iterator[Pair]:
        round_ = path.parent.name if path.parent.name.startswith("R") else None
        for lineno, obj in iter_jsonl(path):
            raw = get_field(obj, "label", path, lineno)
            meta: dict[str, Any] = {"raw_label": raw, "uid": obj.get(id_key)}
            if round_ is not None:
                meta["round"] = round_
            for k in ("genre", "tag"):
                if k in obj:
                    meta[k] = obj[k]
            yield Pair(
                f"{rel}:{lineno}",
                text_field(get_field(obj, premise_key, path, lineno), premise_key, path, lineno),
                text_field(get_field(obj, "hypothesis", path, lineno), "hypothesis", path, lineno),
                _map_label(raw, mapping, path, lineno),
                meta,
            )

    return parse


_SHARED_META = (
    "lang", "protocol", "round", "genre", "variant", "category", "source", "negation_in", "mnli_split",
    "speaker_id", "cosine",
)
"""Row fields kept in ``Pair.meta`` by :func:`_shared_jsonl` (never ``group``: that key ties pairs for scoring)."""


def _shared_jsonl(path: Path, rel: str) -> Iterator[Pair]:
    """The newer sets' common JSON-lines form: ``id``, ``premise``, ``hypothesis``, ``label`` (+ extra fields)."""
    mapping = {
        "entailment": _E,
        "neutral": _N,
        "contradiction": _C,
        "not_contradiction": _NC,
        "non_contradiction": _NC,  # prosecco's name for it
    }
    for lineno, obj in iter_jsonl(path):
        raw = get_field(obj, "label", path, lineno)
        meta: dict[str, Any] = {"raw_label": raw, "uid": obj.get("id")}
        meta.update({k: obj[k] for k in _SHARED_META if k in obj})
        yield Pair(
            f"{rel}:{lineno}",
            text_field(get_field(obj, "premise", path, lineno), "premise", path, lineno),
            text_field(get_field(obj, "hypothesis", path, lineno), "hypothesis", path, lineno),
            _map_label(raw, mapping, path, lineno),
            meta,
        )


def _ocnli(path: Path, rel: str) -> Iterator[Pair]:
    mapping: dict[Any, Any] = {"entailment": _E, "neutral": _N, "contradiction": _C, "-": _SKIP}
    for lineno, obj in iter_jsonl(path):
        raw = get_field(obj, "label", path, lineno)
        label = _map_label(raw, mapping, path, lineno)
        if label is _SKIP:
            continue
        yield Pair(
            f"{rel}:{lineno}",
            text_field(get_field(obj, "sentence1", path, lineno), "sentence1", path, lineno),
            text_field(get_field(obj, "sentence2", path, lineno), "sentence2", path, lineno),
            label,
            {"raw_label": raw, "uid": obj.get("id"), "genre": obj.get("genre"), "level": obj.get("level")},
        )


def _rte3_ita(path: Path, rel: str) -> Iterator[Pair]:
    mapping = {"YES": _E, "NO": _N}
    for lineno, obj in iter_jsonl(path):
        raw = get_field(obj, "entailment", path, lineno)
        yield Pair(
            f"{rel}:{lineno}",
            text_field(get_field(obj, "t", path, lineno), "t", path, lineno),
            text_field(get_field(obj, "h", path, lineno), "h", path, lineno),
            _map_label(raw, mapping, path, lineno),
            {"raw_label": raw, "uid": obj.get("id"), "task": obj.get("task"), "length": obj.get("length")},
        )


def _cdconv(path: Path, rel: str) -> Iterator[Pair]:
    mapping: dict[Any, Any] = {0: _NC, 1: _C, 2: _C, 3: _C, "0": _NC, "1": _C, "2": _C, "3": _C}
    for lineno, obj in iter_jsonl(path):
        raw = get_field(obj, "label", path, lineno)
        turns = [
            text_field(get_field(obj, k, path, lineno), k, path, lineno) for k in ("u1", "b1", "u2", "b2")
        ]
        premise = f"用户：{turns[0]}\n机器人：{turns[1]}\n用户：{turns[2]}"
        yield Pair(
            f"{rel}:{lineno}",
            premise,
            turns[3],
            _map_label(raw, mapping, path, lineno),
            {
                "raw_label": int(raw),
                "method": obj.get("method"),
                "model": obj.get("model"),
                "file": obj.get("file"),
            },
        )


_KVPI_GENDER = {"female": "女", "male": "男"}
KVPI_LABELS: Mapping[str, Label] = {"0": Label.NEUTRAL, "1": Label.ENTAILMENT, "2": Label.CONTRADICTION}
"""KvPI's label column: 0 = irrelevant, 1 = entailed, 2 = contradicted (established from the rows, see above)."""
_KVPI_ITEM = re.compile(r"'(\w+)'\s*:\s*'?([^,'}]*)'?")


def parse_kvpi_profile(text: str) -> dict[str, str]:
    """Parse KvPI's Python-dict-like profile (values are sometimes unquoted) into a dict."""
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
    except (ValueError, SyntaxError):
        pass
    return {k: v.strip() for k, v in _KVPI_ITEM.findall(text)}


def render_kvpi_profile(profile: Mapping[str, str]) -> str:
    """The profile as Chinese text, e.g. ``"性别：女；地点：福建 莆田；星座：射手座"`` (empty values left out)."""
    parts = []
    if profile.get("gender"):
        parts.append(f"性别：{_KVPI_GENDER.get(profile['gender'], profile['gender'])}")
    if profile.get("loc"):
        parts.append(f"地点：{profile['loc']}")
    if profile.get("constellation"):
        parts.append(f"星座：{profile['constellation']}")
    return "；".join(parts)


def _kvpi(path: Path, rel: str) -> Iterator[Pair]:
    mapping = dict(KVPI_LABELS)
    for lineno, f in iter_tsv(path, n_columns=3):
        profile_text, sep, response = f[0].partition(" <SEP> ")
        if not sep:
            raise DatasetFormatError(
                "column 'text' must contain ' <SEP> ' between profile and response.",
                path=str(path),
                line=lineno,
            )
        profile = parse_kvpi_profile(profile_text.strip())
        premise = render_kvpi_profile(profile)
        if not premise:
            raise DatasetFormatError(
                f"could not parse the profile {profile_text!r}.", path=str(path), line=lineno
            )
        yield Pair(
            f"{rel}:{lineno}",
            premise,
            text_field(response, "response", path, lineno),
            _map_label(f[1], mapping, path, lineno),
            {"raw_label": int(f[1].strip()), "domain": f[2].strip(), "profile": profile},
        )


def _render_kb_item(item: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in item.items() if v not in ("-", "", None))


def _ci_tod(path: Path, rel: str) -> Iterator[Pair]:
    binary = {"0": 0, "1": 1, 0: 0, 1: 1}
    domain = path.stem.rsplit("_", 1)[0]
    for lineno, obj in iter_jsonl(path):
        dialogue = get_field(obj, "dialogue", path, lineno)
        scenario = get_field(obj, "scenario", path, lineno)
        if not isinstance(dialogue, list) or not dialogue or not isinstance(scenario, dict):
            raise DatasetFormatError(
                "'dialogue' must be a non-empty list and 'scenario' an object.", path=str(path), line=lineno
            )
        flags = {
            k: _map_label(get_field(scenario, k, path, lineno), binary, path, lineno)
            for k in ("qi", "hi", "kbi")
        }
        kb = scenario.get("kb") or {}
        turns = []
        for t in dialogue:
            if not isinstance(t, dict):
                raise DatasetFormatError("each dialogue turn must be an object.", path=str(path), line=lineno)
            turns.append(
                (
                    str(get_field(t, "turn", path, lineno)),
                    text_field(get_field(t, "utterance", path, lineno), "utterance", path, lineno),
                )
            )
        history = "\n".join(f"{who}: {text}" for who, text in turns[:-1])
        kb_text = "\n".join(_render_kb_item(it) for it in kb.get("items") or [] if isinstance(it, dict))
        premise = "\n".join(p for p in (history, f"KB:\n{kb_text}" if kb_text else "") if p) or "(no history)"
        label = _C if (flags["hi"] or flags["kbi"]) else _NC
        yield Pair(
            f"{rel}:{lineno}",
            premise,
            turns[-1][1],
            label,
            {
                **flags,
                "uid": obj.get("id"),
                "domain": domain,
                "dialogue": dialogue,
                "kb": kb,
                "hi_position": obj.get("HIPosition"),
            },
        )


def _decode(path: Path, rel: str) -> Iterator[Pair]:
    for dialogue in parse_decode(path):
        yield from dialogue_pairs(dialogue)


#: ``scenarios_dev``'s batches (id prefixes) by split: the first two batches train a judge, the third (written last,
#: see ``datasets/scenarios_dev/README.md``) is kept out of training to choose and measure it. ``train-en`` /
#: ``dev-en``: their English pairs only (for the English judge).
SCENARIOS_DEV_SPLITS: Mapping[str, tuple[str, ...]] = {
    "train": ("dev", "devb"), "dev": ("devc",), "train-en": ("dev", "devb"), "dev-en": ("devc",)
}


def _scenario_pairs(path: Path, rel: str) -> Iterator[Pair]:
    """Scenario rows (``id``, ``lang``, ``kind``, ``a``, ``b``, ``label``) as pairs: premise = the earlier memory."""
    mapping = {"contradiction": _C, "compatible": _NC}
    for lineno, obj in iter_jsonl(path):
        uid = str(get_field(obj, "id", path, lineno))
        yield Pair(
            uid,
            text_field(get_field(obj, "a", path, lineno), "a", path, lineno),
            text_field(get_field(obj, "b", path, lineno), "b", path, lineno),
            _map_label(get_field(obj, "label", path, lineno), mapping, path, lineno),
            {"lang": obj.get("lang"), "kind": obj.get("kind"), "batch": uid.partition("-")[0]},
        )


_PARSERS: dict[str, Callable[[Path, str], Iterator[Pair]]] = {
    "snli": _snli,
    "sick": _sick,
    "gu_dnli": _gu_dnli,
    "anli": _enc_jsonl("context", "uid"),
    "control": _enc_jsonl("premise", "uid"),
    "ocnli": _ocnli,
    "rte3_ita": _rte3_ita,
    "cdconv": _cdconv,
    "kvpi": _kvpi,
    "ci_tod": _ci_tod,
    "decode": _decode,
    "scenarios_dev": _scenario_pairs,
    **{
        name: _shared_jsonl
        for name in (
            "decode_pairs", "lingnli", "taxinli", "cad_snli", "breaking_nli", "negation_nli",
            "cnli_zh", "cmnli_zh", "xnli", "cinlid",
            "tenp", "semi_auto_nli", "conjnli", "prosecco", "hard_negatives",
        )
    },
}


def load_pairs(name: str, split: str | None = None, *, data_dir: str | Path | None = None) -> list[Pair]:
    """Load a labelled pair set from its original files.

    Args:
        name: a pairwise dataset of :data:`memlab.datasets.DATASETS` (``snli``, ``anli``, ``sick``,
            ``control``, ``gu_dnli``, ``ci_tod``, ``kvpi``, ``cdconv``, ``ocnli``, ``rte3_ita``, ``decode``).
        split: split name (see ``DATASETS[name].splits``); default ``DATASETS[name].default_split``.
        data_dir: folder holding the set's files under their original names; default the repository's
            ``datasets/<name>``. Point it at another copy (e.g. a blind held-out copy) to score that.

    Returns:
        Pairs in file order. Ids are unique within the split.

    Raises:
        UnknownComponentError: unknown or non-pairwise dataset.
        InvalidInputError: unknown split.
        DatasetFormatError: a file is missing, empty, not UTF-8, or has a missing column or unknown label
            (the message names the file and the line).

    Example:
        >>> pairs = load_pairs("snli", "test")
        >>> pairs[0].label.value in {"contradiction", "entailment", "neutral"}
        True
    """
    info = get_dataset(name)
    if not info.is_pairwise:
        from memlab.errors import UnknownComponentError

        raise UnknownComponentError(
            "pairwise dataset", name, [n for n, d in _registry().items() if d.is_pairwise]
        )
    split = split if split is not None else info.default_split
    out: list[Pair] = []
    files = dataset_files(name, split, data_dir)  # validates the split
    if name == "decode" and split == "dev-rct":  # derived dialogues (truncated), not the file's own
        from memlab.datasets.dialogues import dialogue_pairs, load_dialogues

        return [p for d in load_dialogues(name, split, data_dir=data_dir) for p in dialogue_pairs(d)]
    for rel, path in zip(info.splits[split], files, strict=True):
        out.extend(_PARSERS[name](path, rel))
    if name == "scenarios_dev":  # one file, split by batch
        out = [p for p in out if p.meta["batch"] in SCENARIOS_DEV_SPLITS[split]
               and (not split.endswith("-en") or p.meta["lang"] == "en")]
    return out


def _registry() -> Mapping[str, Any]:
    from memlab.datasets.registry import DATASETS

    return DATASETS


def sample_pairs(pairs: list[Pair], limit: int | None, *, seed: int = 0) -> list[Pair]:
    """A seeded sample of at most ``limit`` pairs, keeping whole groups (``meta["group"]``) together.

    Without groups, ``limit`` pairs are drawn without replacement; with groups, whole groups are drawn
    until ``limit`` groups are taken (the unit scored is then the group). File order is kept.

    Args:
        pairs: the pairs to sample from.
        limit: how many pairs (or groups) to keep; ``None`` keeps everything.
        seed: seed of ``numpy.random.default_rng``.

    Raises:
        InvalidInputError: ``limit`` is not a positive int.

    Example:
        >>> ps = [Pair(str(i), "a", "b", Label.NEUTRAL) for i in range(10)]
        >>> [p.id for p in sample_pairs(ps, 3, seed=0)] == [p.id for p in sample_pairs(ps, 3, seed=0)]
        True
    """
    if limit is None:
        return list(pairs)
    if isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 1:
        raise InvalidInputError(
            f"The 'limit' parameter of sample_pairs must be an int in [1, inf). Got {limit!r} instead."
        )
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(str(p.meta.get("group", p.id)), []).append(i)
    keys = list(groups)
    if limit >= len(keys):
        return list(pairs)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(keys), size=int(limit), replace=False)
    keep = sorted(i for k in chosen for i in groups[keys[int(k)]])
    return [pairs[i] for i in keep]
