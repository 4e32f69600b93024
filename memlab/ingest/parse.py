"""Parse plain text, Markdown and HTML into sections of clean text (heading + body).

Markdown goes through ``markdown-it-py`` (CommonMark tokens: headings start sections; code, lists and tables
keep their text, markup is dropped); HTML through BeautifulSoup with Python's own ``html.parser`` (no compiled
parser needed; ``script``, ``style``, ``nav``, ``header``, ``footer`` and ``noscript`` are dropped, ``h1``-``h6``
start sections). Docling was considered: it parses these formats too but pulls in layout models that need hub
downloads (for PDFs), which memlab's offline machines cannot do, so it is not used.

Example:
    >>> doc = parse_document("# Viaggio\\n\\nA **Tokyo** a marzo.", fmt="markdown")
    >>> [(s.heading, s.text) for s in doc.sections]
    [('Viaggio', 'A Tokyo a marzo.')]
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memlab.errors import InvalidInputError, MissingDependencyError

__all__ = ["FORMATS", "Document", "Section", "detect_format", "parse_document"]

Format = Literal["text", "markdown", "html"]
#: Accepted formats and the file suffixes that select them.
FORMATS: dict[str, tuple[str, ...]] = {
    "text": (".txt", ".text"),
    "markdown": (".md", ".markdown", ".mdown"),
    "html": (".html", ".htm", ".xhtml"),
}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t\u00a0]+")


@dataclass(frozen=True, slots=True)
class Section:
    """A part of a document under one heading.

    Attributes:
        heading: the nearest heading (``""`` before the first one).
        text: the clean text (paragraphs separated by blank lines).
    """

    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document.

    Attributes:
        title: the first heading, the HTML ``<title>``, or ``""``.
        sections: the non-empty sections, in order.
        fmt: the format it was parsed as.
    """

    title: str
    sections: tuple[Section, ...]
    fmt: str

    @property
    def text(self) -> str:
        """The whole clean text."""
        return "\n\n".join(s.text for s in self.sections)


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", ln).strip() for ln in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def detect_format(path: str | Path) -> str:
    """The format of a file from its suffix.

    Raises:
        InvalidInputError: an unsupported suffix (the message lists the supported ones).
    """
    suffix = Path(path).suffix.lower()
    for fmt, suffixes in FORMATS.items():
        if suffix in suffixes:
            return fmt
    known = ", ".join(s for ss in FORMATS.values() for s in ss)
    raise InvalidInputError(f"Cannot ingest {Path(path).name!r}: unsupported file type {suffix or '(none)'!r}. "
                            f"Supported: {known}.")


def parse_document(content: str | bytes, *, fmt: str = "text") -> Document:
    """Parse ``content`` as ``text``, ``markdown`` or ``html``.

    Args:
        content: the document (bytes are decoded as UTF-8, invalid bytes replaced).
        fmt: the format.

    Returns:
        The :class:`Document` (no sections when there is no text).

    Raises:
        InvalidInputError: unknown format or content that is not text.
        MissingDependencyError: the format's parser is not installed (``pip install 'memlab[ingest]'``).
    """
    if isinstance(content, bytes):
        content = content.decode("utf-8", errors="replace")
    if not isinstance(content, str):
        raise InvalidInputError(f"The 'content' parameter of parse_document must be str or bytes. "
                                f"Got {type(content).__name__} instead.")
    if fmt not in FORMATS:
        raise InvalidInputError(f"The 'fmt' parameter of parse_document must be one of {sorted(FORMATS)}. "
                                f"Got {fmt!r} instead.")
    if fmt == "markdown":
        sections = _markdown(content)
    elif fmt == "html":
        sections = _html(content)
    else:
        sections = [("", _clean(content))]
    out = tuple(Section(_clean(h), t) for h, t in ((h, _clean(t)) for h, t in sections) if t)
    title = next((s.heading for s in out if s.heading), "")
    if fmt == "html":
        title = _html_title(content) or title
    return Document(title=title, sections=out, fmt=fmt)


def _markdown(content: str) -> list[tuple[str, str]]:
    try:
        from markdown_it import MarkdownIt
    except ImportError as exc:  # pragma: no cover - installed with memlab[ingest]
        raise MissingDependencyError("markdown-it-py", "ingest") from exc

    tokens = MarkdownIt("commonmark").enable("table").parse(content)
    sections: list[tuple[str, str]] = []
    heading, blocks = "", []
    in_heading = False
    for tok in tokens:
        if tok.type == "heading_open":
            if blocks:
                sections.append((heading, "\n\n".join(blocks)))
            heading, blocks, in_heading = "", [], True
        elif tok.type == "heading_close":
            in_heading = False
        elif tok.type == "inline":
            text = "".join(c.content if c.type in ("text", "code_inline") else "\n" if c.type in
                           ("softbreak", "hardbreak") else "" for c in (tok.children or []))
            if in_heading:
                heading = text
            elif text.strip():
                blocks.append(text)
        elif tok.type in ("fence", "code_block") and tok.content.strip():
            blocks.append(tok.content.rstrip())
    if blocks:
        sections.append((heading, "\n\n".join(blocks)))
    return sections


_DROP = ("script", "style", "noscript", "nav", "header", "footer", "template", "svg", "form")
_BLOCK = ("p", "li", "pre", "blockquote", "td", "th", "dd", "dt", "figcaption", "caption")


def _soup(content: str) -> object:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # pragma: no cover - installed with memlab[ingest]
        raise MissingDependencyError("beautifulsoup4", "ingest") from exc
    return BeautifulSoup(content, "html.parser")


def _html_title(content: str) -> str:
    soup = _soup(content)
    t = soup.find("title")  # type: ignore[attr-defined]
    return _clean(t.get_text(" ")) if t is not None else ""


def _html(content: str) -> list[tuple[str, str]]:
    soup = _soup(content)
    for tag in soup.find_all(_DROP):  # type: ignore[attr-defined]
        tag.decompose()
    for br in soup.find_all("br"):  # type: ignore[attr-defined]
        br.replace_with("\n")
    body = soup.find("body") or soup  # type: ignore[attr-defined]
    sections: list[tuple[str, str]] = []
    heading, blocks = "", []
    for el in body.find_all(["h1", "h2", "h3", "h4", "h5", "h6", *_BLOCK]):
        if el.name.startswith("h") and len(el.name) == 2:
            if blocks:
                sections.append((heading, "\n\n".join(blocks)))
            heading, blocks = el.get_text(" ", strip=True), []
        elif el.find_parent(_BLOCK) is None:  # nested blocks are read through their outermost block
            text = el.get_text("").strip()
            if text:
                blocks.append(text)
    if blocks:
        sections.append((heading, "\n\n".join(blocks)))
    if not sections:  # no block structure (a bare fragment): take all the text
        sections.append(("", body.get_text("\n", strip=True)))
    return sections
