"""The ``contradiction`` task: score a pairwise judge on a labelled dataset and write a run.

Scoring rules:

* Predictions are mapped into the dataset's label space before accuracy / macro-F1 / confusion:
  binary sets map every non-contradiction to ``not_contradiction``; rte3_ita (``entailment`` space) maps
  ``contradiction`` / ``neutral`` / ``not_contradiction`` to ``neutral`` ("not entailed").
* ``metrics.contradiction`` always scores the raw "is a contradiction" decision against gold
  ``contradiction`` (on rte3_ita there is no gold contradiction, so it is undefined and noted).
* Grouped sets (DECODE): one unit per ``meta["group"]``; its probability is the max over its pairs, it is
  predicted a contradiction when any of its pairs is.
* A pair whose judging fails becomes ``abstain`` with the error text; it counts as wrong and lowers
  ``coverage``. The run's status is ``failed`` past ``max_error_rate``.
* ``ece`` uses the contradiction probability (15 equal-width bins) on covered units; bootstrap 95% CIs
  (fixed seed) for contradiction precision / recall / F1.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memlab.datasets import DATASETS, Pair, get_dataset, load_pairs, sample_pairs
from memlab.errors import InvalidInputError, UndefinedMetricWarning
from memlab.eval import metrics as M
from memlab.eval.runs import EvalRun, Example
from memlab.eval.task import EvalTask, Scored, run_task
from memlab.protocols import Judge
from memlab.records import Label

__all__ = [
    "ContradictionTask",
    "JudgeOutcome",
    "LABELS_BY_SPACE",
    "evaluate_contradiction",
    "judge_pairs",
    "map_to_space",
    "per_category_stats",
    "per_level_stats",
    "score_contradiction",
]

log = logging.getLogger(__name__)

LABELS_BY_SPACE: Mapping[str, tuple[Label, ...]] = {
    "3-way": (Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL),
    "binary": (Label.CONTRADICTION, Label.NOT_CONTRADICTION),
    "entailment": (Label.ENTAILMENT, Label.NEUTRAL),
}


def map_to_space(label: Label | str, space: str) -> Label:
    """Map a predicted label into a dataset's label space (``abstain`` stays ``abstain``).

    Example:
        >>> map_to_space(Label.NEUTRAL, "binary").value, map_to_space("contradiction", "entailment").value
        ('not_contradiction', 'neutral')
    """
    lab = Label(label)
    if lab is Label.ABSTAIN:
        return lab
    if space == "binary":
        return Label.CONTRADICTION if lab is Label.CONTRADICTION else Label.NOT_CONTRADICTION
    if space == "entailment":
        return Label.ENTAILMENT if lab is Label.ENTAILMENT else Label.NEUTRAL
    return lab


class JudgeOutcome:
    """Raw outcome of judging one pair (internal record, kept small)."""

    __slots__ = ("error", "label", "latency_ms", "probability")

    def __init__(
        self, label: Label, probability: float | None, latency_ms: float, error: str | None = None
    ) -> None:
        self.label = label
        self.probability = probability
        self.latency_ms = latency_ms
        self.error = error


def judge_pairs(
    judge: Judge,
    pairs: Sequence[tuple[str, str]],
    *,
    batch_size: int = 64,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[JudgeOutcome], float]:
    """Judge pairs in batches; a failing batch is retried pair by pair, a failing pair becomes ``abstain``.

    Returns:
        ``(outcomes, seconds spent in judge calls)``.
    """
    out: list[JudgeOutcome] = []
    spent = 0.0
    for start in range(0, len(pairs), batch_size):
        batch = list(pairs[start : start + batch_size])
        t0 = time.perf_counter()
        try:
            verdicts = judge.judge(batch)
            if len(verdicts) != len(batch):
                raise InvalidInputError(f"judge returned {len(verdicts)} verdicts for {len(batch)} pairs")
            dt = time.perf_counter() - t0
            spent += dt
            out.extend(
                JudgeOutcome(Label(v.label), float(v.probability), 1000 * dt / len(batch)) for v in verdicts
            )
        except Exception as exc:  # noqa: BLE001 - any judge failure is recorded per pair, never fatal here
            spent += time.perf_counter() - t0
            log.warning("batch at %d failed (%s); retrying pair by pair", start, exc)
            for pair in batch:
                t1 = time.perf_counter()
                try:
                    (v,) = judge.judge([pair])
                    dt = time.perf_counter() - t1
                    out.append(JudgeOutcome(Label(v.label), float(v.probability), 1000 * dt))
                except Exception as exc2:  # noqa: BLE001
                    dt = time.perf_counter() - t1
                    out.append(JudgeOutcome(Label.ABSTAIN, None, 1000 * dt, f"{type(exc2).__name__}: {exc2}"))
                spent += dt
        if progress is not None:
            progress(len(batch))
    return out, spent


def _binary_bootstrap(
    gold_c: np.ndarray, pred_c: np.ndarray, *, n_resamples: int, seed: int, confidence: float = 0.95
) -> dict[str, list[float]]:
    """Percentile CIs of precision / recall / F1 of the positive class, vectorised over resamples."""
    n = len(gold_c)
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    tp_v = (gold_c & pred_c).astype(np.int64)
    fp_v = (~gold_c & pred_c).astype(np.int64)
    fn_v = (gold_c & ~pred_c).astype(np.int64)
    stats = {"precision": [], "recall": [], "f1": []}
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_resamples:
        k = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        tp, fp, fn = tp_v[idx].sum(1), fp_v[idx].sum(1), fn_v[idx].sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            stats["precision"].append(np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0))
            stats["recall"].append(np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 0.0))
            stats["f1"].append(np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1), 0.0))
        done += k
    alpha = (1 - confidence) / 2
    return {
        k: [float(x) for x in np.quantile(np.concatenate(v), [alpha, 1 - alpha])] for k, v in stats.items()
    }


def score_contradiction(
    gold: Sequence[Label | str],
    pred: Sequence[Label | str],
    prob: Sequence[float | None],
    *,
    label_space: str = "3-way",
    seed: int = 0,
    n_resamples: int = 1000,
    seconds: float | None = None,
    n_pairs: int | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, int]], list[str]]:
    """All metrics of the contradiction task (the ``run.json`` keys the dashboard and the suite read).

    Args:
        gold: gold labels in the dataset's label space.
        pred: raw predicted labels (``abstain`` for failures); mapped into ``label_space`` here.
        prob: contradiction probabilities (``None`` for failures).
        label_space: ``3-way``, ``binary`` or ``entailment``.
        seed: bootstrap seed.
        n_resamples: bootstrap resamples.
        seconds: time spent judging (for ``pairs_per_second``).
        n_pairs: pairs judged (default ``len(gold)``; DECODE judges more pairs than it scores units).

    Returns:
        ``(metrics, confusion, notes)``; ``notes`` lists undefined metrics.

    Raises:
        InvalidInputError: lengths differ or unknown label space.

    Example:
        >>> m, cm, notes = score_contradiction(["contradiction", "neutral"], ["contradiction", "neutral"], [0.9, 0.2],
        ...                                    n_resamples=10)
        >>> m["contradiction"]["f1"], m["accuracy"], sorted(cm)
        (1.0, 1.0, ['contradiction', 'entailment', 'neutral'])
    """
    if label_space not in LABELS_BY_SPACE:
        raise InvalidInputError(
            f"The 'label_space' parameter of score_contradiction must be one of {sorted(LABELS_BY_SPACE)}. "
            f"Got {label_space!r} instead."
        )
    if not len(gold) == len(pred) == len(prob):
        raise InvalidInputError(
            "gold, pred and prob passed to score_contradiction must have the same length."
        )
    labels = [lab.value for lab in LABELS_BY_SPACE[label_space]]
    g = [Label(x).value for x in gold]
    raw = [Label(x) for x in pred]
    mapped = [map_to_space(x, label_space).value for x in raw]
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        pc_raw = M.per_class(g, [x.value for x in raw], labels=["contradiction"])["contradiction"]
        per_cls = M.per_class(g, mapped, labels=labels)
        acc = M.accuracy(g, mapped)
        mf1 = M.macro_f1(g, mapped, labels=labels)
        fcr = M.false_contradiction_rate(g, [x.value for x in raw])
        cov = M.coverage(mapped)
        covered = [i for i, p in enumerate(prob) if p is not None and raw[i] is not Label.ABSTAIN]
        ece = M.expected_calibration_error([g[i] for i in covered], [float(prob[i]) for i in covered])  # type: ignore[arg-type]
    notes.extend(sorted({str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)}))
    gold_c = np.array([x == "contradiction" for x in g], dtype=bool)
    pred_c = np.array([x is Label.CONTRADICTION for x in raw], dtype=bool)
    ci = _binary_bootstrap(gold_c, pred_c, n_resamples=n_resamples, seed=seed)
    n_judged = n_pairs if n_pairs is not None else len(g)
    metrics: dict[str, Any] = {
        "contradiction": {**pc_raw.model_dump(), "ci95": ci},
        "per_class": {k: v.model_dump() for k, v in per_cls.items()},
        "accuracy": acc,
        "macro_f1": mf1,
        "ece": ece,
        "false_contradiction_rate": fcr,
        "coverage": cov,
        "pairs_per_second": (n_judged / seconds) if seconds else None,
        "n_pairs": n_judged,
        "seconds": seconds,
    }
    return metrics, M.confusion(g, mapped, labels=labels), notes


def per_level_stats(examples: Sequence[Example]) -> dict[str, Any]:
    """Per ``decided_by`` value: units decided, predicted contradictions, tp, fp and precision.

    Example:
        >>> ex = [Example(id="a", gold="contradiction", pred="contradiction", decided_by="judge")]
        >>> per_level_stats(ex)["judge"]["precision"]
        1.0
    """
    out: dict[str, Any] = {}
    for e in examples:
        lvl = e.decided_by or "none"
        s = out.setdefault(lvl, {"n": 0, "predicted_contradiction": 0, "tp": 0, "fp": 0})
        s["n"] += 1
        if e.pred == Label.CONTRADICTION.value:
            s["predicted_contradiction"] += 1
            s["tp" if e.gold == Label.CONTRADICTION.value else "fp"] += 1
    for s in out.values():
        k = s["predicted_contradiction"]
        s["precision"] = s["tp"] / k if k else None
    return out


def per_category_stats(
    examples: Sequence[Example], categories: Sequence[Any], label_space: str
) -> dict[str, Any]:
    """Per data category: n, accuracy (in the label space), contradiction support / recall, false contradiction rate.

    Example:
        >>> ex = [Example(id="a", gold="contradiction", pred="contradiction"), Example(id="b", gold="neutral", pred="neutral")]
        >>> per_category_stats(ex, ["x", "y"], "3-way")["x"]["recall"]
        1.0
    """
    out: dict[str, Any] = {}
    for e, cat in zip(examples, categories, strict=True):
        s = out.setdefault(
            str(cat), {"n": 0, "correct": 0, "contradictions": 0, "tp": 0, "negatives": 0, "fp": 0}
        )
        pred = Label(e.pred or "abstain")
        s["n"] += 1
        s["correct"] += int(map_to_space(pred, label_space).value == e.gold)
        if e.gold == Label.CONTRADICTION.value:
            s["contradictions"] += 1
            s["tp"] += int(pred is Label.CONTRADICTION)
        else:
            s["negatives"] += 1
            s["fp"] += int(pred is Label.CONTRADICTION)
    return {
        cat: {
            "n": s["n"],
            "accuracy": s["correct"] / s["n"],
            "contradictions": s["contradictions"],
            "recall": s["tp"] / s["contradictions"] if s["contradictions"] else None,
            "false_contradiction_rate": s["fp"] / s["negatives"] if s["negatives"] else None,
        }
        for cat, s in sorted(out.items())
    }


def _aggregate_groups(
    pairs: Sequence[Pair], outcomes: Sequence[JudgeOutcome], judge_name: str
) -> list[Example]:
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault(str(p.meta.get("group", p.id)), []).append(i)
    examples = []
    for gid, idx in groups.items():
        ok = [i for i in idx if outcomes[i].label is not Label.ABSTAIN]
        errors = [outcomes[i].error for i in idx if outcomes[i].error]
        latency = float(sum(outcomes[i].latency_ms for i in idx))
        if not ok:
            pred, score, best = Label.ABSTAIN, None, None
        else:
            best = max(ok, key=lambda i: outcomes[i].probability or 0.0)
            score = max(outcomes[i].probability or 0.0 for i in ok)
            pred = (
                Label.CONTRADICTION
                if any(outcomes[i].label is Label.CONTRADICTION for i in ok)
                else Label.NOT_CONTRADICTION
            )
        examples.append(
            Example(
                id=gid,
                gold=pairs[idx[0]].label.value,
                pred=pred.value,
                score=score,
                decided_by="judge",
                latency_ms=latency,
                error="; ".join(errors) if errors and not ok else None,
                group=gid,
                meta={
                    "n_pairs": len(idx),
                    "n_errors": len(errors),
                    "argmax_pair": pairs[best].id if best is not None else None,
                    "judge": judge_name,
                },
            )
        )
    return examples


def _reference_split(splits: Mapping[str, Any], split: str) -> str:
    """A split to fit baselines on: train, else dev, else any other split, else the evaluated one."""
    for cand in ("train", "dev", *splits):
        if cand in splits and cand != split:
            return cand
    return split


class ContradictionTask(EvalTask):
    """Score a pairwise judge on a labelled pair set (the rules are in the module docstring).

    Args:
        dataset: a pairwise dataset (``snli``, ``gu_dnli``, ``decode`` ...).
        split: split name (default: the dataset's default split).
        judge: a judge name for :func:`memlab.judges.load_judge` or a :class:`~memlab.protocols.Judge`.
        data_dir: another copy of the dataset's files (default: the repository copy).
        batch_size: pairs per judge call.
        n_resamples: bootstrap resamples for the CIs.
        judge_kwargs: passed to ``load_judge`` when ``judge`` is a name.

    Raises:
        UnknownComponentError: unknown dataset or judge.
        InvalidInputError: not a pairwise dataset, or the judge ``none``.
    """

    name = "contradiction"
    primary_metric = "contradiction.f1"

    def __init__(
        self,
        dataset: str,
        split: str | None = None,
        *,
        judge: str | Judge = "default",
        data_dir: str | Path | None = None,
        batch_size: int = 64,
        n_resamples: int = 1000,
        judge_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        from memlab.judges import resolve_judge

        self.info = info = get_dataset(dataset)
        if not info.is_pairwise or info.label_space not in LABELS_BY_SPACE:
            raise InvalidInputError(
                f"The 'dataset' parameter of evaluate_contradiction must be a labelled pair set "
                f"({sorted(n for n, d in DATASETS.items() if d.is_pairwise)}). Got {dataset!r} instead."
            )
        self.dataset, self.split, self.data_dir = dataset, split or info.default_split, data_dir
        self.batch_size, self.n_resamples = batch_size, n_resamples
        judge_obj, self.judge_name = resolve_judge(judge, **dict(judge_kwargs or {}))
        if judge_obj is None:
            raise InvalidInputError(
                "evaluate_contradiction scores a judge: 'none' is not one (pick e.g. 'majority')."
            )
        self.judge: Judge = judge_obj
        self.notes: list[str] = []
        fit = getattr(judge_obj, "fit", None)
        if callable(fit) and not getattr(judge_obj, "fitted", True):
            ref = _reference_split(info.splits, self.split)
            fit([p.label for p in load_pairs(dataset, ref, data_dir=data_dir)], source=f"{dataset}/{ref}")
            if ref == self.split:
                self.notes.append(
                    f"{self.judge_name} was fitted on the evaluated split {self.split!r} (the set has no other split)"
                )

    def samples(self, limit: int | None, seed: int) -> list[Pair]:
        return sample_pairs(load_pairs(self.dataset, self.split, data_dir=self.data_dir), limit, seed=seed)

    def solve(self, samples: Sequence[Pair], *, progress: bool) -> tuple[list[JudgeOutcome], float]:
        from tqdm.auto import tqdm

        with tqdm(total=len(samples), desc=f"judge {self.dataset}/{self.split}", disable=not progress) as bar:
            return judge_pairs(
                self.judge,
                [(p.premise, p.hypothesis) for p in samples],
                batch_size=self.batch_size,
                progress=bar.update,
            )

    def score(self, samples: Sequence[Pair], solved: Any, *, seed: int, seconds: float) -> Scored:
        outcomes, judge_seconds = solved
        info = self.info
        if info.group_aggregation == "max":
            examples = _aggregate_groups(samples, outcomes, self.judge_name)
        else:
            examples = [
                Example(
                    id=p.id,
                    gold=p.label.value,
                    pred=o.label.value,
                    score=o.probability,
                    decided_by="judge",
                    latency_ms=o.latency_ms,
                    error=o.error,
                )
                for p, o in zip(samples, outcomes, strict=True)
            ]
        per_category: dict[str, Any] = {}
        if info.category_key and info.group_aggregation is None:
            cats = [p.meta.get(info.category_key) for p in samples]
            per_category = {info.category_key: per_category_stats(examples, cats, info.label_space)}
        metrics, confusion, notes = score_contradiction(
            [e.gold or "" for e in examples],
            [e.pred or "abstain" for e in examples],
            [e.score for e in examples],
            label_space=info.label_space,
            seed=seed,
            n_resamples=self.n_resamples,
            seconds=judge_seconds,
            n_pairs=len(samples),
        )
        return Scored(
            metrics=metrics,
            examples=examples,
            notes=self.notes + notes,
            confusion=confusion,
            per_level=per_level_stats(examples),
            per_category=per_category,
        )

    def spec(self) -> dict[str, Any]:
        get_params = getattr(self.judge, "get_params", None)
        params = {
            "judge": get_params() if callable(get_params) else {},
            "batch_size": self.batch_size,
            "n_resamples": self.n_resamples,
            "aggregation": self.info.group_aggregation,
        }
        return {
            "dataset": self.dataset,
            "split": self.split,
            "data_dir": self.data_dir,
            "judge": self.judge_name,
            "params": params,
            "label_space": self.info.label_space,
            "language": self.info.language,
        }


def evaluate_contradiction(
    dataset: str,
    split: str | None = None,
    *,
    judge: str | Judge = "default",
    data_dir: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    out_dir: str | Path | None = None,
    batch_size: int = 64,
    max_error_rate: float = 0.05,
    n_resamples: int = 1000,
    judge_kwargs: Mapping[str, Any] | None = None,
    command: str | None = None,
    progress: bool = False,
) -> EvalRun:
    """Score a judge on a pairwise dataset and write the run directory (:class:`ContradictionTask` + :func:`run_task`).

    Args:
        dataset, split, judge, data_dir, batch_size, n_resamples, judge_kwargs: see :class:`ContradictionTask`.
        limit: score a seeded sample of this many units (pairs, or dialogues for grouped sets).
        seed: seed of the sample and of the bootstrap.
        out_dir: run directory (default ``runs/<ts>_contradiction_<id>``).
        max_error_rate: the run is ``failed`` when more units than this share abstain.
        command: the command line, recorded in the spec.
        progress: show a tqdm progress bar (on stderr) while judging.

    Returns:
        The written :class:`~memlab.eval.runs.EvalRun`.

    Raises:
        UnknownComponentError: unknown dataset or judge.
        DatasetFormatError: malformed data files.
        InvalidInputError: bad parameters.

    Example:
        >>> import tempfile
        >>> from memlab.judges.baselines import LexicalJudge
        >>> run = evaluate_contradiction("ci_tod", "test", judge=LexicalJudge(), limit=20, out_dir=tempfile.mkdtemp(),
        ...                              n_resamples=50)
        >>> run.spec.n, sorted(run.metrics["contradiction"])[:3]
        (20, ['ci95', 'f1', 'fn'])
    """
    task = ContradictionTask(
        dataset,
        split,
        judge=judge,
        data_dir=data_dir,
        batch_size=batch_size,
        n_resamples=n_resamples,
        judge_kwargs=judge_kwargs,
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
