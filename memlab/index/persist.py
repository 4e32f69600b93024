"""Scheduled persistence of a vector index file: a background thread that writes it after ``every`` changes or
``seconds`` after the first unwritten change, so a killed process loses only the changes since the last write
(the store adds those rows back from SQLite at the next open instead of rebuilding the whole index).

A write of the whole index costs time proportional to its size (about 0.1-0.2 s per 100k vectors of dimension 384
on the reference machine), so the thread never starts a write sooner than ``10 x`` the last write's duration after
it: the writes take at most about a tenth of one core whatever the store's size.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable

from memlab._validation import check_positive_float, check_positive_int

__all__ = ["IndexFlusher"]

log = logging.getLogger(__name__)

#: A write starts no sooner than this many times the last write's duration after it ended.
_DUTY = 10.0
#: Seconds between two checks, while idle, that the store still exists.
_IDLE_CHECK = 30.0


class IndexFlusher:
    """Call ``flush`` from a daemon thread after ``every`` noted changes, or ``seconds`` after a change.

    The thread starts at the first :meth:`note` and holds only a weak reference to ``flush``'s object, so a store
    dropped without ``close`` does not stay alive for it. Errors of ``flush`` are logged (warning), never raised:
    the file is a cache and the next write, or the next open, repairs it.

    Args:
        flush: a bound method writing the index (e.g. ``MemoryStore.flush``).
        every: changes that trigger a write without waiting for ``seconds``.
        seconds: longest wait between a change and the write that persists it (rate limit apart).
        name: thread name (logs).

    Example:
        >>> class Box:
        ...     writes = 0
        ...     def flush(self):
        ...         self.writes += 1
        >>> box = Box()
        >>> f = IndexFlusher(box.flush, every=2, seconds=60)
        >>> f.note(2); f.wait_written(timeout=10)
        True
        >>> f.stop(); box.writes >= 1
        True
    """

    def __init__(self, flush: Callable[[], None], *, every: int, seconds: float, name: str = "memlab-index-flush"
                 ) -> None:
        self._flush = weakref.WeakMethod(flush)  # type: ignore[arg-type]
        self.every = check_positive_int(every, name="every", owner="IndexFlusher")
        self.seconds = check_positive_float(seconds, name="seconds", owner="IndexFlusher")
        self._name = name
        self._cond = threading.Condition()
        self._pending = 0  # changes noted since the last write started
        self._busy = False  # a write is running
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._last_duration = 0.0
        self._last_end = 0.0
        #: writes done by the thread (observable by tests and benchmarks)
        self.writes = 0

    def note(self, n: int = 1) -> None:
        """Record ``n`` changes not yet written (starts the thread on first use)."""
        with self._cond:
            if self._stopped:
                return
            was_idle = not self._pending
            self._pending += n
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            if was_idle or self._pending >= self.every:
                self._cond.notify_all()

    def wait_written(self, timeout: float) -> bool:
        """Block until no noted change is waiting for a write (True), or ``timeout`` seconds passed (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self) -> None:
        """Stop the thread (a write in progress finishes first); later notes are ignored."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _next_write(self) -> bool:
        """Wait for the next write to be due: True to write, False to stop."""
        with self._cond:
            first = time.monotonic()
            while not self._stopped:
                now = time.monotonic()
                rested = now >= self._last_end + _DUTY * self._last_duration
                if self._pending and rested and (self._pending >= self.every or now >= first + self.seconds):
                    self._pending = 0
                    self._busy = True
                    return True
                if not self._pending:
                    self._cond.wait(_IDLE_CHECK)
                    if self._flush() is None:  # the store was dropped without close(): end the thread
                        return False
                    first = time.monotonic()
                    continue
                due = max(first + self.seconds if self._pending < self.every else now,
                          self._last_end + _DUTY * self._last_duration)
                self._cond.wait(max(due - now, 0.001))
            return False

    def _run(self) -> None:
        while self._next_write():
            flush = self._flush()
            start = time.monotonic()
            try:
                if flush is not None:
                    flush()
            except Exception as exc:  # a cache write: logged, retried at the next change or at close
                log.warning("background write of the vector index failed: %s", exc)
            finally:
                del flush
                with self._cond:
                    self._last_end = time.monotonic()
                    self._last_duration = self._last_end - start
                    self._busy = False
                    self.writes += 1
                    self._cond.notify_all()
            if self._flush() is None:
                return
