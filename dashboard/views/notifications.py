"""Notifications: the bell panel — pending and resolved, filter by urgency/type, resolve contradictions."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from common import (
    STATUS_IT,
    TYPE_IT,
    URGENCY_IT,
    ago,
    choice_label,
    it_label,
    pager,
    pending_label,
    resolution_controls,
    safe,
    services,
    show_flash,
    user_id,
)

from memlab.text import display_text

lab = services()
uid = user_id()
pending = lab.notifications.count(uid)
st.header(f"🔔 Notifiche ({pending} in sospeso)")
show_flash()

c1, c2, c3 = st.columns(3)
urgencies = c1.multiselect("Urgenza", ["high", "medium", "low"], default=["high", "medium", "low"], key="ntf_urg",
                           format_func=lambda v: it_label(URGENCY_IT, v))
types = c2.multiselect("Tipo", ["contradiction", "event", "todo"], default=["contradiction", "event", "todo"],
                       key="ntf_type", format_func=lambda v: it_label(TYPE_IT, v))
show_resolved = c3.toggle("Mostra le risolte", value=True, key="ntf_resolved")

filters = {"include_resolved": show_resolved, "urgencies": urgencies, "types": types}
total = lab.notifications.total(uid, **filters)
st.markdown(f"**{pending_label(pending)}** · {total} mostrate", help="La campanella in alto conta le notifiche in sospeso.")
if not total:
    st.info("Nessuna notifica per questo utente.")
    st.stop()
# one page at a time (a user may have thousands): only that page is read from the database and rendered
offset, limit = pager(total, key="ntf_page")
items = lab.notifications.list(uid, limit=limit, offset=offset, **filters)

for n in items:
    with st.container(border=True, key=f"ntf_card_{n.id}"):
        status = it_label(STATUS_IT, n.status.value) + (f" · scelta {choice_label(n.choice)}" if n.choice else "")
        st.markdown(f"**#{n.id} · {it_label(TYPE_IT, n.type.value)} · urgenza {it_label(URGENCY_IT, n.urgency.value)}**"
                    f" — {safe(n.content)}  \n"
                    f"<small>{safe(status)} · creata {ago(n.created_at)}</small>", unsafe_allow_html=True)
        if n.type.value == "contradiction":
            p = n.payload or {}
            st.dataframe(pd.DataFrame([
                {"lato": "prima", "memoria": p.get("first", {}).get("id"), "testo": display_text(str(p.get("first", {}).get("text") or ""))},
                {"lato": "seconda", "memoria": p.get("second", {}).get("id"), "testo": display_text(str(p.get("second", {}).get("text") or ""))},
            ]), hide_index=True, width="stretch", key=f"ntf_pair_{n.id}")
            if p.get("explanation"):
                st.caption(safe(p["explanation"]))
            links = st.columns(4)
            for col, mid in zip(links, n.memory_ids[:2], strict=False):
                col.page_link("views/history.py", label=f"Cronologia della memoria #{mid}", icon="🕘",
                              query_params={"memory": str(mid)})
        if n.is_open and n.type.value == "contradiction":
            resolution_controls(n, key_prefix="ntf")
