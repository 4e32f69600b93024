"""The ``scenarios`` task: memlab's own hand-written seed-style memory pairs in it/en/zh.

``datasets/scenarios/pairs.jsonl`` (card: ``datasets/scenarios/README.md``) holds pairs a user could tell a
personal assistant about themselves: an earlier memory ``a`` and a new memory ``b``, labelled ``contradiction``
or ``compatible``, in Italian, English and Chinese, over 12 kinds (``date``, ``number``, ``count``, ``place``,
``absolute``, ``status``, ``health``, ``name``, ``preference``, ``paraphrase``, ``update``, ``other-person``).
It is a TEST set: nothing may be trained, tuned or calibrated on it.

Per pair, exactly what the product does with a new memory (the ``integrity`` task's unit,
:class:`memlab.eval.integrity.IntegrityTask`): a fresh ``:memory:`` store with the real default embedder, ``a``
then ``b`` added as memories of one user, :meth:`SemanticIntegrityChecker.check` on ``b`` with the judge
(default: the product's ``default``); the prediction is ``contradiction`` when ``has_contradiction``. Each
example records the top contradiction's ``decided_by``, ``urgency``, ``type`` and explanation.

Metrics (``run.json``): the contradiction task's keys (``accuracy``, ``contradiction.f1`` with its bootstrap
CI, ``false_contradiction_rate`` = false alarms on compatible pairs, ...), ``accuracy_by_lang``,
``accuracy_by_kind``, ``urgency`` (share of the detected gold contradictions reported HIGH, and urgency counts
of true and false alarms), and ``per_category`` tables ``lang``, ``kind`` and ``lang_kind`` (n, contradictions,
accuracy, contradiction recall and F1, false alarm rate). The primary metric is ``accuracy``.

Example:
    >>> rows = load_scenarios()
    >>> len(rows) >= 150 and {r.lang for r in rows} == {"it", "en", "zh"}
    True
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.errors import DatasetFormatError, UndefinedMetricWarning
from memlab.eval import metrics as M
from memlab.eval.integrity import IntegrityTask, IntegrityUnit
from memlab.eval.runs import EvalRun
from memlab.eval.task import Scored, run_task, seeded_sample
from memlab.records import Label, Urgency

__all__ = [
    "SCENARIO_KINDS",
    "SCENARIO_LABELS",
    "SCENARIO_LANGS",
    "Scenario",
    "ScenariosTask",
    "evaluate_scenarios",
    "load_scenarios",
    "run_scenarios_task",
    "scenario_counts",
]

#: the kinds of pair, in the card's order.
SCENARIO_KINDS: tuple[str, ...] = (
    "date",
    "number",
    "count",
    "place",
    "absolute",
    "status",
    "health",
    "name",
    "preference",
    "paraphrase",
    "update",
    "other-person",
)
SCENARIO_LANGS: tuple[str, ...] = ("it", "en", "zh")
#: file label -> memlab label.
SCENARIO_LABELS: dict[str, Label] = {
    "contradiction": Label.CONTRADICTION,
    "compatible": Label.NOT_CONTRADICTION,
}
_FIELDS = ("id", "lang", "kind", "a", "b", "label", "note")


@dataclass(frozen=True, slots=True)
class Scenario:
    """One hand-written pair: ``a`` is the earlier memory, ``b`` the new one (checked against ``a``)."""

    id: str
    lang: str
    kind: str
    a: str
    b: str
    label: str
    note: str

    @property
    def gold(self) -> Label:
        """``contradiction`` or ``not_contradiction``."""
        return SCENARIO_LABELS[self.label]


def _path(data_dir: str | Path | None) -> Path:
    from memlab.datasets import dataset_files

    return dataset_files("scenarios", "test", data_dir)[0]


def load_scenarios(data_dir: str | Path | None = None) -> list[Scenario]:
    """Read and validate ``pairs.jsonl`` (registry dataset ``scenarios``, split ``test``).

    Args:
        data_dir: folder holding ``pairs.jsonl`` (default: the repository's ``datasets/scenarios``).

    Returns:
        The pairs in file order.

    Raises:
        DatasetFormatError: missing file, a line that is not a JSON object, a missing / extra / non-string or
            empty field, an unknown ``lang``, ``kind`` or ``label``, a duplicate id (the message names the line).
    """
    from memlab.datasets._io import iter_lines

    path = _path(data_dir)
    rows: list[Scenario] = []
    seen: dict[str, int] = {}
    for n, line in iter_lines(path):

        def bad(msg: str, n: int = n) -> DatasetFormatError:
            return DatasetFormatError(msg, path=str(path), line=n)

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise bad(f"not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise bad("not a JSON object")
        if set(obj) != set(_FIELDS):
            raise bad(f"fields must be {list(_FIELDS)}; got {sorted(obj)}")
        for k in _FIELDS:
            if not isinstance(obj[k], str) or not obj[k].strip():
                raise bad(f"field {k!r} must be a non-empty string")
        if obj["lang"] not in SCENARIO_LANGS:
            raise bad(f"unknown lang {obj['lang']!r} (valid: {list(SCENARIO_LANGS)})")
        if obj["kind"] not in SCENARIO_KINDS:
            raise bad(f"unknown kind {obj['kind']!r} (valid: {list(SCENARIO_KINDS)})")
        if obj["label"] not in SCENARIO_LABELS:
            raise bad(f"unknown label {obj['label']!r} (valid: {sorted(SCENARIO_LABELS)})")
        if obj["id"] in seen:
            raise bad(f"duplicate id {obj['id']!r} (first on line {seen[obj['id']]})")
        seen[obj["id"]] = n
        rows.append(Scenario(**{k: obj[k] for k in _FIELDS}))
    if not rows:
        raise DatasetFormatError("no rows", path=str(path))
    return rows


def scenario_counts(rows: Sequence[Scenario]) -> dict[str, dict[str, dict[str, int]]]:
    """``{lang: {kind: {"contradiction": n, "compatible": n}}}`` over every language and kind (zeros included).

    Example:
        >>> c = scenario_counts(load_scenarios())
        >>> all(v["contradiction"] and v["compatible"] for kinds in c.values() for v in kinds.values())
        True
    """
    out = {lang: {k: dict.fromkeys(SCENARIO_LABELS, 0) for k in SCENARIO_KINDS} for lang in SCENARIO_LANGS}
    for r in rows:
        out[r.lang][r.kind][r.label] += 1
    return out


def _group_metrics(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """n, contradictions, accuracy, contradiction recall / F1 and false alarm rate of one group (metrics.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        pc = M.per_class(gold, pred, labels=[Label.CONTRADICTION])["contradiction"]
        negatives = sum(g != Label.CONTRADICTION.value for g in gold)
        return {
            "n": len(gold),
            "contradictions": pc.support,
            "accuracy": M.accuracy(gold, pred),
            "recall": pc.recall if pc.support else None,
            "f1": pc.f1 if pc.support else None,
            "false_alarm_rate": M.false_contradiction_rate(gold, pred) if negatives else None,
        }


class ScenariosTask(IntegrityTask):
    """Memory-level check of each scenario pair (see the module docstring).

    Args:
        judge: a judge name, a :class:`~memlab.protocols.Judge`, or ``"none"`` for the levels alone.
        embedder: ``None`` (the product default, ``e5``), a name, an instance, or ``"fake"`` with ``exhaustive=True``.
        data_dir: another copy of ``pairs.jsonl``.
        settings, levels, n_resamples, overrides: as :class:`~memlab.eval.integrity.IntegrityTask`.
    """

    name = "scenarios"
    primary_metric = "accuracy"

    def __init__(
        self,
        *,
        judge: Any = "default",
        levels: Sequence[str] | None = None,
        embedder: Any = None,
        data_dir: str | Path | None = None,
        settings: Any = None,
        n_resamples: int = 1000,
        **overrides: Any,
    ) -> None:
        super().__init__(
            "scenarios",
            "test",
            judge=judge,
            levels=levels,
            embedder=embedder,
            data_dir=data_dir,
            settings=settings,
            n_resamples=n_resamples,
            **overrides,
        )

    def samples(self, limit: int | None, seed: int) -> list[IntegrityUnit]:
        rows = seeded_sample(load_scenarios(self.data_dir), limit, seed)
        return [
            IntegrityUnit(
                id=r.id,
                memories=({"text": r.a},),
                memory_refs=(0,),
                new={"text": r.b},
                gold=r.gold,
                meta={"lang": r.lang, "kind": r.kind, "a": r.a, "b": r.b, "note": r.note},
            )
            for r in rows
        ]

    def score(self, samples: Sequence[IntegrityUnit], solved: Any, *, seed: int, seconds: float) -> Scored:
        scored = super().score(samples, solved, seed=seed, seconds=seconds)
        metrics = scored.metrics
        for k in ("evidence_accuracy", "evidence_n"):  # one earlier memory per unit: always the evidence
            metrics.pop(k, None)
        notes = [n for n in scored.notes if not n.startswith("evidence_accuracy:")]
        urg: dict[str, dict[str, int]] = {s: {u.value: 0 for u in Urgency} for s in ("tp", "fp")}
        for ex, (res, _refs, _lat, _err) in zip(scored.examples, solved, strict=True):
            top = res.contradictions[0] if res is not None and res.contradictions else None
            ex.meta["urgency"] = top.urgency.value if top is not None else None
            ex.meta["clarifications"] = len(res.clarifications) if res is not None else 0
            if top is not None:
                urg["tp" if ex.gold == Label.CONTRADICTION.value else "fp"][top.urgency.value] += 1
        n_tp = sum(urg["tp"].values())
        metrics["urgency"] = {
            "high_share": urg["tp"][Urgency.HIGH.value] / n_tp if n_tp else None,
            "tp": urg["tp"],
            "fp": urg["fp"],
        }
        gold = [e.gold or "" for e in scored.examples]
        pred = [e.pred or Label.ABSTAIN.value for e in scored.examples]
        per_cat: dict[str, dict[str, Any]] = {}
        for key, of in (
            ("lang", lambda m: m["lang"]),
            ("kind", lambda m: m["kind"]),
            ("lang_kind", lambda m: f"{m['lang']}/{m['kind']}"),
        ):
            groups: dict[str, list[int]] = {}
            for i, e in enumerate(scored.examples):
                groups.setdefault(of(e.meta), []).append(i)
            order = _group_order(key)
            per_cat[key] = {
                g: _group_metrics([gold[i] for i in groups[g]], [pred[i] for i in groups[g]])
                for g in sorted(groups, key=lambda g: (order.get(g, len(order)), g))
            }
        metrics["accuracy_by_lang"] = {g: v["accuracy"] for g, v in per_cat["lang"].items()}
        metrics["accuracy_by_kind"] = {g: v["accuracy"] for g, v in per_cat["kind"].items()}
        return Scored(
            metrics=metrics,
            examples=scored.examples,
            notes=notes,
            confusion=scored.confusion,
            per_level=scored.per_level,
            per_category=per_cat,
        )


def _group_order(key: str) -> dict[str, int]:
    if key == "lang":
        return {x: i for i, x in enumerate(SCENARIO_LANGS)}
    if key == "kind":
        return {x: i for i, x in enumerate(SCENARIO_KINDS)}
    return {
        f"{la}/{k}": i for i, (la, k) in enumerate((la, k) for la in SCENARIO_LANGS for k in SCENARIO_KINDS)
    }


def evaluate_scenarios(
    *,
    judge: Any = "default",
    levels: Sequence[str] | None = None,
    embedder: Any = None,
    data_dir: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    out_dir: str | Path | None = None,
    settings: Any = None,
    max_error_rate: float = 0.05,
    n_resamples: int = 1000,
    progress: bool = True,
    command: str | None = None,
    **overrides: Any,
) -> EvalRun:
    """Score the checker on the scenario pairs and write the run directory (:class:`ScenariosTask` + :func:`run_task`).

    Args:
        judge, levels, embedder, data_dir, settings, n_resamples, overrides: see :class:`ScenariosTask`.
        limit: a seeded sample of this many pairs (default: all).
        seed: seed of the sample and of the bootstrap.
        out_dir: run directory (default ``runs/<ts>_scenarios_<id>``).
        max_error_rate: the run is ``failed`` when more pairs than this share fail.
        progress: show a tqdm bar.
        command: the command line, recorded in the spec.
    """
    task = ScenariosTask(
        judge=judge,
        levels=levels,
        embedder=embedder,
        data_dir=data_dir,
        settings=settings,
        n_resamples=n_resamples,
        **overrides,
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


def run_scenarios_task(
    *,
    out_dir: Path,
    seed: int,
    dataset: str = "scenarios",
    split: str | None = "test",
    judge: Any = "default",
    limit: int | None = None,
    data_dir: str | None = None,
    **kwargs: Any,
) -> EvalRun:
    """Suite and gate runner of the ``scenarios`` task (``dataset``/``split`` are accepted for the suite's naming
    and must be ``scenarios``/``test``)."""
    from memlab.errors import InvalidInputError

    if dataset != "scenarios" or split not in (None, "test"):
        raise InvalidInputError(
            "The 'dataset'/'split' parameters of the scenarios task must be 'scenarios'/'test'. "
            f"Got {dataset!r}/{split!r} instead."
        )
    return evaluate_scenarios(
        judge=judge, data_dir=data_dir, limit=limit, seed=seed, out_dir=out_dir, progress=False, **kwargs
    )
