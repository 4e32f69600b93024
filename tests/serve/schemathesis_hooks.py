"""Schemathesis hooks for ``memlab serve`` (``SCHEMATHESIS_HOOKS=tests.serve.schemathesis_hooks``).

One rule of the API cannot be written in JSON Schema (OpenAPI 3.1): in ``POST /v1/chat``'s ``messages`` form the
*last* message must be the user's, with a visible character (JSON Schema has no keyword for "the last item of an
array"). The schema states the rule in the field's description and the server refuses a violation with 422.
This hook tells the fuzzer the same rule, for positive cases only, so that it does not report the documented 422
as a schema-valid request rejected; negative cases are left alone (the server must still refuse them).
"""

from __future__ import annotations

from typing import Any

try:
    import schemathesis
except ImportError:  # pragma: no cover - imported by pytest's doctest collection without the dev extra
    schemathesis = None


def last_message_is_the_users(ctx: Any, case: Any) -> Any:
    """Positive ``/v1/chat`` cases in the ``messages`` form end with a non-blank user message."""
    meta = getattr(case, "meta", None)
    positive = meta is not None and meta.generation.mode.is_positive
    body = case.body
    if positive and isinstance(body, dict) and isinstance(body.get("messages"), list) and body["messages"]:
        last = body["messages"][-1]
        if isinstance(last, dict):
            last["role"] = "user"
            if not str(last.get("content", "")).strip():
                last["content"] = "ciao"
    return case


if schemathesis is not None:
    schemathesis.hook("map_case").apply_to(path="/v1/chat", method="POST")(last_message_is_the_users)
