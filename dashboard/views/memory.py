"""Memory & versions: a user's memories and, for one memory, its version timeline."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import ago, services, user_id

from memlab.errors import MemlabError

st.header("🧠 Memory & versions")
store = services().store
uid = user_id()

c1, c2, c3, c4 = st.columns(4)
show_all = c1.toggle("Include superseded / inactive", value=False, key="mem_show_all")
items = store.list(uid, include_inactive=show_all)
keys = sorted({m.key for m in items if m.key})
types = sorted({m.type for m in items})
topics = sorted({m.topic for m in items if m.topic})
key_f = c2.multiselect("Key", keys, key="mem_key_filter")
type_f = c3.multiselect("Type", types, key="mem_type_filter")
topic_f = c4.multiselect("Topic", topics, key="mem_topic_filter")
items = [m for m in items if (not key_f or m.key in key_f) and (not type_f or m.type in type_f)
         and (not topic_f or m.topic in topic_f)]

st.caption(f"{len(items)} memories of user **{uid}**")
if not items:
    st.info("No memories yet: talk to the assistant on the Chat page.")
    st.stop()

rows = []
for m in items:
    badges = []
    if m.version > 1:
        badges.append(f"v{m.version}")
    if not m.is_active:
        badges.append("Superseded" if m.superseded_by else "Inactive")
    rows.append({"id": m.id, "text": m.text, "key": m.key or "", "type": m.type, "confidence": m.confidence,
                 "badges": " ".join(badges), "last updated": ago(m.superseded_at or m.created_at),
                 "active": m.is_active})
st.dataframe(pd.DataFrame(rows), hide_index=True, use_container_width=True, key="mem_table")

ids = [m.id for m in items]
chosen = st.selectbox("View history of memory", ids, format_func=lambda i: f"#{i} {store.get(i, user_id=uid).text[:60]}",
                      key="mem_history_select")
try:
    chain = store.history(chosen, user_id=uid)
    events = store.events(chosen, user_id=uid)
except MemlabError as exc:
    st.error(str(exc))
    st.stop()

st.subheader(f"Version timeline ({len(chain)} version{'s' if len(chain) > 1 else ''})")
fig = go.Figure()
fig.add_trace(go.Scatter(
    x=[m.created_at for m in chain], y=[m.confidence for m in chain], mode="lines+markers+text",
    text=[f"v{m.version}" for m in chain], textposition="top center",
    marker=dict(size=14, color=["#2ca02c" if m.is_active else "#7f7f7f" for m in chain]),
    hovertext=[m.text for m in chain], name="versions"))
fig.update_layout(height=280, xaxis_title="created", yaxis_title="confidence", yaxis_range=[0, 1.1],
                  margin=dict(l=10, r=10, t=10, b=10))
st.plotly_chart(fig, use_container_width=True, key="mem_timeline")
st.dataframe(pd.DataFrame([{
    "version": f"v{m.version}", "text": m.text, "confidence": m.confidence, "active": m.is_active,
    "created": m.created_at, "superseded_at": m.superseded_at, "supersedes": m.supersedes,
    "superseded_by": m.superseded_by, "context": m.context or ""} for m in chain]),
    hide_index=True, use_container_width=True, key="mem_chain_table")
st.markdown("**Who changed what**")
st.dataframe(pd.DataFrame([{"when": e.at, "memory": e.memory_id, "event": e.event, "by": e.actor,
                            "details": ", ".join(f"{k}={v}" for k, v in e.details.items())} for e in events]),
             hide_index=True, use_container_width=True, key="mem_events_table")
