"""Per-embedder calibration of similarity thresholds, and the candidate-stage benchmark used to pick the default.

Why: a cosine of 0.7 means different things for different models (MiniLM scores the Italian
birthday pair 0.54, multilingual-e5 0.93 with unrelated pairs at 0.80-0.86). So each embedder carries its own
*candidate* threshold ("similar enough to check for a contradiction") and *chat-search* threshold, measured on
labelled data and shipped as ``memlab/embedding/calibration/<name>.json``.

How the candidate threshold is chosen (:func:`calibrate_embedder`), from train/dev splits only:

* **related** pairs: true contradiction pairs about one subject: SNLI dev contradictions (English; GU-DNLI's
  pairs are a 5-turn transcript vs a hypothesis, not two statements, so they are left out), RTE3-ITA dev "not entailed" pairs (Italian; the set has no separate contradiction label), OCNLI
  train.10k contradictions and CDConv train history contradictions (bot turn ``b1`` vs ``b2``, label 3) (Chinese).
* **unrelated** pairs: statements about the same person or in the same voice, on different topics: two persona
  facts of one MSC speaker (LoCoMo's ``msc_personas_all.json``, train part), GU-DNLI hypotheses about a speaker
  from different dialogues (English); RTE3-ITA hypotheses of different rows (Italian); OCNLI hypotheses of
  different premises and CDConv bot turns of different dialogues (Chinese).
* per language, the threshold is the largest value that keeps the recall of related pairs >= ``recall_target``
  (default 0.95); that value also minimises the share of unrelated pairs passing, which only falls as the
  threshold rises. Per-language values ship in ``by_language``; :func:`candidate_threshold` picks the one of a
  text's detected language (:mod:`memlab.text`). The shipped ``candidate`` is the minimum over languages, the
  safe value when the language is unknown.
* the chat-search threshold is chosen the same way for *query -> passage* similarity (``query:`` side = what the
  user types) over all same-topic pairs, with ``chat_recall_target`` (default 0.90).
* the chat-title drift threshold answers "is this chat now about something else?": texts of 2 or 4 sentences
  about one subject (an SNLI dev premise and its hypotheses; an RTE3-ITA dev text and its hypothesis; an OCNLI
  train premise and its hypotheses) are compared with the same text in which half of the sentences come from
  another subject; the threshold is the median cosine of those pairs (median over languages). Below it, at least
  half of the summary is about something new, and :class:`memlab.chats.ChatStore` re-derives the title. The
  file also records how often a quarter replaced stays above it and three quarters replaced fall below it.

:func:`bench_candidates` measures the candidate stage on splits that calibration never saw (SNLI test, DECODE
Human-Bot, GU-DNLI test, RTE3-ITA test, OCNLI dev, CDConv dev, KvPI test): for every contradiction it builds a
synthetic user holding the earlier statement plus ``n_distractors`` other statements of the same dataset, and
reports the recall of the earlier statement in the top-10 above the threshold and the share of distractors
above the threshold.
"""

from __future__ import annotations

import csv
import json
import logging
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from memlab.datasets import KVPI_LABELS, parse_kvpi_profile
from memlab.embedding.thresholds import (
    EmbedderCalibration,
    EmbedderThresholds,
    LanguageCalibration,
    calibration_path,
    candidate_threshold,
    load_calibration,
    load_thresholds,
)
from memlab.errors import DatasetFormatError, InvalidInputError, NotFoundError
from memlab.protocols import Embedder

__all__ = [
    "CandidateBench",
    "CandidateBenchRow",
    "EmbedderCalibration",
    "LabelledPair",
    "LanguageCalibration",
    "bench_candidates",
    "calibrate_embedder",
    "calibration_pairs",
    "calibration_path",
    "candidate_cases",
    "candidate_threshold",
    "default_data_dir",
    "fit_center",
    "load_calibration",
    "load_thresholds",
    "save_calibration",
    "threshold_for_recall",
]

log = logging.getLogger(__name__)

Kind = Literal["related", "unrelated"]

# ----------------------------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """Two statements and whether they are about the same subject.

    Attributes:
        a: the earlier / stored statement.
        b: the new statement.
        kind: ``"related"`` (a true contradiction or same-topic pair) or ``"unrelated"`` (different topics).
        lang: ISO 639-1 language code.
        source: ``dataset/split`` the pair was built from.
    """

    a: str
    b: str
    kind: Kind
    lang: str
    source: str


def default_data_dir() -> Path:
    """The repository's ``datasets/`` folder (next to the installed ``memlab`` package)."""
    import memlab

    return Path(memlab.__file__).resolve().parent.parent / "datasets"


def _file(data_dir: Path, *parts: str) -> Path:
    path = data_dir.joinpath(*parts)
    if not path.is_file():
        raise NotFoundError(f"Dataset file {path} not found (pass --data-dir / data_dir=... to point at datasets/).")
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DatasetFormatError(f"{path}:{i}: invalid JSON ({exc}).") from exc
    return rows


