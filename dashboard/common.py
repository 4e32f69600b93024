"""Shared sidebar, cached resources and small view helpers for the dashboard pages.

Pages stay thin: everything they show comes from memlab's public API. Only ``MemlabError`` is caught (a bad id, a
bad input) and shown to the user; anything else is a bug and surfaces as such.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st


def default_db() -> str:
    """Database shown on first start: ``MEMLAB_DASHBOARD_DB`` or ``.memlab/demo.db`` (built from the demo script)."""
    return os.environ.get("MEMLAB_DASHBOARD_DB", str(Path(".memlab") / "demo.db"))


def default_runs() -> str:
    """Run directories root: ``MEMLAB_DASHBOARD_RUNS`` or ``runs``."""
    return os.environ.get("MEMLAB_DASHBOARD_RUNS", "runs")


@st.cache_resource(show_spinner="Opening the memory database…")
def open_services(db_path: str) -> Any:
    """One set of services (store, notifications, chats, assistant) per database file, shared across reruns."""
    from memlab.app import open_memlab
    from memlab.demo import ensure_demo_db

    ensure_demo_db(db_path)  # builds the scripted demo only when the file does not exist
    return open_memlab(db_path)


def sidebar() -> None:
    """Database path and user selection (stored in ``st.session_state``)."""
    with st.sidebar:
        st.markdown("### 🧠 memlab")
        db = st.text_input("Database", value=st.session_state.get("db_path", default_db()), key="db_path_input")
        st.session_state["db_path"] = db
        svc = open_services(db)
        users = svc.store.users() or ["u1"]
        current = st.session_state.get("user_id", users[0])
        if current not in users:
            users = [current, *users]
        st.session_state["user_id"] = st.selectbox("User", users, index=users.index(current), key="user_select")
        st.text_input("Runs directory", value=default_runs(), key="runs_dir")


def services() -> Any:
    """The services of the database chosen in the sidebar."""
    return open_services(st.session_state.get("db_path", default_db()))


def user_id() -> str:
    """The user chosen in the sidebar."""
    return str(st.session_state.get("user_id", "u1"))


def header_with_bell() -> None:
    """The bell (🔔) with the pending-notification badge, in the header of every page."""
    n = services().notifications.count(user_id())
    badge = f"<span class='memlab-badge' data-testid='bell-badge'>{n}</span>" if n else ""
    st.markdown(
        "<style>.memlab-bell{position:fixed;top:0.55rem;right:8.5rem;z-index:999991;font-size:1.5rem}"
        ".memlab-badge{background:#d62728;color:white;border-radius:10px;padding:0 7px;"
        "font-size:0.8rem;margin-left:2px;vertical-align:top}</style>"
        f"<div class='memlab-bell' title='{n} pending notifications'>🔔{badge}</div>",
        unsafe_allow_html=True,
    )


def ago(dt: datetime | None, now: datetime | None = None) -> str:
    """Relative time, as memory UIs show it: "just now", "2m ago", "3h ago", "5d ago"."""
    if dt is None:
        return "—"
    now = now or datetime.now(UTC)
    s = max(0, int((now - dt).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return "just now"


def resolution_controls(n: Any, *, key_prefix: str) -> None:
    """A/B/C/D buttons (C with an explanation box) that resolve one contradiction notification."""
    from memlab.errors import MemlabError

    payload = n.payload or {}
    first, second = payload.get("first", {}), payload.get("second", {})
    st.markdown(f"**A)** la prima — “{first.get('text', '?')}”  \n**B)** la seconda — “{second.get('text', '?')}”  \n"
                "**C)** entrambe corrette (spiega il contesto)  \n**D)** cancella entrambe")
    note = st.text_input("Contesto (per C)", key=f"{key_prefix}_note_{n.id}")
    cols = st.columns(4)
    for col, choice in zip(cols, "ABCD", strict=True):
        if col.button(choice, key=f"{key_prefix}_{choice}_{n.id}", use_container_width=True):
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
        getattr(st, flash[0])(flash[1])
