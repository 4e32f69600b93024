"""Issue 18, item 5: the dashboard was open. Each test failed before the fix.

1. ``make dashboard`` listened on every interface: it is started here as ``make dashboard`` starts it and its
   listening sockets are read from /proc/net/tcp{,6} (and a connection to the machine's non-loopback address fails).
2. Memory, notification and chat text was rendered as HTML/markdown: a memory holding ``<img src=...>`` and
   ``![...](...)`` pointing at a loopback HTTP server that counts requests is shown on every page in Chromium; the
   server gets no request and the literal text is on the page (and AppTest sees no raw tag in any markdown).
3. A path typed in the sidebar created files anywhere and a non-SQLite file showed a traceback with server paths.
4. Served beyond loopback there was no login.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from memlab.app import open_memlab

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "app.py")
sys.path.insert(0, str(Path(__file__).parent))


def evil_text(port: int) -> str:
    return (f'Ricorda: <img src="http://127.0.0.1:{port}/html-img"> e ![foto](http://127.0.0.1:{port}/md-img) '
            "**non** in grassetto")


def build_evil_db(path: Path, port: int) -> Path:
    """A memory, a contradiction notification and a chat turn for u1, each holding HTML and a markdown image."""
    lab = open_memlab(path)
    try:
        evil = evil_text(port)
        lab.turn("u1", "Abito a Roma.")
        lab.turn("u1", f"Una nota per te. {evil}")  # the chat history holds it too
        a = lab.store.add("u1", "L'utente abita a Roma", key="residence", value="Roma")
        b = lab.store.add("u1", evil, key="nota", value=evil)
        lab.notifications.create(
            "contradiction", "high", f'"L\'utente abita a Roma" / "{evil}"', "u1",
            payload={"first": {"id": a.id, "text": "L'utente abita a Roma"}, "second": {"id": b.id, "text": evil},
                     "explanation": evil},
            memory_ids=[a.id, b.id])
        lab.store.flush()
    finally:
        lab.close()
    return path


@pytest.fixture(scope="module")
def evil_db(tmp_path_factory) -> Path:
    return build_evil_db(tmp_path_factory.mktemp("evil") / "data" / "evil.db", 9)


# ---------------------------------------------------------------------------------------------------------------
# 1. loopback only
# ---------------------------------------------------------------------------------------------------------------

def listening(port: int) -> list[str]:
    """Local addresses of the sockets listening on ``port`` (from /proc/net/tcp and tcp6, state 0A)."""
    out = []
    for name, width in (("tcp", 8), ("tcp6", 32)):
        table = Path("/proc/net") / name
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:
                raw = bytes.fromhex(addr)
                if width == 8:
                    out.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:  # four little-endian 32-bit words
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    out.append(socket.inet_ntop(socket.AF_INET6, words))
    return out


def non_loopback_ip() -> str | None:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        ip = s.getsockname()[0]
        if not ip.startswith("127."):
            return ip
    return None


@pytest.mark.subprocess
def test_make_dashboard_listens_on_loopback_only(tmp_path):
    if not Path("/proc/net/tcp").exists():
        pytest.skip("LOUD SKIP: no /proc/net/tcp to read the listening sockets from")
    from memlab.testing import free_port

    port = free_port()
    env = {**os.environ, "STREAMLIT_SERVER_PORT": str(port), "STREAMLIT_SERVER_HEADLESS": "true",
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "MEMLAB_DASHBOARD_DATA_DIR": str(tmp_path)}
    log = open(tmp_path / "make.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(["make", "-s", "dashboard"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # make and streamlit in one process group, killed together
    try:
        deadline = time.time() + 90
        while not listening(port):
            assert proc.poll() is None, (tmp_path / "make.log").read_text()
            assert time.time() < deadline, "make dashboard did not listen: " + (tmp_path / "make.log").read_text()
            time.sleep(0.5)
        time.sleep(1)  # tornado binds IPv4 and IPv6 one after the other
        addresses = listening(port)
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5).status == 200
        assert addresses and all(a in ("127.0.0.1", "::1") for a in addresses), addresses
        ip = non_loopback_ip()
        if ip is None:
            print("LOUD NOTE: this machine has no non-loopback IPv4 address; checked /proc/net/tcp only")
        else:
            with pytest.raises(OSError), socket.create_connection((ip, port), timeout=3):
                pass
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


# ---------------------------------------------------------------------------------------------------------------
# 2-4. AppTest
# ---------------------------------------------------------------------------------------------------------------

def start(monkeypatch, db: Path, data_dir: Path | None = None):  # noqa: ANN001, ANN201 - an AppTest
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MEMLAB_DASHBOARD_DB", str(db))
    monkeypatch.setenv("MEMLAB_DASHBOARD_DATA_DIR", str(data_dir or db.parent))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    return at


def rendered(at) -> list[str]:  # noqa: ANN001 - an AppTest
    """The source of every element that Streamlit renders as markdown."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [w.value for w in at.warning] + [e.value for e in at.error] + [h.value for h in at.header]
    return [str(p) for p in parts]


