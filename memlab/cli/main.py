"""Entry point of the ``memlab`` command.

Each command module exposes ``register(groups)``, where ``groups`` maps ``"top"``, ``"eval"`` and
``"bench"`` to argparse sub-parser collections; a command sets ``func`` (``args -> int exit code``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from memlab.cli.common import check_db, check_port, error_line
from memlab.errors import MemlabError
from memlab.process import configure_process

__all__ = ["main"]

# command modules, imported lazily by main() (keeps `memlab --help` fast)
COMMAND_MODULES = [
    "memlab.cli.integrity_cmd",
    "memlab.cli.chat_cmd",
    "memlab.cli.bench_store",
    "memlab.cli.bench_peers",
    "memlab.cli.bench_crash",
    "memlab.cli.embedder_cmd",
    "memlab.cli.train_judge",
    "memlab.cli.eval_cmd",
    "memlab.cli.extraction_cmd",
    "memlab.cli.alarms_cmd",
    "memlab.cli.chats_cmd",
    "memlab.cli.serve_cmd",
    "memlab.cli.mcp_cmd",
    "memlab.cli.llm_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(prog="memlab", description="memlab: long-term memory lab for LLM assistants")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    eval_p = top.add_parser("eval", help="run an evaluation task and write a run directory")
    eval_sub = eval_p.add_subparsers(dest="task", metavar="TASK")
    bench_p = top.add_parser("bench", help="performance benchmarks")
    bench_sub = bench_p.add_subparsers(dest="bench", metavar="BENCH")
    groups = {"top": top, "eval": eval_sub, "bench": bench_sub}
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(groups)
    parser.set_defaults(_parsers={"eval": eval_p, "bench": bench_p, "top": parser})
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (also used by ``sys.exit``)."""
    configure_process()  # the CLI owns its process (OpenMP threads sleep while waiting: memlab.process)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    func = getattr(args, "func", None)
    if func is None:
        sub = args._parsers.get(args.command or "top", parser)
        sub.print_help()
        return 2
    try:
        _check_arguments(args)
        return int(func(args) or 0)
    except (MemlabError, OSError) as exc:  # a bad argument or a refusing environment: one line, exit code 1
        print(error_line(exc), file=sys.stderr)
        return 1


def _check_arguments(args: argparse.Namespace) -> None:
    """The checks every command shares, before the command runs: ``--db`` and ``--port`` (memlab.cli.common)."""
    if getattr(args, "db", None) is not None:
        check_db(args.db)
    if getattr(args, "port", None) is not None:
        check_port(args.port)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
