"""A demo database built from a scripted Italian/English conversation (the dashboard's first start, notebooks).

Everything in it is produced by the real pipeline (extraction, store, detector, judge, notifications, chats):
nothing is inserted by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

from memlab.app import Memlab, open_memlab

__all__ = ["DEMO_SCRIPT", "build_demo", "ensure_demo_db"]

#: (user, message) turns replayed through the Assistant.
DEMO_SCRIPT: tuple[tuple[str, str], ...] = (
    ("u1", "Ciao! Chiamami Zhang San."),
    ("u1", "Abito a Roma e lavoro da Ferrari come ingegnere."),
    ("u1", "Sono nato il 12 luglio 1990."),
    ("u1", "Preferisco il tè al mattino."),
    ("u1", "Anzi, chiamami Li Si."),
    ("u1", "Il mio compleanno è il 15 agosto."),
    ("u1", "Che tempo fa a Roma?"),
    ("u2", "Hi! Call me Anna. I live in London."),
    ("u2", "I am 170 cm tall."),
)


def build_demo(path: str | os.PathLike[str], *, script: tuple[tuple[str, str], ...] = DEMO_SCRIPT) -> Memlab:
    """Replay ``script`` into a fresh database at ``path`` and return its services (open)."""
    lab = open_memlab(path)
    for user, message in script:
        lab.turn(user, message)
    lab.store.flush()
    return lab


def ensure_demo_db(path: str | os.PathLike[str]) -> None:
    """Build the demo database at ``path`` unless it exists. ``MEMLAB_DASHBOARD_EMPTY=1`` creates an empty one."""
    if Path(path).exists():
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if os.environ.get("MEMLAB_DASHBOARD_EMPTY") == "1":
        open_memlab(path, checks=False).close()
        return
    build_demo(path).close()
