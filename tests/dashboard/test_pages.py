"""AppTest tests over every dashboard page, on a real memlab database built by the real pipeline.

The tests named ``test_item<N>_...`` check the dashboard items of issue 19 one by one (the real-browser test,
``test_browser.py``, checks them again in Chromium).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.app import open_memlab

pytestmark = pytest.mark.model  # the services load the real embedder and judge

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "app.py")
PAGES = ["views/chat.py", "views/chats.py", "views/notifications.py", "views/memory.py", "views/history.py",
         "views/eval_runs.py"]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """A small database with a contradiction, a version chain and a chat, made through the Assistant."""
    path = tmp_path_factory.mktemp("dash") / "demo.db"
    lab = open_memlab(path)
    for msg in ["Chiamami Zhang San.", "Sono nato il 12 luglio 1990.", "Anzi, chiamami Li Si.",
                "Il mio compleanno è il 15 agosto.", "Abito a Roma."]:
        lab.turn("u1", msg)
    assert lab.notifications.count("u1") >= 1
    lab.close()
    return path


def write_recall_run(root: Path) -> Path:
    """A memory-recall-like run: metric names with '@' and scored examples whose gold is never 'contradiction'."""
    from memlab.eval.runs import make_spec, write_run

    out = root / "memory_recall"
    write_run(out, spec=make_spec("memory-recall", dataset="locomo", n=4, judge="e5", seed=0),
              metrics={"evidence_recall@10": {"raw": {"all": 0.75}, "compacted": {"all": 0.5}},
                       "evidence_coverage": {"raw": 1.0}},
              examples=[{"id": f"q{i}", "gold": "conv-1", "pred": "conv-1" if i % 2 else "conv-2",
                         "score": float(i % 2)} for i in range(4)],
              confusion={"conv-1": {"conv-1": 2, "conv-2": 2}},
              primary_metric="evidence_coverage.raw")
    return out


@pytest.fixture
def app(demo_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    write_recall_run(tmp_path / "runs")
    monkeypatch.setenv("MEMLAB_DASHBOARD_DB", str(demo_db))
    monkeypatch.setenv("MEMLAB_DASHBOARD_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def memory_ids(db: Path, key: str) -> list[int]:
    lab = open_memlab(db, checks=False)
    try:
        return [m.id for m in lab.store.list("u1", include_inactive=True) if m.key == key]
    finally:
        lab.close()


def texts(at) -> str:  # noqa: ANN001 - an AppTest
    """Every markdown/caption/info/text value of the current page, one string."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [t.value for t in at.text] + [h.value for h in at.header] + [s.value for s in at.subheader]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(app, page):
    app.switch_page(page)
    app.run()
    assert not app.exception, app.exception
    assert app.header[0].value  # each page has its header
    assert app.sidebar.selectbox(key="user_select").value == "u1"


def test_bell_badge_and_resolve_click_changes_the_store(app, demo_db):
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


def test_item1_bell_is_a_link_to_the_notifications_page_with_the_pending_count(app, demo_db):
    lab = open_memlab(demo_db, checks=False)
    pending = lab.notifications.count("u1")
    lab.close()
    bells = [p for p in app.page_link if "notifications" in p.proto.page]
    assert bells, [p.proto for p in app.page_link]
    bell = bells[0]
    assert str(pending) in bell.proto.label and "in sospeso" in bell.proto.help
    app.switch_page("views/notifications.py")  # where the link leads (the browser test clicks it)
    app.run()
    assert f"({pending} in sospeso)" in app.header[0].value


