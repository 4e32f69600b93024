"""Blocking calls that work in a plain script and inside a running event loop (a Jupyter cell)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_blocking(fn: Callable[[], T], *, thread_name: str = "memlab-sync") -> T:
    """``fn()`` here when no event loop runs in this thread; else on a worker thread (whose ``asyncio.run`` gets
    a loop of its own), waiting for its result. ``fn`` typically wraps one ``asyncio.run(...)``, which a running
    loop (a Jupyter kernel's) would refuse.

    Example:
        >>> async def two() -> int:
        ...     return 2
        >>> run_blocking(lambda: asyncio.run(two()))
        2
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name) as pool:
        return pool.submit(fn).result()
