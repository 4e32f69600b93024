"""Version history: the detail view of one memory slot (every version, what replaced what, the user's answers).

Every version of the chain, oldest first, as a card: value, text, status (Attiva / Superata / Disattivata),
absolute and relative timestamps, confidence, what it replaced and what replaced it; then the timeline (a card
alone for a one-version chain), the notifications about these memories with the user's answer, and the audit log.
The memory comes from ``?memory=<id>`` (a shareable URL) or from the "Cronologia" buttons of the Memory page.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from common import (
    STATUS_BADGE,
    STATUS_IT,
    TYPE_IT,
    URGENCY_IT,
    ago,
    choice_label,
    fmt_dt,
    it_label,
    pretty_value,
    safe,
    services,
    status_label,
    timeline_figure,
    user_id,
)

from memlab.errors import MemlabError

lab = services()
store = lab.store
uid = user_id()

raw = st.query_params.get("memory") or st.session_state.get("history_memory")
try:
    memory_id = int(raw) if raw is not None else None
except ValueError:
    memory_id = None


def pick_memory() -> int:
    """A picker over this user's memories (when no memory was asked for, or the asked one is not theirs)."""
    st.header("🕘 Cronologia delle versioni")
    items = store.list(uid, include_inactive=True)
    if not items:
        st.info("Nessuna memoria per questo utente.")
        st.stop()
    return st.selectbox("Memoria", [m.id for m in items], key="history_pick",
                        format_func=lambda i: next(f"#{m.id} {m.text[:70]}" for m in items if m.id == i))


st.page_link("views/memory.py", label="← Torna alle memorie", icon="🧠")
if memory_id is None:
    memory_id = pick_memory()
try:
    chain = store.history(memory_id, user_id=uid)
except MemlabError:  # unknown id, or another user's memory (e.g. after switching user in the sidebar)
    st.warning(f"La memoria #{memory_id} non esiste per l'utente {safe(uid)}: scegline una qui sotto.")
    memory_id = pick_memory()
    chain = store.history(memory_id, user_id=uid)
events = store.events(memory_id, user_id=uid)
st.query_params["memory"] = str(memory_id)
st.session_state["history_memory"] = memory_id

head = chain[-1]
slot = head.key or "fatto libero"
st.header(f"🕘 Cronologia: {safe(slot)}")
scope = f"ambito {safe(head.scope)} · tipo {safe(head.type)}" + (f" · progetto {safe(head.project_id)}" if head.project_id else "")
active = [m for m in chain if m.is_active]
st.caption(f"{len(chain)} version{'e' if len(chain) == 1 else 'i'} · {scope} · valore attuale: "
           + (", ".join(f"«{safe(pretty_value(m.value) if m.value else m.text)}» (v{m.version})" for m in active) if active else "nessuno"))

by_id = {m.id: m for m in chain}
with st.container(key="history_versions"):
    for m in reversed(chain):  # newest on top, like a history panel
        with st.container(border=True, key=f"history_v{m.version}_{m.id}"):
            left, right = st.columns([3, 2])
            badge = STATUS_BADGE[status_label(m)]
            mark = " · 📌 selezionata" if m.id == memory_id else ""
            left.markdown(f"#### v{m.version} {badge}{mark}")
            left.markdown(f"**Valore:** {safe(pretty_value(m.value))}  \n**Testo:** {safe(m.text)}")
            if m.context:
                left.markdown(f"**Contesto:** {safe(m.context)}")
            lines = [f"**Creata:** {fmt_dt(m.created_at)} ({ago(m.created_at)})",
                     f"**Confidenza:** {m.confidence:.2f} · memoria #{m.id}"]
            if m.supersedes:
                old = by_id.get(m.supersedes)
                lines.append(f"**Sostituisce:** v{old.version if old else '?'} (#{m.supersedes})")
            if m.superseded_by:
                new = by_id.get(m.superseded_by)
                verb = "Superata da" if new is not None and new.version > m.version else "Ha perso contro"
                lines.append(f"**{verb}:** v{new.version if new else '?'} (#{m.superseded_by})"
                             + (f" il {fmt_dt(m.superseded_at)}" if m.superseded_at else ""))
            elif m.superseded_at:
                lines.append(f"**Disattivata:** {fmt_dt(m.superseded_at)}")
            right.markdown("  \n".join(lines))

st.subheader("Linea del tempo")
if len(chain) == 1:
    st.info(f"Una sola versione, creata il {fmt_dt(chain[0].created_at)} ({ago(chain[0].created_at)}): "
            "non c'è ancora niente da confrontare.", icon="🕘")
else:
    st.plotly_chart(timeline_figure(chain), width="stretch", key="history_timeline")

ids = {m.id for m in chain}
related = [n for n in lab.notifications.list(uid, include_resolved=True) if ids & set(n.memory_ids)]
st.subheader(f"Notifiche su queste memorie ({len(related)})")
if not related:
    st.caption("Nessuna notifica riguarda questa catena di versioni.")
for n in related:
    with st.container(border=True, key=f"history_ntf_{n.id}"):
        state = "letta, in attesa di risposta" if n.status.value == "read" else it_label(STATUS_IT, n.status.value)
        st.markdown(f"**#{n.id} · {it_label(TYPE_IT, n.type.value)} · urgenza {it_label(URGENCY_IT, n.urgency.value)}**"
                    f" — {state}  \n{safe(n.content)}")
        if n.choice:
            answer = f"**Risposta dell'utente:** {choice_label(n.choice)}"
            if n.resolved_at:
                answer += f" · {fmt_dt(n.resolved_at)} ({ago(n.resolved_at)})"
            if n.note:
                answer += f"  \n**Nota:** {safe(n.note)}"
            st.markdown(answer)
            resolution = lab.notifications.resolution(n.id, user_id=uid) or {}
            if resolution:
                with st.expander("Cosa ha cambiato la risposta"):
                    st.json(resolution, expanded=True)
        elif n.is_open:
            st.page_link("views/notifications.py", label="Rispondi nelle notifiche", icon="🔔")

with st.expander(f"Registro delle modifiche ({len(events)})"):
    st.dataframe(pd.DataFrame([{"quando": fmt_dt(e.at), "memoria": e.memory_id, "evento": e.event, "da": e.actor,
                                "dettagli": ", ".join(f"{k}={v}" for k, v in e.details.items())} for e in events]),
                 hide_index=True, width="stretch", key="history_events_table")
