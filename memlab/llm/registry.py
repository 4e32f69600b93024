"""Build the configured LLM backend from :class:`~memlab.config.Settings`."""

from __future__ import annotations

from typing import Any

from memlab.config import Settings
from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.llm.base import BaseLLM

__all__ = ["LLM_BACKENDS", "load_llm"]

#: Backend names accepted by :func:`load_llm` (``none`` disables the LLM).
LLM_BACKENDS = ("none", "ollama", "openai")


def load_llm(settings: Settings | None = None, **overrides: Any) -> BaseLLM | None:
    """The LLM named by ``settings.llm_backend``, or ``None`` when it is ``"none"`` (no LLM configured).

    Args:
        settings: memlab settings (``llm_backend``, ``llm_model``, ``llm_base_url``, ``llm_api_key``,
            ``llm_timeout_s``); default ``Settings()`` built by the caller's environment.
        **overrides: extra keyword arguments for the backend's constructor (``max_retries``, ``think`` ...).

    Returns:
        An :class:`~memlab.llm.OllamaLLM`, an :class:`~memlab.llm.OpenAICompatLLM`, or ``None``.

    Raises:
        UnknownComponentError: unknown backend name.
        InvalidInputError: a backend is chosen but no model is set.

    Example:
        >>> load_llm(Settings(llm_backend="none")) is None
        True
        >>> load_llm(Settings(llm_backend="ollama", llm_model="llama3.2")).name
        'ollama:llama3.2'
    """
    s = settings if settings is not None else Settings()
    backend = s.llm_backend
    if backend == "none":
        return None
    if backend not in LLM_BACKENDS:
        raise UnknownComponentError("LLM backend", str(backend), LLM_BACKENDS)
    if not s.llm_model:
        raise InvalidInputError(
            f"The 'llm_model' setting (MEMLAB_LLM_MODEL) must be set when llm_backend is {backend!r}. Got None instead."
        )
    common: dict[str, Any] = {"model": s.llm_model, "base_url": s.llm_base_url, "timeout_s": s.llm_timeout_s}
    if backend == "ollama":
        from memlab.llm.ollama import OllamaLLM

        return OllamaLLM(**{**common, **overrides})
    from memlab.llm.openai_compat import OpenAICompatLLM

    key = s.llm_api_key.get_secret_value() if s.llm_api_key is not None else None
    return OpenAICompatLLM(**{**common, "api_key": key, **overrides})
