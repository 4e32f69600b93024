"""The real-browser tests: `streamlit run` on a free loopback port, driven by Playwright in Debian's Chromium.

One server and one browser page for the module; the tests run in file order and build on each other (the chat
turns of the first one feed the bell, the history and the timeline checks). The ``test_item<N>_...`` tests check
the dashboard items of issue 19 one by one. With ``DASHBOARD_SCREENSHOT_DIR`` set, the screenshots of the
notification block and of the version history detail view are copied there (README images: docs/img).
Skipped (loudly) only when chromium is not installed (`.ci/run` installs it with apt).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.testing import free_port

pytestmark = [
    pytest.mark.browser,
    pytest.mark.model,  # the streamlit subprocess loads the real embedder and judge
    pytest.mark.skipif(
        (shutil.which("chromium") or shutil.which("chromium-browser")) is None,
        reason="LOUD SKIP: Debian chromium is not installed (apt-get install chromium)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOADING = "Preparo memlab"  # the first-load status box's label


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("shots")


@contextlib.contextmanager
def serve_dashboard(tmp: Path, env: dict[str, str]) -> Iterator[str]:
    """``streamlit run dashboard/app.py`` on a free loopback port with ``env`` added; yields its URL once healthy
    (the log is ``tmp/server.log``). Also used by ``test_security.py``."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **env}
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--global.developmentMode", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        log.close()
        pytest.fail("streamlit did not start: " + (tmp / "server.log").read_text())
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def streamlit_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    sys.path.insert(0, str(Path(__file__).parent))
    from test_pages import (
        write_recall_run,  # a run whose metric names hold '@' and whose gold has no positive
    )

    write_recall_run(tmp / "runs")
    with serve_dashboard(tmp, {"MEMLAB_DASHBOARD_DB": str(tmp / "browser.db"), "MEMLAB_DASHBOARD_RUNS": str(tmp / "runs"),
                               "MEMLAB_DASHBOARD_EMPTY": "1"}) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=180_000)  # the first load builds the services and loads the embedder and the judge
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                  "--no-first-run", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.set_default_timeout(120_000)
    yield pg
    pg.close()


def settle(page) -> None:  # noqa: ANN001 - a Playwright page
    """Wait until Streamlit has finished the current run (no running indicator), then a short pause."""
    page.wait_for_timeout(400)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget] button')", timeout=120_000)
    page.wait_for_timeout(300)


