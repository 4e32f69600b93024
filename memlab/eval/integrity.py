"""Memory-level evaluation of the integrity checker (the product's real task: a new memory against a user's store).

For each dialogue / profile of a dataset: build a fresh store (``:memory:`` SQLite + FAISS, real embedder),
add the earlier statements as memories of ONE user (embedded in one batch), add the final statement, run
:meth:`SemanticIntegrityChecker.check` on it and score ``has_contradiction`` against the gold label.

How each dataset becomes memories:

* ``decode`` (``human-bot`` | ``rct`` | ``dev`` | ``dev-rct``): the earlier turns of the speaker of the last turn (DECODE asks whether
  the last turn contradicts that speaker's own earlier turns); 2-turn dialogues fall back to the other
  speaker's turn, like the pairwise loader. ``rct`` holds only negatives: its run reports
  ``false_contradiction_rate``. ``dev-rct`` is RCT's construction applied to the dev dialogues
  (:func:`memlab.datasets.remove_contradicting_turn`): RCT-like negatives to tune on.
* ``cdconv``: the three history utterances (speaker tags removed); the new item is the bot's reply.
  Classes 1-3 are contradictions.
* ``ci_tod``: every earlier utterance plus one memory per knowledge-base row; the new item is the last turn.
  Gold: history or KB inconsistency (``hi`` or ``kbi``); evidence: ``HIPosition`` when given.
* ``kvpi``: the profile's key/values as keyed memories (``gender``, ``location``, ``constellation``, rendered in
  Chinese as the loader does); the new item is the reply. Gold: ``contradicted`` (1) vs entailed/irrelevant.

Metrics: the contradiction task's keys (``memlab.eval.contradiction.score_contradiction``, binary), plus
``evidence_accuracy`` (share of correctly flagged units whose reported memory is a gold evidence turn, where
gold evidence exists), per-level attribution (``per_level``: units decided by each level, with tp/fp; and
``per_level_any``: units where a level produced at least one reported contradiction), mean stage times and
the candidate count.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.errors import InvalidInputError, MemlabError
from memlab.eval.runs import EvalRun, Example
from memlab.eval.task import EvalTask, Scored, run_task
from memlab.records import Label

__all__ = [
    "INTEGRITY_DATASETS",
    "IntegrityTask",
    "IntegrityUnit",
    "build_units",
    "evaluate_integrity",
    "run_integrity_task",
]

#: dataset -> (default split, splits)
INTEGRITY_DATASETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "decode": ("human-bot", ("human-bot", "rct", "dev", "dev-rct")),
    "cdconv": ("test", ("train", "dev", "test")),
    "ci_tod": ("test", ("train", "dev", "test")),
    "kvpi": ("test", ("test",)),
}


@dataclass(frozen=True, slots=True)
class IntegrityUnit:
    """One scored unit: memories of one user, then a new statement.

    Attributes:
        id: unit id (dialogue / row id).
        memories: ``MemoryStore.add_many`` specs (``text`` plus optional ``key``/``value``), oldest first.
        memory_refs: per memory, its turn index in the source dialogue (``None`` for KB rows / profile keys).
        new: spec of the final statement.
        gold: ``contradiction`` or ``not_contradiction``.
        evidence: gold evidence turn indices (may be empty).
        meta: dataset-specific details.
    """

    id: str
    memories: tuple[dict[str, Any], ...]
    memory_refs: tuple[int | None, ...]
    new: dict[str, Any]
    gold: Label
    evidence: tuple[int, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


def _strip_tag(line: str) -> str:
    for sep in ("：", ":"):
        head, s, tail = line.partition(sep)
        if s and len(head) <= 12:
            return tail.strip()
    return line.strip()


def _sample(n: int, limit: int | None, seed: int) -> list[int]:
    if limit is None or limit >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), limit))


def build_units(
    dataset: str,
    split: str | None = None,
    *,
    data_dir: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[IntegrityUnit]:
    """Turn a dataset split into integrity units (see the module docs for each dataset).

    Args:
        dataset: ``decode``, ``cdconv``, ``ci_tod`` or ``kvpi``.
        split: split name (default per dataset: ``human-bot`` or ``test``).
        data_dir: another copy of the dataset files.
        limit: a seeded sample of this many units.
        seed: sampling seed.

    Raises:
        UnknownComponentError, InvalidInputError: unknown dataset or split.
        DatasetFormatError: malformed files.
    """
    from memlab.datasets import load_dialogues, load_pairs

    if dataset not in INTEGRITY_DATASETS:
        raise InvalidInputError(
            f"The 'dataset' parameter of memlab eval integrity must be one of {sorted(INTEGRITY_DATASETS)}. "
            f"Got {dataset!r} instead."
        )
    split = split or INTEGRITY_DATASETS[dataset][0]
    if dataset == "decode":
        dialogues = load_dialogues("decode", split, data_dir=data_dir)
        return [_decode_unit(dialogues[i]) for i in _sample(len(dialogues), limit, seed)]
    pairs = load_pairs(dataset, split, data_dir=data_dir)
    make = {"kvpi": _kvpi_unit, "cdconv": _cdconv_unit, "ci_tod": _ci_tod_unit}[dataset]
    return [make(pairs[i]) for i in _sample(len(pairs), limit, seed)]


def _binary(label: Label) -> Label:
    return Label.CONTRADICTION if label is Label.CONTRADICTION else Label.NOT_CONTRADICTION


def _decode_unit(d: Any) -> IntegrityUnit:
    """The earlier turns of the last speaker (any earlier turn in a 2-turn dialogue) against the last turn."""
    last = d.turns[-1]
    earlier = [t for t in d.turns[:-1] if t.speaker == last.speaker and t.text.strip()]
    fallback = not earlier
    if fallback:
        earlier = [t for t in d.turns[:-1] if t.text.strip()]
    return IntegrityUnit(
        id=d.id,
        memories=tuple({"text": t.text} for t in earlier),
        memory_refs=tuple(t.index for t in earlier),
        new={"text": last.text},
        gold=d.label,
        evidence=tuple(e for e in d.evidence if e != last.index),
        meta={"fallback": fallback},
    )


def _kvpi_unit(p: Any) -> IntegrityUnit:
    """The profile's key/values as keyed memories (rendered in Chinese) against the reply."""
    from memlab.datasets import render_kvpi_profile

    keys = {"gender": "gender", "loc": "location", "constellation": "constellation"}
    mems = [
        {"text": render_kvpi_profile({k: v}), "key": keys.get(k, k), "value": str(v), "type": "profile"}
        for k, v in dict(p.meta.get("profile") or {}).items()
        if v and render_kvpi_profile({k: v})
    ]
    meta = {"domain": p.meta.get("domain"), "raw_label": p.meta.get("raw_label")}
    return IntegrityUnit(
        p.id, tuple(mems), tuple(None for _ in mems), {"text": p.hypothesis}, _binary(p.label), meta=meta
    )


