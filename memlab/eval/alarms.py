"""``memlab eval alarms``: how often memlab interrupts a user, measured the way it is used.

Pairwise benchmarks score one comparison at a time; a user's memory lives for hundreds of messages and makes
thousands of comparisons. This task replays whole LoCoMo conversations through the real turn flow
(:meth:`memlab.app.Memlab.turn_async`: extraction, the versioned store, the background agent's integrity checks,
the notifications), each speaker a user, each session at its own date (``at=``: relative dates, memories and
notifications carry the day the words were said), and counts the contradiction notifications it raises.

Metrics (``alarms.*``, over the conversations of the split):

* ``per_100`` — contradiction notifications (any urgency) per 100 replayed messages; ``high_per_100``,
  ``medium_per_100``, ``low_per_100`` by urgency; ``by_layer`` — how many were decided by each level
  (``entities``, ``patterns``, ``judge`` ...); ``per_conversation`` — the same per conversation;
  ``worst_conversation_per_100``; ``ci95.per_100`` / ``ci95.high_per_100`` — 95% bootstrap intervals that resample
  whole conversations (a conversation is one user: its messages are not independent draws), the spread a
  conversation not measured here may fall in.
* With a plants file (:func:`load_plants`), lines inserted into the conversations: ``plants.recall`` — share of
  planted contradictions *caught*: a HIGH or MEDIUM contradiction notification pairs a memory made from the planted
  line with a memory made from the turn it contradicts (``plants.ci95.recall``: a bootstrap interval over plants);
  ``plants.recall_high`` (HIGH only), ``plants.by_kind``;
  ``plants.decoy_false_alarm_rate`` — share of compatible decoys whose memories are in any HIGH or MEDIUM
  contradiction notification, except one pairing them with another planted line (a decoy may truly contradict a
  plant on the same topic: "blue is still my favourite" / a planted "blue is my least favourite"; such an alarm
  is neither a catch nor a decoy's false alarm); ``plants.stored`` / ``plants.original_stored`` — how often the planted line and the
  contradicted turn left a memory at all (a plant whose facts were never stored cannot be caught). Alarms that
  involve a planted line's memories are not counted in ``per_100``.

Every notification is one example (``examples.jsonl``: both texts, urgency, deciding level, confidence), and so
is every plant (gold ``contradiction``/``compatible``, pred ``caught``/``missed``).

Splits: LoCoMo's ``dev`` (the first two conversations: settings are chosen there) and ``test`` (the others:
figures are reported there); :func:`memlab.datasets.locomo.locomo_split`. LoCoMo is evaluation-only (CC BY-NC):
nothing is trained on it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from memlab._sync import run_blocking
from memlab.errors import DatasetFormatError, InvalidInputError
from memlab.eval.metrics import bootstrap_ci
from memlab.eval.runs import EvalRun, Example
from memlab.eval.task import EvalTask, Scored, check_limit, run_task

__all__ = [
    "AlarmsTask",
    "Plant",
    "ReplayLog",
    "load_plants",
    "replay_conversation",
    "run_alarms_task",
]

log = logging.getLogger(__name__)

#: Seconds between two replayed turns of one session (their order is kept; a plant goes half-way).
TURN_SECONDS = 30
_DIA = re.compile(r"^D(\d+):(\d+)$")
_PLANT_KEYS = ("conv", "id", "speaker", "after", "text", "contradicts", "kind", "label")


@dataclass(frozen=True, slots=True)
class Plant:
    """One line inserted into a LoCoMo conversation.

    Attributes:
        conv: 0-based index of the conversation in ``locomo10.json``.
        id: unique id.
        speaker: who says it (a speaker of that conversation).
        after: the dia_id it is said right after (same session, same date).
        text: what is said.
        contradicts: the earlier turn it contradicts (or, for a decoy, resembles).
        original: that turn's text (for reading the samples).
        kind: ``date``, ``number``, ``place``, ``name``, ``preference``, ``status``, ``health``, ``other``.
        label: ``contradiction`` or ``compatible`` (a decoy).
    """

    conv: int
    id: str
    speaker: str
    after: str
    text: str
    contradicts: str
    original: str = ""
    kind: str = "other"
    label: Literal["contradiction", "compatible"] = "contradiction"


def load_plants(path: str | Path) -> list[Plant]:
    """Read a plants file (JSON lines, see :class:`Plant`).

    Raises:
        DatasetFormatError: a missing file, a bad line, a missing field, a bad label or dia_id, a duplicate id.
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetFormatError(f"Plants file {str(p)!r} does not exist.", path=str(p))
    out: list[Plant] = []
    seen: set[str] = set()
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(f"line {n}: not JSON ({exc.msg}).", path=str(p)) from exc
        missing = [k for k in _PLANT_KEYS if k not in obj]
        if missing:
            raise DatasetFormatError(f"line {n}: missing field(s) {missing}.", path=str(p))
        if obj["label"] not in ("contradiction", "compatible"):
            raise DatasetFormatError(f"line {n}: label must be 'contradiction' or 'compatible'.", path=str(p))
        for k in ("after", "contradicts"):
            if not _DIA.match(str(obj[k])):
                raise DatasetFormatError(f"line {n}: {k} must be a dia_id like 'D7:4'. Got {obj[k]!r}.", path=str(p))
        if not str(obj["text"]).strip():
            raise DatasetFormatError(f"line {n}: empty text.", path=str(p))
        if obj["id"] in seen:
            raise DatasetFormatError(f"line {n}: duplicate id {obj['id']!r}.", path=str(p))
        seen.add(obj["id"])
        out.append(Plant(conv=int(obj["conv"]), id=str(obj["id"]), speaker=str(obj["speaker"]),
                         after=str(obj["after"]), text=str(obj["text"]), contradicts=str(obj["contradicts"]),
                         original=str(obj.get("original", "")), kind=str(obj["kind"]), label=obj["label"]))
    return out


