"""``memlab eval alarms``: contradiction notifications per 100 messages in replayed LoCoMo conversations."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

__all__ = ["register"]


def register(groups: dict[str, Any]) -> None:
    """Add ``eval alarms`` to the parser."""
    p = groups["eval"].add_parser(
        "alarms", help="replay LoCoMo conversations through the turn flow; alarms per 100 messages, plant recall")
    p.add_argument("--dataset", default="locomo", choices=["locomo"], help="dataset (LoCoMo: long dated chats)")
    p.add_argument("--split", default="test", choices=["dev", "test", "all"],
                   help="dev = first 2 conversations (choose settings there), test = the others (default), all")
    p.add_argument("--plants", default=None,
                   help="plants file (JSON lines: lines inserted into the conversations; "
                        "datasets/locomo_plants/{dev,test}.jsonl)")
    p.add_argument("--limit", type=int, default=None, help="replay only the first N conversations of the split")
    p.add_argument("--max-sessions", type=int, default=None, help="replay only the first N sessions of each")
    p.add_argument("--judge", default=None, help="judge name (default: the settings' judge)")
    p.add_argument("--embedder", default=None, help="embedder name (default: the settings' embedder)")
    p.add_argument("--data-dir", default=None, help="LoCoMo directory (default: datasets/locomo)")
    p.add_argument("--out", default=None, help="run directory (default runs/<ts>_alarms_<id>)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from memlab.eval.alarms import run_alarms_task

    parts = ["memlab", "eval", "alarms"]
    for key in ("split", "plants", "limit", "max_sessions", "judge", "embedder", "data_dir", "out"):
        value = getattr(args, key, None)
        if value is not None:
            parts += [f"--{key.replace('_', '-')}", shlex.quote(str(value))]
    run = run_alarms_task(split=args.split, plants=args.plants, limit=args.limit, max_sessions=args.max_sessions,
                          judge=args.judge, embedder=args.embedder, data_dir=args.data_dir, out_dir=args.out,
                          command=" ".join(parts), progress=sys.stderr.isatty())
    print(run.to_markdown())
    print(f"\nrun written to {run.path}")
    return 0 if run.status == "ok" else 1
