"""Eval runs: pick run directories; metrics, confusion matrix, PR curve, reliability diagram, comparison."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import streamlit as st
from common import default_runs, safe

from memlab.errors import MemlabError
from memlab.eval import plots
from memlab.eval.runs import compare_runs, load_run

st.header("📊 Valutazioni (eval runs)")
base = Path(default_runs()).resolve()
typed_root = str(st.session_state.get("runs_dir", default_runs())).strip()
root = Path(typed_root).resolve()
if not root.is_relative_to(base):  # a visitor reads run directories under the configured folder, nowhere else
    st.error(f"Cartella dei run rifiutata: solo {safe(default_runs())} o una sua sottocartella.", icon="🚫")
    st.stop()


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


def metric_tables(run) -> tuple[pd.DataFrame, pd.DataFrame]:  # noqa: ANN001 - an EvalRun
    """Per-class table (precision/recall/f1 with CI, counts) and the run-level metrics (name, value, ci95)."""
    per_class = run.metrics.get("per_class")
    classes = dict(per_class) if isinstance(per_class, Mapping) else {}
    if isinstance(run.metrics.get("contradiction"), Mapping):
        classes = {"contradiction": run.metrics["contradiction"], **{k: v for k, v in classes.items()
                                                                      if k != "contradiction"}}
    class_rows = []
    for cls, m in classes.items():
        if not isinstance(m, Mapping):
            continue
        ci = (m.get("ci95") or {}).get("f1")
        class_rows.append({"class": cls, **{k: m.get(k) for k in ("precision", "recall", "f1")},
                           "f1 ci95": f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "",
                           **{k: m.get(k) for k in ("support", "tp", "fp", "fn")}})
    scalar_rows = [
        {"metric": mv.name if mv.group is None else f"{mv.group}.{mv.name}", "value": mv.value,
         "ci95": f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]" if mv.ci_low is not None and mv.ci_high is not None else ""}
        for mv in run.metric_values()
        if mv.group is None or not (mv.group == "contradiction" or mv.group.startswith("per_class."))
    ]
    return pd.DataFrame(class_rows), pd.DataFrame(scalar_rows, columns=["metric", "value", "ci95"])


def category_tables(run) -> list[tuple[str, pd.DataFrame]]:  # noqa: ANN001 - an EvalRun
    """One table per ``per_category`` breakdown."""
    out = []
    for key, cats in run.per_category.items():
        if isinstance(cats, Mapping) and cats:
            out.append((str(key), pd.DataFrame([{str(key): c, **v} for c, v in cats.items() if isinstance(v, Mapping)])))
    return out


def plot_or_explain(where, what: str, make, key: str, *, enabled: bool = True) -> None:  # noqa: ANN001
    """Draw one plot; a run the plot cannot be made from gets a message instead of a crash."""
    if not enabled:
        return
    try:
        fig = make()
    except MemlabError as exc:
        where.info(f"{what} non disponibile per questo run: {safe(exc)}")
        return
    where.plotly_chart(fig, width="stretch", key=key)


runs = find_runs(str(root), mtime(root)) if root.exists() else []
if not runs:
    st.info(f"Ancora nessuna cartella di run in {safe(typed_root)}. Creane una con `make eval` o "
            "`memlab eval contradiction --dataset snli --limit 300 --out runs/snli`.")
    st.stop()

chosen = st.multiselect("Run", runs, default=runs[-1:], key="eval_runs_select", placeholder="Scegli uno o più run",
                        format_func=lambda p: str(Path(p).relative_to(root)) if p.startswith(str(root)) else p)
if not chosen:
    st.stop()
try:
    loaded = [cached_run(p, mtime(Path(p) / "run.json")) for p in chosen]
except MemlabError as exc:
    st.error(safe(str(exc)))
    st.stop()

if len(loaded) > 1:
    st.subheader("Confronto dei run")
    st.dataframe(compare_runs(chosen), hide_index=True, width="stretch", key="eval_compare")

run = loaded[0] if len(loaded) == 1 else loaded[
    st.selectbox("Dettagli di", range(len(loaded)), format_func=lambda i: chosen[i], key="eval_detail")]
spec = run.spec
# Plain text and tables only: names like "evidence_recall@10" must not become e-mail links in markdown.
dataset = f"{spec.dataset}/{spec.split}" if spec.split else str(spec.dataset)
st.text(f"task {spec.task} · dataset {dataset} · n {spec.n} · judge {spec.judge} · "
        f"seed {spec.seed} · commit {(spec.git_commit or '')[:8]}" + (f" · {run.status}" if run.status != "ok" else ""))
classes, scalars = metric_tables(run)
if not classes.empty:
    st.dataframe(classes, hide_index=True, width="stretch", key="eval_classes")
if not scalars.empty:
    st.dataframe(scalars, hide_index=True, width="stretch", key="eval_scalars",
                 column_config={"metric": st.column_config.TextColumn("metric", width="large")})
for name, table in category_tables(run):
    st.dataframe(table, hide_index=True, width="stretch", key=f"eval_cat_{name}")
for note in run.notes or []:
    st.text(f"note: {note}")
with st.expander("Tutte le metriche"):
    st.dataframe(run.to_pandas("metrics"), hide_index=True, width="stretch", key="eval_metrics")
examples = run.to_pandas("examples")
if spec.task == "alarms":  # a replay: notifications per 100 messages by urgency, planted contradictions by kind
    plot_or_explain(st, "alarms overview", lambda: plots.alarms_overview(run), "eval_alarms")
c1, c2 = st.columns(2)
plot_or_explain(c1, "confusion matrix", lambda: plots.confusion_matrix(run), "eval_cm", enabled=bool(run.confusion))
scored = examples[examples["score"].notna() & examples["gold"].notna()] if "score" in examples else examples[:0]
if scored.empty:
    st.info("Questo run non ha punteggi (score): niente curva precision-recall né diagramma di affidabilità.")
elif not (scored["gold"] == "contradiction").any():
    c2.info(f"Curva precision-recall e diagramma di affidabilità non disponibili: nessuno dei {len(scored)} esempi "
            "con punteggio ha gold «contradiction» (nessun positivo), quindi la recall non è definita e la "
            "frequenza osservata sarebbe sempre zero. Le metriche del run sono nelle tabelle qui sopra.")
else:
    plot_or_explain(c2, "precision-recall curve", lambda: plots.pr_curve(run), "eval_pr")
    plot_or_explain(st, "reliability diagram", lambda: plots.reliability_diagram(run), "eval_rel")
with st.expander("Esempi"):
    st.dataframe(examples.head(500), hide_index=True, width="stretch", key="eval_examples")
