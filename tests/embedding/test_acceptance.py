"""Issue 10 acceptance: with the default settings the seed's Italian pair is a candidate, an unrelated memory is not.

Real default embedder, real SQLite file, real FAISS index.
"""

from __future__ import annotations

import pytest

from memlab.config import Settings
from memlab.embedding import candidate_threshold, load_embedder
from memlab.store import DEFAULT_EMBEDDER, MemoryStore

BORN = "L'utente è nato il 12 luglio 1990"
BIRTHDAY = "Il compleanno dell'utente è il 15 agosto"
DOG = "Il mio cane si chiama Fido"


def _active_threshold(settings: Settings, store: MemoryStore, text: str) -> float:
    # the setting if set, else the embedder's calibrated threshold for the text's language
    return candidate_threshold(store.embedder, text, settings.similarity_threshold)


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "m.db")  # default embedder
    yield s
    s.close()


def test_default_settings_follow_the_default_embedder(store):
    settings = Settings()
    assert settings.embedder == DEFAULT_EMBEDDER == store.embedder.name
    assert settings.similarity_threshold is None  # = the embedder's calibrated candidate threshold
    assert store.embedder.thresholds.source.startswith(f"calibration/{DEFAULT_EMBEDDER}.json")


@pytest.mark.model
def test_seed_italian_pair_is_a_candidate_and_fido_is_not(store):
    settings = Settings()
    born = store.add("u1", BORN)
    dog = store.add("u1", DOG)
    birthday = store.add("u1", BIRTHDAY)
    store.add("u2", BORN)  # another user's identical memory must never show up
    th = _active_threshold(settings, store, BIRTHDAY)
    assert th == store.embedder.thresholds.by_language["it"]
    hits = store.search_by_vector("u1", store.vectors([birthday.id])[0], settings.integrity_max_similar_memories,
                                  exclude=[birthday.id])
    scores = {m.id: s for m, s in hits}
    assert {m.user_id for m, _ in hits} == {"u1"}
    assert born.id in scores and scores[born.id] >= th  # in the top-10 AND above the threshold
    assert scores[dog.id] < th  # unrelated: in the top-10 (only 2 memories) but below the threshold
    assert scores[born.id] > scores[dog.id]


def test_explicit_setting_wins(store):
    assert candidate_threshold(store.embedder, BIRTHDAY, 0.5) == 0.5
    assert candidate_threshold(store.embedder, None, None) == store.embedder.thresholds.candidate
    assert candidate_threshold(store.embedder, "12345", None) == store.embedder.thresholds.candidate  # no language


def test_e5_is_registered_and_calibrated():
    emb = load_embedder("e5")
    assert emb.thresholds.candidate_for("it") >= emb.thresholds.candidate
