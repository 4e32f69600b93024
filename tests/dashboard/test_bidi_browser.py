"""In Chromium: the HIGH block with a U+202E inside a memory renders the system's text after it in order (issue 42:
"1234" showed as "4321").

The block is memlab's own string (:func:`memlab.notify.format_high_block`), put in a page the way the dashboard
shows a reply (HTML-escaped lines joined by ``<br>``, no paragraph break between them). The check is visual: the
x position of each character of the system's text after the memory, read from the laid-out page, must grow left to
right. The same page with the raw, un-neutralised string is the control: there the positions run backwards, so the
check sees the bug it guards against. A screenshot of both is kept (``DASHBOARD_SCREENSHOT_DIR`` copies it).
"""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from memlab.notify import Notification, NotificationType, format_high_block
from memlab.records import Urgency
from memlab.text import MESSAGES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="LOUD SKIP: Debian chromium is not installed (apt-get install chromium)"),
]

RLO = "\u202e"
HOSTILE = {"it": f"Il mio PIN è {RLO}5678", "en": f"My PIN is {RLO}5678", "zh": f"我的密码是{RLO}5678"}

# the positions of the characters of ``needle`` (spaces skipped) in the first text node under #block holding it
POSITIONS_JS = """([id, needle]) => {
  const walker = document.createTreeWalker(document.getElementById(id), NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const at = node.data.indexOf(needle);
    if (at < 0) continue;
    const xs = [];
    for (let i = 0; i < needle.length; i++) {
      if (needle[i] === ' ') continue;
      const r = document.createRange();
      r.setStart(node, at + i);
      r.setEnd(node, at + i + 1);
      xs.push(r.getBoundingClientRect().left);
    }
    return xs;
  }
  return null;
}"""


def block(lang: str, *, raw: bool) -> str:
    """The HIGH block of two contradictions (the ref lines carry the id 1234), the first quoting the hostile memory;
    ``raw`` puts the memory back un-neutralised, as it was before the display policy."""
    hostile = HOSTILE[lang]
    notes = [Notification(id=i, user_id="u1", type=NotificationType.CONTRADICTION, urgency=Urgency.HIGH, content="x",
                          payload={"first": {"id": 1, "text": first}, "second": {"id": 2, "text": "Abito a Milano"}},
                          memory_ids=(1, 2), actionable=True)
             for i, first in ((1234, hostile), (1235, "Abito a Roma"))]
    text = format_high_block(notes, lang)
    if raw:
        text = text.replace(f"\u2068{hostile.replace(RLO, '')}\u2069", hostile)
        assert RLO in text
    return text


def page_html(texts: dict[str, str]) -> str:
    divs = "".join(f'<div id="{key}" style="white-space: nowrap; margin: 12px 0">'
                   f'{"<br>".join(html.escape(line) for line in text.splitlines())}</div>'
                   for key, text in texts.items())
    return f'<html><body style="font: 15px sans-serif; width: 2400px">{divs}</body></html>'


@pytest.fixture(scope="module")
def chromium_page() -> Any:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 2400, "height": 1400})
        page.set_default_timeout(30_000)
        yield page
        browser.close()


def in_order(xs: list[float] | None) -> bool:
    return xs is not None and len(xs) > 1 and all(a < b for a, b in zip(xs, xs[1:], strict=False))


def backwards(xs: list[float] | None) -> bool:
    return xs is not None and len(xs) > 1 and all(a > b for a, b in zip(xs, xs[1:], strict=False))


@pytest.mark.parametrize("lang", ["it", "en", "zh"])
def test_high_block_system_text_after_a_rlo_memory_renders_in_order(chromium_page: Any, tmp_path: Path,
                                                                   lang: str) -> None:
    t = MESSAGES[lang]
    after = t["contradiction_said"].split("{old}")[1].split("{new}")[0].strip()  # e.g. "», ma ora mi dici «"
    ref = t["ref"].format(id=1234)
    chromium_page.set_content(page_html({"fixed": block(lang, raw=False), "raw": block(lang, raw=True)}))
    fixed_after = chromium_page.evaluate(POSITIONS_JS, ["fixed", after])
    fixed_ref = chromium_page.evaluate(POSITIONS_JS, ["fixed", ref])
    fixed_pin = chromium_page.evaluate(POSITIONS_JS, ["fixed", "5678"])
    raw_after = chromium_page.evaluate(POSITIONS_JS, ["raw", after])
    shot = tmp_path / f"bidi_high_block_{lang}.png"
    chromium_page.screenshot(path=str(shot), full_page=False, clip={"x": 0, "y": 0, "width": 1400, "height": 900})
    if os.environ.get("DASHBOARD_SCREENSHOT_DIR"):
        Path(os.environ["DASHBOARD_SCREENSHOT_DIR"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(os.environ["DASHBOARD_SCREENSHOT_DIR"]) / shot.name)
    assert shot.stat().st_size > 5_000
    # the policy: the memory's override is gone, the system's sentence, the ref line's digits and the memory itself
    # read left to right
    assert in_order(fixed_after), (after, fixed_after)
    assert in_order(fixed_ref), (ref, fixed_ref)
    assert in_order(fixed_pin), fixed_pin
    # the control: the raw memory reverses the system's text after it, and the check sees it
    assert backwards(raw_after), (after, raw_after)
