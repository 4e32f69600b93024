"""The systems ``memlab bench peers`` compares, each behind the same small interface.

A system (:class:`MemlabSystem`: memlab's :class:`~memlab.store.MemoryStore`, optionally with the synchronous
integrity check; :class:`Mem0System`: mem0 2.2.1 offline) lives in one directory and answers ``fill``, ``add``,
``warm``, ``search``, ``stats``, ``info``, ``quality`` and ``close``; every latency it reports is timed around the
library call only, with the embedding time inside that call (:class:`TimedEmbedder`) reported apart. The driver
(:func:`memlab.lab.bench.peers.run_peers`) reaches each one through a worker process
(:mod:`memlab.lab.bench.peers_workers`).

Example:
    >>> SYSTEMS, [sc["id"] for sc in SCENARIOS][:2]
    (('memlab', 'memlab+check', 'mem0'), ['dup-en', 'dup-it'])
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.config import Settings
from memlab.errors import MissingDependencyError

__all__ = [
    "BENCH_USER",
    "MEM0_INSTALL_HINT",
    "SCENARIOS",
    "SYSTEMS",
    "Mem0System",
    "MemlabSystem",
    "TimedEmbedder",
    "mem0_available",
    "mem0_config",
]

#: How to get the optional comparison target.
MEM0_INSTALL_HINT = "pip install 'memlab[bench]'  (mem0ai==2.2.1, psutil)"
#: Names of the systems a run can drive.
SYSTEMS = ("memlab", "memlab+check", "mem0")
#: The user every benchmark fact is stored for.
BENCH_USER = "bench-user"


def mem0_available() -> bool:
    """True when mem0 (``mem0ai``) is installed (checked without importing it: its import reads the environment)."""
    import importlib.util

    return importlib.util.find_spec("mem0") is not None


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _rss() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB."""
    cur = peak = float("nan")
    try:
        import psutil

        cur = psutil.Process().memory_info().rss / 1e6
    except ImportError:  # psutil is part of memlab[bench]; fall back to /proc
        try:
            cur = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
        except (OSError, ValueError):
            pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux
    except ImportError:  # pragma: no cover - Windows
        peak = cur
    # the kernel updates ru_maxrss lazily (hiwater marks), so it can trail the current RSS by a few pages
    return cur, max(peak, cur) if cur == cur else peak


