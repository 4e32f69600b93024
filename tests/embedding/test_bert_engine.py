"""memlab's own MiniLM engine (BertMeanPoolEngine) against the sentence-transformers reference, on the packaged model."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from memlab.embedding import MiniLMEmbedder
from memlab.embedding.bert_engine import BertMeanPoolEngine, native_bf16
from memlab.embedding.sentence_transformers import minilm_path
from memlab.errors import EmbedderError, InvalidInputError

TEXTS = [
    "I live in Rome", "  My favourite colour is green  ", "Sono nato il 12 luglio 1990", "叫我张三", "🙂", "",
    "Ieri sono andato al mare con mia sorella, il suo cane e due amici di Napoli che non vedevo da anni.",
    "word " * 400,  # longer than max_seq_length: truncated like sentence-transformers
]


@pytest.fixture(scope="module")
def reference():
    """The float32 sentence-transformers path (what mem0 and other libraries run), and its vectors of TEXTS."""
    ref = MiniLMEmbedder(backend="sentence-transformers")
    return ref, ref.embed(TEXTS)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.model
def test_token_ids_match_sentence_transformers(reference):
    ref, _ = reference
    st = ref._load()
    enc = st.tokenizer([t.strip() for t in TEXTS], truncation=True, max_length=256)
    assert BertMeanPoolEngine(minilm_path()).token_ids(TEXTS) == enc["input_ids"]


@pytest.mark.model
def test_float32_engine_reproduces_sentence_transformers(reference):
    _, ref_vecs = reference
    eng = BertMeanPoolEngine(minilm_path(), dtype="float32")
    assert eng.dtype == "float32" and eng.dim == 384
    batch = _unit(eng.encode(TEXTS))  # one padded batch, sorted by length inside
    single = _unit(np.stack([eng.encode([t])[0] for t in TEXTS]))  # no padding, no mask
    assert np.min(np.sum(batch * ref_vecs, axis=1)) > 0.99999
    np.testing.assert_allclose(batch, single, atol=1e-5)


@pytest.mark.model
def test_bfloat16_engine_stays_within_1e4_of_float32(reference):
    _, ref_vecs = reference
    eng = BertMeanPoolEngine(minilm_path(), dtype="bfloat16")
    vecs = _unit(eng.encode(TEXTS))
    cos = np.sum(vecs * ref_vecs, axis=1)
    assert eng.dtype == "bfloat16"
    assert cos.min() > 0.9995, cos
    # a text embedded alone (a query) and inside a padded batch (add_many) gives the same vector
    single = _unit(np.stack([eng.encode([t])[0] for t in TEXTS]))
    assert np.min(np.sum(vecs * single, axis=1)) > 0.9999
    # the ranking a search sees: same nearest neighbour for every text
    assert (np.argsort(-(vecs @ ref_vecs.T), axis=1)[:, 0] == np.arange(len(TEXTS))).all()


@pytest.mark.model
def test_auto_precision_follows_the_cpu():
    assert BertMeanPoolEngine(minilm_path()).dtype == ("bfloat16" if native_bf16() else "float32")


@pytest.mark.model
def test_minilm_default_backend_is_the_engine(reference):
    _, ref_vecs = reference
    emb = MiniLMEmbedder()
    params = emb.get_params()
    assert params["backend"] == "fast" and params["dtype"] in ("bfloat16", "float32") and emb.name == "minilm"
    v = emb.embed(TEXTS, mode="passage")  # queries take ONNX Runtime int8: tests/embedding/test_onnx_int8.py
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(v * ref_vecs, axis=1)) > 0.9995


@pytest.mark.model
def test_engine_is_faster_per_query_than_sentence_transformers(reference):
    """One short query at a time on one torch thread (the search path), interleaved so machine load hits both."""
    import torch

    ref, _ = reference
    fast = MiniLMEmbedder()
    queries = [f"What is the name of my dog number {i}?" for i in range(40)]
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fast.embed(["warm-up"]), ref.embed(["warm-up"])
        t_fast, t_ref = [], []
        for q in queries:
            for emb, out in ((fast, t_fast), (ref, t_ref)):
                emb.clear_cache()
                t = time.perf_counter()
                emb.embed([q], mode="query")
                out.append(time.perf_counter() - t)
    finally:
        torch.set_num_threads(old)
    assert np.median(t_fast) < np.median(t_ref), (np.median(t_fast), np.median(t_ref))


def test_bad_parameters_are_refused():
    with pytest.raises(InvalidInputError, match="dtype"):
        BertMeanPoolEngine(minilm_path(), dtype="int8")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_seq_length"):
        BertMeanPoolEngine(minilm_path(), max_seq_length=1)
    with pytest.raises(InvalidInputError, match="backend"):
        MiniLMEmbedder(backend="onnx")


def test_another_architecture_is_refused(tmp_path: Path):
    """A folder whose pooling is not mean pooling is not run by the engine (the caller keeps sentence-transformers)."""
    folder = tmp_path / "cls-pooled"
    shutil.copytree(minilm_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "model.safetensors").symlink_to(minilm_path() / "model.safetensors")
    pool = folder / "1_Pooling" / "config.json"
    cfg = json.loads(pool.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pool.write_text(json.dumps(cfg))
    with pytest.raises(EmbedderError, match="pooling"):
        BertMeanPoolEngine(folder).encode(["x"])
