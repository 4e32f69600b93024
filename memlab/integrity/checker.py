"""``SemanticIntegrityChecker``: layered contradiction detection over a :class:`~memlab.store.MemoryStore`.

Levels, cheap to expensive; each level can decide a pair or pass it on:

1. **candidates** — which earlier memories of the *same user* to compare with:

   * ``faiss``: the top-N (``integrity_max_similar_memories``) active memories by cosine, kept when the
     cosine is above the candidate threshold (``similarity_threshold``, or the embedder's calibrated
     ``thresholds.candidate`` when the setting is ``None``);
   * ``same_key``: every active memory with the same ``key`` (and project);
   * ``version``: the memory this one superseded, or the one it lost to (inactive, but the user must be asked);
   * ``attribute``: memories that speak about the same attribute as this one, found *without* the cosine,
     because an English embedder scores Italian/Chinese pairs low: the item's entities and
     pattern facts name attribute groups (birth, height, residence, name, diet, marital status ...); each
     group has cue words (``nat``, ``born``, ``compleann``, ``生日`` ...) that select the user's active
     memories with a SQL ``LIKE`` prefilter (most recent first, capped); those rows go through entity
     extraction (cached per memory id) and stay candidates only if they really share an attribute group;
   * ``absolute``: for a memory that states an absolute or a first time ("I've never been hurt", "my very first
     charity race", "non ho mai ...", "第一次"), the user's memories sharing its rarest content words (a SQL
     ``LIKE`` on word stems, capped by ``max_absolute_candidates``): such a statement contradicts any earlier
     event of the same kind, which an embedding of the whole sentence often ranks below the threshold
     ("I've never been hurt myself" / "Last month I got hurt and had to take a break from pottery");
   * ``lexical``: the user's memories sharing the rarest content-word stems of any memory (the same ``LIKE`` lookup,
     capped by ``max_lexical_candidates``), and for an absolute, a habit, an allergy, a zodiac sign or a birthday
     those holding its category's words (:func:`memlab.integrity.values.category_forms`): "Ho un solo fratello" /
     "I miei fratelli, Luca e Andrea, ..." share ``frate``, "Non mangio mai carne" / "... una bistecca" share the
     meat category, whatever their cosine (Italian pairs score low). A pair found only this way goes to the
     **values** level alone: it is never sent to the entities, patterns or judge levels, so it adds no judge verdicts;
   * ``exhaustive`` (``integrity_check_exhaustive=True``): every active memory of the user.

2. **entities** — same attribute + same subject + different normalised value (dates, numbers with units,
   names, places, organisations), and same key with a different value.
3. **patterns** — rules of :mod:`memlab.integrity.patterns` (born vs birthday, exclusive preferences, diet,
   marital status, project status, ...). This level also decides *consistent* pairs of short statements
   whose structured facts agree (paraphrase, another person's fact, birthday vs anniversary, two events,
   two different likes: :func:`~memlab.integrity.patterns.consistent_reason`), so they never reach the judge.
   A pair where one side only asks questions ("Do you like your job?") is consistent before any level runs:
   a question states no fact (:func:`~memlab.integrity.patterns.asserts_nothing`).
   Two different dates of the same person whose kinds are easy to mix up (birthday vs wedding anniversary,
   :data:`~memlab.integrity.patterns.CLOSE_DATE_PAIRS`) are consistent too, but reported in
   ``IntegrityResult.clarifications`` as a LOW-urgency question (never a contradiction, never HIGH); the
   anniversary memories of a birthday (and back) are pulled as ``close_attribute`` candidates for this only.
4. **judge** — the pairs still undecided go to the judge in ONE batch; a contradiction is reported only at
   probability >= ``integrity_confidence_threshold``. The judge work of one check is bounded (not in exhaustive
   mode nor ``check_all``): **early exit** — when the entities or patterns level already found a contradiction
   for the memory (at the confidence threshold), its undecided pairs are not judged (``judge_after_hit=False``;
   the decision cannot change); **cap** — at most ``max_judged_pairs`` pairs per memory go to the judge, ranked
   version link, same key, absolute, then cosine to the memory (highest first; the cosine is computed from the stored
   vectors for candidates that did not come from the FAISS search), then newest.

``check`` is a pure function of the store's state and the item: it writes nothing.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memlab.entities import STABLE_ATTRIBUTES, Entity, EntityKind, extract_entities
from memlab.errors import InvalidInputError, JudgeError, NotFoundError
from memlab.integrity import explain as X
from memlab.integrity.patterns import (
    Facts,
    absolute_stems,
    asserts_nothing,
    close_date_entities,
    compare_facts,
    consistent_reason,
    content_stems,
    differing_values,
    exclusive_cue,
    summarise,
)
from memlab.protocols import Judge
from memlab.records import ConflictType, Contradiction, IntegrityResult, Label, MemoryItem, Urgency
from memlab.store import MemoryStore
from memlab.text import ABSOLUTE_OR_FIRST, LANGS, detect_lang, messages

__all__ = ["LEVELS", "IntegrityConfig", "SemanticIntegrityChecker"]

log = logging.getLogger(__name__)

#: One English, one Italian and one Chinese pair: :meth:`SemanticIntegrityChecker.warm_up` sends them to the judge.
WARM_UP_PAIRS: tuple[tuple[str, str], ...] = (
    ("I live in Rome and work as a nurse.", "I have never lived in Rome."),
    ("Abito a Roma e lavoro come infermiera.", "Non ho mai abitato a Roma."),
    ("我住在罗马。", "我从来没有住在罗马。"),
)

#: Decision levels after candidate selection, in order. ``values`` (:mod:`memlab.integrity.values`: numbers in words,
#: counts vs enumerations, places inside places, absolutes vs habits, allergies; ``decided_by`` ``values:<layer>``)
#: runs before ``entities``, which would call "Rome" / "Italy" or "34" / "thirty-four" two different values.
LEVELS: tuple[str, ...] = ("values", "entities", "patterns", "judge")

_KIND_TYPE = {
    EntityKind.DATE: ConflictType.DATE,
    EntityKind.NUMBER: ConflictType.NUMBER,
    EntityKind.NAME: ConflictType.NAME,
    EntityKind.PLACE: ConflictType.PLACE,
    EntityKind.ORG: ConflictType.OTHER,
}
_UPDATE_ATTRS = {"lives_in", "works_at", "name", "weight", "count"}

#: attribute group -> SQL LIKE fragments used to pull candidates that share an attribute (lower-cased text).
ATTRIBUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "birth": ("nat", "nasc", "born", "birth", "compleann", "bday", "生日", "出生", "生于"),
    "anniversary": ("anniversar", "纪念", "wedding"),
    "deadline": ("scad", "deadline", "due", "entro", "consegn", "截止"),
    "height": ("alt", "tall", "height", "statura", "cm", "身高", "feet", "ft"),
    "weight": ("pes", "weigh", "kg", "chil", "lb", "pound", "体重", "公斤", "斤"),
    "age": ("anni", "year", "old", "età", "age", "岁"),
    "name": ("chiam", "name", "call me", "叫", "名字"),
    "lives_in": ("abit", "viv", "live", "moved", "trasfer", "resid", "住", "搬"),
    "from_place": ("nat", "from", "vengo", "origin", "来自", "老家"),
    "works_at": ("lavor", "work", "employ", "工作", "上班"),
    "count": ("ho ", "have", "有"),
    "preference": ("prefer", "favo", "preferit", "piac", "love", "like", "hate", "odio", "adoro", "喜欢", "讨厌", "amo "),
    "diet": ("veg", "carne", "meat", "steak", "bistecc", "burger", "chicken", "pollo", "素", "肉"),
    "marital": ("single", "sposat", "married", "wife", "husband", "moglie", "marito", "divor", "nubile", "celibe", "结婚",
                "单身", "离婚"),
    "status": ("progett", "project"),
    "gender": ("性别", "女", "男", "woman", "man", "girl", "guy", "donna", "uomo", "ragazz"),
    "zodiac": ("座", "zodiac", "aries", "taurus", "gemini", "cancer", "leo", "virgo", "libra", "scorpio",
               "sagittar", "capricorn", "aquari", "pisces", "segno"),
}
_ATTR_TO_GROUP = {"born": "birth", "birthday": "birth", "anniversary": "anniversary", "deadline": "deadline",
                  "height": "height", "weight": "weight", "age": "age", "name": "name", "lives_in": "lives_in",
                  "from_place": "from_place", "works_at": "works_at", "count": "count"}
#: groups whose memories are also pulled (source ``close_attribute``) for a LOW clarification only: such a pair
#: never goes to the judge (see :data:`memlab.integrity.patterns.CLOSE_DATE_PAIRS`).
_CLOSE_GROUPS: dict[str, tuple[str, ...]] = {"birth": ("anniversary",), "anniversary": ("birth",)}


class IntegrityConfig(BaseModel):
    """Settings of a :class:`SemanticIntegrityChecker` (built from :class:`memlab.config.Settings` + overrides).

    Attributes:
        confidence_threshold: report a contradiction only at confidence >= this.
        max_similar: top-N similar memories from FAISS.
        exhaustive: compare with every active memory of the user.
        similarity_threshold: cosine above which a FAISS neighbour is a candidate, in the embedder's own scale;
            ``None`` (default, as in :class:`memlab.config.Settings`) = the embedder's calibrated
            ``thresholds.candidate``.
        lang: language of explanations.
        levels: decision levels to run (a subset of :data:`LEVELS`, in order).
        max_attribute_candidates: cap on memories pulled per attribute group.
        max_absolute_candidates: most memories pulled as ``absolute`` candidates of a memory stating an absolute or a
            first time (0: none).
        max_lexical_candidates: most memories pulled as ``lexical`` candidates (shared content-word stems, values
            level only; 0: none).
        max_judged_pairs: most pairs of one checked memory sent to the judge (``None``: no cap); not applied in
            exhaustive mode (``exhaustive`` or :meth:`SemanticIntegrityChecker.check_all`).
        absolute_max_judged_pairs: the same cap for a memory that says "never", "first time" or "not yet"
            (:data:`memlab.text.ABSOLUTE_OR_FIRST`): such a statement contradicts any earlier event of its kind, which
            may sit anywhere among its neighbours ("I've never played an instrument in my life" / "I play clarinet!",
            7th by cosine); ``None``: ``max_judged_pairs``.
        judge_after_hit: also judge a memory's undecided pairs when a cheaper level already found a
            contradiction for it (``False``: early exit; not applied in exhaustive mode either).
        judge_medium_threshold: a judge-only contradiction is MEDIUM at this probability or more, else LOW (never
            HIGH: HIGH is for conflicts of structure, which name their two values).
        judge_needs_cue: report a judge-only contradiction only when the texts hold a cue of exclusivity
            (:func:`memlab.integrity.patterns.exclusive_cue`), or at ``judge_no_cue_threshold`` or more.
        judge_no_cue_threshold: the probability at which a judge-only verdict needs no cue.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    confidence_threshold: float = Field(0.78, ge=0.0, le=1.0)
    max_similar: int = Field(10, ge=1)
    exhaustive: bool = False
    similarity_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    lang: Literal["it", "en"] = "it"
    levels: tuple[Literal["values", "entities", "patterns", "judge"], ...] = LEVELS
    max_attribute_candidates: int = Field(50, ge=0)
    max_absolute_candidates: int = Field(2, ge=0)
    max_lexical_candidates: int = Field(3, ge=0)
    max_judged_pairs: int | None = Field(4, ge=1)
    absolute_max_judged_pairs: int | None = Field(None, ge=1)
    judge_after_hit: bool = False
    judge_medium_threshold: float = Field(0.82, ge=0.0, le=1.0)
    judge_needs_cue: bool = True
    judge_no_cue_threshold: float = Field(0.94, ge=0.0, le=1.0)