def _tsv(path: Path, *, header: bool) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[1:] if header else rows


def _detok(text: str) -> str:
    """Undo SNLI's tokenisation ("a church ." -> "a church.")."""
    text = re.sub(r"\s+([.,!?;:'])", r"\1", text.strip())
    return re.sub(r"\s+n't", "n't", text)


def _snli(data_dir: Path, split: str) -> list[tuple[str, str, str]]:
    out = []
    for i, row in enumerate(_tsv(_file(data_dir, "snli", f"{split}.tsv"), header=True)):
        if len(row) != 3:
            raise DatasetFormatError(f"snli/{split}.tsv row {i + 2}: expected 3 columns, got {len(row)}.")
        out.append((_detok(row[0]), _detok(row[1]), row[2]))
    return out


def _gu_dnli(data_dir: Path, split: str) -> list[tuple[str, str, str]]:
    out = []
    for row in _tsv(_file(data_dir, "gu_dnli", f"{split}_5_data.tsv"), header=False):
        if len(row) >= 3:
            ctx = re.sub(r"<([A-Z])>", r"\1:", row[0]).strip()
            out.append((ctx, row[1].strip(), row[2].strip().lower()))
    return out


def _rte3(data_dir: Path, split: str) -> list[tuple[str, str, str]]:
    return [(r["t"], r["h"], "not_entailed" if r["entailment"] == "NO" else "entailment")
            for r in _jsonl(_file(data_dir, "rte3_ita", f"{split}.jsonl"))]


def _ocnli(data_dir: Path, split: str) -> list[tuple[str, str, str, str]]:
    name = "train.10k.jsonl" if split == "train" else f"{split}.jsonl"
    return [(r["sentence1"], r["sentence2"], r["label"], str(r.get("prem_id", "")))
            for r in _jsonl(_file(data_dir, "ocnli", name)) if r["label"] != "-"]


def _cdconv(data_dir: Path, split: str) -> list[dict[str, Any]]:
    return _jsonl(_file(data_dir, "cdconv", f"{split}.jsonl"))


def _msc_personas(data_dir: Path, part: str = "train") -> list[list[str]]:
    with _file(data_dir, "locomo", "msc_personas_all.json").open(encoding="utf-8") as fh:
        data = json.load(fh)
    people = []
    for dialogue in data.get(part, []):
        for speaker, lines in dialogue.items():
            if speaker.startswith("Speaker") and isinstance(lines, list) and len(lines) >= 2:
                people.append([str(x) for x in lines])
    return people


_GENDER = {"male": "我是男生", "female": "我是女生", "男": "我是男生", "女": "我是女生"}
_KVPI_DOMAIN = {"0": "gender", "1": "loc", "2": "constellation"}  # inferred from the responses' content


def _kvpi_memories(profile: dict[str, str]) -> dict[str, str]:
    out = {}
    if profile.get("gender") in _GENDER:
        out["gender"] = _GENDER[profile["gender"]]
    if profile.get("loc"):
        out["loc"] = f"我住在{profile['loc'].replace(' ', '')}"
    if profile.get("constellation"):
        out["constellation"] = f"我的星座是{profile['constellation']}"
    return out


def _kvpi(data_dir: Path) -> list[tuple[dict[str, str], str, str, str]]:
    rows = []
    for row in _tsv(_file(data_dir, "kvpi", "KvPI_test.txt"), header=False):
        if len(row) < 3 or " <SEP> " not in row[0]:
            continue
        prof, resp = row[0].split(" <SEP> ", 1)
        lab = KVPI_LABELS.get(row[1].strip())
        label = lab.value if lab is not None else ""
        rows.append((_kvpi_memories(parse_kvpi_profile(prof)), resp.strip(), label, _KVPI_DOMAIN.get(row[2].strip(), "")))
    return rows


def _sample(items: Sequence[Any], n: int | None, rng: random.Random) -> list[Any]:
    items = list(items)
    if n is None or len(items) <= n:
        return items
    return rng.sample(items, n)


def _shuffled_pairs(texts: Sequence[str], groups: Sequence[str], n: int, rng: random.Random) -> list[tuple[str, str]]:
    """``n`` pairs of texts from different groups (different rows / premises / dialogues)."""
    out: list[tuple[str, str]] = []
    if len(texts) < 2:
        return out
    n = min(n, len(texts))  # one pair per text at most (also bounds the loop when n is "all")
    tries = 0
    while len(out) < n and tries < n * 20:
        tries += 1
        i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
        if groups[i] != groups[j] and texts[i] != texts[j]:
            out.append((texts[i], texts[j]))
    return out


