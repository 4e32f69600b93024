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

__all__ = [
    "CONTRACT_TEXTS",
    "FakeEmbedder",
    "ScriptedChecker",
    "ScriptedJudge",
    "check_embedder",
    "check_extractor",
    "check_judge",
    "check_memory_store",
    "check_vector_index",
    "free_port",
]


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

    def get_params(self) -> dict[str, object]:
        """JSON-able description (the script itself is not recorded)."""
        return {"name": self.name, "default": self.default, "scripted_pairs": None if callable(self.script)
                else len(self.script)}


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


# ---------------------------------------------------------------------------------------------------------------
# Contract checks (scikit-learn's ``check_estimator`` idea): run them on any component, built-in or your own, to
# know it honours the protocol the rest of memlab relies on. Each raises AssertionError naming the broken rule.
# ---------------------------------------------------------------------------------------------------------------

#: Texts every component must handle: Italian first (memlab's users write Italian), English, Chinese.
CONTRACT_TEXTS = (
    "Il mio compleanno è il 12 luglio.",
    "Abito a Milano con il mio cane Fido.",
    "My favourite food is sushi.",
    "我住在北京。",
)


def _json_params(obj: object, what: str) -> dict[str, object]:
    import json

    get_params = getattr(obj, "get_params", None)
    assert callable(get_params), f"{what} has no get_params() (runs record it)"
    params = get_params()
    assert isinstance(params, dict), f"{what}.get_params() must return a dict, got {type(params).__name__}"
    json.dumps(params, default=str)
    return params


def _raises_memlab_error(fn: Callable[[], object], what: str) -> None:
    from memlab.errors import MemlabError

    try:
        fn()
    except MemlabError:
        return
    except Exception as exc:  # noqa: BLE001 - the check reports which error escaped
        raise AssertionError(f"{what} raised {type(exc).__name__} ({exc}); expected a MemlabError subclass") from exc
    raise AssertionError(f"{what} was accepted; expected a MemlabError subclass")


def check_embedder(embedder: object) -> None:
    """Check an :class:`~memlab.protocols.Embedder`: shape, dtype, unit norm, determinism, batch independence,
    both modes, calibrated thresholds, JSON-able params, and clear errors on bad input.

    Example:
        >>> check_embedder(FakeEmbedder(dim=16))
    """
    from memlab.embedding.thresholds import EmbedderThresholds
    from memlab.protocols import Embedder

    what = type(embedder).__name__
    assert isinstance(embedder, Embedder), f"{what} does not implement the Embedder protocol"
    assert isinstance(embedder.name, str) and embedder.name, f"{what}.name must be a non-empty str"
    dim = embedder.dim
    assert isinstance(dim, int) and dim > 0, f"{what}.dim must be a positive int, got {dim!r}"
    texts = list(CONTRACT_TEXTS)
    for mode in ("passage", "query"):
        v = embedder.embed(texts, mode=mode)  # type: ignore[arg-type]
        assert isinstance(v, np.ndarray) and v.dtype == np.float32, f"{what}.embed must return float32 arrays"
        assert v.shape == (len(texts), dim), f"{what}.embed shape {v.shape} != {(len(texts), dim)}"
        assert np.isfinite(v).all(), f"{what}.embed returned non-finite values"
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4, err_msg=f"{what}: rows not unit norm")
        again = embedder.embed(texts[::-1], mode=mode)[::-1]  # type: ignore[arg-type]
        np.testing.assert_allclose(v, again, atol=1e-4, err_msg=f"{what}: a text's vector depends on its batch")
        one = embedder.embed([texts[0]], mode=mode)  # type: ignore[arg-type]
        np.testing.assert_allclose(v[:1], one, atol=1e-4, err_msg=f"{what}: batch of one differs")
    assert embedder.embed([]).shape == (0, dim), f"{what}.embed([]) must have shape (0, dim)"
    assert not np.allclose(*embedder.embed(texts[:2])), f"{what}: two different texts got the same vector"
    assert isinstance(getattr(embedder, "thresholds", None), EmbedderThresholds), (
        f"{what}.thresholds must be an EmbedderThresholds (the integrity check and chat switch read it)")
    assert _json_params(embedder, what).get("name") == embedder.name, f"{what}.get_params() must record its name"
    _raises_memlab_error(lambda: embedder.embed("a bare string"), f"{what}.embed('a bare string')")  # type: ignore[arg-type]
    _raises_memlab_error(lambda: embedder.embed(["ok", None]), f"{what}.embed(['ok', None])")  # type: ignore[list-item]


def check_judge(judge: object) -> None:
    """Check a :class:`~memlab.protocols.Judge`: one verdict per pair in order, probabilities in [0, 1], labels from
    :class:`~memlab.records.Label`, Italian and Chinese pairs, determinism, params, clear errors on bad input.

    Example:
        >>> from memlab.judges.baselines import LexicalJudge
        >>> check_judge(LexicalJudge())
    """
    from memlab.protocols import Judge

    what = type(judge).__name__
    assert isinstance(judge, Judge), f"{what} does not implement the Judge protocol"
    assert isinstance(judge.name, str) and judge.name, f"{what}.name must be a non-empty str"
    pairs = [
        ("Il mio compleanno è il 12 luglio.", "Il mio compleanno è il 15 agosto."),
        ("Abito a Roma.", "Il mio cane si chiama Fido."),
        ("I live in Rome.", "I live in Rome."),
        ("我住在北京。", "我住在上海。"),
    ]
    assert judge.judge([]) == [], f"{what}.judge([]) must return []"
    out = judge.judge(pairs)
    assert isinstance(out, list) and len(out) == len(pairs), f"{what}.judge must return one verdict per pair"
    for v in out:
        assert isinstance(v, Verdict), f"{what}.judge must return Verdict records, got {type(v).__name__}"
        assert isinstance(v.label, Label), f"{what}: verdict label {v.label!r} is not a Label"
        assert 0.0 <= v.probability <= 1.0 and np.isfinite(v.probability), f"{what}: probability {v.probability}"
    rev = judge.judge(pairs[::-1])[::-1]
    for a, b in zip(out, rev, strict=True):
        assert a.label == b.label and abs(a.probability - b.probability) < 1e-4, (
            f"{what}: a pair's verdict depends on the other pairs of the batch")
    _json_params(judge, what)
    _raises_memlab_error(lambda: judge.judge("not pairs"), f"{what}.judge('not pairs')")  # type: ignore[arg-type]
    _raises_memlab_error(lambda: judge.judge([("only one",)]), f"{what}.judge([('only one',)])")  # type: ignore[list-item]
    _raises_memlab_error(lambda: judge.judge([("", "b")]), f"{what}.judge([('', 'b')])")


