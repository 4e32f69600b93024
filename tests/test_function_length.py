"""No function or method in the package is longer than 80 lines.

A function's length is ``end_lineno - lineno + 1`` of its ``def`` node (signature, docstring and body; decorators
not counted), read statically from every module's source with ``ast``, nested functions measured on their own too.
A long function is split into named steps (loading, one phase, writing the report) rather than exempted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memlab

ROOT = Path(memlab.__file__).parent
MAX_LINES = 80


def long_functions(source: str, filename: str, max_lines: int = MAX_LINES) -> list[str]:
    """``"<filename>:<line> <name> (<n> lines)"`` for every function in ``source`` longer than ``max_lines``."""
    tree = ast.parse(source, filename=filename)
    return [
        f"{filename}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > max_lines
    ]


def test_no_function_over_80_lines() -> None:
    offenders = [
        offender
        for path in sorted(ROOT.rglob("*.py"))
        for offender in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT.parent)))
    ]
    assert not offenders, (
        f"{len(offenders)} function(s) longer than {MAX_LINES} lines (split them into named steps):\n"
        + "\n".join(offenders)
    )


def test_the_checker_reports_a_long_function() -> None:
    body = [f"    x{i} = {i}" for i in range(MAX_LINES)]
    source = "\n".join(
        [
            "def short():",
            "    return 1",
            "",
            "",
            "async def too_long():",
            *body,
            "",
            "",
            "class A:",
            "    def fits(self):",
        ]
        + [f"        y{i} = {i}" for i in range(MAX_LINES - 1)]
    )
    assert long_functions(source, "mod.py") == [f"mod.py:5 too_long ({MAX_LINES + 1} lines)"]
    nested = "\n".join(
        ["def outer():", "    def inner():", *[f"        z{i} = {i}" for i in range(MAX_LINES)]]
    )
    assert long_functions(nested, "n.py") == [
        f"n.py:1 outer ({MAX_LINES + 2} lines)",
        f"n.py:2 inner ({MAX_LINES + 1} lines)",
    ]