class TimedEmbedder:
    """Wraps a memlab embedder: times every call, and optionally bypasses its text cache."""

    def __init__(self, inner: Any, *, cache: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.last_ms = 0.0

    @property
    def thresholds(self) -> Any:
        return getattr(self.inner, "thresholds", None)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def get_params(self) -> dict[str, object]:
        return dict(self.inner.get_params(), cache=self.cache)

    def embed(self, texts: Sequence[str], /, *, mode: str = "passage") -> NDArray[np.float32]:
        t = time.perf_counter()
        out = self.inner.embed(texts, mode=mode)
        if not self.cache:
            clear = getattr(getattr(self.inner, "_cache", None), "clear", None)
            if clear is not None:  # forget what was just embedded, so a repeated text costs again
                clear()
        self.last_ms = (time.perf_counter() - t) * 1000
        return np.asarray(out, dtype=np.float32)


class MemlabSystem:
    """memlab's MemoryStore (SQLite + FAISS) in one directory; optionally with the integrity check."""

    def __init__(self, *, workdir: str, embedder: str = "minilm", embedding_cache: bool = False,
                 integrity: bool = False, settings: Settings | None = None, embedder_obj: Any = None,
                 judge: str = "default", embedder_backend: str = "fast") -> None:
        from memlab.embedding import MiniLMEmbedder, load_embedder
        from memlab.store import MemoryStore

        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if embedder_obj is not None:
            inner = embedder_obj
        elif embedder == "minilm":
            inner = MiniLMEmbedder(backend=embedder_backend)
        else:
            inner = load_embedder(embedder, shared=False)
        self.emb = TimedEmbedder(inner, cache=embedding_cache)
        self.emb.embed(["warm-up"])
        self.store = MemoryStore(self.dir / "memlab.db", embedder=self.emb)
        self.settings = settings if settings is not None else Settings.model_construct()
        self.checker: Any = None
        self.note = ""
        self.judge_name = judge
        if integrity:
            self.checker, self.note = _build_checker(self.store, self.settings, judge)
        self.store.search("warm-up", "warm-up query", k=10)
        self.baseline_rss = _rss()[0]

    def fill(self, texts: list[str], vectors: NDArray[np.float32] | None, want_vectors: bool) -> dict[str, Any]:
        t = time.perf_counter()
        items = self.store.add_many(BENCH_USER, texts, embeddings=vectors)
        dt = time.perf_counter() - t
        vecs = self.store.vectors([m.id for m in items]) if want_vectors else None
        return {"s": dt, "vectors": vecs}

    def embed_corpus(self, texts: list[str]) -> dict[str, Any]:
        t = time.perf_counter()
        vecs = self.emb.inner.embed(texts)
        clear = getattr(getattr(self.emb.inner, "_cache", None), "clear", None)
        if clear is not None:
            clear()
        return {"s": time.perf_counter() - t, "vectors": np.asarray(vecs, dtype=np.float32)}

    def add(self, text: str) -> dict[str, float]:
        t = time.perf_counter()
        item = self.store.add(BENCH_USER, text)
        add_ms = (time.perf_counter() - t) * 1000
        embed_ms = self.emb.last_ms
        out = {"ms": add_ms, "embed_ms": embed_ms}
        if self.checker is not None:
            t = time.perf_counter()
            self.checker.check(item)
            out["check_ms"] = (time.perf_counter() - t) * 1000
            out["ms"] += out["check_ms"]
        return out

    def warm(self) -> dict[str, float]:
        """Untimed, after a fill: the checker reads the facts of the user's newest memories and the store loads its
        per-user caches (:meth:`SemanticIntegrityChecker.warm_user`), as in a process that checked them on arrival."""
        t = time.perf_counter()
        n = self.checker.warm_user(BENCH_USER) if self.checker is not None else 0
        return {"s": time.perf_counter() - t, "n": n}

    def search(self, query: str) -> dict[str, float]:
        t = time.perf_counter()
        hits = self.store.search(BENCH_USER, query, k=10)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.emb.last_ms, "n": len(hits)}

    def stats(self) -> dict[str, float]:
        t = time.perf_counter()
        self.store.flush()
        persist_ms = (time.perf_counter() - t) * 1000
        cur, peak = _rss()
        wal = sum(p.stat().st_size for p in self.dir.glob("*.db-*") if p.is_file())
        return {"n_items": self.store.count(BENCH_USER), "disk_mb": _dir_bytes(self.dir) / 1e6, "rss_mb": cur,
                "wal_mb": wal / 1e6,
                "peak_rss_mb": peak, "baseline_rss_mb": self.baseline_rss, "persist_ms": persist_ms}

    def info(self) -> dict[str, Any]:
        return {"note": self.note, "checker": None if self.checker is None else type(self.checker).__name__,
                "embedder": self.emb.inner.get_params()}

    def quality(self) -> list[dict[str, Any]]:
        from memlab.store import MemoryStore

        rows: list[dict[str, Any]] = []
        with MemoryStore(self.dir / "quality.db", embedder=self.emb) as qs:
            checker = None
            if self.checker is not None:
                checker, _ = _build_checker(qs, self.settings, self.judge_name)
            for sc in SCENARIOS:
                for keyed in (False, True):
                    user = f"q-{sc['id']}-{'k' if keyed else 'f'}"
                    items = [qs.add(user, text, key=sc["key"] if keyed else None, value=val if keyed else None)
                             for text, val in zip(sc["texts"], sc["values"], strict=True)]
                    active = qs.count(user)
                    total = qs.count(user, include_inactive=True)
                    top = [(m.text, round(s, 3)) for m, s in qs.search(user, sc["query"], k=10)]
                    chain = None
                    if keyed:
                        hist = qs.history(items[-1].id)
                        chain = " → ".join(f"v{m.version} {m.text!r} ({'active' if m.is_active else 'superseded'})"
                                           for m in hist)
                    contra = None
                    if checker is not None:
                        res = checker.check(qs.get(items[-1].id, user_id=items[-1].user_id))
                        contra = (f"check: contradiction p={res.confidence:.2f} by "
                                  f"{','.join(c.decided_by for c in res.contradictions)}"
                                  if res.has_contradiction else "check: no contradiction")
                    rows.append(dict(scenario=sc["name"], system="memlab (key=" + sc["key"] + ")" if keyed else "memlab",
                                     added=list(sc["texts"]), query=sc["query"], items_active=active,
                                     items_total=total, top=top, version_chain=chain, contradiction=contra))
        return rows

    def close(self) -> None:
        self.store.close()