def calibration_pairs(
    data_dir: str | Path | None = None, *, limit: int | None = 400, seed: int = 0
) -> list[LabelledPair]:
    """Labelled related/unrelated pairs for calibration, built from train/dev splits only (never test).

    Args:
        data_dir: the ``datasets/`` folder (default: :func:`default_data_dir`).
        limit: at most this many pairs per (source, kind); ``None`` = all.
        seed: sampling seed.

    Returns:
        A list of :class:`LabelledPair` over English, Italian and Chinese.

    Raises:
        NotFoundError: a dataset file is missing.
        DatasetFormatError: a file is malformed.
    """
    d = Path(data_dir) if data_dir is not None else default_data_dir()
    rng = random.Random(seed)
    n = limit if limit is not None else 10**9
    out: list[LabelledPair] = []

    def add(pairs: Iterable[tuple[str, str]], kind: Kind, lang: str, source: str) -> None:
        for a, b in _sample(list(pairs), limit, rng):
            if a.strip() and b.strip():
                out.append(LabelledPair(a, b, kind, lang, source))

    snli = _snli(d, "dev")
    add([(p, h) for p, h, y in snli if y == "contradiction"], "related", "en", "snli/dev")
    # GU-DNLI contradictions are (5-turn spoken transcript, hypothesis): the transcript is not one statement,
    # so they are not used as related pairs; the hypotheses ("Person B ...") serve as same-person negatives.
    gu = _gu_dnli(d, "train") + _gu_dnli(d, "dev")
    hyps = [h for _, h, _ in gu]
    add(_shuffled_pairs(hyps, [str(i) for i in range(len(hyps))], n, rng), "unrelated", "en", "gu_dnli/train+dev")
    persons = _msc_personas(d, "train")
    persona_pairs = []
    for lines in _sample(persons, n, rng):
        i, j = rng.sample(range(len(lines)), 2)
        persona_pairs.append((lines[i], lines[j]))
    add(persona_pairs, "unrelated", "en", "msc_personas/train")

    rte = _rte3(d, "dev")
    add([(t, h) for t, h, y in rte if y == "not_entailed"], "related", "it", "rte3_ita/dev")
    rh = [h for _, h, _ in rte]
    add(_shuffled_pairs(rh, [str(i) for i in range(len(rh))], n, rng), "unrelated", "it", "rte3_ita/dev")

    oc = _ocnli(d, "train")
    add([(p, h) for p, h, y, _ in oc if y == "contradiction"], "related", "zh", "ocnli/train")
    add(_shuffled_pairs([h for _, h, _, _ in oc], [g for *_, g in oc], n, rng), "unrelated", "zh", "ocnli/train")
    cd = _cdconv(d, "train")
    add([(r["b1"], r["b2"]) for r in cd if int(r["label"]) == 3], "related", "zh", "cdconv/train")
    add(_shuffled_pairs([r["b2"] for r in cd], [str(i) for i in range(len(cd))], n, rng),
        "unrelated", "zh", "cdconv/train")
    return out


def _chat_pairs(data_dir: Path, limit: int | None, seed: int) -> list[LabelledPair]:
    """Same-topic pairs (any NLI label) for the chat-search threshold; unrelated = shuffled rows."""
    rng = random.Random(seed + 1)
    n = limit if limit is not None else 10**9
    out: list[LabelledPair] = []
    sets: list[tuple[str, str, list[tuple[str, str]]]] = [
        ("en", "snli/dev", [(p, h) for p, h, _ in _snli(data_dir, "dev")]),
        ("it", "rte3_ita/dev", [(t, h) for t, h, _ in _rte3(data_dir, "dev")]),
        ("zh", "ocnli/train", [(p, h) for p, h, _, _ in _ocnli(data_dir, "train")]),
    ]
    for lang, source, pairs in sets:
        for a, b in _sample(pairs, limit, rng):
            out.append(LabelledPair(a, b, "related", lang, source))
        prem = [a for a, _ in pairs]
        hyp = [b for _, b in pairs]
        for _ in range(min(n, len(pairs))):
            i, j = rng.randrange(len(pairs)), rng.randrange(len(pairs))
            if prem[i] != prem[j]:
                out.append(LabelledPair(prem[i], hyp[j], "unrelated", lang, source))
    return out


_SENT_SPLIT = re.compile(r"(?<=[.!?。！？])\s*")


def _topic_groups(data_dir: Path) -> dict[str, list[list[str]]]:
    """Per language, groups of distinct sentences about one subject (train/dev splits only).

    English: an SNLI dev premise with its hypotheses (one scene); Italian: the sentences of an RTE3-ITA dev text
    plus its hypothesis; Chinese: an OCNLI train premise with its hypotheses.
    """
    def grouped(rows: Iterable[tuple[str, str, str]]) -> list[list[str]]:
        by: dict[str, list[str]] = {}
        for key, prem, hyp in rows:
            g = by.setdefault(key, [prem])
            if hyp.strip() and hyp not in g:
                g.append(hyp)
        return [g for g in by.values() if len(g) >= 2]

    it = []
    for t, h, _ in _rte3(data_dir, "dev"):
        sents = [x.strip() for x in _SENT_SPLIT.split(t) if x.strip()]
        g = list(dict.fromkeys([*sents, h.strip()]))
        if len(g) >= 2:
            it.append(g)
    return {
        "en": grouped((p, p, h) for p, h, _ in _snli(data_dir, "dev")),
        "it": it,
        "zh": grouped((g or p, p, h) for p, h, _, g in _ocnli(data_dir, "train")),
    }