@pytest.mark.model
@pytest.mark.parametrize("page", ["views/chat.py", "views/chats.py", "views/notifications.py", "views/memory.py",
                                  "views/history.py"])
def test_item2_user_text_is_escaped_on_every_page(evil_db, monkeypatch, page):
    at = start(monkeypatch, evil_db)
    assert not at.exception, at.exception
    at.switch_page(page)
    if page == "views/history.py":
        ids = [m.id for m in open_memlab(evil_db, checks=False).store.list("u1") if m.key == "nota"]
        at.query_params["memory"] = str(ids[0])
    at.run()
    assert not at.exception, at.exception
    shown = rendered(at)
    assert any("img src" in p for p in shown), shown  # the memory (or the chat turn) is on the page ...
    for p in shown:  # ... and nothing of it is markup
        assert "<img" not in p and "![" not in p and not re.search(r"(?<!\\)\]\(http", p), p
        assert "**non**" not in p, p


def test_item2_safe_keeps_italian_and_escapes_markup():
    sys.path.insert(0, str(ROOT / "dashboard"))
    from common import safe

    assert safe("Perché no? È già così: 12:30, l'età è 34.") == "Perché no? È già così: 12:30, l'età è 34."
    assert safe('<img src="x">') == '&lt;img src="x"&gt;'
    assert safe("![a](http://x/y)") == "!\\[a\\](http://x/y)"
    assert safe("# titolo\n1. uno\n- due\n    codice") == "\\# titolo  \n1\\. uno  \n\\- due  \ncodice"
    assert safe("$x$ *a* _b_ `c` ~d~ |e|") == "\\$x\\$ \\*a\\* \\_b\\_ \\`c\\` \\~d\\~ \\|e\\|"


@pytest.mark.model
def test_item3_paths_outside_the_data_directory_are_refused_and_nothing_is_created(evil_db, monkeypatch, tmp_path):
    data = tmp_path / "data"
    at = start(monkeypatch, evil_db, data_dir=data)
    assert not at.exception, at.exception
    outside = tmp_path / "fuori" / "nuovo" / "x.db"
    for typed in (str(outside), "../fuori/x.db", "sub/../../fuori/x.db", "~/x.db", "x.txt", "", "a\x00.db"):
        at.sidebar.text_input(key="db_path_input").input(typed).run()
        assert not at.exception, (typed, at.exception)
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and ("rifiutato" in errors[0] or "scrivi" in errors[0]), (typed, errors)
        assert "\n" not in errors[0] and str(data) not in errors[0].replace(typed, ""), errors  # no server path
        assert [m.value for m in at.markdown if "img src" in str(m.value)] == []  # no page under the error
    assert not (tmp_path / "fuori").exists() and not data.exists()
    assert not (ROOT / "fuori").exists()


@pytest.mark.model
def test_item3_a_non_sqlite_file_shows_one_line_and_no_server_path(evil_db, monkeypatch, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "appunti.db").write_text("non sono un database\n" * 50, encoding="utf-8")
    at = start(monkeypatch, evil_db, data_dir=data)
    at.sidebar.text_input(key="db_path_input").input("appunti.db").run()
    assert not at.exception, at.exception
    errors = [str(e.value) for e in at.error]
    assert len(errors) == 1 and "appunti" in errors[0] and "SQLite" in errors[0], errors
    assert "\n" not in errors[0] and str(tmp_path) not in errors[0] and "Traceback" not in errors[0]
    assert (data / "appunti.db").read_text(encoding="utf-8").startswith("non sono")  # untouched


@pytest.mark.model
def test_item3_a_name_inside_the_data_directory_opens(evil_db, monkeypatch):
    at = start(monkeypatch, evil_db, data_dir=evil_db.parent)
    at.sidebar.text_input(key="db_path_input").input("evil.db").run()  # the same file, by its name in the directory
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.sidebar.selectbox(key="user_select").value == "u1"


# -- 4. login beyond loopback ---------------------------------------------------------------------------------

@pytest.mark.model  # (the module fixture builds the database with the real models)
def test_item4_beyond_loopback_without_a_password_nothing_is_served(evil_db, monkeypatch, loopback_address):
    loopback_address.set_option("server.address", "0.0.0.0")
    at = start(monkeypatch, evil_db)
    assert not at.exception, at.exception
    assert any("MEMLAB_DASHBOARD_PASSWORD" in str(e.value) for e in at.error)
    assert len(at.sidebar.text_input) == 0 and len(at.text_input) == 0  # no database field, no page
    assert not any("Roma" in p for p in rendered(at))


@pytest.mark.model
def test_item4_beyond_loopback_the_password_is_asked_once_per_session(evil_db, monkeypatch, loopback_address):
    loopback_address.set_option("server.address", "192.0.2.2")
    monkeypatch.setenv("MEMLAB_DASHBOARD_PASSWORD", "parola-d'ordine-è")
    at = start(monkeypatch, evil_db)
    assert not at.exception, at.exception
    assert len(at.sidebar.text_input) == 0  # only the login form
    at.text_input(key="memlab_password").input("sbagliata")
    at.button[0].click().run()
    assert any("Password errata" in str(e.value) for e in at.error)
    assert len(at.sidebar.text_input) == 0
    at.text_input(key="memlab_password").input("parola-d'ordine-è")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.sidebar.text_input(key="db_path_input").value == str(evil_db)  # the app, after the login
    at.run()  # a rerun in the same session stays logged in
    assert at.sidebar.text_input(key="db_path_input").value == str(evil_db)


