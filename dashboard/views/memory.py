"""Memory & versions: a user's memories, filtered; each opens its version history (the Version history page)."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from common import STATUS_BADGE, ago, fmt_dt, pager, safe, services, status_label, user_id

from memlab.text import display_text

st.header("🧠 Memorie e versioni")
store = services().store
uid = user_id()

c1, c2, c3, c4 = st.columns(4)
show_all = c1.toggle("Includi superate / disattivate", value=False, key="mem_show_all")
items = store.list(uid, include_inactive=show_all)
keys = sorted({m.key for m in items if m.key})
types = sorted({m.type for m in items})
topics = sorted({m.topic for m in items if m.topic})
key_f = c2.multiselect("Chiave", keys, key="mem_key_filter", placeholder="Tutte")
type_f = c3.multiselect("Tipo", types, key="mem_type_filter", placeholder="Tutti")
topic_f = c4.multiselect("Argomento", topics, key="mem_topic_filter", placeholder="Tutti")
items = [m for m in items if (not key_f or m.key in key_f) and (not type_f or m.type in type_f)
         and (not topic_f or m.topic in topic_f)]

st.caption(f"{len(items)} memorie dell'utente **{safe(uid)}**")
if not items:
    st.info("Ancora nessuna memoria: parla con l'assistente nella pagina Chat.")
    st.stop()

# one page at a time (the table and the history rows): a user may have thousands of memories
offset, limit = pager(len(items), key="mem_page")
page = items[offset : offset + limit]
rows = []
for m in page:
    badges = []
    if m.version > 1:
        badges.append(f"v{m.version}")
    if not m.is_active:
        badges.append(status_label(m))
    rows.append({"id": m.id, "testo": display_text(m.text), "chiave": m.key or "", "tipo": m.type, "confidenza": m.confidence,
                 "badge": " ".join(badges), "ultimo aggiornamento": ago(m.updated_at or m.superseded_at or m.created_at),
                 "attiva": m.is_active})
with st.expander("Tabella (ordinabile)", expanded=False):
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="mem_table")

st.subheader("🕘 Cronologia delle versioni")
st.caption("Apri la cronologia di una memoria: tutte le versioni del suo slot, chi ha sostituito chi, le notifiche "
           "e le risposte.")
head = st.columns([6, 2, 2, 2])
for col, title in zip(head, ["memoria", "stato", "ultimo aggiornamento", ""], strict=True):
    col.caption(f"**{title}**")
for m in page:
    c_text, c_badges, c_when, c_button = st.columns([6, 2, 2, 2], vertical_alignment="center")
    c_text.markdown(f"`#{m.id}` {safe(m.text)}" + (f" · {safe(m.key)}" if m.key else ""))
    badge = f":blue-badge[v{m.version}] " if m.version > 1 else ""
    badge += STATUS_BADGE[status_label(m)]
    c_badges.markdown(badge)
    c_when.caption(f"{fmt_dt(m.updated_at or m.superseded_at or m.created_at)} · {ago(m.updated_at or m.superseded_at or m.created_at)}")
    if c_button.button("Cronologia", key=f"mem_history_{m.id}", icon="🕘", width="stretch"):
        st.session_state["history_memory"] = m.id
        st.switch_page("views/history.py", query_params={"memory": str(m.id)})
if len(items) > len(page):
    st.caption(f"Memorie {offset + 1}–{offset + len(page)} di {len(items)}: cambia pagina in alto o usa i filtri.")
