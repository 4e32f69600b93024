"""Eval runs: pick run directories; metrics, confusion matrix, PR curve, reliability diagram, comparison."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from memlab.errors import MemlabError
from memlab.eval import plots
from memlab.eval.runs import compare_runs, load_run

st.header("📊 Eval runs")
root = Path(st.session_state.get("runs_dir", "runs"))


@st.cache_data(show_spinner=False)
def find_runs(root: str, mtime: float) -> list[str]:
    """Run directories (holding a run.json) under ``root``; keyed by the root's mtime."""
    return sorted(str(p.parent) for p in Path(root).rglob("run.json"))


@st.cache_data(show_spinner=False)
def cached_run(path: str, mtime: float):  # noqa: ANN201 - an EvalRun
    """Load one run (cached by path and mtime)."""
    return load_run(path)


def mtime(p: Path) -> float:
    return p.stat().st_mtime if p.exists() else 0.0


runs = find_runs(str(root), mtime(root)) if root.exists() else []
if not runs:
    st.info(f"No run directories under `{root}` yet. Create one with `make eval` or "
            "`memlab eval contradiction --dataset snli --limit 300 --out runs/snli`.")
    st.stop()

chosen = st.multiselect("Runs", runs, default=runs[-1:], key="eval_runs_select",
                        format_func=lambda p: str(Path(p).relative_to(root)) if p.startswith(str(root)) else p)
if not chosen:
    st.stop()
try:
    loaded = [cached_run(p, mtime(Path(p) / "run.json")) for p in chosen]
except MemlabError as exc:
    st.error(str(exc))
    st.stop()

if len(loaded) > 1:
    st.subheader("Compare runs")
    st.dataframe(compare_runs(chosen), hide_index=True, use_container_width=True, key="eval_compare")

run = loaded[0] if len(loaded) == 1 else loaded[
    st.selectbox("Details of", range(len(loaded)), format_func=lambda i: chosen[i], key="eval_detail")]
spec = run.spec
st.markdown(f"**task** `{spec.task}` · **dataset** `{spec.dataset}` · **n** {spec.n} · **judge** `{spec.judge}` · "
            f"**seed** {spec.seed} · **commit** `{(spec.git_commit or '')[:8]}`")
st.markdown(run.to_markdown())
with st.expander("All metrics"):
    st.dataframe(run.to_pandas("metrics"), hide_index=True, use_container_width=True, key="eval_metrics")
examples = run.to_pandas("examples")
has_scores = "score" in examples and examples["score"].notna().any()
c1, c2 = st.columns(2)
if run.confusion:
    c1.plotly_chart(plots.confusion_matrix(run), use_container_width=True, key="eval_cm")
if has_scores:
    c2.plotly_chart(plots.pr_curve(run), use_container_width=True, key="eval_pr")
    st.plotly_chart(plots.reliability_diagram(run), use_container_width=True, key="eval_rel")
with st.expander("Examples"):
    st.dataframe(examples.head(500), hide_index=True, use_container_width=True, key="eval_examples")
