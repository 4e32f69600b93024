"""The seeds' request shapes, accepted beside memlab's REST forms on a real `memlab serve` (loopback): `GET /api/chats?id=`
and `?search=` (seed 002), `POST /v1/ingest {path_or_url, tags}` with the seed's files/chunks/errors (seed 003) and a
`/health` that checks the chat model and Qdrant (seed 003)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memlab.app import Memlab, open_memlab
from memlab.config import Settings
from memlab.serve import create_app
from memlab.serve.runner import ThreadedServer
from memlab.testing import FakeEmbedder, ScriptedJudge

from .conftest import key_client


def test_get_chats_answers_the_seeds_id_and_search_query_forms(server: ThreadedServer, lab: Memlab) -> None:
    alice, bob = key_client(server, lab, "alice"), key_client(server, lab, "bob")
    try:
        tokyo = alice.post("/api/chats", json={"title": "Viaggio a Tokyo", "turns": [
            {"role": "user", "parts": [{"text": "Parto per Tokyo il 3 maggio."}]}]}).json()
        alice.post("/api/chats", json={"title": "Mutuo", "turns": [
            {"role": "user", "parts": [{"text": "Mi servono 200.000 euro di mutuo."}]}]})
        # ?id= : that one chat, exactly as GET /api/chats/{id} (not the whole list)
        one = alice.get("/api/chats", params={"id": tokyo["id"]})
        assert one.status_code == 200 and one.json() == alice.get(f"/api/chats/{tokyo['id']}").json()
        assert one.json()["title"] == "Viaggio a Tokyo" and "full_history" in one.json()
        for who, cid in ((alice, "0" * 32), (bob, tokyo["id"])):  # unknown, or another user's: the same 404
            r = who.get("/api/chats", params={"id": cid})
            assert r.status_code == 404 and r.json()["error"] == "NotFoundError"
        # ?search= : the semantic chat switch, the same answer as memlab's ?q=
        found = alice.get("/api/chats", params={"search": "Viaggio a Tokyo"})
        assert found.status_code == 200 and set(found.json()) == {"decision", "chat_id", "query", "candidates"}
        assert found.json() == alice.get("/api/chats", params={"q": "Viaggio a Tokyo"}).json()
        assert found.json()["query"] == "Viaggio a Tokyo"
        assert bob.get("/api/chats", params={"search": "Viaggio a Tokyo"}).json()["candidates"] == []
        # and without either, the list as before
        assert [c["title"] for c in alice.get("/api/chats").json()] == ["Mutuo", "Viaggio a Tokyo"]
    finally:
        alice.close()
        bob.close()


@pytest.fixture
def ingest_server(tmp_path: Path) -> Iterator[tuple[ThreadedServer, Memlab, Path]]:
    pytest.importorskip("qdrant_client", reason="LOUD SKIP: memlab[ingest] (qdrant-client) is not installed")
    root = tmp_path / "inbox"
    notes = root / "notes"
    notes.mkdir(parents=True)
    (notes / "gatto.md").write_text("# Gatto\n\nIl mio gatto si chiama Miao e mangia crocchette.", encoding="utf-8")
    (notes / "orto.txt").write_text("Nell'orto ho piantato pomodori e basilico.", encoding="utf-8")
    (notes / "scansione.pdf").write_bytes(b"%PDF-1.4 not a text file")
    (notes / ".nascosto.txt").write_text("segreto", encoding="utf-8")
    (tmp_path / "fuori.txt").write_text("Fuori dalla cartella.", encoding="utf-8")
    settings = Settings(llm_backend="none", ingest_root=root)
    lab = open_memlab(tmp_path / "i.db", embedder=FakeEmbedder(dim=32, bag_of_words=True), judge=ScriptedJudge(),
                      settings=settings, checks=False)
    live = ThreadedServer(create_app(lab)).start()
    yield live, lab, root
    live.stop()
    lab.close()


def test_ingest_takes_the_seeds_path_or_url_and_counts_files_chunks_and_errors(
        ingest_server: tuple[ThreadedServer, Memlab, Path], tmp_path: Path) -> None:
    live, lab, root = ingest_server
    with key_client(live, lab, "alice") as alice:
        r = alice.post("/v1/ingest", json={"path_or_url": "notes", "tags": ["casa"]})
        assert r.status_code == 201, r.text
        out = r.json()
        assert (out["files"], out["errors"]) == (2, 1) and out["chunks"] == out["chunks_total"] >= 2
        assert sorted(d["source"] for d in out["documents"]) == ["gatto.md", "orto.txt"]
        assert [f["source"] for f in out["failed"]] == ["scansione.pdf"] and ".pdf" in out["failed"][0]["error"]
        assert all(d["tags"] == ["casa"] for d in out["documents"])
        # an absolute path inside the root, a single file
        one = alice.post("/v1/ingest", json={"path_or_url": str(root / "notes" / "orto.txt")}).json()
        assert (one["files"], one["chunks"], one["errors"]) == (1, 1, 0)
        # outside the root (absolute, or climbing out), or missing: not found, nothing read
        for path in (str(tmp_path / "fuori.txt"), "../fuori.txt", "notes/manca.md"):
            bad = alice.post("/v1/ingest", json={"path_or_url": path})
            assert bad.status_code == 404 and bad.json()["error"] == "NotFoundError", path
        # a URL: refused with a clear 422 (no network here)
        url = alice.post("/v1/ingest", json={"path_or_url": "https://example.com/notes.md", "tags": ["web"]})
        assert url.status_code == 422 and "no network" in url.text
        # memlab's own form reports the same statistics
        doc = alice.post("/v1/ingest", json={"content": "Il cane si chiama Fido.", "source": "cane.txt"}).json()
        assert (doc["files"], doc["chunks"], doc["errors"], doc["ingested"]["source"]) == (1, 1, 0, "cane.txt")
    with key_client(live, lab, "bob") as bob:  # bob reads nothing of alice's
        assert bob.post("/v1/ingest", json={"content": "x y z", "source": "b.txt"}).json()["chunks_total"] == 1


def test_health_checks_the_chat_model_and_qdrant(ingest_server: tuple[ThreadedServer, Memlab, Path]) -> None:
    from memlab.llm import OllamaLLM
    from memlab.llm.fake_server import FakeLLMServer, ollama_tags

    live, lab, _ = ingest_server
    with FakeLLMServer() as ollama:
        live.server.config.app.state.chat_llm = OllamaLLM(model="fake", base_url=ollama.url, max_retries=0)
        ollama.respond("/api/tags", lambda body: ollama_tags("fake"))
        ok = httpx.get(live.url + "/health", timeout=60)
        assert ok.status_code == 200, ok.text
        checks = ok.json()["checks"]
        assert checks["llm"]["ok"] and checks["llm"]["backend"] == "ollama" and checks["llm"]["model"] == "fake"
        assert checks["qdrant"] == {"ok": True, "mode": "embedded", "opened": False}  # not opened yet: no lock taken
        ollama.respond("/api/tags", lambda body: ollama_tags("other"))  # the server is up, the model is not there
        down = httpx.get(live.url + "/health", timeout=60)
        assert down.status_code == 503 and down.json()["status"] == "degraded"
        assert not down.json()["checks"]["llm"]["ok"] and "not pulled" in down.json()["checks"]["llm"]["detail"]
    with key_client(live, lab, "alice") as alice:
        alice.post("/v1/ingest", json={"content": "Il cane si chiama Fido.", "source": "cane.txt"})
    live.server.config.app.state.chat_llm = None  # no model configured: no llm check
    after = httpx.get(live.url + "/health", timeout=60).json()
    assert "llm" not in after["checks"] and after["status"] == "ok"
    assert after["checks"]["qdrant"]["ok"] and after["checks"]["qdrant"]["chunks"] == 1
