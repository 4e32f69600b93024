"""Input checks shared by every public boundary (sklearn-style messages)."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlab.errors import DimensionMismatchError, InvalidInputError, NotFoundError
from memlab.text import INVISIBLE_IN_IDS

# C0/C1 control characters except tab, newline, carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Lone UTF-16 surrogates: a Python str can hold them (e.g. from ``surrogateescape`` or a broken JSON ``\\ud800``)
# but they cannot be encoded as UTF-8, so SQLite, JSON and HTTP would fail on them half-way through a write.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Zero-width and bidi-control characters: refused in ids (memlab.text.INVISIBLE_IN_IDS).
_INVISIBLE = re.compile(f"[{INVISIBLE_IN_IDS}]")


def find_surrogate(text: str) -> str | None:
    """The first lone UTF-16 surrogate in ``text`` (a str that cannot be encoded as UTF-8), else ``None``."""
    found = _SURROGATE.search(text)
    return None if found is None else found.group()


def strip_control(text: str) -> str:
    """Remove control characters (keeps tab/newline), replace lone surrogates with U+FFFD, normalise to NFC."""
    return unicodedata.normalize("NFC", _SURROGATE.sub("\ufffd", _CONTROL.sub("", text)))


def check_text(text: Any, *, name: str = "text", owner: str = "memlab", max_chars: int | None = None) -> str:
    """Validate a piece of user text and return it stripped, NFC-normalised, with line endings as LF (a CRLF or a
    lone CR, from Windows or old Mac clients, would otherwise be stored raw and compare unequal to the same text).

    Raises:
        InvalidInputError: not a str, empty/whitespace, contains control characters or lone surrogates
            (not valid Unicode text), or too long.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be a str. Got {type(text).__name__} instead.")
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} is not valid Unicode text: lone surrogate "
            f"U+{ord(surrogate.group()):04X} at position {surrogate.start()}. Clean it first "
            f"(memlab._validation.strip_control replaces it with U+FFFD)."
        )
    bad = _CONTROL.search(text)
    if bad is not None:
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} contains a control character "
            f"(U+{ord(bad.group()):04X} at position {bad.start()}). Clean it first (memlab._validation.strip_control)."
        )
    stripped = text.replace("\r\n", "\n").replace("\r", "\n").strip()  # one line ending: CRLF and CR -> LF
    if not stripped:
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be a non-empty string. Got {text!r} instead.")
    if max_chars is not None and len(stripped) > max_chars:
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be at most {max_chars} characters. Got {len(stripped)} instead."
        )
    return unicodedata.normalize("NFC", stripped)


def check_user_id(user_id: Any, *, owner: str = "memlab") -> str:
    """Validate a user id: a non-empty string without control characters, at most 256 chars.

    An id is an exact key, never cleaned: leading/trailing whitespace and tabs or newlines anywhere are refused
    (stripping them silently made ``" alice"`` or ``"alice\t"`` act on alice's data), and so are the invisible
    zero-width and bidi-control characters of :data:`memlab.text.INVISIBLE_IN_IDS` (``"ali\u200bce"`` or an id
    with a U+202E looks like another user's id).

    Raises:
        InvalidInputError: not such a string.
    """
    if isinstance(user_id, str):
        hidden = _INVISIBLE.search(user_id)
        if hidden is not None:
            raise InvalidInputError(
                f"The 'user_id' parameter of {owner} contains an invisible character (U+{ord(hidden.group()):04X}, "
                f"{unicodedata.name(hidden.group(), 'format character')}, at position {hidden.start()}): an id "
                f"must look like what it is. Got '{user_id[:80].encode('ascii', 'backslashreplace').decode()}' instead."
            )
        ws = re.search(r"[\t\n\r]", user_id)
        if ws is not None:
            raise InvalidInputError(
                f"The 'user_id' parameter of {owner} contains a control character "
                f"(U+{ord(ws.group()):04X} at position {ws.start()}). Got {user_id!r} instead."
            )
        if user_id.strip() and user_id != user_id.strip():
            raise InvalidInputError(
                f"The 'user_id' parameter of {owner} must not start or end with whitespace. Got {user_id!r} instead."
            )
    return check_text(user_id, name="user_id", owner=owner, max_chars=256)


#: Largest row id SQLite can store (a signed 64-bit integer); row ids start at 1.
MAX_ROW_ID = 2**63 - 1


