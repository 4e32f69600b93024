"""The dashboard follows memlab's display policy (memlab.text.display_text): every user text that goes through
``safe()`` (memories, notifications, chat turns, ids) and the memory table's text column come out without
zero-width characters and with their bidi controls balanced and isolated per line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RLO, FSI, PDI = "\u202e", "\u2068", "\u2069"


@pytest.mark.parametrize("text", [f"Il mio PIN è {RLO}1234", f"My code {RLO}evil.exe\u200b", f"我的密码是{RLO}1234",
                                  f"riga uno {RLO}\nriga due\u2060 {RLO}fine"])
def test_safe_neutralises_bidi_controls_and_zero_width(text: str) -> None:
    sys.path.insert(0, str(ROOT / "dashboard"))
    sys.path.insert(0, str(ROOT / "tests"))
    from common import safe
    from test_text import bidi_problems

    shown = safe(text)
    lines = shown.split("  \n")  # markdown hard breaks: one rendered line per input line
    assert len(lines) == len(text.splitlines())
    assert RLO not in shown and "\u200b" not in shown and "\u2060" not in shown
    assert all(line.startswith(FSI) and line.endswith(PDI) for line in lines)  # each line isolated
    assert bidi_problems(shown.replace("  \n", "\n") + " testo del sistema") == []
    assert safe("Abito a Roma") == "Abito a Roma"  # plain text is untouched
