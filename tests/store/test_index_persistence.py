"""The FAISS file is written in the background (after ``flush_every`` changes or ``flush_seconds``), so a kill -9
costs only the rows written after the last write: the next open loads the file and adds those rows from SQLite
instead of rebuilding the whole index (issue 42)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memlab.errors import InvalidInputError
from memlab.index import PartitionedFaissIndex
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from memlab.embedding import load_embedder
    from memlab.store import MemoryStore

    store = MemoryStore(sys.argv[1], embedder=load_embedder("minilm"), flush_every=20, flush_seconds=3600)
    users = ("alice", "bob")
    for i in range(20):  # the 20th change triggers the background write
        store.add(users[i % 2], f"Nota {i}: il mio numero preferito è {i * 7}")
    assert store.backend._flusher.wait_written(timeout=120)
    for i in range(20, 25):  # never written to the file: flush_every not reached, flush_seconds far away
        store.add(users[i % 2], f"Nota {i}: il mio numero preferito è {i * 7}")
    hits = {u: [(m.id, round(s, 5)) for m, s in store.search(u, "numero preferito 147", k=8, mode="dense")]
            for u in users}
    print(json.dumps({"hits": hits, "flushes": store.backend._flusher.writes}), flush=True)
    time.sleep(600)  # killed here, before close() could write the index
    """
)


@pytest.mark.model  # the packaged embedder, in both processes
@pytest.mark.subprocess
def test_a_killed_process_costs_a_catch_up_not_a_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(db)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, proc.stderr.read()  # type: ignore[union-attr]
        child = json.loads(line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL and child["flushes"] >= 1
    from memlab.embedding import load_embedder

    on_disk = PartitionedFaissIndex.load(Path(str(db) + ".faiss"))
    assert sorted(on_disk.ids().tolist()) == list(range(1, 21))  # the background write held 20 of 25 rows
    with MemoryStore(db, embedder=load_embedder("minilm")) as store:
        assert store.index_opened == {"source": "file", "caught_up": 5, "watermark": 20}
        assert store.index_rebuilds == 0
        assert sorted(store.index.ids().tolist()) == list(range(1, 26))
        hits = {u: [[m.id, round(s, 5)] for m, s in store.search(u, "numero preferito 147", k=8, mode="dense")]
                for u in ("alice", "bob")}
    assert hits == child["hits"]  # the same answers as the process had before it was killed


def test_the_background_write_persists_after_flush_every_changes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = MemoryStore(db, embedder=FakeEmbedder(), flush_every=3, flush_seconds=3600)
    try:
        items = [store.add("u1", t) for t in ("Abito a Roma", "Ho un cane di nome Fido", "Lavoro in banca")]
        assert store.backend._flusher is not None and store.backend._flusher.wait_written(timeout=60)
        on_disk = PartitionedFaissIndex.load(Path(str(db) + ".faiss"))  # written while the store is open
        assert sorted(on_disk.ids("u1").tolist()) == [m.id for m in items]
        assert not store.backend._dirty
        assert not list(tmp_path.glob("*.tmp"))
    finally:
        store.db.close()  # "crash": no close(), no final write
        store.backend._flusher.stop()
    with MemoryStore(db, embedder=FakeEmbedder()) as again:
        assert again.index_opened == {"source": "file", "caught_up": 0, "watermark": items[-1].id}
        assert again.index_rebuilds == 0
        assert again.search("u1", "Ho un cane di nome Fido", k=1)[0][0].id == items[1].id


def test_the_background_write_persists_after_flush_seconds(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = MemoryStore(db, embedder=FakeEmbedder(), flush_every=1000, flush_seconds=0.05)
    try:
        roma = store.add("u1", "Abito a Roma")
        assert store.backend._flusher is not None and store.backend._flusher.wait_written(timeout=60)
        assert PartitionedFaissIndex.load(Path(str(db) + ".faiss")).ids().tolist() == [roma.id]
    finally:
        store.close()


def test_rows_missing_from_the_file_are_added_and_the_rest_is_loaded(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    texts = [f"memoria numero {i}" for i in range(30)]
    with MemoryStore(db, embedder=FakeEmbedder(), flush_seconds=3600) as store:
        old = store.add_many("alice", texts[:20])
    store = MemoryStore(db, embedder=FakeEmbedder(), flush_seconds=3600)
    new = store.add_many("bob", texts[20:25]) + store.add_many("alice", texts[25:])
    store.backend._flusher.stop()
    store.db.close()  # killed before the file was written again
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        assert store.index_opened == {"source": "file", "caught_up": 10, "watermark": old[-1].id}
        assert store.index_rebuilds == 0
        assert isinstance(store.index, PartitionedFaissIndex)
        assert sorted(store.index.ids("bob").tolist()) == [m.id for m in new[:5]]
        assert store.search("bob", texts[22], k=1)[0][0].id == new[2].id
        # the caught-up index equals a rebuilt one, vector for vector
        caught = {int(i): store.index.reconstruct(int(i)) for i in store.index.ids()}
        store.rebuild_index()
        assert store.index_rebuilds == 1
        assert all(np.array_equal(store.index.reconstruct(i), v) for i, v in caught.items())


def test_a_file_holding_a_row_sqlite_does_not_have_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        store.add("u1", "Abito a Roma")
        extra = PartitionedFaissIndex(store.embedder.dim)
        vec = store.vectors([1])
    extra.add(np.asarray([1, 99]), np.concatenate([vec, vec]), partition="u1")  # 99: never stored (another db's)
    extra.save(Path(str(db) + ".faiss"))
    with MemoryStore(db, embedder=FakeEmbedder()) as store:
        assert store.index_opened["source"] == "rebuilt" and store.index_rebuilds == 1
        assert store.index.ids().tolist() == [1]


@pytest.mark.parametrize("kwargs", [{"flush_every": 0}, {"flush_seconds": 0}, {"flush_seconds": float("nan")},
                                    {"flush_every": "10"}])
def test_bad_flush_schedule_is_refused(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(InvalidInputError, match="flush_"):
        MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(), **kwargs)
