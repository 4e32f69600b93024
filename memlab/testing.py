"""Deterministic test doubles, shipped as public API (for tests, notebooks and users' own tests).

These are for unit-testing logic. Quality is never measured with them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from memlab.embedding.base import BaseEmbedder
from memlab.protocols import EmbedMode
from memlab.records import Label, Verdict

__all__ = ["FakeEmbedder", "ScriptedChecker", "ScriptedJudge"]


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text)).strip()


class FakeEmbedder(BaseEmbedder):
    """Unit vectors seeded by a hash of the normalised text: same text, same vector; different texts ~orthogonal.

    Args:
        dim: vector size.
        aliases: groups of texts that must map to the same vector (to script "paraphrases").
        bag_of_words: when True, a text's vector is the normalised sum of its words' vectors, so texts
            sharing words are similar (useful to script near-duplicates).

    Example:
        >>> emb = FakeEmbedder(dim=8)
        >>> v = emb.embed(["hello", "hello", "bye"])
        >>> v.shape, bool((v[0] == v[1]).all())
        ((3, 8), True)
    """

    name = "fake"

    def __init__(self, dim: int = 32, *, aliases: Iterable[Iterable[str]] = (), bag_of_words: bool = False) -> None:
        super().__init__(batch_size=256, cache_size=10_000)
        self._dim = dim
        self.bag_of_words = bag_of_words
        self._alias: dict[str, str] = {}
        for group in aliases:
            group = list(group)
            for t in group:
                self._alias[_norm(t)] = _norm(group[0])

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    def _vec(self, token: str) -> NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def _encode(self, texts: list[str], mode: EmbedMode) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            n = _norm(t)
            n = self._alias.get(n, n)
            if self.bag_of_words and n:
                out[i] = np.sum([self._vec(w) for w in n.split()], axis=0)
            else:
                out[i] = self._vec(n)
        return out


class ScriptedJudge:
    """A judge whose answers are scripted: a mapping ``(a, b) -> probability`` or a callable.

    Pairs missing from the mapping get ``default`` (0.0: not a contradiction). Probabilities >= 0.5 are
    labelled ``contradiction``, others ``neutral``.

    Example:
        >>> j = ScriptedJudge({("a", "b"): 0.9})
        >>> [v.label.value for v in j.judge([("a", "b"), ("a", "c")])]
        ['contradiction', 'neutral']
    """

    def __init__(
        self,
        script: Mapping[tuple[str, str], float] | Callable[[str, str], float] | None = None,
        *,
        default: float = 0.0,
        name: str = "scripted",
    ) -> None:
        self.script = script or {}
        self.default = default
        self.name = name
        self.calls: list[tuple[str, str]] = []

    def judge(self, pairs: Sequence[tuple[str, str]], /) -> list[Verdict]:
        """One verdict per pair, in order."""
        out = []
        for a, b in pairs:
            self.calls.append((a, b))
            if callable(self.script):
                p = float(self.script(a, b))
            else:
                p = float(self.script.get((a, b), self.script.get((b, a), self.default)))
            out.append(Verdict(Label.CONTRADICTION if p >= 0.5 else Label.NEUTRAL, p, self.name))
        return out


class ScriptedChecker:
    """An integrity checker whose verdicts are scripted (test double for the background agent and the assistant).

    ``check(item)`` compares ``item`` with every other memory of the same user (active or not) and reports
    a HIGH contradiction for each pair where ``rule(item, other)`` returns a probability >= ``threshold``.
    The default rule: same ``key`` and a different ``value`` (probability 1.0).

    Args:
        store: the memory store.
        rule: ``(item, other) -> probability``.
        threshold: report at probability >= this.
        delay_s: sleep this long per check (to script slow checks).

    Example:
        >>> from memlab.store import MemoryStore
        >>> store = MemoryStore(":memory:", embedder=FakeEmbedder())
        >>> a = store.add("u1", "born 12 July", key="born", value="07-12")
        >>> b = store.add("u1", "born 15 August", key="born", value="08-15")
        >>> ScriptedChecker(store).check(b).has_contradiction
        True
    """

    def __init__(
        self,
        store: object,
        rule: Callable[[object, object], float] | None = None,
        *,
        threshold: float = 0.8,
        delay_s: float = 0.0,
    ) -> None:
        self.store = store
        self.rule = rule
        self.threshold = threshold
        self.delay_s = delay_s
        self.checked: list[int] = []

    @staticmethod
    def _slot_rule(item: object, other: object) -> float:
        key_a, key_b = getattr(item, "key", None), getattr(other, "key", None)
        if key_a is None or key_a != key_b:
            return 0.0
        return 1.0 if getattr(item, "value", None) != getattr(other, "value", None) else 0.0

    def check(self, item: object) -> object:
        """Return an :class:`~memlab.records.IntegrityResult` for ``item`` (no side effects)."""
        import time

        from memlab.records import ConflictType, Contradiction, IntegrityResult, Urgency

        if self.delay_s:
            time.sleep(self.delay_s)
        self.checked.append(item.id)  # type: ignore[attr-defined]
        rule = self.rule or self._slot_rule
        others = [m for m in self.store.list(item.user_id, include_inactive=True)  # type: ignore[attr-defined]
                  if m.id != item.id]  # type: ignore[attr-defined]
        found = []
        for o in others:
            p = float(rule(item, o))
            if p >= self.threshold:
                found.append(Contradiction(
                    memory_id=item.id, other_id=o.id, memory_text=item.text, other_text=o.text,  # type: ignore[attr-defined]
                    confidence=p, type=ConflictType.OTHER, urgency=Urgency.HIGH,
                    explanation="scripted", decided_by="scripted"))
        found.sort(key=lambda c: -c.confidence)
        return IntegrityResult(item_id=item.id, has_contradiction=bool(found),  # type: ignore[attr-defined]
                               contradictions=tuple(found), confidence=max((c.confidence for c in found), default=0.0),
                               n_candidates=len(others))
