"""``memlab eval extraction``: fact extraction vs LoCoMo observations (P/R/F1, ROUGE-L, baseline)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``eval extraction`` to the parser."""
    p = groups["eval"].add_parser(
        "extraction", help="fact extraction vs LoCoMo session observations (semantic P/R/F1, ROUGE-L, baseline)")
    p.add_argument("--dataset", default="locomo", choices=["locomo"], help="dataset (only locomo has fact labels)")
    p.add_argument("--split", default="test", choices=["dev", "test", "all"],
                   help="dev = first 2 conversations, test = other 6 (default), all")
    p.add_argument("--data-dir", default=None, help="LoCoMo directory (default: datasets/locomo)")
    p.add_argument("--limit", type=int, default=None, help="at most N sessions, seeded sample")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=0.6, help="cosine for a semantic match (default 0.6)")
    p.add_argument("--extractor", default="rules", choices=["rules", "llm"],
                   help="rules (offline default) or llm (uses MEMLAB_LLM_* settings)")
    p.add_argument("--no-baseline", action="store_true", help="skip the every-sentence baseline")
    p.add_argument("--no-rouge", action="store_true", help="skip ROUGE-L")
    p.add_argument("--out", default=None, help="run directory (default runs/<ts>_extraction_<id>)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from memlab.eval.extraction_task import evaluate_extraction

    extractor: Any = "rules"
    if args.extractor == "llm":
        from memlab.config import Settings
        from memlab.errors import InvalidInputError
        from memlab.extraction import LLMExtractor
        from memlab.llm import load_llm

        llm = load_llm(Settings())
        if llm is None:
            raise InvalidInputError("--extractor llm needs MEMLAB_LLM_BACKEND (ollama|openai) and MEMLAB_LLM_MODEL.")
        extractor = LLMExtractor(llm, lang="en")
    run = evaluate_extraction(
        extractor, split=args.split, data_dir=args.data_dir, limit=args.limit, seed=args.seed,
        threshold=args.threshold, baseline=not args.no_baseline, rouge=not args.no_rouge, out_dir=args.out)
    print(_table(run))
    return 0


def _table(run: Any) -> str:
    from memlab.eval.runs import markdown_table

    rows = []
    for name in ("extractor", "baseline"):
        m = run.metrics.get(name)
        if not m:
            continue
        rl = m.get("rouge_l") or {}
        rows.append([name, m["precision"], m["recall"], m["f1"], m["tp"], m["fp"], m["fn"], m["n_pred"],
                     rl.get("precision", "n/a"), rl.get("recall", "n/a"),
                     "n/a" if m.get("slot_value_accuracy") is None else m["slot_value_accuracy"], m["slot_value_n"]])
    head = ["system", "precision", "recall", "f1", "tp", "fp", "fn", "n_pred", "rougeL_p", "rougeL_r",
            "slot_acc", "slot_n"]
    thr = run.spec.params.get("threshold")
    return (f"extraction on locomo/{run.spec.params.get('subset')} (n={run.spec.n} units, match cosine >= {thr})\n"
            + markdown_table(head, rows))