@dataclass(slots=True)
class _Candidate:
    item: MemoryItem
    similarity: float | None = None
    sources: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Pair:
    new: MemoryItem
    old: _Candidate
    decided: Contradiction | None = None
    undecided: bool = True
    clarify: Contradiction | None = None
    judged: bool = False


def _different_slots(p: _Pair) -> bool:
    """Both memories fill a slot, and not the same one: the judge is not asked (its false positives live there)."""
    a, b = p.new.key, p.old.item.key
    return a is not None and b is not None and a != b


class SemanticIntegrityChecker:
    """Find contradictions between a memory and the rest of its owner's memories.

    Args:
        store: the memory store (read only).
        judge: a :class:`~memlab.protocols.Judge`, a judge name for ``memlab.judges.load_judge`` (loaded lazily,
            on the first pair that reaches the judge), or ``None`` to use ``settings.judge``.
        settings: a :class:`memlab.config.Settings` (its ``integrity_*``, ``similarity_threshold``, ``lang`` and
            ``judge`` fields are used), or ``None`` for the defaults. The checker never reads the environment.
        **overrides: :class:`IntegrityConfig` fields (``confidence_threshold``, ``max_similar``, ``exhaustive``,
            ``similarity_threshold``, ``lang``, ``levels``, ``max_attribute_candidates``, ``max_judged_pairs``,
            ``judge_after_hit``).

    Raises:
        InvalidInputError: an unknown or invalid override.

    Example:
        >>> from memlab.store import MemoryStore
        >>> from memlab.testing import FakeEmbedder, ScriptedJudge
        >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
        >>> a = store.add("u1", "L'utente è nato il 12 luglio 1990")
        >>> b = store.add("u1", "Il compleanno dell'utente è il 15 agosto")
        >>> res = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0)).check(b)
        >>> res.has_contradiction, res.contradictions[0].type.value, res.contradictions[0].decided_by
        (True, 'date', 'patterns')
    """

    def __init__(self, store: MemoryStore, judge: Judge | str | None = None, settings: Any = None, **overrides: Any) -> None:
        base: dict[str, Any] = {}
        judge_name = "default"
        if settings is not None:
            base = {
                "confidence_threshold": settings.integrity_confidence_threshold,
                "max_similar": settings.integrity_max_similar_memories,
                "exhaustive": settings.integrity_check_exhaustive,
                "max_judged_pairs": getattr(settings, "integrity_max_judged_pairs", 4),
                "absolute_max_judged_pairs": getattr(settings, "integrity_absolute_max_judged_pairs", None),
                "max_absolute_candidates": getattr(settings, "integrity_max_absolute_candidates", 2),
                "max_lexical_candidates": getattr(settings, "integrity_max_lexical_candidates", 3),
                "judge_after_hit": getattr(settings, "integrity_judge_after_hit", False),
                "judge_medium_threshold": getattr(settings, "integrity_judge_medium_threshold", 0.82),
                "judge_needs_cue": getattr(settings, "integrity_judge_needs_cue", True),
                "judge_no_cue_threshold": getattr(settings, "integrity_judge_no_cue_threshold", 0.94),
                "similarity_threshold": settings.similarity_threshold,
                "lang": settings.lang,
            }
            judge_name = getattr(settings, "judge", "default") or "default"
        base.update(overrides)
        try:
            self.config = IntegrityConfig(**base)
        except Exception as exc:  # pydantic ValidationError -> memlab's error, same message style
            raise InvalidInputError(f"Invalid settings for SemanticIntegrityChecker: {exc}") from exc
        self.store = store
        self._judge: Judge | None = judge if (judge is not None and not isinstance(judge, str)) else None
        self._judge_name = judge if isinstance(judge, str) else (getattr(judge, "name", None) or judge_name)
        self._facts: OrderedDict[int, Facts] = OrderedDict()
        self._facts_cap = 100_000

    # ------------------------------------------------------------------ public
    @property
    def judge(self) -> Judge:
        """The judge (loaded on first use when given by name)."""
        if self._judge is None:
            from memlab.judges import load_judge

            self._judge = load_judge(self._judge_name)
        return self._judge

    def warm_up(self) -> None:
        """Load what the first check would otherwise load: the language detector, the date parser and the unit
        registry (on the texts of :data:`WARM_UP_PAIRS` and one with dates and units, ~2-4 s together) and, when
        the judge level runs, the judge, with one English, one Italian and one Chinese pair (the default judge
        routes to two models by language; measured on the 2-core machine: ~5 s for the English and ~10 s for the
        multilingual one, plus a slower first batch). Nothing is written to the store.

        Raises:
            JudgeError: the judge failed to load or to run.
        """
        for text in (t for pair in WARM_UP_PAIRS for t in pair):
            self.threshold_for(text)
            extract_entities(text)
        extract_entities("Sono nato il 12 luglio 1990, sono alto 180 cm e peso 70 kg")  # dates, units (pint)
        if "judge" not in self.config.levels:
            return
        try:
            self.judge.judge(WARM_UP_PAIRS)
        except JudgeError:
            raise
        except Exception as exc:  # a judge is third-party code: surface it as memlab's error
            raise JudgeError(f"Judge {self._judge_name!r} failed to warm up: {exc}") from exc

    def warm_user(self, user_id: str, *, recent: int = 2000) -> int:
        """Get ready to check ``user_id``'s next memories at full speed: read the entities and pattern facts of
        their ``recent`` newest active memories into the facts cache (what the checker holds anyway for memories it
        checked as they arrived, e.g. after a restart or a bulk import that skipped the check) and load the store's
        per-user caches (active ids, texts for the attribute pull). Nothing is written to the store.

        Returns:
            How many memories' facts were read.

        Example:
            >>> from memlab.store import MemoryStore
            >>> from memlab.testing import FakeEmbedder, ScriptedJudge
            >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
            >>> _ = store.add_many("u1", ["Sono nato il 12 luglio 1990", "Abito a Roma"])
            >>> SemanticIntegrityChecker(store, ScriptedJudge(default=0.0)).warm_user("u1")
            2
        """
        from memlab._validation import check_positive_int, check_user_id

        user_id = check_user_id(user_id, owner="SemanticIntegrityChecker.warm_user")
        recent = check_positive_int(recent, name="recent", owner="SemanticIntegrityChecker.warm_user")
        items = self.store.list(user_id)[-recent:]
        for m in items:
            self.facts(m)
        if items:
            self.store.find_containing(user_id, ATTRIBUTE_GROUPS["birth"], limit=1)
            self.store.search_by_vector(user_id, self.store.vectors([items[-1].id])[0], 1)
        return len(items)

    @property
    def candidate_threshold(self) -> float:
        """The cosine threshold in use (the setting, or the embedder's calibrated candidate threshold)."""
        if self.config.similarity_threshold is not None:
            return float(self.config.similarity_threshold)
        th = getattr(getattr(self.store, "embedder", None), "thresholds", None)
        return float(getattr(th, "candidate", 0.7))

    def threshold_for(self, text: str) -> float:
        """The candidate threshold for a memory with this text: the setting when set, else the embedder's
        calibrated threshold for the text's detected language (see :func:`memlab.embedding.candidate_threshold`)."""
        from memlab.embedding import candidate_threshold

        embedder = getattr(self.store, "embedder", None)
        if embedder is None:
            return self.candidate_threshold
        return float(candidate_threshold(embedder, text, self.config.similarity_threshold))

    def get_params(self) -> dict[str, Any]:
        """JSON-able description, recorded in eval runs."""
        judge_params: Any = self._judge_name
        if self._judge is not None and hasattr(self._judge, "get_params"):
            judge_params = self._judge.get_params()
        return {**self.config.model_dump(), "candidate_threshold": self.candidate_threshold, "judge": judge_params}

    def check(self, item: MemoryItem | int) -> IntegrityResult:
        """Check one stored memory against its owner's other memories.

        Args:
            item: the memory (or its id). It must be stored; its owner is read from the store, never trusted
                from the argument.

        Returns:
            An :class:`~memlab.records.IntegrityResult` (contradictions strongest first).

        Raises:
            NotFoundError: the item is not in the store.
            JudgeError: the judge failed.
        """
        return self._check_many([self._resolve(item)], only_earlier=False)[0]

    def check_all(self, user_id: str, *, batch_size: int = 64, progress: bool = True) -> list[IntegrityResult]:
        """Exhaustively check every active memory of ``user_id`` (each pair once: against earlier memories).

        Candidates are all the user's earlier active memories (plus version links); undecided pairs of a batch
        of ``batch_size`` memories go to the judge together. A tqdm bar shows progress.

        Returns:
            One result per active memory, in id order.
        """
        from tqdm.auto import tqdm

        from memlab._validation import check_positive_int, check_user_id

        user_id = check_user_id(user_id, owner="SemanticIntegrityChecker.check_all")
        batch_size = check_positive_int(batch_size, name="batch_size", owner="SemanticIntegrityChecker.check_all")
        items = list(self.store.iter_all(user_id))
        out: list[IntegrityResult] = []
        with tqdm(total=len(items), desc="integrity", disable=not progress) as bar:
            for start in range(0, len(items), batch_size):
                chunk = items[start : start + batch_size]
                out.extend(self._check_many(chunk, only_earlier=True, everyone=items))
                bar.update(len(chunk))
        return out

    # ------------------------------------------------------------------ internals
    def _resolve(self, item: MemoryItem | int) -> MemoryItem:
        item_id = item.id if isinstance(item, MemoryItem) else item
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise NotFoundError(f"SemanticIntegrityChecker.check needs a MemoryItem or an int id. Got {item!r} instead.")
        return self.store.get_many([int(item_id)])[0]  # a check works within the item's own user

    def facts(self, item: MemoryItem) -> Facts:
        """Entities + pattern facts of a memory (cached by id; memory texts never change)."""
        f = self._facts.get(item.id)
        if f is not None and f.text == item.text:
            self._facts.move_to_end(item.id)
            return f
        ents = tuple(extract_entities(item.text, ref_time=item.created_at))
        f = summarise(item.text, ents, item.created_at)
        self._facts[item.id] = f
        if len(self._facts) > self._facts_cap:
            self._facts.popitem(last=False)
        return f

    def _groups(self, f: Facts) -> set[str]:
        from memlab.integrity.values import analyse

        # the entities as written and as said ("Ho quarantun anni", "sono dell'87": read after normalisation)
        ents = f.entities + analyse(f.text, entities=f.entities).norm_entities
        groups = {_ATTR_TO_GROUP[e.attribute] for e in ents if e.attribute in _ATTR_TO_GROUP}
        if f.prefs or f.likes:
            groups.add("preference")
        for name in ("diet", "marital", "gender", "zodiac"):
            if getattr(f, name):
                groups.add(name)
        if f.status:
            groups.add("status")
        return groups

    def candidates(self, item: MemoryItem, *, only_earlier: bool = False,
                   everyone: Sequence[MemoryItem] | None = None) -> list[tuple[MemoryItem, float | None, set[str]]]:
        """The memories ``item`` is compared with: ``(memory, cosine or None, sources)``.

        Sources are ``faiss``, ``same_key``, ``version``, ``attribute``, ``absolute``, ``lexical``, ``exhaustive``
        (see the module docs).
        Only memories of ``item``'s owner are ever returned.
        """
        return [(c.item, c.similarity, c.sources) for c in self._candidates(item, only_earlier, everyone)]

    def _candidates(self, item: MemoryItem, only_earlier: bool, everyone: Sequence[MemoryItem] | None,
                    timing: dict[str, float] | None = None) -> list[_Candidate]:
        """The candidates of ``item``; ``timing`` (when given) gets the milliseconds of ``search`` (threshold + FAISS
        + rows), ``attribute_sql`` and ``attribute_facts`` (entity extraction of the pulled rows), ``other``."""
        t_start = time.perf_counter()
        tm: dict[str, float] = {"search": 0.0, "attribute_sql": 0.0, "attribute_facts": 0.0}
        st = self.store
        uid = item.user_id
        found: dict[int, _Candidate] = {}

        def add(m: MemoryItem, source: str, sim: float | None = None) -> None:
            if m.id == item.id or m.user_id != uid or (only_earlier and m.id > item.id and source != "version"):
                return
            c = found.setdefault(m.id, _Candidate(m))
            c.sources.add(source)
            if sim is not None:
                c.similarity = sim

        if self.config.exhaustive or everyone is not None:
            pool = everyone if everyone is not None else list(st.iter_all(uid))
            for m in pool:
                add(m, "exhaustive")
        else:
            t = time.perf_counter()
            vec = st.vectors([item.id])[0]
            th = self.threshold_for(item.text)
            for m, s in st.search_by_vector(uid, vec, self.config.max_similar, exclude=[item.id]):
                if s > th:
                    add(m, "faiss", s)
            tm["search"] = (time.perf_counter() - t) * 1000
            if item.key is not None:
                for m in st.list(uid, key=item.key, project_id=item.project_id):
                    if m.project_id == item.project_id:
                        add(m, "same_key")
            if self.config.max_attribute_candidates > 0:
                self._attribute_candidates(item, add, tm)
            if self.config.max_absolute_candidates > 0:
                self._stem_candidates(item, absolute_stems(item.text), "absolute", self.config.max_absolute_candidates,
                                      add)
            if self.config.max_lexical_candidates > 0 and "values" in self.config.levels:
                self._stem_candidates(item, content_stems(item.text), "lexical", self.config.max_lexical_candidates,
                                      add)
                self._category_candidates(item, add)
        for link in (item.supersedes, item.superseded_by):
            if link is not None:
                try:
                    m = st.get(int(link), user_id=uid)
                except NotFoundError:
                    continue
                add(m, "version")
        if timing is not None:
            total = (time.perf_counter() - t_start) * 1000
            for k, v in tm.items():
                timing[f"candidates.{k}"] = v
            timing["candidates.other"] = max(0.0, total - sum(tm.values()))
        return sorted(found.values(), key=lambda c: c.item.id)

    def _attribute_candidates(self, item: MemoryItem, add: Any, tm: dict[str, float]) -> None:
        t = time.perf_counter()
        f = self.facts(item)
        groups = self._groups(f)
        tm["attribute_facts"] += (time.perf_counter() - t) * 1000
        if not groups:
            return
        close = {c for g in groups for c in _CLOSE_GROUPS.get(g, ())} - groups
        for g in sorted(groups | close):
            t = time.perf_counter()
            found = self.store.find_containing(
                item.user_id, ATTRIBUTE_GROUPS[g], exclude_id=item.id, limit=self.config.max_attribute_candidates
            )
            t1 = time.perf_counter()
            tm["attribute_sql"] += (t1 - t) * 1000
            for m in found:
                if g in self._groups(self.facts(m)):
                    add(m, "close_attribute" if g in close else "attribute")
            tm["attribute_facts"] += (time.perf_counter() - t1) * 1000

    def _category_candidates(self, item: MemoryItem, add: Any) -> None:
        """``lexical`` candidates of an absolute, a habit, an allergy, a sign or a birthday: the user's newest memories
        holding the words of its category (:func:`memlab.integrity.values.category_forms`: "Non mangio mai carne" finds "Ogni sabato
        mi faccio una bistecca"), capped by ``max_lexical_candidates``; the values level alone decides them."""
        from memlab.integrity.values import category_forms

        forms = category_forms(item.text)
        if forms:
            for m in self.store.find_containing(item.user_id, forms, exclude_id=item.id,
                                                limit=self.config.max_lexical_candidates):
                add(m, "lexical")

    def _stem_candidates(self, item: MemoryItem, stems: Sequence[tuple[str, float]], source: str, cap: int,
                         add: Any) -> None:
        """The ``absolute`` or ``lexical`` candidates (see the module docs): the user's memories holding ``stems``
        (of the rarest content words), ranked by the stems they share, each weighted by its kind (a name 2, another
        word 1) and by how rare it is among the user's memories (/ the memories holding it), then newest."""
        if not stems:
            return
        hits: dict[int, tuple[float, MemoryItem]] = {}
        for stem, weight in stems:
            found = self.store.find_containing(item.user_id, [stem], exclude_id=item.id, limit=20)
            for m in found:
                w, _ = hits.get(m.id, (0.0, m))
                hits[m.id] = (w + weight / len(found), m)
        ranked = sorted(hits.values(), key=lambda h: (-h[0], -h[1].id))
        for _, m in ranked[:cap]:
            add(m, source)

    def _check_many(self, items: Sequence[MemoryItem], *, only_earlier: bool,
                    everyone: Sequence[MemoryItem] | None = None) -> list[IntegrityResult]:
        levels = self.config.levels
        bounded = everyone is None and not self.config.exhaustive  # the judge bounds apply to single checks only
        per_item: list[tuple[MemoryItem, list[_Pair], dict[str, float]]] = []
        for item in items:
            sub: dict[str, float] = {}
            t0 = time.perf_counter()
            cands = self._candidates(item, only_earlier, everyone, sub)
            t1 = time.perf_counter()
            # a question states no fact: a pair with a question-only side is consistent at every level
            asks = asserts_nothing(item.text)
            pairs = [_Pair(item, c, undecided=not asks and not asserts_nothing(c.item.text)) for c in cands]
            stage = {"candidates": (t1 - t0) * 1000, **sub}
            if "values" in levels:  # structured values decide first (a consistent pair goes no further)
                for p in pairs:
                    if p.undecided and p.old.sources != {"close_attribute"}:
                        p.decided, p.undecided = self._values_level(p)
                for p in pairs:  # found by shared words alone: the structured values decide, or nobody does
                    if p.old.sources == {"lexical"}:
                        p.undecided = False
                t_values = time.perf_counter()
                stage["values"] = (t_values - t1) * 1000
                t1 = t_values
            if "entities" in levels:
                for p in pairs:
                    if p.undecided:
                        p.decided = self._entities_level(p)
                        p.undecided = p.decided is None
            t2 = time.perf_counter()
            stage["entities"] = (t2 - t1) * 1000
            if "patterns" in levels:
                for p in pairs:
                    if p.undecided:
                        p.decided = self._patterns_level(p)
                        # a short pair whose facts are known to agree, or two memories filling different slots
                        # (home_city vs employer: cross-slot rules such as age vs birth year ran above), is
                        # decided "consistent": no judge call
                        if p.decided is None:
                            reason = consistent_reason(self.facts(p.old.item), self.facts(p.new))
                            p.undecided = not _different_slots(p) and reason is None
                            if reason == "different_dates":
                                p.clarify = self._clarification(p)
                        else:
                            p.undecided = False
                        # pulled only for a possible clarification: never sent to the judge
                        p.undecided = p.undecided and p.old.sources != {"close_attribute"}
            stage["patterns"] = (time.perf_counter() - t2) * 1000
            if bounded and "judge" in levels:
                self._bound_judge_work(item, pairs)
            per_item.append((item, pairs, stage))
        if "judge" in levels:
            todo = [p for _, pairs, _ in per_item for p in pairs if p.undecided]
            sent = [sum(1 for p in pairs if p.undecided) for _, pairs, _ in per_item]
            t3 = time.perf_counter()
            if todo:
                self._judge_level(todo)
            judge_ms = (time.perf_counter() - t3) * 1000
            for (_, _, stage), mine in zip(per_item, sent, strict=True):
                # one batch for all items: each item is charged its share of the pairs it sent
                stage["judge"] = judge_ms * mine / len(todo) if todo else 0.0
        out = []
        th = self.config.confidence_threshold
        for item, pairs, stage in per_item:
            cons = [p.decided for p in pairs if p.decided is not None and p.decided.confidence >= th]
            cons.sort(key=lambda c: (-c.confidence, c.other_id))
            out.append(IntegrityResult(
                item_id=item.id, has_contradiction=bool(cons), contradictions=tuple(cons),
                confidence=max((c.confidence for c in cons), default=0.0), n_candidates=len(pairs),
                stage_ms=stage, clarifications=tuple(p.clarify for p in pairs if p.clarify is not None),
                n_judged=sum(1 for p in pairs if p.judged)))
        return out

    def _judge_order(self, item: MemoryItem, pairs: Sequence[_Pair]) -> list[_Pair]:
        """``pairs`` of ``item`` in the order the judge cap keeps them: version link, same key, then the cosine to
        ``item`` (highest first; computed from the stored vectors when the candidate has none), then newest."""
        missing = [p.old.item.id for p in pairs if p.old.similarity is None]
        cos: dict[int, float] = {}
        if missing:
            try:
                vecs = self.store.vectors([item.id, *missing])
            except NotFoundError:  # a row without a vector: such candidates rank last
                vecs = None
            if vecs is not None:
                unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
                cos = {i: float(s) for i, s in zip(missing, unit[1:] @ unit[0], strict=True)}

        def rank(p: _Pair) -> tuple[int, int, int, float, int]:
            src = p.old.sources
            sim = p.old.similarity if p.old.similarity is not None else cos.get(p.old.item.id, -2.0)
            return (0 if "version" in src else 1, 0 if "same_key" in src else 1, 0 if "absolute" in src else 1, -sim,
                    -p.old.item.id)

        return sorted(pairs, key=rank)

    def _bound_judge_work(self, item: MemoryItem, pairs: Sequence[_Pair]) -> None:
        """Early exit and cap (see :class:`IntegrityConfig`): the pairs left out are not judged (consistent)."""
        todo = [p for p in pairs if p.undecided]
        if not todo:
            return
        th = self.config.confidence_threshold
        if not self.config.judge_after_hit and any(
                p.decided is not None and p.decided.confidence >= th for p in pairs):
            keep: list[_Pair] = []
        elif (cap := self._judge_cap(item)) is not None and len(todo) > cap:
            keep = self._judge_order(item, todo)[:cap]
        else:
            return
        kept = {id(p) for p in keep}
        for p in todo:
            if id(p) not in kept:
                p.undecided = False

    def _judge_cap(self, item: MemoryItem) -> int | None:
        """The judge cap of ``item``'s pairs: ``absolute_max_judged_pairs`` for a "never" / "first time" / "not yet"
        statement (when set), else ``max_judged_pairs``."""
        cap = self.config.max_judged_pairs
        wide = self.config.absolute_max_judged_pairs
        if cap is None or wide is None or not ABSOLUTE_OR_FIRST.search(item.text.replace("’", "'")):
            return cap
        return max(cap, wide)

    def _make(self, p: _Pair, *, confidence: float, type: ConflictType, explanation: str, level: str,
              urgency: Urgency = Urgency.HIGH, **details: Any) -> Contradiction:
        return Contradiction(
            memory_id=p.new.id, other_id=p.old.item.id, memory_text=p.new.text, other_text=p.old.item.text,
            confidence=float(confidence), type=type, urgency=urgency, explanation=explanation, decided_by=level,
            details={"candidate_sources": sorted(p.old.sources), "similarity": p.old.similarity, **details},
        )

    # ------------------------------------------------------------------ level: values
    def _values_level(self, p: _Pair) -> tuple[Contradiction | None, bool]:
        """Structured values (:func:`memlab.integrity.values.compare_values`): ``(contradiction, still
        undecided)``. A pair its layers call consistent is decided too: no later level, no judge."""
        from memlab.integrity.values import CHANGE_LAYERS, compare_values, explain_values

        new, old = p.new, p.old.item
        d = compare_values(old.text, new.text, old_entities=self.facts(old).entities,
                           new_entities=self.facts(new).entities, old_time=old.created_at,
                           new_time=new.created_at, lang=self.config.lang)
        if d is None:
            return None, True
        if not d.contradiction:
            return None, False
        urgency = Urgency.MEDIUM if d.layer in CHANGE_LAYERS else Urgency.HIGH
        return self._make(p, confidence=d.confidence, type=d.type, level=d.decided_by, urgency=urgency,
                          explanation=explain_values(d, self.config.lang), rule=d.decided_by, reason=d.reason,
                          possible_update=d.update, values=[d.old, d.new], value_info=d.info,
                          explain=X.explain_data("pattern", rule=d.decided_by, old=d.old, new=d.new)), False

    # ------------------------------------------------------------------ level: entities
    def _entities_level(self, p: _Pair) -> Contradiction | None:
        lang = self.config.lang
        new, old = p.new, p.old.item
        if new.key is not None and new.key == old.key and new.project_id == old.project_id \
                and new.value is not None and old.value is not None:
            hit = _compare_values(old.value, new.value)
            if hit is not None:
                kind, ov, nv = hit
                return self._make(p, confidence=0.9, type=_key_type(new.key, kind), level="entities",
                                  explanation=X.explain_key(new.key, ov, nv, lang=lang), source="key", key=new.key,
                                  explain=X.explain_data("key", key=new.key, old=str(ov), new=str(nv)),
                                  values=[old.value, new.value],
                                  spans=[X._human_value(str(ov), lang), X._human_value(str(nv), lang)])
        fn, fo = self.facts(new), self.facts(old)
        for x in fn.entities:
            if x.attribute not in STABLE_ATTRIBUTES:
                continue
            for y in fo.entities:
                if not _comparable(y, x, old, new):
                    continue
                if _differs(y, x, old.created_at, new.created_at):
                    update = x.attribute in _UPDATE_ATTRS
                    conf = 0.85 if x.kind in (EntityKind.PLACE, EntityKind.ORG) else 0.9
                    return self._make(
                        p, confidence=conf, type=_KIND_TYPE[x.kind], level="entities",
                        explanation=X.explain_entities(x.attribute or "", y, x, lang=lang, update=update),
                        source="entities", attribute=x.attribute, subject=x.subject,
                        explain=X.explain_data("entities", attribute=x.attribute or "", old=y, new=x, update=update),
                        values=[y.value, x.value], spans=[y.text, x.text], possible_update=update)
        return None

    # ------------------------------------------------------------------ level: patterns
    def _patterns_level(self, p: _Pair) -> Contradiction | None:
        hit = compare_facts(self.facts(p.old.item), self.facts(p.new))
        if hit is None:
            return None
        return self._make(p, confidence=hit.confidence, type=hit.type, level="patterns",
                          explanation=X.explain_pattern(hit.rule, hit.old, hit.new, lang=self.config.lang),
                          rule=hit.rule, possible_update=hit.update,
                          explain=X.explain_data("pattern", rule=hit.rule, old=hit.old, new=hit.new),
                          values=[_plain(hit.old), _plain(hit.new)])

    def _clarification(self, p: _Pair) -> Contradiction | None:
        """A LOW-urgency question for two different dates of the same person whose kinds are easy to mix up
        (:func:`~memlab.integrity.patterns.close_dates`; the caller has seen ``different_dates``), else ``None``."""
        hit = close_date_entities(self.facts(p.old.item), self.facts(p.new))
        if hit is None:
            return None
        old, new = hit
        lang = detect_lang(p.new.text)
        lang = lang if lang in LANGS else self.config.lang

        def words(e: Entity) -> str:  # dates in words exist for it/en; Chinese keeps the user's own span
            return e.text if lang == "zh" else X._human_value(str(e.value), lang)

        text = messages(lang)["clarify_dates"].format(old=words(old), new=words(new))
        c = self._make(p, confidence=0.5, type=ConflictType.DATE, explanation=text, level="patterns",
                       rule="close_dates", kind="clarification", attributes=[old.attribute, new.attribute],
                       explain=X.explain_data("clarify", old=old, new=new),
                       values=[old.value, new.value], spans=[old.text, new.text])
        return replace(c, urgency=Urgency.LOW)

    # ------------------------------------------------------------------ level: judge
    def _judge_level(self, pairs: list[_Pair]) -> None:
        texts = [(p.old.item.text, p.new.text) for p in pairs]
        try:
            verdicts = self.judge.judge(texts)
        except JudgeError:
            raise
        except Exception as exc:  # a judge is third-party code: surface it as memlab's error
            raise JudgeError(f"Judge {self._judge_name!r} failed on {len(texts)} pairs: {exc}") from exc
        if len(verdicts) != len(pairs):
            raise JudgeError(f"Judge {self._judge_name!r} returned {len(verdicts)} verdicts for {len(pairs)} pairs.")
        for p, v in zip(pairs, verdicts, strict=True):
            p.undecided = False
            p.judged = True
            if v.label is Label.ABSTAIN:
                continue
            prob = float(v.probability)
            if prob < self.config.confidence_threshold:
                continue
            # the judge alone never interrupts (HIGH); without a cue of exclusivity it does not notify at all
            fo, fn = self.facts(p.old.item), self.facts(p.new)
            cue = exclusive_cue(fo, fn)
            if cue is None and self.config.judge_needs_cue and prob < self.config.judge_no_cue_threshold:
                continue
            urgency = Urgency.MEDIUM if prob >= self.config.judge_medium_threshold else Urgency.LOW
            extra: dict[str, Any] = {}
            both = differing_values(fo, fn)
            if both is not None:  # one attribute, two values, and the judge says they clash: a conflict of structure
                urgency = Urgency.HIGH
                extra = {"values": [both[0].value, both[1].value], "spans": [both[0].text, both[1].text],
                         "attribute": both[0].attribute}
            p.decided = self._make(
                p, confidence=prob, type=self._guess_type(p), level="judge", urgency=urgency,
                explanation=X.explain_judge(p.old.item.text, p.new.text, prob, lang=self.config.lang),
                judge=v.judge, label=v.label.value, rationale=v.rationale, cue=cue, **extra,
                explain=X.explain_data("judge", old=p.old.item.text, new=p.new.text, probability=prob))

    def _guess_type(self, p: _Pair) -> ConflictType:
        a = {e.kind for e in self.facts(p.old.item).entities}
        b = {e.kind for e in self.facts(p.new).entities}
        for kind in (EntityKind.DATE, EntityKind.NUMBER, EntityKind.NAME, EntityKind.PLACE):
            if kind in a and kind in b:
                return _KIND_TYPE[kind]
        return ConflictType.OTHER


