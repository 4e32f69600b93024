"""Shared machinery of memlab's LLM backends: results, errors, retries, structured output.

Every backend implements one attempt (:meth:`BaseLLM._complete_once`); this module adds what they share:
message validation, retries with exponential backoff (tenacity) on *transient* failures only (timeouts,
connection errors, HTTP 429 and 5xx), splitting hidden reasoning (``thinking``, ``<think>...</think>``) from
the visible reply, and :meth:`BaseLLM.structured` (JSON schema in, validated pydantic object out).

Error tree (all are :class:`~memlab.errors.LLMError`, so ``except LLMError`` catches every one)::

    LLMError
    ├── LLMTimeoutError          the server did not answer within ``timeout_s``   (retried)
    ├── LLMConnectionError       cannot reach the server                          (retried)
    ├── LLMHTTPError             HTTP error status; ``status_code``                (retried on 429/5xx)
    ├── LLMResponseError         the wire answer is malformed (bad JSON line, missing fields)
    └── StructuredOutputError    the reply is not valid JSON for the schema; ``raw`` and ``detail``
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from memlab._validation import strip_control
from memlab.errors import InvalidInputError, LLMError

__all__ = [
    "BaseLLM",
    "ChatResult",
    "HealthStatus",
    "LLMConnectionError",
    "LLMHTTPError",
    "LLMResponseError",
    "LLMTimeoutError",
    "StructuredOutputError",
    "ToolCall",
    "parse_json_reply",
]

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_ROLES = frozenset({"system", "user", "assistant", "tool"})
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

#: Longest message content sent to a backend (characters); longer content raises InvalidInputError.
MAX_MESSAGE_CHARS = 200_000


class LLMTimeoutError(LLMError):
    """The server did not answer within the timeout (retried with backoff)."""


class LLMConnectionError(LLMError):
    """The server cannot be reached (retried with backoff)."""


class LLMHTTPError(LLMError):
    """The server answered with an HTTP error status.

    Attributes:
        status_code: the HTTP status (``-1`` when the server reported an error inside a stream).
    """

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code

    @property
    def retryable(self) -> bool:
        """429 and 5xx are worth retrying; other statuses are not."""
        return self.status_code == 429 or self.status_code >= 500


class LLMResponseError(LLMError):
    """The server's answer does not follow the API's wire format."""


class StructuredOutputError(LLMError):
    """The reply does not parse as JSON or does not validate against the requested schema.

    Attributes:
        raw: the reply text as received.
        detail: the JSON or validation error, suitable for feeding back to the model on a retry.
    """

    def __init__(self, message: str, *, raw: str, detail: str) -> None:
        super().__init__(message)
        self.raw = raw
        self.detail = detail


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, LLMTimeoutError | LLMConnectionError):
        return True
    return isinstance(exc, LLMHTTPError) and exc.retryable


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call requested by the model.

    Attributes:
        name: the tool (function) name.
        arguments: parsed arguments (empty when they did not parse; see ``arguments_error``).
        id: the call id, when the API gives one.
        arguments_error: why the raw arguments did not parse as a JSON object, else ``None``.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    arguments_error: str | None = None


@dataclass(frozen=True, slots=True)
class ChatResult:
    """One complete model answer.

    Attributes:
        content: the visible reply (what a user may see). Hidden reasoning is never part of it.
        thinking: the model's reasoning, captured for logs and debugging; never show it to the user.
        tool_calls: function calls requested by the model, in order.
        model: model name reported by the server (or the configured one).
        finish_reason: ``stop``, ``length``, ``tool_calls`` ... when the server says.
        n_chunks: stream chunks received (1 for non-streaming calls).
        latency_ms: wall time of the successful attempt.
        attempts: attempts made (1 + retries).
    """

    content: str
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    finish_reason: str | None = None
    n_chunks: int = 1
    latency_ms: float = 0.0
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """Result of :meth:`BaseLLM.health` (never raises).

    Attributes:
        ok: the server answered and the configured model is available (when the server lists models).
        backend: ``ollama`` or ``openai``.
        model: the configured model.
        detail: a human-readable explanation (the error, or "ok").
        models: models the server lists.
        latency_ms: round-trip time of the check.
    """

    ok: bool
    backend: str
    model: str
    detail: str
    models: tuple[str, ...] = ()
    latency_ms: float = 0.0


def split_thinking(content: str, thinking: str = "") -> tuple[str, str]:
    """Move ``<think>...</think>`` blocks out of ``content`` into ``thinking`` (some servers inline them)."""
    found = _THINK.findall(content)
    if not found:
        return content, thinking
    hidden = "\n".join(s.strip() for s in found if s.strip())
    visible = _THINK.sub("", content).strip()
    return visible, "\n".join(s for s in (thinking, hidden) if s)


def parse_json_reply(raw: str, schema: type[T]) -> T:
    """Parse a model reply as ``schema``: tolerates a Markdown code fence and text around one JSON object.

    Args:
        raw: the reply text.
        schema: a pydantic model class.

    Returns:
        The validated object.

    Raises:
        StructuredOutputError: not JSON, or JSON that does not validate (``detail`` says why).

    Example:
        >>> from pydantic import BaseModel
        >>> class Out(BaseModel):
        ...     x: int
        >>> parse_json_reply('```json\\n{"x": 3}\\n```', Out).x
        3
    """
    text = raw.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # a JSON object embedded in chatter: take the outermost braces
        start, end = text.find("{"), text.rfind("}")
        data = None
        if 0 <= start < end:
            try:
                data = json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                data = None
        if data is None:
            raise StructuredOutputError(
                f"The reply is not valid JSON for {schema.__name__}: {exc.msg} at position {exc.pos}.",
                raw=raw,
                detail=f"Invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            ) from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise StructuredOutputError(
            f"The reply does not validate as {schema.__name__}: {detail}", raw=raw, detail=detail
        ) from exc


def check_messages(messages: Any, *, owner: str) -> list[dict[str, Any]]:
    """Validate chat messages and return clean copies (control characters removed, NFC)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"The 'messages' parameter of {owner} must be a sequence of {{'role', 'content'}} dicts. "
            f"Got {type(messages).__name__} instead."
        )
    if not messages:
        raise InvalidInputError(f"The 'messages' parameter of {owner} must not be empty. Got [] instead.")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidInputError(f"messages[{i}] of {owner} must be a dict. Got {type(m).__name__} instead.")
        role = m.get("role")
        if role not in _ROLES:
            raise InvalidInputError(
                f"messages[{i}]['role'] of {owner} must be one of {sorted(_ROLES)}. Got {role!r} instead."
            )
        content = m.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise InvalidInputError(
                f"messages[{i}]['content'] of {owner} must be a str. Got {type(content).__name__} instead."
            )
        if len(content) > MAX_MESSAGE_CHARS:
            raise InvalidInputError(
                f"messages[{i}]['content'] of {owner} must be at most {MAX_MESSAGE_CHARS} characters. "
                f"Got {len(content)} instead."
            )
        clean = dict(m)
        clean["content"] = strip_control(content)
        out.append(clean)
    return out


