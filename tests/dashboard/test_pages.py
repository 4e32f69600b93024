"""AppTest smoke test over every dashboard page, on a real memlab database built by the real pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.app import open_memlab

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "app.py")
PAGES = ["views/chat.py", "views/chats.py", "views/notifications.py", "views/memory.py", "views/eval_runs.py"]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """A small database with a contradiction, a version chain and a chat, made through the Assistant."""
    path = tmp_path_factory.mktemp("dash") / "demo.db"
    lab = open_memlab(path)
    for msg in ["Chiamami Zhang San.", "Sono nato il 12 luglio 1990.", "Anzi, chiamami Li Si.",
                "Il mio compleanno è il 15 agosto."]:
        lab.turn("u1", msg)
    assert lab.notifications.count("u1") >= 1
    lab.close()
    return path


@pytest.fixture
def app(demo_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MEMLAB_DASHBOARD_DB", str(demo_db))
    monkeypatch.setenv("MEMLAB_DASHBOARD_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(app, page):
    app.switch_page(page)
    app.run()
    assert not app.exception, app.exception
    assert app.header[0].value  # each page has its header
    assert app.sidebar.selectbox(key="user_select").value == "u1"


def test_bell_badge_and_resolve_click_changes_the_store(app, demo_db):
    assert any("memlab-badge" in m.value for m in app.markdown)
    app.switch_page("views/notifications.py")
    app.run()
    buttons = [b for b in app.button if b.key and b.key.startswith("ntf_B_")]
    assert buttons, "no resolution buttons"
    buttons[0].click()
    app.run()
    assert not app.exception
    lab = open_memlab(demo_db, checks=False)
    try:
        resolved = [n for n in lab.notifications.list("u1", include_resolved=True) if n.choice == "B"]
        assert resolved
        first, second = resolved[0].memory_ids
        assert lab.store.get(second, user_id="u1").is_active and not lab.store.get(first, user_id="u1").is_active
    finally:
        lab.close()


def test_memory_page_shows_version_chain(app):
    app.switch_page("views/memory.py")
    app.run()
    app.toggle(key="mem_show_all").set_value(True)
    app.run()
    assert not app.exception
    assert len(app.dataframe[0].value) >= 3  # Zhang San v1, Li Si v2, the dates
