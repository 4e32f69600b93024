"""Strict line readers shared by the loaders: every error names the file and the line."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memlab._validation import strip_control
from memlab.errors import DatasetFormatError


def check_file(path: Path) -> None:
    """Raise ``DatasetFormatError`` if ``path`` is missing or empty."""
    if not path.is_file():
        raise DatasetFormatError("file not found (check data_dir).", path=str(path))
    if path.stat().st_size == 0:
        raise DatasetFormatError("the file is empty.", path=str(path))


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line (1-based), decoding UTF-8 strictly.

    A ``.gz`` file is read through gzip (the newer sets ship compressed); a corrupt archive raises
    ``DatasetFormatError`` like any other malformed file.
    """
    check_file(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        yield from _lines(path, opener)
    except (OSError, EOFError) as exc:  # a truncated or corrupt .gz archive
        raise DatasetFormatError(f"the file cannot be read ({exc}).", path=str(path)) from exc


def _lines(path: Path, opener: Any) -> Iterator[tuple[int, str]]:
    seen = False
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetFormatError(
                    f"the line is not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1}).",
                    path=str(path),
                    line=lineno,
                ) from exc
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            seen = True
            yield lineno, line
    if not seen:
        raise DatasetFormatError("the file has no data rows (only blank lines).", path=str(path))


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for a JSON-lines file; each line must be a JSON object."""
    for lineno, line in iter_lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(
                f"the line is not valid JSON ({exc.msg}).", path=str(path), line=lineno
            ) from exc
        if not isinstance(obj, dict):
            raise DatasetFormatError(
                f"each line must be a JSON object. Got {type(obj).__name__} instead.",
                path=str(path),
                line=lineno,
            )
        yield lineno, obj


def iter_tsv(
    path: Path, *, n_columns: int, header: tuple[str, ...] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for a tab-separated file (no quoting rules: fields are split on tabs).

    Args:
        path: the file.
        n_columns: minimum number of fields per row.
        header: expected column names of the first line; ``None`` when the file has no header.
    """
    first = True
    for lineno, line in iter_lines(path):
        fields = line.split("\t")
        if first and header is not None:
            first = False
            missing = [h for h in header if h not in fields]
            if missing:
                raise DatasetFormatError(
                    f"the header must contain the columns {list(header)}. Missing {missing}; got {fields} instead.",
                    path=str(path),
                    line=lineno,
                )
            continue
        first = False
        if len(fields) < n_columns:
            raise DatasetFormatError(
                f"the row must have at least {n_columns} tab-separated columns. Got {len(fields)} instead.",
                path=str(path),
                line=lineno,
            )
        yield lineno, fields


def field(obj: dict[str, Any], key: str, path: Path, lineno: int) -> Any:
    """``obj[key]``, or a ``DatasetFormatError`` naming the missing column."""
    if key not in obj:
        raise DatasetFormatError(
            f"missing column {key!r} (columns present: {sorted(obj)}).", path=str(path), line=lineno
        )
    return obj[key]


def text_field(value: Any, key: str, path: Path, lineno: int) -> str:
    """Validate a text column: a non-empty string once stripped; control characters removed."""
    if not isinstance(value, str):
        raise DatasetFormatError(
            f"column {key!r} must be a string. Got {type(value).__name__} instead.",
            path=str(path),
            line=lineno,
        )
    text = strip_control(value).strip()
    if not text:
        raise DatasetFormatError(f"column {key!r} is empty.", path=str(path), line=lineno)
    return text