def save(shots: Path, name: str) -> Path:
    out = os.environ.get("DASHBOARD_SCREENSHOT_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(shots / name, Path(out) / name)
    return shots / name


def shoot(page, locator, path: Path) -> Path:  # noqa: ANN001 - a Playwright page and locator
    """Screenshot the main area from the top of the page (bell included) down to ``locator``'s bottom. The
    viewport is made tall for the shot (Streamlit scrolls inside the page, so a full-page shot would not help)."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 2000})
    try:
        page.wait_for_timeout(800)
        locator.scroll_into_view_if_needed()
        page.get_by_test_id("stMain").evaluate("el => el.scrollTo(0, 0)")
        page.wait_for_timeout(400)
        box = locator.bounding_box()
        main = page.get_by_test_id("stMain").bounding_box()
        page.screenshot(path=str(path), clip={"x": main["x"], "y": 0, "width": main["width"],
                                              "height": min(box["y"] + box["height"] + 16, 2000)})
    finally:
        page.set_viewport_size(size)
    return path


def test_item5_first_load_shows_progress_while_models_load(page, streamlit_server):
    from playwright.sync_api import expect

    page.goto(streamlit_server)  # the Chat page is the default page
    expect(page.get_by_text(LOADING).first).to_be_visible(timeout=20_000)  # not an empty page
    expect(page.get_by_test_id("stChatInputTextArea")).to_be_visible()
    expect(page.get_by_text(LOADING)).to_have_count(0)


def test_contradiction_flow_in_a_real_browser(page, shots):
    from playwright.sync_api import expect

    chat_input = page.get_by_test_id("stChatInputTextArea")
    for msg in ["Sono nato il 12 luglio 1990", "Il mio compleanno è il 15 agosto", "Abito a Roma", "Che ore sono?"]:
        chat_input.fill(msg)
        chat_input.press("Enter")
        expect(page.get_by_text(msg, exact=True).last).to_be_visible()
        settle(page)
    expect(page.get_by_text("Ho notato una contraddizione nella memoria").first).to_be_visible()
    expect(page.get_by_text("12 luglio 1990").first).to_be_visible()
    page.screenshot(path=str(shots / "high_block.png"), full_page=True)
    assert (shots / "high_block.png").stat().st_size > 10_000


def test_item1_bell_is_clickable_and_opens_notifications_with_the_pending_count(page, shots):
    from playwright.sync_api import expect

    bell = page.locator(".st-key-memlab_bell a").first
    expect(bell).to_be_visible()
    pending = int(re.sub(r"\D", "", bell.inner_text()))
    assert pending >= 1
    bell.click()
    expect(page).to_have_url(re.compile(r"/notifications"))
    expect(page.get_by_role("heading", name=f"Notifiche ({pending} in sospeso)")).to_be_visible()
    expect(page.get_by_text("notifica in sospeso" if pending == 1 else "notifiche in sospeso").first).to_be_visible()
    settle(page)
    card = page.locator("[class*='st-key-ntf_card_']").first
    expect(card).to_contain_text("15 agosto")
    shoot(page, card, shots / "notification_block.png")
    assert save(shots, "notification_block.png").stat().st_size < 300_000


def test_item2_version_history_detail_view(page, shots):
    from playwright.sync_api import expect

    card = page.locator("[class*='st-key-ntf_card_']").first
    card.get_by_role("link", name=re.compile("Cronologia della memoria")).first.click()
    expect(page).to_have_url(re.compile(r"/history\?memory=\d+"))
    expect(page.get_by_role("heading", name=re.compile("Cronologia: "))).to_be_visible()
    expect(page.get_by_text("2 versioni").first).to_be_visible()
    expect(page.locator("[class*='st-key-history_v1_']")).to_contain_text("12 luglio")
    expect(page.locator("[class*='st-key-history_v1_']")).to_contain_text("Superata")
    expect(page.locator("[class*='st-key-history_v2_']")).to_contain_text("15 agosto")
    expect(page.locator("[class*='st-key-history_v2_']")).to_contain_text("Attiva")
    expect(page.locator("[class*='st-key-history_v1_']")).to_contain_text("Superata da: v2")
    expect(page.get_by_text("Rispondi nelle notifiche").first).to_be_visible()  # pending: answer it there
    # answer B (the second) in the notifications, then the history shows the answer
    page.locator(".st-key-memlab_bell a").first.click()
    expect(page).to_have_url(re.compile(r"/notifications"))
    settle(page)
    page.locator("[class*='st-key-ntf_card_']").first.get_by_role("button", name="B", exact=True).click()
    expect(page.get_by_text("Risolta").first).to_be_visible()
    settle(page)
    page.locator("[class*='st-key-ntf_card_']").first.get_by_role(
        "link", name=re.compile("Cronologia della memoria")).last.click()
    expect(page.get_by_text("Risposta dell'utente:").first).to_be_visible()
    expect(page.get_by_text("B) la seconda").first).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1)
    settle(page)
    page.wait_for_timeout(1000)  # the plotly chart draws
    ntf = page.locator("[class*='st-key-history_ntf_']").first
    shoot(page, ntf, shots / "version_history.png")
    assert save(shots, "version_history.png").stat().st_size < 300_000


def test_item7_one_version_history_is_a_dated_card(page):
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Memorie e versioni", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Memorie e versioni"))).to_be_visible()
    settle(page)
    row = page.get_by_text(re.compile(r"#\d+ L'utente (vive|abita) a Roma")).first
    memory_id = re.search(r"#(\d+)", row.inner_text()).group(1)
    page.locator(f".st-key-mem_history_{memory_id} button").click()
    expect(page).to_have_url(re.compile(rf"/history\?memory={memory_id}"))
    expect(page.get_by_text("1 versione").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"Una sola versione, creata il \d\d/\d\d/\d{4} \d\d:\d\d UTC"))).to_be_visible()
    settle(page)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)  # no lone dot on a microsecond axis


def test_item3_and_item4_eval_page_names_as_text_and_no_crash_without_positives(page):
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Valutazioni (eval)", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Valutazioni"))).to_be_visible()
    settle(page)
    expect(page.get_by_text("nessun positivo").first).to_be_visible()
    expect(page.get_by_text("evidence_recall@10.raw.all").first).to_be_attached()
    assert page.locator("a[href^='mailto:']").count() == 0
    assert page.get_by_test_id("stException").count() == 0


def test_item6_sidebar_shows_memlab_once(page):
    for name in ("Chat", "Notifiche", "Memorie e versioni", "Cronologia versioni", "Valutazioni (eval)"):
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=name, exact=True).click()
        settle(page)
        text = page.get_by_test_id("stSidebar").inner_text()
        assert len(re.findall(r"memlab", text, flags=re.IGNORECASE)) == 1, (name, text)


def test_item5_later_loads_reuse_the_loaded_models(browser, streamlit_server):
    from playwright.sync_api import expect

    fresh = browser.new_page(viewport={"width": 1200, "height": 900})  # a new session on the same server
    try:
        t0 = time.time()
        fresh.goto(streamlit_server)
        expect(fresh.get_by_test_id("stChatInputTextArea")).to_be_visible(timeout=30_000)
        assert time.time() - t0 < 30
        assert fresh.get_by_text(LOADING).count() == 0
    finally:
        fresh.close()
