"""Notifications: the bell panel — pending and resolved, filter by urgency/type, resolve contradictions."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from common import ago, resolution_controls, services, show_flash, user_id

st.header("🔔 Notifications")
lab = services()
uid = user_id()
show_flash()

c1, c2, c3 = st.columns(3)
urgencies = c1.multiselect("Urgency", ["high", "medium", "low"], default=["high", "medium", "low"], key="ntf_urg")
types = c2.multiselect("Type", ["contradiction", "event", "todo"], default=["contradiction", "event", "todo"],
                       key="ntf_type")
show_resolved = c3.toggle("Show resolved", value=True, key="ntf_resolved")

items = [n for n in lab.notifications.list(uid, include_resolved=show_resolved)
         if n.urgency.value in urgencies and n.type.value in types]
st.caption(f"{lab.notifications.count(uid)} pending · {len(items)} shown")
if not items:
    st.info("No notifications for this user.")
    st.stop()

for n in items:
    with st.container(border=True):
        status = n.status.value + (f" · choice {n.choice}" if n.choice else "")
        st.markdown(f"**#{n.id} · {n.type.value} · {n.urgency.value}** — {n.content}  \n"
                    f"<small>{status} · created {ago(n.created_at)}</small>", unsafe_allow_html=True)
        if n.type.value == "contradiction":
            p = n.payload or {}
            st.dataframe(pd.DataFrame([
                {"side": "first", "memory": p.get("first", {}).get("id"), "text": p.get("first", {}).get("text")},
                {"side": "second", "memory": p.get("second", {}).get("id"), "text": p.get("second", {}).get("text")},
            ]), hide_index=True, use_container_width=True, key=f"ntf_pair_{n.id}")
            if p.get("explanation"):
                st.caption(p["explanation"])
        if n.is_open and n.type.value == "contradiction":
            resolution_controls(n, key_prefix="ntf")
