"""ChunkStore on the real embedded Qdrant (a folder on disk): isolation, tags, re-ingestion, persistence; and
retrieval quality with the real packaged MiniLM embedder on Italian notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("qdrant_client", reason="LOUD SKIP: memlab[ingest] (qdrant-client) is not installed")

from memlab.errors import BackendError, DimensionMismatchError, InvalidInputError  # noqa: E402
from memlab.ingest import ChunkStore  # noqa: E402
from memlab.testing import FakeEmbedder  # noqa: E402

NOTES = {
    "gatto.md": "# Il mio gatto\n\nIl mio gatto si chiama Miao e ha tre anni. Mangia crocchette al salmone.",
    "viaggi/tokyo.md": "# Viaggio a Tokyo\n\nPartenza il 12 marzo. Hotel a Shinjuku, vicino alla stazione.",
    "ricetta.html": "<h1>Carbonara</h1><p>Guanciale, uova, pecorino e pepe. Niente panna.</p>",
    "spesa.txt": "Comprare latte, pane e caffè.",
    "foto.jpg": "not a document",
}


def write_notes(root: Path) -> Path:
    for name, text in NOTES.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = ChunkStore(path=tmp_path / "qdrant", embedder=FakeEmbedder(dim=32, bag_of_words=True), chunk_size=200,
                   overlap=30)
    yield s
    s.close()


def test_ingest_folder_skips_other_files(store: ChunkStore, tmp_path: Path) -> None:
    reports = store.ingest_path("alice", write_notes(tmp_path / "notes"), tags=["Personale"])
    assert [r.source for r in reports] == ["gatto.md", "ricetta.html", "spesa.txt", "viaggi/tokyo.md"]
    assert [r.fmt for r in reports] == ["markdown", "html", "text", "markdown"]
    assert all(r.n_chunks == 1 and r.tags == ("personale",) for r in reports)
    assert store.sources("alice") == ["gatto.md", "ricetta.html", "spesa.txt", "viaggi/tokyo.md"]
    assert store.count("alice") == 4 and store.count("bob") == 0


def test_users_never_see_each_other(store: ChunkStore) -> None:
    store.ingest_text("alice", "Il mio gatto si chiama Miao.", source="a.txt")
    store.ingest_text("bob", "Il mio gatto si chiama Fuffi.", source="a.txt")  # same source label, other user
    a = store.query("alice", "gatto", k=10)
    b = store.query("bob", "gatto", k=10)
    assert [h.text for h in a] == ["Il mio gatto si chiama Miao."]
    assert [h.text for h in b] == ["Il mio gatto si chiama Fuffi."]
    assert store.query("carol", "gatto") == []


def test_tags_filter_and_reingestion_replaces(store: ChunkStore) -> None:
    long = " ".join(f"Nota {i} sul lavoro in ufficio." for i in range(40))
    first = store.ingest_text("alice", long, source="lavoro.txt", tags=["lavoro"])
    store.ingest_text("alice", "Vacanze al mare in agosto.", source="mare.txt", tags=["vacanze", "estate"])
    assert first.n_chunks > 3
    assert {h.source for h in store.query("alice", "nota", k=50, tags=["lavoro"])} == {"lavoro.txt"}
    assert [h.source for h in store.query("alice", "mare", k=50, tags=["VACANZE", "estate"])] == ["mare.txt"]
    assert store.query("alice", "mare", tags=["vacanze", "lavoro"]) == []  # all tags must match
    again = store.ingest_text("alice", "Ora lavoro da casa.", source="lavoro.txt", tags=["lavoro"])
    assert again.replaced == first.n_chunks and again.n_chunks == 1
    assert [h.text for h in store.query("alice", "lavoro", k=50, tags=["lavoro"])] == ["Ora lavoro da casa."]
    assert store.delete_source("alice", "lavoro.txt") == 1 and store.sources("alice") == ["mare.txt"]


def test_embedded_store_persists_and_checks_dimension(tmp_path: Path) -> None:
    path = tmp_path / "q"
    with ChunkStore(path=path, embedder=FakeEmbedder(dim=32)) as s:
        s.ingest_text("alice", "Abito a Roma.", source="casa.txt")
    with ChunkStore(path=path, embedder=FakeEmbedder(dim=32)) as s:
        assert [h.text for h in s.query("alice", "Abito a Roma.")] == ["Abito a Roma."]
        with pytest.raises(BackendError):  # the embedded store's folder is locked while open
            ChunkStore(path=path, embedder=FakeEmbedder(dim=32))
    with pytest.raises(DimensionMismatchError, match="32-d vectors"):
        ChunkStore(path=path, embedder=FakeEmbedder(dim=16))


def test_bad_input(store: ChunkStore) -> None:
    with pytest.raises(InvalidInputError):
        store.query("alice", "")
    with pytest.raises(InvalidInputError):
        store.query("alice", "x", k=0)
    with pytest.raises(InvalidInputError):
        store.ingest_text("alice", "x", source="a", tags="lavoro")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.ingest_text("", "x", source="a")
    with pytest.raises(InvalidInputError, match="no such file"):
        store.ingest_path("alice", "/nonexistent/folder")
    with pytest.raises(InvalidInputError):
        ChunkStore(path=":memory:", url="http://127.0.0.1:6333", embedder=FakeEmbedder())
    assert store.ingest_text("alice", "   ", source="empty.txt").n_chunks == 0


@pytest.mark.model
@pytest.mark.parametrize("name", ["e5", "minilm"])
def test_packaged_embedders_find_the_right_note_in_italian(tmp_path: Path, name: str) -> None:
    """The default (e5, multilingual) finds every note; MiniLM (English-trained) misses the one without a title."""
    from memlab.embedding import load_embedder

    with ChunkStore(path=tmp_path / "q", embedder=load_embedder(name)) as s:
        s.ingest_path("alice", write_notes(tmp_path / "notes"))
        cases = {"Come si chiama il mio gatto?": "gatto.md", "Dove dormo a Tokyo?": "viaggi/tokyo.md",
                 "Cosa serve per la carbonara?": "ricetta.html", "Cosa devo comprare?": "spesa.txt"}
        got = {q: s.query("alice", q, k=1)[0].source for q in cases}
    hits = sum(got[q] == src for q, src in cases.items())
    assert hits == (4 if name == "e5" else 3), got