def check_vector_index(factory: Callable[[int], object]) -> None:
    """Check a :class:`~memlab.protocols.VectorIndex` built by ``factory(dim)``: add/replace/remove by id, exact
    self-retrieval, ``allowed`` restriction, ``-1`` padding, and a clear error on a wrong vector size.

    Example:
        >>> from memlab.index import NumpyIndex
        >>> check_vector_index(NumpyIndex)
    """
    from memlab.protocols import VectorIndex

    dim = 8
    idx = factory(dim)
    what = type(idx).__name__
    assert isinstance(idx, VectorIndex), f"{what} does not implement the VectorIndex protocol"
    assert idx.dim == dim and len(idx) == 0, f"{what}: a new index must be empty with dim {dim}"
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((20, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = np.arange(100, 120, dtype=np.int64)
    idx.add(ids, vecs)
    assert len(idx) == 20 and sorted(idx.ids().tolist()) == ids.tolist(), f"{what}: ids after add"
    scores, found = idx.search(vecs[:5], 3)
    assert scores.shape == (5, 3) and found.shape == (5, 3), f"{what}.search shapes {scores.shape}, {found.shape}"
    assert found[:, 0].tolist() == ids[:5].tolist(), f"{what}: a stored vector is not its own nearest neighbour"
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-4, err_msg=f"{what}: self inner product is not 1")
    assert (np.diff(scores, axis=1) <= 1e-6).all(), f"{what}: scores not sorted best first"
    allowed = ids[10:12]
    _, only = idx.search(vecs[:1], 5, allowed=allowed)
    got = [i for i in only[0].tolist() if i != -1]
    assert set(got) <= set(allowed.tolist()) and len(got) == 2, f"{what}: 'allowed' not respected ({got})"
    assert only[0].tolist()[2:] == [-1, -1, -1], f"{what}: missing hits must be -1"
    idx.add(ids[:1], vecs[1:2])  # replace id 100 by another vector
    assert len(idx) == 20, f"{what}: adding an existing id must replace it"
    idx.remove(np.array([101, 999], dtype=np.int64))  # unknown ids are ignored
    assert len(idx) == 19 and 101 not in idx.ids().tolist(), f"{what}: remove"
    _raises_memlab_error(lambda: idx.add(np.array([1], dtype=np.int64), np.ones((1, dim + 1), np.float32)),
                         f"{what}.add with a wrong vector size")
    _raises_memlab_error(lambda: idx.search(np.ones((1, dim - 1), np.float32), 1), f"{what}.search with a wrong size")


def check_extractor(extractor: object) -> None:
    """Check an :class:`~memlab.extraction.Extractor`: a fact from an Italian, English and Chinese message, nothing
    from chit-chat or an empty message, confidences in [0, 1], determinism, params, a clear error on a non-str.

    Example:
        >>> from memlab.extraction import RuleExtractor
        >>> check_extractor(RuleExtractor())
    """
    from memlab.extraction.base import Extractor

    what = type(extractor).__name__
    assert isinstance(extractor, Extractor), f"{what} does not implement the Extractor protocol"
    for msg in ("Il mio compleanno è il 12 luglio.", "My birthday is on July 12.", "我的生日是7月12日。"):
        res = extractor.extract(msg)
        assert res.facts, f"{what} found no fact in {msg!r}"
        for f in res.facts:
            assert f.content.strip() and 0.0 <= f.confidence <= 1.0, f"{what}: bad fact {f!r}"
        assert extractor.extract(msg) == res, f"{what} is not deterministic on {msg!r}"
    assert not extractor.extract("ok, grazie!").facts, f"{what} reads facts into chit-chat"
    assert not extractor.extract("").facts, f"{what} must return no facts for an empty message"
    _json_params(extractor, what)
    _raises_memlab_error(lambda: extractor.extract(None), f"{what}.extract(None)")  # type: ignore[arg-type]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picks it: bind to port 0, read it, release it).

    For tests that start a server on a port of their own. Another process may take the port between this call
    and the server's bind, so use it at once.

    Example:
        >>> 0 < free_port() < 65536
        True
    """
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_memory_store(make_store: Callable[[], object]) -> None:
    """Check a :class:`~memlab.store.MemoryStore` backend (see :func:`memlab.store.contract.check_memory_store`):
    ``make_store()`` builds an empty store with a :class:`FakeEmbedder`.

    Example:
        >>> from memlab.store import MemoryStore
        >>> check_memory_store(lambda: MemoryStore(":memory:", embedder=FakeEmbedder(dim=32)))
    """
    from memlab.store.contract import check_memory_store as check

    check(make_store)  # type: ignore[arg-type]
