"""LLMExtractor: structured call, one corrective retry, rules fallback (counted, logged, facts kept).

The loopback tests run both official clients against a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import logging

import pytest

from memlab.extraction import (
    ConversationMemoryService,
    LLMExtractionOutput,
    LLMExtractor,
    RuleExtractor,
    load_extractor,
)
from memlab.llm import LLMHTTPError, OllamaLLM, OpenAICompatLLM, ScriptedLLM
from memlab.llm.fake_server import Answer, FakeLLMServer, ollama_answer, openai_answer
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder

GOOD = json.dumps({"facts": [{"content": "L'utente si chiama Li Si", "confidence": 0.95, "key": "preferred_name",
                              "value": "Li Si", "type": "profile", "keywords": ["nome"]},
                             {"content": "L'utente ha un cane di nome Fido", "confidence": 0.8, "key": "pet_name",
                              "value": "Fido", "type": "fact"}],
                   "tone": "casual", "fatigue_signal": 0.2})
MALFORMED = '{"facts": [{"content": "L\'utente si chiama Li Si", "confidence": '
INVALID = json.dumps({"facts": [{"content": "", "confidence": 3}], "tone": "sleepy"})
MSG = "Anzi chiamami Li Si! Ho un cane che si chiama Fido."


def test_valid_structured_output() -> None:
    llm = ScriptedLLM([GOOD])
    r = LLMExtractor(llm).extract(MSG)
    assert r.extractor == "llm" and r.fallback_reason is None
    assert [(f.key, f.value) for f in r.facts] == [("preferred_name", "Li Si"), (None, None)]  # unknown slot -> free
    assert r.facts[0].type == "profile" and r.tone.value == "casual"
    system = llm.calls[0][0]["content"]
    assert "preferred_name" in system and '"facts"' in system  # slot vocabulary and schema in the prompt


def test_invalid_then_valid_retries_with_the_error() -> None:
    llm = ScriptedLLM([INVALID, GOOD])
    ex = LLMExtractor(llm)
    r = ex.extract(MSG)
    assert r.extractor == "llm" and ex.n_invalid == 1 and ex.n_fallbacks == 0
    retry = llm.calls[1]
    assert retry[-2] == {"role": "assistant", "content": INVALID}
    assert "non è valida" in retry[-1]["content"] and "confidence" in retry[-1]["content"]


def test_invalid_twice_falls_back_to_rules_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    ex = LLMExtractor(ScriptedLLM([MALFORMED, MALFORMED]))
    with caplog.at_level(logging.WARNING, logger="memlab.extraction.llm_extractor"):
        r = ex.extract(MSG)
    assert r.extractor == "llm>rules" and "StructuredOutputError" in (r.fallback_reason or "")
    assert [(f.key, f.value) for f in r.facts if f.key] == [("preferred_name", "Li Si")]  # facts kept
    assert ex.n_fallbacks == 1 and ex.n_invalid == 2
    assert any("falling back to rules" in rec.message for rec in caplog.records)


def test_backend_failure_falls_back() -> None:
    ex = LLMExtractor(ScriptedLLM([LLMHTTPError("boom", status_code=500)]))
    r = ex.extract("Abito a Roma")
    assert r.extractor == "llm>rules" and [f.value for f in r.facts] == ["Roma"] and ex.n_fallbacks == 1


def test_rule_slots_missed_by_llm_are_merged() -> None:
    out = json.dumps({"facts": [{"content": "L'utente ha un cane", "confidence": 0.8}], "fatigue_signal": 0.0})
    r = LLMExtractor(ScriptedLLM([out])).extract("Abito a Roma e ho un cane")
    assert {f.key for f in r.facts} == {None, "home_city"}


def test_emoji_only_does_not_call_the_llm() -> None:
    llm = ScriptedLLM([])
    r = LLMExtractor(llm).extract("😀😀")
    assert r.facts == () and llm.calls == []


def test_schema_model_roundtrip() -> None:
    assert LLMExtractionOutput.model_validate_json(GOOD).facts[0].value == "Li Si"


def test_load_extractor() -> None:
    assert isinstance(load_extractor(), RuleExtractor)
    assert isinstance(load_extractor(llm=ScriptedLLM([])), LLMExtractor)


# --------------------------------------------------------------------------- loopback, both official clients
@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def _backends(server: FakeLLMServer, **kw: object) -> list[tuple[object, str, object]]:
    return [
        (OllamaLLM(model="m", base_url=server.url, backoff_s=0.0, **kw), "/api/chat", ollama_answer),  # type: ignore[arg-type]
        (OpenAICompatLLM(model="m", base_url=server.url + "/v1", backoff_s=0.0, **kw),  # type: ignore[arg-type]
         "/v1/chat/completions", openai_answer),
    ]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_loopback_malformed_json_retry_then_rules_fallback(server: FakeLLMServer, backend: str) -> None:
    llm, path, answer = dict(zip(("ollama", "openai"), _backends(server), strict=True))[backend]
    server.queue(path, answer(MALFORMED), answer("Certo! Ecco i fatti: nome Li Si"))  # type: ignore[operator]
    ex = LLMExtractor(llm)  # type: ignore[arg-type]
    r = ex.extract(MSG)
    assert r.extractor == "llm>rules" and ex.n_fallbacks == 1
    assert [(f.key, f.value) for f in r.facts if f.key] == [("preferred_name", "Li Si")]
    bodies = server.posted(path)
    assert len(bodies) == 2 and "non è valida" in bodies[1]["messages"][-1]["content"]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_loopback_malformed_then_valid(server: FakeLLMServer, backend: str) -> None:
    llm, path, answer = dict(zip(("ollama", "openai"), _backends(server), strict=True))[backend]
    server.queue(path, answer(MALFORMED), answer(GOOD))  # type: ignore[operator]
    r = LLMExtractor(llm).extract(MSG)  # type: ignore[arg-type]
    assert r.extractor == "llm" and r.facts[0].value == "Li Si"


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_loopback_500_and_timeout_fall_back_to_rules(server: FakeLLMServer, backend: str) -> None:
    llm, path, _ = dict(zip(("ollama", "openai"), _backends(server, max_retries=1, timeout_s=0.3), strict=True))[backend]
    server.queue(path, Answer(500, b'{"error": "down"}'), Answer(delay_s=1.0, body=b"{}"))
    ex = LLMExtractor(llm)  # type: ignore[arg-type]
    r = ex.extract("Abito a Roma")
    assert r.extractor == "llm>rules" and [f.value for f in r.facts] == ["Roma"]
    assert "LLMTimeoutError" in (r.fallback_reason or "")


def test_service_with_llm_extractor_over_loopback(server: FakeLLMServer) -> None:
    server.queue("/api/chat", ollama_answer(GOOD, thinking="the user corrects their name"))
    llm = OllamaLLM(model="m", base_url=server.url, backoff_s=0.0)
    svc = ConversationMemoryService(MemoryStore(":memory:", embedder=FakeEmbedder()), LLMExtractor(llm), user_id="u1")
    r = svc.update_after_user_message("c1", MSG)
    assert [m.key for m in r.memories] == ["preferred_name", None]
    assert r.memories[0].source == "conv:c1/msg:1"


def test_the_prompt_has_the_current_topic_and_the_known_facts() -> None:
    """The extraction call sees TOPIC CORRENTE and FATTI GIÀ NOTI, so the model does not repeat known facts."""
    from memlab.extraction.llm_extractor import build_extraction_messages

    user = build_extraction_messages("Abito a Roma", topic="Viaggio a Tokyo",
                                     known=["L'utente si chiama Li Si", "L'utente\nè nato il 12 luglio"])[1]["content"]
    lines = user.splitlines()
    assert lines[0] == "TOPIC CORRENTE: Viaggio a Tokyo"
    assert lines[1:4] == ["FATTI GIÀ NOTI (non ripeterli):", "- <memory>L'utente si chiama Li Si</memory>",
                         "- <memory>L'utente&#10;è nato il 12 luglio</memory>"]  # a line break: escaped
    assert lines[-2:] == ["RISPOSTA DELL'UTENTE:", "Abito a Roma"]
    en = build_extraction_messages("I live in Rome", lang="en")[1]["content"].splitlines()
    assert en[:3] == ["CURRENT TOPIC: General", "KNOWN FACTS (do not repeat them):", "(none)"]


def test_the_service_passes_topic_and_known_facts_to_the_extractor(tmp_path) -> None:
    from memlab.extraction import ConversationMemoryService, RuleExtractor
    from memlab.store import MemoryStore
    from memlab.testing import FakeEmbedder

    seen: list[tuple[str | None, list[str]]] = []

    class Spy(RuleExtractor):
        def extract(self, message, **kw):  # type: ignore[override]
            seen.append((kw.get("topic"), list(kw.get("known", ()))))
            return super().extract(message, **kw)

    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder()) as store:
        svc = ConversationMemoryService(store, Spy(), user_id="u1")
        svc.update_after_user_message("c1", "Mi chiamo Anna", topic="Presentazioni")
        svc.update_after_user_message("c1", "Abito a Roma", topic="Casa")
    assert seen[0] == ("Presentazioni", [])
    assert seen[1][0] == "Casa" and any("Anna" in k for k in seen[1][1])
