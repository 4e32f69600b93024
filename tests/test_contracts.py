"""Every registered component passes the shared contract checks of ``memlab.testing`` (scikit-learn's
``parametrize_with_checks`` idea): the embedders, the judges, the vector indexes and the extractors.

Registered components are enumerated from the registries, so a newly registered one is checked without editing
this file (``test_every_registered_name_is_checked`` fails if a name has no case here).
"""

from __future__ import annotations

import json

import pytest

from memlab.embedding import available_embedders, load_embedder
from memlab.extraction import LLMExtractor, RuleExtractor
from memlab.index import FaissIndex, NumpyIndex
from memlab.judges import available_judges, load_judge
from memlab.llm.scripted import ScriptedLLM
from memlab.testing import FakeEmbedder, check_embedder, check_extractor, check_judge, check_vector_index

REAL_EMBEDDERS = [n for n in available_embedders() if not n.startswith("st:")]
MODEL_JUDGES = ["default", "english", "multilingual", "ensemble"]
CHEAP_JUDGES = ["majority", "lexical"]
# read at collection, before any test or doctest registers a demo component of its own
REGISTERED_JUDGES = {n for n in available_judges() if n != "hf:<model>"}


def _llm_verdict(messages: list[dict]) -> str:
    text = messages[-1]["content"]
    label = "contradiction" if "15 agosto" in text or "上海" in text else "neutral"
    return json.dumps({"label": label, "confidence": 0.9 if label == "contradiction" else 0.2, "reason": "scripted"})


def test_every_registered_name_is_checked() -> None:
    assert REGISTERED_JUDGES <= {*MODEL_JUDGES, *CHEAP_JUDGES, "llm"}, REGISTERED_JUDGES
    assert set(REAL_EMBEDDERS) <= {"minilm", "e5", "e5-raw"}, REAL_EMBEDDERS


@pytest.mark.model
@pytest.mark.parametrize("name", REAL_EMBEDDERS)
def test_registered_embedder_contract(name: str) -> None:
    check_embedder(load_embedder(name, shared=False))


def test_fake_embedder_contract() -> None:
    check_embedder(FakeEmbedder(dim=16))
    check_embedder(FakeEmbedder(dim=16, bag_of_words=True))


@pytest.mark.model
@pytest.mark.parametrize("name", MODEL_JUDGES)
def test_trained_judge_contract(name: str) -> None:
    check_judge(load_judge(name))


@pytest.mark.parametrize("name", CHEAP_JUDGES)
def test_baseline_judge_contract(name: str) -> None:
    check_judge(load_judge(name))


def test_llm_judge_contract() -> None:
    check_judge(load_judge("llm", llm=ScriptedLLM(_llm_verdict)))


@pytest.mark.parametrize("factory", [NumpyIndex, FaissIndex], ids=["numpy", "faiss-flat"])
def test_vector_index_contract(factory) -> None:
    """(An HNSW FaissIndex is not a full VectorIndex: faiss cannot remove from HNSW, and it says so with a
    BackendError; the store uses Flat unless a benchmark asks otherwise.)"""
    check_vector_index(factory)


def test_rule_extractor_contract() -> None:
    check_extractor(RuleExtractor())


def test_llm_extractor_contract_falls_back_to_rules_on_a_broken_llm() -> None:
    """An LLM that answers garbage must still leave a working extractor (rules take over)."""
    check_extractor(LLMExtractor(ScriptedLLM(lambda _m: "not json at all")))


def test_checks_catch_a_broken_component() -> None:
    """The checks can fail: a judge returning one verdict too few, an embedder that is not unit-norm."""
    from memlab.records import Label, Verdict

    class ShortJudge:
        name = "short"

        def judge(self, pairs):
            return [Verdict(Label.NEUTRAL, 0.1, "short")][: max(0, len(pairs) - 1)]

        def get_params(self):
            return {}

    with pytest.raises(AssertionError, match="one verdict per pair"):
        check_judge(ShortJudge())

    class Unnormalised(FakeEmbedder):
        def _encode(self, texts, mode):
            return super()._encode(texts, mode) * 3

    class NoNorm(Unnormalised):
        def embed(self, texts, /, *, mode="passage"):
            return self._encode(list(texts), mode) if not isinstance(texts, str) else super().embed(texts)

    with pytest.raises(AssertionError, match="unit norm"):
        check_embedder(NoNorm(dim=8))