def _cdconv_unit(p: Any) -> IntegrityUnit:
    """The three history utterances (speaker tags removed) against the bot's reply."""
    lines = [_strip_tag(x) for x in p.premise.split("\n") if _strip_tag(x)]
    return IntegrityUnit(
        p.id,
        tuple({"text": x} for x in lines),
        tuple(range(len(lines))),
        {"text": p.hypothesis},
        _binary(p.label),
        meta={"raw_label": p.meta.get("raw_label")},
    )


def _ci_tod_unit(p: Any) -> IntegrityUnit:
    """Every earlier utterance plus one memory per knowledge-base row, against the last turn."""
    dialogue = list(p.meta.get("dialogue") or [])
    hist = [(j, str(t.get("utterance", "")).strip()) for j, t in enumerate(dialogue[:-1])]
    hist = [(j, t) for j, t in hist if t]
    kb_items = [it for it in (p.meta.get("kb") or {}).get("items") or [] if isinstance(it, dict)]
    kb_lines = [", ".join(f"{k} {v}" for k, v in it.items() if v not in ("-", "", None)) for it in kb_items]
    kb_lines = [x for x in kb_lines if x.strip()]
    mems = [{"text": t} for _, t in hist] + [{"text": x} for x in kb_lines]
    refs = [j for j, _ in hist] + [None for _ in kb_lines]
    pos = p.meta.get("hi_position")
    ev: tuple[int, ...] = ()
    if isinstance(pos, int):
        ev = (pos,)
    elif isinstance(pos, list):
        ev = tuple(int(x) for x in pos if isinstance(x, int))
    meta = {k: p.meta.get(m) for k, m in (("hi", "hi"), ("kbi", "kbi"), ("qi", "qi"), ("domain", "domain"))}
    return IntegrityUnit(
        p.id, tuple(mems), tuple(refs), {"text": p.hypothesis}, _binary(p.label), evidence=ev, meta=meta
    )