@dataclass
class ReplayLog:
    """What one replayed conversation left behind.

    Attributes:
        conv: conversation index.
        sample_id: LoCoMo's id.
        n_messages: messages replayed (turns with text, plants included).
        n_plants: planted lines replayed.
        memories: dia_id (or ``plant:<id>``) -> ids of the memories made from it.
        notifications: every contradiction notification (``Notification.to_dict()`` plus ``user_id``).
        kinds: turn kinds seen (``chat``, ``resolution``, ``offer_shown`` ...): a LoCoMo line read as an answer to
            a notification is not ingested.
        active_memories: active memories per user at the end.
        seconds: wall time of the replay.
    """

    conv: int
    sample_id: str
    n_messages: int = 0
    n_plants: int = 0
    memories: dict[str, list[int]] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    active_memories: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def user_id_of(speaker: str) -> str:
    """The user id a LoCoMo speaker is replayed as (letters, digits and ``_`` of the name, lower-cased)."""
    uid = re.sub(r"[^0-9A-Za-z_]+", "_", speaker.strip()).strip("_").lower()
    return uid or "speaker"


async def _replay(conv: Any, index: int, plants: Sequence[Plant], *, path: str, embedder: Any, judge: Any,
                  max_sessions: int | None, settings: Any, on_message: Callable[[], Any] | None = None) -> ReplayLog:
    import time

    from memlab.app import open_memlab
    from memlab.datasets.locomo import session_date
    from memlab.notify import NotificationType

    after: dict[str, list[Plant]] = defaultdict(list)
    for p in plants:
        after[p.after].append(p)
    rl = ReplayLog(conv=index, sample_id=conv.sample_id)
    kinds: Counter[str] = Counter()
    users: set[str] = set()
    t0 = time.perf_counter()
    async with open_memlab(path, settings=settings, embedder=embedder, judge=judge) as lab:
        sessions = conv.sessions if max_sessions is None else conv.sessions[:max_sessions]
        for session in sessions:
            day = session_date(session)
            for j, turn in enumerate(session.turns):
                lines = [(turn.dia_id, turn.speaker, turn.text, day + timedelta(seconds=TURN_SECONDS * j))]
                lines += [(f"plant:{p.id}", p.speaker, p.text,
                           day + timedelta(seconds=TURN_SECONDS * j + TURN_SECONDS // 2)) for p in after[turn.dia_id]]
                for ref, speaker, text, at in lines:
                    if not (text or "").strip():
                        continue
                    uid = user_id_of(speaker)
                    users.add(uid)
                    resp, _ = await lab.turn_async(uid, text, at=at)
                    rl.n_messages += 1
                    rl.n_plants += ref.startswith("plant:")
                    if on_message is not None:
                        on_message()
                    kinds[resp.kind] += 1
                    if resp.memory_ids:
                        rl.memories[ref] = list(resp.memory_ids)
        for uid in sorted(users):
            for n in lab.notifications.list(uid, include_resolved=True):
                if n.type is NotificationType.CONTRADICTION:
                    rl.notifications.append({**n.to_dict(), "user_id": uid})
            rl.active_memories[uid] = len(lab.store.list(uid))
    rl.kinds = dict(kinds)
    rl.seconds = time.perf_counter() - t0
    return rl


def replay_conversation(conv: Any, index: int = 0, plants: Sequence[Plant] = (), *, embedder: Any, judge: Any,
                        max_sessions: int | None = None, settings: Any = None, path: str | None = None,
                        on_message: Callable[[], Any] | None = None) -> ReplayLog:
    """Replay one LoCoMo conversation (with its plants) through a fresh memlab database (see the module docs).

    Args:
        conv: a :class:`memlab.datasets.locomo.LocomoConversation`.
        index: its index in the file (plants name it).
        plants: the plants of this conversation.
        embedder, judge: components (objects or names), shared across conversations by the caller.
        max_sessions: replay only the first sessions (a smoke size).
        settings: :class:`memlab.config.Settings` (default: the defaults, no LLM).
        path: the SQLite file (default: a temporary one, removed afterwards).
        on_message: called after each replayed message (a progress bar's ``update``).

    Works in a plain script and inside a running event loop (a Jupyter cell).
    """
    from memlab.config import Settings

    settings = settings or Settings(llm_backend="none")

    def run(db: str) -> ReplayLog:  # on a worker thread inside a running loop (a Jupyter cell)
        return run_blocking(lambda: asyncio.run(_replay(conv, index, plants, path=db, embedder=embedder, judge=judge,
                                                        max_sessions=max_sessions, settings=settings,
                                                        on_message=on_message)),
                            thread_name="memlab-alarms")

    if path is not None:
        return run(path)
    with tempfile.TemporaryDirectory(prefix="memlab-alarms-") as tmp:
        return run(str(Path(tmp) / "replay.db"))


def _pair_of(n: dict[str, Any]) -> set[int]:
    return {int(i) for i in n.get("memory_ids") or []}


def _alarm(n: dict[str, Any]) -> bool:
    """A HIGH or MEDIUM contradiction notification (what a plant must raise, what a decoy must not)."""
    return n.get("urgency") in ("high", "medium")


class AlarmsTask(EvalTask):
    """Replay LoCoMo conversations and count contradiction notifications (see the module docstring).

    Args:
        split: ``dev``, ``test`` or ``all``.
        plants: a plants file, or ``None``.
        data_dir: another copy of LoCoMo.
        embedder, judge: names or objects (default: the settings' defaults).
        max_sessions: replay only the first sessions of each conversation (plants said after them, or contradicting
            a turn of a later session, are left out of the plant figures).
        settings: :class:`memlab.config.Settings` fields for the replayed databases (e.g.
            ``{"integrity_confidence_threshold": 0.9}``); the LLM is always off.
    """

    name = "alarms"
    primary_metric = "alarms.per_100"

    def __init__(self, *, split: str = "test", plants: str | Path | None = None, data_dir: str | Path | None = None,
                 embedder: Any = None, judge: Any = None, max_sessions: int | None = None,
                 settings: dict[str, Any] | None = None) -> None:
        from memlab.datasets.locomo import LOCOMO_SPLITS

        if split not in LOCOMO_SPLITS:
            raise InvalidInputError(f"The 'split' parameter of memlab eval alarms must be one of {LOCOMO_SPLITS}. "
                                    f"Got {split!r} instead.")
        self.split = split
        self.plants_path = None if plants is None else Path(plants)
        self.plants = load_plants(plants) if plants is not None else []
        self.data_dir = data_dir
        self.embedder_arg, self.judge_arg = embedder, judge
        self.max_sessions = check_limit(max_sessions, "the alarms task (max_sessions)")
        from memlab.config import Settings

        try:
            self.settings = Settings(**{**(settings or {}), "llm_backend": "none"})
        except Exception as exc:  # pydantic's ValidationError -> memlab's error
            raise InvalidInputError(f"Invalid settings for memlab eval alarms: {exc}") from exc
        self.settings_overrides = dict(settings or {})
        self._components: tuple[Any, Any] | None = None
        self._plants_here: list[Plant] = []  # the plants of the sampled conversations (set by samples)

    def _load(self) -> tuple[Any, Any]:
        if self._components is None:
            from memlab.embedding import resolve_embedder
            from memlab.judges import resolve_judge

            settings = self.settings
            emb = self.embedder_arg
            if emb is None or isinstance(emb, str):
                emb = resolve_embedder(emb or settings.embedder, settings=settings)
            judge, _ = resolve_judge(self.judge_arg, settings=settings)
            self._components = (emb, judge)
        return self._components

    def samples(self, limit: int | None, seed: int) -> Sequence[tuple[int, Any]]:
        """The split's conversations (with their file index); ``limit`` keeps the first ones (whole conversations:
        a memory must live)."""
        from memlab.datasets import load_locomo
        from memlab.datasets.locomo import locomo_split

        convs = load_locomo(data_dir=self.data_dir)
        indexed = locomo_split(list(enumerate(convs)), self.split, owner="memlab eval alarms")
        if not indexed:
            raise InvalidInputError(f"LoCoMo has no conversation in split {self.split!r} here.")
        known = {i for i, _ in indexed}
        stray = sorted({p.conv for p in self.plants} - set(range(len(convs))))
        if stray:
            raise InvalidInputError(f"Plants name conversations {stray} that do not exist.")
        self._plants_here = [p for p in self.plants if p.conv in known and self._replayed(p)]
        for p in self._plants_here:  # every plant must point at real turns of its speaker
            conv = convs[p.conv]
            try:
                conv.turn(p.after)
                said = conv.turn(p.contradicts)
            except KeyError as exc:
                raise InvalidInputError(f"Plant {p.id!r}: conversation {p.conv} has no turn {exc}.") from exc
            if said.speaker != p.speaker:
                raise InvalidInputError(f"Plant {p.id!r}: {p.contradicts} was said by {said.speaker!r}, "
                                        f"not {p.speaker!r}.")
        return indexed[:limit] if limit else indexed

    def _replayed(self, p: Plant) -> bool:
        """Whether ``p`` and the turn it contradicts are both in the replayed sessions (``max_sessions``): a plant
        whose line or original is never said can be neither caught nor missed."""
        if self.max_sessions is None:
            return True
        return all(int(ref[1:].split(":")[0]) <= self.max_sessions for ref in (p.after, p.contradicts))

    def solve(self, samples: Sequence[tuple[int, Any]], *, progress: bool) -> list[ReplayLog]:
        emb, judge = self._load()
        out = []
        bar = None
        if progress:  # one tick per replayed message: a whole split is ~4,000 messages and tens of minutes
            from tqdm.auto import tqdm

            total = 0
            for i, conv in samples:
                sessions = conv.sessions if self.max_sessions is None else conv.sessions[:self.max_sessions]
                total += sum(1 for s in sessions for t in s.turns if (t.text or "").strip())
                total += sum(1 for p in self._plants_here if p.conv == i)
            bar = tqdm(total=total, desc="alarms: replay", unit="msg")
        for i, conv in samples:
            plants = [p for p in self._plants_here if p.conv == i]
            if bar is not None:
                bar.set_postfix_str(conv.sample_id)
            rl = replay_conversation(conv, i, plants, embedder=emb, judge=judge, max_sessions=self.max_sessions,
                                     settings=self.settings, on_message=bar.update if bar is not None else None)
            log.info("alarms: conversation %d: %d messages, %d notifications in %.0fs", i, rl.n_messages,
                     len(rl.notifications), rl.seconds)
            out.append(rl)
        if bar is not None:
            bar.close()
        return out

    def score(self, samples: Sequence[Any], solved: list[ReplayLog], *, seed: int, seconds: float) -> Scored:
        plants = {p.id: p for p in self._plants_here}
        examples: list[Example] = []
        natural: list[tuple[ReplayLog, dict[str, Any]]] = []
        per_conv = {}
        n_msgs = n_natural_msgs = 0
        plant_rows = []
        pm_of: dict[str, set[int]] = {}
        om_of: dict[str, set[int]] = {}
        for rl in solved:
            planted_mem = {m for ref, ids in rl.memories.items() if ref.startswith("plant:") for m in ids}
            mine = [n for n in rl.notifications if not (_pair_of(n) & planted_mem)]
            natural += [(rl, n) for n in mine]
            msgs = rl.n_messages - rl.n_plants
            n_msgs += rl.n_messages
            n_natural_msgs += msgs
            urg = Counter(n["urgency"] for n in mine)
            per_conv[str(rl.conv)] = {
                "sample_id": rl.sample_id, "messages": msgs, "notifications": len(mine), "by_urgency": dict(urg),
                "per_100": _per_100(len(mine), msgs), "high_per_100": _per_100(urg["high"], msgs),
                "medium_per_100": _per_100(urg["medium"], msgs), "low_per_100": _per_100(urg["low"], msgs),
                "active_memories": rl.active_memories, "turn_kinds": rl.kinds, "seconds": round(rl.seconds, 1)}
            for pid, p in plants.items():
                if p.conv != rl.conv:
                    continue
                pm = set(rl.memories.get(f"plant:{pid}", []))
                om = set(rl.memories.get(p.contradicts, []))
                # an alarm between two planted lines (a decoy that contradicts another plant on the same topic)
                # says nothing of the conversation: neither a catch nor a decoy's false alarm
                others = planted_mem - pm
                alarms = [n for n in rl.notifications if _alarm(n) and _pair_of(n) & pm and not _pair_of(n) & others]
                hit = [n for n in alarms if _pair_of(n) & om]
                plant_rows.append((p, bool(pm), bool(om), hit, alarms))
                pm_of[pid], om_of[pid] = pm, om
        for rl in solved:
            planted = {m: ref[6:] for ref, ids in rl.memories.items() if ref.startswith("plant:") for m in ids}
            for n in rl.notifications:
                payload = n.get("payload") or {}
                details = payload.get("details") or {}
                plant = sorted({planted[i] for i in _pair_of(n) if i in planted})
                examples.append(Example(
                    id=f"c{rl.conv}-n{n['id']}", gold=None, pred=n["urgency"], score=payload.get("confidence"),
                    decided_by=payload.get("decided_by"), group=str(rl.conv),
                    meta={"first": (payload.get("first") or {}).get("text"),
                          "second": (payload.get("second") or {}).get("text"), "user_id": n["user_id"],
                          "conflict_type": payload.get("conflict_type"), "rule": details.get("rule"),
                          "cue": details.get("cue"), "values": details.get("values"),
                          "memory_ids": sorted(_pair_of(n)), "plant": plant[0] if plant else None}))
        for p, stored, ostored, hit, alarms in plant_rows:
            caught = bool(hit) if p.label == "contradiction" else bool(alarms)
            top = (hit or alarms or [None])[0]
            examples.append(Example(  # one row per plant; its notifications are rows of their own (meta.plant)
                id=f"plant:{p.id}", gold=p.label, pred="caught" if caught else "missed", decided_by=((top or {}).get("payload") or {}).get("decided_by"), group=str(p.conv),
                meta={"plant": asdict(p), "plant_stored": stored, "original_stored": ostored,
                      "plant_memories": sorted(pm_of[p.id]), "original_memories": sorted(om_of[p.id]),
                      "urgency": (top or {}).get("urgency"), "alarm": caught}))
        urg = Counter(n["urgency"] for _, n in natural)
        layers = Counter(str((n.get("payload") or {}).get("decided_by")) for _, n in natural)
        layers_high = Counter(str((n.get("payload") or {}).get("decided_by")) for _, n in natural
                              if n["urgency"] == "high")
        metrics: dict[str, Any] = {"alarms": {
            "messages": n_natural_msgs, "notifications": len(natural),
            "per_100": _per_100(len(natural), n_natural_msgs),
            "high_per_100": _per_100(urg["high"], n_natural_msgs),
            "medium_per_100": _per_100(urg["medium"], n_natural_msgs),
            "low_per_100": _per_100(urg["low"], n_natural_msgs),
            "by_urgency": dict(urg), "by_layer": dict(layers), "high_by_layer": dict(layers_high),
            "per_conversation": per_conv, **_conversation_spread(per_conv, seed),
            "messages_per_second": round(n_msgs / seconds, 2) if seconds > 0 else None,
        }}
        if plant_rows:
            metrics["plants"] = _plant_metrics(plant_rows, seed)
        return Scored(metrics=metrics, examples=examples, n=n_natural_msgs)

    def spec(self) -> dict[str, Any]:
        emb, judge = self._components or (self.embedder_arg, self.judge_arg)
        from memlab.datasets import dataset_sha256

        return {"dataset": "locomo", "split": self.split, "data_dir": str(self.data_dir) if self.data_dir else None,
                "data_sha256": dataset_sha256("locomo", "test", self.data_dir),  # the registry's one LoCoMo file
                "judge": getattr(judge, "name", judge), "params": {
                    "embedder": getattr(emb, "name", emb), "max_sessions": self.max_sessions,
                    "plants": str(self.plants_path) if self.plants_path else None,
                    "n_plants": len(self._plants_here), "settings": self.settings_overrides}}


def _per_100(n: int, messages: int) -> float:
    return round(100.0 * n / messages, 3) if messages else 0.0


def _interval(metric: Callable[..., float], *arrays: Sequence[Any], seed: int) -> list[float] | None:
    """A 95% bootstrap interval of ``metric`` (3 decimals), or None without data."""
    if not arrays or not len(arrays[0]):
        return None
    lo, hi = bootstrap_ci(metric, *arrays, seed=seed)
    return [round(lo, 3), round(hi, 3)]


def _conversation_spread(per_conv: dict[str, dict[str, Any]], seed: int) -> dict[str, Any]:
    """How far the rates may move for other conversations: the worst conversation, and 95% bootstrap intervals of
    the per-100 rates that resample whole conversations (one user's messages are not independent draws, so the
    conversation, not the message, is the unit; with one conversation the interval is that conversation's rate)."""
    convs = list(per_conv.values())
    if not convs:
        return {}
    msgs = np.array([c["messages"] for c in convs], dtype=float)
    counts = {"per_100": np.array([c["notifications"] for c in convs], dtype=float),
              "high_per_100": np.array([c["by_urgency"].get("high", 0) for c in convs], dtype=float)}

    def per_100(n: NDArray[np.float64], m: NDArray[np.float64]) -> float:
        return 100.0 * float(n.sum()) / float(m.sum()) if m.sum() else 0.0

    return {"worst_conversation_per_100": max(c["per_100"] for c in convs),
            "ci95": {key: _interval(per_100, n, msgs, seed=seed) for key, n in counts.items()}}


def _plant_metrics(rows: list[tuple[Plant, bool, bool, list[Any], list[Any]]], seed: int) -> dict[str, Any]:
    contra = [r for r in rows if r[0].label == "contradiction"]
    decoys = [r for r in rows if r[0].label == "compatible"]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in sorted({r[0].kind for r in contra}):
        mine = [r for r in contra if r[0].kind == kind]
        by_kind[kind] = {"n": len(mine), "caught": sum(1 for r in mine if r[3]),
                         "recall": round(sum(1 for r in mine if r[3]) / len(mine), 3)}

    def share(rs: list[Any], pred: Any) -> float | None:
        return round(sum(1 for r in rs if pred(r)) / len(rs), 3) if rs else None

    return {
        "contradictions": len(contra), "decoys": len(decoys),
        "recall": share(contra, lambda r: bool(r[3])),
        "recall_high": share(contra, lambda r: any(n.get("urgency") == "high" for n in r[3])),
        "decoy_false_alarm_rate": share(decoys, lambda r: bool(r[4])),
        "stored": share(contra, lambda r: r[1]), "original_stored": share(contra, lambda r: r[2]),
        "both_stored": share(contra, lambda r: r[1] and r[2]),
        "recall_when_both_stored": share([r for r in contra if r[1] and r[2]], lambda r: bool(r[3])),
        "by_kind": by_kind,
        "ci95": {"recall": _interval(np.mean, np.array([bool(r[3]) for r in contra], dtype=float), seed=seed),
                 "decoy_false_alarm_rate": _interval(
                     np.mean, np.array([bool(r[4]) for r in decoys], dtype=float), seed=seed)},
    }


def run_alarms_task(*, out_dir: str | Path | None = None, seed: int = 0, split: str = "test",
                    plants: str | Path | None = None, limit: int | None = None, max_sessions: int | None = None,
                    data_dir: str | Path | None = None, embedder: Any = None, judge: Any = None,
                    settings: dict[str, Any] | None = None, progress: bool = False, command: str | None = None,
                    **_: Any) -> EvalRun:
    """Run the alarms task (the suite's and the CLI's entry point; see :class:`AlarmsTask`).

    ``limit``: the first N conversations of the split; ``max_sessions``: the first sessions of each.
    """
    task = AlarmsTask(split=split, plants=plants, data_dir=data_dir, embedder=embedder, judge=judge,
                      max_sessions=max_sessions, settings=settings)
    return run_task(task, limit=limit, seed=seed, out_dir=out_dir, command=command, progress=progress,
                    max_error_rate=1.0)
