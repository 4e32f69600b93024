"""``memlab eval memory-recall``: evidence recall@10 of raw / fact / compacted memories on LoCoMo + chat switch."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``eval memory-recall`` to the parser."""
    p = groups["eval"].add_parser(
        "memory-recall",
        help="LoCoMo: evidence recall@10 of raw turns, extracted facts and compacted chats; chat-switch top-1",
    )
    p.add_argument("--dataset", default="locomo", choices=["locomo"], help="dataset (only locomo)")
    p.add_argument(
        "--split",
        default="test",
        choices=["dev", "test", "all"],
        help="conversations: dev = first 2, test = other 6 (default), all",
    )
    p.add_argument("--data-dir", default=None, help="LoCoMo directory (default: datasets/locomo)")
    p.add_argument("--limit", type=int, default=None, help="at most N conversations (seeded sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        help="replay only the first N sessions of each conversation (quick smoke runs)",
    )
    p.add_argument("--embedder", default=None, help="embedder name (default: the store's default)")
    p.add_argument("--window", type=int, default=30, help="summary_window_size (default 30)")
    p.add_argument(
        "--summary-chars", type=int, default=1500, help="budget of the summary turn (default 1500)"
    )
    p.add_argument(
        "--summarizer",
        default="extractive",
        choices=["extractive", "llm"],
        help="extractive (offline default) or llm (uses MEMLAB_LLM_* settings)",
    )
    p.add_argument("--out", default=None, help="run directory (default runs/<ts>_memory-recall_<id>)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from memlab.eval.memory_recall import evaluate_memory_recall, recall_table
    from memlab.eval.runs import default_run_dir

    summarizer: Any = None
    if args.summarizer == "llm":
        from memlab.config import Settings
        from memlab.errors import InvalidInputError
        from memlab.llm import load_llm

        llm = load_llm(Settings())
        if llm is None:
            raise InvalidInputError(
                "--summarizer llm needs MEMLAB_LLM_BACKEND (ollama|openai) and MEMLAB_LLM_MODEL."
            )
        summarizer = llm
    out = args.out or default_run_dir("memory-recall")
    run = evaluate_memory_recall(
        out_dir=out,
        data_dir=args.data_dir,
        split=args.split,
        limit=args.limit,
        seed=args.seed,
        embedder=args.embedder,
        summary_window_size=args.window,
        summary_max_chars=args.summary_chars,
        llm=summarizer,
        max_sessions=args.max_sessions,
    )
    print(recall_table(run))
    print(f"\nrun written to {out}")
    return 0