def test_item2_history_detail_view_shows_the_chain_with_status_and_resolution(app, demo_db):
    names = memory_ids(demo_db, "preferred_name")
    assert len(names) == 2
    app.switch_page("views/memory.py")
    app.run()
    app.toggle(key="mem_show_all").set_value(True)
    app.run()
    app.button(key=f"mem_history_{names[0]}").click()  # the "Cronologia" button of Zhang San (v1)
    app.run()
    assert not app.exception, app.exception
    page = texts(app)
    assert "Cronologia: preferred\\_name" in page and "2 versioni" in page  # (markdown source: the slot is escaped)
    assert "Zhang San" in page and "Li Si" in page
    assert ":orange-badge[Superata]" in page and ":green-badge[Attiva]" in page
    assert f"Superata da:** v2 (#{names[1]})" in page and f"Sostituisce:** v1 (#{names[0]})" in page
    assert "/20" in page and "UTC" in page  # absolute timestamps (dd/mm/yyyy hh:mm UTC)
    assert "Notifiche su queste memorie (1)" in page  # "Anzi, chiamami Li Si" is an update: its LOW notice
    # answering a contradiction (the two birthdays) shows up in the history
    bdays = memory_ids(demo_db, "birthday")
    lab = open_memlab(demo_db, checks=False)
    n = next(n for n in lab.notifications.list("u1", include_resolved=True)
             if set(bdays) & set(n.memory_ids) and n.type.value == "contradiction")
    if n.is_open:
        lab.notifications.resolve(n.id, "B", "il 15 agosto è giusto", user_id="u1")
    lab.close()
    app.switch_page("views/history.py")
    app.query_params["memory"] = str(bdays[0])  # the page reads its memory from the link
    app.run()
    page = texts(app)
    assert "Risposta dell'utente:** B) la seconda" in page
    assert app.json, "the resolution's before/after states are shown"


def test_item3_eval_metric_names_are_plain_text_not_email_links(app):
    app.switch_page("views/eval_runs.py")
    app.run()
    assert not app.exception, app.exception
    assert all("@" not in m.value for m in app.markdown), [m.value for m in app.markdown if "@" in m.value]
    names = [str(v) for df in app.dataframe for v in df.value.get("metric", [])] if app.dataframe else []
    assert "evidence_recall@10.raw.all" in names


def test_item4_eval_run_without_positive_gold_shows_a_message_not_a_crash(app):
    app.switch_page("views/eval_runs.py")
    app.run()
    assert not app.exception, app.exception
    infos = " ".join(i.value for i in app.info)
    assert "precision-recall e diagramma di affidabilità non disponibili" in infos and "nessun positivo" in infos
    charts = app.get("plotly_chart")
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in charts]
    assert len(charts) == 1 and "onfusion" in titles[0], titles  # what can be plotted still is


def test_an_alarms_run_is_drawn_per_conversation_and_plant_kind(app, tmp_path):
    import shutil

    from memlab.eval.alarms import run_alarms_task
    from memlab.testing import FakeEmbedder, ScriptedJudge

    locomo = tmp_path / "locomo"
    locomo.mkdir()
    conv = {"speaker_a": "Alice", "speaker_b": "Bob", "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(
                [("Alice", "I was born on 12 July 1990 in Rome."), ("Bob", "Nice, I love Rome.")], 1)]}
    (locomo / "locomo10.json").write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv, "qa": []}] * 3))
    plants = tmp_path / "plants.jsonl"
    plants.write_text(json.dumps({"conv": 0, "id": "p1", "speaker": "Alice", "after": "D1:2", "text":
                                  "My birthday is on 15 August.", "contradicts": "D1:1", "kind": "date",
                                  "label": "contradiction"}))
    run_alarms_task(split="dev", plants=plants, data_dir=locomo, embedder=FakeEmbedder(), judge=ScriptedJudge(),
                    out_dir=tmp_path / "runs" / "alarms", limit=1)
    shutil.rmtree(tmp_path / "runs" / "memory_recall", ignore_errors=True)  # the fixture's other run
    app.switch_page("views/eval_runs.py")
    app.run()
    assert not app.exception, app.exception
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in app.get("plotly_chart")]
    assert any(t.startswith("How often memlab interrupts") for t in titles), titles


def test_item5_services_load_once_and_are_cached(app):
    from common import _opened  # the app put dashboard/ on sys.path

    before = dict(_opened())
    assert before, "the services registry is empty after a run"
    app.run()
    assert dict(_opened()) == before and all(a is b for a, b in zip(_opened().values(), before.values(),
                                                                      strict=True))
    assert not app.get("status")  # the progress box is gone once loaded


def test_item6_sidebar_names_memlab_once(app):
    for page in PAGES:
        app.switch_page(page)
        app.run()
        brand = [m.value for m in app.sidebar.markdown if "memlab" in m.value.lower()]
        assert len(brand) == 1, (page, brand)


