"""One error model for the whole HTTP API, the handlers that produce it and the request body limit.

Every error of ``memlab serve`` has the body :class:`ErrorBody`::

    {"error": "<memlab error class>", "detail": "<message>", "errors": [...]}   # errors: request validation only

``error`` is the name of a :class:`~memlab.errors.MemlabError` class (the library's own, or one of the four HTTP
ones below, all subclasses of it), so a client can branch on it exactly as Python code catches the exception:

=====  ==============================  ==================================================================
 401   ``AuthenticationError``          no ``Authorization: Bearer <key>``, or a key that is unknown or revoked
 404   ``NotFoundError``                an id that does not exist for this user (another user's id included)
 405   ``MethodNotAllowedError``        a method the path does not have (``Allow`` lists the ones it has)
 409   ``ConflictError``                the resource is not in a state that allows it (resolve twice, undo twice)
 413   ``PayloadTooLargeError``         the body is larger than the server's limit (checked before parsing)
 415   ``UnsupportedMediaTypeError``    a body that is not ``Content-Type: application/json``
 422   ``InvalidInputError``            a body, a query or a path that does not validate (``errors`` lists each)
 503   ``BackendError`` (or subclass)   the database, the embedder or the model is unavailable
=====  ==============================  ==================================================================

``ClientDisconnected`` is never sent: it stops a ``/v1/chat`` turn whose client went away (the model stream is
closed, the remaining steps are not run, the memories already stored stay).

Error bodies never echo the request: ``detail`` and each ``errors[].msg`` are bounded (:data:`MAX_DETAIL_CHARS`,
:data:`MAX_MSG_CHARS`), lone surrogates are replaced by U+FFFD, and the input values pydantic reports are dropped.

The body limit (:class:`BodyLimitMiddleware`) runs before routing, parsing and authentication: a declared
``Content-Length`` above the limit is answered 413 at once, without reading the body; a body sent without one is
counted as it arrives and refused as soon as it passes the limit.
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

from memlab.errors import BackendError, InvalidInputError, MemlabError, MissingDependencyError, NotFoundError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "AuthenticationError",
    "BodyLimitMiddleware",
    "ClientDisconnected",
    "ConflictError",
    "ErrorBody",
    "FieldError",
    "MethodNotAllowedError",
    "PayloadTooLargeError",
    "UnsupportedMediaTypeError",
    "error_responses",
    "install_error_handlers",
    "max_body_bytes_from_env",
    "status_for",
]

log = logging.getLogger(__name__)

#: Default request body limit (bytes); ``MEMLAB_MAX_BODY_BYTES`` or ``create_app(max_body_bytes=...)`` change it.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
#: Longest ``detail`` an error body carries (characters).
MAX_DETAIL_CHARS = 500
#: Longest ``errors[].msg`` (characters), and most ``errors`` items / ``loc`` parts reported.
MAX_MSG_CHARS = 200
MAX_ERRORS = 20
MAX_LOC_PARTS = 8
MAX_LOC_CHARS = 64

_SURROGATE = re.compile(r"[\ud800-\udfff]")


# ------------------------------------------------------------------ the HTTP errors (MemlabError subclasses)
class AuthenticationError(MemlabError, PermissionError):
    """401: no bearer key, or a key that is unknown or revoked."""


class ConflictError(InvalidInputError):
    """409: the request is valid but the resource's state does not allow it (e.g. resolving a resolved
    notification); nothing changed."""


class PayloadTooLargeError(InvalidInputError):
    """413: the request body is larger than the server's limit; it was not read."""


class UnsupportedMediaTypeError(InvalidInputError):
    """415: the body is not JSON (``Content-Type`` must be ``application/json``)."""


class MethodNotAllowedError(InvalidInputError):
    """405: the path exists but not with this method (``Allow`` lists the methods it has)."""


class ClientDisconnected(MemlabError):
    """The client of a streamed answer (``/v1/chat``) went away: the model stream and the turn's remaining steps are
    cancelled. Never sent (there is nobody to send it to); memories the turn already stored stay."""


def status_for(exc: MemlabError) -> int:
    """The HTTP status of a memlab error."""
    for cls, code in (
        (AuthenticationError, 401),
        (NotFoundError, 404),
        (MethodNotAllowedError, 405),
        (ConflictError, 409),
        (PayloadTooLargeError, 413),
        (UnsupportedMediaTypeError, 415),
        (BackendError, 503),
        (MissingDependencyError, 503),
    ):
        if isinstance(exc, cls):
            return code
    return 422  # InvalidInputError and every other MemlabError: the request cannot be served as sent