@dataclass(frozen=True, slots=True)
class _DriftCase:
    lang: str
    anchor: str
    changed: str
    share: float  # share of the anchor's sentences replaced by another subject's


def _drift_cases(data_dir: Path, limit: int | None, seed: int) -> list[_DriftCase]:
    """Texts of n (2 or 4) sentences vs the same text with 1/4, 1/2 or 3/4 of them from another subject."""
    rng = random.Random(seed + 2)
    out: list[_DriftCase] = []
    for lang, groups in sorted(_topic_groups(data_dir).items()):
        for g in _sample(groups, limit, rng):
            other = groups[rng.randrange(len(groups))]
            if other is g:
                continue
            n = min(len(g), len(other), 4) // 2 * 2
            anchor = " ".join(g[:n])
            for k in range(1, n):
                out.append(_DriftCase(lang, anchor, " ".join(g[: n - k] + other[:k]), k / n))
    return out


# ----------------------------------------------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------------------------------------------


def threshold_for_recall(related_scores: NDArray[np.floating[Any]] | Sequence[float], recall_target: float) -> float:
    """The largest threshold ``t`` such that the share of ``related_scores >= t`` is at least ``recall_target``.

    Args:
        related_scores: cosine similarities of pairs that must pass.
        recall_target: required recall in (0, 1].

    Returns:
        The threshold (one of the scores), rounded down to 4 decimals so the boundary pair still passes.

    Raises:
        InvalidInputError: empty scores or a target outside (0, 1].

    Example:
        >>> threshold_for_recall([0.1, 0.5, 0.6, 0.9], 0.75)
        0.5
    """
    if not 0.0 < recall_target <= 1.0:
        raise InvalidInputError(f"The 'recall_target' parameter must be a float in (0, 1]. Got {recall_target!r} instead.")
    s = np.sort(np.asarray(related_scores, dtype=np.float64))[::-1]
    if s.size == 0:
        raise InvalidInputError("threshold_for_recall needs at least one related score. Got 0 instead.")
    k = int(np.ceil(recall_target * s.size - 1e-9))  # need at least k pairs at or above t
    t = float(s[max(k, 1) - 1])
    return float(np.floor(t * 10_000) / 10_000)


def _share(mask: NDArray[np.bool_]) -> float | None:
    return round(float(mask.mean()), 4) if mask.size else None


def _cosines(embedder: Embedder, a: Sequence[str], b: Sequence[str], *, query_b: bool = False) -> NDArray[np.float32]:
    """Row-wise cosines of ``a`` (passage mode) and ``b`` (query mode when ``query_b``)."""
    if not a:
        return np.zeros(0, dtype=np.float32)
    ea = embedder.embed(list(a), mode="passage")
    eb = embedder.embed(list(b), mode="query" if query_b else "passage")
    return np.einsum("ij,ij->i", ea, eb).astype(np.float32)


def _pair_cosines(embedder: Embedder, pairs: Sequence[LabelledPair], *, query_b: bool = False) -> NDArray[np.float32]:
    return _cosines(embedder, [p.a for p in pairs], [p.b for p in pairs], query_b=query_b)


def _candidate_thresholds(
    pairs: Sequence[LabelledPair], cos: NDArray[np.float32], recall_target: float
) -> tuple[float, dict[str, LanguageCalibration]]:
    """The candidate threshold (lowest per-language one reaching ``recall_target``) and per-language figures."""
    kinds = np.array([p.kind for p in pairs])
    langs = np.array([p.lang for p in pairs])
    per_lang_t: dict[str, float] = {}
    for lang in sorted(set(langs.tolist())):
        rel = cos[(langs == lang) & (kinds == "related")]
        if rel.size:
            per_lang_t[lang] = threshold_for_recall(rel, recall_target)
    candidate = min(per_lang_t.values())
    by_language = {}
    for lang, t in per_lang_t.items():
        rel = cos[(langs == lang) & (kinds == "related")]
        unr = cos[(langs == lang) & (kinds == "unrelated")]
        by_language[lang] = LanguageCalibration(
            lang=lang, n_related=int(rel.size), n_unrelated=int(unr.size), threshold=t,
            related_median=round(float(np.median(rel)), 4),
            unrelated_median=round(float(np.median(unr)), 4) if unr.size else float("nan"),
            recall_at_candidate=round(float((rel >= candidate).mean()), 4),
            unrelated_pass_rate_at_candidate=round(float((unr >= candidate).mean()), 4) if unr.size else 0.0,
            sources=sorted({p.source for p in pairs if p.lang == lang}),
        )
    return candidate, by_language


