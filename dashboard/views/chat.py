"""Chat: talk to the Assistant (same flow as `memlab chat`); HIGH blocks above the reply, A/B/C/D to resolve."""

from __future__ import annotations

import streamlit as st
from common import URGENCY_IT, it_label, resolution_controls, safe, services, show_flash, user_id

from memlab.errors import MemlabError

st.header("💬 Chat")
lab = services()
uid = user_id()
show_flash()

chats = lab.chats.list(uid)
if chats:
    current = chats[0]
    for turn in current.full_history:
        role = "user" if turn["role"] == "user" else "assistant"
        with st.chat_message(role):
            st.markdown(safe(turn["parts"][0]["text"]))
else:
    st.caption("Ancora nessuna conversazione per questo utente: scrivi qui sotto.")

message = st.chat_input("Scrivi un messaggio…", key="chat_input")
if message:
    try:
        with st.spinner("Salvo i fatti e controllo le contraddizioni…"):
            lab.turn(uid, message)
    except MemlabError as exc:
        st.session_state["flash"] = ("error", str(exc))
    st.rerun()

open_contradictions = [n for n in lab.notifications.pending(uid) if n.type.value == "contradiction"]
if open_contradictions:
    st.subheader("Quale informazione è corretta?")
    for n in open_contradictions:
        with st.container(border=True):
            st.markdown(f"**⚠️ {safe(n.content)}** · urgenza {it_label(URGENCY_IT, n.urgency.value)}")
            resolution_controls(n, key_prefix="chat")
