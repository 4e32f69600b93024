"""``memlab eval extraction``: fact extraction scored against LoCoMo's per-session observations.

Units and labels
    One unit = (conversation, session, speaker). Predictions: the extractor run over every turn of that
    speaker in that session. Gold: the session's ``observation`` facts of that speaker (silver labels:
    model-generated in LoCoMo, so the figures measure agreement with them, not truth).

Rendering
    LoCoMo observations are third-person ("Caroline attended ..."); memlab's facts are first-person ("I went
    ...") or templated ("The user lives in ..."). Before matching, every prediction (of every system,
    baseline included) is rendered in the third person with the speaker's name by
    :func:`to_third_person` (I/me/my/I'm/I've ... and "The user" -> the name).

Semantic match rule (documented, fixed before looking at results)
    Embed predictions and gold with the packaged MiniLM; cosine matrix per unit; one-to-one assignment
    maximising total cosine (Hungarian, ``scipy.optimize.linear_sum_assignment``); an assigned pair counts as
    a true positive when its cosine >= ``threshold`` (default 0.6). TP/FP/FN are summed over units;
    precision = TP / (TP + FP), recall = TP / (TP + FN) (zero_division 0.0). Figures at 0.5 and 0.7 are
    reported too (sensitivity).

Second view: ROUGE-L (ragas non-LLM metric via ``memlab.eval.text_metrics``): per gold observation, the
best ROUGE-L over the unit's predictions (mean = ``rouge_l.recall``) and per prediction the best over gold
(``rouge_l.precision``).

Slot value accuracy: for keyed predictions matched to a gold observation, whether the gold text states
the same value (case-insensitive substring; numbers by digits). Gold has no slots of its own, so this
counts only keyed predictions that found a partner; ``n`` is reported beside it.

Baseline: "every sentence is a fact" (:class:`SentenceBaseline`), scored by the same rule.

Splits: LoCoMo has no official split and only 8 conversations here. ``dev`` = the first two conversations
in file order (used while writing the rules), ``test`` = the other six (default), ``all`` = every one.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlab._validation import strip_control
from memlab.datasets.locomo import locomo_split
from memlab.errors import InvalidInputError
from memlab.eval.runs import EvalRun, Example
from memlab.eval.task import EvalTask, Scored, run_task
from memlab.extraction import ExtractionResult, Extractor, Fact, RuleExtractor, split_sentences

__all__ = [
    "ExtractionTask",
    "SentenceBaseline",
    "evaluate_extraction",
    "match_units",
    "run_extraction_task",
    "to_third_person",
]

log = logging.getLogger(__name__)

SPLITS = ("dev", "test", "all")
THRESHOLDS = (0.5, 0.6, 0.7)


class SentenceBaseline:
    """Baseline extractor: every sentence of the message is a fact (confidence 0.5)."""

    name = "every-sentence"

    def extract(
        self, message: str, *, lang: str | None = None, ref_time: Any = None, topic: str | None = None,
        known: Sequence[str] = (),
    ) -> ExtractionResult:
        """Each sentence becomes one fact."""
        facts = tuple(
            Fact(content=s, confidence=0.5, topic=topic, evidence=s, rule="sentence")
            for s in split_sentences(strip_control(message))
            if any(c.isalpha() for c in s)
        )
        return ExtractionResult(facts=facts, extractor=self.name)

    def get_params(self) -> dict[str, Any]:
        """JSON-able description."""
        return {"name": self.name}


_PRON = [
    (re.compile(r"\bthe user's\b", re.I), "{n}'s"),
    (re.compile(r"\bthe user\b", re.I), "{n}"),
    (re.compile(r"\bI'm\b|\bI am\b|\bIm\b", re.I), "{n} is"),
    (re.compile(r"\bI've\b", re.I), "{n} has"),
    (re.compile(r"\bI'd\b", re.I), "{n} would"),
    (re.compile(r"\bI'll\b", re.I), "{n} will"),
    (re.compile(r"\bI was\b"), "{n} was"),
    (re.compile(r"\bI have\b"), "{n} has"),
    (re.compile(r"\bI\b"), "{n}"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmy\b", re.I), "{n}'s"),
    (re.compile(r"\bmine\b", re.I), "{n}'s"),
    (re.compile(r"\bme\b", re.I), "{n}"),
]


def to_third_person(text: str, name: str) -> str:
    """Render an English first-person (or "The user ...") fact in the third person with ``name``.

    Example:
        >>> to_third_person("I'm swamped with my kids and I love it", "Melanie")
        "Melanie is swamped with Melanie's kids and Melanie love it"
        >>> to_third_person("The user lives in Rome", "Anna")
        'Anna lives in Rome'
    """
    out = text
    for rx, rep in _PRON:
        out = rx.sub(rep.format(n=name), out)
    return out


@dataclass(frozen=True, slots=True)
class _Unit:
    uid: str
    speaker: str
    turns: tuple[str, ...]
    gold: tuple[str, ...]


def _units(conversations: Sequence[Any]) -> list[_Unit]:
    out: list[_Unit] = []
    for conv in conversations:
        for sess in conv.sessions:
            for speaker in (conv.speaker_a, conv.speaker_b):
                turns = tuple(
                    t.text for t in sess.turns if t.speaker == speaker and t.text and t.text.strip()
                )
                gold = tuple(o.text for o in sess.observations if o.speaker == speaker)
                if turns or gold:
                    out.append(_Unit(f"{conv.sample_id}/s{sess.index}/{speaker}", speaker, turns, gold))
    return out


def match_units(
    sims: Sequence[np.ndarray], threshold: float
) -> tuple[int, int, int, list[list[tuple[int, int, float]]]]:
    """One-to-one matching per unit (Hungarian on cosine). Returns ``(tp, fp, fn, pairs per unit)``.

    ``sims[i]`` is the ``(n_pred, n_gold)`` cosine matrix of unit ``i``; a pair is a match when its cosine
    is >= ``threshold``.

    Example:
        >>> tp, fp, fn, _ = match_units([np.array([[0.9, 0.1], [0.8, 0.7]])], 0.6)
        >>> tp, fp, fn
        (2, 0, 0)
    """
    from scipy.optimize import linear_sum_assignment

    tp = fp = fn = 0
    pairs_all: list[list[tuple[int, int, float]]] = []
    for s in sims:
        n_p, n_g = s.shape
        pairs: list[tuple[int, int, float]] = []
        if n_p and n_g:
            rows, cols = linear_sum_assignment(-s)
            pairs = [
                (int(r), int(c), float(s[r, c]))
                for r, c in zip(rows, cols, strict=True)
                if s[r, c] >= threshold
            ]
        tp += len(pairs)
        fp += n_p - len(pairs)
        fn += n_g - len(pairs)
        pairs_all.append(pairs)
    return tp, fp, fn, pairs_all


def _prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "tp": tp, "fp": fp, "fn": fn}


def _value_in(value: str, gold: str) -> bool:
    v = value.casefold().strip()
    g = gold.casefold()
    if not v:
        return False
    if re.fullmatch(r"[\d.,-]+", v):
        digits = re.findall(r"\d+", v)
        return bool(digits) and all(d in g for d in digits)
    return v in g


def _rouge(pairs: list[tuple[str, str]]) -> list[float] | None:
    try:
        from memlab.eval import text_metrics
    except ImportError:
        return None
    fn = getattr(text_metrics, "rouge_l_batch", None)
    if fn is not None:
        return [float(x) for x in fn([g for g, _ in pairs], [p for _, p in pairs])]
    return [float(text_metrics.rouge_l(g, p)) for g, p in pairs]


class ExtractionTask(EvalTask):
    """Score an extractor on LoCoMo observations (see the module docstring for every rule).

    Args:
        extractor: an :class:`~memlab.extraction.Extractor`, or ``"rules"``.
        split: ``dev`` (2 conversations), ``test`` (6) or ``all``.
        data_dir: LoCoMo directory (default: the repo's ``datasets/locomo``).
        threshold: cosine for a semantic match (primary figures).
        embedder: embedder used for matching.
        baseline: also score the every-sentence baseline.
        rouge: also compute ROUGE-L (ragas).

    Raises:
        InvalidInputError: bad split, threshold or extractor.
    """

    name = "extraction"
    primary_metric = "extractor.f1"

    def __init__(
        self,
        extractor: Extractor | str = "rules",
        *,
        split: str = "test",
        data_dir: str | Path | None = None,
        threshold: float = 0.6,
        embedder: str = "minilm",
        baseline: bool = True,
        rouge: bool = True,
    ) -> None:
        if split not in SPLITS:
            raise InvalidInputError(
                f"The 'split' parameter of evaluate_extraction must be one of {list(SPLITS)}. Got {split!r} instead."
            )
        if not isinstance(threshold, int | float) or not -1.0 <= float(threshold) <= 1.0:
            raise InvalidInputError(
                f"The 'threshold' parameter of evaluate_extraction must be a float in [-1, 1]. Got {threshold!r} instead."
            )
        ex = RuleExtractor() if extractor == "rules" else extractor
        if isinstance(ex, str):
            raise InvalidInputError(
                f"The 'extractor' parameter of evaluate_extraction must be 'rules' or an Extractor. Got {ex!r} instead."
            )
        self.extractor: Extractor = ex
        self.split, self.data_dir, self.threshold = split, data_dir, float(threshold)
        self.embedder, self.baseline, self.rouge = embedder, baseline, rouge
        self._units: list[_Unit] = []

    def samples(self, limit: int | None, seed: int) -> list[_Unit]:
        from memlab.datasets import load_locomo

        convs = load_locomo(data_dir=self.data_dir)
        convs = locomo_split(convs, self.split, owner="extraction")
        units = _units(convs)
        if limit is not None:
            sessions = sorted({u.uid.rsplit("/", 1)[0] for u in units})
            rng = np.random.default_rng(seed)
            keep = set(rng.choice(sessions, size=min(limit, len(sessions)), replace=False).tolist())
            units = [u for u in units if u.uid.rsplit("/", 1)[0] in keep]
        self._units = units
        return units

    def solve(
        self, samples: Sequence[_Unit], *, progress: bool
    ) -> dict[str, tuple[list[list[Fact]], list[str | None], float]]:
        """Per system: the facts of each unit, its error (or ``None``) and the seconds spent extracting."""
        from tqdm.auto import tqdm

        systems: list[tuple[str, Extractor]] = [("extractor", self.extractor)]
        if self.baseline:
            systems.append(("baseline", SentenceBaseline()))
        out = {}
        for sys_name, system in systems:
            t0 = time.perf_counter()
            preds: list[list[Fact]] = []
            errors: list[str | None] = []
            for u in tqdm(samples, desc=f"extract ({sys_name})", disable=not progress):
                facts: list[Fact] = []
                err = None
                for turn in u.turns:
                    try:
                        facts += list(system.extract(turn).facts)
                    except Exception as exc:  # noqa: BLE001 - a failed unit is recorded, never dropped
                        err = f"{type(exc).__name__}: {exc}"
                preds.append(facts)
                errors.append(err)
            out[sys_name] = (preds, errors, time.perf_counter() - t0)
        return out

    def score(self, samples: Sequence[_Unit], solved: Any, *, seed: int, seconds: float) -> Scored:
        from memlab.embedding import load_embedder

        emb = load_embedder(self.embedder)
        units = list(samples)
        gold_vecs = (
            emb.embed([g for u in units for g in u.gold]) if units else np.zeros((0, emb.dim), np.float32)
        )
        gold_off = np.cumsum([0] + [len(u.gold) for u in units])
        metrics: dict[str, Any] = {}
        examples: list[Example] = []
        for sys_name, (preds, errors, extract_s) in solved.items():
            texts = [
                [to_third_person(f.content, u.speaker) for f in fs]
                for u, fs in zip(units, preds, strict=True)
            ]
            flat = [t for ts in texts for t in ts]
            pvecs = emb.embed(flat) if flat else np.zeros((0, emb.dim), np.float32)
            p_off = np.cumsum([0] + [len(ts) for ts in texts])
            sims = [
                pvecs[p_off[i] : p_off[i + 1]] @ gold_vecs[gold_off[i] : gold_off[i + 1]].T
                for i in range(len(units))
            ]
            entry, pairs_primary = self._system_figures(units, preds, errors, texts, sims, extract_s)
            metrics[sys_name] = entry
            if sys_name == "extractor":
                examples = _extraction_examples(
                    units, preds, errors, texts, pairs_primary, self.extractor.name
                )
        notes = [
            "Gold = LoCoMo session observations (model-generated silver labels).",
            f"Match: Hungarian one-to-one on MiniLM cosine, TP when cosine >= {self.threshold}; predictions rendered "
            "third-person with the speaker's name.",
            f"Split {self.split!r}: dev = first 2 conversations, test = the other 6.",
            f"Total time {seconds:.1f} s.",
        ]
        if self.rouge and metrics["extractor"].get("rouge_l") is None:
            notes.append("ROUGE-L not computed: memlab.eval.text_metrics is not available.")
        return Scored(metrics=metrics, examples=examples, notes=notes, n=len(units))

    def _system_figures(
        self,
        units: list[_Unit],
        preds: list[list[Fact]],
        errors: list[str | None],
        texts: list[list[str]],
        sims: list[np.ndarray],
        extract_s: float,
    ) -> tuple[dict[str, Any], list[list[tuple[int, int, float]]]]:
        """P/R/F1 at every threshold, slot value accuracy, speed, coverage and ROUGE-L of one system."""
        by_thr: dict[str, Any] = {}
        pairs_primary: list[list[tuple[int, int, float]]] = []
        for thr in sorted({*THRESHOLDS, self.threshold}):
            tp, fp, fn, pairs = match_units(sims, thr)
            by_thr[f"{thr:.2f}"] = _prf(tp, fp, fn)
            if abs(thr - self.threshold) < 1e-9:
                pairs_primary = pairs
        # slot value accuracy over keyed predictions matched to a gold observation
        n_slot = ok_slot = 0
        for i, (u, fs) in enumerate(zip(units, preds, strict=True)):
            for r, c, _s in pairs_primary[i]:
                if fs[r].key and fs[r].value:
                    n_slot += 1
                    ok_slot += _value_in(fs[r].value, u.gold[c])
        entry: dict[str, Any] = {
            **by_thr[f"{self.threshold:.2f}"],
            "by_threshold": by_thr,
            "n_pred": int(sum(len(fs) for fs in preds)),
            "n_keyed": int(sum(1 for fs in preds for f in fs if f.key)),
            "slot_value_accuracy": (ok_slot / n_slot) if n_slot else None,
            "slot_value_n": n_slot,
            "extract_seconds": extract_s,
            "turns_per_second": (sum(len(u.turns) for u in units) / extract_s) if extract_s > 0 else None,
            "coverage": 1.0 - (sum(e is not None for e in errors) / len(units) if units else 0.0),
        }
        if self.rouge:
            entry["rouge_l"] = _rouge_view(units, texts)
        return entry, pairs_primary

    def spec(self) -> dict[str, Any]:
        ex = self.extractor
        params = {
            "threshold": self.threshold,
            "thresholds": list(THRESHOLDS),
            "match": "hungarian one-to-one cosine",
            "embedder": self.embedder,
            "extractor": ex.get_params() if hasattr(ex, "get_params") else str(ex),
            "render": "to_third_person(speaker name)",
            "baseline": "every-sentence" if self.baseline else None,
            "subset": self.split,
            "conversations": sorted({u.uid.split("/")[0] for u in self._units}),
        }
        # the registry knows LoCoMo's file as split "test"; memlab's dev/test subsets are recorded in params["subset"]
        return {
            "dataset": "locomo",
            "split": "test",
            "data_dir": self.data_dir,
            "judge": getattr(ex, "name", "extractor"),
            "params": params,
        }


def _rouge_view(units: list[_Unit], texts: list[list[str]]) -> dict[str, float] | None:
    """Best ROUGE-L per gold observation (recall) and per prediction (precision), averaged."""
    pairs_r = [(g, p) for u, ts in zip(units, texts, strict=True) for g in u.gold for p in ts]
    scores = _rouge(pairs_r) if pairs_r else []
    if scores is None:
        return None
    k = 0
    rec: list[float] = []
    prec: list[float] = []
    for u, ts in zip(units, texts, strict=True):
        m = np.asarray(scores[k : k + len(u.gold) * len(ts)], dtype=float).reshape(len(u.gold), len(ts))
        k += len(u.gold) * len(ts)
        rec += m.max(axis=1).tolist() if len(ts) else [0.0] * len(u.gold)
        prec += m.max(axis=0).tolist() if len(u.gold) else [0.0] * len(ts)
    return {"recall": float(np.mean(rec)) if rec else 0.0, "precision": float(np.mean(prec)) if prec else 0.0}


def _extraction_examples(
    units: list[_Unit],
    preds: list[list[Fact]],
    errors: list[str | None],
    texts: list[list[str]],
    pairs_primary: list[list[tuple[int, int, float]]],
    extractor_name: str,
) -> list[Example]:
    out = []
    for i, (u, fs) in enumerate(zip(units, preds, strict=True)):
        tp_i = len(pairs_primary[i])
        out.append(
            Example(
                id=u.uid,
                gold="\n".join(u.gold),
                pred="\n".join(texts[i]),
                score=(tp_i / len(fs)) if fs else None,
                decided_by=extractor_name,
                latency_ms=None,
                error=errors[i],
                meta={
                    "tp": tp_i,
                    "n_pred": len(fs),
                    "n_gold": len(u.gold),
                    "matches": [[texts[i][r], u.gold[c], round(s, 3)] for r, c, s in pairs_primary[i]],
                    "keys": [f.key for f in fs],
                },
            )
        )
    return out


def evaluate_extraction(
    extractor: Extractor | str = "rules",
    *,
    split: str = "test",
    data_dir: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    threshold: float = 0.6,
    embedder: str = "minilm",
    baseline: bool = True,
    rouge: bool = True,
    out_dir: str | Path | None = None,
    max_error_rate: float = 0.05,
    progress: bool = False,
    command: str | None = None,
) -> EvalRun:
    """Score an extractor on LoCoMo observations (:class:`ExtractionTask` + :func:`run_task`).

    Args:
        extractor, split, data_dir, threshold, embedder, baseline, rouge: see :class:`ExtractionTask`.
        limit: at most this many sessions, sampled with ``seed`` (``None``: all).
        seed: sampling seed.
        out_dir: where to write the run directory (``None``: a fresh dir under ``runs/``).
        max_error_rate: the run is ``failed`` when more units than this share fail to extract.
        progress: show tqdm bars while extracting.
        command: the command line, recorded in the spec.

    Returns:
        The written :class:`~memlab.eval.runs.EvalRun`.

    Raises:
        InvalidInputError: bad split, limit or threshold.
    """
    task = ExtractionTask(
        extractor,
        split=split,
        data_dir=data_dir,
        threshold=threshold,
        embedder=embedder,
        baseline=baseline,
        rouge=rouge,
    )
    return run_task(
        task,
        limit=limit,
        seed=seed,
        out_dir=out_dir,
        max_error_rate=max_error_rate,
        command=command,
        progress=progress,
    )


def run_extraction_task(*, out_dir: Path, seed: int = 0, **params: Any) -> Any:
    """Suite runner (``memlab eval suite``): ``dataset`` must be ``locomo``; other keys go to :func:`evaluate_extraction`."""
    dataset = params.pop("dataset", "locomo")
    if dataset != "locomo":
        raise InvalidInputError(
            f"The 'dataset' parameter of the extraction task must be 'locomo'. Got {dataset!r} instead."
        )
    params.pop("judge", None)
    return evaluate_extraction(out_dir=out_dir, seed=seed, **params)