def _build_checker(store: Any, settings: Settings, judge_name: str = "default") -> tuple[Any, str]:
    """The integrity checker with the named judge, warmed up (judge loaded), or (None, why not)."""
    try:
        from memlab.integrity import SemanticIntegrityChecker
    except ImportError as exc:
        return None, f"memlab add+check: n/a (memlab.integrity.SemanticIntegrityChecker not importable: {exc})"
    try:
        from memlab.judges import load_judge

        judge = load_judge(judge_name)
    except Exception as exc:  # not trained yet, weights missing, registry not there ...
        return None, f"memlab add+check: n/a (judge {judge_name!r} unavailable: {type(exc).__name__}: {exc})"
    try:
        checker = SemanticIntegrityChecker(store, judge, settings)
        # one-off loads now (language detector, date parser, unit registry, every judge model), so they are not
        # timed as an add; then a check on a private user
        checker.warm_up()
        item = store.add("warm-up-integrity", "Sono nato il 12 luglio 1990")
        store.add("warm-up-integrity", "Il mio compleanno è il 15 agosto")
        checker.check(item)
    except Exception as exc:
        return None, f"memlab add+check: n/a (SemanticIntegrityChecker failed: {type(exc).__name__}: {exc})"
    return checker, (f"memlab add+check: SemanticIntegrityChecker with judge {judge_name!r} "
                     f"({getattr(judge, 'name', type(judge).__name__)}), synchronous after each add")


class Mem0System:
    """mem0 2.2.1 ``Memory`` offline: ``add(infer=False)``, huggingface embedder, faiss store, SQLite history."""

    def __init__(self, *, workdir: str, model_path: str | None = None, fill_mode: str = "bulk") -> None:
        self.fill_mode = fill_mode
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        # mem0 reads these at import time: set them here, inside this (worker) process, before importing it
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(self.dir / "mem0_home")
        for name in ("mem0", "mem0.memory.main", "mem0.utils.spacy_models", "mem0.vector_stores.faiss"):
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            from mem0 import Memory
        except ImportError as exc:
            raise MissingDependencyError("mem0ai", "bench") from exc
        if model_path is None:
            from memlab.embedding.sentence_transformers import minilm_path

            model_path = str(minilm_path())
        self.config = mem0_config(self.dir, model_path)
        self.m = Memory.from_config(self.config)
        inner = self.m.embedding_model.embed
        self.last_embed_ms = 0.0

        def timed_embed(text: Any, memory_action: Any = None) -> Any:
            t = time.perf_counter()
            out = inner(text, memory_action)
            self.last_embed_ms = (time.perf_counter() - t) * 1000
            return out

        self.m.embedding_model.embed = timed_embed
        # where an add's non-embedding time goes: the vector store insert (FAISS + JSON docstore rewrite)
        # and the history commit (SQLite, default rollback journal + synchronous=FULL)
        self.parts: dict[str, float] = {}
        for obj, attr, key in ((self.m.vector_store, "insert", "vector_store_insert"),
                               (self.m.db, "add_history", "history_commit")):
            setattr(obj, attr, self._timed(getattr(obj, attr), key))
        timed_embed("warm-up", "add")
        self.m.search("warm-up query", filters={"user_id": BENCH_USER}, top_k=10)
        self.baseline_rss = _rss()[0]

    def _timed(self, fn: Callable[..., Any], key: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.parts[key] = (time.perf_counter() - t) * 1000

        return wrapper

    def fill(self, texts: list[str], vectors: Any, want_vectors: bool) -> dict[str, Any]:
        t = time.perf_counter()
        if self.fill_mode == "add":
            for text in texts:
                self.m.add(text, user_id=BENCH_USER, infer=False)
        else:
            self._bulk_persist(texts, vectors)
        return {"s": time.perf_counter() - t, "vectors": None}

    def _bulk_persist(self, texts: list[str], vectors: Any = None) -> None:
        """mem0's batch-persist phase (``Memory._add_to_vector_store``, infer=True, phase 6) without the LLM.

        Payloads and history rows are those ``add(text, user_id=..., infer=False)`` writes.
        """
        import hashlib
        import uuid

        from mem0.utils.lemmatization import lemmatize_for_bm25

        if vectors is None:
            vectors = self.m.embedding_model.embed_batch(texts, "add")
        else:
            vectors = np.asarray(vectors, dtype=np.float32).tolist()
        ids, payloads = [], []
        for text in texts:
            now = datetime.now(UTC).isoformat()
            ids.append(str(uuid.uuid4()))
            payloads.append({"user_id": BENCH_USER, "role": "user", "data": text,
                             "hash": hashlib.md5(text.encode()).hexdigest(), "created_at": now, "updated_at": now,
                             "text_lemmatized": lemmatize_for_bm25(text)})
        self.m.vector_store.insert(vectors=vectors, ids=ids, payloads=payloads)
        self.m.db.batch_add_history([
            {"memory_id": i, "old_memory": None, "new_memory": p["data"], "event": "ADD", "created_at": p["created_at"],
             "updated_at": p["updated_at"], "is_deleted": 0, "actor_id": None, "role": "user"}
            for i, p in zip(ids, payloads, strict=True)])

    def add(self, text: str) -> dict[str, Any]:
        self.parts = {}
        t = time.perf_counter()
        self.m.add(text, user_id=BENCH_USER, infer=False)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.last_embed_ms, "parts": dict(self.parts)}

    def search(self, query: str) -> dict[str, float]:
        t = time.perf_counter()
        res = self.m.search(query, filters={"user_id": BENCH_USER}, top_k=10)
        return {"ms": (time.perf_counter() - t) * 1000, "embed_ms": self.last_embed_ms, "n": len(res["results"])}

    def stats(self) -> dict[str, float]:
        cur, peak = _rss()
        n_user = sum(1 for p in self.m.vector_store.docstore.values() if p.get("user_id") == BENCH_USER)
        return {"n_items": n_user, "disk_mb": _dir_bytes(self.dir) / 1e6, "rss_mb": cur,
                "peak_rss_mb": peak, "baseline_rss_mb": self.baseline_rss, "persist_ms": 0.0}

    def info(self) -> dict[str, Any]:
        return {"note": "", "mem0_version": metadata.version("mem0ai")}

    def quality(self) -> list[dict[str, Any]]:
        rows = []
        for sc in SCENARIOS:
            user = f"q-{sc['id']}"
            for text in sc["texts"]:
                self.m.add(text, user_id=user, infer=False)
            held = self.m.get_all(filters={"user_id": user})["results"]
            top = [(r["memory"], round(float(r["score"]), 3))
                   for r in self.m.search(sc["query"], filters={"user_id": user}, top_k=10)["results"]]
            rows.append(dict(scenario=sc["name"], system="mem0 (infer=False)", added=list(sc["texts"]),
                             query=sc["query"], items_active=len(held), items_total=len(held), top=top,
                             version_chain=None, contradiction=None))
        return rows

    def close(self) -> None:
        close = getattr(self.m, "close", None)
        if close is not None:
            close()