# ---------------------------------------------------------------------- helpers
def _plain(v: str | Entity) -> str | float:
    return v.value if isinstance(v, Entity) else v


def _comparable(old: Entity, new: Entity, old_item: MemoryItem, new_item: MemoryItem) -> bool:
    if old.attribute != new.attribute or old.kind is not new.kind or old.subject != new.subject:
        return False
    if new.attribute == "count" and old.qualifier != new.qualifier:
        return False
    if new.attribute in ("anniversary", "deadline"):
        same_project = new_item.project_id is not None and new_item.project_id == old_item.project_id
        if not (old.qualifier == new.qualifier or same_project):
            return False
    if new.relative or old.relative:
        return new.attribute in ("born", "deadline")
    return True


def _differs(old: Entity, new: Entity, t_old: datetime | None, t_new: datetime | None) -> bool:
    if old.kind is EntityKind.PLACE and new.kind is EntityKind.PLACE and not old.same_value(new):
        # two places differ here only when the gazetteer knows both and neither is inside the other: "Rome" / "Italy"
        # and "Roma" / "Rome" agree, and a place it does not know may lie inside the other ("Trastevere" / "Roma",
        # "Shoreditch" / "East London"): that pair is left to the later levels
        return _known_apart(str(old.value), str(new.value))
    if new.attribute in ("birthday", "anniversary") and old.day_month and new.day_month:
        return old.day_month != new.day_month
    if new.attribute == "age" and t_old is not None and t_new is not None:
        years = abs((t_new - t_old).days) / 365.25
        return abs(float(new.value) - float(old.value)) > years + 1.01
    return not old.same_value(new)