# ------------------------------------------------------------------ the body
class FieldError(BaseModel):
    """One field that did not validate (the input itself is never echoed)."""

    loc: list[str | int] = Field(description="where: ['body', 'text'], ['query', 'k'], ['path', 'item_id']")
    msg: str = Field(description="what is wrong (at most 200 characters)")
    type: str = Field(description="pydantic's error type, e.g. string_too_long, missing, value_error")


class ErrorBody(BaseModel):
    """The body of every error response of the API."""

    error: str = Field(
        description="the memlab error class (memlab.errors or memlab.serve.errors): AuthenticationError, "
        "NotFoundError, MethodNotAllowedError, ConflictError, PayloadTooLargeError, UnsupportedMediaTypeError, "
        "InvalidInputError, BackendError (or a subclass such as LLMError, EmbedderError)",
        examples=["InvalidInputError"],
    )
    detail: str = Field(description="a readable message (at most 500 characters; never the request's content)",
                        examples=["body.text: Value error, must contain a visible character and no control "
                                  "characters"])
    errors: list[FieldError] | None = Field(
        None, description="request validation (422) only: each field that failed (at most 20)"
    )


_DESCRIPTIONS = {
    401: "Missing, unknown or revoked API key (`AuthenticationError`; `WWW-Authenticate: Bearer`).",
    404: "No such id for this user (`NotFoundError`); another user's id is answered the same way.",
    409: "The resource's state does not allow this (`ConflictError`); nothing changed.",
    413: "The request body is larger than the server's limit (`PayloadTooLargeError`); it was not read.",
    415: "The body is not `application/json` (`UnsupportedMediaTypeError`).",
    422: "The body, a query or a path parameter does not validate (`InvalidInputError`; `errors` lists each "
         "field); nothing was written.",
    503: "The database, the embedder or the model is unavailable (`BackendError` or a subclass).",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries with :class:`ErrorBody` for ``codes``."""
    return {code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes}


# ------------------------------------------------------------------ bounding what goes back
def bounded(text: Any, limit: int = MAX_DETAIL_CHARS) -> str:
    """``str(text)`` at most ``limit`` characters, lone surrogates replaced (they cannot be encoded as UTF-8)."""
    s = _SURROGATE.sub("\ufffd", str(text))
    if len(s) > limit:
        s = s[: limit - 14] + "… (truncated)"
    return s


def _loc(loc: Any) -> list[str | int]:
    parts = list(loc)[:MAX_LOC_PARTS] if isinstance(loc, tuple | list) else [loc]
    return [p if isinstance(p, int) and not isinstance(p, bool) else bounded(p, MAX_LOC_CHARS) for p in parts]


def error_json(exc_name: str, detail: str, status: int, *, errors: list[dict[str, Any]] | None = None,
               headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": exc_name, "detail": bounded(detail)}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers)


def _memlab_response(exc: MemlabError) -> JSONResponse:
    status = status_for(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return error_json(type(exc).__name__, str(exc), status, headers=headers)


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    main = content_type.split(";", 1)[0].strip().lower()
    return main == "application/json" or (main.startswith("application/") and main.endswith("+json"))


def _validation_response(request: Request, exc: RequestValidationError) -> JSONResponse:
    raw = exc.errors()
    body_errors = [e for e in raw if tuple(e.get("loc", ()))[:1] == ("body",)]
    has_body = request.headers.get("content-length", "0") not in ("0", "") or "transfer-encoding" in request.headers
    if body_errors and has_body and not _is_json(request.headers.get("content-type")):
        return error_json("UnsupportedMediaTypeError",
                          "The request body must be JSON: send it with 'Content-Type: application/json'.", 415)
    items = []
    for e in raw[:MAX_ERRORS]:
        msg = str(e.get("msg", ""))
        ctx_error = (e.get("ctx") or {}).get("error") if isinstance(e.get("ctx"), dict) else None
        if e.get("type") == "json_invalid" and ctx_error:
            msg = f"{msg}: {ctx_error}"
        elif e.get("type") == "string_unicode":
            msg = "Input should be valid Unicode text: a lone surrogate (such as \\ud800) is not a character"
        items.append({"loc": _loc(e.get("loc", ())), "msg": bounded(msg, MAX_MSG_CHARS), "type": str(e.get("type"))})
    shown = "; ".join(f"{'.'.join(map(str, i['loc']))}: {i['msg']}" for i in items[:3])
    more = f" (and {len(raw) - 3} more)" if len(raw) > 3 else ""
    return error_json("InvalidInputError", f"Invalid request: {shown}{more}", 422, errors=items)


_HTTP_NAMES = {
    401: "AuthenticationError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    409: "ConflictError",
    413: "PayloadTooLargeError",
    415: "UnsupportedMediaTypeError",
    503: "BackendError",
}


def _http_response(exc: StarletteHTTPException, request: Request | None = None) -> JSONResponse:
    status, detail = exc.status_code, exc.detail
    if status == 400:  # FastAPI's "There was an error parsing the body": too deep, a number too long, not UTF-8
        return error_json("InvalidInputError", "The request body could not be parsed as JSON (not UTF-8, nested "
                          "too deeply, or a number too long).", 422)
    name = _HTTP_NAMES.get(status, "InvalidInputError" if 400 <= status < 500 else "BackendError")
    headers = dict(exc.headers or {})
    if status == 404 and detail == "Not Found":
        detail = "No such path."
    if status == 405 and request is not None:
        allowed = _allowed_methods(request)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
            detail = f"{request.method} is not a method of {bounded(request.url.path, 100)}; use {headers['Allow']}."
    return error_json(name, str(detail), status, headers=headers or None)


def _allowed_methods(request: Request) -> list[str]:
    """Every method of every route whose path matches (Starlette's own ``Allow`` names only the first route's)."""
    from starlette.routing import Match, Route

    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                methods |= set(route.methods)
    return sorted(methods)


def install_error_handlers(app: Any) -> None:
    """Map memlab errors, FastAPI's validation errors, HTTP errors and anything unexpected to :class:`ErrorBody`."""

    @app.exception_handler(MemlabError)
    async def _memlab(request: Request, exc: MemlabError) -> JSONResponse:
        return _memlab_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_response(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _http_response(exc, request)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover - a bug
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_json("InternalError", "The server failed (see its log).", 500)


# ------------------------------------------------------------------ the body limit
def max_body_bytes_from_env() -> int:
    """``MEMLAB_MAX_BODY_BYTES`` (a positive int), else :data:`DEFAULT_MAX_BODY_BYTES`.

    Raises:
        InvalidInputError: the variable is set but not a positive integer.
    """
    raw = os.environ.get("MEMLAB_MAX_BODY_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BODY_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidInputError(f"MEMLAB_MAX_BODY_BYTES must be a positive integer (bytes). Got {raw[:40]!r}.")
    return value


def _too_large_body(limit: int) -> bytes:
    return json.dumps({"error": "PayloadTooLargeError",
                       "detail": f"The request body is larger than this server's limit of {limit} bytes "
                                 "(MEMLAB_MAX_BODY_BYTES)."}).encode()


#: After refusing a body, how much of it is still read (and thrown away) so that the client, which may still be
#: sending, reads the 413 instead of a connection reset; a larger or slower body is cut off.
DRAIN_MAX_BYTES = 64 * 1024 * 1024
DRAIN_MAX_SECONDS = 5.0


async def _drain(receive: Any) -> None:
    """Read and discard the rest of a refused request body (bounded in bytes and time); nothing is kept."""
    import anyio

    seen = 0
    with anyio.move_on_after(DRAIN_MAX_SECONDS):
        while seen <= DRAIN_MAX_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                return
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                return


class BodyLimitMiddleware:
    """Pure ASGI middleware: 413 for bodies over ``max_bytes``, before anything parses or authenticates them.

    A declared ``Content-Length`` over the limit is answered at once (the response is sent before the body is
    read); a body without one is counted as it arrives. Either way the rest of the body is then read and thrown
    away (at most :data:`DRAIN_MAX_BYTES`, :data:`DRAIN_MAX_SECONDS`) so that a client still sending it gets the
    413 rather than a reset connection; nothing of it is kept.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared, expects_continue = None, False
        for name, value in scope.get("headers") or ():
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = None
            elif name == b"expect" and value.lower() == b"100-continue":
                expects_continue = True
        if declared is not None and declared > self.max_bytes:
            body = _too_large_body(self.max_bytes)
            await send({"type": "http.response.start", "status": 413,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body, "more_body": True})
            if not expects_continue:  # a client waiting for "100 Continue" has not sent the body: nothing to read
                await _drain(receive)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        state = {"total": 0, "over": False, "complete": False}
        limit = self.max_bytes

        async def limited_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                state["total"] += len(message.get("body", b""))
                if not message.get("more_body", False):
                    state["complete"] = True
                if state["total"] > limit:
                    state["over"] = True
                    # an HTTPException is passed through by FastAPI's body reading and rendered by the handlers
                    raise HTTPException(413, f"The request body is larger than this server's limit of {limit} "
                                             "bytes (MEMLAB_MAX_BODY_BYTES).")
            return message

        async def send_after_drain(message: Any) -> None:
            if (state["over"] and not state["complete"] and message["type"] == "http.response.body"
                    and not message.get("more_body", False)):
                state["complete"] = True
                await _drain(receive)
            await send(message)

        await self.app(scope, limited_receive, send_after_drain)