def mem0_config(workdir: str | os.PathLike[str], model_path: str) -> dict[str, Any]:
    """The mem0 2.2.1 config that runs offline (what it needs was found by running it here).

    ``embedding_model_dims`` is required (without it mem0 builds a 1536-d index and fails with a bare
    AssertionError); an ``llm`` entry is required at init even with ``infer=False``: it points at a closed
    loopback port, so any call would fail fast instead of reaching a network.
    """
    d = Path(workdir)
    return {
        "embedder": {"provider": "huggingface", "config": {"model": str(model_path), "embedding_dims": 384}},
        "vector_store": {"provider": "faiss", "config": {
            "collection_name": "bench", "path": str(d / "faiss"), "distance_strategy": "cosine",
            "embedding_model_dims": 384}},
        "llm": {"provider": "openai", "config": {
            "model": "unused", "api_key": "sk-unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(d / "history.db"),
    }


#: The duplicate and update scenarios each system runs (:meth:`MemlabSystem.quality`, :meth:`Mem0System.quality`).
SCENARIOS: list[dict[str, Any]] = [
    {"id": "dup-en", "name": "duplicate (en)", "texts": ["I live in Rome", "I live in Rome"],
     "values": ["Rome", "Rome"], "key": "home_city", "query": "Where do I live?"},
    {"id": "dup-it", "name": "duplicate (it)", "texts": ["Abito a Roma", "Abito a Roma"],
     "values": ["Roma", "Roma"], "key": "home_city", "query": "Dove abito?"},
    {"id": "upd-en", "name": "update (en)", "texts": ["Call me Zhang San", "Call me Li Si"],
     "values": ["Zhang San", "Li Si"], "key": "preferred_name", "query": "What is my name?"},
    {"id": "upd-it", "name": "update (it)", "texts": ["Chiamami Zhang San", "Chiamami Li Si"],
     "values": ["Zhang San", "Li Si"], "key": "preferred_name", "query": "Come mi chiamo?"},
    {"id": "upd-zh", "name": "update (zh)", "texts": ["叫我张三", "叫我李四"],
     "values": ["张三", "李四"], "key": "preferred_name", "query": "我叫什么名字？"},
]
