"""Build the configured LLM backend from :class:`~memlab.config.Settings`."""

from __future__ import annotations

from typing import Any

from memlab.config import Settings
from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.llm.base import BaseLLM

__all__ = ["LLM_BACKENDS", "auto_backend", "load_llm"]

#: Backend names accepted by :func:`load_llm` (``none`` disables the LLM; ``auto`` is ``llamacpp`` when
#: ``memlab[llm-local]`` is installed, else ``none``).
LLM_BACKENDS = ("auto", "none", "ollama", "openai", "llamacpp")


def auto_backend(settings: Settings | None = None) -> str:
    """What ``llm_backend="auto"`` means here: ``llamacpp`` when ``llm_gguf_path`` is set, or when ``llama_cpp`` and
    the packaged SmolLM2 GGUF are installed; else ``none``. Any other setting is returned as it is.

    Example:
        >>> auto_backend(Settings(llm_backend="none"))
        'none'
    """
    s = settings if settings is not None else Settings()
    if s.llm_backend != "auto":
        return str(s.llm_backend)
    if s.llm_gguf_path is not None:  # a model file was named: use it (a missing file is then a clear error)
        return "llamacpp"
    from memlab.llm.llamacpp import llamacpp_available

    return "llamacpp" if llamacpp_available() else "none"


def load_llm(settings: Settings | None = None, **overrides: Any) -> BaseLLM | None:
    """The LLM named by ``settings.llm_backend``, or ``None`` when it is ``"none"`` (no LLM configured).

    ``auto`` (the default) gives the in-process :class:`~memlab.llm.LlamaCppLLM` when ``memlab[llm-local]`` is
    installed (see :func:`auto_backend`), else ``None``. The llama.cpp model is loaded at its first call, not here.

    Args:
        settings: memlab settings (``llm_backend``, ``llm_model``, ``llm_base_url``, ``llm_api_key``,
            ``llm_timeout_s``); default ``Settings()`` built by the caller's environment.
        **overrides: extra keyword arguments for the backend's constructor (``max_retries``, ``think`` ...).

    Returns:
        An :class:`~memlab.llm.OllamaLLM`, an :class:`~memlab.llm.OpenAICompatLLM`, a
        :class:`~memlab.llm.LlamaCppLLM`, or ``None``.

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
    if backend not in LLM_BACKENDS:
        raise UnknownComponentError("LLM backend", str(backend), LLM_BACKENDS)
    backend = auto_backend(s)
    if backend == "none":
        return None
    if backend == "llamacpp":
        from memlab.llm.llamacpp import LlamaCppLLM

        return LlamaCppLLM(**{"model_path": s.llm_gguf_path, "n_ctx": s.llm_n_ctx, "n_threads": s.llm_n_threads,
                              "timeout_s": s.llm_timeout_s, **overrides})
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
