"""Fixed-size chunks with overlap, cut at the best boundary near the size limit.

A chunk ends at the last paragraph break inside its window if there is one in the window's second half, else at
the last sentence end there, else at the last space, else (one unbroken token longer than the window) exactly at
the limit. The next chunk starts ``overlap`` characters before the previous end, moved forward to a word start,
so a sentence cut by a boundary is found whole in one of the two chunks.

Example:
    >>> chunks = chunk_text("Uno due tre. Quattro cinque sei. Sette otto nove.", size=20, overlap=8)
    >>> [c.text for c in chunks]
    ['Uno due tre.', 'tre. Quattro cinque', 'cinque sei.', 'sei. Sette otto', 'otto nove.']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlab.errors import InvalidInputError

__all__ = ["Chunk", "chunk_text"]

_SENTENCE_END = re.compile(r"[.!?…][\"'»”)\]]*\s|[。！？][\"'»”」』)\]]*")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a text.

    Attributes:
        text: the chunk (stripped).
        start: offset of its first character in the source text.
        end: offset just past its last character.
    """

    text: str
    start: int
    end: int


def _cut(text: str, start: int, limit: int) -> int:
    """Where the chunk starting at ``start`` ends (exclusive), at most ``limit``."""
    if limit >= len(text):
        return len(text)
    window = text[start:limit]
    half = len(window) // 2
    para = window.rfind("\n\n")
    if para >= half:
        return start + para
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    if ends and ends[-1] >= half:
        return start + ends[-1]
    space = max(window.rfind(" "), window.rfind("\n"))
    if space > 0:
        return start + space
    return limit


def chunk_text(text: str, *, size: int = 800, overlap: int = 120) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``size`` characters overlapping by about ``overlap``.

    Args:
        text: the text (empty or blank gives no chunks).
        size: longest chunk, in characters (>= 20).
        overlap: characters repeated from the end of one chunk at the start of the next (``0 <= overlap < size/2``).

    Returns:
        The chunks, in order; consecutive chunks overlap, together they cover the whole text.

    Raises:
        InvalidInputError: bad ``size`` or ``overlap``.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"The 'text' parameter of chunk_text must be a str. Got {type(text).__name__}.")
    if isinstance(size, bool) or not isinstance(size, int) or size < 20:
        raise InvalidInputError(f"The 'size' parameter of chunk_text must be an int >= 20. Got {size!r} instead.")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size // 2:
        raise InvalidInputError(
            f"The 'overlap' parameter of chunk_text must be an int in [0, size/2). Got {overlap!r} instead.")
    chunks: list[Chunk] = []
    n = len(text)
    start = 0
    while start < n:
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            break
        end = _cut(text, start, min(start + size, n))
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            chunks.append(Chunk(stripped, start + lead, start + lead + len(stripped)))
        if end >= n:
            break
        if not overlap:
            start = end
            continue
        nxt = max(end - overlap, start + 1)
        # start the overlap at a word start; text without spaces (Chinese) keeps the raw offset
        word = nxt
        while word < end and not text[word - 1].isspace():
            word += 1
        start = word if word < end else nxt
    return chunks