def is_row_id(value: Any) -> bool:
    """Whether ``value`` could be a SQLite row id: an int (not a bool) in ``[1, 2**63 - 1]``."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and 1 <= int(value) <= MAX_ROW_ID


def check_id(value: Any, *, kind: str = "memory") -> int:
    """Validate a row id (memory, notification ...) before SQLite sees it.

    An id that no row can have (not an int, < 1, or >= 2**63, which SQLite cannot even bind) is simply unknown.

    Raises:
        NotFoundError: ``value`` is not an int in ``[1, 2**63 - 1]``.
    """
    if not is_row_id(value):
        raise NotFoundError(f"No {kind} with id {value!r} (ids are ints in [1, 2**63 - 1]).")
    return int(value)


def check_enum(cls: Any, value: Any, *, name: str, owner: str) -> Any:
    """``cls(value)`` for an enum ``cls``, or an :class:`InvalidInputError` listing the valid values."""
    try:
        return cls(value)
    except ValueError:
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} must be one of {[x.value for x in cls]}. Got {value!r} instead."
        ) from None


def check_unit_interval(value: Any, *, name: str, owner: str) -> float:
    """Validate a float in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0.0 <= float(value) <= 1.0):
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be a float in [0, 1]. Got {value!r} instead.")
    return float(value)


def check_positive_int(value: Any, *, name: str, owner: str) -> int:
    """Validate an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < 1:
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be an int in [1, inf). Got {value!r} instead.")
    return int(value)


def check_positive_float(value: Any, *, name: str, owner: str) -> float:
    """Validate a finite float > 0 (a duration, a timeout): NaN, inf, 0 and negatives are refused."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not math.isfinite(float(value))
        or float(value) <= 0
    ):
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be a finite float > 0. Got {value!r} instead.")
    return float(value)


def check_http_url(value: Any, *, name: str, owner: str) -> str | None:
    """Validate an optional http(s) URL (``None`` passes through)."""
    if value is not None and (not isinstance(value, str) or not value.startswith(("http://", "https://"))):
        raise InvalidInputError(f"The {name!r} parameter of {owner} must be an http(s) URL. Got {value!r} instead.")
    return value


def as_vectors(x: Any, dim: int, *, name: str = "vectors", owner: str = "memlab") -> NDArray[np.float32]:
    """Coerce to a C-contiguous float32 ``(n, dim)`` array, checking shape before faiss sees it."""
    with np.errstate(over="ignore"):  # a value beyond float32 becomes inf and is refused below
        arr = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise DimensionMismatchError(
            f"The {name!r} parameter of {owner} must have shape (n, {dim}). Got {tuple(arr.shape)} instead."
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"The {name!r} parameter of {owner} contains NaN or infinite values.")
    return arr


#: How far from 1 the norm of a vector given as a *stored* embedding may be (the store keeps unit vectors:
#: its scores are cosines, compared with calibrated thresholds).
UNIT_NORM_TOLERANCE = 1e-2


def check_unit_vectors(
    vecs: NDArray[np.float32], *, normalize: bool, name: str = "vectors", owner: str = "memlab"
) -> NDArray[np.float32]:
    """Return the rows of ``vecs`` (already through :func:`as_vectors`) scaled to unit norm.

    Args:
        normalize: ``True`` (search queries: cosine ranking does not depend on the scale) accepts any finite
            non-zero vector and scales it; ``False`` (vectors to store) accepts only vectors already of unit norm
            within :data:`UNIT_NORM_TOLERANCE` (a vector far from it is not an embedding of this store) and
            removes the rounding.

    Raises:
        InvalidInputError: a zero (or denormal) vector, or, with ``normalize=False``, a norm far from 1.
    """
    norms = np.linalg.norm(vecs.astype(np.float64), axis=1)
    zero = np.flatnonzero(~(norms > 1e-12))
    if len(zero):
        raise InvalidInputError(
            f"The {name!r} parameter of {owner} has a zero vector (row {int(zero[0])}): it has no direction."
        )
    if not normalize:
        far = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
        if len(far):
            raise InvalidInputError(
                f"The {name!r} parameter of {owner} must hold unit-norm vectors (as the embedder makes them). "
                f"Row {int(far[0])} has norm {norms[far[0]]:.6g}; normalise it first."
            )
    return np.ascontiguousarray((vecs / norms[:, None]).astype(np.float32))
