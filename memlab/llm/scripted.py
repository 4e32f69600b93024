"""A scripted LLM (test double): answers come from a list or a callable, no server needed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memlab.errors import LLMError
from memlab.llm.base import BaseLLM, ChatResult, HealthStatus

__all__ = ["ScriptedLLM"]

Reply = str | BaseException


class ScriptedLLM(BaseLLM):
    """Replies are scripted, like inspect's ``mockllm``: a list consumed in order, or a callable.

    A scripted :class:`BaseException` is raised instead of answering (to script failures). Retries,
    ``<think>`` splitting and :meth:`structured` validation are the real ones from :class:`BaseLLM`.

    Args:
        replies: a list of replies (consumed in order; running out raises :class:`LLMError`) or a callable
            ``messages -> reply``.
        model: a name for logs.
        max_retries: retries of transient failures.

    Example:
        >>> llm = ScriptedLLM(["<think>hmm</think>ciao"])
        >>> llm.chat([{"role": "user", "content": "hi"}])
        'ciao'
    """

    backend = "scripted"

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[list[dict[str, Any]]], Reply] = (),
        *,
        model: str = "scripted",
        max_retries: int = 0,
    ) -> None:
        super().__init__(model=model, max_retries=max_retries, backoff_s=0.0)
        self.replies = replies
        self.name = f"scripted:{model}"
        self.calls: list[list[dict[str, Any]]] = []
        self._i = 0

    def _complete_once(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        tools: Sequence[Mapping[str, Any]] | None,
        on_token: Callable[[str], None] | None,
    ) -> ChatResult:
        self.calls.append(messages)
        if callable(self.replies):
            reply = self.replies(messages)
        else:
            if self._i >= len(self.replies):
                raise LLMError(f"ScriptedLLM ran out of replies after {self._i} calls.")
            reply = self.replies[self._i]
            self._i += 1
        if isinstance(reply, BaseException):
            raise reply
        if on_token is not None:
            on_token(reply)
        return ChatResult(content=reply, model=self.model)

    def health(self) -> HealthStatus:
        """Always healthy."""
        return HealthStatus(True, self.backend, self.model, "ok", (self.model,))
