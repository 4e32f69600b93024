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

__all__ = ["FakeEmbedder", "ScriptedJudge"]


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
