"""Embedder contract (shape, dtype, unit norm, order, empty input, determinism, unicode) on real and fake backends."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.embedding import available_embedders, load_embedder
from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.testing import FakeEmbedder

TEXTS = ["Sono nato il 12 luglio 1990", "I live in Rome", "我叫张三", "🙂", "Il mio cane si chiama Fido"]


@pytest.fixture(params=["minilm", "fake"])
def embedder(request, minilm):
    return minilm if request.param == "minilm" else FakeEmbedder(dim=24)


@pytest.mark.model
def test_contract(embedder):
    v = embedder.embed(TEXTS)
    assert v.shape == (len(TEXTS), embedder.dim) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embedder.embed(TEXTS[::-1]), v[::-1], atol=1e-6)  # order kept
    assert embedder.embed([]).shape == (0, embedder.dim)
    with pytest.raises(InvalidInputError):
        embedder.embed("a bare string")
    with pytest.raises(InvalidInputError):
        embedder.embed(["ok", 3])


def test_cache_never_embeds_the_same_text_twice():
    emb = FakeEmbedder(dim=8)
    emb.embed(["a", "b", "a"])
    assert emb.n_encoded == 2
    emb.embed(["b", "c"])
    assert emb.n_encoded == 3


@pytest.mark.model
def test_minilm_is_semantic(minilm):
    v = minilm.embed(["I was born on 12 July 1990", "My birthday is on 15 August", "I like biscuits"])
    assert v[0] @ v[1] > v[0] @ v[2]


def test_registry():
    assert "minilm" in available_embedders()
    with pytest.raises(UnknownComponentError, match="Valid names"):
        load_embedder("nope")
