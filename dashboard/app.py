"""memlab dashboard (placeholder until the dashboard pages land)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="memlab", page_icon="🧠", layout="wide")
st.title("memlab")
st.write("The dashboard pages are being built. Meanwhile: `make eval` runs the benchmark suite.")
