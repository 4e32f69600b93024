"""LLM backends: Ollama and any OpenAI-compatible server, via their official clients, and llama.cpp in process
(:class:`LlamaCppLLM`, the packaged SmolLM2-135M by default: ``memlab[llm-local]``).

All implement :class:`memlab.protocols.LLM` (``chat`` -> str, ``structured`` -> validated pydantic object)
and add :meth:`~memlab.llm.BaseLLM.complete` (content, hidden thinking, tool calls), retries with backoff
on transient failures, clear :class:`~memlab.errors.LLMError` subclasses, and ``health()``.

Example:
    >>> from memlab.llm import ScriptedLLM
    >>> ScriptedLLM(["ok"]).chat([{"role": "user", "content": "ping"}])
    'ok'
"""

from __future__ import annotations

from memlab.llm.base import (
    BaseLLM,
    ChatResult,
    HealthStatus,
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    StructuredOutputError,
    ToolCall,
    parse_json_reply,
)
from memlab.llm.llamacpp import LlamaCppLLM, llamacpp_available, packaged_gguf
from memlab.llm.ollama import OllamaLLM
from memlab.llm.openai_compat import OpenAICompatLLM
from memlab.llm.registry import LLM_BACKENDS, auto_backend, load_llm
from memlab.llm.scripted import ScriptedLLM

__all__ = [
    "LLM_BACKENDS",
    "BaseLLM",
    "ChatResult",
    "HealthStatus",
    "LLMConnectionError",
    "LLMHTTPError",
    "LLMResponseError",
    "LLMTimeoutError",
    "LlamaCppLLM",
    "OllamaLLM",
    "OpenAICompatLLM",
    "ScriptedLLM",
    "StructuredOutputError",
    "ToolCall",
    "auto_backend",
    "llamacpp_available",
    "load_llm",
    "packaged_gguf",
    "parse_json_reply",
]