def test_item7_one_version_timeline_is_a_dated_card_not_a_lone_dot(app, demo_db):
    (city,) = memory_ids(demo_db, "home_city")
    app.switch_page("views/history.py")
    app.session_state["history_memory"] = city
    app.run()
    assert not app.exception, app.exception
    assert not app.get("plotly_chart")
    info = " ".join(i.value for i in app.info)
    assert "Una sola versione, creata il" in info and "UTC" in info
    # a multi-version chain gets a timeline whose axis is the versions, labelled with readable dates
    names = memory_ids(demo_db, "preferred_name")
    app.session_state["history_memory"] = names[0]
    app.query_params.clear() if hasattr(app, "query_params") else None
    app.run()
    (chart,) = app.get("plotly_chart")
    fig = json.loads(chart.proto.spec)
    assert fig["layout"]["xaxis"]["type"] == "category"
    assert [x.split("<br>")[0] for x in fig["data"][0]["x"]] == ["v1", "v2"]
    assert all("UTC" in x for x in fig["data"][0]["x"])


def test_item5_first_start_builds_the_demo_through_the_pipeline(tmp_path, monkeypatch):
    """A database path that does not exist yet: the first run replays the demo script (with a progress bar in the
    status box) and the Chat page shows its conversation."""
    from streamlit.testing.v1 import AppTest

    from memlab.demo import DEMO_SCRIPT

    db = tmp_path / "fresh" / "demo.db"
    monkeypatch.setenv("MEMLAB_DASHBOARD_DB", str(db))
    monkeypatch.setenv("MEMLAB_DASHBOARD_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("MEMLAB_DASHBOARD_EMPTY", raising=False)
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    assert db.exists()
    said = [m.value for m in at.markdown]
    assert any("Chiamami Zhang San" in v for v in said), said
    assert sorted(at.sidebar.selectbox(key="user_select").options) == sorted({u for u, _ in DEMO_SCRIPT})


def test_item2_status_words_of_a_chain_replaced_lost_and_switched_off():
    """The history's status words on a real store: a newer version replaces (Superata), a much less confident newer
    one loses (Scartata), "cancella entrambe"-like deactivation is Disattivata; slot dates read as 12/07/1990."""
    import sys

    from memlab import MemoryStore
    from memlab.testing import FakeEmbedder

    sys.path.insert(0, str(ROOT / "dashboard"))
    from common import pretty_value, status_label

    store = MemoryStore(":memory:", embedder=FakeEmbedder())
    try:
        v1 = store.add("u1", "Chiamami Zhang San", key="preferred_name", value="Zhang San", confidence=0.9)
        v2 = store.add("u1", "Chiamami Li Si", key="preferred_name", value="Li Si", confidence=0.85)
        v3 = store.add("u1", "Chiamami Wang Wu", key="preferred_name", value="Wang Wu", confidence=0.3)
        words = {m.id: status_label(m) for m in store.history(v1.id)}
        assert words == {v1.id: "Superata", v2.id: "Attiva", v3.id: "Scartata"}
        store.deactivate(v2.id, "cancella entrambe", user_id="u1")
        assert status_label(store.get(v2.id, user_id="u1")) == "Disattivata"
    finally:
        store.close()
    assert pretty_value("1990-07-12") == "12/07/1990" and pretty_value("--08-15") == "15/08"
    assert pretty_value("Li Si") == "Li Si" and pretty_value(None) == "—"


def test_item2_history_of_another_users_memory_is_not_shown(app, demo_db):
    """Isolation: the last memory viewed by u1 is not shown once the sidebar switches to u2 (the page falls back to
    u2's own memories)."""
    (city,) = memory_ids(demo_db, "home_city")
    lab = open_memlab(demo_db, checks=False)
    try:
        other = lab.store.add("u2", "L'utente vive a Milano", key="home_city", value="Milano")
    finally:
        lab.close()
    app.switch_page("views/history.py")
    app.session_state["history_memory"] = city
    app.run()
    assert "Cronologia: home\\_city" in texts(app) and "Roma" in texts(app)
    app.sidebar.selectbox(key="user_select").set_value("u2")
    app.run()
    assert not app.exception, app.exception
    page = texts(app)
    assert "Roma" not in page and "Milano" in page
    assert f"La memoria #{city} non esiste per l'utente u2" in app.warning[0].value
    assert app.selectbox(key="history_pick").options == [f"#{other.id} L'utente vive a Milano"]


# ---------------------------------------------------------------- paging (issue 42)
@pytest.fixture(scope="module")
def busy_db(tmp_path_factory):
    """120 notifications and 120 memories of u1 (vectors given: nothing to embed), on the real pipeline's database."""
    import numpy as np

    path = tmp_path_factory.mktemp("busy") / "busy.db"
    lab = open_memlab(path, checks=False)
    try:
        vecs = np.random.default_rng(0).normal(size=(120, lab.store.embedder.dim)).astype(np.float32)
        lab.store.add_many("u1", [f"Memoria numero {i}" for i in range(1, 121)],
                           embeddings=vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
        for i in range(1, 121):
            lab.notifications.create("event", "low", f"Evento numero {i}", "u1")
    finally:
        lab.close()
    return path


@pytest.fixture
def busy_app(busy_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MEMLAB_DASHBOARD_DB", str(busy_db))
    monkeypatch.setenv("MEMLAB_DASHBOARD_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def _cards(at) -> list[int]:  # noqa: ANN001 - an AppTest
    """The numbers of the notification cards rendered ("**#<id> · ..." markdown)."""
    import re

    return [int(m[1]) for m in (re.match(r"\*\*#(\d+) · ", md.value) for md in at.markdown) if m]


def test_the_notifications_page_renders_one_page_and_the_next_pages_hold_the_rest(busy_app):
    busy_app.switch_page("views/notifications.py")
    busy_app.run()
    assert not busy_app.exception, busy_app.exception
    assert _cards(busy_app) == list(range(120, 70, -1))  # 50 of 120, newest first
    assert "120 mostrate" in texts(busy_app) and "1–50 di 120" in texts(busy_app)
    seen = _cards(busy_app)
    for page, expected in ((2, range(70, 20, -1)), (3, range(20, 0, -1))):
        busy_app.number_input(key="ntf_page").set_value(page).run()
        assert not busy_app.exception, busy_app.exception
        assert _cards(busy_app) == list(expected)
        seen += _cards(busy_app)
    assert sorted(seen) == list(range(1, 121))  # every notification once, over the three pages
    # a filter that leaves fewer than one page: no selector, every match shown
    busy_app.multiselect(key="ntf_urg").set_value(["high"]).run()
    assert not busy_app.exception and _cards(busy_app) == [] and not busy_app.number_input


def test_the_memory_page_renders_one_page_and_the_next_pages_hold_the_rest(busy_app):
    busy_app.switch_page("views/memory.py")
    busy_app.run()
    assert not busy_app.exception, busy_app.exception

    def rows() -> list[int]:
        return [int(b.key.rsplit("_", 1)[1]) for b in busy_app.button if b.key and b.key.startswith("mem_history_")]

    first = rows()
    assert len(first) == 50 and len(busy_app.dataframe[0].value) == 50  # history rows and table: one page
    assert "Memorie 1–50 di 120" in texts(busy_app)
    busy_app.number_input(key="mem_page").set_value(3).run()
    last = rows()
    assert len(last) == 20 and not set(first) & set(last) and len(busy_app.dataframe[0].value) == 20
    busy_app.number_input(key="mem_page").set_value(2).run()
    assert sorted(first + rows() + last) == sorted(range(min(first), min(first) + 120))


def test_notification_paging_is_validated_and_counts_what_it_lists(busy_db):
    from memlab.errors import InvalidInputError

    lab = open_memlab(busy_db, checks=False)
    try:
        svc = lab.notifications
        assert svc.total("u1", include_resolved=True) == 120
        page = svc.list("u1", include_resolved=True, limit=50, offset=100)
        assert [n.content for n in page] == [f"Evento numero {i}" for i in range(20, 0, -1)]
        assert svc.list("u1", include_resolved=True, urgencies=["high"]) == []
        assert svc.total("u1", types=["event"], urgencies=["low", "medium"]) == 120
        for bad in ({"offset": -1}, {"offset": 1.5}, {"limit": 0}, {"urgencies": "low"}, {"types": ["rumour"]}):
            with pytest.raises(InvalidInputError):
                svc.list("u1", **bad)
    finally:
        lab.close()
