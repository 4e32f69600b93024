"""The display policy in notifications (issue 42): a U+202E or a zero-width character inside a memory cannot reorder
or hide the block's own text. The same hostile texts in it/en/zh; the string check is the bidi algorithm's
bookkeeping (every embedding, override and isolate closed on its line), the visual check is
tests/dashboard/test_bidi_browser.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memlab.app import open_memlab
from memlab.notify import (
    Notification,
    NotificationType,
    format_high_block,
    format_notification,
    format_resolution,
)
from memlab.records import Urgency
from memlab.testing import FakeEmbedder, ScriptedJudge
from memlab.text import MESSAGES, ZERO_WIDTH

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_text import HOSTILE, RLO, bidi_problems  # noqa: E402


def contradiction(first: str, second: str, *, id_: int = 1, spans: list[str] | None = None) -> Notification:
    payload = {"first": {"id": 1, "text": first}, "second": {"id": 2, "text": second}, "new_id": 2,
               "details": {"spans": spans} if spans else {}}
    return Notification(id=id_, user_id="u1", type=NotificationType.CONTRADICTION, urgency=Urgency.HIGH,
                        content="x", payload=payload, memory_ids=(1, 2), actionable=True, choice="C",
                        note=f"per lavoro {RLO}2020")


@pytest.mark.parametrize("lang", ["it", "en", "zh"])
def test_high_block_with_hostile_memories_is_balanced_and_keeps_the_system_text(lang: str) -> None:
    t = MESSAGES[lang]
    for hostile in HOSTILE[lang]:
        notes = [contradiction(hostile, "Abito a Milano", spans=[f"7{RLO}1", "8"]),
                 contradiction("Abito a Roma", hostile, id_=2),
                 Notification(id=3, user_id="u1", type=NotificationType.EVENT, urgency=Urgency.HIGH,
                              content=hostile)]
        block = format_high_block(notes, lang)
        assert bidi_problems(block) == [], block
        assert not any(ch in block for ch in ZERO_WIDTH)
        for fixed in (t["question"], t["C"], t["D"], t["contradiction_marker"], t["ref"].format(id=2)):
            assert fixed in block.splitlines(), fixed  # the system's own lines are intact, each on its line
        # the seed sentence: the text after the first quoted memory is the system's, outside any isolate
        sentence = block.splitlines()[0]
        tail = t["contradiction_said"].split("{old}")[1].split("{new}")[0]
        assert tail in sentence and bidi_problems(sentence.split(tail)[0]) == [], sentence
        resolution = format_resolution(notes[0], lang)
        assert bidi_problems(resolution) == [] and t["undo"] in resolution


def test_the_bug_this_guards_against_is_detected() -> None:
    """Without the policy the raw memory leaves an override open on the sentence's line (what Chromium showed as
    "4321"); the check used above sees it."""
    raw = MESSAGES["it"]["contradiction_said"].format(old=f"Il mio PIN è {RLO}1234", new="Abito a Milano")
    assert bidi_problems(raw) != []
    shown = format_notification(contradiction(f"Il mio PIN è {RLO}1234", "Abito a Milano"), "it").splitlines()[0]
    assert bidi_problems(shown) == [] and "\u20681234" not in shown and "\u2068Il mio PIN è 1234\u2069" in shown


def test_a_real_turn_shows_the_hostile_memory_isolated(tmp_path: Path) -> None:
    """End to end: two memories that contradict (a scripted judge), one holding U+202E and a zero-width space; the
    next turn's reply shows the HIGH block, balanced."""
    judge = ScriptedJudge(lambda a, b: 0.97 if ("Roma" in a + b and "Milano" in a + b) else 0.02)
    with open_memlab(tmp_path / "bidi.db", embedder=FakeEmbedder(), judge=judge, lang="it") as lab:
        lab.remember("u1", f"Abito a Roma {RLO}dal 2020\u200b")
        lab.turn("u1", "Abito a Milano")
        assert lab.notifications.pending("u1"), "the scripted contradiction must reach the bell"
        reply = lab.turn("u1", "ciao").response
    assert MESSAGES["it"]["question"] in reply or MESSAGES["it"]["important"] in reply
    assert RLO not in reply and "\u200b" not in reply and bidi_problems(reply) == []
    assert "Abito a Roma dal 2020" in reply
