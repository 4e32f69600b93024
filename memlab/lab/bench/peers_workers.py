"""Worker processes of ``memlab bench peers``: one system per process, driven through a pipe.

Each system runs in its own ``multiprocessing`` (spawn) worker, so peak RSS is per system and mem0's import-time
environment reads happen only inside its worker. :class:`Remote` is the parent-side handle; :class:`Local` is an
in-process handle with the same ``call`` interface (tests).

Example:
    >>> class Echo:
    ...     def search(self, query): return {"n": len(query)}
    ...     def close(self): pass
    >>> Local("echo", Echo()).call("search", "Roma")
    {'n': 4}
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from collections.abc import Callable
from typing import Any

from memlab.errors import BackendError, MissingDependencyError
from memlab.lab.bench.peers_systems import Mem0System, MemlabSystem

__all__ = ["Local", "Remote"]

_FACTORIES: dict[str, Callable[..., Any]] = {"memlab": MemlabSystem, "mem0": Mem0System}


def _set_threads(threads: int | None) -> None:
    if threads is None:
        return
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def _serve(conn: Any, kind: str, params: dict[str, Any], threads: int | None = None) -> None:
    """Worker process main loop: build one system, then answer ``(method, args)`` calls until ``close``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - core dependency
        pass
    try:
        _set_threads(threads)
        system = _FACTORIES[kind](**params)
    except BaseException as exc:  # report any failure to the parent instead of dying silently
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                   isinstance(exc, MissingDependencyError)))
        conn.close()
        return
    conn.send(("ok", None))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:
            break
        if method == "close":
            system.close()
            conn.send(("ok", None))
            break
        try:
            conn.send(("ok", getattr(system, method)(*args)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(), False))
    conn.close()


class Remote:
    """Parent-side handle of a worker process (one system)."""

    def __init__(self, name: str, kind: str, params: dict[str, Any], threads: int | None = None) -> None:
        self.name = name
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, kind, params, threads), name=f"memlab-peers-{name}", daemon=True)
        self.proc.start()
        child.close()
        self._check(self.conn.recv())

    def _check(self, msg: tuple[Any, ...]) -> Any:
        if msg[0] == "ok":
            return msg[1]
        if msg[3] and self.name == "mem0":
            raise MissingDependencyError("mem0ai", "bench")
        raise BackendError(f"benchmark worker {self.name!r} failed: {msg[1]}\n{msg[2]}")

    def call(self, method: str, *args: Any) -> Any:
        self.conn.send((method, args))
        return self._check(self.conn.recv())

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.call("close")
            except (BackendError, EOFError, OSError, BrokenPipeError):
                pass
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=10)


class Local:
    """In-process handle with the same ``call`` interface (tests; no honest per-system RSS)."""

    def __init__(self, name: str, system: Any) -> None:
        self.name = name
        self.system = system

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.system, method)(*args)

    def close(self) -> None:
        self.system.close()