class BaseLLM:
    """Base class of the HTTP backends (retries, structured output, thinking split).

    Args:
        model: model name on the server.
        timeout_s: per-request timeout (seconds); a stream times out when no bytes arrive for this long.
        max_retries: retries after the first attempt, for transient failures only.
        backoff_s: first backoff wait; doubles each retry (capped at 8x).
        temperature: sampling temperature (``None``: the server's default).
    """

    name: str = "llm"
    backend: str = "base"

    def __init__(
        self,
        *,
        model: str,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float | None = 0.0,
    ) -> None:
        owner = type(self).__name__
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"The 'model' parameter of {owner} must be a non-empty str. Got {model!r} instead.")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise InvalidInputError(f"The 'timeout_s' parameter of {owner} must be a float > 0. Got {timeout_s!r} instead.")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInputError(
                f"The 'max_retries' parameter of {owner} must be an int in [0, inf). Got {max_retries!r} instead."
            )
        if isinstance(backoff_s, bool) or not isinstance(backoff_s, int | float) or backoff_s < 0:
            raise InvalidInputError(f"The 'backoff_s' parameter of {owner} must be a float >= 0. Got {backoff_s!r} instead.")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)
        self.temperature = temperature
        self.n_calls = 0
        self.n_retries = 0

    # -- to implement -----------------------------------------------------------------------------
    def _complete_once(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        tools: Sequence[Mapping[str, Any]] | None,
        on_token: Callable[[str], None] | None,
    ) -> ChatResult:
        raise NotImplementedError

    def health(self) -> HealthStatus:
        """Check that the server answers and lists the model; never raises."""
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs). Never includes secrets."""
        return {
            "backend": self.backend,
            "model": self.model,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "temperature": self.temperature,
        }

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        /,
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        tools: Sequence[Mapping[str, Any]] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> ChatResult:
        """One model answer with everything the server returned (content, thinking, tool calls).

        Args:
            messages: ``[{"role": ..., "content": ...}, ...]``; control characters are removed.
            json_schema: constrain the reply to this JSON schema (Ollama ``format=``, OpenAI ``response_format``).
            schema_name: the schema's name (OpenAI wants one).
            tools: tool (function) definitions in the OpenAI/Ollama JSON form.
            on_token: called with each visible content piece as it streams (never with thinking).

        Returns:
            The :class:`ChatResult` of the first successful attempt.

        Raises:
            InvalidInputError: malformed messages (nothing is sent).
            LLMError: the last attempt's error, after retries of transient failures.
        """
        clean = check_messages(messages, owner=f"{type(self).__name__}.complete")
        state = {"attempts": 0}

        def _before_sleep(rs: RetryCallState) -> None:
            self.n_retries += 1
            exc = rs.outcome.exception() if rs.outcome else None
            log.warning("%s: attempt %d failed (%s); retrying", self.name, rs.attempt_number, exc)

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff_s, min=self.backoff_s, max=self.backoff_s * 8),
            retry=retry_if_exception(_is_transient),
            before_sleep=_before_sleep,
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                state["attempts"] += 1
                self.n_calls += 1
                t0 = time.perf_counter()
                res = self._complete_once(
                    clean, json_schema=json_schema, schema_name=schema_name, tools=tools, on_token=on_token
                )
                content, thinking = split_thinking(res.content, res.thinking)
                return ChatResult(
                    content=content,
                    thinking=thinking,
                    tool_calls=res.tool_calls,
                    model=res.model or self.model,
                    finish_reason=res.finish_reason,
                    n_chunks=res.n_chunks,
                    latency_ms=(time.perf_counter() - t0) * 1000.0,
                    attempts=state["attempts"],
                )
        raise LLMError(f"{self.name}: no attempt was made")  # pragma: no cover - tenacity always attempts

    def chat(self, messages: Sequence[dict[str, Any]], /) -> str:
        """The reply text (hidden ``thinking`` dropped). See :meth:`complete` for errors."""
        return self.complete(messages).content

    def structured(self, messages: Sequence[dict[str, Any]], schema: type[T], /) -> T:
        """The reply constrained to ``schema``'s JSON schema, parsed and validated.

        Raises:
            StructuredOutputError: the reply is not valid JSON for the schema (``raw``/``detail`` say why).
            LLMError: transport failures (see :meth:`complete`).
        """
        res = self.complete(messages, json_schema=schema.model_json_schema(), schema_name=schema.__name__)
        return parse_json_reply(res.content, schema)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"
