"""MiniLM queries through ONNX Runtime int8 (OnnxInt8Encoder) against the float32 path, on the packaged model."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from memlab.embedding import MiniLMEmbedder
from memlab.embedding.bert_engine import BertMeanPoolEngine
from memlab.embedding.onnx_int8 import OnnxInt8Encoder, cache_dir
from memlab.embedding.sentence_transformers import minilm_path
from memlab.errors import EmbedderError, InvalidInputError

TEXTS = [
    "I live in Rome", "  My favourite colour is green  ", "Sono nato il 12 luglio 1990", "叫我张三", "🙂", "",
    "Ieri sono andato al mare con mia sorella, il suo cane e due amici di Napoli che non vedevo da anni.",
    "word " * 400,  # longer than max_seq_length: truncated like the float engine
]


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def float32_vecs():
    return _unit(BertMeanPoolEngine(minilm_path(), dtype="float32").encode(TEXTS))


@pytest.mark.model
def test_int8_queries_stay_close_to_float32_in_every_language(float32_vecs):
    enc = OnnxInt8Encoder(minilm_path())
    assert enc.dim == 384
    vecs = _unit(enc.encode(TEXTS))
    cos = np.sum(vecs * float32_vecs, axis=1)
    assert cos.min() > 0.96, cos  # measured 0.971 (the emoji) to 0.997 on these texts
    # and far from a wrong answer: each int8 vector's nearest float32 vector is its own text's
    assert list(np.argmax(vecs @ float32_vecs.T, axis=1)) == list(range(len(TEXTS)))


@pytest.mark.model
def test_a_text_gets_the_same_vector_alone_or_with_others():
    enc = OnnxInt8Encoder(minilm_path())
    together = enc.encode(TEXTS)
    alone = np.stack([enc.encode([t])[0] for t in TEXTS])
    np.testing.assert_array_equal(together, alone)


@pytest.mark.model
def test_the_int8_file_is_built_once_and_reused(tmp_path):
    first = OnnxInt8Encoder(minilm_path(), cache=tmp_path)
    path = first.build()
    assert path.parent == tmp_path and path.suffix == ".onnx"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary leftovers
    stamp = path.stat().st_mtime_ns
    second = OnnxInt8Encoder(minilm_path(), cache=tmp_path)
    assert second.model_file() == path
    second.encode(["I live in Rome"])
    assert path.stat().st_mtime_ns == stamp


@pytest.mark.model
def test_minilm_embeds_queries_with_int8_and_stores_float_vectors(float32_vecs):
    emb = MiniLMEmbedder()
    assert emb.get_params()["query_backend"] == "onnx-int8"
    passages = emb.embed(TEXTS, mode="passage")
    queries = emb.embed(TEXTS, mode="query")
    assert np.min(np.sum(passages * float32_vecs, axis=1)) > 0.9998  # the float engine (bf16 or fp32)
    assert 0.96 < np.min(np.sum(queries * passages, axis=1)) < 0.99999  # int8: close, not identical
    same = MiniLMEmbedder(query_backend="same")
    np.testing.assert_allclose(same.embed(TEXTS, mode="query"), passages, atol=1e-6)
    assert MiniLMEmbedder(backend="sentence-transformers").query_backend == "same"


def test_bad_parameters_raise_invalid_input():
    with pytest.raises(InvalidInputError, match="query_backend"):
        MiniLMEmbedder(query_backend="int4")
    with pytest.raises(InvalidInputError, match="max_seq_length"):
        OnnxInt8Encoder(minilm_path(), max_seq_length=1)
    with pytest.raises(InvalidInputError, match="threads"):
        OnnxInt8Encoder(minilm_path(), threads=0)


def test_another_architecture_is_refused_at_load(tmp_path):
    folder = tmp_path / "not-bert"
    shutil.copytree(minilm_path(), folder)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(cfg, model_type="roberta")))
    with pytest.raises(EmbedderError, match="model_type"):
        OnnxInt8Encoder(folder, cache=tmp_path / "cache").encode(["x"])
    assert not (tmp_path / "cache").exists()  # nothing built


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "m"))
    assert cache_dir() == tmp_path / "m"
    monkeypatch.delenv("MEMLAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "memlab"


@pytest.mark.model  # the fallback embeds with the real MiniLM
def test_an_unwritable_cache_is_a_clear_error_and_minilm_queries_fall_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(EmbedderError, match="MEMLAB_CACHE_DIR"):
        OnnxInt8Encoder(minilm_path(), cache=blocker / "onnx").build()
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(blocker))  # <file>/onnx cannot be created
    emb = MiniLMEmbedder()
    with pytest.warns(UserWarning, match="fall back"):
        q = emb.embed(["I live in Rome"], mode="query")
    assert emb.get_params()["query_backend"] == "same"
    np.testing.assert_allclose(q, emb.embed(["I live in Rome"], mode="passage"), atol=1e-6)
