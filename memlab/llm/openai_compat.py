"""Any OpenAI-compatible server (vLLM, llama.cpp server, LM Studio, OpenAI ...) through the official ``openai`` client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from memlab._validation import check_http_url
from memlab.errors import InvalidInputError, LLMError, MissingDependencyError
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

__all__ = ["OpenAICompatLLM"]

JsonMode = Literal["json_schema", "json_object", "none"]


def _tool_call(name: str, raw: str | None, id_: str | None) -> ToolCall:
    try:
        args = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        return ToolCall(name=name, arguments={}, id=id_, arguments_error=f"arguments are not JSON: {exc.msg}")
    if not isinstance(args, dict):
        return ToolCall(name=name, arguments={}, id=id_, arguments_error="arguments are not a JSON object")
    return ToolCall(name=name, arguments=args, id=id_)


class OpenAICompatLLM(BaseLLM):
    """A chat model behind ``/v1/chat/completions``.

    The ``openai`` client's own retries are off (``max_retries=0``): memlab retries transient failures
    itself with tenacity, the same way for every backend. Reasoning that a server returns as
    ``reasoning_content`` (or inline ``<think>`` tags) goes to :attr:`ChatResult.thinking`, never to the reply.

    Args:
        model: model name on the server.
        base_url: the server's ``/v1`` URL (``None``: the official OpenAI API).
        api_key: the key; local servers usually accept any string (the default ``"not-needed"``).
        timeout_s: per-request timeout in seconds.
        max_retries: retries of transient failures (timeouts, connection errors, 429, 5xx).
        backoff_s: first backoff wait (doubles each retry).
        temperature: sampling temperature (``None``: the server's default).
        json_mode: how structured calls constrain the reply: ``json_schema`` (``response_format`` with the
            schema), ``json_object`` (servers that only support JSON mode), or ``none`` (prompt only).
        stream: stream the reply (pieces go to ``on_token``).

    Raises:
        MissingDependencyError: the ``openai`` package is not installed (``pip install 'memlab[llm]'``).

    Example:
        >>> llm = OpenAICompatLLM(model="qwen2.5", base_url="http://127.0.0.1:9/v1")
        >>> llm.get_params()["json_mode"]
        'json_schema'
    """

    backend = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float | None = 0.0,
        json_mode: JsonMode = "json_schema",
        stream: bool = False,
    ) -> None:
        super().__init__(
            model=model, timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s, temperature=temperature
        )
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - installed in the dev venv
            raise MissingDependencyError("openai", "llm") from exc
        base_url = check_http_url(base_url, name="base_url", owner="OpenAICompatLLM")
        if json_mode not in ("json_schema", "json_object", "none"):
            raise InvalidInputError(
                "The 'json_mode' parameter of OpenAICompatLLM must be one of ['json_schema', 'json_object', 'none']. "
                f"Got {json_mode!r} instead."
            )
        self.base_url = base_url.rstrip("/") if base_url else None
        self.json_mode: JsonMode = json_mode
        self.stream = bool(stream)
        self.name = f"openai:{model}"
        self._openai = openai
        # base_url and api_key are explicit so OPENAI_BASE_URL / OPENAI_API_KEY are never read from the environment
        self._client = openai.OpenAI(
            base_url=self.base_url or "https://api.openai.com/v1",
            api_key=api_key or "not-needed",
            timeout=self.timeout_s,
            max_retries=0,
        )

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs; the API key is never included)."""
        return {**super().get_params(), "base_url": self.base_url, "json_mode": self.json_mode, "stream": self.stream}

    def _map_error(self, exc: BaseException) -> LLMError:
        o = self._openai
        where = f"OpenAI-compatible server at {self.base_url or 'api.openai.com'} (model {self.model!r})"
        if isinstance(exc, o.APITimeoutError):  # subclass of APIConnectionError: test it first
            return LLMTimeoutError(f"{where} did not answer within {self.timeout_s:g} s.")
        if isinstance(exc, o.APIConnectionError):
            return LLMConnectionError(f"Cannot reach {where}: {exc}")
        if isinstance(exc, o.APIStatusError):
            return LLMHTTPError(f"{where} answered with HTTP {exc.status_code}: {exc.message}", status_code=exc.status_code)
        return LLMResponseError(f"{where} sent an answer that does not follow /v1/chat/completions: {exc}")

    def _request(self, messages: list[dict[str, Any]], json_schema: dict[str, Any] | None, schema_name: str,
                 tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if tools:
            kwargs["tools"] = list(tools)
        if json_schema is not None:
            if self.json_mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name[:64] or "output", "schema": json_schema, "strict": False},
                }
            elif self.json_mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            if self.json_mode != "json_schema":
                schema_text = json.dumps(json_schema, ensure_ascii=False)
                kwargs["messages"] = [
                    *messages,
                    {"role": "system", "content": f"Reply with one JSON object matching this JSON schema:\n{schema_text}"},
                ]
        return kwargs

    def _complete_once(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        tools: Sequence[Mapping[str, Any]] | None,
        on_token: Callable[[str], None] | None,
    ) -> ChatResult:
        from pydantic import ValidationError

        kwargs = self._request(messages, json_schema, schema_name, tools)
        try:
            if self.stream:
                return self._stream(kwargs, on_token)
            resp = self._client.chat.completions.create(**kwargs)
        except (self._openai.OpenAIError, ValidationError, json.JSONDecodeError) as exc:
            raise self._map_error(exc) from exc
        if not getattr(resp, "choices", None):
            raise LLMResponseError(f"{self.base_url}: the answer has no 'choices' (model {self.model!r}).")
        choice = resp.choices[0]
        msg = choice.message
        extra = msg.model_extra or {}
        thinking = str(extra.get("reasoning_content") or extra.get("reasoning") or "")
        calls = tuple(
            _tool_call(tc.function.name, tc.function.arguments, tc.id) for tc in (msg.tool_calls or ()) if tc.function
        )
        content = msg.content or ""
        if on_token is not None and content:
            on_token(content)
        return ChatResult(content=content, thinking=thinking, tool_calls=calls, model=resp.model or self.model,
                          finish_reason=choice.finish_reason, n_chunks=1)

    def _stream(self, kwargs: dict[str, Any], on_token: Callable[[str], None] | None) -> ChatResult:
        content: list[str] = []
        thinking: list[str] = []
        partial: dict[int, dict[str, Any]] = {}
        n = 0
        model = ""
        finish: str | None = None
        # closed however the loop ends: an exception from on_token (a client that went away) stops the stream
        with self._client.chat.completions.create(**kwargs, stream=True) as stream:
            for chunk in stream:
                n += 1
                model = chunk.model or model
                if not chunk.choices:
                    continue
                ch = chunk.choices[0]
                delta = ch.delta
                extra = delta.model_extra or {}
                if extra.get("reasoning_content") or extra.get("reasoning"):
                    thinking.append(str(extra.get("reasoning_content") or extra.get("reasoning")))
                if delta.content:
                    content.append(delta.content)
                    if on_token is not None:
                        on_token(delta.content)
                for tc in delta.tool_calls or ():
                    slot = partial.setdefault(tc.index, {"name": "", "args": "", "id": None})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["args"] += tc.function.arguments or ""
                finish = ch.finish_reason or finish
        calls = tuple(_tool_call(s["name"], s["args"], s["id"]) for _, s in sorted(partial.items()))
        return ChatResult(content="".join(content), thinking="".join(thinking), tool_calls=calls,
                          model=model or self.model, finish_reason=finish, n_chunks=n)

    def health(self) -> HealthStatus:
        """``GET /v1/models``: is the server up, and does it serve the model? Never raises."""
        from pydantic import ValidationError

        t0 = time.perf_counter()
        try:
            page = self._client.models.list()
            names = tuple(m.id for m in page.data)
        except (self._openai.OpenAIError, ValidationError, json.JSONDecodeError) as exc:
            return HealthStatus(False, self.backend, self.model, str(self._map_error(exc)), (),
                                (time.perf_counter() - t0) * 1000.0)
        ms = (time.perf_counter() - t0) * 1000.0
        if self.model in names:
            return HealthStatus(True, self.backend, self.model, "ok", names, ms)
        return HealthStatus(False, self.backend, self.model,
                            f"The server is up but does not list model {self.model!r}.", names, ms)
