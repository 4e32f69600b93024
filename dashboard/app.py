"""memlab dashboard: chats, the notification bell, version histories and eval runs.

Run with ``make dashboard`` (``streamlit run dashboard/app.py``). Pages are thin views over memlab's public API;
the database and the user are chosen in the sidebar. On first start a demo database is built from a scripted
Italian/English conversation, so a newcomer sees real data at once (a status box shows the progress while the
demo is built and the models load; it happens once per process).

It listens on 127.0.0.1 (``make dashboard`` and ``.streamlit/config.toml``); served on another address it asks for
the password in ``MEMLAB_DASHBOARD_PASSWORD`` (and refuses to serve without it). Databases are files inside
``MEMLAB_DASHBOARD_DATA_DIR`` (default ``.memlab``); user text is escaped before it is rendered.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

from memlab.process import configure_process

configure_process()  # the dashboard owns its process (OpenMP threads sleep while they wait: memlab.process)
sys.path.insert(0, str(Path(__file__).parent))

from common import header_with_bell, login_gate, sidebar  # noqa: E402

st.set_page_config(page_title="memlab", page_icon="🧠", layout="wide")
if not login_gate():  # served beyond loopback: a password first (nothing else is shown or opened)
    st.stop()

HERE = Path(__file__).parent / "views"
PAGES = {
    "notifications": st.Page(HERE / "notifications.py", title="Notifiche", icon="🔔", url_path="notifications"),
    "history": st.Page(HERE / "history.py", title="Cronologia versioni", icon="🕘", url_path="history"),
}
nav = st.navigation(
    {
        "Assistente": [
            st.Page(HERE / "chat.py", title="Chat", icon="💬", default=True, url_path="chat"),
            st.Page(HERE / "chats.py", title="Chat salvate", icon="🗂️", url_path="chats"),
            PAGES["notifications"],
        ],
        "Memoria": [st.Page(HERE / "memory.py", title="Memorie e versioni", icon="🧠", url_path="memory"),
                   PAGES["history"]],
        "Valutazione": [st.Page(HERE / "eval_runs.py", title="Valutazioni (eval)", icon="📊", url_path="eval")],
    }
)
sidebar()
header_with_bell(PAGES["notifications"])
nav.run()
