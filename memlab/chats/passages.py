"""Archived passages: what compaction takes out of the model's window stays findable.

When a chat is compacted, the turns folded into the summary leave ``assistant_history``. They are not lost
(``full_history`` keeps them), but a summary of 1,500 characters cannot name every fact of hundreds of turns. So
compaction also archives them as **passages**: for every folded turn ``p``, the text of turns
``max(p - PASSAGE_TURNS + 1, session start) .. p`` with the session's date in front ("[8 May 2023] ..."). A
passage never spans two sessions (turns more than ``SESSION_GAP`` apart). Passages are embedded (passage mode)
and indexed in SQLite FTS5, and :meth:`memlab.chats.ChatStore.search_history` finds them with hybrid retrieval
(dense + BM25, reciprocal rank fusion): this is the memory an assistant searches before asking the user again.

Why 3 turns with a date: on LoCoMo's dev conversations (the first two; nothing tuned on the others), evidence
recall@10 with hybrid retrieval was 0.663 for single dated turns, 0.793 for 2-turn, 0.838 for 3-turn passages
(0.858 for 4-turn windows, which put twice as many turns in front of the model for +0.02); the date in front
raised dense recall of single turns from 0.510 to 0.624 (questions ask "when"). Consecutive passages overlap, so
a result list would spend several places on one moment: :func:`drop_overlapping` moves a passage that shares
``MAX_SHARED_TURNS`` turns with a better one behind the rest (dev: 0.852 -> 0.863, multi-hop 0.474 -> 0.577; sharing
any turn: 0.855).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memlab.entities import format_day
from memlab.text import detect_lang

__all__ = [
    "MAX_SHARED_TURNS",
    "PASSAGE_TURNS",
    "SESSION_GAP",
    "PassageHit",
    "drop_overlapping",
    "passage_windows",
]

#: Turns per archived passage (the folded turn and the ones just before it in its session).
PASSAGE_TURNS = 3
#: A passage sharing this many turns with a better-ranked one is moved behind the others (it repeats it).
MAX_SHARED_TURNS = 2
#: Turns further apart than this belong to different sessions (a passage never joins them).
SESSION_GAP = timedelta(minutes=30)



@dataclass(frozen=True, slots=True)
class PassageHit:
    """One archived passage found by :meth:`memlab.chats.ChatStore.search_history`.

    Attributes:
        chat_id: the chat it belongs to (always one of the searching user's chats).
        start: first ``full_history`` position it covers.
        end: last position it covers (inclusive).
        text: the passage as indexed (date in front).
        at: when its last turn was appended.
        score: cosine between the query and the passage (the ranking itself may be hybrid).
    """

    chat_id: str
    start: int
    end: int
    text: str
    at: datetime
    score: float

    @property
    def positions(self) -> range:
        """The ``full_history`` positions the passage covers."""
        return range(self.start, self.end + 1)


def passage_windows(times: Sequence[datetime], start: int, stop: int) -> list[tuple[int, int]]:
    """``(first, last)`` positions (inclusive) of the passage archived for each position in ``[start, stop)``.

    ``times`` are the append times of every turn from position 0 (at least up to ``stop``).

    Example:
        >>> from datetime import datetime, timedelta
        >>> t0 = datetime(2023, 5, 8)
        >>> times = [t0] * 4 + [t0 + timedelta(days=1)] * 2
        >>> passage_windows(times, 2, 6)
        [(0, 2), (1, 3), (4, 4), (4, 5)]
    """
    out = []
    for p in range(start, stop):
        first = p
        while first > 0 and p - first + 1 < PASSAGE_TURNS and times[first] - times[first - 1] <= SESSION_GAP:
            first -= 1
        out.append((first, p))
    return out


def passage_text(texts: Sequence[str], when: datetime) -> str:
    """The indexed text of a passage: ``[<day>] `` + its turns, one per line (the day in the turns' language)."""
    body = "\n".join(t.strip() for t in texts if t.strip())
    return f"[{format_day(when, detect_lang(body))}] {body}"


def drop_overlapping(ranked: Sequence[int], spans: Sequence[frozenset[object]], *, min_shared: int = MAX_SHARED_TURNS) -> list[int]:
    """``ranked`` (indices into ``spans``, best first) with every item that shares ``min_shared`` or more
    elements with a better-kept item moved to the end (in their order): the top of the list says more.

    Example:
        >>> spans = [frozenset({1, 2, 3}), frozenset({2, 3, 4}), frozenset({7, 8, 9}), frozenset({3, 4, 5})]
        >>> drop_overlapping([0, 1, 2, 3], spans)
        [0, 2, 3, 1]
    """
    kept: list[int] = []
    later: list[int] = []
    for i in ranked:
        (later if any(len(spans[i] & spans[j]) >= min_shared for j in kept) else kept).append(i)
    return kept + later
