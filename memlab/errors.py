"""memlab's exception tree.

Every error memlab raises on purpose is a :class:`MemlabError`. Each subclass also derives
from the builtin a caller would naturally catch, so ``except ValueError`` keeps working::

    MemlabError
    ├── InvalidInputError(ValueError)        bad text, bad parameter, malformed file row
    │   ├── DimensionMismatchError           a vector of the wrong size
    │   └── DatasetFormatError               a dataset file that does not parse (names file and line)
    ├── NotFoundError(LookupError)           unknown memory / chat / notification id
    ├── UnknownComponentError(LookupError)   unknown judge / embedder / dataset name (lists valid names)
    ├── MissingDependencyError(ImportError)  optional extra not installed (gives the pip command)
    └── BackendError(RuntimeError)           a model, an index or a server failed
        ├── EmbedderError
        ├── JudgeError
        └── LLMError                         timeouts, HTTP errors, malformed structured output

Warnings: :class:`UndefinedMetricWarning` (a metric divided by zero and returned ``zero_division``).
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "DatasetFormatError",
    "DimensionMismatchError",
    "EmbedderError",
    "InvalidInputError",
    "JudgeError",
    "LLMError",
    "MemlabError",
    "MissingDependencyError",
    "NotFoundError",
    "UndefinedMetricWarning",
    "UnknownComponentError",
]


class MemlabError(Exception):
    """Base class of every error memlab raises on purpose."""


class InvalidInputError(MemlabError, ValueError):
    """An argument or an input row is not acceptable; nothing was changed."""


class DimensionMismatchError(InvalidInputError):
    """A vector (or batch of vectors) does not have the expected dimension."""


class DatasetFormatError(InvalidInputError):
    """A dataset file is malformed. The message names the file and the line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(where + message)
        self.path = path
        self.line = line


class NotFoundError(MemlabError, LookupError):
    """An id (memory, chat, notification, run) does not exist for this user."""


class UnknownComponentError(MemlabError, LookupError):
    """A component name (judge, embedder, dataset, task) is not registered."""

    def __init__(self, kind: str, name: str, valid: list[str] | tuple[str, ...]) -> None:
        super().__init__(f"Unknown {kind} {name!r}. Valid names: {', '.join(sorted(valid))}.")
        self.kind = kind
        self.name = name
        self.valid = tuple(valid)


class MissingDependencyError(MemlabError, ImportError):
    """An optional dependency is missing; the message gives the install command."""

    def __init__(self, package: str, extra: str, *, detail: str = "") -> None:
        message = f"This feature needs the optional package {package!r}. Install it with: pip install 'memlab[{extra}]'"
        super().__init__(f"{message}. {detail}" if detail else message)
        self.package = package
        self.extra = extra


class BackendError(MemlabError, RuntimeError):
    """A backend (model, index, server) failed."""


class EmbedderError(BackendError):
    """The embedder failed to load or to embed."""


class JudgeError(BackendError):
    """The judge failed to load or to score."""


class LLMError(BackendError):
    """An LLM call failed: timeout, HTTP error, or output that does not validate."""


class UndefinedMetricWarning(UserWarning):
    """A metric was undefined (division by zero) and its ``zero_division`` value was returned."""