class IntegrityTask(EvalTask):
    """The memory-level integrity evaluation (see the module docstring).

    Args:
        dataset: ``decode``, ``cdconv``, ``ci_tod`` or ``kvpi``.
        split: split (default per dataset).
        judge: a judge name, a :class:`~memlab.protocols.Judge`, or ``"none"``/``None`` for the levels alone.
        levels: decision levels (default: all; without a judge, ``entities`` and ``patterns``).
        embedder: embedder name or instance (one per run; each unit gets a fresh ``:memory:`` store). ``None``
            (default) is the product's default, ``settings.embedder`` (``e5``), so the figures are those a user
            gets; ``"fake"`` is accepted only with ``exhaustive=True``, where vectors do not influence the result.
        data_dir: another copy of the dataset.
        settings: a :class:`memlab.config.Settings` for the checker.
        n_resamples: bootstrap resamples.
        **overrides: :class:`memlab.integrity.IntegrityConfig` overrides.
    """

    name = "integrity"
    primary_metric = "contradiction.f1"

    def __init__(
        self,
        dataset: str,
        split: str | None = None,
        *,
        judge: Any = "default",
        levels: Sequence[str] | None = None,
        embedder: Any = None,
        data_dir: str | Path | None = None,
        settings: Any = None,
        n_resamples: int = 1000,
        **overrides: Any,
    ) -> None:
        from memlab.embedding import resolve_embedder
        from memlab.integrity import LEVELS, IntegrityConfig
        from memlab.judges import resolve_judge

        unknown = sorted(set(overrides) - set(IntegrityConfig.model_fields) - {"levels"})
        if unknown:  # else every unit would fail alike inside the checker, one error per unit
            raise InvalidInputError(
                f"Unknown integrity checker setting(s) {unknown}: the keyword arguments after the task's own are "
                f"IntegrityConfig fields ({', '.join(sorted(IntegrityConfig.model_fields))}). Got {unknown} instead."
            )
        self.dataset, self.split = dataset, split or INTEGRITY_DATASETS.get(dataset, ("test",))[0]
        self.data_dir, self.settings, self.overrides, self.n_resamples = (
            data_dir,
            settings,
            overrides,
            n_resamples,
        )
        self.judge, self.judge_name = resolve_judge("none" if judge is None else judge)
        self.levels = (
            tuple(levels or LEVELS)
            if self.judge is not None
            else tuple(x for x in (levels or LEVELS) if x != "judge")
        )
        if embedder == "fake":
            # Only meaningful where vectors cannot change the result (exhaustive mode: every memory is compared);
            # it makes levels-only sweeps affordable on a loaded 2-core machine. Recorded in the spec.
            if not (overrides.get("exhaustive") or getattr(settings, "integrity_check_exhaustive", False)):
                raise InvalidInputError(
                    "The 'embedder' parameter of evaluate_integrity may be 'fake' only with "
                    "exhaustive=True (the vectors then do not influence the result). Got a "
                    "non-exhaustive run instead."
                )
            from memlab.testing import FakeEmbedder

            self.embedder: Any = FakeEmbedder(dim=32)
        else:
            self.embedder = resolve_embedder(embedder, settings=settings)
        self.checker_params: dict[str, Any] = {}

    def samples(self, limit: int | None, seed: int) -> list[IntegrityUnit]:
        return build_units(self.dataset, self.split, data_dir=self.data_dir, limit=limit, seed=seed)

    def _check_one(self, u: IntegrityUnit) -> tuple[Any, dict[str, str], float, str | None]:
        """Fresh store, memories, the new item, one check: ``(result, id -> ref, latency ms, error)``."""
        from memlab.integrity import SemanticIntegrityChecker
        from memlab.store import MemoryStore

        t0 = time.perf_counter()
        try:
            store = MemoryStore(":memory:", embedder=self.embedder)
            try:
                mem_items = store.add_many("eval-user", list(u.memories)) if u.memories else []
                new = store.add("eval-user", **u.new)
                checker = SemanticIntegrityChecker(
                    store, self.judge, self.settings, levels=self.levels, **self.overrides
                )
                res = checker.check(new)
                if not self.checker_params:
                    self.checker_params = checker.get_params()
            finally:
                store.close()
        except MemlabError as exc:
            return None, {}, (time.perf_counter() - t0) * 1000, f"{type(exc).__name__}: {exc}"
        refs = {m.id: r for m, r in zip(mem_items, u.memory_refs, strict=True)}
        return res, refs, (time.perf_counter() - t0) * 1000, None

    def solve(
        self, samples: Sequence[IntegrityUnit], *, progress: bool
    ) -> list[tuple[Any, dict[str, str], float, str | None]]:
        from tqdm.auto import tqdm

        return [
            self._check_one(u)
            for u in tqdm(samples, desc=f"integrity {self.dataset}/{self.split}", disable=not progress)
        ]

    def score(self, samples: Sequence[IntegrityUnit], solved: Any, *, seed: int, seconds: float) -> Scored:
        from memlab.eval.contradiction import per_level_stats, score_contradiction

        examples: list[Example] = []
        stage_tot: dict[str, float] = {}
        any_level: dict[str, dict[str, int]] = {}
        n_cands = ev_hits = ev_n = n_judged = max_judged = 0
        for u, (res, refs, lat, err) in zip(samples, solved, strict=True):
            if res is None:
                examples.append(
                    Example(id=u.id, gold=u.gold.value, pred=Label.ABSTAIN.value, latency_ms=lat, error=err)
                )
                continue
            for k, v in res.stage_ms.items():
                stage_tot[k] = stage_tot.get(k, 0.0) + float(v)
            n_cands += res.n_candidates
            n_judged += res.n_judged
            max_judged = max(max_judged, res.n_judged)
            top = res.contradictions[0] if res.contradictions else None
            ref = refs.get(top.other_id) if top is not None else None
            if top is not None and u.gold is Label.CONTRADICTION and u.evidence:
                ev_n += 1
                ev_hits += int(ref in u.evidence)
            for lvl in {c.decided_by for c in res.contradictions}:
                s = any_level.setdefault(lvl, {"units": 0, "tp": 0, "fp": 0})
                s["units"] += 1
                s["tp" if u.gold is Label.CONTRADICTION else "fp"] += 1
            examples.append(_integrity_example(u, res, top, ref, lat))
        ok = [e for e in examples if e.pred != Label.ABSTAIN.value]
        metrics, confusion, notes = score_contradiction(
            [e.gold or "" for e in examples],
            [e.pred or "abstain" for e in examples],
            [e.score for e in examples],
            label_space="binary",
            seed=seed,
            n_resamples=self.n_resamples,
            seconds=seconds,
            n_pairs=len(examples),
        )
        metrics["evidence_accuracy"] = (ev_hits / ev_n) if ev_n else None
        metrics["evidence_n"] = ev_n
        metrics["units_per_second"] = len(examples) / seconds if seconds else None
        metrics["mean_candidates"] = n_cands / len(ok) if ok else None
        metrics["mean_judged_pairs"] = n_judged / len(ok) if ok else None
        metrics["max_judged_pairs"] = max_judged
        metrics["stage_ms_mean"] = {k: v / len(ok) for k, v in stage_tot.items()} if ok else {}
        if not ev_n:
            notes.append("evidence_accuracy: no unit of this split has gold evidence turns.")
        if self.judge is None:
            notes.append("levels only (no judge): entities + patterns.")
        per_level = {"top": per_level_stats(examples), "any": any_level}
        return Scored(
            metrics=metrics, examples=examples, notes=notes, confusion=confusion, per_level=per_level
        )

    def spec(self) -> dict[str, Any]:
        params = {
            **self.checker_params,
            "levels": list(self.levels),
            "embedder": getattr(self.embedder, "name", "?"),
        }
        return {
            "dataset": self.dataset,
            "split": self.split,
            "data_dir": self.data_dir,
            "judge": self.judge_name,
            "params": params,
        }