def _known_apart(a: str, b: str) -> bool:
    """Whether the gazetteers of :func:`memlab.integrity.values.resolve_place` know both place names and neither is
    the other or inside it."""
    from memlab.integrity.values import place_relation, resolve_place

    pa, pb = resolve_place(a), resolve_place(b)
    return pa is not None and pb is not None and place_relation(pa, pb) not in ("same", "contained")


def _compare_values(old: str, new: str) -> tuple[EntityKind | None, str, str] | None:
    """Two slot values: ``None`` when equal (after normalisation), else ``(kind, old, new)``."""
    a, b = extract_entities(old), extract_entities(new)
    if len(a) == 1 and len(b) == 1 and a[0].kind is b[0].kind:
        return None if a[0].same_value(b[0]) else (a[0].kind, old, new)
    na, nb = " ".join(old.casefold().split()), " ".join(new.casefold().split())
    return None if na == nb else (None, old, new)


def _key_type(key: str, kind: EntityKind | None) -> ConflictType:
    if kind is not None:
        return _KIND_TYPE[kind]
    k = key.casefold()
    if any(t in k for t in ("birth", "date", "nascita", "compleanno", "deadline", "anniversary")):
        return ConflictType.DATE
    if "name" in k or "nome" in k:
        return ConflictType.NAME
    if any(t in k for t in ("city", "place", "loc", "country", "citta", "città", "address")):
        return ConflictType.PLACE
    if any(t in k for t in ("height", "weight", "age", "_cm", "_kg", "count")):
        return ConflictType.NUMBER
    if any(t in k for t in ("favourite", "favorite", "prefer", "diet", "drink", "food")):
        return ConflictType.PREFERENCE
    if "status" in k:
        return ConflictType.STATUS
    return ConflictType.OTHER
