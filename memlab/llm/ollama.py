"""Ollama backend through the official ``ollama`` client (``/api/chat``, streaming NDJSON)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlab._validation import check_http_url
from memlab.errors import LLMError, MissingDependencyError
from memlab.llm.base import (
    BaseLLM,
    ChatResult,
    HealthStatus,
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    ToolCall,
)

__all__ = ["DEFAULT_OLLAMA_URL", "OllamaLLM"]

#: Where a local Ollama listens by default.
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"


class OllamaLLM(BaseLLM):
    """A model served by Ollama (the local default for a host agent).

    The reply is always streamed (``stream=True``): visible pieces go to ``on_token``; ``thinking`` pieces
    are accumulated into :attr:`ChatResult.thinking` and never shown; tool calls are parsed; structured
    calls pass the JSON schema as ``format=``.

    Args:
        model: model tag (``llama3.2``, ``qwen3:4b`` ...).
        base_url: server URL (default ``http://127.0.0.1:11434``).
        timeout_s: per-read timeout in seconds.
        max_retries: retries of transient failures (timeouts, connection errors, 429, 5xx).
        backoff_s: first backoff wait (doubles each retry).
        temperature: sampling temperature (``None``: the model's default).
        think: ask thinking models to think (``None``: do not send the flag; non-thinking models reject ``True``).
        keep_alive: how long Ollama keeps the model loaded (``"5m"``), ``None`` for the server default.

    Raises:
        MissingDependencyError: the ``ollama`` package is not installed (``pip install 'memlab[llm]'``).

    Example:
        >>> llm = OllamaLLM(model="llama3.2", base_url="http://127.0.0.1:9")
        >>> llm.get_params()["backend"]
        'ollama'
    """

    backend = "ollama"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float | None = 0.0,
        think: bool | None = None,
        keep_alive: str | None = None,
    ) -> None:
        super().__init__(
            model=model, timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s, temperature=temperature
        )
        try:
            import ollama
        except ImportError as exc:  # pragma: no cover - installed in the dev venv
            raise MissingDependencyError("ollama", "llm") from exc
        base_url = check_http_url(base_url, name="base_url", owner="OllamaLLM")
        self.base_url = (base_url or DEFAULT_OLLAMA_URL).rstrip("/")
        self.think = think
        self.keep_alive = keep_alive
        self.name = f"ollama:{model}"
        self._ollama = ollama
        # host is always explicit, so OLLAMA_HOST in the environment is never read
        self._client = ollama.Client(host=self.base_url, timeout=self.timeout_s)

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs)."""
        return {**super().get_params(), "base_url": self.base_url, "think": self.think}

    def _map_error(self, exc: BaseException) -> LLMError:
        import httpx

        where = f"Ollama at {self.base_url} (model {self.model!r})"
        if isinstance(exc, self._ollama.ResponseError):
            code = int(getattr(exc, "status_code", -1) or -1)
            return LLMHTTPError(f"{where} answered with an error (status {code}): {exc.error}", status_code=code)
        if isinstance(exc, httpx.TimeoutException):
            return LLMTimeoutError(f"{where} did not answer within {self.timeout_s:g} s.")
        if isinstance(exc, ConnectionError | httpx.TransportError):
            return LLMConnectionError(f"Cannot reach {where}: {exc}")
        if isinstance(exc, json.JSONDecodeError):
            return LLMResponseError(f"{where} sent a malformed stream line: {exc.msg} at position {exc.pos}.")
        return LLMResponseError(f"{where} sent an answer that does not follow the /api/chat format: {exc}")

    def _complete_once(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        tools: Sequence[Mapping[str, Any]] | None,
        on_token: Callable[[str], None] | None,
    ) -> ChatResult:
        import httpx
        from pydantic import ValidationError

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if json_schema is not None:
            kwargs["format"] = json_schema
        if tools:
            kwargs["tools"] = list(tools)
        if self.think is not None:
            kwargs["think"] = self.think
        if self.temperature is not None:
            kwargs["options"] = {"temperature": self.temperature}
        if self.keep_alive is not None:
            kwargs["keep_alive"] = self.keep_alive
        content: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        n_chunks = 0
        model = ""
        finish: str | None = None
        try:
            stream = self._client.chat(**kwargs)
            try:
                for chunk in stream:
                    n_chunks += 1
                    msg = chunk.message
                    if msg.thinking:
                        thinking.append(msg.thinking)
                    if msg.content:
                        content.append(msg.content)
                        if on_token is not None:
                            on_token(msg.content)
                    for tc in msg.tool_calls or ():
                        calls.append(ToolCall(name=tc.function.name, arguments=dict(tc.function.arguments or {})))
                    model = chunk.model or model
                    if chunk.done:
                        finish = chunk.done_reason or "stop"
            finally:  # closed however the loop ends: an exception from on_token stops the stream
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except (self._ollama.ResponseError, httpx.HTTPError, ConnectionError, json.JSONDecodeError,
                ValidationError, TypeError) as exc:
            raise self._map_error(exc) from exc
        if n_chunks == 0:
            raise LLMResponseError(f"Ollama at {self.base_url} sent an empty stream for model {self.model!r}.")
        if finish is None:
            raise LLMResponseError(
                f"Ollama at {self.base_url} closed the stream before the final chunk (done=true) for model {self.model!r}."
            )
        if calls and finish == "stop":
            finish = "tool_calls"
        return ChatResult(
            content="".join(content), thinking="".join(thinking), tool_calls=tuple(calls), model=model or self.model,
            finish_reason=finish, n_chunks=n_chunks,
        )

    def health(self) -> HealthStatus:
        """``GET /api/tags``: is the server up, and is the model pulled? Never raises."""
        import httpx
        from pydantic import ValidationError

        t0 = time.perf_counter()
        try:
            listed = self._client.list()
        except (self._ollama.ResponseError, httpx.HTTPError, ConnectionError, json.JSONDecodeError,
                ValidationError) as exc:
            err = self._map_error(exc)
            return HealthStatus(False, self.backend, self.model, str(err), (),
                                (time.perf_counter() - t0) * 1000.0)
        names = tuple(m.model for m in listed.models if m.model)
        ms = (time.perf_counter() - t0) * 1000.0
        wanted = {self.model, self.model + ":latest"}
        if wanted & set(names):
            return HealthStatus(True, self.backend, self.model, "ok", names, ms)
        return HealthStatus(
            False, self.backend, self.model,
            f"Ollama is up but model {self.model!r} is not pulled (run: ollama pull {self.model}).", names, ms,
        )
