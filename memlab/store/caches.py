"""In-memory caches of one user's memories that :class:`~memlab.store.MemoryStore` keeps up to date itself.

* :class:`ActiveTexts`: the texts of a user's active memories, for :meth:`MemoryStore.find_containing`'s substring
  lookups (the integrity checker's attribute pull runs one per attribute group of every checked memory): one
  regular expression over one string instead of an SQL ``LIKE`` scan of the user's rows.

Both the store's id arrays and these caches are updated in place by the store's own writes (``add_many``,
``deactivate``, ``reactivate``) and dropped when another connection commits (``PRAGMA data_version``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["ActiveTexts", "ascii_lower", "in_sorted", "like_free", "sorted_minus", "sorted_union"]

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# rows are joined with a character no memory text can hold (control characters are refused at add), so a match
# never spans two rows
_SEP = "\x00"
# appended/removed rows are kept aside until this many, then the joined string is rebuilt once
_REBUILD_AT = 512


def ascii_lower(text: str) -> str:
    """``text`` with A-Z lower-cased and every other character unchanged: SQLite's ``lower()`` (without ICU).

    Example:
        >>> ascii_lower("Città ÀB 东京")
        'città Àb 东京'
    """
    return text.translate(_ASCII_LOWER)


def like_free(term: str) -> bool:
    """True when ``term`` holds no SQL ``LIKE`` wildcard (``%``, ``_``), so ``LIKE '%term%'`` is a plain
    substring test."""
    return "%" not in term and "_" not in term


class ActiveTexts:
    """The ASCII-lower-cased texts of one user's active memories, searchable for substrings.

    ``containing(terms)`` answers exactly what SQLite answers for ``lower(text) LIKE '%' || t || '%'`` (SQLite's
    ``lower()`` and ``LIKE`` fold ASCII letters only), for terms without ``LIKE`` wildcards.

    Example:
        >>> t = ActiveTexts([(1, "Sono nato a Torino"), (2, "I was BORN in May"), (3, "Mi piace il tè")])
        >>> t.containing(["nato", "born"], exclude_id=None, limit=10)
        [2, 1]
        >>> t.remove([2]); t.add([(4, "Nata a Roma")])
        >>> t.containing(["nat"], exclude_id=1, limit=10)
        [4]
    """

    def __init__(self, rows: Iterable[tuple[int, str]]) -> None:
        pairs = sorted((int(i), ascii_lower(t)) for i, t in rows)
        self._build([i for i, _ in pairs], [t for _, t in pairs])

    def _build(self, ids: list[int], texts: list[str]) -> None:
        self._ids = np.asarray(ids, dtype=np.int64)
        self._blob = _SEP.join(texts)
        lengths = np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=len(texts))
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(texts) else lengths
        self._tail: dict[int, str] = {}
        self._dead: set[int] = set()

    def __len__(self) -> int:
        return len(self._ids) - len(self._dead) + len(self._tail)

    def _texts(self) -> tuple[list[int], list[str]]:
        ends = [*self._starts[1:].tolist(), len(self._blob) + 1]
        rows = {int(i): self._blob[s : e - 1] for i, s, e in zip(self._ids.tolist(), self._starts.tolist(), ends,
                                                                 strict=True) if int(i) not in self._dead}
        rows.update(self._tail)
        order = sorted(rows)
        return order, [rows[i] for i in order]

    def _maybe_rebuild(self) -> None:
        if len(self._tail) + len(self._dead) > _REBUILD_AT:
            self._build(*self._texts())

    def add(self, rows: Iterable[tuple[int, str]]) -> None:
        """Add (or replace) active memories ``(id, text)``."""
        for i, t in rows:
            i = int(i)
            if i in self._tail or (self._contains_base(i) and i not in self._dead):
                self._dead.add(i)  # replaced: the base copy is dropped, the new one lives in the tail
            self._tail[i] = ascii_lower(t)
        self._maybe_rebuild()

    def remove(self, ids: Iterable[int]) -> None:
        """Forget memories that are no longer active (unknown ids are ignored)."""
        for i in ids:
            i = int(i)
            self._tail.pop(i, None)
            if self._contains_base(i):
                self._dead.add(i)
        self._maybe_rebuild()

    def _contains_base(self, i: int) -> bool:
        pos = int(np.searchsorted(self._ids, i))
        return pos < len(self._ids) and int(self._ids[pos]) == i

    def containing(self, terms: Sequence[str], *, exclude_id: int | None, limit: int) -> list[int]:
        """Ids of the memories whose text contains any of ``terms`` (ASCII-case-insensitive), newest first, at most
        ``limit``, without ``exclude_id``."""
        needles = [ascii_lower(t) for t in terms if t]
        if not needles or limit <= 0:
            return []
        rx = re.compile("|".join(re.escape(n) for n in sorted(set(needles), key=len, reverse=True)))
        skip = set(self._dead)
        if exclude_id is not None:
            skip.add(int(exclude_id))
        hits = {i for i, t in self._tail.items() if i not in skip and rx.search(t)}
        # the joined rows are scanned newest first, in growing slices, until ``limit`` hits are at least as new as
        # every row not yet scanned (a common cue such as "nat" stops after a few hundred rows)
        end_row, size = len(self._ids), 256
        while end_row > 0:
            start_row = max(0, end_row - size)
            lo = int(self._starts[start_row])
            hi = int(self._starts[end_row]) - 1 if end_row < len(self._ids) else len(self._blob)
            pos = [m.start() for m in rx.finditer(self._blob, lo, hi)]
            if pos:
                rows = np.unique(np.searchsorted(self._starts, np.asarray(pos, dtype=np.int64), side="right") - 1)
                hits.update(i for i in self._ids[rows].tolist() if i not in skip)
            end_row, size = start_row, size * 4
            oldest_scanned = int(self._ids[start_row])
            if sum(1 for i in hits if i >= oldest_scanned) >= limit:
                break
        return sorted(hits, reverse=True)[:limit]

def in_sorted(arr: NDArray[np.int64], values: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which of ``values`` are in ``arr`` (sorted, unique), by binary search: no sort of ``arr``.

    Example:
        >>> in_sorted(np.array([2, 5, 9]), np.array([9, 1, 5, 10])).tolist()
        [True, False, True, False]
    """
    values = np.asarray(values, dtype=np.int64)
    if len(arr) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(arr, values), len(arr) - 1)
    return arr[pos] == values


def sorted_union(arr: NDArray[np.int64], new: Sequence[int]) -> NDArray[np.int64]:
    """``arr`` (sorted, unique) with ``new`` ids inserted, sorted and unique, as a new read-only array."""
    add = np.unique(np.asarray(new, dtype=np.int64))  # a few ids: sorting them is cheap, sorting ``arr`` is not
    add = add[~in_sorted(arr, add)]
    out = np.insert(arr, np.searchsorted(arr, add), add) if len(add) else arr.copy()
    out.flags.writeable = False
    return out


def sorted_minus(arr: NDArray[np.int64], gone: Sequence[int]) -> NDArray[np.int64]:
    """``arr`` (sorted, unique) without the ``gone`` ids, as a new read-only array."""
    g = np.asarray(gone, dtype=np.int64)
    out = np.delete(arr, np.searchsorted(arr, g[in_sorted(arr, g)]))
    out.flags.writeable = False
    return out
