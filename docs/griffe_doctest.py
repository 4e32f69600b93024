"""A Griffe extension for the API reference: memlab's docstrings are written for ``help()`` and Sphinx-style
readers, and two habits of theirs render badly in Markdown. This rewrites them before Griffe parses a docstring
(the Python files are left as they are; ``doctest`` runs their examples in ``make test``):

- doctests headed ``Example:`` (Google style, singular) are read by Griffe as an admonition of Markdown, so
  ``>>> f()`` / ``[('a', 'b')]`` became prose and broken cross-references: renamed ``Examples:``, they render as
  Python console blocks;
- Sphinx roles (``:class:`~memlab.store.MemoryStore```) become code spans (```MemoryStore```).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


class DoctestExamples(griffe.Extension):
    """``Example:`` -> ``Examples:`` and Sphinx roles -> code spans, in every docstring before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = _ROLE.sub(_role, value)
