"""Chats: by last activity; full vs assistant history side by side; summary; natural-language chat switch."""

from __future__ import annotations

import streamlit as st
from common import ago, safe, services, user_id

from memlab.errors import MemlabError

st.header("🗂️ Chat salvate")
lab = services()
uid = user_id()
chats = lab.chats.list(uid)
if not chats:
    st.info("Ancora nessuna chat per questo utente.")
    st.stop()

query = st.text_input("Torna a una chat (es. «la chat in cui parlavamo del viaggio a Tokyo»)", key="chat_search")
selected = st.session_state.get("chat_selected", chats[0].id)
if query:
    try:
        result = lab.chats.search(uid, query)
    except MemlabError as exc:
        st.error(safe(str(exc)))
    else:
        if result.decision == "switch":
            selected = result.chat_id
            st.success(f"Passo alla chat {result.chat_id}.")
        elif result.candidates:
            st.warning("Più chat possibili: quale intendi?")
        st.dataframe([{"chat": c.id, "title": c.title, "score": round(s, 3)} for c, s in result.candidates],
                     hide_index=True, width="stretch", key="chat_candidates")

ids = [c.id for c in chats]
if selected not in ids:
    selected = ids[0]
chat_id = st.selectbox("Chat (per ultima attività)", ids, index=ids.index(selected),
                       format_func=lambda i: next(f"{c.title or 'senza titolo'} · {ago(c.last_activity_at)}"
                                                  for c in chats if c.id == i), key="chat_select")
st.session_state["chat_selected"] = chat_id
chat = lab.chats.get(chat_id, user_id=uid)
st.markdown(f"**Titolo:** {safe(chat.title or '—')}  \n**Riassunto:** {safe(chat.summary_text or '—')}")
left, right = st.columns(2)
left.subheader(f"full_history ({len(chat.full_history)})")
right.subheader(f"assistant_history ({len(chat.assistant_history)})")
for turn in chat.full_history:
    left.markdown(f"`{turn['role']}` {safe(turn['parts'][0]['text'])}")
for i, turn in enumerate(chat.assistant_history):
    text = turn["parts"][0]["text"]
    if i == 0 and chat.is_compacted:
        right.info(f"📝 turno di riassunto: {safe(text)}")
    else:
        right.markdown(f"`{turn['role']}` {safe(text)}")
