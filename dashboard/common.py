"""Shared sidebar, cached resources and small view helpers for the dashboard pages.

Pages stay thin: everything they show comes from memlab's public API. Only ``MemlabError`` is caught (a bad id, a
bad input) and shown to the user; anything else is a bug and surfaces as such.

Security: user text (memories, notifications, chats, user ids, typed names) goes through
``safe()`` before any Streamlit element that renders markdown; databases live in one directory (``data_dir()``)
and a typed name outside it is refused; served beyond loopback, ``login_gate()`` asks for a password.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import os
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st

from memlab.text import display_text

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~$#])")  # emphasis, code, links and images, tables, strike, math, headings
_MD_LINE_START = re.compile(r"^(\d+)([.)])|^([-+=])")  # list items, setext underlines


def safe(text: object) -> str:
    """User text made inert for ``st.markdown`` and friends (captions, info boxes, headers): markdown punctuation is
    backslash-escaped (no ``![image](url)``, no links, no headings, lists or math) and HTML is escaped (no
    ``<img src=...>``, even where ``unsafe_allow_html`` is on). Line breaks stay, as hard breaks, with the lines'
    leading blanks dropped (no indented code blocks)."""
    out = []
    for line in str(text).splitlines() or [""]:
        line = _MD_SPECIAL.sub(r"\\\1", display_text(line).lstrip())  # bidi/zero-width policy: memlab.text
        line = _MD_LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", line)
        out.append(html.escape(line, quote=False))
    return "  \n".join(out)


def data_dir() -> Path:
    """The only directory whose databases the dashboard opens: ``MEMLAB_DASHBOARD_DATA_DIR`` or ``.memlab``."""
    return Path(os.environ.get("MEMLAB_DASHBOARD_DATA_DIR") or ".memlab").resolve()


def default_db() -> str:
    """Database shown on first start: ``MEMLAB_DASHBOARD_DB`` (the operator's choice, any path) or ``demo.db`` in
    the data directory (built from the demo script)."""
    return os.environ.get("MEMLAB_DASHBOARD_DB") or "demo.db"


DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def resolve_db(name: str) -> Path:
    """The database file for a name typed in the sidebar: the operator's ``MEMLAB_DASHBOARD_DB`` as given, else a
    relative name inside ``data_dir()`` ending in .db/.sqlite/.sqlite3. Absolute paths, ``~``, ``..`` and symlinks
    out of the directory raise ``InvalidInputError`` (the message names only what the user typed); nothing is created."""
    from memlab.errors import InvalidInputError

    name = name.strip()
    if os.environ.get("MEMLAB_DASHBOARD_DB") and name == os.environ["MEMLAB_DASHBOARD_DB"]:
        return Path(name)
    where = "un nome di file nella cartella dei database del dashboard (es. demo.db)"
    if not name:
        raise InvalidInputError(f"Database: scrivi {where}.")
    typed = Path(name)
    if any(ord(c) < 32 for c in name):
        raise InvalidInputError("Database rifiutato: il nome contiene caratteri di controllo.")
    if typed.is_absolute() or name.startswith(("~", "/", "\\")) or ".." in typed.parts or "\\" in name:
        raise InvalidInputError(f"Database «{name}» rifiutato: solo {where}; percorsi assoluti e '..' non sono ammessi.")
    if typed.suffix.lower() not in DB_SUFFIXES:
        raise InvalidInputError(f"Database «{name}» rifiutato: il nome deve finire in .db, .sqlite o .sqlite3.")
    root = data_dir()
    path = (root / typed).resolve()
    if not path.is_relative_to(root):
        raise InvalidInputError(f"Database «{name}» rifiutato: esce dalla cartella dei database.")
    if path.is_dir():
        raise InvalidInputError(f"Database «{name}» rifiutato: è una cartella, non un file.")
    return path


def check_sqlite(path: Path, name: str) -> None:
    """Refuse (``InvalidInputError``, naming only ``name``) an existing non-empty file that is not a SQLite database."""
    from memlab.errors import InvalidInputError

    if path.is_file() and path.stat().st_size > 0:
        with path.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise InvalidInputError(f"«{name}» non è un database SQLite: scegline un altro.")


def default_runs() -> str:
    """Run directories root: ``MEMLAB_DASHBOARD_RUNS`` or ``runs``."""
    return os.environ.get("MEMLAB_DASHBOARD_RUNS", "runs")


@st.cache_resource(show_spinner=False)
def _opened() -> dict[str, Any]:
    """Process-wide registry: database path -> its opened services. Models load once per process, not per session."""
    return {}


@st.cache_resource(show_spinner=False)
def _open_lock() -> threading.Lock:
    return threading.Lock()


def open_services(db_name: str) -> Any:
    """One set of services (store, notifications, chats, assistant) per database file, shared across reruns and
    sessions. ``db_name`` is what the sidebar holds (see ``resolve_db``); a refused name or a file that is not a
    memlab database raises ``MemlabError`` with a one-line message. The first call shows its progress (building
    the demo, loading the embedder and the judge) in a status box on the page; later calls return the cached
    services at once."""
    path = resolve_db(db_name)
    key = str(path)
    opened = _opened()
    if key in opened:
        return opened[key]
    check_sqlite(path, db_name)
    lock = _open_lock()
    if not lock.acquire(blocking=False):
        with st.spinner("Un'altra sessione sta caricando i modelli di memlab, attendo…"):
            lock.acquire()
    try:
        if key not in opened:  # (another session may have finished loading while this one waited)
            box = st.empty()
            try:
                with box.status("⏳ Preparo memlab: carico i modelli (solo al primo avvio)…", expanded=True) as status:
                    opened[key] = _load(path, db_name, status)
            finally:
                box.empty()
    finally:
        lock.release()
    return opened[key]


def _load(path: Path, name: str, status: Any) -> Any:
    """Open the database (building the demo on first start, one step per scripted turn) and warm the models up.
    A file SQLite or memlab cannot open raises ``InvalidInputError`` naming only ``name`` (no server paths)."""
    import sqlite3

    from memlab.app import open_memlab
    from memlab.demo import DEMO_SCRIPT, ensure_demo_db
    from memlab.errors import InvalidInputError, MemlabError

    shown = safe(name)
    try:
        if path.exists() or os.environ.get("MEMLAB_DASHBOARD_EMPTY") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)  # inside the data directory (resolve_db)
            ensure_demo_db(str(path))  # an empty database when asked for one; nothing when the file exists
            status.write(f"Apro il database {shown}…")
            lab = open_memlab(path)
            status.write("Carico il modello di embedding…")
            lab.store.embedder.embed(["riscaldamento"])  # the lazy model load happens here, not inside the first turn
            if lab.checker is not None:
                status.write("Carico il giudice delle contraddizioni…")
                lab.checker.judge.judge([("riscaldamento", "riscaldamento")])
        else:  # first start: replay the demo conversation through the real pipeline (as memlab.demo.build_demo does)
            path.parent.mkdir(parents=True, exist_ok=True)
            status.write(f"Creo il database dimostrativo {shown} con una conversazione di prova "
                         "(carica anche l'embedder e il giudice)…")
            lab = open_memlab(path)
            bar = status.progress(0.0)
            for i, (user, message) in enumerate(DEMO_SCRIPT, 1):
                lab.turn(user, message)
                bar.progress(i / len(DEMO_SCRIPT), text=f"{i}/{len(DEMO_SCRIPT)} · {safe(user)}: «{safe(message)}»")
            lab.store.flush()
    except (MemlabError, sqlite3.DatabaseError) as exc:
        raise InvalidInputError(f"«{name}» non si apre come database memlab ({type(exc).__name__}).") from None
    status.update(label="memlab è pronto", state="complete", expanded=False)
    return lab


def sidebar() -> None:
    """Database name and user selection (stored in ``st.session_state``). The services open in the main area, so
    the first start's progress box is where the user looks. A refused or unreadable database stops the page with
    a one-line error (no traceback, no server paths)."""
    from memlab.errors import MemlabError

    with st.sidebar:
        st.markdown("### 🧠 memlab")  # the only brand line (the page title is not repeated in the sidebar)
        db = st.text_input("Database", value=st.session_state.get("db_path", default_db()), key="db_path_input",
                           help="Un file .db nella cartella dei database del dashboard (MEMLAB_DASHBOARD_DATA_DIR).")
    st.session_state["db_path"] = db
    try:
        svc = open_services(db)
    except MemlabError as exc:
        st.error(safe(str(exc)), icon="🚫")
        st.stop()
    with st.sidebar:
        users = svc.store.users() or ["u1"]
        current = st.session_state.get("user_id", users[0])
        if current not in users:
            users = [current, *users]
        st.session_state["user_id"] = st.selectbox("Utente", users, index=users.index(current), key="user_select")
        st.text_input("Cartella dei run", value=default_runs(), key="runs_dir")


def services() -> Any:
    """The services of the database chosen in the sidebar."""
    return open_services(st.session_state.get("db_path", default_db()))


def user_id() -> str:
    """The user chosen in the sidebar."""
    return str(st.session_state.get("user_id", "u1"))


def pending_label(n: int) -> str:
    """The bell's words for ``n`` pending notifications, in Italian (the demo user's language)."""
    if n == 0:
        return "Nessuna notifica in sospeso"
    return "1 notifica in sospeso" if n == 1 else f"{n} notifiche in sospeso"


def header_with_bell(notifications_page: Any) -> None:
    """The bell (🔔) with the pending-notification badge, top right on every page; a click opens the
    notifications page (``notifications_page``, an ``st.Page``)."""
    n = services().notifications.count(user_id())
    st.markdown(
        "<style>.st-key-memlab_bell{position:fixed;top:0.45rem;right:9rem;z-index:999991;width:auto}"
        ".st-key-memlab_bell a{padding:0.1rem 0.6rem;border:1px solid rgba(128,128,128,0.35);border-radius:1rem}</style>",
        unsafe_allow_html=True,
    )
    label = f":red-badge[**{n}**]" if n else ":gray-badge[0]"  # the page's own icon is the bell
    with st.container(key="memlab_bell"):
        st.page_link(notifications_page, label=label, help=f"{pending_label(n)}: apri le notifiche")


def ago(dt: datetime | None, now: datetime | None = None) -> str:
    """Relative time, as memory UIs show it, in Italian: "adesso", "2 min fa", "3 h fa", "5 g fa"."""
    if dt is None:
        return "—"
    now = now or datetime.now(UTC)
    s = max(0, int((now - dt).total_seconds()))
    for unit, size in (("g", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} fa"
    return "adesso"


def fmt_dt(dt: datetime | None, *, seconds: bool = False) -> str:
    """An absolute timestamp readable by an Italian user: ``25/11/2026 02:41 UTC`` (``02:41:07`` with seconds)."""
    if dt is None:
        return "—"
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return dt.strftime("%d/%m/%Y %H:%M:%S UTC" if seconds else "%d/%m/%Y %H:%M UTC")


_ISO_DATE = re.compile(r"^(\d{4}|-)-(\d{2})-(\d{2})$")


def pretty_value(value: str | None) -> str:
    """A slot value as the user reads it: ISO dates become ``12/07/1990`` (``15/08`` when the year is unknown)."""
    if not value:
        return "—"
    m = _ISO_DATE.match(value)
    if not m:
        return value
    year, month, day = m.groups()
    return f"{day}/{month}" + (f"/{year}" if year != "-" else "")


def status_label(m: Any) -> str:
    """A memory's status in words: ``Attiva``; ``Superata`` (a later memory replaced it); ``Scartata`` (it lost
    to an earlier one: more confident, or chosen by the user); ``Disattivata`` (switched off, e.g. "cancella
    entrambe")."""
    if m.is_active:
        return "Attiva"
    if m.superseded_by is None:
        return "Disattivata"
    return "Scartata" if m.superseded_by < m.id else "Superata"


STATUS_BADGE = {"Attiva": ":green-badge[Attiva]", "Superata": ":orange-badge[Superata]",
                "Scartata": ":red-badge[Scartata]", "Disattivata": ":gray-badge[Disattivata]"}


URGENCY_IT = {"high": "alta", "medium": "media", "low": "bassa"}
TYPE_IT = {"contradiction": "contraddizione", "event": "evento", "todo": "da fare"}
STATUS_IT = {"unread": "non letta", "read": "letta", "resolved": "risolta", "dismissed": "archiviata"}


def it_label(table: dict[str, str], value: str) -> str:
    """A notification's urgency, type or status in Italian (unknown values stay as they are)."""
    return table.get(value, value)


CHOICES = {"A": "A) la prima", "B": "B) la seconda", "C": "C) entrambe corrette", "D": "D) cancella entrambe"}


def choice_label(choice: str | None) -> str:
    """A contradiction's answer in words (other notification types keep their label)."""
    return CHOICES.get(choice or "", choice or "—")


def timeline_figure(chain: list[Any]) -> Any:
    """The versions of one chain, evenly spaced in order (versions written seconds apart stay apart), each
    labelled with its version and date; colour is the status, height the confidence, arrows what superseded what."""
    import plotly.graph_objects as go

    x = [f"v{m.version}<br>{fmt_dt(m.created_at, seconds=True)}" for m in chain]  # (plotly reads text as HTML)
    colours = {"Attiva": "#2ca02c", "Superata": "#ff7f0e", "Scartata": "#d62728", "Disattivata": "#7f7f7f"}
    fig = go.Figure(go.Scatter(
        x=x, y=[m.confidence for m in chain], mode="lines+markers+text",
        text=[f"{status_label(m)}: {html.escape(display_text(pretty_value(m.value) if m.value else m.text[:30]))}" for m in chain], textposition="top center",
        marker=dict(size=16, color=[colours[status_label(m)] for m in chain]), line=dict(color="#bbbbbb"),
        hovertext=[f"#{m.id} {html.escape(display_text(m.text))}" for m in chain], hoverinfo="text", name="versioni"))
    fig.update_layout(height=300, xaxis_title="versione e data di creazione", yaxis_title="confidenza",
                      yaxis_range=[0, 1.25], xaxis_type="category", showlegend=False,
                      margin=dict(l=10, r=10, t=30, b=10))
    return fig


def resolution_controls(n: Any, *, key_prefix: str) -> None:
    """A/B/C/D buttons (C with an explanation box) that resolve one contradiction notification."""
    from memlab.errors import MemlabError

    payload = n.payload or {}
    first, second = payload.get("first", {}), payload.get("second", {})
    st.markdown(f"**A)** la prima — “{safe(first.get('text', '?'))}”  \n**B)** la seconda — “{safe(second.get('text', '?'))}”  \n"
                "**C)** entrambe corrette (spiega il contesto)  \n**D)** cancella entrambe")
    note = st.text_input("Contesto (per C)", key=f"{key_prefix}_note_{n.id}")
    cols = st.columns(4)
    for col, choice in zip(cols, "ABCD", strict=True):
        if col.button(choice, key=f"{key_prefix}_{choice}_{n.id}", width="stretch"):
            try:
                services().notifications.resolve(n.id, choice, note or None, user_id=user_id())
            except MemlabError as exc:
                st.session_state["flash"] = ("error", str(exc))
            else:
                st.session_state["flash"] = ("success", f"Risolta: notifica {n.id}, scelta {choice}.")
            st.rerun()


def show_flash() -> None:
    """Show (once) the message left by the last action."""
    flash = st.session_state.pop("flash", None)
    if flash:
        getattr(st, flash[0])(safe(flash[1]))  # messages may quote user text


def is_loopback(address: str | None) -> bool:
    """True for ``localhost`` and loopback IPs (127.0.0.0/8, ::1); False for empty (all interfaces) and the rest."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False


#: Rows (notifications, memories) a page renders at once.
PAGE_SIZE = 50


def pager(total: int, *, key: str, per_page: int = PAGE_SIZE) -> tuple[int, int]:
    """A page selector for ``total`` rows (shown only when there is more than one page): ``(offset, limit)`` of the
    page chosen, 1-based ``Pagina`` in the widget. A page beyond the last (after a filter shrank the list) becomes
    the last one."""
    pages = max(1, -(-int(total) // per_page))
    if pages == 1:
        st.session_state.pop(key, None)
        return 0, per_page
    if not 1 <= int(st.session_state.get(key, 1)) <= pages:
        st.session_state[key] = min(max(1, int(st.session_state.get(key, 1))), pages)
    page = int(st.number_input(f"Pagina (di {pages})", min_value=1, max_value=pages, step=1, key=key))
    first = (page - 1) * per_page
    st.caption(f"{first + 1}–{min(first + per_page, total)} di {total}")
    return first, per_page


PASSWORD_ENV = "MEMLAB_DASHBOARD_PASSWORD"


def login_gate() -> bool:
    """True when this session may see the dashboard. On loopback (``server.address`` 127.0.0.1, the default of
    ``make dashboard``) no login is needed. Served beyond it, the password in ``MEMLAB_DASHBOARD_PASSWORD`` is asked
    once per session (compared in constant time); without that variable the dashboard refuses to serve."""
    if is_loopback(st.get_option("server.address")):
        return True
    expected = os.environ.get(PASSWORD_ENV, "")
    if not expected:
        st.error("Il dashboard è in ascolto oltre il loopback (server.address non è 127.0.0.1) e "
                 f"{PASSWORD_ENV} non è impostata: non mostro niente. Avvialo con `make dashboard` "
                 f"(solo 127.0.0.1) oppure imposta {PASSWORD_ENV}.", icon="🔒")
        return False
    if st.session_state.get("memlab_logged_in") is True:
        return True
    st.header("🔒 memlab")
    with st.form("memlab_login"):
        typed = st.text_input("Password", type="password", key="memlab_password")
        submitted = st.form_submit_button("Entra")
    if submitted:
        if hmac.compare_digest(typed.encode("utf-8"), expected.encode("utf-8")):
            st.session_state["memlab_logged_in"] = True
            st.session_state.pop("memlab_password", None)
            st.rerun()
        st.error("Password errata.")
    return False
