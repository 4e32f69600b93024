"""API keys of the HTTP service: one key maps to one user id; only a hash is stored.

Keys are random (``mlk_`` + 32 bytes, URL-safe) so a plain SHA-256 of the key is a safe lookup value (no password
stretching is needed for high-entropy secrets); the key itself is printed once, by ``memlab users add NAME``.

Example:
    >>> from memlab.store.db import Database
    >>> keys = ApiKeys(Database(":memory:"))
    >>> key = keys.add("alice")
    >>> keys.user_for(key)
    'alice'
    >>> keys.user_for("mlk_wrong") is None
    True
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from memlab._validation import check_user_id
from memlab.errors import InvalidInputError, NotFoundError
from memlab.store.db import Database

__all__ = ["ApiKey", "ApiKeys", "hash_key"]

_PREFIX = "mlk_"
_SCHEMA = [
    """
    CREATE TABLE api_keys (
        key_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        label TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );
    CREATE INDEX idx_api_keys_user ON api_keys(user_id)
    """
]


def hash_key(key: str) -> str:
    """SHA-256 hex digest of an API key (what the database stores)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One stored key (never the secret itself).

    Attributes:
        user_id: the user the key acts for.
        label: a free label given at creation.
        fingerprint: the first 12 hex digits of the hash, to tell keys apart in listings.
        created_at: ISO timestamp (UTC).
        revoked_at: ISO timestamp, or ``None`` while the key is valid.
    """

    user_id: str
    label: str | None
    fingerprint: str
    created_at: str
    revoked_at: str | None


class ApiKeys:
    """The ``api_keys`` table of a memlab database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.db.migrate("api_keys", _SCHEMA)

    def add(self, user_id: str, *, label: str | None = None) -> str:
        """Create a key for ``user_id`` and return it (it is not stored; show it once).

        Raises:
            InvalidInputError: bad user id or label.
        """
        user_id = check_user_id(user_id, owner="ApiKeys.add")
        label = _check_label(label)
        key = _PREFIX + secrets.token_urlsafe(32)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self.db.transaction():
            self.db.execute("INSERT INTO api_keys(key_hash, user_id, label, created_at) VALUES (?,?,?,?)",
                            (hash_key(key), user_id, label, now))
        return key

    def user_for(self, key: str | None) -> str | None:
        """The user of a valid (not revoked) key, else ``None``."""
        if not key or not key.startswith(_PREFIX) or len(key) > 256:
            return None
        digest = hash_key(key)
        row = self.db.query_one("SELECT key_hash, user_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL",
                                (digest,))
        if row is None or not hmac.compare_digest(str(row["key_hash"]), digest):
            return None
        return str(row["user_id"])

    def list(self, user_id: str | None = None) -> list[ApiKey]:
        """Stored keys (all users, or one), oldest first."""
        sql, params = "SELECT * FROM api_keys", ()
        if user_id is not None:
            sql, params = sql + " WHERE user_id = ?", (check_user_id(user_id, owner="ApiKeys.list"),)
        rows = self.db.query(sql + " ORDER BY created_at, key_hash", params)
        return [ApiKey(str(r["user_id"]), r["label"], str(r["key_hash"])[:12], str(r["created_at"]), r["revoked_at"])
                for r in rows]

    def revoke(self, user_id: str) -> int:
        """Revoke every key of ``user_id``; returns how many were valid.

        Raises:
            NotFoundError: the user has no valid key.
        """
        user_id = check_user_id(user_id, owner="ApiKeys.revoke")
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self.db.transaction():
            n = self.db.execute("UPDATE api_keys SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
                                (now, user_id)).rowcount
        if not n:
            raise NotFoundError(f"User {user_id!r} has no valid API key.")
        return int(n)


def _check_label(label: str | None) -> str | None:
    if label is not None and (not label.strip() or len(label) > 200):
        raise InvalidInputError("The 'label' parameter must be 1-200 characters.")
    return label
