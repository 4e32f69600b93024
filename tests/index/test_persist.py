"""IndexFlusher: the background thread that writes the FAISS file after ``every`` changes or ``seconds``
(its use by the store, with real files and a kill -9, is in tests/store/test_index_persistence.py)."""

from __future__ import annotations

import gc
import logging
import threading

import pytest

from memlab.errors import InvalidInputError
from memlab.index import persist
from memlab.index.persist import IndexFlusher


class Box:
    """Counts the writes asked of it (the logic under test is when they are asked)."""

    def __init__(self, fail: bool = False) -> None:
        self.writes = 0
        self.fail = fail
        self.threads: set[str] = set()

    def flush(self) -> None:
        self.writes += 1
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise OSError("disk full")


def test_every_changes_trigger_one_write_off_the_callers_thread() -> None:
    box = Box()
    f = IndexFlusher(box.flush, every=3, seconds=3600)
    try:
        f.note(2)
        assert box.writes == 0 and f._pending == 2  # below `every`, `seconds` far away: nothing written yet
        f.note()
        assert f.wait_written(timeout=60)
        assert box.writes == 1 and box.threads == {"memlab-index-flush"}
    finally:
        f.stop()


def test_a_change_is_written_after_seconds_even_below_every() -> None:
    box = Box()
    f = IndexFlusher(box.flush, every=1000, seconds=0.01)
    try:
        f.note()
        assert f.wait_written(timeout=60) and box.writes == 1
    finally:
        f.stop()


def test_stop_ends_the_thread_and_later_notes_write_nothing() -> None:
    box = Box()
    f = IndexFlusher(box.flush, every=1, seconds=3600)
    f.note()
    assert f.wait_written(timeout=60)
    f.stop()
    assert f._thread is not None and not f._thread.is_alive()
    f.note(10)
    assert box.writes == 1


def test_a_failed_write_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    box = Box(fail=True)
    f = IndexFlusher(box.flush, every=1, seconds=3600)
    try:
        with caplog.at_level(logging.WARNING, logger="memlab.index.persist"):
            f.note()
            assert f.wait_written(timeout=60)
        assert "disk full" in caplog.text and f.writes == 1
        assert f._thread is not None and f._thread.is_alive()  # the next change is written again
    finally:
        f.stop()


def test_the_thread_ends_when_its_object_is_dropped_without_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(persist, "_IDLE_CHECK", 0.01)
    box = Box()
    f = IndexFlusher(box.flush, every=1, seconds=3600)
    f.note()
    assert f.wait_written(timeout=60)
    thread = f._thread
    assert thread is not None
    del box
    gc.collect()
    thread.join(timeout=60)
    assert not thread.is_alive()  # a weak reference only: a dropped store does not keep a thread


@pytest.mark.parametrize(("every", "seconds"), [(0, 1.0), (-1, 1.0), (1, 0), (1, float("inf")), (True, 1.0)])
def test_bad_schedule_is_refused(every: object, seconds: object) -> None:
    with pytest.raises(InvalidInputError):
        IndexFlusher(Box().flush, every=every, seconds=seconds)  # type: ignore[arg-type]