@pytest.mark.model
def test_item4_loopback_needs_no_login(evil_db, monkeypatch, loopback_address):
    for address in ("127.0.0.1", "localhost", "::1"):
        loopback_address.set_option("server.address", address)
        at = start(monkeypatch, evil_db)
        assert not at.exception, at.exception
        assert at.sidebar.text_input(key="db_path_input").value == str(evil_db), address


# ---------------------------------------------------------------------------------------------------------------
# 2. in Chromium: no request leaves the page for the markup inside a memory
# ---------------------------------------------------------------------------------------------------------------

class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass


@pytest.mark.browser
@pytest.mark.model  # the served app loads the real embedder and judge
def test_item2_in_chromium_markup_in_a_memory_fetches_nothing(tmp_path):
    import shutil

    if (shutil.which("chromium") or shutil.which("chromium-browser")) is None:
        pytest.skip("LOUD SKIP: Debian chromium is not installed (apt-get install chromium)")

    from playwright.sync_api import expect, sync_playwright
    from test_browser import CHROMIUM, serve_dashboard, settle

    def no_request(where: str) -> None:
        page.wait_for_timeout(1000)  # an image request would have been made by now
        assert _Counter.hits == [], (where, _Counter.hits)  # checked before the text, so it is what fails first

    pixel = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    _Counter.hits = []
    threading.Thread(target=pixel.serve_forever, daemon=True).start()
    port = pixel.server_address[1]
    db = build_evil_db(tmp_path / "data" / "evil.db", port)
    try:
        with serve_dashboard(tmp_path, {"MEMLAB_DASHBOARD_DB": str(db)}) as url, sync_playwright() as p:
            expect.set_options(timeout=180_000)
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                  args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(url)
            chat_input = page.get_by_test_id("stChatInputTextArea")
            chat_input.fill(f"Guarda <img src=\"http://127.0.0.1:{port}/chat-img\"> ![x](http://127.0.0.1:{port}/chat-md)")
            chat_input.press("Enter")
            settle(page)
            no_request("chat")
            expect(page.get_by_text(f'<img src="http://127.0.0.1:{port}/chat-img">').first).to_be_visible()
            literal = f'<img src="http://127.0.0.1:{port}/html-img">'
            for name, path in (("Chat salvate", "chats"), ("Notifiche", "notifications"),
                               ("Memorie e versioni", "memory")):
                page.get_by_test_id("stSidebarNav").get_by_role("link", name=name, exact=True).click()
                expect(page).to_have_url(re.compile(path))
                settle(page)
                no_request(path)
                if path != "chats":
                    expect(page.get_by_text(literal).first).to_be_visible()
                    expect(page.get_by_text(f"![foto](http://127.0.0.1:{port}/md-img)").first).to_be_visible()
            row = page.get_by_text(re.compile(r"#\d+ Ricorda")).first
            memory_id = re.search(r"#(\d+)", row.inner_text()).group(1)
            page.goto(f"{url}/history?memory={memory_id}")
            settle(page)
            no_request("history")
            expect(page.get_by_text(literal).first).to_be_visible()
            expect(page.get_by_text("**non** in grassetto").first).to_be_visible()  # the asterisks, not bold
            assert page.locator("img[src*='127.0.0.1']").count() == 0
            assert page.get_by_test_id("stException").count() == 0
            b.close()
        assert _Counter.hits == [], _Counter.hits
    finally:
        pixel.shutdown()


@pytest.mark.model
def test_item3_the_runs_folder_is_limited_to_the_configured_one(evil_db, monkeypatch, tmp_path):
    from test_pages import write_recall_run

    write_recall_run(tmp_path / "runs")
    write_recall_run(tmp_path / "altrove")  # a run directory outside the configured folder
    monkeypatch.setenv("MEMLAB_DASHBOARD_RUNS", str(tmp_path / "runs"))
    at = start(monkeypatch, evil_db)
    at.switch_page("views/eval_runs.py").run()
    assert not at.exception and not at.error, at.exception
    assert len(at.multiselect(key="eval_runs_select").options) == 1
    for typed in (str(tmp_path / "altrove"), str(tmp_path / "runs" / ".." / "altrove"), "/"):
        at.sidebar.text_input(key="runs_dir").input(typed).run()
        assert not at.exception, at.exception
        assert [str(e.value) for e in at.error] == [
            f"Cartella dei run rifiutata: solo {str(tmp_path / 'runs').replace('_', chr(92) + '_')} o una sua sottocartella."]
        assert len(at.multiselect) == 0
    at.sidebar.text_input(key="runs_dir").input(str(tmp_path / "runs" / "memory_recall")).run()
    assert not at.error and len(at.multiselect(key="eval_runs_select").options) == 1
