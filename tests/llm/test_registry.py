"""load_llm builds the configured backend from Settings."""

from __future__ import annotations

import pytest

from memlab.config import Settings
from memlab.errors import InvalidInputError
from memlab.llm import OllamaLLM, OpenAICompatLLM, load_llm
from memlab.llm.fake_server import FakeLLMServer, openai_answer


def test_none_means_no_llm() -> None:
    assert load_llm(Settings(llm_backend="none")) is None


def test_ollama_from_settings() -> None:
    llm = load_llm(Settings(llm_backend="ollama", llm_model="qwen3:4b", llm_timeout_s=5), max_retries=0)
    assert isinstance(llm, OllamaLLM) and llm.timeout_s == 5 and llm.max_retries == 0


def test_openai_from_settings_talks_to_base_url(server: FakeLLMServer) -> None:
    server.queue("/v1/chat/completions", openai_answer("ciao"))
    s = Settings(llm_backend="openai", llm_model="m", llm_base_url=server.url + "/v1", llm_api_key="k")
    llm = load_llm(s)
    assert isinstance(llm, OpenAICompatLLM) and llm.chat([{"role": "user", "content": "hi"}]) == "ciao"


def test_model_required() -> None:
    with pytest.raises(InvalidInputError, match="llm_model"):
        load_llm(Settings(llm_backend="ollama"))