def _integrity_example(u: IntegrityUnit, res: Any, top: Any, ref: str | None, lat: float) -> Example:
    pred = Label.CONTRADICTION if res.has_contradiction else Label.NOT_CONTRADICTION
    return Example(
        id=u.id,
        gold=u.gold.value,
        pred=pred.value,
        score=res.confidence,
        decided_by=top.decided_by if top is not None else "none",
        latency_ms=lat,
        meta={
            "n_memories": len(u.memories),
            "n_candidates": res.n_candidates,
            "n_judged": res.n_judged,
            "type": top.type.value if top else None,
            "other_ref": ref,
            "rule": (top.details.get("rule") or top.details.get("attribute")) if top else None,
            "explanation": top.explanation if top else None,
            **dict(u.meta),
        },
    )


def evaluate_integrity(
    dataset: str,
    split: str | None = None,
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
    """Run the memory-level integrity evaluation and write the run directory (:class:`IntegrityTask` + :func:`run_task`).

    Args:
        dataset, split, judge, levels, embedder, data_dir, settings, n_resamples, overrides: see :class:`IntegrityTask`.
        limit: seeded sample of units.
        seed: seed of the sample and of the bootstrap.
        out_dir: run directory (default ``runs/<ts>_integrity_<id>``).
        max_error_rate: the run is ``failed`` when more units than this share fail.
        progress: show a tqdm bar.
        command: the command line, recorded in the spec.

    Returns:
        The written :class:`memlab.eval.runs.EvalRun`.
    """
    task = IntegrityTask(
        dataset,
        split,
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


def run_integrity_task(
    *,
    out_dir: Path,
    seed: int,
    dataset: str,
    split: str | None = None,
    judge: Any = "default",
    limit: int | None = None,
    data_dir: str | None = None,
    **kwargs: Any,
) -> Any:
    """Suite runner of the ``integrity`` task (see :func:`evaluate_integrity`)."""
    return evaluate_integrity(
        dataset,
        split,
        judge=judge,
        data_dir=data_dir,
        limit=limit,
        seed=seed,
        out_dir=out_dir,
        progress=False,
        **kwargs,
    )
