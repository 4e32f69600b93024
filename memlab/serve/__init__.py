"""``memlab serve``: chats, memory, notifications and turns over HTTP (FastAPI on uvicorn; needs ``memlab[serve]``).

- :func:`create_app` builds the app (``/api/chats``, ``/api/memory``, ``/api/notifications``, ``/api/turn``,
  ``/health``, OpenAPI docs at ``/docs``).
- :class:`ApiKeys` holds the bearer keys (``memlab users add NAME``), hashed, one user per key.
- :mod:`memlab.serve.errors`: the one error body of every route (``{"error": <memlab error class>, "detail":
  ...}``), the statuses they declare and the request body limit (``MEMLAB_MAX_BODY_BYTES``, 413 before parsing);
  the contract is described in ``docs/http-api.md``.
"""

from __future__ import annotations

from memlab.serve.app import create_app
from memlab.serve.auth import ApiKey, ApiKeys

__all__ = ["ApiKey", "ApiKeys", "create_app"]
