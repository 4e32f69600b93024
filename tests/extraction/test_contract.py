"""Every extractor honours the Extractor contract (sklearn parametrize_with_checks style)."""

from __future__ import annotations

import json

import pytest

from memlab.eval.extraction_task import SentenceBaseline
from memlab.extraction import ExtractionResult, Extractor, LLMExtractor, RuleExtractor
from memlab.llm import ScriptedLLM

REPLY = json.dumps({"facts": [{"content": "L'utente vive a Roma", "confidence": 0.9, "key": "home_city",
                               "value": "Roma"}], "fatigue_signal": 0.1})


def _extractors() -> list[Extractor]:
    return [RuleExtractor(), LLMExtractor(ScriptedLLM(lambda _m: REPLY)), SentenceBaseline()]


@pytest.mark.parametrize("ex", _extractors(), ids=lambda e: e.name)
def test_contract(ex: Extractor) -> None:
    assert isinstance(ex, Extractor)
    for msg in ("Abito a Roma.", "I live in Rome.", "我住在北京。", "", "😀", "Ciao\x00 a tutti"):
        r1, r2 = ex.extract(msg), ex.extract(msg)
        assert isinstance(r1, ExtractionResult) and r1 == r2  # deterministic
        for f in r1.facts:
            assert f.content.strip() and 0.0 <= f.confidence <= 1.0 and "\x00" not in f.content
            assert (f.key is None) == (f.value is None)
    json.dumps(ex.get_params())
