"""Screenshots of the dashboard with the real local model, for the README and docs/guides/dashboard.md.

Run from the repository root::

    .venv/bin/python docs/dashboard_screenshots.py            # writes 3 PNG files in docs/img

It starts ``streamlit run dashboard/app.py`` on a free loopback port over a fresh, empty database in a temporary
folder, with ``MEMLAB_LLM_BACKEND=auto`` (the packaged SmolLM2 through llama.cpp, memlab[llm-local]), and drives
Debian's Chromium with Playwright (the same browser as ``tests/dashboard/test_browser.py``):

1. the Chat page: one question, answered by the model -> ``dashboard_chat.png``;
2. two Italian messages that contradict each other (a HIGH notification), then the bell -> Notifiche: the
   contradiction's card -> ``notification_block.png``;
3. back on the Chat page, one more message: the assistant's message with the HIGH block above the model's reply
   (``[⚠️ IMPORTANTE]`` sentence, then the seed's ``[⚠️ CONTRADDIZIONE RILEVATA]`` block) -> ``chat_high_block.png``.

Decoding is greedy: two runs here gave the same reply; another CPU may give another one, so the images are real but
not byte-stable. Needs chromium (``apt-get install chromium``) and memlab[llm-local]; about a minute on 2 idle cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from memlab.testing import free_port

ROOT = Path(__file__).resolve().parents[1]
#: The question of the Chat page shot (in English: SmolLM2-135M answers English sensibly, Italian hardly).
QUESTION = "What are three things to see in Rome?"
#: Then two messages that contradict each other: a HIGH notification, the card reached from the bell.
CONTRADICTION = ("Sono nata il 12 luglio 1990.", "Il mio compleanno è il 15 agosto.")
#: The next message: its reply opens with the HIGH block (the seed's ``[⚠️ CONTRADDIZIONE RILEVATA]`` block).
NEXT = "Che ore sono?"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]


def start_dashboard(tmp: Path) -> tuple[subprocess.Popen, str]:
    """``streamlit run dashboard/app.py`` over an empty database in ``tmp``, with the local model; (process, url)."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "MEMLAB_LLM_BACKEND": "auto",
           "MEMLAB_DASHBOARD_DATA_DIR": str(tmp), "MEMLAB_DASHBOARD_EMPTY": "1"}  # an empty demo.db in tmp
    env.pop("MEMLAB_DASHBOARD_DB", None)
    with open(tmp / "server.log", "w") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"), "--server.headless",
             "true", "--server.address", "127.0.0.1", "--server.port", str(port), "--global.developmentMode", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("streamlit did not start:\n" + (tmp / "server.log").read_text())


def settle(page) -> None:  # noqa: ANN001 - a Playwright page
    """Wait until Streamlit has finished the current run (no running indicator)."""
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget] button')", timeout=300_000)
    page.wait_for_timeout(300)


def send(page, text: str) -> str:  # noqa: ANN001 - a Playwright page
    """Type ``text`` in the chat input, wait for the assistant's reply and return its text."""
    from playwright.sync_api import expect

    before = page.get_by_test_id("stChatMessage").count()
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(text)
    box.press("Enter")
    expect(page.get_by_test_id("stChatMessage")).to_have_count(before + 2, timeout=300_000)
    settle(page)
    return page.get_by_test_id("stChatMessage").nth(before + 1).inner_text()


def shoot(page, bottom, path: Path, *, height: int = 2000) -> None:  # noqa: ANN001 - Playwright objects
    """Screenshot the main area from the top of the page (bell included) down to ``bottom``'s bottom, in a tall
    viewport (Streamlit scrolls inside the page, so a full-page shot would not help)."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": height})
    try:
        page.wait_for_timeout(800)
        page.get_by_test_id("stMain").evaluate("el => el.scrollTo(0, 0)")
        page.wait_for_timeout(400)
        main = page.get_by_test_id("stMain").bounding_box()
        box = bottom.bounding_box()
        page.screenshot(path=str(path), clip={"x": main["x"], "y": 0, "width": main["width"],
                                              "height": min(box["y"] + box["height"] + 16, height)})
    finally:
        page.set_viewport_size(size)


def shoot_chat(page, path: Path) -> None:  # noqa: ANN001 - a Playwright page
    """Screenshot the whole Chat page (sidebar, conversation, chat input) in a viewport just tall enough for the
    conversation (the Chat page scrolls inside ``stAppScrollToBottomContainer``, its input is pinned at the bottom)."""
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": size["width"], "height": 4000})
        page.wait_for_timeout(800)
        content = page.get_by_test_id("stMainBlockContainer").bounding_box()
        bottom = page.get_by_test_id("stBottom").bounding_box()
        page.set_viewport_size({"width": size["width"],
                                "height": int(min(content["y"] + content["height"] + bottom["height"] + 8, 4000))})
        page.wait_for_timeout(800)
        page.screenshot(path=str(path))
    finally:
        page.set_viewport_size(size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder of the PNG files (default docs/img)")
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    from playwright.sync_api import expect, sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memlab-shots-") as t:
        tmp = Path(t)
        proc, url = start_dashboard(tmp)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 1000})
                page.set_default_timeout(300_000)
                expect.set_options(timeout=300_000)
                page.goto(url)
                expect(page.get_by_test_id("stChatInputTextArea")).to_be_visible()
                settle(page)
                reply = send(page, QUESTION)
                print(f"user: {QUESTION}\nassistant: {reply}\n", flush=True)
                if not reply.strip() or "nessun modello configurato" in reply:
                    raise SystemExit("no model reply (is memlab[llm-local] installed?)")
                shoot_chat(page, out / "dashboard_chat.png")
                print("wrote", out / "dashboard_chat.png", flush=True)

                for msg in CONTRADICTION:
                    print(f"user: {msg}\nassistant: {send(page, msg)}\n", flush=True)
                expect(page.get_by_role("heading", name="Quale informazione è corretta?")).to_be_visible()

                page.set_viewport_size({"width": 1400, "height": 1000})  # the card's links on one line
                page.locator(".st-key-memlab_bell a").first.click()
                expect(page).to_have_url(re.compile(r"/notifications"))
                settle(page)
                card = page.locator("[class*='st-key-ntf_card_']").first
                expect(card).to_contain_text("15 agosto")
                shoot(page, card, out / "notification_block.png")
                print("wrote", out / "notification_block.png", flush=True)

                # back to the Chat page: the next reply opens with the seed's HIGH block
                page.get_by_test_id("stSidebarNav").get_by_role("link", name="Chat", exact=True).click()
                settle(page)
                print(f"user: {NEXT}\nassistant: {send(page, NEXT)}\n", flush=True)
                last = page.get_by_test_id("stChatMessage").last
                expect(last).to_contain_text("[⚠️ CONTRADDIZIONE RILEVATA]")
                last.scroll_into_view_if_needed()
                last.screenshot(path=str(out / "chat_high_block.png"))
                print("wrote", out / "chat_high_block.png")
                browser.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
