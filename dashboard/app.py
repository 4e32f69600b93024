"""memlab dashboard: chats, the notification bell, version histories and eval runs.

Run with ``make dashboard`` (``streamlit run dashboard/app.py``). Pages are thin views over memlab's public API;
the database and the user are chosen in the sidebar. On first start a demo database is built from a scripted
Italian/English conversation, so a newcomer sees real data at once (a status box shows the progress while the
demo is built and the models load; it happens once per process).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).parent))

from common import header_with_bell, sidebar  # noqa: E402

st.set_page_config(page_title="memlab", page_icon="🧠", layout="wide")

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