def _chat_search_fields(embedder: Embedder, chat: Sequence[LabelledPair], target: float) -> dict[str, float]:
    """The chat-search threshold (lowest per-language one reaching ``target`` recall) and its rates."""
    ccos = _pair_cosines(embedder, chat, query_b=True)
    ckinds = np.array([p.kind for p in chat])
    clangs = np.array([p.lang for p in chat])
    chat_t = min(threshold_for_recall(ccos[(clangs == lg) & (ckinds == "related")], target)
                 for lg in sorted(set(clangs.tolist())))
    return {
        "chat_search": chat_t,
        "chat_search_recall": round(float((ccos[ckinds == "related"] >= chat_t).mean()), 4),
        "chat_search_unrelated_pass_rate": round(float((ccos[ckinds == "unrelated"] >= chat_t).mean()), 4),
    }


def _title_drift_fields(
    embedder: Embedder, d: Path, limit: int | None, seed: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """The title-drift threshold (median cosine at half the words changed) and its keep/change rates."""
    drift = _drift_cases(d, limit, seed)
    say(f"{len(drift)} title-drift cases")
    dcos = _cosines(embedder, [c.anchor for c in drift], [c.changed for c in drift])
    dshare = np.array([c.share for c in drift])
    dlang = np.array([c.lang for c in drift])
    drift_by_lang = {lg: round(float(np.median(dcos[(dlang == lg) & (dshare == 0.5)])), 4)
                     for lg in sorted(set(dlang.tolist()))}
    title_drift = round(float(np.median(list(drift_by_lang.values()))), 4)
    return {
        "title_drift": title_drift,
        "title_drift_by_language": drift_by_lang,
        "title_drift_keep_rate": _share(dcos[dshare == 0.25] >= title_drift),
        "title_drift_change_rate": _share(dcos[dshare == 0.75] < title_drift),
    }


def calibrate_embedder(
    embedder: Embedder,
    *,
    data_dir: str | Path | None = None,
    recall_target: float = 0.95,
    chat_recall_target: float = 0.90,
    limit: int | None = 400,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> EmbedderCalibration:
    """Measure ``embedder``'s candidate and chat-search thresholds on train/dev pairs (see the module doc).

    Args:
        embedder: any :class:`~memlab.protocols.Embedder` (use an unshared instance so speed is honest).
        data_dir: the ``datasets/`` folder.
        recall_target: required recall of contradiction pairs for the candidate threshold.
        chat_recall_target: required recall of same-topic pairs for the chat-search threshold.
        limit: max pairs per (source, kind), for speed; ``None`` = all.
        seed: sampling seed.
        progress: optional callback for progress messages.

    Returns:
        An :class:`EmbedderCalibration` (save it with :func:`save_calibration`).

    Raises:
        InvalidInputError: a target outside (0, 1].
        NotFoundError / DatasetFormatError: missing or malformed dataset files.
    """
    for name, v in (("recall_target", recall_target), ("chat_recall_target", chat_recall_target)):
        if not 0.0 < v <= 1.0:
            raise InvalidInputError(f"The '{name}' parameter of calibrate_embedder must be a float in (0, 1]. "
                                    f"Got {v!r} instead.")
    say = progress or (lambda _msg: None)
    d = Path(data_dir) if data_dir is not None else default_data_dir()
    pairs = calibration_pairs(d, limit=limit, seed=seed)
    chat = _chat_pairs(d, limit, seed)
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    say(f"{len(pairs)} candidate pairs, {len(chat)} chat pairs, {len(texts)} distinct texts")
    t0 = time.perf_counter()
    embedder.embed(texts, mode="passage")  # warms the cache and times the model
    elapsed = time.perf_counter() - t0
    speed = len(texts) / elapsed if elapsed > 0 else float("inf")
    say(f"encoded {len(texts)} texts in {elapsed:.1f}s ({speed:.1f}/s)")
    cos = _pair_cosines(embedder, pairs)
    candidate, by_language = _candidate_thresholds(pairs, cos, recall_target)
    kinds = np.array([p.kind for p in pairs])
    rel_all, unr_all = cos[kinds == "related"], cos[kinds == "unrelated"]
    chat_fields = _chat_search_fields(embedder, chat, chat_recall_target)
    drift_fields = _title_drift_fields(embedder, d, limit, seed, say)
    params = embedder.get_params() if hasattr(embedder, "get_params") else {"name": embedder.name}
    return EmbedderCalibration(
        embedder=embedder.name, params=dict(params), recall_target=recall_target, candidate=candidate,
        candidate_recall=round(float((rel_all >= candidate).mean()), 4),
        candidate_unrelated_pass_rate=round(float((unr_all >= candidate).mean()), 4),
        by_language=by_language, chat_recall_target=chat_recall_target, **chat_fields, **drift_fields,
        sentences_per_s=round(speed, 1), n_texts_timed=len(texts), seed=seed, limit=limit,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        command=f"memlab calibrate-embedder {embedder.name} --limit {limit} --seed {seed} "
                f"--recall-target {recall_target}",
    )


def fit_center(
    embedder: Any, *, data_dir: str | Path | None = None, limit: int | None = 400, seed: int = 0,
    out: str | Path | None = None,
) -> Path:
    """Fit and write the per-mode mean vectors of an embedder that supports centring (:class:`E5Embedder`).

    The means are averaged over the distinct texts of :func:`calibration_pairs` (train/dev splits of the English,
    Italian and Chinese sets), each language weighted equally.

    Args:
        embedder: an object with ``encode_raw(texts, mode)`` and ``center_file`` (an ``E5Embedder``).
        data_dir: the ``datasets/`` folder.
        limit: max pairs per (source, kind).
        seed: sampling seed.
        out: where to write (default: ``embedder.center_file``).

    Returns:
        The path written.

    Raises:
        InvalidInputError: the embedder cannot be centred.
    """
    if not hasattr(embedder, "encode_raw"):
        raise InvalidInputError(f"The 'embedder' parameter of fit_center must support centring (E5Embedder). "
                                f"Got {type(embedder).__name__} instead.")
    pairs = calibration_pairs(data_dir, limit=limit, seed=seed)
    by_lang: dict[str, list[str]] = {}
    for p in pairs:
        by_lang.setdefault(p.lang, []).extend([p.a, p.b])
    means: dict[str, list[float]] = {}
    for mode in ("passage", "query"):
        per_lang = []
        for lang in sorted(by_lang):
            texts = sorted(set(by_lang[lang]))
            vecs = np.concatenate([embedder.encode_raw(texts[i : i + 64], mode) for i in range(0, len(texts), 64)])
            per_lang.append(vecs.mean(axis=0))
        means[mode] = [round(float(x), 7) for x in np.mean(per_lang, axis=0)]
    path = Path(out) if out is not None else Path(embedder.center_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"embedder": getattr(embedder, "name", "?"), "languages": sorted(by_lang),
               "n_texts": {k: len(set(v)) for k, v in sorted(by_lang.items())}, "seed": seed, "limit": limit,
               "created_at": datetime.now(UTC).isoformat(timespec="seconds"), **means}
    path.write_text(json.dumps(payload) + "\n", encoding="utf-8")
    if hasattr(embedder, "_means"):
        embedder._means = None  # reload on next use
    return path


# ----------------------------------------------------------------------------------------------------------------
# shipped files
# ----------------------------------------------------------------------------------------------------------------


def save_calibration(cal: EmbedderCalibration, path: str | Path) -> Path:
    """Write ``cal`` as JSON to ``path`` (never into the installed package); returns the path.

    To ship a new calibration, copy the file to ``memlab/embedding/calibration/<name>.json`` in a source checkout.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(cal.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return p


# ----------------------------------------------------------------------------------------------------------------
# candidate-stage benchmark (held-out splits)
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CandidateCase:
    """One contradiction to find: ``gold`` memories must surface as candidates of ``new``."""

    new: str
    gold: tuple[str, ...]
    group: str


def candidate_cases(
    dataset: str, data_dir: str | Path | None = None, *, limit: int | None = 300, seed: int = 0
) -> tuple[list[CandidateCase], list[str], str]:
    """Contradiction cases and the distractor pool of one held-out dataset.

    Args:
        dataset: one of ``snli``, ``decode``, ``gu_dnli``, ``rte3_ita``, ``ocnli``, ``cdconv``, ``kvpi``.
        data_dir: the ``datasets/`` folder.
        limit: max cases (seeded sample).
        seed: sampling seed.

    Returns:
        ``(cases, pool, lang)``: pool holds other statements of the same split (distractors).

    Raises:
        UnknownComponentError: unknown dataset.
    """
    from memlab.errors import UnknownComponentError

    d = Path(data_dir) if data_dir is not None else default_data_dir()
    rng = random.Random(seed)
    cases: list[CandidateCase] = []
    pool: list[str]
    if dataset == "snli":
        rows = _snli(d, "test")
        cases = [CandidateCase(h, (p,), p) for p, h, y in rows if y == "contradiction"]
        pool, lang = sorted({p for p, _, _ in rows}), "en"
    elif dataset == "gu_dnli":
        rows = _gu_dnli(d, "test")
        cases = [CandidateCase(h, (p,), p) for p, h, y in rows if y == "contradiction"]
        pool, lang = sorted({h for _, h, _ in rows}), "en"
    elif dataset == "decode":
        dialogues = _jsonl(_file(d, "decode", "human-bot.jsonl"))
        pool = []
        for dia in dialogues:
            turns = dia["turns"]
            pool.extend(t["text"] for t in turns)
            if not dia.get("is_contradiction"):
                continue
            last = turns[-1]
            earlier = tuple(t["text"] for t in turns[:-1] if t["agent_id"] == last["agent_id"])
            if earlier:
                cases.append(CandidateCase(last["text"], earlier, str(dia.get("record_id", dia.get("conversation_id")))))
        lang = "en"
    elif dataset == "rte3_ita":
        rows3 = _rte3(d, "test")
        cases = [CandidateCase(h, (t,), t) for t, h, y in rows3 if y == "not_entailed"]
        pool, lang = sorted({t for t, _, _ in rows3}), "it"
    elif dataset == "ocnli":
        rowso = _ocnli(d, "dev")
        cases = [CandidateCase(h, (p,), g) for p, h, y, g in rowso if y == "contradiction"]
        pool, lang = sorted({p for p, *_ in rowso}), "zh"
    elif dataset == "cdconv":
        rowsc = _cdconv(d, "dev")
        cases = [CandidateCase(r["b2"], (r["b1"],), r["b1"]) for r in rowsc if int(r["label"]) == 3]
        pool, lang = sorted({r["b1"] for r in rowsc}), "zh"
    elif dataset == "kvpi":
        rowsk = _kvpi(d)
        cases = [CandidateCase(resp, (mem[dom],), mem[dom]) for mem, resp, y, dom in rowsk
                 if y == "contradiction" and dom in mem]
        pool = sorted({m for mem, *_ in rowsk for m in mem.values()} | {r for _, r, _, _ in rowsk})
        lang = "zh"
    else:
        raise UnknownComponentError("candidate-bench dataset", dataset,
                                    ["snli", "gu_dnli", "decode", "rte3_ita", "ocnli", "cdconv", "kvpi"])
    return _sample(cases, limit, rng), pool, lang


class CandidateBenchRow(BaseModel):
    """Candidate-stage figures of one embedder on one dataset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str
    dataset: str
    lang: str
    n_cases: int
    """Contradictions (synthetic users)."""
    threshold: float
    """Candidate threshold used (the embedder's calibrated one unless overridden)."""
    recall_at_10: float
    """Share of cases whose earlier statement is in the top-10 of the user's memories (no threshold)."""
    recall_at_10_thr: float
    """Share of cases whose earlier statement is in the top-10 AND at or above the threshold."""
    unrelated_pass_rate: float
    """Share of (new statement, distractor) pairs at or above the threshold."""
    mean_candidates: float
    """Mean number of memories passing (top-10 AND threshold) per new statement: the judge's load."""


class CandidateBench(BaseModel):
    """Result of :func:`bench_candidates`: rows plus speed per embedder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: list[CandidateBenchRow]
    speed: dict[str, float]
    """Sentences/s per embedder (batched, uncached texts of this run)."""
    n_distractors: int
    k: int
    seed: int

    def to_markdown(self) -> str:
        """The table, 3 decimals, one row per (dataset, embedder)."""
        out = ["| dataset | lang | embedder | threshold | recall@10 | recall@10 ≥ thr | unrelated pass | "
               "candidates/query | n |", "|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            out.append(f"| {r.dataset} | {r.lang} | {r.embedder} | {r.threshold:.3f} | {r.recall_at_10:.3f} | "
                       f"{r.recall_at_10_thr:.3f} | {r.unrelated_pass_rate:.3f} | {r.mean_candidates:.2f} | "
                       f"{r.n_cases} |")
        out.append("")
        out.append("speed (sentences/s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.speed.items()))
        return "\n".join(out)

    def to_pandas(self) -> Any:
        """Rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([r.model_dump() for r in self.rows])

    def write(self, out_dir: str | Path, *, command: str | None = None) -> Path:
        """Write the ``bench-embedders`` eval run (and ``bench.md``) into ``out_dir``; returns it.

        Metrics: ``<dataset>.<embedder>.<figure>`` per row, ``mean.<embedder>.<figure>`` over the datasets and
        ``speed.<embedder>`` (sentences/s); one example per row. The headline is the first embedder's mean
        ``recall_at_10_thr``.
        """
        from memlab.lab.bench.runs import metric_key, write_bench_run

        figures = ("recall_at_10", "recall_at_10_thr", "unrelated_pass_rate", "mean_candidates", "threshold")
        metrics: dict[str, Any] = {}
        for r in self.rows:
            metrics.setdefault(metric_key(r.dataset), {})[metric_key(r.embedder)] = {
                **{f: getattr(r, f) for f in figures}, "n_cases": r.n_cases}
        names = list(dict.fromkeys(r.embedder for r in self.rows))
        metrics["mean"] = {
            metric_key(e): {f: float(np.mean([getattr(r, f) for r in self.rows if r.embedder == e])) for f in figures}
            for e in names
        }
        metrics["speed"] = {metric_key(e): v for e, v in self.speed.items()}
        examples = [{"id": f"{r.dataset}/{r.embedder}", "group": r.embedder, "meta": r.model_dump()}
                    for r in self.rows]
        params = {"embedders": names, "datasets": list(dict.fromkeys(r.dataset for r in self.rows)),
                  "n_distractors": self.n_distractors, "k": self.k}
        write_bench_run(out_dir, "embedders", params=params, seed=self.seed, n=sum(r.n_cases for r in self.rows),
                        metrics=metrics,
                        primary_metric=f"mean.{metric_key(names[0])}.recall_at_10_thr" if names else "speed",
                        examples=examples, markdown=self.to_markdown(), command=command)
        return Path(out_dir)


def _synthetic_users(
    cases: list[CandidateCase], pool: list[str], n_distractors: int, seed: int
) -> list[tuple[CandidateCase, list[str]]]:
    """One synthetic user per case: the case and its ``n_distractors`` seeded distractor memories."""
    rng = np.random.default_rng(seed)
    # distractors come from a fixed sub-pool (10x the per-user count) so the texts to embed stay bounded
    if len(pool) > 10 * n_distractors:
        pool = [pool[i] for i in sorted(rng.choice(len(pool), size=10 * n_distractors, replace=False))]
    users = []
    for c in cases:
        gold = set(c.gold)
        cand = [pool[i] for i in rng.choice(len(pool), size=min(len(pool), n_distractors * 2), replace=False)]
        distract = [t for t in cand if t not in gold and t != c.new][:n_distractors]
        users.append((c, distract))
    return users


def _candidate_row(
    embedder: str, dataset: str, lang: str, users: list[tuple[CandidateCase, list[str]]], texts: list[str],
    vecs: NDArray[np.float32], thr: float, k: int,
) -> CandidateBenchRow:
    """Score each user's memories against its new statement (``vecs`` are the embeddings of ``texts``)."""
    pos = {t: i for i, t in enumerate(texts)}
    hit = hit_thr = 0
    passed_unrel = total_unrel = 0
    n_cand = 0
    for c, dis in users:
        mem = list(c.gold) + dis
        scores = vecs[[pos[t] for t in mem]] @ vecs[pos[c.new]]
        order = np.argsort(-scores, kind="stable")[:k]
        top = set(order.tolist())
        gold_idx = range(len(c.gold))
        hit += any(i in top for i in gold_idx)
        hit_thr += any(i in top and scores[i] >= thr for i in gold_idx)
        unrel = scores[len(c.gold):]
        passed_unrel += int((unrel >= thr).sum())
        total_unrel += int(unrel.size)
        n_cand += int(sum(1 for i in top if scores[i] >= thr))
    n = max(len(users), 1)
    return CandidateBenchRow(
        embedder=embedder, dataset=dataset, lang=lang, n_cases=len(users), threshold=thr,
        recall_at_10=round(hit / n, 4), recall_at_10_thr=round(hit_thr / n, 4),
        unrelated_pass_rate=round(passed_unrel / max(total_unrel, 1), 4),
        mean_candidates=round(n_cand / n, 3))


def bench_candidates(
    embedders: Sequence[Embedder],
    datasets: Sequence[str] = ("snli", "decode", "gu_dnli", "rte3_ita", "ocnli", "cdconv", "kvpi"),
    *,
    data_dir: str | Path | None = None,
    limit: int | None = 200,
    n_distractors: int = 30,
    k: int = 10,
    thresholds: dict[str, float] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> CandidateBench:
    """Candidate-stage recall/noise of each embedder on held-out contradictions (see the module doc).

    Each case is one synthetic user holding the gold earlier statement(s) and ``n_distractors`` other statements
    of the same split; the new statement is compared passage-to-passage, as the integrity check does.

    Args:
        embedders: embedders to compare (each uses ``thresholds.candidate`` unless ``thresholds`` overrides).
        datasets: held-out sets (see :func:`candidate_cases`).
        data_dir: the ``datasets/`` folder.
        limit: max cases per dataset.
        n_distractors: distractor memories per synthetic user.
        k: top-k of the candidate stage.
        thresholds: per-embedder-name override of the candidate threshold.
        seed: sampling seed.
        progress: optional callback for progress messages.

    Returns:
        A :class:`CandidateBench`.
    """
    say = progress or (lambda _msg: None)
    rows: list[CandidateBenchRow] = []
    n_texts: dict[str, int] = {e.name: 0 for e in embedders}
    seconds: dict[str, float] = {e.name: 0.0 for e in embedders}
    for ds in datasets:
        cases, pool, lang = candidate_cases(ds, data_dir, limit=limit, seed=seed)
        users = _synthetic_users(cases, pool, n_distractors, seed)
        texts = sorted({t for c, dis in users for t in (c.new, *c.gold, *dis)})
        for emb in embedders:
            t0 = time.perf_counter()
            vecs = emb.embed(texts, mode="passage")
            seconds[emb.name] += time.perf_counter() - t0
            n_texts[emb.name] += len(texts)
            th_obj = getattr(emb, "thresholds", None)
            thr = (thresholds or {}).get(
                emb.name, th_obj.candidate_for(lang) if isinstance(th_obj, EmbedderThresholds) else 0.7)
            row = _candidate_row(emb.name, ds, lang, users, texts, vecs, float(thr), k)
            rows.append(row)
            say(f"{ds} {emb.name}: recall@{k}>=thr {row.recall_at_10_thr:.3f}")
    speed = {name: round(n_texts[name] / seconds[name], 1) if seconds[name] > 0 else float("nan") for name in n_texts}
    return CandidateBench(rows=rows, speed=speed, n_distractors=n_distractors, k=k, seed=seed)
